"""Deletion, undelete and purge, and the age states of sessions.

Deleting (a memory, a topic, a date range, an agent's or a session's records) moves the rows
out of the live tables into `deleted_rows` (as JSON, with their table) under one deletion
record that says what, when and why. For `memory.recovery_days` (30 by default) `undelete`
puts every row back exactly; `purge` then removes them for good, rebuilds the full-text
indexes and VACUUMs the database so the bytes are gone from the file and the space is
reclaimed.

The collection is generic: it follows foreign keys to child rows (tags, relations, turns of a
session, ...) whatever area created the table, so a session's data goes and comes back whole.
"""

from __future__ import annotations

import base64
import json
import secrets
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memory_core import clock
from memory_core.config import Settings
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store

DAY = 86400.0
DEFAULT_RECOVERY_DAYS = 30.0

# Tables never moved to the trash: this module's bookkeeping, derived indexes, and checkpoints
# (snapshots of the workspace's files, not of a conversation: they keep their own retention,
# and a checkpoint in the trash would let its content blobs be garbage-collected, so an
# undelete would bring back a checkpoint that cannot be rolled back to).
_NEVER_COLLECT = frozenset(
    {
        "deletions",
        "deleted_rows",
        "search_docs",
        "search_sources",
        "store_meta",
        "checkpoints",
        "checkpoint_blobs",
        "checkpoint_trees",
        "checkpoint_objects",
        "checkpoint_packs",
        "checkpoint_index",
    }
)

# A deleted row's content is kept until purge; retention (registered in memory_core.limits)
# removes what is past recovery even when nobody runs `engram purge`; the deletion record
# itself stays, saying what was purged.

# Session age states (docs/design.md section 3): by time since the session's last activity.
IDLE_AFTER_DAYS = 1.0
DECAYING_AFTER_DAYS = 7.0
ARCHIVED_AFTER_DAYS = 30.0


@dataclass(frozen=True)
class _Row:
    table: str
    key: tuple[Any, ...]
    key_columns: tuple[str, ...]
    values: dict[str, Any]


def delete(
    store: Store,
    *,
    memory_ids: Sequence[str] = (),
    topic: str | None = None,
    session_id: str | None = None,
    agent: str | None = None,
    before: float | None = None,
    after: float | None = None,
    reason: str | None = None,
    actor: str = "user",
    settings: Settings | None = None,
    include_memories: bool = True,
    now: float | None = None,
) -> dict[str, Any]:
    """Move what the selectors pick into the recoverable state; returns the deletion record.

    Selectors narrow each other: `topic="auth", before=...` deletes the auth memories older
    than that date. Sessions (with everything that cites them) are taken by `session_id`,
    `agent` or a date range; a topic selects memories only. `include_memories=False` leaves
    the long-term memories a session produced in place (`engram session delete`).
    """
    from memory_core.tags import normalize_tags

    now = clock.now() if now is None else now
    if not (memory_ids or topic or session_id or agent or before is not None or after is not None):
        raise UsageError(
            "say what to delete",
            hint="a memory id, --session ID, --topic TAG, --agent NAME or --before DATE",
        )
    recovery_days = float(settings["memory.recovery_days"]) if settings else DEFAULT_RECOVERY_DAYS
    with store.transaction() as db:
        graph = _Graph(db)
        rows: list[_Row] = []

        clauses: list[str] = []
        params: list[object] = []
        if memory_ids:
            clauses.append(f"id IN ({','.join('?' * len(memory_ids))})")
            params.extend(memory_ids)
        if topic:
            tag = (normalize_tags([topic]) or [""])[0]
            clauses.append("id IN (SELECT memory_id FROM memory_tags WHERE tag = ?)")
            params.append(tag)
        if session_id:
            clauses.append("session_id = ?")
            params.append(session_id)
        if agent:
            clauses.append("agent = ?")
            params.append(agent)
        if before is not None:
            clauses.append("created_at < ?")
            params.append(before)
        if after is not None:
            clauses.append("created_at >= ?")
            params.append(after)
        if include_memories or memory_ids or topic:
            graph.collect("memories", " AND ".join(clauses), params, rows)
        if memory_ids:
            found = {row.values["id"] for row in rows if row.table == "memories"}
            missing = [m for m in memory_ids if m not in found]
            if missing:
                raise NotFoundError(
                    f"no memory {missing[0]!r}", hint="see `engram memory list` for the ids"
                )

        if not memory_ids and not topic:
            _collect_sessions(db, graph, rows, session_id, agent, before, after)

        if not rows:
            raise NotFoundError(
                f"nothing to delete for {_describe(memory_ids, topic, session_id, agent, before, after)}"
            )

        deletion_id = f"D-{secrets.token_hex(4)}"
        counts: dict[str, int] = {}
        for row in rows:
            counts[row.table] = counts.get(row.table, 0) + 1
        what = _describe(memory_ids, topic, session_id, agent, before, after)
        selector = {
            "memory_ids": list(memory_ids),
            "topic": topic,
            "session_id": session_id,
            "agent": agent,
            "before": clock.iso(before) if before is not None else None,
            "after": clock.iso(after) if after is not None else None,
        }
        items = [str(row.values["id"]) for row in rows if row.table in ("memories", "sessions")]
        db.execute(
            "INSERT INTO deletions (id, created_at, what, selector, reason, actor, counts,"
            " recover_until, items) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                deletion_id,
                now,
                what,
                json.dumps({k: v for k, v in selector.items() if v}),
                reason,
                actor,
                json.dumps(counts),
                now + recovery_days * DAY,
                json.dumps(items),
            ),
        )
        db.executemany(
            "INSERT INTO deleted_rows (deletion_id, seq, table_name, row, deleted_at) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    deletion_id,
                    index,
                    row.table,
                    json.dumps(_encode(row.values), ensure_ascii=False),
                    now,
                )
                for index, row in enumerate(rows)
            ],
        )
        # Children before parents, so no foreign key ever points at a missing row.
        for row in reversed(rows):
            where = " AND ".join(f'"{c}" IS ?' for c in row.key_columns)
            db.execute(f'DELETE FROM "{row.table}" WHERE {where}', row.key)
        if any(row.table in _INDEXED for row in rows):
            db.execute("DELETE FROM search_sources")
    return deletion(store, deletion_id)


