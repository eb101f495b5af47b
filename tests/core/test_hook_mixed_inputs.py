"""Hook runs on the inputs the other hook tests leave out (issue 31): an event spooled while the
store was busy and folded in by the next hook, a Codex patch over several files, a Gemini
session that went silent with a question in its chat, the very first session of a project, a
resumed session whose turns were archived, a transcript whose last line has no newline yet at
SessionEnd, and stdin that cannot be read at all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_core import gotchas, lifecycle, sessions
from memory_core.agents import hooks, spool
from memory_core.store import Store
from tests.agents_fixtures import Transcript, hook_payload, text

SID = "5e55a0b1-2222-4333-8444-955566667777"
T0 = 1_800_000_000.0
RECORDED_CHAT = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "recorded"
    / "gemini-0.61.0"
    / "session-2026-11-27T12-26-065aa4b4.jsonl"
)
GEMINI_SID = "065aa4b4-e4e3-46d7-90e6-9c76e5c56963"


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def _hook(repo: Path, agent: str, event: str, at: float, **fields: Any) -> str:
    data = {"session_id": SID, "cwd": str(repo), "hook_event_name": event, **fields}
    code, out = hooks.handle(agent, event, json.dumps(data), now=at)
    assert code == 0
    return out


def _rows(repo: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with Store.open(repo) as store:
        return [tuple(row) for row in store.query(sql, params)]


def test_an_event_spooled_while_the_store_was_busy_is_recorded_by_the_next_hook(
    repo: Path,
) -> None:
    Store.init(repo).close()
    spooled = hook_payload(
        "PostToolUse",
        SID,
        repo,
        tool_name="Bash",
        tool_use_id="toolu_spooled",
        tool_input={"command": "make lint"},
        tool_response={"stdout": "ok", "stderr": "", "interrupted": False},
    )
    # As `engram hook claude PostToolUse` spools it: the agent's name as typed, the time it ran.
    assert spool.keep(repo, "claude", "PostToolUse", spooled.encode(), T0 + 5, "busy")
    _hook(repo, "claude-code", "Stop", T0 + 60)
    assert _rows(repo, "SELECT command, exit_code, ts FROM session_commands") == [
        ("make lint", 0, T0 + 5)
    ]
    assert _rows(repo, "SELECT agent FROM agent_sessions") == [("claude-code",)]
    assert spool.pending(repo) == []


def test_a_codex_patch_is_preceded_by_the_gotchas_of_each_file_it_changes(repo: Path) -> None:
    for name in ("db.py", "api.py", "plain.py"):
        (repo / name).write_text("x = 1\n")
    with Store.init(repo) as store:
        gotchas.add(store, "Pool exhaustion under load", related_files=["db.py"])
        gotchas.add(store, "Handlers must be idempotent", related_files=["api.py"])
    patch = (
        "*** Begin Patch\n*** Update File: db.py\n@@\n-x = 1\n+x = 2\n"
        "*** Update File: api.py\n@@\n-x = 1\n+x = 3\n"
        "*** Update File: plain.py\n@@\n-x = 1\n+x = 4\n*** End Patch\n"
    )
    out = _hook(
        repo, "codex", "PreToolUse", T0, tool_name="apply_patch", tool_input={"command": patch}
    )
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("engram: known gotchas for db.py, api.py, plain.py\n")
    assert "Pool exhaustion under load" in context and "Handlers must be idempotent" in context
    # A shell call, or a patch of files without gotchas, is let through without a word.
    assert (
        _hook(repo, "codex", "PreToolUse", T0, tool_name="shell", tool_input={"command": patch})
        == ""
    )
    quiet = "*** Begin Patch\n*** Update File: plain.py\n@@\n-x = 1\n+x = 5\n*** End Patch\n"
    assert (
        _hook(
            repo, "codex", "PreToolUse", T0, tool_name="apply_patch", tool_input={"command": quiet}
        )
        == ""
    )


def test_a_silent_gemini_sessions_unanswered_question_is_read_from_its_chat(
    repo: Path, tmp_path: Path
) -> None:
    # The recorded Gemini CLI 0.61 chat, cut after the first request: the CLI was closed
    # before it answered, and no SessionEnd came.
    lines = RECORDED_CHAT.read_text(encoding="utf-8").splitlines()
    chat = tmp_path / "chats" / RECORDED_CHAT.name
    chat.parent.mkdir()
    chat.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    code, _ = hooks.handle(
        "gemini",
        "Notification",
        json.dumps({"session_id": GEMINI_SID, "cwd": str(repo), "transcript_path": str(chat)}),
        now=T0,
    )
    assert code == 0
    assert _rows(repo, "SELECT text FROM agent_prompts") == []
    # 31 minutes later a Claude Code session starts: the Gemini session is settled, its chat
    # read, and the question it never answered is the task in progress.
    out = _hook(repo, "claude-code", "SessionStart", T0 + 31 * 60, source="startup")
    assert _rows(repo, "SELECT session_id, text FROM agent_prompts") == [
        (GEMINI_SID, "Create hello.py that prints hello")
    ]
    assert "Create hello.py that prints hello" in out


def test_the_first_session_of_a_project_is_not_told_it_continues_another(repo: Path) -> None:
    out = _hook(repo, "claude-code", "SessionStart", T0, source="startup")
    assert "Continuing" not in out
    _hook(repo, "claude-code", "UserPromptSubmit", T0 + 1, prompt="/review", prompt_id="p1")
    # The next session (minutes later) is told where this one stood.
    later = _hook(
        repo, "claude-code", "SessionStart", T0 + 120, session_id="next-0001", source="startup"
    )
    assert "Continuing (workflow session) from claude-code" in later
    assert "last commands: /review" in later


def test_a_resumed_session_gets_its_archived_turns_back_when_it_starts(repo: Path) -> None:
    _hook(repo, "claude-code", "SessionStart", T0, source="startup")
    _hook(repo, "claude-code", "UserPromptSubmit", T0 + 1, prompt="add the export", prompt_id="p1")
    _hook(repo, "claude-code", "Stop", T0 + 2, last_assistant_message="Export added.")
    with Store.open(repo) as store:
        assert lifecycle.archive_session(store, SID, now=T0 + 40 * 86400)["rows"]
    assert _rows(repo, "SELECT COUNT(*) FROM archived_rows") == [(1,)]
    # Another event of the archived session is no reason to unpack it...
    _hook(repo, "claude-code", "Notification", T0 + 40 * 86400, message="waiting")
    assert _rows(repo, "SELECT COUNT(*) FROM archived_rows") == [(1,)]
    # ...its resumption is: the turns are back before anything new joins them.
    _hook(repo, "claude-code", "SessionStart", T0 + 40 * 86400 + 5, source="resume")
    assert _rows(repo, "SELECT COUNT(*) FROM archived_rows") == [(0,)]
    assert _rows(repo, "SELECT user_message FROM session_turns WHERE session_id = ?", SID) == [
        ("add the export",)
    ]


def test_a_last_line_without_its_newline_yet_is_read_when_the_session_ends(
    repo: Path, tmp_path: Path
) -> None:
    t = Transcript(SID, repo)
    t.prompt("summarise the changes")
    t.response([text("Two files changed: api.py and db.py.")])
    path = tmp_path / "session.jsonl"
    # Written just now, the answer's line not yet followed by its newline.
    path.write_text("\n".join(t.lines), encoding="utf-8")
    _hook(repo, "claude-code", "SessionEnd", T0, reason="exit", transcript_path=str(path))
    with Store.open(repo) as store:
        turns = sessions.history(store, SID)
    assert [(x["user_message"], x["assistant_response"]) for x in turns] == [
        ("summarise the changes", "Two files changed: api.py and db.py.")
    ]


class _BrokenStdin:
    class buffer:  # the attribute sys.stdin has
        @staticmethod
        def isatty() -> bool:
            raise OSError("stdin closed")


def test_stdin_that_cannot_be_read_is_an_empty_payload_and_session_start_still_answers(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", _BrokenStdin())
    assert hooks.main("claude-code", "SessionStart", workspace=str(repo)) == 0
    out = capsys.readouterr().out
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "Git branch:" in context
    assert not (repo / ".engram" / "engram.log").exists() or "failed" not in (
        repo / ".engram" / "engram.log"
    ).read_text(encoding="utf-8")
