"""The store side: blobs (small ones packed together), listings, the stat cache and the
running total of bytes, read back verified against their hashes."""

from __future__ import annotations

import collections
import contextlib
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from memory_core.checkpoints.trees import (
    LISTING_LEVEL,
    CorruptCheckpointError,
    Entry,
    Tree,
    compress,
    decode_tree,
    decompress,
    sha,
)
from memory_core.store import Store

# -- the store side ----------------------------------------------------------------------------


# Blobs up to this size are packed together (many per row, compressed as one: similar files
# compress far better together, and a row per tiny blob wastes pages), as git packs objects.
PACK_MAX_BLOB = 32 * 1024
PACK_RAW_BYTES = 256 * 1024


class Writer:
    """Collects new blobs, trees and stat-cache rows, then writes them in one transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.blobs: dict[str, tuple[int, bytes]] = {}  # stored alone: (size, zstd)
        self.packs: list[tuple[bytes, int, list[tuple[str, int, int]]]] = []  # zstd, raw, members
        self._pending: list[tuple[str, bytes]] = []
        self._pending_bytes = 0
        self._pending_seen: set[str] = set()
        self.trees: dict[str, bytes] = {}
        self.decoded: dict[str, Tree] = {}  # the new listings as built (a rollback compares them)
        self.encoded: dict[str, bytes] = {}  # the same, as their bytes, when not decoded
        self.superseded: set[str] = set()  # the base's listings these replace
        self.index: dict[str, tuple[int, int, int, int, str, int]] = {}
        # Paths found but not read (permissions, a file that kept changing): path -> why.
        self.unreadable: dict[str, str] = {}
        self.added_bytes = 0
        self._legacy = store.query_one("SELECT 1 FROM checkpoint_blobs LIMIT 1") is not None

    def blob(self, data: bytes) -> str:
        digest = sha(data)
        if digest in self.blobs or digest in self._pending_seen:
            return digest
        if len(data) > PACK_MAX_BLOB:
            # (Not compressed again when stored: a renamed or copied large file.)
            if not _stored(self.store, [digest], legacy=self._legacy):
                self.blobs[digest] = (len(data), compress(data))
            return digest
        # Whether the store already holds it is asked when the pack is sealed, for all its
        # blobs at once (a query per blob was an eighth of a first checkpoint of 50,000 files).
        self._pending.append((digest, data))
        self._pending_seen.add(digest)
        self._pending_bytes += len(data)
        if self._pending_bytes >= PACK_RAW_BYTES:
            self._seal()
        return digest

    def _seal(self) -> None:
        """Compress the pending small blobs the store does not hold yet into one pack (kept
        compressed until the flush)."""
        stored = _stored(self.store, [digest for digest, _ in self._pending], legacy=self._legacy)
        new = [(digest, data) for digest, data in self._pending if digest not in stored]
        self._pending, self._pending_bytes = [], 0
        if not new:
            return
        members: list[tuple[str, int, int]] = []
        offset = 0
        for digest, data in new:
            members.append((digest, offset, len(data)))
            offset += len(data)
        self.packs.append((compress(b"".join(data for _, data in new)), offset, members))

    def tree(self, tree: Tree) -> str:
        return self.listing(tree.encode(), tree)

    def listing(self, data: bytes, decoded: Tree | None) -> str:
        """Store a listing's bytes; `decoded`, its entries, when the caller has them."""
        digest = sha(data)
        if digest not in self.trees:
            self.trees[digest] = compress(data, LISTING_LEVEL)
            if decoded is not None:
                self.decoded[digest] = Tree(dict(decoded.entries))
            else:
                self.encoded[digest] = data
        return digest

    def flush(self, db: Any) -> None:
        self._seal()
        for digest, (size, packed) in self.blobs.items():
            cursor = db.execute(
                "INSERT OR IGNORE INTO checkpoint_objects (hash, size, pack, offset, data) "
                "VALUES (?, ?, NULL, 0, ?)",
                (bytes.fromhex(digest), size, packed),
            )
            if cursor.rowcount:
                self.added_bytes += len(packed)
        for packed, raw_size, members in self.packs:
            pack_id = db.execute(
                "INSERT INTO checkpoint_packs (raw_size, data) VALUES (?, ?)", (raw_size, packed)
            ).lastrowid
            # Another process may have stored some of these meanwhile: theirs are kept, and
            # this pack's copies are simply never read.
            db.executemany(
                "INSERT OR IGNORE INTO checkpoint_objects (hash, size, pack, offset, data) "
                "VALUES (?, ?, ?, ?, NULL)",
                [(bytes.fromhex(d), size, pack_id, offset) for d, offset, size in members],
            )
            self.added_bytes += len(packed)
        for digest, packed in self.trees.items():
            cursor = db.execute(
                "INSERT OR IGNORE INTO checkpoint_trees (hash, data) VALUES (?, ?)",
                (digest, packed),
            )
            if cursor.rowcount:
                self.added_bytes += len(packed)
        if self.added_bytes:
            count_stored(db, self.added_bytes)
        if self.index:
            db.executemany(
                "INSERT OR REPLACE INTO checkpoint_index "
                "(path, mtime_ns, size, ino, mode, hash, ctime_ns) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (stored_path(path), *row[:4], bytes.fromhex(row[4]), row[5])
                    for path, row in self.index.items()
                ],
            )