def undelete(store: Store, ident: str, *, now: float | None = None) -> dict[str, Any]:
    """Put back everything a deletion removed. `ident` is a deletion id or a deleted item's id."""
    now = clock.now() if now is None else now
    with store.transaction() as db:
        deletion_id = _resolve_deletion(db, ident)
        record = db.execute("SELECT * FROM deletions WHERE id = ?", (deletion_id,)).fetchone()
        if record["state"] == "restored":
            raise UsageError(f"{deletion_id} was already undeleted")
        rows = db.execute(
            "SELECT table_name, row FROM deleted_rows WHERE deletion_id = ? ORDER BY seq",
            (deletion_id,),
        ).fetchall()
        if record["state"] == "purged" or not rows:
            raise NotFoundError(
                f"{deletion_id} ({record['what']}) is past recovery: it was purged for good"
            )
        if float(record["recover_until"]) <= now:
            # Seed 003: recoverable for 30 days, then purged. The deadline is the promise,
            # whether or not a purge has run since.
            raise NotFoundError(
                f"{deletion_id} ({record['what']}) is past recovery: its recovery period ended"
                f" at {clock.iso(float(record['recover_until']))}",
                hint="`engram purge` removes it for good; nothing was restored",
            )
        existing = live_tables(db)
        restored: dict[str, int] = {}
        skipped = 0
        for row in rows:
            table = row["table_name"]
            if table not in existing:
                skipped += 1
                continue
            values = _decode(json.loads(row["row"]))
            surrogate = _integer_key(db, table)
            if surrogate and surrogate in values:
                # A numeric id reused by a newer row since the deletion: the restored row
                # takes a new one (nothing points at these ids by foreign key).
                taken = db.execute(
                    f'SELECT 1 FROM "{table}" WHERE "{surrogate}" = ?', (values[surrogate],)
                ).fetchone()
                if taken:
                    values.pop(surrogate)
            columns = [c for c in values if c in existing[table]]
            names = ", ".join(f'"{c}"' for c in columns)
            try:
                cursor = db.execute(
                    f'INSERT OR IGNORE INTO "{table}" ({names}) '
                    f"VALUES ({','.join('?' * len(columns))})",
                    [values[c] for c in columns],
                )
            except sqlite3.IntegrityError:
                # It points at something deleted since (a related memory): leave it out.
                skipped += 1
                continue
            if cursor.rowcount:
                restored[table] = restored.get(table, 0) + 1
            else:
                skipped += 1
        db.execute("DELETE FROM deleted_rows WHERE deletion_id = ?", (deletion_id,))
        db.execute(
            "UPDATE deletions SET state = 'restored', restored_at = ? WHERE id = ?",
            (now, deletion_id),
        )
        db.execute("DELETE FROM search_sources")
    result = deletion(store, deletion_id)
    result["restored"] = restored
    result["skipped"] = skipped
    # The sessions that came back, so the caller can rewrite their Markdown notes (deleting
    # removed them): `sessions.write_export`. lifecycle stays below sessions, never above.
    result["sessions"] = [
        json.loads(row["row"]).get("id") for row in rows if row["table_name"] == "sessions"
    ]
    return result


