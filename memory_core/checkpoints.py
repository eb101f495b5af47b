"""Checkpoints: the workspace's files at a moment, stored so that a rollback is byte-exact.

Storage, the way git stores a tree:
- a blob is one file's content, keyed by the SHA-256 of its bytes and stored zstd-compressed,
  so identical content is stored once across every checkpoint;
- a tree is one directory's listing (name, kind, mode, hash, size), content-addressed too, so a
  checkpoint only adds the trees on the path from a changed file up to the root;
- a checkpoint row names its root tree. `manifest()` flattens it to (path, mode, hash, size).

Cost grows with the files changed since the previous checkpoint, not with the workspace:
- the stat cache (`checkpoint_index`, git's index) remembers mtime, size and inode of every file
  when it was hashed, so a full scan reads only files whose stat changed;
- with a `ChangeJournal` (kept by a process that watches the workspace: the language server)
  covering the time since the latest checkpoint, only the journal's paths are even looked at.

`.gitignore` files (nested ones too) and the `watch.exclude` setting are honoured; `.git/` and
`.engram/` are never captured. Files over `checkpoints.max_file_bytes` are left out and listed.
Retention (count, age, store cap) removes old checkpoints and collects unreferenced blobs.

Rollback is planned first (`plan_rollback`: every tree and blob verified, every path checked:
no `..`, no `.git`, no symbolic link on the way, nothing outside the root) and only then applied
(`apply_plan`), so a corrupt or hostile manifest is refused with nothing written. A front end
that owns open buffers (the language server) applies those itself and passes them as `skip`.
`rollback()` does it all, after an automatic pre-rollback checkpoint that makes it undoable.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_core import clock, config, events, journal, limits
from memory_core import git as git_module
from memory_core.errors import EngramError, NotFoundError, UsageError
from memory_core.journal import ChangeJournal, IgnoreRules
from memory_core.redact import redact
from memory_core.store import Store
from memory_core.workspace import STORE_DIRNAME

NEVER_CAPTURED = frozenset({".git", STORE_DIRNAME})
# A file modified this close to when it was hashed may change again within the same mtime tick;
# such files are not trusted from the stat cache (git's "racy clean" problem).
RACY_SECONDS = 2.0
REASONS = ("manual", "burst", "turns", "pre-rollback", "auto")

limits.register(
    limits.Retention(
        "checkpoints", "created_at", "checkpoints.max_count", "checkpoints.max_age_days"
    )
)


class CorruptCheckpointError(EngramError):
    """A checkpoint's manifest or content cannot be trusted; nothing was written."""


# -- compression (zstandard is imported lazily: hooks import this module's neighbours) ---------


_ZSTD = threading.local()  # one compressor and decompressor per thread, made once


def _compress(data: bytes) -> bytes:
    compressor = getattr(_ZSTD, "compressor", None)
    if compressor is None:
        import zstandard

        compressor = _ZSTD.compressor = zstandard.ZstdCompressor(level=3)
    return bytes(compressor.compress(data))


def _decompress(data: bytes) -> bytes:
    decompressor = getattr(_ZSTD, "decompressor", None)
    if decompressor is None:
        import zstandard

        decompressor = _ZSTD.decompressor = zstandard.ZstdDecompressor()
    return bytes(decompressor.decompress(data, max_output_size=1 << 31))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- what a file looks like --------------------------------------------------------------------


@dataclass(slots=True)
class Entry:
    """One name in a tree: a file ('f'), a symbolic link ('l') or a directory ('d')."""

    kind: str
    mode: int
    hash: str
    size: int
    files: int = 1

    def as_list(self, name: str) -> list[Any]:
        return [name, self.kind, self.mode, self.hash, self.size, self.files]


@dataclass
class Tree:
    entries: dict[str, Entry] = field(default_factory=dict)

    def encode(self) -> bytes:
        rows = [self.entries[name].as_list(name) for name in sorted(self.entries)]
        return json.dumps(rows, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def totals(self) -> tuple[int, int]:
        files = sum(e.files for e in self.entries.values())
        size = sum(e.size for e in self.entries.values())
        return files, size


def _valid_name(name: Any) -> bool:
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
        and name not in NEVER_CAPTURED
    )


def _decode_tree(data: bytes, where: str, *, validate: bool = True) -> Tree:
    """A stored listing. `validate` checks every name and field: always before anything is
    written from it (rollback, manifest); capture, which only re-encodes listings, skips it."""
    try:
        rows = json.loads(data)
        tree = Tree()
        if not validate:
            tree.entries = {row[0]: Entry(row[1], row[2], row[3], row[4], row[5]) for row in rows}
            return tree
        for name, kind, mode, digest, size, files in rows:
            if not _valid_name(name):
                raise CorruptCheckpointError(
                    f"the checkpoint names an unsafe path {where}{name!r}",
                    hint="it was refused; nothing was written",
                )
            if (
                kind not in ("f", "l", "d")
                or not isinstance(digest, str)
                or not isinstance(mode, int)
            ):
                raise ValueError(f"bad entry {name!r}")
            tree.entries[name] = Entry(kind, int(mode), digest, int(size), int(files))
        return tree
    except CorruptCheckpointError:
        raise
    except (ValueError, TypeError) as exc:
        raise CorruptCheckpointError(
            f"the checkpoint's manifest is corrupt at {where or '/'}: {exc}",
            hint="it was refused; nothing was written",
        ) from None


# -- scanning ----------------------------------------------------------------------------------


@dataclass
class _Found:
    kind: str
    mode: int
    size: int
    mtime_ns: int
    ino: int


@dataclass
class Scan:
    """Files found on disk: path -> what lstat said; plus those over the size cap."""

    files: dict[str, _Found] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def _classify(st: os.stat_result) -> str | None:
    if stat.S_ISREG(st.st_mode):
        return "f"
    if stat.S_ISLNK(st.st_mode):
        return "l"
    if stat.S_ISDIR(st.st_mode):
        return "d"
    return None  # sockets, fifos, devices: not content


def scan(root: Path, rules: IgnoreRules, max_file_bytes: int, under: str = "") -> Scan:
    """Walk the workspace (or the folder `under` it), honouring the ignore rules."""
    found = Scan()

    def walk(rel_dir: str, chain: list[tuple[str, Any]]) -> None:
        spec = rules.spec_for(rel_dir)
        if spec is not None and (not chain or chain[-1][0] != rel_dir):
            chain = [*chain, (rel_dir, spec)]
        try:
            iterator = os.scandir(root / rel_dir if rel_dir else root)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return
        with iterator as entries:
            for entry in entries:
                name = entry.name
                if name in NEVER_CAPTURED:
                    continue
                rel = f"{rel_dir}/{name}" if rel_dir else name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = _classify(st)
                if kind is None:
                    continue
                if rules.ignored(rel, kind == "d", chain):
                    continue
                if kind == "d":
                    walk(rel, chain)
                    continue
                if kind == "f" and st.st_size > max_file_bytes:
                    found.skipped.append(rel)
                    continue
                found.files[rel] = _Found(
                    kind, stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ino
                )

    walk(under, rules.chain_for(under.rsplit("/", 1)[0] if "/" in under else "") if under else [])
    return found


