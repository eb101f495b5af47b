"""The append-only event log: one row per thing that happened, written by every feature.

Events carry a kind (`file.changed`, `gotcha.error`, `session.turn`, ...), an actor (`editor`,
`agent:<session>`, `external`, `git`, `cli`), optional session and workspace-relative path, and
a JSON payload. Every text is redacted before it is stored.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any, NamedTuple

from memory_core import clock
from memory_core.store import Store


class Event(NamedTuple):
    """One thing that happened. (A NamedTuple, not a dataclass: every front end writes events,
    and a cold process would import dataclasses for this one class.)"""

    kind: str
    actor: str | None = None
    session_id: str | None = None
    path: str | None = None
    data: dict[str, Any] = {}  # noqa: RUF012  # never changed: `_row` reads it
    ts: float | None = None
    id: int | None = None


_INSERT = "INSERT INTO events (ts, kind, actor, session_id, path, data) VALUES (?, ?, ?, ?, ?, ?)"


def _row(event: Event, *, plain: bool = False) -> tuple[object, ...]:
    if plain:
        data = event.data
    else:
        from memory_core.redact import redact_obj  # (a cold process may store plain data only)

        data = redact_obj(event.data)
    return (
        event.ts if event.ts is not None else clock.now(),
        event.kind,
        event.actor,
        event.session_id,
        event.path,
        _json_text(data),
    )


def _json_text(data: object) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A file name that is not UTF-8 on disk (os.fsdecode's surrogate escapes): written
            # as \udcXX escapes, which SQLite can store and json.loads reads back as the same.
            text = json.dumps(data, separators=(",", ":"))
    return text


def append(
    store: Store, event: Event, *, db: sqlite3.Connection | None = None, plain: bool = False
) -> int:
    """Store one event durably and return its id. Pass `db` to join an open transaction.

    `plain`: the data holds only what engram made itself (its ids, fixed words, numbers), so
    there is nothing to redact (a cold `engram checkpoint create` then never loads redaction)."""
    if db is not None:
        return int(db.execute(_INSERT, _row(event, plain=plain)).lastrowid or 0)
    with store.transaction() as conn:
        return int(conn.execute(_INSERT, _row(event, plain=plain)).lastrowid or 0)


def append_many(store: Store, events: Iterable[Event]) -> int:
    """Store a burst of events in one transaction; returns how many."""
    rows = [_row(event) for event in events]
    with store.transaction() as conn:
        conn.executemany(_INSERT, rows)
    return len(rows)


def recent(
    store: Store,
    *,
    kind: str | None = None,
    path: str | None = None,
    since: float | None = None,
    limit: int = 100,
) -> list[Event]:
    """The newest events first, filtered by kind prefix, path and time."""
    clauses: list[str] = []
    params: list[object] = []
    if kind:
        clauses.append("kind LIKE ?")
        params.append(kind.rstrip("*") + "%" if kind.endswith("*") else kind)
    if path:
        clauses.append("path = ?")
        params.append(path)
    if since is not None:
        clauses.append("ts >= ?")
        params.append(since)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = store.query(
        f"SELECT * FROM events {where} ORDER BY ts DESC, id DESC LIMIT ?", (*params, limit)
    )
    return [
        Event(
            id=row["id"],
            ts=row["ts"],
            kind=row["kind"],
            actor=row["actor"],
            session_id=row["session_id"],
            path=row["path"],
            data=json.loads(row["data"]),
        )
        for row in rows
    ]