def purge(store: Store, *, everything: bool = False, now: float | None = None) -> dict[str, Any]:
    """Remove for good what is past recovery (or, with `everything`, all that is deleted).

    Then the full-text indexes are rebuilt and the database VACUUMed, so the removed text is
    gone from the file (and from the WAL) and the space is given back.
    """
    now = clock.now() if now is None else now
    size_before = store.size_bytes()
    with store.transaction() as db:
        due = [
            row["id"]
            for row in db.execute(
                "SELECT id FROM deletions WHERE state = 'deleted' AND (? OR recover_until <= ?)",
                (int(everything), now),
            )
        ]
        for deletion_id in due:
            db.execute("DELETE FROM deleted_rows WHERE deletion_id = ?", (deletion_id,))
            db.execute(
                "UPDATE deletions SET state = 'purged', purged_at = ? WHERE id = ?",
                (now, deletion_id),
            )
        # Rows retention already dropped leave records in the 'deleted' state with nothing
        # behind them: say so.
        db.execute(
            "UPDATE deletions SET state = 'purged', purged_at = ? WHERE state = 'deleted' "
            "AND NOT EXISTS (SELECT 1 FROM deleted_rows r WHERE r.deletion_id = deletions.id)",
            (now,),
        )
        # FTS5 keeps deleted terms in old segments until they are merged: merge them away.
        for index in fts_tables(db):
            db.execute(f'INSERT INTO "{index}"("{index}") VALUES (\'optimize\')')
    compact(store)
    size_after = store.size_bytes()
    return {
        "purged": due,
        "size_before": size_before,
        "size_after": size_after,
        "reclaimed_bytes": max(0, size_before - size_after),
    }


def compact(store: Store) -> None:
    """VACUUM the database and truncate the WAL: freed pages (and their old bytes) leave the file."""
    store.query("PRAGMA wal_checkpoint(TRUNCATE)")
    store.query("VACUUM")
    store.query("PRAGMA wal_checkpoint(TRUNCATE)")


def deletion(store: Store, deletion_id: str) -> dict[str, Any]:
    row = store.query_one("SELECT * FROM deletions WHERE id = ?", (deletion_id,))
    if row is None:
        raise NotFoundError(f"no deletion {deletion_id!r}", hint="see `engram delete --list`")
    return _deletion_dict(row)


