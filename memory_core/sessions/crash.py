"""Crash detection: a session still marked active, silent for 30 minutes, whose last action was
not a pause, completion or abort, has crashed; one of four resume choices settles it."""

from __future__ import annotations

from typing import Any

from memory_core import clock
from memory_core.errors import UsageError
from memory_core.sessions.model import CRASH_SILENCE_SECONDS, QUIET_ACTIONS, RESUME_CHOICES
from memory_core.sessions.reading import _session_dict, get
from memory_core.sessions.recording import start
from memory_core.sessions.summary import summary_markdown
from memory_core.store import Store


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
