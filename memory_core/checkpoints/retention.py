"""Retention (count, age, store cap) and garbage collection of what no checkpoint uses."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memory_core import clock, config
from memory_core.checkpoints.history import find_row
from memory_core.checkpoints.storage import count_stored, forget_packs, load_tree, stored_bytes
from memory_core.checkpoints.trees import CorruptCheckpointError, compress, decompress
from memory_core.store import Store

# -- retention and garbage collection -----------------------------------------------------------


def delete(store: Store, ref: str) -> dict[str, Any]:
    row = find_row(store, ref)
    with store.transaction() as db:
        db.execute("DELETE FROM checkpoints WHERE id = ?", (row["id"],))
    freed = gc(store)
    return {"id": row["id"], "deleted": True, "freed_bytes": freed}


# Retention collects garbage once this share of `checkpoints.max_count` was removed since the
# last collection: the collection's cost, which grows with the checkpoints kept, is then spread
# over as many checkpoints, and the garbage waiting is at most that share of what they added.
GC_SHARE = 8
_REMOVED_KEY = "checkpoints.removed_since_gc"


def enforce_retention(
    store: Store, settings: config.Settings, *, now: float | None = None, keep: str | None = None
) -> list[str]:
    """Remove checkpoints over the count, age and store-cap limits (never `keep`), then GC."""
    ts = clock.now() if now is None else now
    rows = store.query(
        "SELECT id, created_at FROM checkpoints ORDER BY created_at DESC, rowid DESC"
    )
    max_count = int(settings["checkpoints.max_count"])
    cutoff = ts - float(settings["checkpoints.max_age_days"]) * 86400
    doomed = [
        row["id"]
        for index, row in enumerate(rows)
        if row["id"] != keep and (index >= max_count or row["created_at"] < cutoff)
    ]
    if doomed:
        with store.transaction() as db:
            db.executemany("DELETE FROM checkpoints WHERE id = ?", [(d,) for d in doomed])
            db.execute(
                "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
                "SET value = CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER)",
                (_REMOVED_KEY, str(len(doomed))),
            )
    # Collecting walks every listing of every checkpoint kept (a second or more in a large
    # workspace), while one removed checkpoint frees little, and once the count limit is reached
    # every new checkpoint removes one. So garbage is collected once enough checkpoints went
    # (GC_SHARE), or when the store is over its cap; until then it only takes space.
    cap = int(settings["checkpoints.store_cap_bytes"])
    owed = removals_before_collection(store, max_count)
    if owed is not None:
        over_cap = stored_bytes(store) > cap
        if over_cap or (owed == 0 and not _collect_after_the_answer(store)):
            gc(store)
    while stored_bytes(store) > cap:
        oldest = store.query_one(
            "SELECT id FROM checkpoints WHERE id != ? ORDER BY created_at, rowid LIMIT 1",
            (keep or "",),
        )
        if oldest is None:
            break  # only the checkpoint just made is left: keep it even over the cap
        with store.transaction() as db:
            db.execute("DELETE FROM checkpoints WHERE id = ?", (oldest["id"],))
        doomed.append(oldest["id"])
        gc(store)
    return doomed


def _collect_after_the_answer(store: Store) -> bool:
    """In a process that answers first (the resident server's child), leave a collection owed
    by the count limit for after the answer: it walks every listing of every checkpoint kept
    (half a second and more in a large workspace), and nothing of the answer depends on it.
    Whatever opens the store next waits for it (`store.later`). False elsewhere: collect now.
    (Over the store's cap, the collection is needed before anything else: never left.)"""
    from memory_core import store as stores

    if not stores.answers_first():
        return False
    stores.later_with_store(store.root, gc, "checkpoint garbage not collected")
    return True


def removals_before_collection(store: Store, max_count: int) -> int | None:
    """How many more checkpoints retention removes before it collects what no checkpoint needs
    (0: the next checkpoint collects); None when no collection is owed, as no checkpoint was
    removed since the last one."""
    flag = store.query_one("SELECT value FROM store_meta WHERE key = 'checkpoints.gc_needed'")
    if flag is None or flag[0] != "1":
        return None
    removed = store.query_one("SELECT value FROM store_meta WHERE key = ?", (_REMOVED_KEY,))
    if removed is None:  # removed by something else (a delete, an older engram): collect now
        return 0
    return max(0, max(1, max_count // GC_SHARE) - int(removed[0]))


class Live:
    """What checkpoints reference: listings and blobs by hash, marked from root listings."""

    def __init__(self) -> None:
        self.trees: set[str] = set()
        self.blobs: set[str] = set()

    def mark(self, store: Store, roots: Iterable[str]) -> None:
        """Add every listing and blob reachable from `roots`; marked listings are not read again
        (a missing or damaged one is skipped: its checkpoint reports it on rollback)."""
        stack = list(roots)
        while stack:
            digest = stack.pop()
            if digest in self.trees:
                continue
            self.trees.add(digest)
            try:
                tree = load_tree(store, digest, validate=False)
            except CorruptCheckpointError:
                continue
            for entry in tree.entries.values():
                (stack.append(entry.hash) if entry.kind == "d" else self.blobs.add(entry.hash))


def gc(store: Store) -> int:
    """Delete blobs and trees no checkpoint references; returns the bytes freed."""
    live = Live()
    roots = "SELECT DISTINCT root_tree FROM checkpoints"
    # Marked without the write lock (it takes a second or more in a large workspace, and hooks
    # must not wait that long)...
    live.mark(store, [row[0] for row in store.query(roots)])
    freed = 0
    with store.transaction() as db:
        # ...then, holding it, again for checkpoints another process committed meanwhile: only
        # their new listings are read, and nothing they use is collected.
        live.mark(store, [row[0] for row in db.execute(roots).fetchall()])
        # What is stored is compared with what is live here, in sets: temporary tables of every
        # live hash and NOT IN deletes took most of a second for 50,000 files.
        live_raw = {bytes.fromhex(digest) for digest in live.blobs}
        live_text = live.blobs | live.trees
        freed += _delete_dead(db, "checkpoint_blobs", "hash", "stored_size", live_text)
        freed += _delete_dead(
            db,
            "checkpoint_objects",
            "hash",
            "CASE WHEN pack IS NULL THEN LENGTH(data) ELSE 0 END",  # packed: freed with the pack
            live_raw,
        )
        # A pack goes when none of its blobs is referenced any more.
        used = {
            pack
            for (pack,) in db.execute(
                "SELECT DISTINCT pack FROM checkpoint_objects WHERE pack IS NOT NULL"
            )
        }
        freed += _delete_dead(db, "checkpoint_packs", "id", "LENGTH(data)", used)
        freed += _repack_sparse(db)
        freed += _delete_dead(db, "checkpoint_trees", "hash", "LENGTH(data)", live_text)
        if freed:
            count_stored(db, -freed)
        db.execute(
            "DELETE FROM store_meta WHERE key IN ('checkpoints.gc_needed', ?)", (_REMOVED_KEY,)
        )
        # A stat-cache row whose blob is gone would let a later capture reference missing
        # content; forget it so that file is read again.
        stale = [
            (path,)
            for path, digest in db.execute("SELECT path, hash FROM checkpoint_index")
            if not isinstance(digest, bytes) or digest not in live_raw
        ]
        db.executemany("DELETE FROM checkpoint_index WHERE path = ?", stale)
    forget_packs()
    return freed


def _delete_dead(db: Any, table: str, key: str, size: str, live: set[Any]) -> int:
    """Delete the rows of `table` whose `key` is not in `live`; the bytes (`size`) they took."""
    dead = [
        (value, stored)
        for value, stored in db.execute(f"SELECT {key}, {size} FROM {table}")
        if value not in live
    ]
    db.executemany(f"DELETE FROM {table} WHERE {key} = ?", [(value,) for value, _ in dead])
    return sum(int(stored) for _, stored in dead)


def _repack_sparse(db: Any) -> int:
    """Rewrite packs less than half of whose bytes are still referenced; returns bytes freed.

    Without it a pack keeps every dead neighbour of one live blob, and the store cap, finding
    the space not freed, would remove checkpoint after checkpoint. (Blobs are not indexed by
    pack, which would take as much room as the pack column saves: each query below reads the
    blobs once, where a join per pack read them all for every pack.)
    """
    live_bytes = dict(
        db.execute(
            "SELECT pack, SUM(size) FROM checkpoint_objects WHERE pack IS NOT NULL GROUP BY pack"
        ).fetchall()
    )
    sparse = {
        pack: stored
        for pack, raw_size, stored in db.execute(
            "SELECT id, raw_size, LENGTH(data) FROM checkpoint_packs"
        ).fetchall()
        if live_bytes.get(pack, 0) * 2 < raw_size
    }
    if not sparse:
        return 0
    members: dict[int, list[tuple[bytes, int, int]]] = {pack: [] for pack in sparse}
    for pack, digest, offset, size in db.execute(
        "SELECT pack, hash, offset, size FROM checkpoint_objects WHERE pack IS NOT NULL "
        "ORDER BY pack, offset"
    ):
        if pack in members:
            members[pack].append((digest, offset, size))
    freed = 0
    for pack_id, stored in sparse.items():
        data = decompress(
            db.execute("SELECT data FROM checkpoint_packs WHERE id = ?", (pack_id,)).fetchone()[0]
        )
        kept, moves, offset = [], [], 0
        for digest, old_offset, size in members[pack_id]:
            kept.append(data[old_offset : old_offset + size])
            moves.append((offset, digest))
            offset += size
        if kept:
            packed = compress(b"".join(kept))
            new_id = db.execute(
                "INSERT INTO checkpoint_packs (raw_size, data) VALUES (?, ?)", (offset, packed)
            ).lastrowid
            db.executemany(
                "UPDATE checkpoint_objects SET pack = ?, offset = ? WHERE hash = ?",
                [(new_id, new_offset, digest) for new_offset, digest in moves],
            )
            freed -= len(packed)
        db.execute("DELETE FROM checkpoint_packs WHERE id = ?", (pack_id,))
        freed += int(stored)
    return freed


def space(store: Store) -> dict[str, int]:
    """Space checkpoints take: blobs stored (compressed), their original size, trees, count."""
    blobs = store.query_one(
        "SELECT COUNT(*), COALESCE(SUM(stored_size), 0), COALESCE(SUM(size), 0) FROM checkpoint_blobs"
    )
    objects = store.query_one(
        "SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0), COALESCE(SUM(size), 0) FROM checkpoint_objects"
    )
    packs = store.query_one("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM checkpoint_packs")
    trees = store.query_one("SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM checkpoint_trees")
    count = store.query_one("SELECT COUNT(*) FROM checkpoints")
    assert blobs is not None and objects is not None and packs is not None
    assert trees is not None and count is not None
    return {
        "checkpoints": int(count[0]),
        "blobs": int(blobs[0]) + int(objects[0]),
        "stored_bytes": int(blobs[1]) + int(objects[1]) + int(packs[0]) + int(trees[1]),
        "content_bytes": int(blobs[2]) + int(objects[2]),
    }
