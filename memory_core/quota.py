"""Per-session quota: a session's records may use `sessions.quota_bytes` (10 MB by default).

Use is the bytes of every row that cites the session (any table with a `session_id` column,
and the session row itself). At 80 % a gentle compaction runs, at 95 % a forced one; both go
through the same steps in this order, stopping as soon as the session is under its target
(80 % for gentle, 70 % for forced, so a forced one makes room for a while):

1. drop decayed memory entries (priority below 0.3), into the recoverable deleted state;
2. summarise turns older than 7 days (their texts shortened to an excerpt and a note);
3. archive resolved findings (compressed into `archived_rows`, out of search).

Never touched (seed 003's preservation rules): pinned entries, open decisions, open findings,
explicit preferences, entries whose priority is above 0.7, entries created or used in the last
48 hours, and turns of the last 7 days.

The paths that add records to a session (`engram memory add`, agent hooks, the editor's
`engram.memory.add`) go through `before_write` and `after_write`; a session save and a
transcript ingest through `after_write` only:

- `after_write`: at 80 % or more the session is compacted (gentle, or forced at 95 %) and a
  warning is returned for the path that wrote to show: a line on stderr (CLI), the hook's
  `additionalContext` and the log (agent hooks), a window message (editor);
- `before_write`: a session at 100 % (or that the coming write, by its expected size, would
  take there) is compacted (forced) first; if that leaves it full, the write is refused with
  `QuotaExceededError` (code MEM_E001) before anything is written, so nothing already stored
  is lost;
- `guarded_write`: the write itself runs in one transaction, and the session is measured
  before that transaction commits: a write that would take the session past its quota is
  rolled back and refused (MEM_E001). So the quota is a hard limit: the write that would
  cross it is never stored, not even "just this once".
"""

from __future__ import annotations

import contextlib
import json
import sqlite3

from memory_core import clock, decay
from memory_core.errors import QuotaExceededError

# Every hook checks its session's quota here: `typing` is for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from memory_core.config import Settings
    from memory_core.store import Store

DAY = 86400.0
GENTLE_AT = 0.80
FORCED_AT = 0.95
FORCED_TARGET = 0.70
# Seed 003: "always preserve memories accessed in the last 48 hours".
RECENT_SECONDS = 2 * DAY
OLD_TURN_DAYS = 7.0
EXCERPT_CHARS = 200
_SKIP_TABLES = frozenset({"search_docs", "search_sources", "deleted_rows"})
_TURN_TABLES = ("session_turns", "agent_turns")
_TURN_TEXT = ("user_message", "assistant_response")
_TURN_TIME = ("started_at", "ended_at", "ts")


# The columns of each table, by database file and schema version (they change only with a
# migration): an ingest measures every session it read, and asking SQLite for the columns of
# 40 tables each time was most of those statements.
_COLUMNS: dict[tuple[str, int], dict[str, list[str]]] = {}
# The same, by the tables' definitions (their CREATE statements, which ALTER TABLE rewrites):
# the latest schema's, learnt by the resident server before it forks (`learn_latest_columns`),
# so that its children, each a new process, read the definitions in one statement rather than
# asking for the columns of every table (about 1 ms of a session start's CPU).
_COLUMNS_BY_DEFINITION: dict[tuple[tuple[str, str], ...], dict[str, list[str]]] = {}
_TABLES_SQL = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
    "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts%' ORDER BY name"
)


def _all_columns(store: Store) -> dict[str, list[str]]:
    key = (str(store.db_path), store.schema_version)
    known = _COLUMNS.get(key)
    if known is None:
        if _COLUMNS_BY_DEFINITION:
            known = _COLUMNS_BY_DEFINITION.get(_definitions(store))
        if known is None:
            known = _columns_asked(store)
        _COLUMNS[key] = known
    return known


def _definitions(store: Store) -> tuple[tuple[str, str], ...]:
    return tuple((str(row[0]), str(row[1])) for row in store.query(_TABLES_SQL))