def deletions(store: Store, *, state: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """Deletion records, newest first."""
    where, params = ("WHERE state = ?", (state,)) if state else ("", ())
    rows = store.query(
        f"SELECT * FROM deletions {where} ORDER BY created_at DESC, rowid DESC LIMIT ?",
        (*params, limit),
    )
    return [_deletion_dict(row) for row in rows]


def _deletion_dict(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "label": row["what"],
        "what": row["what"],
        "reason": row["reason"],
        "actor": row["actor"],
        "state": row["state"],
        "counts": json.loads(row["counts"]),
        "selector": json.loads(row["selector"]),
        "created_at": clock.iso(row["created_at"]),
        "recover_until": clock.iso(row["recover_until"]),
        "restored_at": clock.iso(row["restored_at"]) if row["restored_at"] else None,
        "purged_at": clock.iso(row["purged_at"]) if row["purged_at"] else None,
    }


# -- session ages ----------------------------------------------------------------------------


def session_age_state(
    last_activity: float, *, status: str | None = None, now: float | None = None
) -> str:
    """active, idle (24 h without activity), decaying (7 days) or archived (30 days).

    A session that is still marked active stays active; age applies to the others.
    """
    now = clock.now() if now is None else now
    days = max(0.0, now - last_activity) / DAY
    if days >= ARCHIVED_AFTER_DAYS:
        return "archived"
    if days >= DECAYING_AFTER_DAYS:
        return "decaying"
    if days >= IDLE_AFTER_DAYS:
        return "idle"
    return status if status in ("active", "compacted", "closed") else "active"


def session_ages(store: Store, *, now: float | None = None) -> list[dict[str, Any]]:
    """Every session with its age state (empty when the sessions area is not installed)."""
    now = clock.now() if now is None else now
    tables = _tables_of_store(store)
    columns = tables.get("sessions")
    if not columns or "id" not in columns:
        return []
    last = _first(
        columns,
        "last_activity_at",
        "last_activity",
        "updated_at",
        "ended_at",
        "started_at",
        "created_at",
    )
    if last is None:
        return []
    status_col = "status" if "status" in columns else None
    out = []
    for row in store.query(f'SELECT * FROM sessions ORDER BY "{last}" DESC'):
        ts = _as_ts(row[last])
        if ts is None:
            continue
        if "data" in columns:
            ts = max(ts, unarchived_at(row["data"]) or ts)
        status = row[status_col] if status_col else None
        out.append(
            {
                "id": row["id"],
                "status": status,
                "age_state": session_age_state(ts, status=status, now=now),
                "last_activity": clock.iso(ts),
            }
        )
    return out


def unarchived_at(data: Any) -> float | None:
    """When a session's archived detail was last brought back (its `data` JSON), if ever."""
    if not isinstance(data, str) or "unarchived_at" not in data:
        return None
    try:
        value = json.loads(data).get("unarchived_at")
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, int | float) else None


# -- collection ------------------------------------------------------------------------------

_INDEXED = frozenset({"gotchas", "sessions", "digests"})


