"""Reading sessions back: one by id, name or prefix, the latest, the list, the turns, the files
touched and the commands that failed; and a session's age state."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memory_core import clock
from memory_core.errors import NotFoundError
from memory_core.sessions.model import (
    _SUMMARY_LISTS,
    ARCHIVED_SECONDS,
    DECAYING_SECONDS,
    IDLE_SECONDS,
    _find_row,
    _iso,
    restore_archived,
)
from memory_core.store import Store

# Whether a session_commands row failed: its `failed` flag (agents.failures), else its exit code.
_COMMAND_FAILED = "COALESCE(failed, exit_code IS NOT NULL AND exit_code != 0)"
_TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")


def agent_tokens(store: Store, session_id: str) -> dict[str, dict[str, int]] | None:
    """An agent session's tokens: `main`, `subagents` and `all`, each with the four kinds, a
    total and the number of assistant messages; None for a session no agent transcript fed."""
    row = store.query_one(
        "SELECT * FROM agent_sessions WHERE session_id = ? AND main_messages + sub_messages > 0",
        (session_id,),
    )
    if row is None:
        return None
    figures: dict[str, dict[str, int]] = {}
    for part, prefix in (("main", "main_"), ("subagents", "sub_")):
        kinds = {kind: int(row[prefix + kind]) for kind in _TOKEN_KINDS}
        figures[part] = {
            **kinds,
            "total_tokens": sum(kinds.values()),
            "messages": int(row[prefix + "messages"]),
        }
    figures["all"] = {
        key: figures["main"][key] + figures["subagents"][key] for key in figures["main"]
    }
    return figures


def age_state(last_activity_at: float, *, now: float | None = None) -> str:
    """fresh, idle (24 h), decaying (7 d) or archived (30 d) by time since the last activity."""
    age = (clock.now() if now is None else now) - last_activity_at
    if age >= ARCHIVED_SECONDS:
        return "archived"
    if age >= DECAYING_SECONDS:
        return "decaying"
    if age >= IDLE_SECONDS:
        return "idle"
    return "fresh"


def _last_access(row: sqlite3.Row) -> float:
    """The last activity, or the later restore of its archived detail (a read is an access)."""
    last = float(row["last_activity_at"])
    data = row["data"]
    if isinstance(data, str) and "unarchived_at" in data:
        try:
            restored = json.loads(data).get("unarchived_at")
        except (ValueError, AttributeError):
            return last
        if isinstance(restored, int | float):
            return max(last, float(restored))
    return last


def _session_dict(row: sqlite3.Row, now: float) -> dict[str, Any]:
    summary = {
        "overview": row["overview"],
        **{key: json.loads(row[key]) for key in _SUMMARY_LISTS},
        "source": row["summary_source"],
    }
    return {
        "id": row["id"],
        "name": row["name"],
        "label": row["name"] or row["id"],
        "agent": row["agent"],
        "session_type": row["session_type"],
        "status": row["status"],
        "age_state": age_state(_last_access(row), now=now),
        "last_action": row["last_action"],
        "end_reason": row["end_reason"],
        "created_at": clock.iso(row["started_at"]),
        "started_at": clock.iso(row["started_at"]),
        "last_activity_at": clock.iso(row["last_activity_at"]),
        "ended_at": _iso(row["ended_at"]),
        "saved_at": _iso(row["saved_at"]),
        "turns": row["turn_count"],
        "input_tokens": row["input_tokens"],
        "output_tokens": row["output_tokens"],
        "rolling_summary": row["rolling_summary"],
        "search_footprint": json.loads(row["search_footprint"]),
        "summary": summary,
    }


def get(store: Store, id_or_name: str, *, now: float | None = None) -> dict[str, Any]:
    """A session by id, name or unique id prefix; NotFoundError if there is none."""
    row = _find_row(store, id_or_name)
    if row is None:
        raise NotFoundError(f"no session {id_or_name!r}", hint="see `engram session list`")
    return _with_agent_tokens(store, _session_dict(row, clock.now() if now is None else now))


def _with_agent_tokens(store: Store, session: dict[str, Any]) -> dict[str, Any]:
    """An agent session's token figures in full (the same as `metrics`)."""
    breakdown = agent_tokens(store, session["id"])
    if breakdown is not None:
        session["input_tokens"] = breakdown["all"]["input_tokens"]
        session["output_tokens"] = breakdown["all"]["output_tokens"]
        session["cache_creation_tokens"] = breakdown["all"]["cache_creation_tokens"]
        session["cache_read_tokens"] = breakdown["all"]["cache_read_tokens"]
        session["total_tokens"] = breakdown["all"]["total_tokens"]
        session["tokens"] = breakdown
    return session


def latest(store: Store, *, now: float | None = None) -> dict[str, Any] | None:
    """The session with the most recent activity, or None when there is none."""
    row = store.query_one(
        "SELECT * FROM sessions ORDER BY last_activity_at DESC, rowid DESC LIMIT 1"
    )
    return _session_dict(row, clock.now() if now is None else now) if row else None


