"""`engram doctor`: check a store, say what is wrong and how big each part is; repair what is safe.

Checks (seed 003's validate and repair, and its size breakdown):

- integrity: SQLite's `PRAGMA integrity_check` over every page and index;
- full-text indexes: each FTS5 index against the table it indexes (`integrity-check`);
- orphaned rows: rows whose foreign key points at a row that is gone;
- orphaned checkpoint content: blobs and trees no checkpoint references and no clean-up is
  scheduled for (what retention left for its next collection is a note, not a problem);
- orphaned exports: `exports/sessions/*.md` of sessions that no longer exist, and temporary
  files an interrupted atomic write left behind;
- annotation gotchas (`# gotcha: ...` comments) whose stored anchor no longer matches the
  comment's line (older engram versions stored the comment's words, so drift called every one
  changed); repair re-reads those files' comments;
- size: the store's bytes by area (memory, sessions, agents, gotchas, checkpoints, ...), from
  SQLite's page statistics, plus the files next to the database.

`repair=True` does only what loses nothing: rebuilds the full-text indexes and every other
index (REINDEX), moves orphaned rows into the recoverable deleted state (30 days, like any
deletion), deletes unreferenced checkpoint content (nothing can reach it) and stale temporary
files, removes orphaned exports (generated views of what is gone), and checkpoints the WAL.
Page-level corruption is reported, never "repaired": the way out is `engram export` of what
still reads, then a fresh store.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from pathlib import Path
from typing import Any

from memory_core import clock, config
from memory_core.store import Store

DAY = 86400.0
STALE_TEMP_SECONDS = 3600.0
DEFAULT_RECOVERY_DAYS = 30.0

# Table name prefixes -> the area a person knows them by (first match wins).
AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memory", ("memories", "memory_")),
    ("sessions", ("sessions", "session_", "saved_sessions")),
    ("agents", ("agent_", "digests")),
    ("gotchas", ("gotcha", "error_occurrences")),
    ("evolution and timeline", ("file_changes", "events")),
    ("snapshots", ("snapshots",)),
    ("checkpoints", ("checkpoint",)),
    ("search index", ("search_",)),
    ("deleted (recoverable)", ("deletions", "deleted_rows")),
    ("archived", ("archived_rows",)),
)


def area_of(table: str) -> str:
    for area, prefixes in AREAS:
        if table.startswith(prefixes):
            return area
    return "other"


def run(
    store: Store,
    *,
    repair: bool = False,
    now: float | None = None,
    settings: config.Settings | None = None,
) -> dict[str, Any]:
    """Check the store (and with `repair`, fix what is safe); returns the report."""
    now = clock.now() if now is None else now
    settings = config.load(store.root) if settings is None else settings
    repaired: list[str] = []
    report: dict[str, Any] = {"root": str(store.root), "repair": repair}
    report["integrity"] = _integrity(store)
    if not report["integrity"]["ok"]:
        # Writing to a damaged file can spread the damage: report, and touch nothing.
        report["repair"] = repair = False
        report["indexes"] = {}
        report["orphaned_rows"] = {"rows": 0, "by_table": {}, "moved_to": None}
        report["checkpoint_content"] = _no_checkpoint_content()
        report["files"] = {"orphaned_exports": [], "stale_temp_files": [], "removed": []}
        report["annotations"] = {"stale": [], "resynced": []}
        report["wrong_types"] = {}
    else:
        report["indexes"] = _fts_indexes(store, repair, repaired)
        report["orphaned_rows"] = _orphaned_rows(store, repair, repaired, now)
        report["checkpoint_content"] = _checkpoint_orphans(store, repair, repaired, settings)
        report["files"] = _stray_files(store, repair, repaired, now)
        report["annotations"] = _annotation_anchors(store, repair, repaired)
        report["wrong_types"] = _wrong_types(store)
    if repair:
        store.query("PRAGMA wal_checkpoint(TRUNCATE)")
    try:
        report["size"] = size_breakdown(store)
    except sqlite3.DatabaseError as exc:
        report["size"] = {"total_bytes": 0, "areas": {}, "largest_tables": [], "files": {}}
        report["size"]["error"] = str(exc)
    report["repaired"] = repaired
    report["notes"] = notes_of(report)
    problems = problems_of(report)
    report["problems"] = problems
    report["healthy"] = not problems
    return report


def problems_of(report: dict[str, Any]) -> list[str]:
    """One line per problem still present after this run (repaired ones are not)."""
    out: list[str] = []
    if not report["integrity"]["ok"]:
        out.append(
            "the database file is damaged: "
            + "; ".join(report["integrity"]["messages"][:3])
            + " (export what still reads with `engram export`, then start a fresh store)"
        )
    for name, state in report["indexes"].items():
        if state != "ok" and state != "rebuilt":
            out.append(f"full-text index {name}: {state} (`engram doctor --repair` rebuilds it)")
    orphans = report["orphaned_rows"]
    if orphans["rows"] and not orphans["moved_to"]:
        tables = ", ".join(f"{t} {n}" for t, n in orphans["by_table"].items())
        out.append(f"{orphans['rows']} orphaned row(s): {tables} (`--repair` moves them aside)")
    content = report["checkpoint_content"]
    if content["orphaned"] and not content["freed_bytes"]:
        out.append(
            f"{content['orphaned']} checkpoint blob(s)/tree(s) no checkpoint references and no"
            f" clean-up is scheduled for, {content['orphaned_bytes']:,} bytes (`--repair` deletes"
            " them)"
        )
    annotations = report["annotations"]
    if annotations["stale"] and not annotations["resynced"]:
        out.append(
            f"{len(annotations['stale'])} file(s) whose gotcha comments are stored with an old"
            " anchor, so drift reports them as changed (`--repair` re-reads them)"
        )
    wrong = report.get("wrong_types") or {}
    if wrong:
        where = ", ".join(f"{column} {n}" for column, n in list(wrong.items())[:5])
        out.append(
            f"{sum(wrong.values())} value(s) of the wrong type, which commands reading them fail"
            f" on: {where} (an import of an older engram, or an edit by hand; export what reads,"
            " then fix or delete those rows)"
        )
    files = report["files"]
    stray = [*files["orphaned_exports"], *files["stale_temp_files"]]
    if stray and not files["removed"]:
        out.append(f"{len(stray)} stray file(s) in .engram (`--repair` removes them)")
    return out


def notes_of(report: dict[str, Any]) -> list[str]:
    """One line per thing worth knowing that is not a problem."""
    out: list[str] = []
    content = report["checkpoint_content"]
    waiting = content["awaiting_collection"]
    if waiting["items"] and not content["freed_bytes"]:
        removals = waiting["collected_after_removals"]
        when = (
            "the next checkpoint collects them"
            if removals == 0
            else f"they go once retention removes {removals} more checkpoint(s) (at"
            " `checkpoints.max_count`, each new checkpoint removes one)"
        )
        out.append(
            f"{waiting['items']} checkpoint blob(s)/tree(s), {waiting['bytes']:,} bytes, wait for"
            f" the next scheduled clean-up: {when}; `engram doctor --repair` collects them now"
        )
    return out


# -- checks ------------------------------------------------------------------------------------


def _wrong_types(store: Store) -> dict[str, int]:
    """Values a number column holds as text or bytes ("yesterday" where a time belongs): SQLite
    keeps them as given, and every command reading the column failed on them. One pass over
    each table with such columns; table.column -> how many."""
    from memory_core import lifecycle

    found: dict[str, int] = {}
    with store.transaction() as db:
        tables = lifecycle.live_tables(db)
    for table, columns in tables.items():
        numeric = [
            name
            for name, declared in columns.items()
            if any(word in declared.upper() for word in ("INT", "REAL", "FLOA", "DOUB", "NUM"))
        ]
        if not numeric:
            continue
        counts = ", ".join(f"SUM(typeof(\"{name}\") IN ('text', 'blob'))" for name in numeric)
        row = store.query_one(f'SELECT {counts} FROM "{table}"')
        for name, count in zip(numeric, row or (), strict=False):
            if count:
                found[f"{table}.{name}"] = int(count)
    return found


def _integrity(store: Store) -> dict[str, Any]:
    try:
        rows = store.query("PRAGMA integrity_check")
        messages = [str(row[0]) for row in rows]
    except sqlite3.DatabaseError as exc:
        messages = [str(exc)]
    ok = messages == ["ok"]
    return {"ok": ok, "messages": [] if ok else messages}


def fts_indexes(store: Store) -> list[tuple[str, str | None]]:
    """(index, the table it indexes or None for a self-contained one) of every FTS5 table."""
    out = []
    for row in store.query(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'"
    ):
        sql = str(row["sql"])
        content = None
        marker = "content='"
        if marker in sql:
            content = sql.split(marker, 1)[1].split("'", 1)[0] or None
        out.append((str(row["name"]), content))
    return out


def _fts_indexes(store: Store, repair: bool, repaired: list[str]) -> dict[str, str]:
    states: dict[str, str] = {}
    for name, content in fts_indexes(store):
        try:
            # rank 1: compare the index with the content table too, not only with itself.
            store.query(f'INSERT INTO "{name}"("{name}", rank) VALUES (\'integrity-check\', 1)')
            states[name] = "ok"
        except sqlite3.DatabaseError as exc:
            states[name] = f"does not match {content or 'its content'} ({exc})"
    if repair:
        with store.transaction() as db:
            for name, _content in fts_indexes(store):
                db.execute(f'INSERT INTO "{name}"("{name}") VALUES (\'rebuild\')')
                if states.get(name) != "ok":
                    states[name] = "rebuilt"
                    repaired.append(f"rebuilt the full-text index {name}")
            # The shared search index re-reads its sources at the next search.
            db.execute("DELETE FROM search_sources")
        store.query("REINDEX")
    return states


def _foreign_keys(db: sqlite3.Connection) -> list[tuple[str, str, list[str], list[str]]]:
    """(table, parent, child columns, parent columns) of every foreign key of a live table."""
    from memory_core.lifecycle import live_tables, primary_key

    tables = live_tables(db)
    out = []
    for table in tables:
        groups: dict[int, tuple[str, list[str], list[str | None]]] = {}
        for fk in db.execute(f'PRAGMA foreign_key_list("{table}")'):
            entry = groups.setdefault(fk[0], (fk[2], [], []))
            entry[1].append(fk[3])
            entry[2].append(fk[4])
        for parent, sources, targets in groups.values():
            if parent not in tables:
                continue
            keys = primary_key(db, parent)
            resolved = [
                t or k for t, k in zip(targets, keys or ["rowid"] * len(targets), strict=False)
            ]
            out.append((table, parent, sources, [str(t) for t in resolved]))
    return out


def _orphan_where(parent: str, sources: list[str], targets: list[str]) -> str:
    present = " AND ".join(f'c."{s}" IS NOT NULL' for s in sources)
    match = " AND ".join(f'p."{t}" = c."{s}"' for s, t in zip(sources, targets, strict=True))
    return f'{present} AND NOT EXISTS (SELECT 1 FROM "{parent}" p WHERE {match})'


def _orphaned_rows(store: Store, repair: bool, repaired: list[str], now: float) -> dict[str, Any]:
    by_table: dict[str, int] = {}
    moved_to: str | None = None
    with store.transaction() as db:
        found: list[tuple[str, dict[str, Any]]] = []
        for table, parent, sources, targets in _foreign_keys(db):
            where = _orphan_where(parent, sources, targets)
            rows = db.execute(f'SELECT c.* FROM "{table}" c WHERE {where}').fetchall()
            if rows:
                by_table[table] = by_table.get(table, 0) + len(rows)
                found.extend((table, dict(row)) for row in rows)
                if repair:
                    db.execute(f'DELETE FROM "{table}" AS c WHERE {where}')
        if repair and found:
            moved_to = _record_deletion(db, found, now)
            repaired.append(f"moved {len(found)} orphaned row(s) aside ({moved_to})")
    return {"rows": sum(by_table.values()), "by_table": by_table, "moved_to": moved_to}


def _record_deletion(
    db: sqlite3.Connection, rows: list[tuple[str, dict[str, Any]]], now: float
) -> str:
    from memory_core.lifecycle import _encode

    deletion_id = f"D-{secrets.token_hex(4)}"
    counts: dict[str, int] = {}
    for table, _row in rows:
        counts[table] = counts.get(table, 0) + 1
    db.execute(
        "INSERT INTO deletions (id, created_at, what, selector, reason, actor, counts,"
        " recover_until, items) VALUES (?, ?, ?, '{}', ?, 'doctor', ?, ?, '[]')",
        (
            deletion_id,
            now,
            "orphaned rows",
            "engram doctor --repair: rows whose parent row is gone",
            json.dumps(counts),
            now + DEFAULT_RECOVERY_DAYS * DAY,
        ),
    )
    db.executemany(
        "INSERT INTO deleted_rows (deletion_id, seq, table_name, row, deleted_at) VALUES (?, ?, ?, ?, ?)",
        [
            (deletion_id, index, table, json.dumps(_encode(row), ensure_ascii=False), now)
            for index, (table, row) in enumerate(rows)
        ],
    )
    return deletion_id


def _no_checkpoint_content() -> dict[str, Any]:
    return {
        "orphaned": 0,
        "orphaned_bytes": 0,
        "awaiting_collection": {"items": 0, "bytes": 0, "collected_after_removals": None},
        "freed_bytes": 0,
    }


def _checkpoint_orphans(
    store: Store, repair: bool, repaired: list[str], settings: config.Settings
) -> dict[str, Any]:
    """Checkpoint content no checkpoint references: waiting for the collection retention owes
    since it removed a checkpoint (collected every eighth of `checkpoints.max_count` removals,
    so it is expected), or orphaned, when no collection is owed (a crash of an older engram, an
    edit by hand: nothing scheduled would remove it)."""
    from memory_core import checkpoints
    from memory_core.checkpoints import retention

    report = _no_checkpoint_content()
    tables = set(store.tables())
    if not {"checkpoints", "checkpoint_blobs", "checkpoint_trees"} <= tables:
        return report
    live = retention.Live()
    live.mark(
        store, [str(row[0]) for row in store.query("SELECT DISTINCT root_tree FROM checkpoints")]
    )
    live_trees, live_blobs = live.trees, live.blobs
    orphaned = 0
    orphaned_bytes = 0
    # Blobs stored before packing: hex keys, each with its own compressed data.
    for row in store.query("SELECT hash, stored_size FROM checkpoint_blobs"):
        if row["hash"] not in live_blobs and row["hash"] not in live_trees:
            orphaned += 1
            orphaned_bytes += int(row["stored_size"] or 0)
    if "checkpoint_objects" in tables:
        # Blobs stored since: raw 32-byte keys, large ones with their own data, small ones
        # inside a pack (a pack whose every member is unreferenced is freed whole).
        live_raw = {bytes.fromhex(h) for h in live_blobs}
        live_packs: set[int] = set()
        for row in store.query(
            "SELECT hash, pack, CASE WHEN pack IS NULL THEN length(data) ELSE 0 END AS n"
            " FROM checkpoint_objects"
        ):
            if bytes(row["hash"]) in live_raw:
                if row["pack"] is not None:
                    live_packs.add(int(row["pack"]))
                continue
            orphaned += 1
            orphaned_bytes += int(row["n"] or 0)
        if "checkpoint_packs" in tables:
            for row in store.query("SELECT id, length(data) AS n FROM checkpoint_packs"):
                if int(row["id"]) not in live_packs:
                    orphaned_bytes += int(row["n"] or 0)
    for row in store.query("SELECT hash, length(data) AS n FROM checkpoint_trees"):
        if row["hash"] not in live_trees:
            orphaned += 1
            orphaned_bytes += int(row["n"] or 0)
    if not orphaned:
        return report
    owed = retention.removals_before_collection(store, int(settings["checkpoints.max_count"]))
    if owed is None:
        report.update(orphaned=orphaned, orphaned_bytes=orphaned_bytes)
    else:
        report["awaiting_collection"] = {
            "items": orphaned,
            "bytes": orphaned_bytes,
            "collected_after_removals": owed,
        }
    if repair:
        report["freed_bytes"] = freed = checkpoints.gc(store)
        repaired.append(
            f"deleted {orphaned} unreferenced checkpoint blob(s)/tree(s), {freed:,} bytes"
        )
    return report


def _stray_files(store: Store, repair: bool, repaired: list[str], now: float) -> dict[str, Any]:
    exports = store.dir / "exports" / "sessions"
    orphaned: list[str] = []
    if exports.is_dir() and "sessions" in store.tables():
        known = {str(row[0]) for row in store.query("SELECT id FROM sessions")}
        for path in sorted(exports.glob("*.md")):
            # <date>_<session id>.md
            session_id = path.stem.split("_", 1)[1] if "_" in path.stem else path.stem
            if session_id not in known:
                orphaned.append(str(path.relative_to(store.root)))
    temps: list[str] = []
    for folder, _dirs, files in os.walk(store.dir):
        for name in files:
            if name.startswith(".") and name.endswith(".tmp"):
                path = Path(folder) / name
                try:
                    age = now - path.stat().st_mtime
                except OSError:
                    continue
                if age > STALE_TEMP_SECONDS:
                    temps.append(str(path.relative_to(store.root)))
    removed: list[str] = []
    if repair:
        for rel in [*orphaned, *temps]:
            try:
                (store.root / rel).unlink()
                removed.append(rel)
            except FileNotFoundError:
                continue
        if removed:
            repaired.append(f"removed {len(removed)} stray file(s) from .engram")
    return {"orphaned_exports": orphaned, "stale_temp_files": temps, "removed": removed}


def _annotation_anchors(store: Store, repair: bool, repaired: list[str]) -> dict[str, Any]:
    from memory_core.gotchas import records
    from memory_core.gotchas.records import line_hash
    from memory_core.gotchas.scan import annotation_gotcha, find_annotations

    if "gotcha_anchors" not in store.tables():
        return {"stale": [], "resynced": []}
    rows = store.query(
        "SELECT a.path, a.line, a.content_hash FROM gotcha_anchors a JOIN gotchas g"
        " ON g.id = a.gotcha_id WHERE g.source_type = 'annotation'"
    )
    stale: set[str] = set()
    texts: dict[str, list[str] | None] = {}
    for row in rows:
        path = str(row["path"])
        if path not in texts:
            try:
                texts[path] = (store.root / path).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                texts[path] = None
        lines = texts[path]
        if lines is None:
            continue  # a file that is gone is drift's to report, not a stale anchor
        line = int(row["line"])
        current = lines[line] if line < len(lines) else None
        if current is None or line_hash(current) != row["content_hash"]:
            stale.add(path)
    resynced: list[str] = []
    if repair:
        now = clock.now()
        for path in sorted(stale):
            lines = texts[path] or []
            found = [annotation_gotcha(path, a, now) for a in find_annotations(path, lines)]
            records.sync_annotations(store, path, found, now=now)
            resynced.append(path)
        if resynced:
            repaired.append(f"re-read the gotcha comments of {len(resynced)} file(s)")
    return {"stale": sorted(stale), "resynced": resynced}


# -- size ----------------------------------------------------------------------------------------


def size_breakdown(store: Store) -> dict[str, Any]:
    """Bytes by area (tables with their indexes and full-text shadow tables) and by file."""
    owners: dict[str, str] = {}
    for row in store.query("SELECT name, tbl_name FROM sqlite_master WHERE name IS NOT NULL"):
        owners[str(row["name"])] = str(row["tbl_name"])
    fts = [name for name, _content in fts_indexes(store)]
    by_table: dict[str, int] = {}
    try:
        pages = store.query("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name")
    except sqlite3.DatabaseError:  # SQLite built without the dbstat table
        pages = []
    for row in pages:
        name = owners.get(str(row["name"]), str(row["name"]))
        for index in fts:
            if name == index or name.startswith(f"{index}_"):
                name = index
        by_table[name] = by_table.get(name, 0) + int(row["bytes"] or 0)
    areas: dict[str, int] = {}
    for table, nbytes in by_table.items():
        base = table
        for index in fts:
            if table == index:
                # An FTS index belongs to the table it indexes (memories_fts -> memory).
                base = index.removesuffix("_fts")
        area = area_of(base)
        areas[area] = areas.get(area, 0) + nbytes
    files = {}
    for name in ("engram.db", "engram.db-wal", "engram.log"):
        path = store.dir / name
        if path.exists():
            files[name] = path.stat().st_size
    for folder in ("exports", "team"):
        path = store.dir / folder
        if path.is_dir():
            files[f"{folder}/"] = sum(
                (Path(d) / f).stat().st_size for d, _s, fs in os.walk(path) for f in fs
            )
    largest = sorted(by_table.items(), key=lambda item: -item[1])[:8]
    total = sum(files.values())
    return {
        "total_bytes": total,
        "areas": dict(sorted(areas.items(), key=lambda item: -item[1])),
        "largest_tables": [{"table": t, "bytes": b} for t, b in largest],
        "files": files,
        "measured_at": clock.iso(clock.now()),
    }
