"""What commands tell a user, field by field and line by line, where mutation testing found
nothing checking it: `--json` fields of rollback and gotcha export, the timeline one entry a
line, a session deleted for the recovery period the user set, and the terminal's yes/no."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from memory_core import clock
from memory_core.cli.context import Context


def test_rollback_with_json_says_it_was_done_and_what_it_restored(
    cli: Any, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("one\n")
    checkpoint = cli("checkpoint", "create", "--json", cwd=workspace).json()
    (workspace / "a.txt").write_text("two\n")
    done = cli("rollback", checkpoint["id"], "--yes", "--json", cwd=workspace)
    assert done.code == 0, done.stderr
    result = done.json()
    assert result["done"] is True
    assert result["restored"] == ["a.txt"] and result["removed"] == []
    assert (workspace / "a.txt").read_text() == "one\n"
    # Again, with the workspace already as the checkpoint has it: done, nothing restored.
    again = cli("rollback", checkpoint["id"], "--yes", "--json", cwd=workspace).json()
    assert (again["done"], again["restored"], again["removed"]) == (True, [], [])
    plain = cli("rollback", checkpoint["id"], "--yes", cwd=workspace)
    assert plain.stdout == f"Nothing to do: the workspace already matches {checkpoint['id']}.\n"


def test_gotcha_export_names_both_files_it_wrote(cli: Any, workspace: Path) -> None:
    assert cli("init", cwd=workspace).code == 0
    added = cli("gotcha", "add", "pip install needs --user here", "--json", cwd=workspace)
    assert added.code == 0, added.stderr
    done = cli("gotcha", "export", "--json", cwd=workspace)
    assert done.code == 0, done.stderr
    written = done.json()
    assert set(written) == {"markdown", "json"}
    assert Path(written["markdown"]).name == "gotchas.md"
    assert "pip install needs --user here" in Path(written["markdown"]).read_text()
    exported = json.loads(Path(written["json"]).read_text())
    assert "pip install needs --user here" in json.dumps(exported)
    plain = cli("gotcha", "export", cwd=workspace)
    assert plain.stdout == f"Wrote {written['markdown']} and {written['json']}\n"


def test_the_timeline_prints_one_entry_a_line_oldest_first(cli: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    assert cli("checkpoint", "create", "first", cwd=workspace).code == 0
    (workspace / "a.txt").write_text("two\n")
    assert cli("checkpoint", "create", "second", cwd=workspace).code == 0
    entries = cli("timeline", "--source", "checkpoint", "--json", cwd=workspace).json()["entries"]
    assert len(entries) == 2
    shown = cli("timeline", "--source", "checkpoint", cwd=workspace)
    assert shown.code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("  Checkpoint “first” made, 1 file(s)")
    assert lines[1].endswith("  Checkpoint “second” made, 1 file(s)")


def test_a_deleted_session_is_recoverable_for_the_days_the_user_set(
    cli: Any, workspace: Path
) -> None:
    assert cli("config", "set", "memory.recovery_days", "7", cwd=workspace).code == 0
    assert cli("session", "start", "s1", cwd=workspace).code == 0
    before = time.time()
    done = cli("session", "delete", "s1", "--yes", "--json", cwd=workspace)
    assert done.code == 0, done.stderr
    until = done.json()["recover_until"]
    until_ts = clock.parse_iso(until) if isinstance(until, str) else float(until)
    assert before + 7 * 86400 - 5 <= until_ts <= time.time() + 7 * 86400 + 5


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A real terminal (a pseudo-terminal) as stdin, and a way to type a line into it."""
    leader, follower = os.openpty()
    stdin = open(follower, encoding="utf-8")  # noqa: SIM115 - closed below
    monkeypatch.setattr("sys.stdin", stdin)

    def typed(line: str) -> None:
        os.write(leader, line.encode())

    yield typed
    stdin.close()
    os.close(leader)


@pytest.mark.parametrize(
    ("answer", "confirmed"),
    [("y\n", True), ("yes\n", True), (" YES \n", True), ("n\n", False), ("\n", False)],
)
def test_a_question_on_a_terminal_goes_ahead_only_on_yes(
    terminal: Any, capsys: pytest.CaptureFixture[str], answer: str, confirmed: bool
) -> None:
    context = Context(argparse.Namespace(command="purge", json=False, workspace=None))
    assert context.interactive
    terminal(answer)
    assert context.confirm("Purge everything?") is confirmed
    assert capsys.readouterr().out == "Purge everything? [y/N] "


def test_a_group_without_its_action_is_a_usage_error(cli: Any, workspace: Path) -> None:
    done = cli("checkpoint", cwd=workspace)
    assert (done.code, done.stdout) == (2, "")
    assert done.stderr == (
        "engram checkpoint: error: the following arguments are required: ACTION"
        " (see `engram checkpoint --help`)\n"
    )
    bare = cli(cwd=workspace)
    assert (bare.code, bare.stdout) == (2, "")
    assert "the following arguments are required: SUBCOMMAND" in bare.stderr


def test_checkpoint_show_lists_each_files_mode_size_and_path(cli: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    os.chmod(workspace / "a.txt", 0o644)
    made = cli("checkpoint", "create", "--json", cwd=workspace).json()
    shown = cli("checkpoint", "show", made["id"], "--json", cwd=workspace).json()
    assert shown["id"] == made["id"]
    assert [(f["path"], f["size"], f["mode"]) for f in shown["manifest"]] == [("a.txt", 4, 0o644)]
    plain = cli("checkpoint", "show", made["id"], cwd=workspace)
    assert plain.stdout == " 644         4  a.txt\n"


def test_an_internal_error_is_one_line_and_its_traceback_goes_to_the_log(
    cli: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug (here a handler that raises) is never a traceback on the terminal: one line that
    says where the details are, and the details in the store's log."""
    from memory_core.cli import basics

    assert cli("init", cwd=workspace).code == 0

    def broken(ctx: Any) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(basics, "run_status", broken)
    log = workspace / ".engram" / "engram.log"
    done = cli("status", cwd=workspace)
    assert (done.code, done.stdout) == (1, "")
    assert done.stderr == f"engram: internal error: RuntimeError: boom (details in {log})\n"
    logged = log.read_text()
    assert " ERROR [" in logged and "engram status failed" in logged
    assert "Traceback (most recent call last):" in logged and "RuntimeError: boom" in logged
    as_json = cli("status", "--json", cwd=workspace)
    assert as_json.code == 1 and as_json.stderr == ""
    assert as_json.json() == {
        "error": "internal error: RuntimeError: boom",
        "hint": f"details in {log}",
        "code": "internal",
        "exit_code": 1,
    }


def test_evolution_since_a_time_includes_a_change_made_at_that_very_second(
    cli: Any, workspace: Path
) -> None:
    from memory_core import evolution
    from memory_core.store import Store

    at = clock.parse_iso("2026-01-05T10:00:00Z")
    with Store.init(workspace) as store:
        evolution.record_change(store, "a.py", actor="editor", before="", after="x\n", now=at - 60)
        evolution.record_change(store, "a.py", actor="agent", before="x\n", after="y\n", now=at)
    shown = cli(
        "evolution", "a.py", "--since", "2026-01-05T10:00:00Z", "--json", cwd=workspace
    ).json()
    assert [row["actor"] for row in shown["history"]] == ["agent"]
