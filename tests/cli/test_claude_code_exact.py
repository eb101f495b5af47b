"""`engram ingest claude-code` counts each thing once, whatever files a user names.

The transcripts are built line by line in the shapes found in real Claude Code 2.0.x and 2.1.x
files from public repositories (those files carry no license, so none is copied here; see
`tests/claude_reference.py` for the independent count these figures are checked against):
subagents in `<session>/subagents/` (2.1) or beside the session's file (2.0), a `cd` into a
subfolder mid-session, a result written before its call, a call never answered, a last line
without a final newline.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core import clock
from tests.agents_fixtures import Transcript, text, tool_use
from tests.claude_reference import KINDS, count
from tests.conftest import run_cli_process

SID = "5e1d0c2b-aaaa-4bbb-8ccc-ddddeeeeffff"


def _session(workspace: Path, folder: Path, *, layout: str = "2.1", days_ago: int = 1) -> Path:
    """A session with one subagent; returns the main file's path."""
    start = (datetime.now(UTC) - timedelta(days=days_ago)).replace(microsecond=0)
    main = Transcript(SID, workspace, start=start)
    main.prompt("Add a --verbose flag to the CLI")
    main.response([text("Looking."), tool_use("toolu_task", "Task", prompt="find the CLI")])
    main.tool_result("toolu_task", "It is in cli.py")
    main.response(
        [
            tool_use(
                "toolu_edit",
                "Edit",
                file_path=str(workspace / "cli.py"),
                old_string="a",
                new_string="b",
            )
        ]
    )
    main.tool_result("toolu_edit", "The file has been updated.")
    main.response([tool_use("toolu_rm", "Bash", command="rm -rf build")])
    main.tool_result(
        "toolu_rm",
        "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        is_error=True,
    )
    main.prompt("Run the tests")
    main.response([tool_use("toolu_test", "Bash", command="pytest -q")])
    main.tool_result("toolu_test", "Exit code 1\n1 failed", is_error=True)
    sub = Transcript(SID, workspace, start=start + timedelta(seconds=5))
    sub.response(
        [tool_use("toolu_sgrep", "Grep", pattern="argparse")],
        sidechain=True,
        agent_id="a1b2c3",
        input_tokens=7,
        output_tokens=70,
        cache_read=700,
        message_id="msg_sub_001",
    )
    sub.tool_result("toolu_sgrep", "cli.py:3:import argparse", sidechain=True, agent_id="a1b2c3")
    sub.response(
        [text("It is in cli.py")],
        sidechain=True,
        agent_id="a1b2c3",
        output_tokens=30,
        message_id="msg_sub_002",
    )
    path = main.save(folder / f"{SID}.jsonl")
    if layout == "2.1":
        sub.save(folder / SID / "subagents" / "agent-a1b2c3.jsonl")
    else:
        sub.save(folder / "agent-a1b2c3.jsonl")
    return path


def _files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.jsonl"))


def _metrics(cli: Any, workspace: Path) -> dict[str, Any]:
    result = cli("session", "metrics", SID, "--json", cwd=workspace)
    assert result.code == 0, result.stderr
    data: dict[str, Any] = result.json()
    return data


def _assert_equals_reference(metrics: dict[str, Any], reference: dict[str, Any]) -> None:
    assert metrics["turns"] == reference["prompts"]
    assert metrics["tool_calls"] == reference["tool_calls"]
    assert metrics["tool_calls_failed"] == reference["failed"]
    for part in ("main", "subagents"):
        for kind in (*KINDS, "messages"):
            assert metrics["tokens"][part][kind] == reference[part][kind], (part, kind)


@pytest.mark.parametrize("layout", ["2.1", "2.0"])
def test_naming_the_sessions_file_reads_its_subagents(
    cli: Any, workspace: Path, tmp_path: Path, layout: str
) -> None:
    (workspace / ".git").mkdir()
    folder = tmp_path / "projects" / "p"
    main = _session(workspace, folder, layout=layout)
    reference = count(_files(folder))[SID]
    assert (
        reference["subagents"]["messages"] == 2
    )  # the negative control: there is something to miss
    done = cli("ingest", "claude-code", str(main), "--json", cwd=workspace)
    assert done.code == 0, done.stderr
    assert len(done.json()["transcripts"]) == 2
    _assert_equals_reference(_metrics(cli, workspace), reference)


def test_naming_the_folder_reads_every_transcript_in_it(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".git").mkdir()
    folder = tmp_path / "projects" / "p"
    _session(workspace, folder)
    done = cli("ingest", "claude-code", str(folder), cwd=workspace)
    assert done.code == 0, done.stderr
    _assert_equals_reference(_metrics(cli, workspace), count(_files(folder))[SID])