class _Graph:
    """Foreign keys of the live schema: which tables hold rows that depend on a table's rows."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.tables = live_tables(db)
        self.children: dict[str, list[tuple[str, list[str], list[str]]]] = {}
        for table in self.tables:
            by_id: dict[int, tuple[str, list[str], list[str | None]]] = {}
            for fk in db.execute(f'PRAGMA foreign_key_list("{table}")'):
                parent, source, target = fk[2], fk[3], fk[4]
                entry = by_id.setdefault(fk[0], (parent, [], []))
                entry[1].append(source)
                entry[2].append(target)
            for parent, sources, targets in by_id.values():
                if parent not in self.tables:
                    continue
                resolved = [t or p for t, p in zip(targets, self.primary_key(parent), strict=False)]
                self.children.setdefault(parent, []).append((table, sources, resolved))
        self.seen: set[tuple[str, tuple[Any, ...]]] = set()

    def primary_key(self, table: str) -> list[str]:
        info = self.db.execute(f'PRAGMA table_info("{table}")').fetchall()
        keys = sorted((row[5], row[1]) for row in info if row[5])
        return [name for _order, name in keys]

    def collect(self, table: str, where: str, params: Sequence[Any], out: list[_Row]) -> None:
        if table not in self.tables or table in _NEVER_COLLECT or not where:
            return
        keys = self.primary_key(table)
        select = "*" if keys else "rowid AS __rowid__, *"
        found = self.db.execute(
            f'SELECT {select} FROM "{table}" WHERE {where}', tuple(params)
        ).fetchall()
        fresh: list[sqlite3.Row] = []
        for row in found:
            key_columns = tuple(keys) if keys else ("rowid",)
            key = tuple(row[k] for k in keys) if keys else (row["__rowid__"],)
            if (table, key) in self.seen:
                continue
            self.seen.add((table, key))
            values = {k: row[k] for k in row.keys() if k != "__rowid__"}  # noqa: SIM118
            out.append(_Row(table, key, key_columns, values))
            fresh.append(row)
        if not fresh:
            return
        for child, sources, targets in self.children.get(table, []):
            if child == table:
                continue
            for chunk in _chunks(fresh, 400):
                if len(sources) == 1:
                    keys = [row[targets[0]] for row in chunk]
                    self.collect(
                        child, f'"{sources[0]}" IN ({",".join("?" * len(keys))})', keys, out
                    )
                else:
                    for row in chunk:
                        cond = " AND ".join(f'"{s}" = ?' for s in sources)
                        self.collect(child, cond, [row[t] for t in targets], out)


def _collect_sessions(
    db: sqlite3.Connection,
    graph: _Graph,
    rows: list[_Row],
    session_id: str | None,
    agent: str | None,
    before: float | None,
    after: float | None,
) -> None:
    """The sessions the selectors pick, with every row in any table that cites them."""
    columns = graph.tables.get("sessions")
    session_ids: list[str] = []
    if columns and "id" in columns:
        clauses: list[str] = []
        params: list[object] = []
        if session_id:
            clauses.append("id = ?")
            params.append(session_id)
        if agent and "agent" in columns:
            clauses.append("agent = ?")
            params.append(agent)
        start = _first(columns, "started_at", "created_at")
        if (before is not None or after is not None) and start:
            for row in db.execute(f'SELECT id, "{start}" FROM sessions').fetchall():
                ts = _as_ts(row[1])
                if (
                    ts is None
                    or (before is not None and ts >= before)
                    or (after is not None and ts < after)
                ):
                    continue
                session_ids.append(row[0])
            if not session_ids:
                clauses.append("0")
            else:
                clauses.append(f"id IN ({','.join('?' * len(session_ids))})")
                params.extend(session_ids)
        elif agent and "agent" not in columns:
            clauses.append("0")
        if clauses:
            session_ids = [
                r[0]
                for r in db.execute(
                    f"SELECT id FROM sessions WHERE {' AND '.join(clauses)}", params
                )
            ]
    if session_id and session_id not in session_ids:
        session_ids.append(session_id)
    for chunk in _chunks(session_ids, 400):
        marks = ",".join("?" * len(chunk))
        # Rows that cite the session by a session_id column, whatever their table, first, so
        # they are deleted before (and restored after) the session row itself.
        for table, table_columns in graph.tables.items():
            if table in ("sessions", "memories") or "session_id" not in table_columns:
                continue
            graph.collect(table, f'"session_id" IN ({marks})', chunk, rows)
        graph.collect("sessions", f"id IN ({marks})", chunk, rows)
    _put_parents_first(rows)


def _put_parents_first(rows: list[_Row]) -> None:
    # A session row collected after the rows that cite it must come before them so undelete
    # inserts it first; deletion runs the list backwards.
    sessions = [r for r in rows if r.table == "sessions"]
    others = [r for r in rows if r.table != "sessions"]
    memories = [r for r in others if r.table in ("memories", "memory_tags", "memory_relations")]
    rest = [r for r in others if r.table not in ("memories", "memory_tags", "memory_relations")]
    rows[:] = [*memories, *sessions, *rest]


def live_tables(db: sqlite3.Connection) -> dict[str, dict[str, str]]:
    """Live tables (not virtual, not FTS shadow tables) and their columns."""
    names = [
        row[0]
        for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    ]
    fts = fts_tables(db)
    out = {}
    for name in names:
        if any(name.startswith(f"{index}_") for index in fts):
            continue
        out[name] = {row[1]: row[2] for row in db.execute(f'PRAGMA table_info("{name}")')}
    return out


def primary_key(db: sqlite3.Connection, table: str) -> list[str]:
    """The declared primary key columns of `table`, in key order (empty for rowid tables)."""
    info = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    return [name for _order, name in sorted((row[5], row[1]) for row in info if row[5])]


def _integer_key(db: sqlite3.Connection, table: str) -> str | None:
    """The INTEGER PRIMARY KEY column of `table` when nothing references it by foreign key."""
    info = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    keys = [row for row in info if row[5]]
    if len(keys) != 1 or keys[0][2].upper() != "INTEGER":
        return None
    name = str(keys[0][1])
    for (other,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        for fk in db.execute(f'PRAGMA foreign_key_list("{other}")'):
            if fk[2] == table and (fk[4] in (None, name)):
                return None
    return name


def parents_first(db: sqlite3.Connection, tables: Iterable[str]) -> list[str]:
    """`tables` ordered so a table comes after every table its foreign keys point at."""
    wanted = list(dict.fromkeys(tables))
    parents = {
        table: {fk[2] for fk in db.execute(f'PRAGMA foreign_key_list("{table}")')} - {table}
        for table in wanted
    }
    ordered: list[str] = []
    placed: set[str] = set()
    while len(ordered) < len(wanted):
        progress = False
        for table in wanted:
            if table not in placed and not (parents[table] & (set(wanted) - placed)):
                ordered.append(table)
                placed.add(table)
                progress = True
        if not progress:  # a cycle: keep the rest in the given order
            ordered += [t for t in wanted if t not in placed]
            break
    return ordered


def session_rows(db: sqlite3.Connection, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every row of one session and of what cites it (memories, turns, ...), parents first."""
    graph = _Graph(db)
    rows: list[_Row] = []
    graph.collect("memories", "session_id = ?", [session_id], rows)
    _collect_sessions(db, graph, rows, session_id, None, None, None)
    return [(row.table, row.values) for row in rows]