def _read(root: Path, rel: str, kind: str) -> bytes:
    path = root / rel
    if kind == "l":
        return os.readlink(path).encode("utf-8", "surrogateescape")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


# -- the store side ----------------------------------------------------------------------------


# Blobs up to this size are packed together (many per row, compressed as one: similar files
# compress far better together, and a row per tiny blob wastes pages), as git packs objects.
PACK_MAX_BLOB = 32 * 1024
PACK_RAW_BYTES = 256 * 1024


class _Writer:
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
        self.index: dict[str, tuple[int, int, int, int, str]] = {}
        self.added_bytes = 0

    def blob(self, data: bytes) -> str:
        digest = _sha(data)
        if digest in self.blobs or digest in self._pending_seen or _has_blob(self.store, digest):
            return digest
        if len(data) > PACK_MAX_BLOB:
            self.blobs[digest] = (len(data), _compress(data))
            return digest
        self._pending.append((digest, data))
        self._pending_seen.add(digest)
        self._pending_bytes += len(data)
        if self._pending_bytes >= PACK_RAW_BYTES:
            self._seal()
        return digest

    def _seal(self) -> None:
        """Compress the pending small blobs into one pack (kept compressed until the flush)."""
        if not self._pending:
            return
        members: list[tuple[str, int, int]] = []
        offset = 0
        for digest, data in self._pending:
            members.append((digest, offset, len(data)))
            offset += len(data)
        self.packs.append((_compress(b"".join(d for _, d in self._pending)), offset, members))
        self._pending, self._pending_bytes = [], 0

    def tree(self, tree: Tree) -> str:
        data = tree.encode()
        digest = _sha(data)
        if digest not in self.trees:
            self.trees[digest] = _compress(data)
            self.decoded[digest] = Tree(dict(tree.entries))
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
            _count_stored(db, self.added_bytes)
        if self.index:
            db.executemany(
                "INSERT OR REPLACE INTO checkpoint_index (path, mtime_ns, size, ino, mode, hash) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(path, *row[:4], bytes.fromhex(row[4])) for path, row in self.index.items()],
            )


def _has_blob(store: Store, digest: str) -> bool:
    if store.query_one("SELECT 1 FROM checkpoint_objects WHERE hash = ?", (bytes.fromhex(digest),)):
        return True
    # Blobs stored before packing (schema 0011) keep their rows.
    return store.query_one("SELECT 1 FROM checkpoint_blobs WHERE hash = ?", (digest,)) is not None


def _stat_cache(store: Store, under: str = "") -> dict[str, tuple[int, int, int, int, str]]:
    """The stat cache (of the folder `under`): path -> (mtime_ns, size, inode, mode, hash)."""
    sql = "SELECT path, mtime_ns, size, ino, mode, hash FROM checkpoint_index"
    # '0' follows '/' in byte order: the range holds exactly the paths below `under/`.
    rows = (
        store.query(sql + " WHERE path > ? AND path < ?", (under + "/", under + "0"))
        if under
        else store.query(sql)
    )
    return {row[0]: (row[1], row[2], row[3], row[4], bytes(row[5]).hex()) for row in rows}


_STORED_KEY = "checkpoints.stored_bytes"


def _count_stored(db: Any, delta: int) -> None:
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