@pytest.mark.parametrize("days_ago", [1, 200])
def test_the_same_bytes_from_another_path_change_nothing(
    workspace: Path, tmp_path: Path, days_ago: int
) -> None:
    """A copy, a backup, a resumed session starting with its parent's lines; also once the
    session is older than the retention (its ledgers' text is pruned, their keys are not)."""
    # In processes of their own, as a user runs them: the first ingest prunes what is older
    # than the retention after recording it, so the second finds the same figures
    # (docs/testing.md, "How the CLI tests run engram").
    cli = run_cli_process
    (workspace / ".git").mkdir()
    folder = tmp_path / "projects" / "p"
    main = _session(workspace, folder, days_ago=days_ago)
    assert cli("ingest", "claude-code", str(main), cwd=workspace).code == 0
    before = _metrics(cli, workspace)
    history = cli("session", "history", SID, "--json", cwd=workspace).stdout
    copy = tmp_path / "backup" / "copy.jsonl"
    copy.parent.mkdir()
    shutil.copy(main, copy)
    resumed = tmp_path / "projects" / "p" / "resumed.jsonl"
    resumed.write_bytes(main.read_bytes())  # a resumed file starts with its parent's lines
    again = cli("ingest", "claude-code", str(copy), str(resumed), "--json", cwd=workspace)
    assert again.code == 0, again.stderr
    summary = again.json()
    assert (summary["prompts"], summary["turns"], summary["tool_calls"], summary["failures"]) == (
        0,
        0,
        0,
        0,
    )
    assert _metrics(cli, workspace) == before
    assert cli("session", "history", SID, "--json", cwd=workspace).stdout == history
    assert before["turns"] == 2 and before["tokens"]["all"]["messages"] == 6


def test_the_summary_line_agrees_with_session_metrics(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".git").mkdir()
    main = _session(workspace, tmp_path / "projects" / "p")
    done = cli("ingest", "claude-code", "--json", str(main), cwd=workspace)  # --json anywhere
    assert done.code == 0, done.stderr
    summary = done.json()
    metrics = _metrics(cli, workspace)
    assert summary["turns"] == metrics["turns"] == 2
    assert summary["tool_calls"] == metrics["tool_calls"] == 5
    # The rejected rm and the failing test: failed in both, one of them by the user's choice.
    assert summary["failures"] == metrics["tool_calls_failed"] == 2
    assert summary["interrupted"] == 1
    human = cli("ingest", "claude-code", str(main), "--json", cwd=workspace)
    assert human.code == 0


def test_a_last_line_without_newline_is_read_once_the_file_stopped_growing(
    workspace: Path, tmp_path: Path
) -> None:
    from memory_core import sessions
    from memory_core.agents import transcripts
    from memory_core.store import Store

    (workspace / ".git").mkdir()
    store = Store.open_or_init(workspace)
    t = Transcript(SID, workspace)
    t.prompt("Summarise the README")
    t.response([text("It explains the install.")], output_tokens=42)
    path = tmp_path / f"{SID}.jsonl"
    path.write_text("\n".join(t.lines), encoding="utf-8")  # no final newline
    # Still being written (changed just now, the session goes on): the line waits.
    stats = transcripts.ingest_file(store, path, flush=False)
    assert stats.prompts == 1
    assert store.query_one("SELECT COUNT(*) FROM agent_messages")[0] == 0
    # Quiet for a while: it is whole, and read once.
    old = time.time() - 60
    os.utime(path, (old, old))
    transcripts.ingest_file(store, path, flush=False)
    transcripts.ingest_file(store, path, flush=True)
    with path.open("a", encoding="utf-8") as handle:  # the writer comes back: a newline, a line
        handle.write("\n")
    transcripts.ingest_file(store, path, flush=True)
    figures = sessions.metrics(store, SID)["tokens"]["main"]
    assert (figures["messages"], figures["output_tokens"]) == (1, 42)
    store.close()


def test_a_result_before_its_call_and_a_call_never_answered_both_count(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".git").mkdir()
    t = Transcript(SID, workspace, start=datetime.now(UTC) - timedelta(days=2))
    t.prompt("Write the notes file")
    t.tool_result("toolu_w", "File created successfully")  # written before the call's line
    t.response([tool_use("toolu_w", "Write", file_path=str(workspace / "NOTES.md"), content="x")])
    t.response([tool_use("toolu_long", "Bash", command="make release")])  # the session ends here
    path = t.save(tmp_path / f"{SID}.jsonl")
    reference = count([path])[SID]
    assert (reference["tool_calls"], reference["unanswered"], len(reference["files"])) == (2, 1, 1)
    done = cli("ingest", "claude-code", str(path), "--json", cwd=workspace)
    assert done.code == 0, done.stderr
    metrics = _metrics(cli, workspace)
    assert done.json()["tool_calls"] == metrics["tool_calls"] == 2
    assert metrics["tool_calls_failed"] == 0
    assert metrics["files_modified"] == 1
    # The command it was running is one of the session's commands, not a failed one.
    assert (metrics["commands"], metrics["commands_failed"]) == (reference["commands"], 0) == (1, 0)