def stored_path(path: str) -> str:
    """A path as the stat cache holds it. SQLite text is UTF-8, so a name that is not UTF-8 on
    disk (its other bytes held as surrogate escapes, as `os.fsdecode` gives them) has each such
    byte written as NUL and two hex digits: no file name holds a NUL, so the text means one
    path only, and a folder's rows still share its prefix."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(
            f"\0{ord(char) - 0xDC00:02x}" if "\udc80" <= char <= "\udcff" else char for char in path
        )
    return path


_ESCAPED = re.compile("\0([0-9a-f]{2})")


def loaded_path(text: str) -> str:
    """The path `stored_path` wrote as `text`."""
    if "\0" not in text:
        return text
    return _ESCAPED.sub(lambda found: chr(0xDC00 + int(found.group(1), 16)), text)


def _stored(store: Store, digests: list[str], *, legacy: bool) -> set[str]:
    """Which of these blobs the store holds (a query per 500, under SQLite's parameter limit)."""
    found: set[str] = set()
    for start in range(0, len(digests), 500):
        chunk = digests[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows = store.query(
            f"SELECT hash FROM checkpoint_objects WHERE hash IN ({marks})",
            tuple(bytes.fromhex(digest) for digest in chunk),
        )
        found.update(bytes(row[0]).hex() for row in rows)
        if legacy:  # blobs stored before packing (schema 0011) keep their rows
            rows = store.query(
                f"SELECT hash FROM checkpoint_blobs WHERE hash IN ({marks})", tuple(chunk)
            )
            found.update(str(row[0]) for row in rows)
    return found


def stat_cache(store: Store, under: str = "") -> dict[str, tuple[int, int, int, int, str, int]]:
    """The stat cache (of the folder `under`): path -> (mtime_ns, size, inode, mode, hash,
    ctime_ns); a negative mtime_ns marks a row hashed within the racy window (`build.stat_row`).
    The change time is compared as git's index compares it: every write moves it, and so does
    putting the mtime back (`touch -r`, `cp -p`)."""
    sql = "SELECT path, mtime_ns, size, ino, mode, hash, ctime_ns FROM checkpoint_index"
    under = stored_path(under)
    # '0' follows '/' in byte order: the range holds exactly the paths below `under/`.
    rows = (
        store.query(sql + " WHERE path > ? AND path < ?", (under + "/", under + "0"))
        if under
        else store.query(sql)
    )
    return {
        loaded_path(row[0]): (row[1], row[2], row[3], row[4], bytes(row[5]).hex(), row[6])
        for row in rows
    }


def stat_cache_of(
    store: Store, paths: Iterable[str]
) -> dict[str, tuple[int, int, int, int, str, int]]:
    """The stat cache rows of these paths (those it has)."""
    wanted = [stored_path(path) for path in paths]
    found: dict[str, tuple[int, int, int, int, str, int]] = {}
    for start in range(0, len(wanted), 500):  # under SQLite's limit on bound parameters
        chunk = wanted[start : start + 500]
        rows = store.query(
            "SELECT path, mtime_ns, size, ino, mode, hash, ctime_ns FROM checkpoint_index "
            f"WHERE path IN ({','.join('?' * len(chunk))})",
            tuple(chunk),
        )
        found.update(
            {
                loaded_path(row[0]): (row[1], row[2], row[3], row[4], bytes(row[5]).hex(), row[6])
                for row in rows
            }
        )
    return found


_STORED_KEY = "checkpoints.stored_bytes"


def count_stored(db: Any, delta: int) -> None:
    """Keep the running total of checkpoint bytes, so the store cap is checked without a scan."""
    db.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
        "value = CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER)",
        (_STORED_KEY, str(delta)),
    )


def stored_bytes(store: Store) -> int:
    """Bytes checkpoint blobs and trees take in the store (the running total)."""
    row = store.query_one("SELECT value FROM store_meta WHERE key = ?", (_STORED_KEY,))
    return int(row[0]) if row is not None else 0


class TreeCache(dict[str, Tree]):
    """Listings read and verified, or written, by digest, kept by a long-running process (the
    language server) between checkpoints: a listing's digest names its content, so an entry is
    never stale, and the next checkpoint starts from the listings the previous one wrote (and
    drops those it replaced). Past `limit`, the least recently used goes."""

    def __init__(self, limit: int = 512) -> None:
        super().__init__()
        self.limit = limit  # a listing of 100 files takes about 17 kB decoded
        self._lock = threading.Lock()  # the server's commands run on a thread pool

    def __setitem__(self, digest: str, tree: Tree) -> None:
        with self._lock:
            if digest not in self and len(self) >= self.limit:
                del self[next(iter(self))]  # the least recently used first
            super().__setitem__(digest, tree)

    def get(self, digest: str, default: Any = None) -> Any:
        """The listing, now the most recently used (a folder the user works in stays)."""
        with self._lock:
            tree = super().pop(digest, None)
            if tree is None:
                return default
            super().__setitem__(digest, tree)
            return tree

    def pop(self, digest: str, default: Any = None) -> Any:
        with self._lock:  # not between another thread's choice of what to evict and its del
            return super().pop(digest, default)

    def update(self, trees: Any = (), /, **_: Tree) -> None:
        for digest, tree in dict(trees).items():
            self[digest] = tree

    def warm(self, store: Store) -> int:
        """Read the latest checkpoint's listings in, shallow folders first, until the cache is
        full; returns how many were read. A checkpoint then reads no listing of a folder the
        user had not touched since the server started (git keeps its whole index the same way)."""
        row = store.query_one(
            "SELECT root_tree FROM checkpoints ORDER BY created_at DESC, rowid DESC LIMIT 1"
        )
        queue = collections.deque([(str(row[0]), "")] if row is not None else [])
        read = 0
        while queue and len(self) < self.limit:
            digest, where = queue.popleft()
            tree = self.get(digest)
            if tree is None:
                tree = self[digest] = load_tree(store, digest, where)
                read += 1
            queue.extend(
                (entry.hash, f"{where}{name}/")
                for name, entry in tree.entries.items()
                if entry.kind == "d"
            )
        return read


def load_tree(
    store: Store,
    digest: str,
    where: str = "",
    *,
    validate: bool = True,
    cache: dict[str, Tree] | None = None,
) -> Tree:
    """A stored listing, verified against its digest. With `cache` (one operation's), a listing
    read once is not read again; callers get their own copy to change."""
    if cache is not None:
        known = cache.get(digest)
        if known is None:
            known = cache[digest] = load_tree(store, digest, where)
        return Tree(dict(known.entries))
    return decode_tree(load_listing(store, digest, where), where, validate=validate)


def load_listings(store: Store, digests: Iterable[str]) -> dict[str, bytes]:
    """The bytes of these listings that the store holds intact, by digest, verified, read with
    a query per 500; one left out (missing, corrupt) is for `load_listing` to report."""
    wanted = list(dict.fromkeys(digests))
    found: dict[str, bytes] = {}
    for start in range(0, len(wanted), 500):  # under SQLite's limit on bound parameters
        chunk = wanted[start : start + 500]
        rows = store.query(
            f"SELECT hash, data FROM checkpoint_trees WHERE hash IN ({','.join('?' * len(chunk))})",
            tuple(chunk),
        )
        for digest, packed in rows:
            with contextlib.suppress(Exception):
                data = decompress(packed)
                if sha(data) == digest:
                    found[digest] = data
    return found


def load_listing(store: Store, digest: str, where: str = "") -> bytes:
    """A stored listing's bytes, verified against its digest."""
    row = store.query_one("SELECT data FROM checkpoint_trees WHERE hash = ?", (digest,))
    if row is None:
        raise CorruptCheckpointError(
            f"the checkpoint's manifest is incomplete: the listing of {where or '/'} is missing",
            hint="it was refused; nothing was written",
        )
    try:
        data = decompress(row[0])
    except Exception:
        raise CorruptCheckpointError(
            f"the checkpoint's manifest is corrupt: the listing of {where or '/'} cannot be read",
            hint="it was refused; nothing was written",
        ) from None
    if sha(data) != digest:
        raise CorruptCheckpointError(
            f"the checkpoint's manifest is corrupt: the listing of {where or '/'} does not match its hash",
            hint="it was refused; nothing was written",
        )
    return data


_PACKS: dict[tuple[str, int], bytes] = {}
_PACKS_KEPT = 8


def _pack(store: Store, pack_id: int) -> bytes | None:
    """A pack's content, decompressed (the last few are kept: a rollback reads neighbours)."""
    key = (str(store.dir), pack_id)
    data = _PACKS.get(key)
    if data is None:
        row = store.query_one("SELECT data FROM checkpoint_packs WHERE id = ?", (pack_id,))
        if row is None:
            return None
        try:
            data = decompress(row[0])
        except Exception:
            return None
        if len(_PACKS) >= _PACKS_KEPT:
            _PACKS.pop(next(iter(_PACKS)))
        _PACKS[key] = data
    return data


def forget_packs() -> None:
    """Drop the decompressed packs kept in memory (garbage collection rewrote or removed some)."""
    _PACKS.clear()


def read_blobs(store: Store, digests: Iterable[str]) -> dict[str, bytes]:
    """The contents of these blobs that the store holds intact, by digest, verified against
    their hashes, read with a query per 500 (a rollback of 100 files asked 100 times). A blob
    left out (missing, corrupt, stored before packing) is for `read_blob` to read or report."""
    wanted = list(dict.fromkeys(digests))
    rows: list[Any] = []
    for start in range(0, len(wanted), 500):  # under SQLite's limit on bound parameters
        chunk = []
        for digest in wanted[start : start + 500]:
            with contextlib.suppress(ValueError):
                chunk.append(bytes.fromhex(digest))
        if chunk:
            rows += store.query(
                "SELECT hash, size, pack, offset, data FROM checkpoint_objects "
                f"WHERE hash IN ({','.join('?' * len(chunk))})",
                tuple(chunk),
            )
    found: dict[str, bytes] = {}
    # A pack's members in a row: the few packs kept decompressed are each read once.
    for row in sorted(rows, key=lambda row: -1 if row["pack"] is None else int(row["pack"])):
        digest = bytes(row["hash"]).hex()
        data = _object_data(store, row)
        if data is not None and sha(data) == digest:
            found[digest] = data
    return found


def _object_data(store: Store, row: Any) -> bytes | None:
    """A checkpoint_objects row's content (None: its pack or its data cannot be read)."""
    if row["pack"] is not None:
        pack = _pack(store, int(row["pack"]))
        if pack is None:
            return None
        return pack[int(row["offset"]) : int(row["offset"]) + int(row["size"])]
    with contextlib.suppress(Exception):
        return decompress(row["data"])
    return None


def read_blob(store: Store, digest: str, *, path: str = "") -> bytes:
    """A blob's content, verified against its hash."""
    data: bytes | None = None
    found = False
    try:
        raw = bytes.fromhex(digest)
    except ValueError:
        raw = b""
    row = store.query_one(
        "SELECT size, pack, offset, data FROM checkpoint_objects WHERE hash = ?", (raw,)
    )
    if row is not None:
        found = True
        data = _object_data(store, row)
    else:
        old = store.query_one("SELECT data FROM checkpoint_blobs WHERE hash = ?", (digest,))
        if old is not None:
            found = True
            with contextlib.suppress(Exception):
                data = decompress(old[0])
    if not found:
        raise CorruptCheckpointError(
            f"the checkpoint's content of {path or digest[:12]} is missing from the store",
            hint="it was refused; nothing was written",
        )
    if data is None or sha(data) != digest:
        raise CorruptCheckpointError(
            f"the checkpoint's content of {path or digest[:12]} is corrupt",
            hint="it was refused; nothing was written",
        )
    return data


def walk_manifest(store: Store, root_tree: str) -> Iterator[tuple[str, Entry]]:
    stack = [("", root_tree)]
    while stack:
        prefix, digest = stack.pop()
        tree = load_tree(store, digest, prefix + "/" if prefix else "")
        for name, entry in tree.entries.items():
            rel = f"{prefix}/{name}" if prefix else name
            if entry.kind == "d":
                stack.append((rel, entry.hash))
            else:
                yield rel, entry


class TreeLookup:
    """Entries of a stored tree by path, reading only the folders on the way (verified)."""

    def __init__(self, store: Store, root_tree: str) -> None:
        self.store = store
        self.trees: dict[str, Tree] = {}
        self.root_tree = root_tree

    def _tree(self, rel_dir: str) -> Tree | None:
        if rel_dir in self.trees:
            return self.trees[rel_dir]
        if not rel_dir:
            tree: Tree | None = load_tree(self.store, self.root_tree)
        else:
            parent, _, name = rel_dir.rpartition("/")
            holder = self._tree(parent)
            entry = holder.entries.get(name) if holder is not None else None
            tree = (
                load_tree(self.store, entry.hash, rel_dir + "/")
                if entry is not None and entry.kind == "d"
                else None
            )
        if tree is not None:
            self.trees[rel_dir] = tree
        return tree

    def get(self, rel: str) -> Entry | None:
        parent, _, name = rel.rpartition("/")
        tree = self._tree(parent)
        entry = tree.entries.get(name) if tree is not None else None
        return entry if entry is not None and entry.kind != "d" else None
