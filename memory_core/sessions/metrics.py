"""A session's figures (docs/design.md section 3): duration, turns, tokens, files, commands and
tool calls; for an agent's session, tokens in full from the usage ledger.

`files_modified` is the session's net effect, as the session-start context tells it: the files
whose content differs at the end from the start (an edit undone later, a `git checkout` of the
file, a file created and then removed are not changes). `files_touched` counts every workspace
file the session edited, those put back included."""

from __future__ import annotations

from typing import Any

from memory_core.errors import NotFoundError
from memory_core.sessions.model import _find_row, restore_archived
from memory_core.sessions.reading import _COMMAND_FAILED, agent_tokens
from memory_core.store import Store


def metrics(store: Store, session_id: str, *, now: float | None = None) -> dict[str, Any]:
    """Every metric of docs/design.md section 3 for one session."""
    row = _find_row(store, session_id)
    if row is None:
        raise NotFoundError(f"no session {session_id!r}", hint="see `engram session list`")
    sid = row["id"]
    restore_archived(store, sid)
    end = row["ended_at"] if row["ended_at"] is not None else row["last_activity_at"]
    tools = store.query_one(
        "SELECT COUNT(*) AS total, COALESCE(SUM(ok), 0) AS ok FROM session_tool_calls WHERE session_id = ?",
        (sid,),
    )
    commands = store.query_one(
        f"SELECT COUNT(*) AS total, COALESCE(SUM({_COMMAND_FAILED}), 0) AS failed "
        "FROM session_commands WHERE session_id = ?",
        (sid,),
    )
    files = store.query_one(
        "SELECT COUNT(*) - COALESCE(SUM(outside), 0), COALESCE(SUM(outside), 0) FROM session_files "
        "WHERE session_id = ?",
        (sid,),
    )
    assert tools is not None and commands is not None and files is not None
    # Imported here: `net` reads the session through `reading`, which imports this module.
    from memory_core.sessions.net import net_files_changed

    touched = int(files[0])
    changed = len(net_files_changed(store, sid)) if touched else 0
    turns = int(row["turn_count"])
    breakdown = agent_tokens(store, sid)
    if breakdown is not None:
        # An agent's session: every response of the main chain and of its subagents, the four
        # kinds of tokens, from the usage ledger (not only what the closed turns carried).
        input_tokens = breakdown["all"]["input_tokens"]
        output_tokens = breakdown["all"]["output_tokens"]
        tokens = breakdown["all"]["total_tokens"]
    else:
        input_tokens, output_tokens = int(row["input_tokens"]), int(row["output_tokens"])
        tokens = input_tokens + output_tokens
    total_tools, ok_tools = int(tools["total"]), int(tools["ok"])
    result = {
        "id": sid,
        "duration_seconds": round(max(0.0, end - row["started_at"]), 3),
        "turns": turns,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": tokens,
        "avg_tokens_per_turn": round(tokens / turns, 1) if turns else 0.0,
        "files_modified": changed,
        "files_touched": touched,
        "files_outside_project": int(files[1]),
        "commands": int(commands["total"]),
        "commands_failed": int(commands["failed"]),
        "tool_calls": total_tools,
        "tool_calls_succeeded": ok_tools,
        "tool_calls_failed": total_tools - ok_tools,
        "success_rate": round(ok_tools / total_tools, 3) if total_tools else None,
    }
    if breakdown is not None:
        result["tokens"] = breakdown
    return result