def _load_tree(
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
            known = cache[digest] = _load_tree(store, digest, where)
        return Tree(dict(known.entries))
    row = store.query_one("SELECT data FROM checkpoint_trees WHERE hash = ?", (digest,))
    if row is None:
        raise CorruptCheckpointError(
            f"the checkpoint's manifest is incomplete: the listing of {where or '/'} is missing",
            hint="it was refused; nothing was written",
        )
    try:
        data = _decompress(row[0])
    except Exception:
        raise CorruptCheckpointError(
            f"the checkpoint's manifest is corrupt: the listing of {where or '/'} cannot be read",
            hint="it was refused; nothing was written",
        ) from None
    if _sha(data) != digest:
        raise CorruptCheckpointError(
            f"the checkpoint's manifest is corrupt: the listing of {where or '/'} does not match its hash",
            hint="it was refused; nothing was written",
        )
    return _decode_tree(data, where, validate=validate)


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
            data = _decompress(row[0])
        except Exception:
            return None
        if len(_PACKS) >= _PACKS_KEPT:
            _PACKS.pop(next(iter(_PACKS)))
        _PACKS[key] = data
    return data


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
        if row["pack"] is not None:
            pack = _pack(store, int(row["pack"]))
            if pack is not None:
                data = pack[int(row["offset"]) : int(row["offset"]) + int(row["size"])]
        else:
            with contextlib.suppress(Exception):
                data = _decompress(row["data"])
    else:
        old = store.query_one("SELECT data FROM checkpoint_blobs WHERE hash = ?", (digest,))
        if old is not None:
            found = True
            with contextlib.suppress(Exception):
                data = _decompress(old[0])
    if not found:
        raise CorruptCheckpointError(
            f"the checkpoint's content of {path or digest[:12]} is missing from the store",
            hint="it was refused; nothing was written",
        )
    if data is None or _sha(data) != digest:
        raise CorruptCheckpointError(
            f"the checkpoint's content of {path or digest[:12]} is corrupt",
            hint="it was refused; nothing was written",
        )
    return data


def _walk_manifest(store: Store, root_tree: str) -> Iterator[tuple[str, Entry]]:
    stack = [("", root_tree)]
    while stack:
        prefix, digest = stack.pop()
        tree = _load_tree(store, digest, prefix + "/" if prefix else "")
        for name, entry in tree.entries.items():
            rel = f"{prefix}/{name}" if prefix else name
            if entry.kind == "d":
                stack.append((rel, entry.hash))
            else:
                yield rel, entry


# -- creating ----------------------------------------------------------------------------------


def _settings(store: Store, settings: config.Settings | None) -> config.Settings:
    return settings if settings is not None else config.load(store.root)


def _rules(root: Path, settings: config.Settings) -> IgnoreRules:
    return journal.checkpoint_rules(
        root,
        settings["watch.exclude"],
        include_secret_files=bool(settings["checkpoints.include_secret_files"]),
    )


def _new_id() -> str:
    return f"C-{uuid.uuid4().hex[:8]}"


def _hash_file(
    root: Path, rel: str, found: _Found, writer: _Writer, cache: dict[str, Any], now: float
) -> str | None:
    """The content hash of one file, from the stat cache when its stat is unchanged."""
    cached = cache.get(rel)
    if cached is not None and (cached[0], cached[1], cached[2], cached[3]) == (
        found.mtime_ns,
        found.size,
        found.ino,
        found.mode,
    ):
        return str(cached[4])
    try:
        data = _read(root, rel, found.kind)
    except OSError:
        return None  # vanished or unreadable between the scan and the read
    digest = writer.blob(data)
    # A file modified within the racy window may change again without its stat changing: its
    # row keeps the hash (so the next capture, which reads it again, can tell whether the content
    # really changed) but a stat that never matches (so it is read again).
    racy = found.mtime_ns / 1e9 >= now - RACY_SECONDS
    writer.index[rel] = (0 if racy else found.mtime_ns, found.size, found.ino, found.mode, digest)
    return digest


def _build_trees(files: dict[str, Entry], writer: _Writer) -> tuple[str, int, int]:
    """Trees for a flat path -> entry map; returns (root hash, files, bytes)."""
    dirs: dict[str, Tree] = {"": Tree()}
    for rel, entry in files.items():
        parent, _, name = rel.rpartition("/")
        tree = dirs.get(parent)
        if tree is None:
            # Create the chain of parents down to this one.
            parts = parent.split("/")
            for depth in range(1, len(parts) + 1):
                dirs.setdefault("/".join(parts[:depth]), Tree())
            tree = dirs[parent]
        tree.entries[name] = entry
    # Deepest first, so each directory's hash is known before its parent is encoded.
    for rel in sorted(dirs, key=lambda d: d.count("/") + (1 if d else 0), reverse=True):
        if not rel:
            continue
        tree = dirs[rel]
        count, size = tree.totals()
        parent, _, name = rel.rpartition("/")
        dirs[parent].entries[name] = Entry("d", 0, writer.tree(tree), size, count)
    count, size = dirs[""].totals()
    return writer.tree(dirs[""]), count, size


def _full(
    store: Store, settings: config.Settings, writer: _Writer, now: float
) -> tuple[str, int, int, int, list[str]]:
    rules = _rules(store.root, settings)
    found = scan(store.root, rules, int(settings["checkpoints.max_file_bytes"]))
    cache = _stat_cache(store)
    entries: dict[str, Entry] = {}
    changed = 0
    for rel, item in found.files.items():
        digest = _hash_file(store.root, rel, item, writer, cache, now)
        if digest is None:
            continue
        if rel not in cache or cache[rel][4] != digest:
            changed += 1
        entries[rel] = Entry(item.kind, item.mode, digest, item.size)
    root_hash, count, size = _build_trees(entries, writer)
    return root_hash, count, size, changed, found.skipped


def _incremental(
    store: Store,
    settings: config.Settings,
    writer: _Writer,
    base_tree: str,
    base_skipped: list[str],
    changed_paths: set[str],
    now: float,
    tree_cache: dict[str, Tree] | None = None,
) -> tuple[str, int, int, int, list[str]]:
    """A new root tree: the base with only `changed_paths` looked at again."""
    root = store.root
    rules = _rules(root, settings)
    cap = int(settings["checkpoints.max_file_bytes"])
    trees: dict[str, Tree] = {}
    dirty: set[str] = set()

    def tree_at(rel_dir: str, create: bool) -> Tree | None:
        if rel_dir in trees:
            return trees[rel_dir]
        if not rel_dir:
            trees[""] = _load_tree(store, base_tree, validate=False, cache=tree_cache)
            return trees[""]
        parent, _, name = rel_dir.rpartition("/")
        parent_tree = tree_at(parent, create)
        if parent_tree is None:
            return None
        entry = parent_tree.entries.get(name)
        if entry is not None and entry.kind == "d":
            trees[rel_dir] = _load_tree(
                store, entry.hash, rel_dir + "/", validate=False, cache=tree_cache
            )
        elif create:
            trees[rel_dir] = Tree()
            parent_tree.entries[name] = Entry("d", 0, "", 0, 0)
            _mark_dirty(parent)
        else:
            return None
        return trees[rel_dir]

    def _mark_dirty(rel_dir: str) -> None:
        while True:
            dirty.add(rel_dir)
            if not rel_dir:
                return
            rel_dir = rel_dir.rpartition("/")[0]

    def remove(rel: str) -> bool:
        parent, _, name = rel.rpartition("/")
        tree = tree_at(parent, create=False)
        if tree is not None and tree.entries.pop(name, None) is not None:
            _mark_dirty(parent)
            return True
        return False

    def put(rel: str, entry: Entry) -> bool:
        """Set one entry; whether that changed anything (a journal may list unchanged paths)."""
        parent, _, name = rel.rpartition("/")
        tree = tree_at(parent, create=True)
        assert tree is not None
        old = tree.entries.get(name)
        if old is None or (old.kind, old.mode, old.hash) != (entry.kind, entry.mode, entry.hash):
            tree.entries[name] = entry
            _mark_dirty(parent)
            return True
        return False

    def files_under(rel_dir: str) -> list[str]:
        """Files the base held below a folder (a file where the folder is: that one)."""
        parent, _, name = rel_dir.rpartition("/")
        holder = tree_at(parent, create=False)
        entry = holder.entries.get(name) if holder is not None else None
        if entry is None:
            return []
        if entry.kind != "d":
            return [rel_dir]
        found: list[str] = []
        tree = tree_at(rel_dir, create=False)
        for child, child_entry in list(tree.entries.items()) if tree is not None else []:
            child_rel = f"{rel_dir}/{child}"
            found += files_under(child_rel) if child_entry.kind == "d" else [child_rel]
        return found

    def replaced_ancestors(rel: str) -> list[str]:
        """Folders on the way to `rel` that the base holds as a file or link: a source that
        reports only files (watchman) names what is inside the new folder, not the file the
        folder replaced."""
        found, holder, prefix = [], tree_at("", create=False), ""
        for part in rel.split("/")[:-1]:
            entry = holder.entries.get(part) if holder is not None else None
            prefix = f"{prefix}/{part}" if prefix else part
            if entry is None:
                break
            if entry.kind != "d":
                found.append(prefix)
                break
            holder = tree_at(prefix, create=False)
        return found

    changed_paths = set(changed_paths)
    for rel in list(changed_paths):
        if "/" in rel and all(_valid_name(part) for part in rel.split("/")):
            changed_paths.update(replaced_ancestors(rel))
    skipped = set(base_skipped)
    changed = 0
    cache: dict[str, Any] = {}
    for rel in sorted(changed_paths):
        parts = rel.split("/")
        if any(not _valid_name(part) for part in parts):
            continue  # .git/..., .engram/...: never captured
        parent = rel.rpartition("/")[0]
        if any(
            rules.ignored("/".join(parts[:i]), True, rules.chain_for("/".join(parts[: i - 1])))
            for i in range(1, len(parts))
        ):
            continue
        try:
            st = os.lstat(root / rel)
        except (FileNotFoundError, NotADirectoryError):
            changed += remove(rel)
            skipped.discard(rel)
            continue
        kind = _classify(st)
        if kind is None or rules.ignored(rel, kind == "d", rules.chain_for(parent)):
            remove(rel)
            continue
        if kind == "d":
            # A new or replaced folder (a watcher may not have seen what was created in it
            # before its watch was in place): capture what is in it now, and drop what is gone.
            sub = scan(root, rules, cap, under=rel)
            skipped.update(sub.skipped)
            cache.update(_stat_cache(store, under=rel))  # unchanged files are not read
            for sub_rel, item in sub.files.items():
                digest = _hash_file(root, sub_rel, item, writer, cache, now)
                if digest is not None:
                    changed += put(sub_rel, Entry(item.kind, item.mode, digest, item.size))
            for old_rel in files_under(rel):
                if old_rel not in sub.files:
                    changed += remove(old_rel)
            continue
        if kind == "f" and st.st_size > cap:
            remove(rel)
            skipped.add(rel)
            continue
        skipped.discard(rel)
        item = _Found(kind, stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ino)
        digest = _hash_file(root, rel, item, writer, cache, now)
        if digest is None:
            remove(rel)
            continue
        changed += put(rel, Entry(kind, item.mode, digest, item.size))

    if "" not in trees:
        tree_at("", create=False)
    for rel_dir in sorted(dirty, key=lambda d: d.count("/") + (1 if d else 0), reverse=True):
        tree = trees[rel_dir]
        if rel_dir:
            parent, _, name = rel_dir.rpartition("/")
            parent_tree = trees[parent]
            if not tree.entries:
                parent_tree.entries.pop(name, None)  # git keeps no empty folders either
                continue
            count, size = tree.totals()
            parent_tree.entries[name] = Entry("d", 0, writer.tree(tree), size, count)
    count, size = trees[""].totals()
    return writer.tree(trees[""]), count, size, changed, sorted(skipped)


@dataclass
class Capture:
    """A checkpoint worked out but not yet written (a rollback plans against it first)."""

    writer: _Writer
    root_tree: str
    files: int
    size: int
    changed: int
    skipped: list[str]
    mode: str  # "incremental" | "scan"
    source: str  # what vouched for the interval: given | watcher | watchman | git | scan
    token: dict[str, Any]
    started: float
    ts: float


def _rules_fingerprint(root: Path, settings: config.Settings) -> str:
    """What decides which files belong in a checkpoint, besides `.gitignore` files."""
    info = git_module.git_dir(root)
    try:
        st = os.stat(info / "info" / "exclude") if info is not None else None
    except OSError:
        st = None
    parts = [
        list(settings["watch.exclude"]),
        bool(settings["checkpoints.include_secret_files"]),
        [st.st_mtime_ns, st.st_size] if st is not None else None,
    ]
    return _sha(json.dumps(parts).encode("utf-8"))[:16]


def _capture(
    store: Store,
    settings: config.Settings,
    ts: float,
    *,
    watcher: ChangeJournal | None = None,
    changed: Iterable[str] | None = None,
    hints: Iterable[str] | None = None,
    tree_cache: dict[str, Tree] | None = None,
) -> Capture:
    """Work out a new checkpoint, trusting a change source only for an interval it covered."""
    root = store.root
    started = clock.now()
    writer = _Writer(store)
    base = store.query_one(
        "SELECT id, root_tree, skipped, created_at, journal FROM checkpoints "
        "ORDER BY created_at DESC, rowid DESC LIMIT 1"
    )
    before: dict[str, Any] = {}
    if base is not None and base["journal"]:
        with contextlib.suppress(ValueError):
            loaded = json.loads(base["journal"])
            before = loaded if isinstance(loaded, dict) else {}
    fingerprint = _rules_fingerprint(root, settings)
    token: dict[str, Any] = {"rules": fingerprint}
    paths: set[str] | None = None
    source = "scan"
    usable = base is not None and before.get("rules") == fingerprint
    if base is not None and changed is not None:
        # The caller looked at the workspace itself (a rollback's plan) and says what differs.
        paths, source = {p.strip("/") for p in changed}, "given"
    elif usable and watcher is not None and base is not None:
        paths = watcher.since(float(base["created_at"]))
        if paths is not None:
            source = "watcher"
    if watcher is not None and watcher.alive:
        token["epoch"] = watcher.epoch

    # watchman: asked when nothing cheaper vouched; otherwise its clock is carried forward (a
    # later `since` that older clock answers a superset, which is still right).
    wanted_watchman = bool(settings["checkpoints.watchman"])
    if wanted_watchman and paths is None:
        sock = before.get("watchman_socket")
        journal.use_watchman_socket(sock if isinstance(sock, str) else None)
        answer = journal.watchman_since(root, before.get("watchman") if usable else None)
        if answer is not None:
            token["watchman"] = answer.clock
            if journal.watchman_socket():
                token["watchman_socket"] = journal.watchman_socket()
            if usable and answer.paths is not None:
                paths, source = answer.paths, "watchman"
    if "watchman" not in token and isinstance(before.get("watchman"), str):
        token["watchman"] = before["watchman"]

    # git: `git status` now, against what it said at the previous checkpoint.
    previous_git = journal.GitState.from_json(before.get("git")) if usable else None
    if paths is None:
        now_git = journal.git_state(root)
        if now_git is not None:
            token["git"] = now_git.as_json()
            if previous_git is not None:
                paths = journal.git_since(root, previous_git, now_git)
                if paths is not None:
                    source = "git"
    elif previous_git is not None:
        carried = journal.carry_git_state(root, previous_git, paths)
        if carried is not None:
            token["git"] = carried.as_json()

    if paths is not None and hints:
        paths |= {p.strip("/") for p in hints}
    # A changed .gitignore changes what belongs in the checkpoint everywhere below it.
    if paths is not None and any(p == ".gitignore" or p.endswith("/.gitignore") for p in paths):
        paths, source = None, "scan"
    if paths is not None and base is not None:
        mode = "incremental"
        root_hash, count, size, changed_count, skipped = _incremental(
            store,
            settings,
            writer,
            base["root_tree"],
            json.loads(base["skipped"]),
            paths,
            ts,
            tree_cache,
        )
    else:
        mode, source = "scan", "scan"
        root_hash, count, size, changed_count, skipped = _full(store, settings, writer, ts)
    token["source"] = source
    return Capture(
        writer, root_hash, count, size, changed_count, skipped, mode, source, token, started, ts
    )


def _commit(
    store: Store,
    capture: Capture,
    *,
    name: str | None,
    description: str | None,
    reason: str,
    settings: config.Settings,
    session_id: str | None,
    fixed_time: bool,
) -> dict[str, Any]:
    checkpoint_id = _new_id()
    clean_name = redact(name.strip()) if name and name.strip() else None
    writer, ts = capture.writer, capture.ts
    with store.transaction() as db:
        writer.flush(db)
        db.execute(
            "INSERT INTO checkpoints (id, name, description, reason, session_id, created_at, root_tree, "
            "file_count, total_bytes, added_bytes, changed, skipped, journal) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                checkpoint_id,
                clean_name,
                redact(description) if description else description,
                reason,
                session_id,
                ts if fixed_time else capture.started,
                capture.root_tree,
                capture.files,
                capture.size,
                writer.added_bytes,
                capture.changed,
                json.dumps(capture.skipped),
                json.dumps(capture.token),
            ),
        )
        from memory_core import session_turns  # the session and turn it was taken at

        session_turns.record_checkpoint(db, checkpoint_id, session_id)
        events.append(
            store,
            events.Event(
                "checkpoint.created",
                session_id=session_id,
                data={
                    "id": checkpoint_id,
                    "reason": reason,
                    "files": capture.files,
                    "changed": capture.changed,
                },
                ts=ts,
            ),
            db=db,
        )
    if writer.added_bytes > 8 * 1024 * 1024:
        # A large first capture leaves a large write-ahead log; fold it into the database now
        # rather than making the next (small, frequent) checkpoint pay for it.
        with contextlib.suppress(Exception):
            store.query("PRAGMA wal_checkpoint(PASSIVE)")
    removed = enforce_retention(store, settings, now=ts, keep=checkpoint_id)
    result = get(store, checkpoint_id)
    result.update({"mode": capture.mode, "source": capture.source, "removed_by_retention": removed})
    return result


