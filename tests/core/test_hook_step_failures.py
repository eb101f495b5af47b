"""A failure inside a hook's step reaches the tests; only the real hook process swallows it.

The hook steps call the other areas (sessions, gotcha tracking, ...) with plain imports. A step
that fails raises, so a renamed function or a broken area fails this suite instead of silently
turning a feature off in every hook. The agent is still never failed: the outermost entry point
(`engram hook ...`) logs the error and exits 0.

The failure is real, not mocked: a SQLite trigger makes the store refuse the step's write, the
way a full disk or a corrupted table would.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from memory_core.agents import record
from memory_core.agents.record import ToolCall, ToolOutcome
from memory_core.store import Store
from tests.agents_fixtures import hook_payload

REFUSAL = "engram test: this table refuses writes"

# (table the trigger blocks, the hook's tool call, whether it failed): each row reaches a
# different area through `record.apply_outcome`.
STEPS = {
    "sessions.record_command": (
        "session_commands",
        {"command": "ls -la"},
        False,
    ),
    "gotchas.track_error": (
        "error_occurrences",
        {"command": "make build"},
        True,
    ),
}


def _refuse_writes(root: Path, table: str) -> None:
    with sqlite3.connect(root / ".engram" / "engram.db") as conn:
        conn.execute(
            f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{REFUSAL}'); END"
        )


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    Store.init(workspace).close()
    return workspace


@pytest.mark.parametrize("step", list(STEPS))
def test_a_failing_step_raises_when_called_directly(repo: Path, step: str) -> None:
    table, tool_input, failed = STEPS[step]
    _refuse_writes(repo, table)
    store = Store.open(repo)
    try:
        call = ToolCall(
            tool_use_id="toolu_direct", session_id="S-direct", tool="Bash", input=tool_input, ts=1.0
        )
        outcome = ToolOutcome(
            ok=not failed,
            error="Exit code 2\nmake: *** No rule to make target 'build'" if failed else None,
            exit_code=2 if failed else 0,
        )
        with pytest.raises(sqlite3.Error, match=REFUSAL):
            record.apply_outcome(store, call, outcome)
    finally:
        store.close()


@pytest.mark.parametrize("step", list(STEPS))
def test_the_real_hook_logs_the_same_failure_and_exits_0(cli, repo: Path, step: str) -> None:
    table, tool_input, failed = STEPS[step]
    _refuse_writes(repo, table)
    event = "PostToolUseFailure" if failed else "PostToolUse"
    extra = (
        {"error": "Exit code 2\nmake: *** No rule to make target 'build'"}
        if failed
        else {"tool_response": {"stdout": "", "stderr": "", "interrupted": False}}
    )
    result = cli(
        "hook",
        "claude-code",
        event,
        cwd=repo,
        stdin=hook_payload(
            event,
            "S-hook",
            repo,
            tool_name="Bash",
            tool_use_id="toolu_hook",
            tool_input=tool_input,
            **extra,
        ),
    )
    assert (result.code, result.stdout, result.stderr) == (0, "", "")
    logged = (repo / ".engram" / "engram.log").read_text(encoding="utf-8")
    assert f"hook claude-code {event} failed" in logged
    assert REFUSAL in logged


def test_negative_control_without_the_failure_the_hook_logs_nothing(cli, repo: Path) -> None:
    # The same call on a store that accepts the write: recorded, nothing in the log. Shows the
    # log line above comes from the injected failure, not from the hook's normal work.
    result = cli(
        "hook",
        "claude-code",
        "PostToolUse",
        cwd=repo,
        stdin=hook_payload(
            "PostToolUse",
            "S-ok",
            repo,
            tool_name="Bash",
            tool_use_id="toolu_ok",
            tool_input={"command": "ls -la"},
            tool_response={"stdout": "", "stderr": "", "interrupted": False},
        ),
    )
    assert (result.code, result.stdout, result.stderr) == (0, "", "")
    log = repo / ".engram" / "engram.log"
    assert not log.exists() or "failed" not in log.read_text(encoding="utf-8")
    with sqlite3.connect(repo / ".engram" / "engram.db") as conn:
        commands = conn.execute(
            "SELECT command FROM session_commands WHERE session_id = 'S-ok'"
        ).fetchall()
    assert commands == [("ls -la",)]