def list_sessions(
    store: Store, *, now: float | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """Every session, most recent activity first."""
    ts = clock.now() if now is None else now
    rows = store.query(
        "SELECT * FROM sessions ORDER BY last_activity_at DESC, rowid DESC LIMIT ?",
        (limit if limit is not None else -1,),
    )
    # Only the listed sessions are asked about: a hook lists the last few, and every agent
    # session the store ever kept would make it slower with each one.
    ids = [str(row["id"]) for row in rows]
    agent_ids: set[str] = set()
    for start in range(0, len(ids), 500):  # within SQLite's limit on bound parameters
        chunk = ids[start : start + 500]
        agent_ids.update(
            str(r[0])
            for r in store.query(
                "SELECT session_id FROM agent_sessions WHERE session_id IN "
                f"({', '.join('?' * len(chunk))}) AND main_messages + sub_messages > 0",
                tuple(chunk),
            )
        )
    return [
        _with_agent_tokens(store, _session_dict(row, ts))
        if row["id"] in agent_ids
        else _session_dict(row, ts)
        for row in rows
    ]


def history(store: Store, session_id: str, *, last: int | None = None) -> list[dict[str, Any]]:
    """The session's turns in order (the last `last` of them when given)."""
    sid = get(store, session_id)["id"]
    if last is not None and last <= 0:
        return []
    restore_archived(store, sid)
    # ISO times are formatted by SQLite: for 1,000 turns Python's strftime alone costs ~5 ms.
    rows = store.query(
        "SELECT seq, user_message, assistant_response, tool_calls, input_tokens, output_tokens, "
        f"{_SQL_ISO.format('started_at')} AS started_iso, {_SQL_ISO.format('ended_at')} AS ended_iso "
        "FROM (SELECT * FROM session_turns WHERE session_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq",
        (sid, last if last is not None else -1),
    )
    return [_turn_dict(row) for row in rows]


_SQL_ISO = "strftime('%Y-%m-%dT%H:%M:%SZ', {0}, 'unixepoch')"


def _turn_dict(row: sqlite3.Row) -> dict[str, Any]:
    calls = row["tool_calls"]
    return {
        "id": row["seq"],
        "seq": row["seq"],
        "user_message": row["user_message"],
        "assistant_response": row["assistant_response"],
        "tool_calls": [] if calls == "[]" else json.loads(calls),
        "input_tokens": row["input_tokens"],
        "output_tokens": row["output_tokens"],
        "started_at": row["started_iso"],
        "ended_at": row["ended_iso"],
    }


def files_modified(store: Store, session_id: str) -> list[str]:
    """Workspace files the session changed, most recent first (files outside: `files_outside`)."""
    rows = store.query(
        "SELECT path FROM session_files WHERE session_id = ? AND outside = 0 ORDER BY last_ts DESC",
        (session_id,),
    )
    return [row["path"] for row in rows]


def files_outside(store: Store, session_id: str) -> list[str]:
    """Files outside the workspace the session changed (absolute paths), most recent first."""
    rows = store.query(
        "SELECT path FROM session_files WHERE session_id = ? AND outside = 1 ORDER BY last_ts DESC",
        (session_id,),
    )
    return [row["path"] for row in rows]


def failed_commands(store: Store, session_id: str) -> list[dict[str, Any]]:
    rows = store.query(
        "SELECT command, exit_code, ts FROM session_commands WHERE session_id = ? "
        f"AND {_COMMAND_FAILED} ORDER BY ts",
        (session_id,),
    )
    return [
        {"command": r["command"], "exit_code": r["exit_code"], "at": clock.iso(r["ts"])}
        for r in rows
    ]


def open_failures(store: Store, session_id: str) -> list[dict[str, Any]]:
    """Failed commands not followed by a success of the same command later in the session."""
    from memory_core.agents.failures import command_key, still_failing

    runs = store.query(
        f"SELECT command, {_COMMAND_FAILED} AS failed, ts FROM session_commands WHERE session_id = ?",
        (session_id,),
    )
    still = set(still_failing((r["command"], not r["failed"], float(r["ts"])) for r in runs))
    return [
        item for item in failed_commands(store, session_id) if command_key(item["command"]) in still
    ]


def user_decisions(store: Store, session_id: str) -> list[str]:
    """Decisions the user stated in the session ("we will go with SQLite"), oldest first: the
    ingest keeps them as decision memories tagged `user-decision`."""
    try:
        rows = store.query(
            "SELECT m.content FROM memories m JOIN memory_tags t ON t.memory_id = m.id "
            "WHERE t.tag = 'user-decision' AND m.session_id = ? ORDER BY m.created_at, m.seq",
            (session_id,),
        )
    except sqlite3.OperationalError:
        return []  # a store from before memories
    return [str(row["content"]) for row in rows]


def decisions_of(store: Store, session_id: str, recorded: list[str] | None = None) -> list[str]:
    """The session's decisions: those recorded in its summary, then those the user stated,
    each once."""
    merged: dict[str, str] = {}
    for text in [*(recorded or []), *user_decisions(store, session_id)]:
        merged.setdefault(" ".join(text.lower().split()).rstrip("."), text)
    return list(merged.values())