def create(
    store: Store,
    name: str | None = None,
    *,
    description: str | None = None,
    reason: str = "manual",
    settings: config.Settings | None = None,
    now: float | None = None,
    session_id: str | None = None,
    journal: ChangeJournal | None = None,
    changed: Iterable[str] | None = None,
    hints: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Capture the workspace's files as a new checkpoint and return it.

    Only the paths that may have changed since the latest checkpoint are looked at, when a
    source can vouch for the whole interval: an explicit `changed` list, the `journal` of a
    running watcher (the language server's), watchman's clock, or git's status; `hints` (the
    editor's file events) are added to them but never trusted alone. Otherwise the whole
    workspace is scanned, reading only files whose stat changed. The result's `source` says
    which one vouched.
    """
    if reason not in REASONS:
        raise UsageError(
            f"unknown checkpoint reason {reason!r}", hint=f"use one of {', '.join(REASONS)}"
        )
    settings = _settings(store, settings)
    ts = clock.now() if now is None else now
    capture = _capture(store, settings, ts, watcher=journal, changed=changed, hints=hints)
    return _commit(
        store,
        capture,
        name=name,
        description=description,
        reason=reason,
        settings=settings,
        session_id=session_id,
        fixed_time=now is not None,
    )


def every_n_turns(
    store: Store,
    turn_seq: int,
    *,
    settings: config.Settings | None = None,
    session_id: str | None = None,
    now: float | None = None,
) -> dict[str, Any] | None:
    """The automatic checkpoint every `checkpoints.every_n_turns` agent turns (None: not due).

    Called by the agent hooks after recording turn number `turn_seq` of a session.
    """
    settings = _settings(store, settings)
    every = int(settings["checkpoints.every_n_turns"])
    if every <= 0 or turn_seq <= 0 or turn_seq % every:
        return None
    return create(
        store,
        description=f"automatic: turn {turn_seq}",
        reason="turns",
        settings=settings,
        session_id=session_id,
        now=now,
    )


# -- reading -----------------------------------------------------------------------------------


def _checkpoint_dict(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "label": row["name"] or f"{row['reason']} checkpoint {clock.iso(row['created_at'])}",
        "description": row["description"],
        "reason": row["reason"],
        "session_id": row["session_id"],
        "turn_number": row["turn_number"],
        "created_at": clock.iso(row["created_at"]),
        "files": row["file_count"],
        "bytes": row["total_bytes"],
        "added_bytes": row["added_bytes"],
        "changed": row["changed"],
        "skipped": json.loads(row["skipped"]),
    }


def _row(store: Store, ref: str) -> Any:
    row = store.query_one("SELECT * FROM checkpoints WHERE id = ?", (ref,))
    if row is None:
        row = store.query_one(
            "SELECT * FROM checkpoints WHERE name = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (ref,),
        )
    if row is None and len(ref) >= 3:
        escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = store.query(
            "SELECT * FROM checkpoints WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (escaped + "%",)
        )
        if len(rows) > 1:
            raise UsageError(f"{ref!r} names more than one checkpoint", hint="give more of the id")
        row = rows[0] if rows else None
    if row is None:
        raise NotFoundError(f"no checkpoint {ref!r}", hint="see `engram checkpoint list`")
    return row


def get(store: Store, ref: str) -> dict[str, Any]:
    """A checkpoint by id, unique id prefix or name (the newest of that name)."""
    return _checkpoint_dict(_row(store, ref))


def list_checkpoints(store: Store, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Every checkpoint, newest first."""
    rows = store.query(
        "SELECT * FROM checkpoints ORDER BY created_at DESC, rowid DESC LIMIT ?",
        (limit if limit else -1,),
    )
    return [_checkpoint_dict(row) for row in rows]


def manifest(store: Store, ref: str) -> list[dict[str, Any]]:
    """The checkpoint's files: path, mode, hash, size (and kind: file or link), sorted by path."""
    row = _row(store, ref)
    items = [
        {
            "path": rel,
            "kind": "link" if e.kind == "l" else "file",
            "mode": e.mode,
            "hash": e.hash,
            "size": e.size,
        }
        for rel, e in _walk_manifest(store, row["root_tree"])
    ]
    return sorted(items, key=lambda item: item["path"])


def _current(store: Store, settings: config.Settings) -> tuple[dict[str, Entry], list[str]]:
    """The workspace as it is now, hashed through the stat cache."""
    rules = _rules(store.root, settings)
    found = scan(store.root, rules, int(settings["checkpoints.max_file_bytes"]))
    cache = _stat_cache(store)
    # The stat cache is only read here, never written: its rows must name stored blobs.
    current: dict[str, Entry] = {}
    for rel, item in found.files.items():
        cached = cache.get(rel)
        if cached is not None and cached[:4] == (item.mtime_ns, item.size, item.ino, item.mode):
            current[rel] = Entry(item.kind, item.mode, str(cached[4]), item.size)
            continue
        try:
            data = _read(store.root, rel, item.kind)
        except OSError:
            continue
        current[rel] = Entry(item.kind, item.mode, _sha(data), item.size)
    return current, found.skipped


def diff(
    store: Store, ref: str, other: str | None = None, *, settings: config.Settings | None = None
) -> dict[str, Any]:
    """What changed between a checkpoint and the workspace now (or another checkpoint)."""
    settings = _settings(store, settings)
    row = _row(store, ref)
    before = dict(_walk_manifest(store, row["root_tree"]))
    if other is not None:
        other_row = _row(store, other)
        after = dict(_walk_manifest(store, other_row["root_tree"]))
        against = other_row["id"]
    else:
        after, _ = _current(store, settings)
        against = "workspace"
    added = sorted(set(after) - set(before))
    deleted = sorted(set(before) - set(after))
    modified = sorted(
        rel
        for rel in set(before) & set(after)
        if (before[rel].kind, before[rel].hash) != (after[rel].kind, after[rel].hash)
    )
    mode_changed = sorted(
        rel
        for rel in set(before) & set(after)
        if before[rel].hash == after[rel].hash and before[rel].mode != after[rel].mode
    )
    return {
        "id": row["id"],
        "against": against,
        "added": added,
        "modified": modified,
        "deleted": deleted,
        "mode_changed": mode_changed,
    }


def patch(
    store: Store, ref: str, *, settings: config.Settings | None = None, context: int = 3
) -> str:
    """A unified diff from the checkpoint to the workspace, for text files."""
    import difflib

    settings = _settings(store, settings)
    changes = diff(store, ref, settings=settings)
    before = dict(_walk_manifest(store, _row(store, ref)["root_tree"]))
    chunks: list[str] = []
    for rel in [*changes["modified"], *changes["added"], *changes["deleted"]]:
        old = read_blob(store, before[rel].hash, path=rel) if rel in before else b""
        try:
            new = _read(store.root, rel, "f") if rel not in changes["deleted"] else b""
        except OSError:
            new = b""
        if b"\0" in old[:8000] or b"\0" in new[:8000]:
            chunks.append(f"Binary file {rel} differs\n")
            continue
        chunks.extend(
            difflib.unified_diff(
                old.decode("utf-8", "replace").splitlines(keepends=True),
                new.decode("utf-8", "replace").splitlines(keepends=True),
                fromfile=f"a/{rel}" if rel in before else "/dev/null",
                tofile=f"b/{rel}" if rel not in changes["deleted"] else "/dev/null",
                n=context,
            )
        )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        for line in chunks
    )


# -- retention and garbage collection -----------------------------------------------------------


def delete(store: Store, ref: str) -> dict[str, Any]:
    row = _row(store, ref)
    with store.transaction() as db:
        db.execute("DELETE FROM checkpoints WHERE id = ?", (row["id"],))
    freed = gc(store)
    return {"id": row["id"], "deleted": True, "freed_bytes": freed}


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
    flag = store.query_one("SELECT value FROM store_meta WHERE key = 'checkpoints.gc_needed'")
    if flag is not None and flag[0] == "1":
        gc(store)
    cap = int(settings["checkpoints.store_cap_bytes"])
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


def gc(store: Store) -> int:
    """Delete blobs and trees no checkpoint references; returns the bytes freed."""
    live_trees: set[str] = set()
    live_blobs: set[str] = set()
    stack = [row[0] for row in store.query("SELECT DISTINCT root_tree FROM checkpoints")]
    while stack:
        digest = stack.pop()
        if digest in live_trees:
            continue
        live_trees.add(digest)
        try:
            tree = _load_tree(store, digest, validate=False)
        except CorruptCheckpointError:
            continue
        for entry in tree.entries.values():
            (stack.append(entry.hash) if entry.kind == "d" else live_blobs.add(entry.hash))
    freed = 0
    with store.transaction() as db:
        db.execute("CREATE TEMP TABLE IF NOT EXISTS gc_live (hash TEXT PRIMARY KEY) WITHOUT ROWID")
        db.execute("CREATE TEMP TABLE IF NOT EXISTS gc_raw (hash BLOB PRIMARY KEY) WITHOUT ROWID")
        db.execute("DELETE FROM gc_live")
        db.execute("DELETE FROM gc_raw")
        db.executemany(
            "INSERT OR IGNORE INTO gc_live VALUES (?)", [(h,) for h in live_blobs | live_trees]
        )
        db.executemany(
            "INSERT OR IGNORE INTO gc_raw VALUES (?)", [(bytes.fromhex(h),) for h in live_blobs]
        )
        row = db.execute(
            "SELECT COALESCE(SUM(stored_size), 0) FROM checkpoint_blobs WHERE hash NOT IN (SELECT hash FROM gc_live)"
        ).fetchone()
        freed += int(row[0])
        db.execute("DELETE FROM checkpoint_blobs WHERE hash NOT IN (SELECT hash FROM gc_live)")
        row = db.execute(
            "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM checkpoint_objects "
            "WHERE pack IS NULL AND hash NOT IN (SELECT hash FROM gc_raw)"
        ).fetchone()
        freed += int(row[0])
        db.execute("DELETE FROM checkpoint_objects WHERE hash NOT IN (SELECT hash FROM gc_raw)")
        # A pack goes when none of its blobs is referenced any more.
        row = db.execute(
            "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM checkpoint_packs WHERE id NOT IN "
            "(SELECT pack FROM checkpoint_objects WHERE pack IS NOT NULL)"
        ).fetchone()
        freed += int(row[0])
        db.execute(
            "DELETE FROM checkpoint_packs WHERE id NOT IN "
            "(SELECT pack FROM checkpoint_objects WHERE pack IS NOT NULL)"
        )
        freed += _repack_sparse(db)
        row = db.execute(
            "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM checkpoint_trees WHERE hash NOT IN (SELECT hash FROM gc_live)"
        ).fetchone()
        freed += int(row[0])
        db.execute("DELETE FROM checkpoint_trees WHERE hash NOT IN (SELECT hash FROM gc_live)")
        if freed:
            _count_stored(db, -freed)
        db.execute("DELETE FROM store_meta WHERE key = 'checkpoints.gc_needed'")
        # A stat-cache row whose blob is gone would let a later capture reference missing
        # content; forget it so that file is read again.
        db.execute("DELETE FROM checkpoint_index WHERE hash NOT IN (SELECT hash FROM gc_raw)")
        db.execute("DELETE FROM gc_live")
        db.execute("DELETE FROM gc_raw")
    _PACKS.clear()
    return freed


def _repack_sparse(db: Any) -> int:
    """Rewrite packs less than half of whose bytes are still referenced; returns bytes freed.

    Without it a pack keeps every dead neighbour of one live blob, and the store cap, finding
    the space not freed, would remove checkpoint after checkpoint.
    """
    sparse = db.execute(
        "SELECT p.id, p.raw_size, LENGTH(p.data), COALESCE(SUM(o.size), 0) FROM checkpoint_packs p "
        "LEFT JOIN checkpoint_objects o ON o.pack = p.id GROUP BY p.id "
        "HAVING COALESCE(SUM(o.size), 0) * 2 < p.raw_size"
    ).fetchall()
    freed = 0
    for pack_id, _, stored, _ in sparse:
        data = _decompress(
            db.execute("SELECT data FROM checkpoint_packs WHERE id = ?", (pack_id,)).fetchone()[0]
        )
        members = db.execute(
            "SELECT hash, offset, size FROM checkpoint_objects WHERE pack = ? ORDER BY offset",
            (pack_id,),
        ).fetchall()
        kept, moves, offset = [], [], 0
        for digest, old_offset, size in members:
            kept.append(data[old_offset : old_offset + size])
            moves.append((offset, digest))
            offset += size
        if kept:
            packed = _compress(b"".join(kept))
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


# -- rollback ----------------------------------------------------------------------------------


@dataclass
class FileWrite:
    """One file a rollback restores: its path, the exact bytes, mode and kind."""

    path: str
    content: bytes
    mode: int
    kind: str  # "file" | "link"
    existed: bool


@dataclass
class RollbackPlan:
    """Everything a rollback will do, verified before anything is written."""

    checkpoint: dict[str, Any]
    writes: list[FileWrite]
    removes: list[str]
    unchanged: int
    root: Path
    # The workspace as the plan found it, worked out like any incremental checkpoint: the
    # pre-rollback checkpoint commits it, so nothing is scanned twice.
    capture: Capture | None = field(default=None, repr=False)
    # What the checkpoint holds, path -> entry on demand (an editor compares its unsaved
    # buffers with it); only the folders asked about are read.
    target: _TreeLookup | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "checkpoint": self.checkpoint["id"],
            "restore": [w.path for w in self.writes],
            "remove": list(self.removes),
            "unchanged": self.unchanged,
        }


