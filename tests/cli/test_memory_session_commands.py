"""What `engram memory show`, `delete --list`, `purge`, `session recover`, `daemon stop`,
`snapshot list` and a checkpoint inside a session tell a user, line by line, run in the test
process: their other tests live outside tests/cli (the library's own tests), so nothing run
with the command line's code was checking what they print."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core import quota, sessions
from memory_core.cli.main import main
from memory_core.store import Store


def test_show_prints_the_cited_line_and_each_relation_with_its_direction(
    cli: Any, workspace: Path
) -> None:
    cited = cli(
        "memory",
        "add",
        "the parser drops BOMs",
        "--file",
        "src/p.py",
        "--line",
        "12",
        "--json",
        cwd=workspace,
    ).json()
    fix = cli("memory", "add", "strip the BOM first", "--json", cwd=workspace).json()
    related = cli("memory", "relate", fix["id"], "resolves", cited["id"], cwd=workspace)
    assert related.code == 0, related.stderr

    shown = cli("memory", "show", cited["id"], cwd=workspace)
    assert shown.code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "cites src/p.py:12" in lines
    assert f"  resolves <- {fix['id']}" in lines
    assert f"  resolves -> {cited['id']}" in cli("memory", "show", fix["id"], cwd=workspace).stdout


def test_show_cites_a_file_without_a_line_as_the_file_alone(cli: Any, workspace: Path) -> None:
    entry = cli(
        "memory", "add", "config lives here", "--file", "setup.cfg", "--json", cwd=workspace
    ).json()
    assert (
        "cites setup.cfg" in cli("memory", "show", entry["id"], cwd=workspace).stdout.splitlines()
    )


def test_a_relation_kind_outside_the_list_is_refused_naming_the_choices(
    cli: Any, workspace: Path
) -> None:
    a = cli("memory", "add", "one", "--json", cwd=workspace).json()
    b = cli("memory", "add", "two", "--json", cwd=workspace).json()
    refused = cli("memory", "relate", a["id"], "caused", b["id"], cwd=workspace)
    assert refused.code == 2
    assert "kind" in refused.stderr and "resolves" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_the_deletion_list_shows_each_deletion_with_its_reason_only_when_given(
    cli: Any, workspace: Path
) -> None:
    assert cli("init", cwd=workspace).code == 0
    assert cli("delete", "--list", cwd=workspace).stdout == "Nothing was deleted.\n"
    for tag in ("deploy", "build"):
        assert cli("memory", "add", f"{tag} notes", "--tag", tag, cwd=workspace).code == 0
    with_reason = cli(
        "delete", "--topic", "deploy", "--reason", "outdated", "--json", cwd=workspace
    ).json()
    without = cli("delete", "--topic", "build", "--json", cwd=workspace).json()
    listed = cli("delete", "--list", cwd=workspace).stdout.splitlines()
    assert len(listed) == 2
    line_of = {line.split()[0]: line for line in listed}
    assert line_of[with_reason["id"]].endswith(f"{with_reason['what']}  (outdated)")
    assert line_of[without["id"]].endswith(f"  {without['what']}")
    assert "(" not in line_of[without["id"]].split(without["what"])[-1]


def test_purge_without_all_keeps_what_can_still_be_recovered(cli: Any, workspace: Path) -> None:
    assert cli("memory", "add", "keep me", "--tag", "t", cwd=workspace).code == 0
    deleted = cli("delete", "--topic", "t", "--json", cwd=workspace).json()
    purged = cli("purge", "--json", cwd=workspace)
    assert purged.code == 0, purged.stderr
    assert purged.json()["purged"] == []
    assert cli("undelete", deleted["id"], cwd=workspace).code == 0
    assert "keep me" in cli("memory", "list", cwd=workspace).stdout
    # --all --yes purges what could still be recovered: it is gone for good.
    again = cli("delete", "--topic", "t", "--json", cwd=workspace).json()
    everything = cli("purge", "--all", "--yes", "--json", cwd=workspace).json()
    assert again["id"] in json.dumps(everything["purged"])
    assert cli("undelete", again["id"], cwd=workspace).code != 0


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """A real terminal (a pseudo-terminal) as stdin, and a way to type a line into it."""
    leader, follower = os.openpty()
    stdin = open(follower, encoding="utf-8")  # noqa: SIM115 - closed below
    monkeypatch.setattr("sys.stdin", stdin)

    def typed(line: str) -> None:
        os.write(leader, line.encode())

    yield typed
    stdin.close()
    os.close(leader)


def test_purge_all_answered_no_at_the_terminal_says_nothing_was_removed(
    cli: Any,
    workspace: Path,
    terminal: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli("memory", "add", "still here", "--tag", "t", cwd=workspace).code == 0
    deleted = cli("delete", "--topic", "t", "--json", cwd=workspace).json()
    # The whole command line in this process, its stdin the terminal (run_cli gives every
    # command a pipe): the user answers no.
    monkeypatch.chdir(workspace)
    terminal("n\n")
    code = main(["purge", "--all"])
    asked = capsys.readouterr()
    assert code == 2
    assert "Purge everything deleted, including what could still be recovered?" in asked.out
    assert (
        asked.err
        == "engram: error: purge --all not confirmed; nothing removed (add --yes to confirm)\n"
    )
    assert cli("undelete", deleted["id"], cwd=workspace).code == 0


def _crashed_session(cli: Any, workspace: Path) -> str:
    started = cli("session", "start", "--json", cwd=workspace)
    assert started.code == 0, started.stderr
    return str(started.json()["id"])


@pytest.mark.parametrize(
    ("choice", "status"), [("continue", "active"), ("discard", "closed"), ("restart", "closed")]
)
def test_recover_says_what_became_of_the_session(
    cli: Any, workspace: Path, choice: str, status: str
) -> None:
    sid = _crashed_session(cli, workspace)
    done = cli("session", "recover", sid, choice, cwd=workspace)
    assert done.code == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"{choice}: session {sid} is {status}")
    assert ("; new session " in first) == (choice == "restart")
    listed = cli("session", "list", "--json", cwd=workspace).json()["sessions"]
    assert {s["id"]: s["status"] for s in listed}[sid] == status


def test_recover_review_prints_the_summary_and_changes_nothing(cli: Any, workspace: Path) -> None:
    sid = _crashed_session(cli, workspace)
    review = cli("session", "recover", sid, "review", cwd=workspace)
    assert review.code == 0, review.stderr
    summary = cli("session", "summary", sid, cwd=workspace).stdout
    assert review.stdout == summary
    as_json = cli("session", "recover", sid, "review", "--json", cwd=workspace).json()
    assert as_json["choice"] == "review" and as_json["session"]["status"] == "active"


def test_daemon_stop_with_no_server_says_so_and_succeeds(cli: Any, workspace: Path) -> None:
    stopped = cli("daemon", "stop", cwd=workspace)
    assert stopped.code == 0, stopped.stderr
    assert stopped.stdout == "no server was running\n"
    result = cli("daemon", "stop", "--json", cwd=workspace).json()
    assert (result["stopped"], result["running"]) == (False, False)


def test_an_empty_snapshot_list_says_how_to_take_one(cli: Any, workspace: Path) -> None:
    assert cli("init", cwd=workspace).code == 0
    listed = cli("snapshot", "list", cwd=workspace)
    assert listed.code == 0, listed.stderr
    assert listed.stdout == (
        "no snapshots yet (engram snapshot capture takes one; the editor takes them too)\n"
    )


def test_a_checkpoint_made_in_a_session_is_exported_as_its_checkpoint_call(
    cli: Any, workspace: Path
) -> None:
    sid = _crashed_session(cli, workspace)
    (workspace / "a.txt").write_text("one\n")
    made = cli("checkpoint", "create", "--json", cwd=workspace).json()
    exported = cli("session", "export", sid, cwd=workspace)
    assert exported.code == 0, exported.stderr
    calls = list(_dicts_with_a_tool(json.loads(exported.stdout)))
    assert [(c["tool"], c["summary"]) for c in calls] == [("checkpoint", made["id"])]


def _dicts_with_a_tool(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if "tool" in value:
            yield value
        for inner in value.values():
            yield from _dicts_with_a_tool(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _dicts_with_a_tool(inner)


def _session_with_turns(root: Path, sid: str, turns: int, files: int = 0) -> None:
    with Store.open_or_init(root) as store:
        sessions.start(store, session_id=sid, agent="claude-code")
        for n in range(1, turns + 1):
            sessions.record_turn(
                store, sid, user_message=f"step {n}", assistant_response=f"done {n}"
            )
        for n in range(files):
            sessions.record_file_modified(store, sid, f"f{n:02}.py")


def test_history_last_shows_only_the_latest_turns(cli: Any, workspace: Path) -> None:
    _session_with_turns(workspace, "S-h", 3)
    last = cli("session", "history", "S-h", "--last", "1", "--json", cwd=workspace).json()
    assert [t["user_message"] for t in last["turns"]] == ["step 3"]
    every = cli("session", "history", "S-h", "--json", cwd=workspace).json()
    assert [t["user_message"] for t in every["turns"]] == ["step 1", "step 2", "step 3"]


def test_loading_a_session_names_its_first_ten_files(cli: Any, workspace: Path) -> None:
    _session_with_turns(workspace, "S-f", 1, files=11)
    loaded = cli("session", "load", "S-f", cwd=workspace)
    assert loaded.code == 0, loaded.stderr
    (files,) = [line for line in loaded.stdout.splitlines() if line.startswith("files: ")]
    assert len(files.removeprefix("files: ").split(", ")) == 10


def test_saving_under_a_taken_name_at_a_terminal_takes_it_over_on_yes(
    cli: Any,
    workspace: Path,
    terminal: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _session_with_turns(workspace, "one", 1)
    _session_with_turns(workspace, "two", 1)
    assert cli("session", "save", "shared", "--session", "one", cwd=workspace).code == 0
    monkeypatch.chdir(workspace)
    terminal("y\n")
    assert main(["session", "save", "shared", "--session", "two"]) == 0
    said = capsys.readouterr().out
    assert "The name 'shared' belongs to session one. Take it over?" in said
    assert "Saved session shared (two, 1 turns)" in said
    loaded = cli("session", "load", "shared", "--json", cwd=workspace).json()
    assert loaded["session"]["id"] == "two"


def test_saving_a_session_near_its_quota_warns_on_stderr(cli: Any, workspace: Path) -> None:
    _session_with_turns(workspace, "S-q", 3)
    with Store.open(workspace) as store:
        used = quota.session_usage(store, "S-q")
    # Room for the session as it is; its saved copy counts against the quota too.
    limit = used + 50
    assert cli("config", "set", "sessions.quota_bytes", str(limit), cwd=workspace).code == 0
    saved = cli("session", "save", "near", "--session", "S-q", cwd=workspace)
    assert saved.code == 0, saved.stderr
    assert saved.stdout.startswith("Saved session near (S-q, 3 turns)")
    assert re.fullmatch(
        r"engram: session S-q reached \d+ % of its quota \([\d,]+ of [\d,]+ bytes\).*\n",
        saved.stderr,
    ), saved.stderr