def _columns_asked(store: Store) -> dict[str, list[str]]:
    return {
        table: [row[1] for row in store.query(f'PRAGMA table_info("{table}")')]
        for table in store.tables()
    }


def learn_latest_columns() -> None:
    """Learn the columns of a store at the latest schema (one made in memory), for every store
    whose tables are defined exactly so (`_COLUMNS_BY_DEFINITION`)."""
    from memory_core.store import migrated_in_memory

    with migrated_in_memory() as store:
        _COLUMNS_BY_DEFINITION[_definitions(store)] = _columns_asked(store)


def _text_columns(store: Store) -> dict[str, list[str]]:
    """Tables with a session_id column and the columns whose size counts."""
    return {
        table: columns
        for table, columns in _all_columns(store).items()
        if table not in _SKIP_TABLES and "session_id" in columns
    }


def session_usage(store: Store, session_id: str) -> int:
    """Bytes the session's records take (text and blobs as stored, numbers as 8 bytes)."""
    parts = [
        f'(SELECT total({_size(columns)}) FROM "{table}" WHERE session_id = ?1)'
        for table, columns in _text_columns(store).items()
    ]
    session_columns = _all_columns(store).get("sessions")
    if session_columns:
        parts.append(f"(SELECT total({_size(session_columns)}) FROM sessions WHERE id = ?1)")
    if not parts:
        return 0
    # One statement for every table (an ingest measures each session it read).
    row = store.query_one(f"SELECT {', '.join(parts)}", (session_id,))
    return sum(int(value) for value in row) if row else 0


def _size(columns: list[str]) -> str:
    return " + ".join(f'coalesce(length(CAST("{c}" AS BLOB)), 0)' for c in columns)


def session_ids(store: Store) -> list[str]:
    ids: set[str] = set()
    for table in _text_columns(store):
        ids.update(
            row[0]
            for row in store.query(
                f'SELECT DISTINCT session_id FROM "{table}" WHERE session_id IS NOT NULL'
            )
        )
    if "sessions" in store.tables():
        ids.update(row[0] for row in store.query("SELECT id FROM sessions"))
    return sorted(ids)


def usage(store: Store, session_id: str, settings: Settings) -> dict[str, Any]:
    return usage_of(
        session_id, session_usage(store, session_id), int(settings["sessions.quota_bytes"])
    )


def usage_of(session_id: str, used: int, quota: int) -> dict[str, Any]:
    """A session's use against its quota, from bytes already measured."""
    percent = 100.0 * used / quota if quota else 0.0
    level = (
        "forced" if percent >= FORCED_AT * 100 else "gentle" if percent >= GENTLE_AT * 100 else "ok"
    )
    return {
        "session_id": session_id,
        "used_bytes": used,
        "quota_bytes": quota,
        "percent": round(percent, 1),
        "level": level,
    }