def _check_path(root: Path, rel: str, folders: dict[str, bool] | None = None) -> None:
    """Refuse a path that leaves the root, names .git, or passes through a symbolic link.

    `folders` caches what each folder on the way was found to be, for a plan that checks every
    path of a large workspace (their folders are shared); writes check again without it.
    """
    parts = rel.split("/")
    if not rel or any(not _valid_name(part) for part in parts):
        raise CorruptCheckpointError(
            f"the checkpoint names an unsafe path {rel!r}",
            hint="it was refused; nothing was written",
        )
    prefix = ""
    for part in parts[:-1]:
        prefix = f"{prefix}/{part}" if prefix else part
        is_folder = folders.get(prefix) if folders is not None else None
        if is_folder is None:
            is_folder = _real_folder(root, prefix, rel)
            if folders is not None:
                folders[prefix] = is_folder
        if not is_folder:
            # Missing: the rest will be created as real folders. A file in the way: it is
            # removed first (it was created after the checkpoint).
            return


def _real_folder(root: Path, folder: str, rel: str) -> bool:
    """Whether `folder` is a real folder (False: missing or a file); raises for a symbolic link."""
    current = os.path.join(root, folder)
    try:
        st = os.lstat(current)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(current)
        where = "outside the workspace" if not _inside(root, Path(target)) else "elsewhere"
        raise EngramError(
            f"refusing to write {rel}: {folder} is a symbolic link to {target} ({where})",
            hint="remove the link, then roll back again; nothing was written",
        )
    return stat.S_ISDIR(st.st_mode)


