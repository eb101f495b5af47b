"""`engram session export --format beans`, built in-process: every field of beans' shape."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memory_core import beans, clock, sessions
from memory_core.store import Store

T0 = 1_790_000_000.0


def _session(store: Store, workspace: Path) -> str:
    sid = "beans-1"
    sessions.start(store, session_id=sid, agent="claude-code", now=T0)
    sessions.record_turn(
        store,
        sid,
        user_message="add the cache",
        assistant_response="Added it.",
        tool_calls=[{"tool": "Edit", "ok": True}, {"tool": "Bash", "ok": False}],
        input_tokens=100,
        output_tokens=20,
        started_at=T0 + 10,
        ended_at=T0 + 40,
    )
    sessions.record_turn(
        store,
        sid,
        tool_calls=[{"tool": "Read", "ok": True}],
        input_tokens=50,
        output_tokens=10,
        started_at=None,
        ended_at=T0 + 90,
    )
    (workspace / "cache.py").write_text("x = 1\n")
    sessions.record_file_modified(store, sid, "cache.py", T0 + 30)
    sessions.record_command(store, sid, "pytest", exit_code=1, ts=T0 + 35)
    return sid


def test_the_metrics_are_beans_names_for_engrams_numbers(store: Store, workspace: Path) -> None:
    sid = _session(store, workspace)
    numbers = beans.metrics(store, sid, now=T0 + 100)
    mine = sessions.metrics(store, sid, now=T0 + 100)
    assert numbers == {
        "sessionId": sid,
        "durationMs": round(mine["duration_seconds"] * 1000),
        "turnCount": 2,
        "totalTokens": 180,
        "averageTokensPerTurn": 90.0,
        "filesModified": 1,
        "commandsExecuted": 1,
        "successfulToolCalls": 2,
        "failedToolCalls": 1,
        "toolCallSuccessRate": round(2 / 3, 3),
    }
    assert numbers["durationMs"] > 0


def test_a_session_without_tool_calls_has_a_success_rate_of_zero(store: Store) -> None:
    sessions.start(store, session_id="quiet", now=T0)
    numbers = beans.metrics(store, "quiet", now=T0 + 5)
    assert numbers["toolCallSuccessRate"] == 0.0
    assert numbers["successfulToolCalls"] == numbers["failedToolCalls"] == 0


def test_the_export_has_every_field_of_beans_session_export(store: Store, workspace: Path) -> None:
    sid = _session(store, workspace)
    doc = beans.export(store, sid, now=T0 + 100)
    assert doc["version"] == "1.0"
    assert doc["savedAt"] == "2026-09-21T14:15:00Z"
    assert doc["session"] == {
        "sessionId": sid,
        "startedAt": clock.iso(T0),
        "turnCount": 2,
        "totalTokens": 180,
        "modifiedFiles": ["cache.py"],
        "commandsExecuted": 1,
    }
    first, second = doc["turns"]
    assert first["turnNumber"] == 1
    assert first["userMessage"] == "add the cache"
    assert first["assistantResponse"] == "Added it."
    assert [call["tool"] for call in first["toolCalls"]] == ["Edit", "Bash"]
    assert first["timestamp"] == clock.iso(T0 + 10)
    assert first["tokens"] == {"prompt": 100, "completion": 20}
    # a turn with no messages exports empty texts, and its end time when it has no start
    assert (second["turnNumber"], second["userMessage"], second["assistantResponse"]) == (
        2,
        "",
        "",
    )
    assert second["timestamp"] == clock.iso(T0 + 90)
    assert second["tokens"] == {"prompt": 50, "completion": 10}
    assert doc["workspace"] == {"rootPath": str(workspace), "isGitRepo": False, "gitBranch": None}
    assert doc["metrics"] == beans.metrics(store, sid, now=T0 + 100)


def test_a_turn_without_any_time_takes_the_sessions_start(store: Store) -> None:
    sessions.start(store, session_id="s", now=T0)
    sessions.record_turn(store, "s", user_message="hi", started_at=None, ended_at=None)
    with store.transaction() as db:
        db.execute("UPDATE session_turns SET started_at = NULL, ended_at = NULL")
    (turn,) = beans.export(store, "s", now=T0 + 1)["turns"]
    assert turn["timestamp"] == clock.iso(T0)


def test_the_export_names_the_git_branch_of_a_repository(store: Store, workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "feature", str(workspace)], check=True)
    sessions.start(store, session_id="g", now=T0)
    assert beans.export(store, "g", now=T0 + 1)["workspace"] == {
        "rootPath": str(workspace),
        "isGitRepo": True,
        "gitBranch": "feature",
    }