def status(store: Store, settings: Settings, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Use against quota of every session, fullest first (one grouped query per table)."""
    quota = int(settings["sessions.quota_bytes"])
    used: dict[str, int] = {}
    sources = list(_text_columns(store).items())
    if "sessions" in store.tables():
        sources.append(
            ("sessions", [row[1] for row in store.query('PRAGMA table_info("sessions")')])
        )
    for table, columns in sources:
        key = "id" if table == "sessions" else "session_id"
        size = " + ".join(f'coalesce(length(CAST("{c}" AS BLOB)), 0)' for c in columns)
        for row in store.query(
            f'SELECT "{key}", total({size}) FROM "{table}" WHERE "{key}" IS NOT NULL GROUP BY "{key}"'
        ):
            used[row[0]] = used.get(row[0], 0) + int(row[1])
    rows = []
    for session_id, nbytes in sorted(used.items(), key=lambda item: -item[1])[:limit]:
        percent = 100.0 * nbytes / quota if quota else 0.0
        level = (
            "forced"
            if percent >= FORCED_AT * 100
            else "gentle"
            if percent >= GENTLE_AT * 100
            else "ok"
        )
        rows.append(
            {
                "session_id": session_id,
                "used_bytes": nbytes,
                "quota_bytes": quota,
                "percent": round(percent, 1),
                "level": level,
            }
        )
    return rows


def enforce(
    store: Store, session_id: str, settings: Settings, *, now: float | None = None
) -> dict[str, Any] | None:
    """Compact the session when it is at 80 % of its quota or more; None when it is not."""
    facts = usage(store, session_id, settings)
    if facts["level"] == "ok" or not facts["quota_bytes"]:
        return None
    return compact(store, session_id, settings, forced=facts["level"] == "forced", now=now)


WARNED_KEY = "quota.warned:"


def before_write(
    store: Store,
    session_id: str | None,
    settings: Settings,
    *,
    incoming: int = 0,
    now: float | None = None,
) -> dict[str, Any] | None:
    """Make room in a full session before writing to it, or refuse the write.

    `incoming`: the bytes the write is expected to add. While the session plus those stays
    under 100 % of the quota: nothing (one size query). Otherwise a forced compaction first;
    returns its result when the session is no longer full, raises `QuotaExceededError` when it
    still is. (Whether the write itself fits is `guarded_write`'s exact check.)
    """
    quota = int(settings["sessions.quota_bytes"])
    if not session_id or quota <= 0:
        return None
    used = session_usage(store, session_id)
    if used + max(0, incoming) < quota:
        return None
    result = compact(store, session_id, settings, forced=True, now=now)
    if result["after_bytes"] >= quota:
        raise QuotaExceededError(
            f"session {session_id} is full (MEM_E001): {result['after_bytes']:,} bytes of its"
            f" {quota:,}-byte quota, and compaction freed no more room; nothing was recorded",
            hint="raise sessions.quota_bytes in .engram/config.toml, delete old records with"
            " `engram delete --session ID --before DATE`, or start a new session",
        )
    return result


@contextlib.contextmanager
def guarded_write(
    store: Store, session_id: str | None, settings: Settings, *, measured: list[int] | None = None
) -> Iterator[None]:
    """Run a write to a session in one transaction that is refused if it crosses the quota.

    The session is measured inside the transaction, after the write and before the commit:
    over the quota, everything the block wrote is rolled back and `QuotaExceededError`
    (MEM_E001) raised. A block that fails on its own keeps what its finished steps wrote (as
    it would without the guard; a failed step's own transaction is already undone), provided
    that fits, and its error is raised after the commit. `measured`, when given, receives the
    use measured (the caller's warning then needs no second measurement).
    """
    quota = int(settings["sessions.quota_bytes"])
    if not session_id or quota <= 0:
        yield
        return
    failure: Exception | None = None
    with store.transaction():
        try:
            yield
        except QuotaExceededError:
            raise
        except Exception as exc:
            failure = exc
        used = session_usage(store, session_id)
        if measured is not None:
            measured.append(used)
        if used > quota:
            raise QuotaExceededError(
                f"session {session_id} has no room for this record (MEM_E001): it would take it"
                f" to {used:,} bytes of its {quota:,}-byte quota; nothing was recorded",
                hint="raise sessions.quota_bytes in .engram/config.toml, delete old records with"
                " `engram delete --session ID --before DATE`, or start a new session",
            )
    if failure is not None:
        raise failure


def after_write(
    store: Store,
    session_id: str | None,
    settings: Settings,
    *,
    once_per_level: bool = False,
    facts: dict[str, Any] | None = None,
    now: float | None = None,
) -> dict[str, Any] | None:
    """Compact a session at 80 % or more of its quota and say so; None under 80 %.

    `facts`: the session's `usage` when the caller has just measured it.

    Returns the usage (as `usage`) with `threshold` (80 or 95), `compaction` (its result),
    `after_percent` and `message`: one line for a person or an agent. `once_per_level`
    (agent hooks): the warning is returned once per threshold crossed, not on every write.
    """
    if not session_id:
        return None
    if facts is None:
        facts = usage(store, session_id, settings)
    if facts["level"] == "ok" or not facts["quota_bytes"]:
        return None
    forced = facts["level"] == "forced"
    result = compact(store, session_id, settings, forced=forced, now=now)
    quota = facts["quota_bytes"]
    after_percent = round(100.0 * result["after_bytes"] / quota, 1)
    threshold = 95 if forced else 80
    if once_per_level:
        key = f"{WARNED_KEY}{session_id}"
        row = store.query_one("SELECT value FROM store_meta WHERE key = ?", (key,))
        warned = int(row[0]) if row and str(row[0]).isdigit() else 0
        if after_percent < GENTLE_AT * 100 and warned:
            # Back under 80 %: the next crossing warns again.
            with store.transaction() as db:
                db.execute("DELETE FROM store_meta WHERE key = ?", (key,))
        elif warned >= threshold:
            return None
    freed = result["before_bytes"] - result["after_bytes"]
    done = (
        f"compacted to {after_percent:.0f} %"
        if freed > 0
        else "compaction found nothing it may remove"
    )
    message = (
        f"engram: session {session_id} reached {facts['percent']:.0f} % of its quota"
        f" ({facts['used_bytes']:,} of {quota:,} bytes); {done}. At 100 % new records"
        " for it are refused (MEM_E001)."
    )
    return {
        **facts,
        "threshold": threshold,
        "after_percent": after_percent,
        "compaction": result,
        "message": message,
    }


def mark_warned(store: Store, session_id: str, threshold: int) -> None:
    """Remember that the warning for `threshold` reached the agent (see `once_per_level`)."""
    with store.transaction() as db:
        db.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (f"{WARNED_KEY}{session_id}", str(threshold)),
        )


def compact(
    store: Store,
    session_id: str,
    settings: Settings,
    *,
    forced: bool = False,
    every_step: bool = False,
    now: float | None = None,
) -> dict[str, Any]:
    """Run the compaction steps in order until the session is under its target.

    `every_step` (a compaction asked for by hand): run every step whatever the use.
    """
    from memory_core import events, lifecycle
    from memory_core.events import Event

    now = clock.now() if now is None else now
    quota = int(settings["sessions.quota_bytes"])
    target = 0.0 if every_step else quota * (FORCED_TARGET if forced else GENTLE_AT)
    before = session_usage(store, session_id)
    steps: list[dict[str, Any]] = []

    def done() -> bool:
        return session_usage(store, session_id) < target

    # 1. decayed entries below 0.3
    dropped = _decayed_memories(store, session_id, now)
    if dropped and not done():
        record = lifecycle.delete(
            store,
            memory_ids=dropped,
            reason="quota compaction: decayed below 0.3",
            actor="quota",
            settings=settings,
            now=now,
        )
        steps.append({"step": "drop_decayed", "memories": dropped, "deletion": record["id"]})
    # 2. turns older than 7 days
    if not done():
        count = _summarise_old_turns(store, session_id, now)
        if count:
            steps.append({"step": "summarise_turns", "turns": count})
    # 3. resolved findings
    if not done():
        archived = _archive_resolved(store, session_id, now)
        if archived:
            steps.append({"step": "archive_resolved", "memories": archived})
    after = session_usage(store, session_id)
    result = {
        "session_id": session_id,
        "mode": "every step" if every_step else "forced" if forced else "gentle",
        "before_bytes": before,
        "after_bytes": after,
        "quota_bytes": quota,
        "target_bytes": int(target),
        "steps": steps,
    }
    if steps:
        # Only when something was done: a compaction that found nothing would otherwise add
        # an event (counted in the session's use) on every write of a full session.
        events.append(
            store,
            Event("quota.compacted", actor="quota", session_id=session_id, data=result, ts=now),
        )
    return result


def _protected(row: sqlite3.Row, now: float) -> bool:
    from memory_core.memory import current_priority

    return bool(
        row["pinned"]
        or (row["type"] in ("decision", "finding") and row["status"] == "open")
        or (row["type"] == "preference" and row["explicit"])
        or now - row["created_at"] < RECENT_SECONDS
        or now - row["last_accessed"] < RECENT_SECONDS
        or current_priority(row, now) > decay.HOT
    )


def _decayed_memories(store: Store, session_id: str, now: float) -> list[str]:
    from memory_core.memory import current_priority

    rows = store.query(
        "SELECT * FROM memories WHERE session_id = ? AND status != 'archived'", (session_id,)
    )
    return [
        row["id"]
        for row in rows
        if not _protected(row, now) and current_priority(row, now) < decay.COLD
    ]


def _summarise_old_turns(store: Store, session_id: str, now: float) -> int:
    cutoff = now - OLD_TURN_DAYS * DAY
    count = 0
    tables = _text_columns(store)
    with store.transaction() as db:
        for table in _TURN_TABLES:
            columns = tables.get(table)
            if not columns:
                continue
            texts = [c for c in _TURN_TEXT if c in columns]
            stamp = next((c for c in _TURN_TIME if c in columns), None)
            if not texts or stamp is None:
                continue
            key = next((c for c in ("id", "uuid") if c in columns), "rowid")
            rows = db.execute(
                f'SELECT {key} AS k, {", ".join(texts)} FROM "{table}" WHERE session_id = ? AND "{stamp}" < ?',
                (session_id, cutoff),
            ).fetchall()
            for row in rows:
                changes = {
                    c: _excerpt(row[c])
                    for c in texts
                    if row[c] and len(row[c]) > EXCERPT_CHARS + 40
                }
                if not changes:
                    continue
                sets = ", ".join(f'"{c}" = ?' for c in changes)
                db.execute(
                    f'UPDATE "{table}" SET {sets} WHERE {key} = ?',
                    (*changes.values(), row["k"]),
                )
                count += 1
    return count


def _excerpt(text: str) -> str:
    return f"{text[:EXCERPT_CHARS].rstrip()} … [compacted: {len(text)} characters summarised]"


def _archive_resolved(store: Store, session_id: str, now: float) -> list[str]:
    import zlib

    rows = store.query(
        "SELECT * FROM memories WHERE session_id = ? AND status = 'resolved' AND type IN ('finding', 'learning')",
        (session_id,),
    )
    ids = [row["id"] for row in rows if not _protected(row, now)]
    if not ids:
        return []
    with store.transaction() as db:
        for memory_id in ids:
            row = db.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
            payload = {
                "memory": dict(row),
                "tags": [
                    r[0]
                    for r in db.execute(
                        "SELECT tag FROM memory_tags WHERE memory_id = ?", (memory_id,)
                    )
                ],
                "relations": [
                    dict(r)
                    for r in db.execute(
                        "SELECT * FROM memory_relations WHERE source_id = ? OR target_id = ?",
                        (memory_id, memory_id),
                    )
                ],
            }
            db.execute(
                "INSERT INTO archived_rows (archived_at, reason, session_id, table_name, ref_id, data) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    now,
                    "quota compaction: resolved finding",
                    session_id,
                    "memories",
                    memory_id,
                    zlib.compress(json.dumps(payload, ensure_ascii=False).encode("utf-8"), 9),
                ),
            )
            db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    return ids


def memory_status(store: Store, settings: Settings, *, now: float | None = None) -> dict[str, Any]:
    """Memory counts by tier, pins, archive and trash, and quota use per session."""
    from memory_core.memory import current_priority

    now = clock.now() if now is None else now
    tiers = {"hot": 0, "warm": 0, "cold": 0}
    pinned = archived = total = 0
    for row in store.query("SELECT * FROM memories"):
        total += 1
        if row["status"] == "archived":
            archived += 1
            continue
        pinned += int(bool(row["pinned"]))
        tiers[decay.tier(current_priority(row, now))] += 1
    archived += int((store.query_one("SELECT count(*) FROM archived_rows") or [0])[0])
    recoverable = int(
        (store.query_one("SELECT count(*) FROM deletions WHERE state = 'deleted'") or [0])[0]
    )
    return {
        "memories": total,
        "tiers": tiers,
        "pinned": pinned,
        "archived": archived,
        "recoverable_deletions": recoverable,
        "sessions": status(store, settings),
    }
