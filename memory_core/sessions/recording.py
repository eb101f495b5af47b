"""Recording a session as it happens (the hook path): start, turns, tool calls, files, commands,
searches, pause and close, and what the agent says about it (summary, rolling summary)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memory_core import clock, events
from memory_core.errors import UsageError
from memory_core.redact import redact
from memory_core.sessions.activity import Activity
from memory_core.sessions.compaction import COMPACT_TARGET_CHARS, compact_text
from memory_core.sessions.metrics import metrics
from memory_core.sessions.model import (
    _SUMMARY_LISTS,
    QUIET_ACTIONS,
    SESSION_TYPES,
    STATUSES,
    _check_name_free,
    _ensure,
    _json,
    _require,
    _touch,
    new_session_id,
)
from memory_core.sessions.note import refresh_note
from memory_core.sessions.reading import get
from memory_core.store import Store


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
    ts = clock.now() if now is None else now
    sid = begin(
        store, session_id=session_id, agent=agent, name=name, session_type=session_type, now=ts
    )
    return get(store, sid, now=ts)


def begin(
    store: Store,
    *,
    session_id: str | None = None,
    agent: str = "editor",
    name: str | None = None,
    session_type: str | None = None,
    now: float | None = None,
) -> str:
    """`start` without reading the session back (an ingest starts hundreds); returns its id."""
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
        refresh_note(store, sid, ts)
    return sid


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
    and `summary`; each is also recorded as a tool call of the session, unless it says
    `recorded` (a hook recorded it as the session's already: it is only shown in the turn).
    """
    ts = (
        ended_at
        if ended_at is not None
        else (started_at if started_at is not None else clock.now())
    )
    items = [item for item in tool_calls]
    calls = [_tool_call(item) for item in items]
    new_calls = [
        call
        for call, item in zip(calls, items, strict=True)
        if isinstance(item, str) or not item.get("recorded")
    ]
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
        if new_calls:
            db.executemany(
                "INSERT INTO session_tool_calls (session_id, tool, ok, summary, ts) VALUES (?, ?, ?, ?, ?)",
                [(session_id, c["tool"], int(c["ok"]), c.get("summary"), ts) for c in new_calls],
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
    activity = Activity(store)
    activity.tool_call(session_id, tool=tool, ok=ok, summary=summary, ts=ts)
    activity.write()


def record_file_modified(
    store: Store, session_id: str, path: str, ts: float | None = None, *, outside: bool = False
) -> None:
    """Record that the session changed `path`, at once (`Activity.file_modified`)."""
    activity = Activity(store)
    activity.file_modified(session_id, path, ts, outside=outside)
    activity.write()


def record_command(
    store: Store,
    session_id: str,
    command: str,
    *,
    exit_code: int | None = None,
    ts: float | None = None,
    failed: bool | None = None,
) -> None:
    """Record a command the session ran, at once (`Activity.command`)."""
    activity = Activity(store)
    activity.command(session_id, command, exit_code=exit_code, ts=ts, failed=failed)
    activity.write()


def record_search(store: Store, session_id: str, query: str, ts: float | None = None) -> None:
    """Add a search to the session's footprint (what it looked for; kept unique, last 50)."""
    activity = Activity(store)
    activity.search(session_id, query, ts)
    activity.write()


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
    ts = clock.now() if now is None else now
    end(store, session_id, status=status, reason=reason, now=ts)
    return metrics(store, session_id, now=ts)


# The reasons engram itself gives a session's end (`end`'s event stores them as they are).
_OWN_END_REASONS = frozenset({"completion", "stopped", *QUIET_ACTIONS})


def end(
    store: Store,
    session_id: str,
    *,
    status: str = "closed",
    reason: str = "completion",
    now: float | None = None,
    note: bool = True,
) -> None:
    """`close` without measuring the session afterwards (an ingest closes hundreds).

    `note=False`: the caller rewrites the session's vault note itself (`refresh_note` with
    the same `now`), later: a session start writes the notes of the sessions it settled after
    its answer."""
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
            # engram's own words hold nothing to redact (a session start settles 20 sessions)
            plain=reason in _OWN_END_REASONS,
        )
    if note:
        refresh_note(store, session_id, ts)


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
    refresh_note(store, session_id)
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
    refresh_note(store, session_id, ts)
    return {"rolling_summary": summary, "compacted": compacted}