def _tables_of_store(store: Store) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for name in store.tables():
        out[name] = {row[1]: row[2] for row in store.query(f'PRAGMA table_info("{name}")')}
    return out


def fts_tables(db: sqlite3.Connection) -> list[str]:
    return [
        row[0]
        for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'"
        )
    ]


def _resolve_deletion(db: sqlite3.Connection, ident: str) -> str:
    ident = ident.strip()
    if db.execute("SELECT 1 FROM deletions WHERE id = ?", (ident,)).fetchone():
        return ident
    # A deleted item's own id (a memory, a session): the newest deletion that holds it.
    row = db.execute(
        "SELECT id, state FROM deletions WHERE items LIKE ? ORDER BY created_at DESC, rowid DESC "
        "LIMIT 1",
        (f"%{json.dumps(ident)}%",),
    ).fetchone()
    if row is not None:
        if row["state"] == "purged":
            raise NotFoundError(f"{ident} is past recovery: it was purged for good ({row['id']})")
        return str(row["id"])
    raise NotFoundError(
        f"nothing deleted matches {ident!r}", hint="see `engram delete --list` for deletion ids"
    )


def _describe(
    memory_ids: Sequence[str],
    topic: str | None,
    session_id: str | None,
    agent: str | None,
    before: float | None,
    after: float | None,
) -> str:
    parts = []
    if memory_ids:
        parts.append(("memory " if len(memory_ids) == 1 else "memories ") + ", ".join(memory_ids))
    if topic:
        parts.append(f"topic {topic}")
    if session_id:
        parts.append(f"session {session_id}")
    if agent:
        parts.append(f"agent {agent}")
    if after is not None:
        parts.append(f"from {clock.iso(after)}")
    if before is not None:
        parts.append(f"before {clock.iso(before)}")
    return ", ".join(parts)


def _encode(values: dict[str, Any]) -> dict[str, Any]:
    return {
        k: {"__bytes__": base64.b64encode(v).decode("ascii")} if isinstance(v, bytes) else v
        for k, v in values.items()
    }


def _decode(values: dict[str, Any]) -> dict[str, Any]:
    return {
        k: base64.b64decode(v["__bytes__"]) if isinstance(v, dict) and "__bytes__" in v else v
        for k, v in values.items()
    }


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _first(columns: dict[str, str], *names: str) -> str | None:
    return next((name for name in names if name in columns), None)