def test_a_cd_into_a_subfolder_names_each_file_once(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".git").mkdir()
    project = Path("/home/someone/project")
    t = Transcript(SID, project)
    t.prompt("Fix the docs")
    t.response(
        [
            tool_use(
                "toolu_1", "Edit", file_path=f"{project}/docs/a.md", old_string="a", new_string="b"
            )
        ]
    )
    t.tool_result("toolu_1", "The file has been updated.")
    t.cwd = project / "docs"  # the user ran `cd docs`: the next lines carry it as their cwd
    t.response(
        [
            tool_use(
                "toolu_2", "Edit", file_path=f"{project}/docs/a.md", old_string="b", new_string="c"
            )
        ]
    )
    t.tool_result("toolu_2", "The file has been updated.")
    path = t.save(tmp_path / f"{SID}.jsonl")
    assert cli("ingest", "claude-code", str(path), cwd=workspace).code == 0
    metrics = _metrics(cli, workspace)
    # Named once, inside the project (the file is not in this workspace, so how many files
    # differ in the end says nothing here: `files_touched` is the count of names).
    assert (metrics["files_touched"], metrics["files_outside_project"]) == (1, 0)


REAL = os.environ.get("ENGRAM_REAL_CLAUDE_TRANSCRIPTS")


@pytest.mark.skipif(
    not REAL, reason="set ENGRAM_REAL_CLAUDE_TRANSCRIPTS to a folder of real transcripts"
)
def test_real_transcripts_equal_the_independent_count(cli: Any, tmp_path: Path) -> None:
    """Every session under the folder, ingested by naming its main file (its subagents come
    with it), then again from a copy: every figure equals the independent count, twice."""
    assert REAL is not None
    found = sorted(Path(REAL).rglob("*.jsonl"))
    by_session: dict[str, list[Path]] = {}
    for path in found:
        for sid in count([path]):
            by_session.setdefault(sid, []).append(path)
    assert by_session, f"no transcripts under {REAL}"
    mismatches = []
    for sid, paths in sorted(by_session.items()):
        workspace = tmp_path / sid
        (workspace / ".git").mkdir(parents=True)
        reference = count(paths)[sid]
        main = [p for p in paths if p.stem == sid] or paths
        for round_ in ("first", "copy"):
            names = (
                main
                if round_ == "first"
                else [shutil.copy(p, tmp_path / f"{round_}-{p.name}") for p in paths]
            )
            done = cli("ingest", "claude-code", *map(str, names), "--json", cwd=workspace)
            assert done.code == 0, done.stderr
            metrics = cli("session", "metrics", sid, "--json", cwd=workspace).json()
            got = {
                "turns": metrics["turns"],
                "tool_calls": metrics["tool_calls"],
                "failed": metrics["tool_calls_failed"],
                "commands": metrics["commands"],
                "files": metrics["files_modified"] + metrics["files_outside_project"],
                **{
                    f"{part}.{kind}": metrics.get("tokens", {}).get(part, {}).get(kind, 0)
                    for part in ("main", "subagents")
                    for kind in (*KINDS, "messages")
                },
            }
            got["duration"] = round(metrics["duration_seconds"])
            want = {
                "duration": round(
                    clock.parse_iso(reference["last"]) - clock.parse_iso(reference["first"])
                ),
                "turns": reference["prompts"],
                "tool_calls": reference["tool_calls"],
                "failed": reference["failed"],
                "commands": reference["commands"],
                "files": len(reference["files"]),
                **{
                    f"{part}.{kind}": reference[part][kind]
                    for part in ("main", "subagents")
                    for kind in (*KINDS, "messages")
                },
            }
            if round_ == "first":
                summary = done.json()
                got |= {
                    "summary.turns": summary["turns"],
                    "summary.tool_calls": summary["tool_calls"],
                    "summary.failures": summary["failures"],
                }
                want |= {
                    "summary.turns": reference["prompts"],
                    "summary.tool_calls": reference["tool_calls"],
                    "summary.failures": reference["failed"],
                }
            if got != want:
                mismatches.append(
                    (sid, round_, {k: (got[k], want[k]) for k in got if got[k] != want[k]})
                )
    print(f"{len(by_session)} sessions, {len(found)} files; mismatches: {mismatches}")
    assert mismatches == []


