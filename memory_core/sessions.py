"""Sessions: what an agent (or a person in the editor) did, turn by turn, and its summary.

A session is created by the agent hooks (with the agent's own session id) or by the editor, and
records turns (user message, assistant response, tool calls, timestamps, tokens), the files it
modified, the commands it ran and the outcome of every tool call. From those facts alone engram
renders a Markdown summary and the metrics of docs/design.md section 3; an agent may also write its own
SessionSummary (overview, decisions, outcomes, open items, tags), which is then shown instead.

Lifecycle: `status` is active, compacted (its rolling summary or quota was compacted) or closed.
By age since the last activity a session is also idle (24 h), decaying (7 d) or archived
(30 d). A session still marked active that has been silent for 30 minutes, whose last action
was not a pause, completion or abort, has crashed: `crashed()` finds them and `resolve_crash()`
applies one of the four choices continue, review, restart, discard.

Saving writes a versioned JSON document of the whole session into `saved_sessions` and a
Markdown view to `exports/sessions/<date>_<id>.md`. Loading accepts every format version this
engram knows (older ones are upgraded) and refuses a newer one with a clear error. The export
file is the beans `SessionExport` shape (session, turns, workspace, savedAt, version).

Every text is redacted before it is stored. This module is on the hook path: it imports only
the standard library and light memory_core modules.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_core import clock, events, log
from memory_core.errors import EngramError, NotFoundError, UsageError
from memory_core.redact import redact, redact_obj
from memory_core.store import Store

# The format of a saved session document. Version 1 was engram's first layout (no tool calls,
# files or commands; tokens nested); it is upgraded on load. A document with a larger version
# was written by a newer engram and is refused.
FORMAT_VERSION = 2
SESSION_TYPES = ("new", "existing", "workflow")
STATUSES = ("active", "compacted", "closed")
# Actions after which silence is expected, not a crash.
QUIET_ACTIONS = ("pause", "completion", "abort")
RESUME_CHOICES = ("continue", "review", "restart", "discard")
CRASH_SILENCE_SECONDS = 30 * 60
IDLE_SECONDS = 24 * 3600
DECAYING_SECONDS = 7 * 86400
ARCHIVED_SECONDS = 30 * 86400
COMPACT_TARGET_CHARS = 500
SAVED_VERSIONS_KEPT = 5

_SUMMARY_LISTS = ("decisions", "outcomes", "open_items", "tags")


class NameTakenError(EngramError):
    """Saving under a name another session already has, without permission to overwrite."""

    def __init__(self, name: str, holder: str) -> None:
        super().__init__(
            f"the name {name!r} is already used by session {holder}",
            hint="choose another name or overwrite it (--yes)",
        )
        self.name = name
        self.holder = holder


# -- recording (the hook path) ---------------------------------------------------------------


def new_session_id() -> str:
    return f"S-{uuid.uuid4().hex[:8]}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _ensure(db: sqlite3.Connection, session_id: str, ts: float, agent: str = "editor") -> None:
    """Create a session row if a hook reports activity for a session it never started."""
    db.execute(
        "INSERT OR IGNORE INTO sessions (id, agent, started_at, last_activity_at) VALUES (?, ?, ?, ?)",
        (session_id, agent, ts, ts),
    )


def _touch(db: sqlite3.Connection, session_id: str, ts: float, action: str, added: int = 0) -> None:
    db.execute(
        "UPDATE sessions SET last_activity_at = MAX(last_activity_at, ?), last_action = ?, "
        "bytes_used = bytes_used + ? WHERE id = ?",
        (ts, action, added, session_id),
    )


def start(
    store: Store,
    *,
    session_id: str | None = None,
    agent: str = "editor",
    name: str | None = None,
    session_type: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Start a session (or return the existing one with this id, reopened if it was closed).

    Without `session_type` it is detected as AIOS does (`session_state.detect_type`): new after
    an hour of silence, workflow while a workflow is active, else existing.
    """
    from memory_core import session_state

    if session_type is None:
        session_type = session_state.detect_type(store, now=now, exclude=session_id)
    if session_type not in SESSION_TYPES:
        raise UsageError(
            f"unknown session type {session_type!r}", hint=f"use one of {', '.join(SESSION_TYPES)}"
        )
    ts = clock.now() if now is None else now
    sid = session_id or new_session_id()
    with store.transaction() as db:
        existing = db.execute("SELECT status FROM sessions WHERE id = ?", (sid,)).fetchone()
        if existing is None:
            if name is not None:
                _check_name_free(db, name, sid)
            db.execute(
                "INSERT INTO sessions (id, name, agent, session_type, started_at, last_activity_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (sid, redact(name) if name else name, agent, session_type, ts, ts),
            )
            session_state.record_activity(db, sid, agent=agent)
            if session_type == "workflow":
                # The workflow and task carry over from the session that was working on them.
                db.execute(
                    "UPDATE sessions SET (active_workflow, workflow_state, active_story, "
                    "active_subtask) = (SELECT active_workflow, workflow_state, active_story, "
                    "active_subtask FROM sessions WHERE id != ?1 ORDER BY last_activity_at DESC, "
                    "rowid DESC LIMIT 1) WHERE id = ?1",
                    (sid,),
                )
            events.append(
                store,
                events.Event(
                    "session.started",
                    actor=agent,
                    session_id=sid,
                    data={"type": session_type},
                    ts=ts,
                ),
                db=db,
            )
        elif existing["status"] == "closed":
            db.execute(
                "UPDATE sessions SET status = 'active', ended_at = NULL, end_reason = NULL, "
                "last_action = 'resume', last_activity_at = MAX(last_activity_at, ?) WHERE id = ?",
                (ts, sid),
            )
    if existing is not None and existing["status"] == "closed":
        _refresh_note(store, sid, ts)
    return get(store, sid, now=ts)


