"""What a session is: its vocabulary, the error for a taken name, and the row helpers every
part of the package shares (create a row on first sight, mark activity, find by id or name)."""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

from memory_core import clock
from memory_core.errors import EngramError, NotFoundError, UsageError
from memory_core.store import Store

SESSION_TYPES = ("new", "existing", "workflow")
STATUSES = ("active", "compacted", "closed")
# Actions after which silence is expected, not a crash.
QUIET_ACTIONS = ("pause", "completion", "abort")
RESUME_CHOICES = ("continue", "review", "restart", "discard")
CRASH_SILENCE_SECONDS = 30 * 60
IDLE_SECONDS = 24 * 3600
DECAYING_SECONDS = 7 * 86400
ARCHIVED_SECONDS = 30 * 86400

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


def new_session_id() -> str:
    return f"S-{os.urandom(4).hex()}"


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


def _require(db: sqlite3.Connection, session_id: str) -> None:
    if db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise NotFoundError(f"no session {session_id!r}", hint="see `engram session list`")


def _check_name_free(db: sqlite3.Connection, name: str, session_id: str) -> None:
    holder = db.execute(
        "SELECT id FROM sessions WHERE name = ? AND id != ?", (name, session_id)
    ).fetchone()
    if holder is not None:
        raise NameTakenError(name, holder[0])


def _iso(ts: float | None) -> str | None:
    return clock.iso(ts) if ts is not None else None


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


def restore_archived(store: Store, session_id: str) -> bool:
    """Bring back the turns an archived session had packed away, before they are read.

    One indexed lookup when there is nothing to restore; the lifecycle module (which does the
    work) is imported only when there is.
    """
    found = store.query_one(
        "SELECT 1 FROM archived_rows WHERE session_id = ? AND table_name = 'sessions' LIMIT 1",
        (session_id,),
    )
    if found is None:
        return False
    from memory_core import lifecycle

    return lifecycle.restore_if_archived(store, session_id)