def test_hook_recorded_calls_stay_in_their_turn_in_history_and_the_beans_export(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    from memory_core.agents import hooks
    from tests.agents_fixtures import hook_payload

    (workspace / ".git").mkdir()
    t = Transcript(SID, workspace)
    t.prompt("List the files")
    t.response([tool_use("toolu_ls", "Bash", command="ls -la")])
    path = t.save(tmp_path / f"{SID}.jsonl")
    hooks.handle(
        "claude-code",
        "UserPromptSubmit",
        hook_payload("UserPromptSubmit", SID, workspace, path, prompt="List the files"),
    )
    # PostToolUse sees the call first, then the transcript gets its result and the reply.
    post = hook_payload(
        "PostToolUse",
        SID,
        workspace,
        path,
        tool_name="Bash",
        tool_input={"command": "ls -la"},
        tool_use_id="toolu_ls",
        tool_response={"stdout": "a.txt", "stderr": "", "interrupted": False},
    )
    hooks.handle("claude-code", "PostToolUse", post)
    t.tool_result(
        "toolu_ls", "a.txt", result={"stdout": "a.txt", "stderr": "", "interrupted": False}
    )
    t.response([text("One file: a.txt.")])
    t.save(path)
    hooks.handle(
        "claude-code",
        "Stop",
        hook_payload("Stop", SID, workspace, path, last_assistant_message="One file: a.txt."),
    )
    history = cli("session", "history", SID, "--json", cwd=workspace).json()
    turns = history["turns"] if isinstance(history, dict) else history
    assert [c["tool"] for c in turns[-1]["tool_calls"]] == ["Bash"]
    assert _metrics(cli, workspace)["tool_calls"] == 1  # shown in the turn, counted once
    exported = cli("session", "export", SID, "--format", "beans", cwd=workspace)
    assert exported.code == 0, exported.stderr
    beans_turns = json.loads(exported.stdout)["turns"]
    assert [c["tool"] for c in beans_turns[-1]["toolCalls"]] == ["Bash"]


def test_session_list_names_each_sessions_agent(cli: Any, workspace: Path, tmp_path: Path) -> None:
    from tests.core.test_gemini_current_format import SID as GEMINI_SID
    from tests.core.test_gemini_current_format import _chat

    (workspace / ".git").mkdir()
    main = _session(workspace, tmp_path / "projects" / "p")
    assert cli("ingest", "claude-code", str(main), cwd=workspace).code == 0
    (tmp_path / "chats").mkdir()
    chat = _chat(tmp_path / "chats" / "session-2026-11-20T10-00-9c0ffee0.jsonl")
    assert cli("ingest", "gemini", str(chat), cwd=workspace).code == 0
    listed = {
        s["id"]: s["agent"]
        for s in cli("session", "list", "--json", cwd=workspace).json()["sessions"]
    }
    assert listed == {SID: "claude-code", GEMINI_SID: "gemini"}
    lines = cli("session", "list", cwd=workspace).stdout.splitlines()
    assert any(line.startswith(SID) and "claude-code," in line for line in lines)
    assert any(line.startswith(GEMINI_SID) and "gemini," in line for line in lines)


def test_a_resumed_session_counts_only_what_is_new(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    """`claude --resume` writes a new session file that starts with its parent's lines (same
    uuids and message ids, the new session's id): only the new prompt and reply are the new
    session's; the parent's figures do not move."""
    (workspace / ".git").mkdir()
    folder = tmp_path / "projects" / "p"
    parent = _session(workspace, folder)
    assert cli("ingest", "claude-code", str(parent), cwd=workspace).code == 0
    before = _metrics(cli, workspace)
    child_id = "6f2e1d3c-bbbb-4ccc-8ddd-eeeeffff0000"
    replayed = [
        json.dumps({**line, "sessionId": child_id})
        for line in map(json.loads, parent.read_text(encoding="utf-8").splitlines())
    ]
    t = Transcript(child_id, workspace, start=datetime.now(UTC) - timedelta(hours=1))
    t.prompt("Now update the changelog")
    t.response([text("Updated.")], message_id="msg_child_001", output_tokens=9)
    child = folder / f"{child_id}.jsonl"
    child.write_text("\n".join([*replayed, *t.lines]) + "\n", encoding="utf-8")
    done = cli("ingest", "claude-code", str(child), "--json", cwd=workspace)
    assert done.code == 0, done.stderr
    assert (done.json()["prompts"], done.json()["tool_calls"]) == (1, 0)
    assert _metrics(cli, workspace) == before
    child_metrics = cli("session", "metrics", child_id, "--json", cwd=workspace).json()
    assert child_metrics["turns"] == 1
    assert child_metrics["tokens"]["all"]["messages"] == 1
    assert child_metrics["tokens"]["all"]["output_tokens"] == 9
    # It started when it was resumed, not when its parent did (the replayed lines' times).
    assert child_metrics["duration_seconds"] == 2.0