def _inside(root: Path, path: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


class _TreeLookup:
    """Entries of a stored tree by path, reading only the folders on the way (verified)."""

    def __init__(self, store: Store, root_tree: str) -> None:
        self.store = store
        self.trees: dict[str, Tree] = {}
        self.root_tree = root_tree

    def _tree(self, rel_dir: str) -> Tree | None:
        if rel_dir in self.trees:
            return self.trees[rel_dir]
        if not rel_dir:
            tree: Tree | None = _load_tree(self.store, self.root_tree)
        else:
            parent, _, name = rel_dir.rpartition("/")
            holder = self._tree(parent)
            entry = holder.entries.get(name) if holder is not None else None
            tree = (
                _load_tree(self.store, entry.hash, rel_dir + "/")
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


def _tree_loader(store: Store, pending: dict[str, Tree], cache: dict[str, Tree]) -> Any:
    """Load a tree from a capture's not yet written ones or from the store (verified)."""

    def load(digest: str, where: str) -> Tree:
        built = pending.get(digest)
        return built if built is not None else _load_tree(store, digest, where, cache=cache)

    return load


def _tree_changes(
    store: Store,
    target_tree: str,
    current_tree: str,
    pending: dict[str, Tree],
    cache: dict[str, Tree],
) -> tuple[list[tuple[str, Entry]], list[str]]:
    """Files to write (path, target entry) and files to remove, to turn `current_tree` into
    `target_tree`: listings are compared by digest and only folders that differ are read."""
    load = _tree_loader(store, pending, cache)
    writes: list[tuple[str, Entry]] = []
    removes: list[str] = []

    def every_file(digest: str, prefix: str) -> Iterator[tuple[str, Entry]]:
        tree = load(digest, prefix + "/")
        for name, entry in tree.entries.items():
            rel = f"{prefix}/{name}"
            if entry.kind == "d":
                yield from every_file(entry.hash, rel)
            else:
                yield rel, entry

    def compare(target_digest: str, current_digest: str | None, prefix: str) -> None:
        target = load(target_digest, prefix + "/" if prefix else "")
        current = load(current_digest, prefix + "/" if prefix else "") if current_digest else Tree()
        for name in sorted(set(target.entries) | set(current.entries)):
            rel = f"{prefix}/{name}" if prefix else name
            want, have = target.entries.get(name), current.entries.get(name)
            if want is not None and have is not None:
                if want.kind == "d" and have.kind == "d":
                    if want.hash != have.hash:
                        compare(want.hash, have.hash, rel)
                    continue
                if (want.kind, want.hash, want.mode) == (have.kind, have.hash, have.mode):
                    continue
            if have is not None and (want is None or want.kind == "d" or have.kind == "d"):
                # Absent from the checkpoint's (verified) listing of this folder, or of
                # another kind there: the current file or folder goes.
                if have.kind == "d":
                    removes.extend(rel_ for rel_, _ in every_file(have.hash, rel))
                else:
                    removes.append(rel)
            if want is not None:
                if want.kind == "d":
                    writes.extend(every_file(want.hash, rel))
                else:
                    writes.append((rel, want))

    compare(target_tree, current_tree, "")
    return writes, removes


def plan_rollback(
    store: Store,
    ref: str,
    *,
    settings: config.Settings | None = None,
    journal: ChangeJournal | None = None,
    hints: Iterable[str] | None = None,
) -> RollbackPlan:
    """Work out and verify a rollback to checkpoint `ref`, writing nothing.

    The workspace as it is now is captured like any incremental checkpoint (from the change
    journal, watchman or git when they vouch), then compared with the checkpoint tree by tree:
    the cost grows with what differs, not with the workspace. Raises CorruptCheckpointError for
    a missing, corrupt or unsafe manifest or blob, and EngramError for a path that would be
    written through a symbolic link.
    """
    settings = _settings(store, settings)
    row = _row(store, ref)
    root = store.root
    if journal is not None and not journal.sync():
        journal = None  # it could not show it has seen every change made until now
    trees: dict[str, Tree] = {}  # listings read once for the capture and the comparison
    capture = _capture(store, settings, clock.now(), watcher=journal, hints=hints, tree_cache=trees)
    planned_writes, planned_removes = _tree_changes(
        store, row["root_tree"], capture.root_tree, capture.writer.decoded, trees
    )
    folders: dict[str, bool] = {}
    writes: list[FileWrite] = []
    removed_set = set(planned_removes)
    for rel, entry in planned_writes:
        _check_path(root, rel, folders)
        content = read_blob(store, entry.hash, path=rel)
        existed = rel in removed_set or _exists(root, rel)
        writes.append(
            FileWrite(rel, content, entry.mode, "link" if entry.kind == "l" else "file", existed)
        )
    # Files the checkpoint left out on purpose (over the size cap) are not "created after" it;
    # secret files and ignored files never reach either tree.
    keep = set(json.loads(row["skipped"])) | set(capture.skipped)
    written = {w.path for w in writes}
    removes = sorted(rel for rel in planned_removes if rel not in keep and rel not in written)
    for rel in removes:
        _check_path(root, rel, folders)
    unchanged = max(0, int(row["file_count"]) - len(writes))
    return RollbackPlan(
        _checkpoint_dict(row),
        writes,
        removes,
        unchanged,
        root,
        capture,
        _TreeLookup(store, row["root_tree"]),
    )


def _exists(root: Path, rel: str) -> bool:
    try:
        os.lstat(root / rel)
    except OSError:
        return False
    return True


def write_file(root: Path, write: FileWrite) -> None:
    """Write one restored file atomically (temp file + rename), replacing a link, not following it."""
    _check_path(root, write.path)
    path = root / write.path
    parent = path.parent
    # A file where a folder must be: it was created after the checkpoint; remove it.
    probe = root
    for part in write.path.split("/")[:-1]:
        probe = probe / part
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISDIR(os.lstat(probe).st_mode):
                os.unlink(probe)
    parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            # A folder where the checkpoint had a file. Files created after the checkpoint were
            # removed already; what is left (ignored files, say) is not ours to delete.
            try:
                os.rmdir(path)
            except OSError:
                raise EngramError(
                    f"{write.path} is now a folder that still holds files the checkpoint does not know",
                    hint="move them away and roll back again",
                ) from None
    tmp = parent / f".{path.name}.engram-rollback-{uuid.uuid4().hex[:8]}"
    if write.kind == "link":
        os.symlink(write.content.decode("utf-8", "surrogateescape"), tmp)
    else:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(write.content)
                handle.flush()
                os.fchmod(handle.fileno(), write.mode)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    os.replace(tmp, path)


def remove_file(root: Path, rel: str) -> None:
    """Remove a file created after the checkpoint, and folders it leaves empty."""
    _check_path(root, rel)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(root / rel)
    parent = (root / rel).parent
    while parent != root and _inside(root, parent):
        try:
            os.rmdir(parent)
        except OSError:
            break
        parent = parent.parent


def prepare_undo(
    store: Store,
    plan: RollbackPlan,
    *,
    settings: config.Settings | None = None,
    session_id: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The pre-rollback checkpoint: rolling back to it undoes the rollback.

    The plan already worked out the workspace as it is (an incremental capture), so this only
    writes it: nothing is scanned again.
    """
    settings = _settings(store, settings)
    description = f"before rolling back to {plan.checkpoint['id']}"
    if plan.capture is None:
        return create(
            store,
            description=description,
            reason="pre-rollback",
            settings=settings,
            session_id=session_id,
            now=now,
        )
    capture, plan.capture = plan.capture, None
    if now is not None:
        capture.ts = now
    return _commit(
        store,
        capture,
        name=None,
        description=description,
        reason="pre-rollback",
        settings=settings,
        session_id=session_id,
        fixed_time=now is not None,
    )


def apply_plan(
    store: Store,
    plan: RollbackPlan,
    *,
    skip: Iterable[str] = (),
    undo_checkpoint: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Write a verified plan to disk, except the paths in `skip` (applied by an editor)."""
    skipped = set(skip)
    restored: list[str] = []
    removed: list[str] = []
    failed: list[dict[str, str]] = []
    for rel in plan.removes:
        if rel in skipped:
            continue
        try:
            remove_file(plan.root, rel)
            removed.append(rel)
        except (OSError, EngramError) as exc:
            failed.append({"path": rel, "error": getattr(exc, "message", str(exc))})
    for write in plan.writes:
        if write.path in skipped:
            continue
        try:
            write_file(plan.root, write)
            restored.append(write.path)
        except (OSError, EngramError) as exc:
            failed.append({"path": write.path, "error": getattr(exc, "message", str(exc))})
    ts = clock.now() if now is None else now
    result = {
        "done": not failed,
        "checkpoint": plan.checkpoint["id"],
        "undo_checkpoint": undo_checkpoint,
        "restored": restored,
        "removed": removed,
        "via_editor": sorted(skipped & ({w.path for w in plan.writes} | set(plan.removes))),
        "unchanged": plan.unchanged,
        "failed": failed,
    }
    events.append(
        store,
        events.Event(
            "checkpoint.rollback", data={k: v for k, v in result.items() if k != "unchanged"}, ts=ts
        ),
    )
    return result


def rollback(
    store: Store,
    ref: str,
    *,
    settings: config.Settings | None = None,
    undo: bool = True,
    now: float | None = None,
) -> dict[str, Any]:
    """Roll the workspace back to checkpoint `ref`: plan and verify, checkpoint, then write."""
    settings = _settings(store, settings)
    plan = plan_rollback(store, ref, settings=settings)
    undo_id = prepare_undo(store, plan, settings=settings, now=now)["id"] if undo else None
    return apply_plan(store, plan, undo_checkpoint=undo_id, now=now)
