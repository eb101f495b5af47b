"""The shared full-text index for what is not a memory: gotchas, session summaries, digests.

Other areas feed it in two ways, both optional:

* push: call `upsert(db, kind, ref_id, title=..., body=..., ...)` inside the transaction that
  writes the record (and `remove(db, kind, ref_id)` when it goes away). Cheapest and exact.
* pull: nothing to call. Before a search, `sync(store)` looks at each known source table
  (gotchas, sessions, digests) and, when its signature (row count, highest rowid, newest
  timestamp) changed since the last look, re-reads that table into the index. This keeps the
  index right whatever the other areas do, at the cost of one COUNT per table per search.

Memories have their own index (`memories_fts`, kept by triggers of migration 0005).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from memory_core import clock
from memory_core.redact import redact
from memory_core.store import Store

KINDS = ("gotcha", "session", "digest")


@dataclass
class Doc:
    ref_id: str
    title: str = ""
    body: str = ""
    tags: list[str] = field(default_factory=list)
    session_id: str | None = None
    agent: str | None = None
    created_at: float | None = None
    resolved: bool = False


def upsert(
    db: sqlite3.Connection,
    kind: str,
    ref_id: str,
    *,
    title: str = "",
    body: str = "",
    tags: Iterable[str] = (),
    session_id: str | None = None,
    agent: str | None = None,
    created_at: float | None = None,
    resolved: bool = False,
) -> None:
    """Index (or re-index) one record of `kind`; call inside your own write transaction."""
    ts = clock.now() if created_at is None else created_at
    db.execute(
        "INSERT INTO search_docs (kind, ref_id, title, body, tags, session_id, agent, created_at,"
        " last_accessed, resolved) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (kind, ref_id) DO UPDATE SET title = excluded.title, body = excluded.body,"
        " tags = excluded.tags, session_id = excluded.session_id, agent = excluded.agent,"
        " resolved = excluded.resolved",
        (
            kind,
            ref_id,
            redact(title),
            redact(body),
            " ".join(str(t) for t in tags),
            session_id,
            agent,
            ts,
            ts,
            int(resolved),
        ),
    )


def remove(db: sqlite3.Connection, kind: str, ref_id: str) -> None:
    db.execute("DELETE FROM search_docs WHERE kind = ? AND ref_id = ?", (kind, ref_id))


# -- pull: sources read from other areas' tables ---------------------------------------------


@dataclass(frozen=True)
class Source:
    kind: str
    table: str
    # read(db, columns, where, params): the docs of the rows `where` selects ("1" for all).
    read: Callable[[sqlite3.Connection, dict[str, str], str, tuple[object, ...]], list[Doc]]


def _columns(store: Store, table: str) -> dict[str, str]:
    return {row[1]: row[2] for row in store.query(f'PRAGMA table_info("{table}")')}


def _first(columns: dict[str, str], *names: str) -> str | None:
    return next((name for name in names if name in columns), None)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        stripped = value.strip()
        # JSON lists and objects (decisions, samples, tags) are indexed by their words.
        if stripped[:1] in ("[", "{"):
            try:
                return " ".join(_flatten(json.loads(stripped)))
            except ValueError:
                return value
        return value
    return str(value)


def _flatten(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for item in value.values() for text in _flatten(item)]
    if isinstance(value, list):
        return [text for item in value for text in _flatten(item)]
    return [] if value is None else [str(value)]


def _generic_reader(
    id_names: tuple[str, ...],
    title_names: tuple[str, ...],
    body_names: tuple[str, ...],
    time_names: tuple[str, ...],
    *,
    skip_empty_body: bool = False,
) -> Callable[[sqlite3.Connection, dict[str, str], str, tuple[object, ...]], list[Doc]]:
    """A reader that picks the columns it knows from a table whose exact shape may vary."""

    def read(
        db: sqlite3.Connection, columns: dict[str, str], where: str, params: tuple[object, ...]
    ) -> list[Doc]:
        id_col = _first(columns, *id_names)
        if id_col is None:
            return []
        title_col = _first(columns, *title_names)
        body_cols = [name for name in body_names if name in columns]
        time_col = _first(columns, *time_names)
        status_col = _first(columns, "status")
        session_col = _first(columns, "session_id")
        agent_col = _first(columns, "agent")
        tags_col = _first(columns, "tags")
        docs = []
        for row in db.execute(f'SELECT * FROM "{_table_of(columns)}" WHERE {where}', params):
            body = "\n".join(filter(None, (_text(row[name]) for name in body_cols)))
            if skip_empty_body and not body.strip():
                continue
            created = row[time_col] if time_col else None
            docs.append(
                Doc(
                    ref_id=str(row[id_col]),
                    title=_text(row[title_col]) if title_col else "",
                    body=body,
                    tags=_text(row[tags_col]).split() if tags_col else [],
                    session_id=row[session_col] if session_col else None,
                    agent=row[agent_col] if agent_col else None,
                    created_at=_as_ts(created),
                    resolved=bool(status_col and row[status_col] == "resolved"),
                )
            )
        return docs

    return read


def _as_ts(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return clock.parse_iso(value)
        except ValueError:
            return None
    return None


# `_generic_reader` needs the table name; PRAGMA table_info does not carry it, so each source's
# column map gets it under a reserved key.
_TABLE_KEY = "\x00table"


def _table_of(columns: dict[str, str]) -> str:
    return columns[_TABLE_KEY]


SOURCES: list[Source] = [
    Source(
        "gotcha",
        "gotchas",
        _generic_reader(
            ("id",),
            ("title",),
            ("description", "workaround", "error_pattern", "trigger_error_pattern", "category"),
            ("created_at", "first_seen", "updated_at"),
        ),
    ),
    Source(
        "session",
        "sessions",
        _generic_reader(
            ("id",),
            ("name", "title"),
            ("overview", "summary", "rolling_summary", "decisions", "outcomes", "open_items"),
            ("started_at", "created_at"),
            skip_empty_body=True,
        ),
    ),
    Source(
        "digest",
        "digests",
        _generic_reader(
            ("id",),
            ("title", "compact_trigger", "session_id"),
            ("content", "body", "yaml", "data"),
            ("created_at", "timestamp", "ts"),
        ),
    ),
]


def register_source(source: Source) -> None:
    """Let another area describe how its table is read into the index."""
    SOURCES[:] = [s for s in SOURCES if s.kind != source.kind] + [source]


_STAMPS = (
    "updated_at",
    "last_seen",
    "last_activity_at",
    "ended_at",
    "last_activity",
    "created_at",
    "ts",
)


def _signature(store: Store, table: str, columns: dict[str, str]) -> dict[str, Any]:
    """Row count, highest rowid and newest timestamp of a source table: cheap, and enough to
    tell that nothing changed (and, when only rows were added or touched, which ones)."""
    stamp = _first(columns, *_STAMPS)
    newest = f', max("{stamp}")' if stamp else ", NULL"
    try:
        row = store.query_one(f'SELECT count(*), max(rowid){newest} FROM "{table}"')
    except sqlite3.OperationalError:  # a WITHOUT ROWID table
        row = store.query_one(f'SELECT count(*), NULL{newest} FROM "{table}"')
    count, rowid, latest = list(row) if row is not None else [0, None, None]
    return {"count": count, "rowid": rowid, "stamp": stamp, "max": latest}


def sync(store: Store, *, now: float | None = None) -> dict[str, int]:
    """Bring the index up to date with every source table that changed; returns docs per kind.

    When a table only gained or touched rows (its count did not drop and its newest timestamp
    moved forward), only the rows from the previous newest timestamp on are re-read; anything
    else (rows deleted, a table without timestamps) re-reads the whole table.
    """
    existing = {
        row["name"] for row in store.query("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    stale: list[tuple[Source, dict[str, str], dict[str, Any], dict[str, Any] | None]] = []
    known: dict[str, dict[str, Any] | None] = {}
    for row in store.query("SELECT * FROM search_sources"):
        try:
            value = json.loads(row["signature"])
        except ValueError:
            value = None
        known[row["kind"]] = value if isinstance(value, dict) else None
    for source in SOURCES:
        if source.table not in existing:
            continue
        columns = _columns(store, source.table)
        signature = _signature(store, source.table, columns)
        previous = known.get(source.kind)
        if previous != signature:
            stale.append((source, columns, signature, previous))
    counts: dict[str, int] = {}
    if not stale:
        return counts
    ts = clock.now() if now is None else now
    with store.transaction() as db:
        for source, columns, signature, previous in stale:
            columns[_TABLE_KEY] = source.table
            incremental = (
                previous is not None
                and signature["stamp"] is not None
                and previous.get("stamp") == signature["stamp"]
                and previous.get("max") is not None
                and signature["max"] is not None
                and signature["count"] >= previous.get("count", 0)
                and _comparable(signature["max"], previous["max"])
            )
            if incremental:
                assert previous is not None
                docs = source.read(db, columns, f'"{signature["stamp"]}" >= ?', (previous["max"],))
                _store_docs(db, source.kind, docs, ts, replace_all=False)
                indexed = db.execute(
                    "SELECT count(*) FROM search_docs WHERE kind = ?", (source.kind,)
                ).fetchone()[0]
                if indexed != signature["count"]:
                    incremental = False
            if not incremental:
                docs = source.read(db, columns, "1", ())
                _store_docs(db, source.kind, docs, ts, replace_all=True)
            db.execute(
                "INSERT OR REPLACE INTO search_sources (kind, signature) VALUES (?, ?)",
                (source.kind, json.dumps(signature)),
            )
            counts[source.kind] = len(docs)
    return counts


def _comparable(newer: Any, older: Any) -> bool:
    try:
        return bool(newer >= older)
    except TypeError:
        return False


def _store_docs(
    db: sqlite3.Connection, kind: str, docs: list[Doc], ts: float, *, replace_all: bool
) -> None:
    """Write docs into the index, keeping each one's access history across re-reads."""
    previous = {
        row[0]: (row[1], row[2])
        for row in db.execute(
            "SELECT ref_id, last_accessed, access_count FROM search_docs WHERE kind = ?", (kind,)
        )
    }
    if replace_all:
        db.execute("DELETE FROM search_docs WHERE kind = ?", (kind,))
    for doc in docs:
        created = doc.created_at if doc.created_at is not None else ts
        accessed, count = previous.get(doc.ref_id, (created, 0))
        # An upsert, not INSERT OR REPLACE: REPLACE deletes the old row without firing the
        # delete trigger, which would leave its words in the full-text index.
        db.execute(
            "INSERT INTO search_docs (kind, ref_id, title, body, tags,"
            " session_id, agent, created_at, last_accessed, access_count, resolved)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (kind, ref_id) DO UPDATE SET"
            " title = excluded.title, body = excluded.body, tags = excluded.tags,"
            " session_id = excluded.session_id, agent = excluded.agent,"
            " resolved = excluded.resolved",
            (
                kind,
                doc.ref_id,
                redact(doc.title),
                redact(doc.body),
                " ".join(doc.tags),
                doc.session_id,
                doc.agent,
                created,
                accessed,
                count,
                int(doc.resolved),
            ),
        )