def _as_ts(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return clock.parse_iso(value)
        except ValueError:
            return None
    return None


# -- archiving old sessions ------------------------------------------------------------------

# What archiving compresses: the bulky per-session detail. The session row (with its summary,
# decisions and open items) stays, so it is still listed and found by search.
ARCHIVED_DETAIL_TABLES = (
    "session_turns",
    "session_tool_calls",
    "session_commands",
    "agent_turns",
    "agent_prompts",
    "agent_tool_uses",
    "agent_messages",
)


def archive_sessions(store: Store, *, now: float | None = None) -> dict[str, Any]:
    """Compress the detail of every session idle for 30 days into `archived_rows`.

    Returns {"sessions": [...ids], "rows": n, "bytes_before": b, "bytes_after": c}.
    """
    now = clock.now() if now is None else now
    due = [s["id"] for s in session_ages(store, now=now) if s["age_state"] == "archived"]
    archived: list[str] = []
    total_rows = before = after = 0
    for session_id in due:
        result = archive_session(store, session_id, now=now)
        if result["rows"]:
            archived.append(session_id)
            total_rows += result["rows"]
            before += result["bytes_before"]
            after += result["bytes_after"]
    return {"sessions": archived, "rows": total_rows, "bytes_before": before, "bytes_after": after}


def archive_session(store: Store, session_id: str, *, now: float | None = None) -> dict[str, Any]:
    """Compress one session's detail rows (turns, tool calls, commands) into one archive row."""
    import zlib

    now = clock.now() if now is None else now
    with store.transaction() as db:
        tables = live_tables(db)
        payload: dict[str, list[dict[str, Any]]] = {}
        for table in ARCHIVED_DETAIL_TABLES:
            if table not in tables or "session_id" not in tables[table]:
                continue
            rows = db.execute(
                f'SELECT * FROM "{table}" WHERE session_id = ?', (session_id,)
            ).fetchall()
            if rows:
                payload[table] = [_encode(dict(row)) for row in rows]
        count = sum(len(rows) for rows in payload.values())
        if not count:
            return {"session_id": session_id, "rows": 0, "bytes_before": 0, "bytes_after": 0}
        raw = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        blob = zlib.compress(raw, 9)
        db.execute(
            "INSERT INTO archived_rows (archived_at, reason, session_id, table_name, ref_id, data)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (now, "session archived after 30 days idle", session_id, "sessions", session_id, blob),
        )
        for table in payload:
            db.execute(f'DELETE FROM "{table}" WHERE session_id = ?', (session_id,))
    return {
        "session_id": session_id,
        "rows": count,
        "bytes_before": len(raw),
        "bytes_after": len(blob),
    }


def unarchive_session(store: Store, session_id: str, *, now: float | None = None) -> dict[str, int]:
    """Put an archived session's detail rows back; returns the rows restored per table.

    The restore counts as an access (seed 003 archives after 30 days without one): the
    session's `data.unarchived_at` is set, and its age is counted from then, so the next
    archiving pass does not pack away what was just read.
    """
    import zlib

    now = clock.now() if now is None else now
    restored: dict[str, int] = {}
    with store.transaction() as db:
        tables = live_tables(db)
        archives = db.execute(
            "SELECT id, data FROM archived_rows WHERE session_id = ? AND table_name = 'sessions'",
            (session_id,),
        ).fetchall()
        if not archives:
            raise NotFoundError(f"session {session_id!r} has no archived detail")
        for archive in archives:
            payload = json.loads(zlib.decompress(archive["data"]))
            for table in parents_first(db, [t for t in payload if t in tables]):
                for values in payload[table]:
                    row = _decode(values)
                    columns = [c for c in row if c in tables[table]]
                    names = ", ".join(f'"{c}"' for c in columns)
                    cursor = db.execute(
                        f'INSERT OR IGNORE INTO "{table}" ({names}) '
                        f"VALUES ({','.join('?' * len(columns))})",
                        [row[c] for c in columns],
                    )
                    restored[table] = restored.get(table, 0) + cursor.rowcount
            db.execute("DELETE FROM archived_rows WHERE id = ?", (archive["id"],))
        if "sessions" in tables and "data" in tables["sessions"]:
            db.execute(
                "UPDATE sessions SET data = json_set(CASE WHEN json_valid(data) THEN data "
                "ELSE '{}' END, '$.unarchived_at', ?) WHERE id = ?",
                (now, session_id),
            )
    return restored


def restore_if_archived(store: Store, session_id: str, *, now: float | None = None) -> bool:
    """Bring an archived session's detail back before someone reads it; False when it has none.

    Seed 003's `restoreSession`: archiving packs a session's turns away, it does not end
    them, so whoever asks for the turns (resume, history, the MCP transcript, an export) gets
    them. One indexed lookup when there is nothing to restore.
    """
    found = store.query_one(
        "SELECT 1 FROM archived_rows WHERE session_id = ? AND table_name = 'sessions' LIMIT 1",
        (session_id,),
    )
    if found is None:
        return False
    try:
        unarchive_session(store, session_id, now=now)
    except NotFoundError:  # another process restored it meanwhile
        return False
    return True