def record_turn(
    store: Store,
    session_id: str,
    *,
    user_message: str | None = None,
    assistant_response: str | None = None,
    tool_calls: Iterable[Mapping[str, Any] | str] = (),
    input_tokens: int = 0,
    output_tokens: int = 0,
    started_at: float | None = None,
    ended_at: float | None = None,
) -> int:
    """Record one turn; returns its sequence number in the session (1, 2, ...).

    `tool_calls` items are tool names or objects with `tool` (or `name`), `ok` (or `success`)
    and `summary`; each is also recorded as a tool call of the session.
    """
    ts = (
        ended_at
        if ended_at is not None
        else (started_at if started_at is not None else clock.now())
    )
    calls = [_tool_call(item) for item in tool_calls]
    user = redact(user_message) if user_message else user_message
    assistant = redact(assistant_response) if assistant_response else assistant_response
    added = len(user or "") + len(assistant or "")
    with store.transaction() as db:
        _ensure(db, session_id, started_at if started_at is not None else ts)
        row = db.execute(
            "UPDATE sessions SET turn_count = turn_count + 1, input_tokens = input_tokens + ?, "
            "output_tokens = output_tokens + ? WHERE id = ? RETURNING turn_count",
            (int(input_tokens), int(output_tokens), session_id),
        ).fetchone()
        seq = int(row[0])
        db.execute(
            "INSERT INTO session_turns (session_id, seq, user_message, assistant_response, tool_calls, "
            "input_tokens, output_tokens, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                seq,
                user,
                assistant,
                _json(calls),
                int(input_tokens),
                int(output_tokens),
                started_at if started_at is not None else ts,
                ts,
            ),
        )
        if calls:
            db.executemany(
                "INSERT INTO session_tool_calls (session_id, tool, ok, summary, ts) VALUES (?, ?, ?, ?, ?)",
                [(session_id, c["tool"], int(c["ok"]), c.get("summary"), ts) for c in calls],
            )
        _touch(db, session_id, ts, "turn", added)
    return seq


def _tool_call(item: Mapping[str, Any] | str) -> dict[str, Any]:
    if isinstance(item, str):
        return {"tool": item, "ok": True}
    tool = item.get("tool") or item.get("name") or "unknown"
    ok = item.get("ok", item.get("success", True))
    call: dict[str, Any] = {"tool": str(tool), "ok": bool(ok)}
    if item.get("summary"):
        call["summary"] = redact(str(item["summary"]))
    return call


def record_tool_call(
    store: Store,
    session_id: str,
    *,
    tool: str,
    ok: bool,
    summary: str | None = None,
    ts: float | None = None,
) -> None:
    ts = clock.now() if ts is None else ts
    text = redact(summary) if summary else summary
    with store.transaction() as db:
        _ensure(db, session_id, ts)
        db.execute(
            "INSERT INTO session_tool_calls (session_id, tool, ok, summary, ts) VALUES (?, ?, ?, ?, ?)",
            (session_id, tool, int(bool(ok)), text, ts),
        )
        _touch(db, session_id, ts, "tool", len(text or ""))


def record_file_modified(
    store: Store, session_id: str, path: str, ts: float | None = None, *, outside: bool = False
) -> None:
    """Record that the session changed `path` (workspace-relative, or absolute inside the root).

    `outside`: an absolute path outside the workspace (a plan under ~/.claude/plans/), kept
    as it is and listed apart, never dropped.
    """
    from memory_core.workspace import relative_path

    ts = clock.now() if ts is None else ts
    if outside:
        rel = redact(path)
    else:
        rel = relative_path(store.root, path) if os.path.isabs(path) else Path(path).as_posix()
    with store.transaction() as db:
        _ensure(db, session_id, ts)
        db.execute(
            "INSERT INTO session_files (session_id, path, first_ts, last_ts, outside) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (session_id, path) DO UPDATE SET last_ts = MAX(last_ts, excluded.last_ts), "
            "changes = changes + 1",
            (session_id, rel, ts, ts, int(outside)),
        )
        _touch(db, session_id, ts, "file")


def record_command(
    store: Store,
    session_id: str,
    command: str,
    *,
    exit_code: int | None = None,
    ts: float | None = None,
    failed: bool | None = None,
) -> None:
    """Record a command the session ran. `failed` (from `agents.failures`) says whether it
    failed when no exit code tells (a hook's block, an interruption, a timeout)."""
    ts = clock.now() if ts is None else ts
    text = redact(command)
    if failed is None and exit_code is not None:
        failed = exit_code != 0
    with store.transaction() as db:
        _ensure(db, session_id, ts)
        db.execute(
            "INSERT INTO session_commands (session_id, command, exit_code, ts, failed) VALUES (?, ?, ?, ?, ?)",
            (session_id, text, exit_code, ts, None if failed is None else int(failed)),
        )
        _touch(db, session_id, ts, "command", len(text))


