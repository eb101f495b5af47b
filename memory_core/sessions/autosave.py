"""Automatic saves on a timer, and the per-session quota: over 80 % the rolling summary is
compacted, over 95 % the oldest turns' texts too."""

from __future__ import annotations

from typing import Any

from memory_core import clock
from memory_core.sessions.compaction import COMPACT_TARGET_CHARS, compact_text
from memory_core.sessions.note import refresh_note
from memory_core.sessions.saved import save
from memory_core.store import Store


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


def autosave_session(
    store: Store,
    session_id: str,
    *,
    interval_minutes: float,
    final: bool = False,
    now: float | None = None,
) -> bool:
    """Save one session when an auto-save is due (the agent hooks' auto-save); True if saved.

    Due when something happened since its last save and that save (or the session's start) is
    older than the interval; `final` (the session ended): whenever something happened since
    the last save, so the saved copy holds the session to its end. Off when the interval is 0.
    """
    if interval_minutes <= 0:
        return False
    ts = clock.now() if now is None else now
    row = store.query_one(
        "SELECT started_at, last_activity_at, saved_at FROM sessions WHERE id = ?", (session_id,)
    )
    if row is None:
        return False
    last_save = row["saved_at"]
    if last_save is not None and float(row["last_activity_at"]) <= float(last_save):
        return False  # nothing new since the last save
    since = float(last_save if last_save is not None else row["started_at"])
    if not final and ts - since < interval_minutes * 60:
        return False
    save(store, session_id, now=ts)
    return True


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
    refresh_note(store, session_id)
    return {"compacted": True, "bytes_used": used}
