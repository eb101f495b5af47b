"""What a failure teaches, for digests, dead ends and the session-start context.

`error_line` names the error that matters in a failed call's output (not `Exit code 2`, not
pytest's banner: see `gotchas.tool_errors`); `fix_after` finds the step that actually fixed a
failing command: what the session did between the last failure and the first success of the
same command (`pip install -e .`, an edit), not the same command run again.
"""

from __future__ import annotations

import re
from typing import Any

from memory_core.agents.failures import command_key, output_key
from memory_core.agents.record import error_message
from memory_core.gotchas.normalize import meaningful_line
from memory_core.store import Store

FILE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
_INSPECTS_OR_REVERTS = re.compile(
    r"^(?:ls|cat|head|tail|less|pwd|echo|grep|rg|find|which|tree|wc|"
    r"git\s+(?:status|diff|log|show|branch|blame|checkout\s+(?:\S+\s+)?--|restore|stash|reset\s+--hard)|"
    r"rm)(?![\w-])"
)


def error_line(error: str | None) -> str:
    """The one line that says what went wrong in a failed call's error text."""
    if not error or not error.strip():
        return ""
    return " ".join(meaningful_line(error_message(error)).split())


def fix_after(store: Store, session_id: str, command: str, failed_at: float) -> str | None:
    """The step that made `command` work again after it failed at `failed_at`, in words.

    The first later success of the same command (or of the same run with only its output flags
    changed: `pytest x` after `pytest -s x`) closes the window; the fix is the last other
    successful command in it, else the files edited in it. None when the command never
    succeeded again, or nothing happened in between (it was flaky, or is still failing).
    """
    key = command_key(command)
    printed = output_key(command)
    rows = store.query(
        "SELECT tool, command, path, ok, ts FROM agent_tool_uses WHERE session_id = ? AND ts > ? "
        "AND sidechain = 0 AND ok IS NOT NULL ORDER BY ts",
        (session_id, failed_at),
    )
    between: list[Any] = []
    for row in rows:
        if row["command"] and command_key(str(row["command"])) == key:
            if not row["ok"]:
                between = []  # failed again: the fix comes after this one
                continue
            break
        if row["command"] and row["ok"] and output_key(str(row["command"])) == printed:
            break  # the same run printing less (`pytest x` after `pytest -s x`) passed
        between.append(row)
    else:
        return None
    # Not a fix: a command that only looks (ls, git status) or puts things back (git checkout
    # -- file, the revert of an approach the user rejected), nor the files it put back.
    commands = [
        str(r["command"])
        for r in between
        if r["ok"] and r["command"] and not _INSPECTS_OR_REVERTS.match(str(r["command"]).strip())
    ]
    if commands:
        return f"`{commands[-1]}`"
    from memory_core.sessions.net import reverted_files

    back = set(reverted_files(store, session_id))
    edited = list(
        dict.fromkeys(
            str(r["path"])
            for r in between
            if r["ok"] and r["path"] and r["tool"] in FILE_TOOLS and str(r["path"]) not in back
        )
    )
    if edited:
        return "editing " + ", ".join(f"`{p}`" for p in edited[:3])
    return None


def worked_instead(store: Store, session_id: str, command: str, failed_at: float) -> str | None:
    """A later successful variant of a command that never succeeded itself (same program,
    other arguments: `pytest x --no-cov` after `pytest x` failed), or None."""
    key = command_key(command)
    program = key.split(" ", 1)[0]
    rows = store.query(
        "SELECT command FROM agent_tool_uses WHERE session_id = ? AND ts > ? AND ok = 1 "
        "AND command IS NOT NULL AND sidechain = 0 ORDER BY ts LIMIT 200",
        (session_id, failed_at),
    )
    for row in rows:
        other = command_key(str(row["command"]))
        if other == key:
            return None  # the command itself worked again: see fix_after
        if other.split(" ", 1)[0] == program:
            return f"`{row['command']}`"
    return None