def record_search(store: Store, session_id: str, query: str, ts: float | None = None) -> None:
    """Add a search to the session's footprint (what it looked for; kept unique, last 50)."""
    ts = clock.now() if ts is None else ts
    with store.transaction() as db:
        _ensure(db, session_id, ts)
        row = db.execute(
            "SELECT search_footprint FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        footprint = [q for q in json.loads(row[0]) if q != query] + [redact(query)]
        db.execute(
            "UPDATE sessions SET search_footprint = ? WHERE id = ?",
            (_json(footprint[-50:]), session_id),
        )
        _touch(db, session_id, ts, "search")


def observe_times(store: Store, session_id: str, *, first_ts: float, last_ts: float) -> None:
    """Widen the session's span to activity seen at `first_ts`..`last_ts` (an ingested
    transcript's own times: start is the earliest event, whatever order files are read in)."""
    with store.transaction() as db:
        db.execute(
            "UPDATE sessions SET started_at = MIN(started_at, ?), "
            "last_activity_at = MAX(last_activity_at, ?) WHERE id = ?",
            (first_ts, last_ts, session_id),
        )


def pause(store: Store, session_id: str, *, now: float | None = None) -> None:
    """Mark a deliberate pause: a silent session after this is not a crash."""
    ts = clock.now() if now is None else now
    with store.transaction() as db:
        _require(db, session_id)
        _touch(db, session_id, ts, "pause")


def close(
    store: Store,
    session_id: str,
    *,
    status: str = "closed",
    reason: str = "completion",
    now: float | None = None,
) -> dict[str, Any]:
    """End a session (reason completion or abort); returns its metrics."""
    if status not in STATUSES:
        raise UsageError(
            f"unknown session status {status!r}", hint=f"use one of {', '.join(STATUSES)}"
        )
    ts = clock.now() if now is None else now
    with store.transaction() as db:
        _require(db, session_id)
        db.execute(
            "UPDATE sessions SET status = ?, ended_at = ?, end_reason = ?, last_action = ?, "
            "last_activity_at = MAX(last_activity_at, ?) WHERE id = ?",
            (
                status,
                ts,
                reason,
                reason if reason in QUIET_ACTIONS else "completion",
                ts,
                session_id,
            ),
        )
        events.append(
            store,
            events.Event("session.closed", session_id=session_id, data={"reason": reason}, ts=ts),
            db=db,
        )
    _refresh_note(store, session_id, ts)
    return metrics(store, session_id, now=ts)


def _refresh_note(store: Store, session_id: str, now: float | None = None) -> None:
    """Rewrite the session's vault note: its summary, decisions or status just changed.

    Called from the recording path (hooks too): a failure is logged, never raised, because the
    store already holds the change and the note is only a view of it.
    """
    try:
        write_export(store, session_id, now=now)
    except Exception as exc:  # a view must never fail the write it follows
        log.write(store.root, "warning", f"session note for {session_id} not written: {exc}")


def _require(db: sqlite3.Connection, session_id: str) -> None:
    if db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise NotFoundError(f"no session {session_id!r}", hint="see `engram session list`")


def set_summary(
    store: Store,
    session_id: str,
    *,
    overview: str | None = None,
    decisions: Sequence[str] = (),
    outcomes: Sequence[str] = (),
    open_items: Sequence[str] = (),
    tags: Sequence[str] = (),
    source: str = "agent",
) -> dict[str, Any]:
    """Write the SessionSummary; list fields are merged with what is there, without duplicates."""
    additions = {
        "decisions": decisions,
        "outcomes": outcomes,
        "open_items": open_items,
        "tags": tags,
    }
    with store.transaction() as db:
        _ensure(db, session_id, clock.now())
        row = db.execute(
            "SELECT decisions, outcomes, open_items, tags FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        merged: dict[str, str] = {}
        for key in _SUMMARY_LISTS:
            items: list[str] = json.loads(row[key])
            for item in additions[key]:
                text = redact(str(item)).strip()
                if text and text not in items:
                    items.append(text)
            merged[key] = _json(items)
        db.execute(
            "UPDATE sessions SET overview = COALESCE(?, overview), decisions = ?, outcomes = ?, "
            "open_items = ?, tags = ?, summary_source = ? WHERE id = ?",
            (
                redact(overview) if overview else None,
                merged["decisions"],
                merged["outcomes"],
                merged["open_items"],
                merged["tags"],
                source,
                session_id,
            ),
        )
    _refresh_note(store, session_id)
    return get(store, session_id)["summary"]  # type: ignore[no-any-return]


def append_rolling_summary(
    store: Store, session_id: str, text: str, *, threshold: int = 4000, now: float | None = None
) -> dict[str, Any]:
    """Add to the rolling summary; over `threshold` characters it is compacted (status compacted).

    `threshold` is the `sessions.summary_compact_chars` setting.
    """
    ts = clock.now() if now is None else now
    with store.transaction() as db:
        _ensure(db, session_id, ts)
        row = db.execute(
            "SELECT rolling_summary FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        current = row[0]
        addition = redact(text.strip())
        summary = f"{current} {addition}".strip() if current else addition
        compacted = len(summary) > threshold
        if compacted:
            summary = compact_text(summary, COMPACT_TARGET_CHARS)
            db.execute(
                "UPDATE sessions SET rolling_summary = ?, status = CASE WHEN status = 'closed' "
                "THEN status ELSE 'compacted' END WHERE id = ?",
                (summary, session_id),
            )
        else:
            db.execute(
                "UPDATE sessions SET rolling_summary = ? WHERE id = ?", (summary, session_id)
            )
        _touch(db, session_id, ts, "summary")
    _refresh_note(store, session_id, ts)
    return {"rolling_summary": summary, "compacted": compacted}


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def compact_text(text: str, limit: int = COMPACT_TARGET_CHARS) -> str:
    """The newest whole sentences of `text` that fit in `limit` characters.

    A rolling summary grows at its end, so the end is the most current part. When not even the
    last sentence fits, it is cut at a word boundary and marked with an ellipsis.
    """
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s]
    kept: list[str] = []
    length = 0
    for sentence in reversed(sentences):
        extra = len(sentence) + (1 if kept else 0)
        if length + extra > limit:
            break
        kept.append(sentence)
        length += extra
    if kept:
        return " ".join(reversed(kept))
    last = sentences[-1] if sentences else text
    cut = last[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


# -- reading ----------------------------------------------------------------------------------


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


def _iso(ts: float | None) -> str | None:
    return clock.iso(ts) if ts is not None else None


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
        "age_state": age_state(row["last_activity_at"], now=now),
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


def _find_row(store: Store, ref: str) -> sqlite3.Row | None:
    row = store.query_one("SELECT * FROM sessions WHERE id = ?", (ref,))
    if row is None:
        row = store.query_one("SELECT * FROM sessions WHERE name = ?", (ref,))
    if row is None and len(ref) >= 4:
        rows = store.query(
            "SELECT * FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
            (ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
        )
        if len(rows) > 1:
            raise UsageError(f"{ref!r} names more than one session", hint="give more of the id")
        row = rows[0] if rows else None
    return row


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
    agent_ids = {
        str(r[0])
        for r in store.query(
            "SELECT session_id FROM agent_sessions WHERE main_messages + sub_messages > 0"
        )
    }
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


def metrics(store: Store, session_id: str, *, now: float | None = None) -> dict[str, Any]:
    """Every metric of docs/design.md section 3 for one session."""
    row = _find_row(store, session_id)
    if row is None:
        raise NotFoundError(f"no session {session_id!r}", hint="see `engram session list`")
    sid = row["id"]
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
        "files_modified": int(files[0]),
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


def _grouped_failures(failed: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per failing command, however often it failed: a retried command is one item."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for item in failed:
        groups.setdefault(item["command"], []).append(item)
    lines = []
    for command, runs in groups.items():
        times = f" {len(runs)} times" if len(runs) > 1 else ""
        code = runs[-1]["exit_code"]
        how = f"last exit {code}" if code is not None else "no exit code reported"
        lines.append(f"`{command}` failed{times} ({how}, {runs[-1]['at']})")
    return lines


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return f"{int(seconds)} s"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def summary_markdown(store: Store, session_id: str, *, now: float | None = None) -> str:
    """The session as Markdown: summary (the agent's, else built from facts), metrics, files."""
    session = get(store, session_id, now=now)
    sid = session["id"]
    numbers = metrics(store, sid, now=now)
    files = files_modified(store, sid)
    outside = files_outside(store, sid)
    failed = failed_commands(store, sid)
    still_open = open_failures(store, sid)
    summary = session["summary"]
    lines = [f"# Session {session['label']}", ""]
    lines.append(
        f"{session['agent']} session, {session['status']}, started {session['started_at']}, "
        f"{_plural(numbers['turns'], 'turn')} over {_duration(numbers['duration_seconds'])}."
    )
    lines.append("")

    overview = summary["overview"] or _overview_from_facts(store, session, numbers, files)
    lines += ["## Overview", "", overview, ""]
    if session["rolling_summary"] and not summary["overview"]:
        lines += ["## Rolling summary", "", session["rolling_summary"], ""]

    sections = [
        ("Decisions", summary["decisions"]),
        ("Outcomes", summary["outcomes"] or _outcomes_from_facts(numbers, files, failed)),
        (
            "Open items",
            summary["open_items"] or _grouped_failures(still_open)[-5:],
        ),
    ]
    for title, items in sections:
        lines += [f"## {title}", ""]
        lines += [f"- {item}" for item in items] if items else ["- none recorded"]
        lines.append("")
    if summary["tags"]:
        lines += ["## Tags", "", ", ".join(summary["tags"]), ""]

    rate = numbers["success_rate"]
    lines += [
        "## Metrics",
        "",
        "| metric | value |",
        "|---|---|",
        f"| duration | {_duration(numbers['duration_seconds'])} |",
        f"| turns | {numbers['turns']} |",
        *_token_rows(numbers),
        f"| average tokens per turn | {numbers['avg_tokens_per_turn']} |",
        f"| files modified | {numbers['files_modified']} |",
        f"| commands (failed) | {numbers['commands']} ({numbers['commands_failed']}) |",
        f"| tool calls ok / failed | {numbers['tool_calls_succeeded']} / {numbers['tool_calls_failed']} |",
        f"| success rate | {'n/a' if rate is None else f'{rate:.0%}'} |",
        "",
        "## Files touched",
        "",
    ]
    lines += [f"- `{path}`" for path in files] if files else ["- none"]
    lines.append("")
    if outside:
        lines += ["## Files changed outside the project", ""]
        lines += [f"- `{path}`" for path in outside]
        lines.append("")
    lines += _checkpoint_lines(store, sid)
    if failed:
        lines += ["## Commands that failed", ""]
        lines += [f"- {line}" for line in _grouped_failures(failed)]
        lines.append("")
    return "\n".join(lines)


def _token_rows(numbers: Mapping[str, Any]) -> list[str]:
    """Metrics table rows for tokens: all four kinds, main chain and subagents, for agents."""
    tokens = numbers.get("tokens")
    if not tokens:
        return [f"| tokens (in / out) | {numbers['input_tokens']} / {numbers['output_tokens']} |"]
    rows = []
    for part, label in (("all", "tokens"), ("main", "main chain"), ("subagents", "subagents")):
        t = tokens[part]
        if part == "subagents" and not t["messages"]:
            continue
        rows.append(
            f"| {label} (in / out / cache write / cache read) | {t['input_tokens']} / "
            f"{t['output_tokens']} / {t['cache_creation_tokens']} / {t['cache_read_tokens']} "
            f"({t['messages']} messages) |"
        )
    return rows


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _checkpoint_lines(store: Store, session_id: str) -> list[str]:
    """Checkpoints made and rollbacks done during the session."""
    made = store.query(
        "SELECT id, name, reason, created_at FROM checkpoints WHERE session_id = ? ORDER BY created_at",
        (session_id,),
    )
    rollbacks = store.query(
        "SELECT summary, ok, ts FROM session_tool_calls WHERE session_id = ? AND tool = 'rollback' "
        "ORDER BY ts",
        (session_id,),
    )
    if not made and not rollbacks:
        return []
    lines = ["## Checkpoints and rollbacks", ""]
    for row in made:
        label = f" ({row['name']})" if row["name"] else ""
        lines.append(
            f"- checkpoint `{row['id']}`{label}, {row['reason']}, {clock.iso(row['created_at'])}"
        )
    for row in rollbacks:
        state = "" if row["ok"] else " (incomplete)"
        lines.append(f"- rollback: {row['summary']}{state}, {clock.iso(row['ts'])}")
    lines.append("")
    return lines


def _overview_from_facts(
    store: Store, session: dict[str, Any], numbers: dict[str, Any], files: list[str]
) -> str:
    first = store.query_one(
        "SELECT user_message FROM session_turns WHERE session_id = ? AND user_message IS NOT NULL "
        "AND user_message != '' ORDER BY seq LIMIT 1",
        (session["id"],),
    )
    parts = []
    if first is not None:
        ask = " ".join(first[0].split())
        parts.append(f"Started with: \u201c{ask[:200]}{'…' if len(ask) > 200 else ''}\u201d.")
    if files:
        shown = ", ".join(f"`{p}`" for p in files[:5])
        more = f" and {len(files) - 5} more" if len(files) > 5 else ""
        parts.append(f"Changed {_plural(len(files), 'file')}: {shown}{more}.")
    if numbers["commands"]:
        parts.append(
            f"Ran {_plural(numbers['commands'], 'command')} ({numbers['commands_failed']} failed)."
        )
    made = store.query_one(
        "SELECT COUNT(*) FROM checkpoints WHERE session_id = ? AND reason != 'pre-rollback'",
        (session["id"],),
    )
    rolled = store.query_one(
        "SELECT COUNT(*) FROM session_tool_calls WHERE session_id = ? AND tool = 'rollback'",
        (session["id"],),
    )
    if made is not None and made[0]:
        parts.append(f"Made {_plural(int(made[0]), 'checkpoint')}.")
    if rolled is not None and rolled[0]:
        parts.append(f"Rolled back {_plural(int(rolled[0]), 'time')}.")
    if not parts:
        parts.append("Nothing recorded yet beyond the start of the session.")
    return " ".join(parts)


def _outcomes_from_facts(
    numbers: dict[str, Any], files: list[str], failed: list[dict[str, Any]]
) -> list[str]:
    outcomes = []
    if files:
        outcomes.append(f"{_plural(len(files), 'file')} modified")
    if numbers["tool_calls"]:
        outcomes.append(
            f"{numbers['tool_calls_succeeded']} of {numbers['tool_calls']} tool calls succeeded"
        )
    if numbers["commands"]:
        outcomes.append(
            f"{numbers['commands'] - len(failed)} of {numbers['commands']} commands succeeded"
        )
    return outcomes


# -- crash detection ---------------------------------------------------------------------------


def crashed(store: Store, *, now: float | None = None) -> list[dict[str, Any]]:
    """Sessions that stopped without a pause, completion or abort and have been silent 30 min."""
    ts = clock.now() if now is None else now
    placeholders = ", ".join("?" for _ in QUIET_ACTIONS)
    rows = store.query(
        f"SELECT * FROM sessions WHERE status != 'closed' AND last_activity_at < ? "
        f"AND last_action NOT IN ({placeholders}) ORDER BY last_activity_at DESC",
        (ts - CRASH_SILENCE_SECONDS, *QUIET_ACTIONS),
    )
    return [{**_session_dict(row, ts), "resume_choices": list(RESUME_CHOICES)} for row in rows]


def resolve_crash(
    store: Store, session_id: str, choice: str, *, now: float | None = None
) -> dict[str, Any]:
    """Apply one resume choice to a crashed session.

    continue: the session is active again; review: nothing changes, its summary is returned;
    restart: it is closed and a new session (type existing) carries on; discard: it is closed
    as discarded.
    """
    if choice not in RESUME_CHOICES:
        raise UsageError(
            f"unknown resume choice {choice!r}", hint=f"use one of {', '.join(RESUME_CHOICES)}"
        )
    ts = clock.now() if now is None else now
    session = get(store, session_id, now=ts)
    sid = session["id"]
    if choice == "review":
        return {
            "choice": choice,
            "session": session,
            "summary": summary_markdown(store, sid, now=ts),
        }
    if choice == "continue":
        with store.transaction() as db:
            db.execute(
                "UPDATE sessions SET status = CASE WHEN status = 'closed' THEN 'active' ELSE status END, "
                "last_action = 'resume', last_activity_at = ?, ended_at = NULL WHERE id = ?",
                (ts, sid),
            )
        return {"choice": choice, "session": get(store, sid, now=ts)}
    reason = "restarted" if choice == "restart" else "discarded"
    with store.transaction() as db:
        db.execute(
            "UPDATE sessions SET status = 'closed', end_reason = ?, last_action = 'abort', ended_at = ? "
            "WHERE id = ?",
            (reason, ts, sid),
        )
    result: dict[str, Any] = {"choice": choice, "session": get(store, sid, now=ts)}
    if choice == "restart":
        result["new_session"] = start(
            store, agent=session["agent"], session_type="existing", now=ts
        )
    return result


# -- save, load, delete --------------------------------------------------------------------------


def _check_name_free(db: sqlite3.Connection, name: str, session_id: str) -> None:
    holder = db.execute(
        "SELECT id FROM sessions WHERE name = ? AND id != ?", (name, session_id)
    ).fetchone()
    if holder is not None:
        raise NameTakenError(name, holder[0])


# The arrays of a document are built by SQLite's JSON functions: for a 1,000-turn session that
# is several times faster than building Python dicts and encoding them (the save budget is 20 ms).
_DOCUMENT_ARRAYS = {
    "turns": (
        "SELECT '[' || COALESCE(group_concat(item, ','), '') || ']' FROM (SELECT json_object("
        "'seq', seq, 'user_message', user_message, 'assistant_response', assistant_response, "
        "'tool_calls', json(tool_calls), 'input_tokens', input_tokens, 'output_tokens', output_tokens, "
        "'started_at', started_at, 'ended_at', ended_at) AS item "
        "FROM session_turns WHERE session_id = ? ORDER BY seq)"
    ),
    "toolCalls": (
        "SELECT '[' || COALESCE(group_concat(item, ','), '') || ']' FROM (SELECT json_object("
        "'tool', tool, 'ok', ok, 'summary', summary, 'ts', ts) AS item "
        "FROM session_tool_calls WHERE session_id = ? ORDER BY id)"
    ),
    "files": (
        "SELECT '[' || COALESCE(group_concat(item, ','), '') || ']' FROM (SELECT json_object("
        "'path', path, 'first_ts', first_ts, 'last_ts', last_ts, 'changes', changes) AS item "
        "FROM session_files WHERE session_id = ? ORDER BY path)"
    ),
    "commands": (
        "SELECT '[' || COALESCE(group_concat(item, ','), '') || ']' FROM (SELECT json_object("
        "'command', command, 'exit_code', exit_code, 'ts', ts) AS item "
        "FROM session_commands WHERE session_id = ? ORDER BY id)"
    ),
}


def document_json(store: Store, session_id: str, *, now: float | None = None) -> str:
    """The whole session as a saved-session document (the beans `SessionExport` shape), as JSON."""
    ts = clock.now() if now is None else now
    row = _find_row(store, session_id)
    if row is None:
        raise NotFoundError(f"no session {session_id!r}", hint="see `engram session list`")
    sid = row["id"]
    session = {key: row[key] for key in row.keys()}  # noqa: SIM118 - sqlite3.Row has no items()
    for key in ("decisions", "outcomes", "open_items", "tags", "search_footprint", "data"):
        session[key] = json.loads(session[key])
    head = {
        "version": FORMAT_VERSION,
        "savedAt": clock.iso(ts),
        "workspace": {"root": str(store.root), "name": store.root.name},
        "session": session,
        # Exported for readers; an import recomputes them from the records.
        "metrics": metrics(store, sid, now=ts),
    }
    parts = [_json(head)[:-1]]
    for key, sql in _DOCUMENT_ARRAYS.items():
        found = store.query_one(sql, (sid,))
        parts.append(f',"{key}":{found[0] if found is not None else "[]"}')
    return "".join(parts) + "}"


def document(store: Store, session_id: str, *, now: float | None = None) -> dict[str, Any]:
    """The whole session as a saved-session document (the beans `SessionExport` shape)."""
    parsed: dict[str, Any] = json.loads(document_json(store, session_id, now=now))
    return parsed


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _pack(text: str) -> bytes:
    import zstandard  # lazily: the hook path never saves

    return bytes(zstandard.ZstdCompressor(level=1).compress(text.encode("utf-8")))


def _unpack(payload: bytes) -> Any:
    """A stored document: zstd-compressed JSON (plain JSON from earlier saves is read too)."""
    data = bytes(payload)
    if data.startswith(_ZSTD_MAGIC):
        import zstandard

        data = zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 30)
    return json.loads(data)


def export_path(store: Store, session: Mapping[str, Any]) -> Path:
    """Where the session's Markdown note is written (see `session_vault`)."""
    from memory_core import session_vault

    return session_vault.note_path(store, session, session_vault.vault_dir(store))


def save(
    store: Store,
    session_id: str | None = None,
    *,
    name: str | None = None,
    overwrite: bool = False,
    agent: str = "editor",
    now: float | None = None,
) -> dict[str, Any]:
    """Save a session (default: the latest; an editor session is started when there is none).

    A `name` another session holds raises NameTakenError unless `overwrite`, which moves the
    name to this session. Writes the versioned document and `exports/sessions/<date>_<id>.md`.
    """
    ts = clock.now() if now is None else now
    if name is not None:
        name = redact(name.strip())
        if not name:
            raise UsageError("a session name cannot be empty")
    if session_id is None:
        current = latest(store, now=ts)
        sid = current["id"] if current else start(store, agent=agent, now=ts)["id"]
    else:
        sid = get(store, session_id, now=ts)["id"]
    with store.transaction() as db:
        if name is not None:
            holder = db.execute(
                "SELECT id FROM sessions WHERE name = ? AND id != ?", (name, sid)
            ).fetchone()
            if holder is not None:
                if not overwrite:
                    raise NameTakenError(name, holder[0])
                db.execute("UPDATE sessions SET name = NULL WHERE id = ?", (holder[0],))
                db.execute("UPDATE saved_sessions SET name = NULL WHERE name = ?", (name,))
            db.execute("UPDATE sessions SET name = ? WHERE id = ?", (name, sid))
        db.execute("UPDATE sessions SET saved_at = ? WHERE id = ?", (ts, sid))
    text = document_json(store, sid, now=ts)
    payload = _pack(text)
    with store.transaction() as db:
        db.execute(
            "INSERT INTO saved_sessions (session_id, name, format_version, saved_at, payload, size) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                sid,
                name if name is not None else _saved_name(db, sid),
                FORMAT_VERSION,
                ts,
                payload,
                len(text),
            ),
        )
        db.execute(
            "DELETE FROM saved_sessions WHERE session_id = ? AND id NOT IN (SELECT id FROM saved_sessions "
            "WHERE session_id = ? ORDER BY saved_at DESC, id DESC LIMIT ?)",
            (sid, sid, SAVED_VERSIONS_KEPT),
        )
        events.append(
            store, events.Event("session.saved", session_id=sid, data={"name": name}, ts=ts), db=db
        )
    path = write_export(store, sid, now=ts)
    session = get(store, sid, now=ts)
    return {
        **session,
        "export_path": str(path),
        "format_version": FORMAT_VERSION,
        "bytes": len(payload),
    }


def _saved_name(db: sqlite3.Connection, session_id: str) -> str | None:
    row = db.execute("SELECT name FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return row[0] if row is not None else None


def write_export(store: Store, session_id: str, *, now: float | None = None) -> Path:
    """Write the session's vault note, `<vault>/sessions/<date>_<id>.md` (see `session_vault`)."""
    from memory_core import session_vault

    session = get(store, session_id, now=now)
    sid = session["id"]
    text = session_vault.note_markdown(
        store,
        session,
        metrics(store, sid, now=now),
        summary_markdown(store, sid, now=now),
        format_version=FORMAT_VERSION,
    )
    path = session_vault.note_path(store, session, session_vault.vault_dir(store))
    session_vault.write_view(path, text)
    return path


def parse_document(raw: Any) -> dict[str, Any]:
    """Validate a saved-session document, upgrading older versions; refuse newer ones."""
    if not isinstance(raw, dict) or not isinstance(raw.get("session"), dict):
        raise UsageError(
            "not a saved engram session: expected an object with `session` and `turns`"
        )
    version = _major_version(raw.get("version", 1))
    _refuse_newer(version)
    doc = dict(raw)
    if version == 1:
        doc = _upgrade_v1(doc)
    session = doc["session"]
    if not isinstance(session.get("id"), str) or not session["id"]:
        raise UsageError("saved session has no `session.id`")
    turns = doc.get("turns") or []
    if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
        raise UsageError("saved session `turns` must be a list of objects")
    doc["version"] = FORMAT_VERSION
    return doc


def _refuse_newer(version: int) -> None:
    if version > FORMAT_VERSION:
        raise EngramError(
            f"this saved session has format version {version}, written by a newer engram "
            f"(this one reads versions 1 to {FORMAT_VERSION})",
            hint="upgrade engram to load it; nothing was changed",
        )


def _major_version(value: Any) -> int:
    try:
        if isinstance(value, str):
            return int(value.split(".", 1)[0])
        if isinstance(value, bool):
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise UsageError(f"saved session has an unreadable version {value!r}") from None


def _ts(value: Any) -> float | None:
    if value is None or isinstance(value, int | float):
        return value
    return clock.parse_iso(str(value))


def _upgrade_v1(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1: camelCase session fields, ISO times, tokens as {input, output}, `content` turns.

    The beans `SessionExport` ("1.0": `sessionId`, `turnNumber`, tokens as {prompt, completion},
    `modifiedFiles`) is read here too. Its `turnCount`, `totalTokens` and `commandsExecuted` are
    recomputed from what the document holds, never trusted (the beans example itself says 5
    turns and 12,500 tokens over one turn of 700).
    """
    old = doc["session"]
    started = _ts(old.get("startedAt") or old.get("started_at")) or clock.now()
    session = {
        "id": old.get("id") or old.get("sessionId"),
        "name": old.get("name"),
        "agent": old.get("agent", "editor"),
        "session_type": old.get("type", "new"),
        "status": old.get("status", "closed"),
        "started_at": started,
        "last_activity_at": _ts(old.get("lastActivityAt")) or started,
        "ended_at": _ts(old.get("endedAt")),
        "overview": (old.get("summary") or {}).get("overview"),
        "decisions": (old.get("summary") or {}).get("decisions", []),
        "outcomes": (old.get("summary") or {}).get("outcomes", []),
        "open_items": (old.get("summary") or {}).get("openItems", []),
        "tags": (old.get("summary") or {}).get("tags", []),
    }
    turns = []
    raw_turns = doc.get("turns") or []
    if not isinstance(raw_turns, list) or not all(isinstance(t, dict) for t in raw_turns):
        raise UsageError("saved session `turns` must be a list of objects")
    if all(isinstance(t.get("turnNumber"), int) for t in raw_turns):
        raw_turns = sorted(raw_turns, key=lambda t: int(t["turnNumber"]))
    for index, turn in enumerate(raw_turns, start=1):
        tokens = turn.get("tokens") or {}
        turns.append(
            {
                "seq": index,
                "user_message": turn.get("user") or turn.get("userMessage"),
                "assistant_response": turn.get("assistant") or turn.get("assistantResponse"),
                "tool_calls": turn.get("toolCalls", []),
                "input_tokens": int(tokens.get("input", tokens.get("prompt", 0))),
                "output_tokens": int(tokens.get("output", tokens.get("completion", 0))),
                "started_at": _ts(turn.get("timestamp")),
                "ended_at": _ts(turn.get("timestamp")),
            }
        )
    upgraded = {**doc, "session": session, "turns": turns}
    modified = old.get("modifiedFiles")
    if not doc.get("files") and isinstance(modified, list):
        upgraded["files"] = [{"path": str(path)} for path in modified if path]
    return upgraded


def _restore(store: Store, doc: Mapping[str, Any], *, replace: bool, trusted: bool = False) -> str:
    """Write a parsed document's session into the live tables; returns the session id.

    `trusted`: the document is this store's own save, redacted when it was recorded; a document
    from elsewhere (an import) is redacted again.
    """
    clean: Any = (lambda text: text) if trusted else redact
    clean_obj: Any = (lambda value: value) if trusted else redact_obj
    s = doc["session"]
    sid = str(s["id"])
    started = _ts(s.get("started_at")) or clock.now()
    turns = doc.get("turns") or []
    input_tokens = sum(int(t.get("input_tokens") or 0) for t in turns)
    output_tokens = sum(int(t.get("output_tokens") or 0) for t in turns)
    with store.transaction() as db:
        if replace:
            db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
        name = s.get("name")
        if (
            name is not None
            and db.execute(
                "SELECT 1 FROM sessions WHERE name = ? AND id != ?", (name, sid)
            ).fetchone()
        ):
            name = None  # the name now belongs to another session; the id still finds this one
        db.execute(
            "INSERT INTO sessions (id, name, agent, session_type, status, last_action, end_reason, "
            "started_at, last_activity_at, ended_at, saved_at, rolling_summary, overview, decisions, "
            "outcomes, open_items, tags, summary_source, search_footprint, turn_count, input_tokens, "
            "output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sid,
                name,
                s.get("agent") or "editor",
                s.get("session_type") or "new",
                s.get("status") if s.get("status") in STATUSES else "closed",
                s.get("last_action") or "completion",
                s.get("end_reason"),
                started,
                _ts(s.get("last_activity_at")) or started,
                _ts(s.get("ended_at")),
                _ts(s.get("saved_at")),
                clean(s.get("rolling_summary") or ""),
                clean(s["overview"]) if s.get("overview") else None,
                *(_json(clean_obj(list(s.get(k) or []))) for k in _SUMMARY_LISTS),
                s.get("summary_source"),
                _json(list(s.get("search_footprint") or [])),
                len(turns),
                input_tokens,
                output_tokens,
            ),
        )
        db.executemany(
            "INSERT INTO session_turns (session_id, seq, user_message, assistant_response, tool_calls, "
            "input_tokens, output_tokens, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    sid,
                    index,
                    clean(t["user_message"]) if t.get("user_message") else t.get("user_message"),
                    clean(t["assistant_response"])
                    if t.get("assistant_response")
                    else t.get("assistant_response"),
                    _json(t.get("tool_calls") or []),
                    int(t.get("input_tokens") or 0),
                    int(t.get("output_tokens") or 0),
                    _ts(t.get("started_at")),
                    _ts(t.get("ended_at")),
                )
                for index, t in enumerate(turns, start=1)
            ],
        )
        db.executemany(
            "INSERT INTO session_tool_calls (session_id, tool, ok, summary, ts) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    sid,
                    c.get("tool", "unknown"),
                    int(bool(c.get("ok", True))),
                    c.get("summary"),
                    _ts(c.get("ts")) or started,
                )
                for c in doc.get("toolCalls") or []
            ],
        )
        db.executemany(
            "INSERT OR IGNORE INTO session_files (session_id, path, first_ts, last_ts, changes) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    sid,
                    f["path"],
                    _ts(f.get("first_ts")) or started,
                    _ts(f.get("last_ts")) or started,
                    int(f.get("changes", 1)),
                )
                for f in doc.get("files") or []
            ],
        )
        db.executemany(
            "INSERT INTO session_commands (session_id, command, exit_code, ts) VALUES (?, ?, ?, ?)",
            [
                (sid, clean(c["command"]), c.get("exit_code"), _ts(c.get("ts")) or started)
                for c in doc.get("commands") or []
                if c.get("command")
            ],
        )
    return sid


def _latest_saved(store: Store, ref: str) -> sqlite3.Row | None:
    row = _find_row(store, ref)
    if row is not None:
        saved = store.query_one(
            "SELECT * FROM saved_sessions WHERE session_id = ? ORDER BY saved_at DESC, id DESC LIMIT 1",
            (row["id"],),
        )
        if saved is not None:
            return saved
    return store.query_one(
        "SELECT * FROM saved_sessions WHERE name = ? OR session_id = ? ORDER BY saved_at DESC, id DESC LIMIT 1",
        (ref, ref),
    )


def load(
    store: Store, ref: str, *, now: float | None = None, history_limit: int | None = None
) -> dict[str, Any]:
    """Load a saved session by name or id (or a SessionExport JSON file by path).

    A session whose live records are gone (deleted, or saved in another workspace) is restored
    from its saved document. Returns the session, its turns and the files it touched.
    """
    ts = clock.now() if now is None else now
    if ref.endswith(".json") and os.path.isfile(ref):
        return import_file(store, Path(ref), now=ts)
    saved = _latest_saved(store, ref)
    if saved is not None:
        _refuse_newer(int(saved["format_version"]))
        if _find_row(store, saved["session_id"]) is None:
            _restore(store, parse_document(_unpack(saved["payload"])), replace=False, trusted=True)
    elif _find_row(store, ref) is None:
        raise NotFoundError(f"no saved session {ref!r}", hint="see `engram session list`")
    session = get(store, saved["session_id"] if saved is not None else ref, now=ts)
    return {
        "session": session,
        "turns": history(store, session["id"], last=history_limit),
        "files": files_modified(store, session["id"]),
    }


def resume(store: Store, ref: str | None = None, *, now: float | None = None) -> dict[str, Any]:
    """Load a session (default: the latest, like `claude --continue`) and make it active again."""
    ts = clock.now() if now is None else now
    if ref is None:
        current = latest(store, now=ts)
        if current is None:
            raise NotFoundError("there is no session to resume", hint="start one, or import one")
        ref = current["id"]
    loaded = load(store, ref, now=ts, history_limit=20)
    sid = loaded["session"]["id"]
    with store.transaction() as db:
        db.execute(
            "UPDATE sessions SET status = CASE WHEN status = 'closed' THEN 'active' ELSE status END, "
            "ended_at = NULL, end_reason = NULL, last_action = 'resume', last_activity_at = ? WHERE id = ?",
            (ts, sid),
        )
    _refresh_note(store, sid, ts)
    loaded["session"] = get(store, sid, now=ts)
    return loaded


def delete(
    store: Store,
    ref: str,
    *,
    reason: str | None = None,
    actor: str = "user",
    settings: Any = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Delete a session, its records and its saved copies into the recoverable state.

    Like every deletion (seed 003: 30 days in the deleted state), `engram undelete ID` puts
    it all back until `memory.recovery_days` have passed; then retention or `engram purge`
    removes it for good. The long-term memories the session produced stay. Its Markdown
    export is removed now and written again on undelete.
    """
    from memory_core import lifecycle

    session = get(store, ref)
    sid = session["id"]
    record = lifecycle.delete(
        store,
        session_id=sid,
        reason=reason or "engram session delete",
        actor=actor,
        settings=settings,
        include_memories=False,
        now=now,
    )
    # Not under the session's id: the deleted session leaves no live row citing it.
    events.append(
        store, events.Event("session.deleted", data={"session": sid, "deletion": record["id"]})
    )
    from memory_core import session_vault

    session_vault.remove_note(store, session)
    return {
        "id": sid,
        "name": session["name"],
        "deleted": True,
        "deletion": record["id"],
        "recover_until": record["recover_until"],
    }


def export_document(store: Store, ref: str, *, now: float | None = None) -> dict[str, Any]:
    """The session as a beans `SessionExport` JSON object."""
    return document(store, get(store, ref)["id"], now=now)


def import_document(
    store: Store, raw: Any, *, replace: bool = False, now: float | None = None
) -> dict[str, Any]:
    """Import a SessionExport object; an existing session with the same id needs `replace`."""
    doc = parse_document(raw)
    sid = doc["session"]["id"]
    if _find_row(store, sid) is not None and not replace:
        raise EngramError(
            f"session {sid} already exists here", hint="delete it first or import with --replace"
        )
    _restore(store, doc, replace=replace)
    session = get(store, sid, now=now)
    return {
        "session": session,
        "turns": history(store, sid, last=20),
        "files": files_modified(store, sid),
    }


def import_file(
    store: Store, path: Path, *, replace: bool = False, now: float | None = None
) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"no such file {str(path)!r}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None
    return import_document(store, raw, replace=replace, now=now)


# -- automatic saves and quota ------------------------------------------------------------------


def autosave(
    store: Store,
    *,
    interval_minutes: float,
    quota_bytes: int | None = None,
    now: float | None = None,
) -> list[str]:
    """Save every active session whose last save is older than the interval (0: off).

    With `quota_bytes` (the `sessions.quota_bytes` setting), sessions over 80 % of it are
    compacted first.
    """
    if quota_bytes:
        for row in store.query(
            "SELECT id FROM sessions WHERE status != 'closed' AND bytes_used >= ?",
            (0.8 * quota_bytes,),
        ):
            enforce_quota(store, row["id"], quota_bytes=quota_bytes)
    if interval_minutes <= 0:
        return []
    ts = clock.now() if now is None else now
    rows = store.query(
        "SELECT id FROM sessions WHERE status != 'closed' AND last_activity_at > COALESCE(saved_at, 0) "
        "AND COALESCE(saved_at, started_at) < ?",
        (ts - interval_minutes * 60,),
    )
    saved = []
    for row in rows:
        save(store, row["id"], now=ts)
        saved.append(row["id"])
    return saved


def enforce_quota(store: Store, session_id: str, *, quota_bytes: int) -> dict[str, Any]:
    """Keep a session under its quota: at 80 % the rolling summary is compacted; at 95 % the
    oldest turns' texts are compacted too, until the session is back under 80 %."""
    row = store.query_one(
        "SELECT bytes_used, rolling_summary FROM sessions WHERE id = ?", (session_id,)
    )
    if row is None or quota_bytes <= 0:
        return {"compacted": False}
    used = int(row["bytes_used"])
    if used < 0.8 * quota_bytes:
        return {"compacted": False, "bytes_used": used}
    with store.transaction() as db:
        db.execute(
            "UPDATE sessions SET rolling_summary = ?, status = CASE WHEN status = 'closed' THEN status "
            "ELSE 'compacted' END WHERE id = ?",
            (compact_text(row["rolling_summary"]) if row["rolling_summary"] else "", session_id),
        )
        if used >= 0.95 * quota_bytes:
            target = 0.8 * quota_bytes
            for turn in db.execute(
                "SELECT id, user_message, assistant_response FROM session_turns WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall():
                if used <= target:
                    break
                before = len(turn[1] or "") + len(turn[2] or "")
                user = (
                    compact_text(turn[1])
                    if turn[1] and len(turn[1]) > COMPACT_TARGET_CHARS
                    else turn[1]
                )
                assistant = (
                    compact_text(turn[2])
                    if turn[2] and len(turn[2]) > COMPACT_TARGET_CHARS
                    else turn[2]
                )
                used -= before - (len(user or "") + len(assistant or ""))
                db.execute(
                    "UPDATE session_turns SET user_message = ?, assistant_response = ? WHERE id = ?",
                    (user, assistant, turn[0]),
                )
            db.execute(
                "UPDATE sessions SET bytes_used = ? WHERE id = ?", (max(0, used), session_id)
            )
    _refresh_note(store, session_id)
    return {"compacted": True, "bytes_used": used}
