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
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_core import clock, config, events, limits
from memory_core.errors import EngramError, NotFoundError, UsageError
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


def _compress(data: bytes) -> bytes:
    import zstandard

    return bytes(zstandard.ZstdCompressor(level=3).compress(data))


def _decompress(data: bytes) -> bytes:
    import zstandard

    return bytes(zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 31))


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


# -- ignore rules ------------------------------------------------------------------------------


class _Matcher:
    """One compiled ignore file. Without negations its patterns become one regex, so a path costs
    one search instead of one per pattern (this check runs for every file of a scan)."""

    def __init__(self, spec: Any) -> None:
        import re

        self.spec = spec
        patterns = [p for p in spec.patterns if p.include is not None]
        self.combined: re.Pattern[str] | None = None
        if all(p.include for p in patterns) and all(
            getattr(p, "regex", None) is not None for p in patterns
        ):
            parts = [p.regex.pattern.replace("(?P<ps_d>", "(?:") for p in patterns]
            self.combined = re.compile("|".join(f"(?:{part})" for part in parts)) if parts else None
            self.empty = not parts
        else:
            self.empty = False

    def check(self, path: str) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no opinion."""
        if self.combined is not None:
            return True if self.combined.search(path) else None
        if self.empty:
            return None
        include = self.spec.check_file(path).include
        return None if include is None else bool(include)


class IgnoreRules:
    """`.gitignore` files (the root's and nested ones) plus extra patterns, with git's semantics.

    The deepest `.gitignore` that has an opinion about a path decides, as in git.
    """

    def __init__(self, root: Path, extra: Iterable[str] = ()) -> None:
        import pathspec

        self._pathspec = pathspec
        self.root = root
        self._specs: dict[str, _Matcher | None] = {}
        extra = [p for p in extra if p.strip()]
        self._extra = _Matcher(pathspec.GitIgnoreSpec.from_lines(extra)) if extra else None

    def spec_for(self, rel_dir: str) -> _Matcher | None:
        """The compiled `.gitignore` of a directory (None when it has none)."""
        if rel_dir not in self._specs:
            path = self.root / rel_dir / ".gitignore" if rel_dir else self.root / ".gitignore"
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
                self._specs[rel_dir] = _Matcher(self._pathspec.GitIgnoreSpec.from_lines(lines))
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
                self._specs[rel_dir] = None
        return self._specs[rel_dir]

    def ignored(self, rel: str, is_dir: bool, chain: list[tuple[str, Any]]) -> bool:
        """Whether `rel` is ignored, given the (dir, matcher) chain of its ancestors, deepest last."""
        probe = rel + "/" if is_dir else rel
        if self._extra is not None and self._extra.check(probe):
            return True
        for base, matcher in reversed(chain):
            verdict = matcher.check(probe[len(base) + 1 :] if base else probe)
            if verdict is not None:
                return bool(verdict)
        return False

    def chain_for(self, rel_dir: str) -> list[tuple[str, Any]]:
        """The matchers that apply inside `rel_dir`, shallowest first."""
        chain = []
        parts = rel_dir.split("/") if rel_dir else []
        for depth in range(len(parts) + 1):
            base = "/".join(parts[:depth])
            matcher = self.spec_for(base)
            if matcher is not None:
                chain.append((base, matcher))
        return chain


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


# -- the change journal (kept by a process that watches the workspace) --------------------------


class ChangeJournal:
    """Paths reported changed since `started_at` by a watcher that saw every change.

    A checkpoint may trust it only for the time it covers: `since(ts)` is None when `ts` is
    before the journal started (changes then were not seen), else the paths changed since.
    """

    def __init__(self, started_at: float | None = None) -> None:
        self.started_at = clock.now() if started_at is None else started_at
        self._changed: dict[str, float] = {}

    def mark(self, paths: Iterable[str], ts: float | None = None) -> None:
        when = clock.now() if ts is None else ts
        for path in paths:
            self._changed[path] = max(when, self._changed.get(path, 0.0))

    def since(self, ts: float) -> set[str] | None:
        if ts < self.started_at:
            return None
        # A second of slack: an event stamped just before the checkpoint's start may describe
        # a write the checkpoint's scan did not see yet.
        return {path for path, when in self._changed.items() if when >= ts - 1.0}

    def forget_before(self, ts: float) -> None:
        self._changed = {p: t for p, t in self._changed.items() if t >= ts - 1.0}


# -- the store side ----------------------------------------------------------------------------


class _Writer:
    """Collects new blobs, trees and stat-cache rows, then writes them in one transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.blobs: dict[str, tuple[int, bytes]] = {}
        self.trees: dict[str, bytes] = {}
        self.index: dict[str, tuple[int, int, int, int, str]] = {}
        self.added_bytes = 0

    def blob(self, data: bytes) -> str:
        digest = _sha(data)
        if (
            digest not in self.blobs
            and self.store.query_one("SELECT 1 FROM checkpoint_blobs WHERE hash = ?", (digest,))
            is None
        ):
            self.blobs[digest] = (len(data), _compress(data))
        return digest

    def tree(self, tree: Tree) -> str:
        data = tree.encode()
        digest = _sha(data)
        if digest not in self.trees:
            self.trees[digest] = _compress(data)
        return digest

    def flush(self, db: Any) -> None:
        for digest, (size, packed) in self.blobs.items():
            cursor = db.execute(
                "INSERT OR IGNORE INTO checkpoint_blobs (hash, size, stored_size, data) VALUES (?, ?, ?, ?)",
                (digest, size, len(packed), packed),
            )
            if cursor.rowcount:
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
                [(path, *row) for path, row in self.index.items()],
            )


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


def _load_tree(store: Store, digest: str, where: str = "", *, validate: bool = True) -> Tree:
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


def read_blob(store: Store, digest: str, *, path: str = "") -> bytes:
    """A blob's content, verified against its hash."""
    row = store.query_one("SELECT data FROM checkpoint_blobs WHERE hash = ?", (digest,))
    if row is None:
        raise CorruptCheckpointError(
            f"the checkpoint's content of {path or digest[:12]} is missing from the store",
            hint="it was refused; nothing was written",
        )
    try:
        data = _decompress(row[0])
    except Exception:
        data = b""
        ok = False
    else:
        ok = _sha(data) == digest
    if not ok:
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
    if found.mtime_ns / 1e9 < now - RACY_SECONDS:
        writer.index[rel] = (found.mtime_ns, found.size, found.ino, found.mode, digest)
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
    rules = IgnoreRules(store.root, settings["watch.exclude"])
    found = scan(store.root, rules, int(settings["checkpoints.max_file_bytes"]))
    cache = {
        row[0]: (row[1], row[2], row[3], row[4], row[5])
        for row in store.query("SELECT path, mtime_ns, size, ino, mode, hash FROM checkpoint_index")
    }
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
) -> tuple[str, int, int, int, list[str]]:
    """A new root tree: the base with only `changed_paths` looked at again."""
    root = store.root
    rules = IgnoreRules(root, settings["watch.exclude"])
    cap = int(settings["checkpoints.max_file_bytes"])
    trees: dict[str, Tree] = {}
    dirty: set[str] = set()

    def tree_at(rel_dir: str, create: bool) -> Tree | None:
        if rel_dir in trees:
            return trees[rel_dir]
        if not rel_dir:
            trees[""] = _load_tree(store, base_tree, validate=False)
            return trees[""]
        parent, _, name = rel_dir.rpartition("/")
        parent_tree = tree_at(parent, create)
        if parent_tree is None:
            return None
        entry = parent_tree.entries.get(name)
        if entry is not None and entry.kind == "d":
            trees[rel_dir] = _load_tree(store, entry.hash, rel_dir + "/", validate=False)
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
            # A new or replaced folder: capture what is in it now.
            remove(rel)
            sub = scan(root, rules, cap, under=rel)
            skipped.update(sub.skipped)
            for sub_rel, item in sub.files.items():
                digest = _hash_file(root, sub_rel, item, writer, cache, now)
                if digest is not None:
                    put(sub_rel, Entry(item.kind, item.mode, digest, item.size))
                    changed += 1
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
) -> dict[str, Any]:
    """Capture the workspace's files as a new checkpoint and return it.

    With `journal` (a watcher's record covering the time since the latest checkpoint) or an
    explicit `changed` list of workspace-relative paths, only those paths are looked at;
    otherwise the whole workspace is scanned, reading only files whose stat changed.
    """
    if reason not in REASONS:
        raise UsageError(
            f"unknown checkpoint reason {reason!r}", hint=f"use one of {', '.join(REASONS)}"
        )
    settings = _settings(store, settings)
    ts = clock.now() if now is None else now
    started = clock.now()
    writer = _Writer(store)
    base = store.query_one(
        "SELECT id, root_tree, skipped, created_at FROM checkpoints ORDER BY created_at DESC, rowid DESC LIMIT 1"
    )
    paths: set[str] | None = None
    if base is not None:
        if changed is not None:
            paths = {p.strip("/") for p in changed}
        elif journal is not None:
            paths = journal.since(float(base["created_at"]))
    # A changed .gitignore changes what belongs in the checkpoint everywhere below it.
    if paths is not None and any(p == ".gitignore" or p.endswith("/.gitignore") for p in paths):
        paths = None
    if paths is not None and base is not None:
        mode = "incremental"
        root_hash, count, size, changed_count, skipped = _incremental(
            store, settings, writer, base["root_tree"], json.loads(base["skipped"]), paths, ts
        )
    else:
        mode = "scan"
        root_hash, count, size, changed_count, skipped = _full(store, settings, writer, ts)
    checkpoint_id = _new_id()
    clean_name = redact(name.strip()) if name and name.strip() else None
    with store.transaction() as db:
        writer.flush(db)
        db.execute(
            "INSERT INTO checkpoints (id, name, description, reason, session_id, created_at, root_tree, "
            "file_count, total_bytes, added_bytes, changed, skipped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                checkpoint_id,
                clean_name,
                redact(description) if description else description,
                reason,
                session_id,
                started if now is None else ts,
                root_hash,
                count,
                size,
                writer.added_bytes,
                changed_count,
                json.dumps(skipped),
            ),
        )
        from memory_core import conversation  # the session and turn it was taken at

        conversation.record_checkpoint(db, checkpoint_id, session_id)
        events.append(
            store,
            events.Event(
                "checkpoint.created",
                session_id=session_id,
                data={
                    "id": checkpoint_id,
                    "reason": reason,
                    "files": count,
                    "changed": changed_count,
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
    result.update({"mode": mode, "removed_by_retention": removed})
    return result


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
    rules = IgnoreRules(store.root, settings["watch.exclude"])
    found = scan(store.root, rules, int(settings["checkpoints.max_file_bytes"]))
    cache = {
        row[0]: (row[1], row[2], row[3], row[4], row[5])
        for row in store.query("SELECT path, mtime_ns, size, ino, mode, hash FROM checkpoint_index")
    }
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
        db.execute("DELETE FROM gc_live")
        db.executemany(
            "INSERT OR IGNORE INTO gc_live VALUES (?)", [(h,) for h in live_blobs | live_trees]
        )
        row = db.execute(
            "SELECT COALESCE(SUM(stored_size), 0) FROM checkpoint_blobs WHERE hash NOT IN (SELECT hash FROM gc_live)"
        ).fetchone()
        freed += int(row[0])
        db.execute("DELETE FROM checkpoint_blobs WHERE hash NOT IN (SELECT hash FROM gc_live)")
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
        db.execute("DELETE FROM checkpoint_index WHERE hash NOT IN (SELECT hash FROM gc_live)")
        db.execute("DELETE FROM gc_live")
    return freed


def space(store: Store) -> dict[str, int]:
    """Space checkpoints take: blobs stored (compressed), their original size, trees, count."""
    blobs = store.query_one(
        "SELECT COUNT(*), COALESCE(SUM(stored_size), 0), COALESCE(SUM(size), 0) FROM checkpoint_blobs"
    )
    trees = store.query_one("SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM checkpoint_trees")
    count = store.query_one("SELECT COUNT(*) FROM checkpoints")
    assert blobs is not None and trees is not None and count is not None
    return {
        "checkpoints": int(count[0]),
        "blobs": int(blobs[0]),
        "stored_bytes": int(blobs[1]) + int(trees[1]),
        "content_bytes": int(blobs[2]),
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
    # The workspace as the plan found it, so the pre-rollback checkpoint needs no second scan.
    current: dict[str, Entry] = field(default_factory=dict, repr=False)
    # What the checkpoint holds, path -> entry (an editor compares its unsaved buffers with it).
    target: dict[str, Entry] = field(default_factory=dict, repr=False)

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


def plan_rollback(
    store: Store, ref: str, *, settings: config.Settings | None = None
) -> RollbackPlan:
    """Work out and verify a rollback to checkpoint `ref`, writing nothing.

    Raises CorruptCheckpointError for a missing, corrupt or unsafe manifest or blob, and
    EngramError for a path that would be written through a symbolic link.
    """
    settings = _settings(store, settings)
    row = _row(store, ref)
    root = store.root
    target = dict(_walk_manifest(store, row["root_tree"]))  # verifies every tree and name
    skipped = set(json.loads(row["skipped"]))
    current, now_skipped = _current(store, settings)
    writes: list[FileWrite] = []
    unchanged = 0
    folders: dict[str, bool] = {}
    for rel in sorted(target):
        entry = target[rel]
        _check_path(root, rel, folders)
        have = current.get(rel)
        if have is not None and (have.kind, have.hash, have.mode) == (
            entry.kind,
            entry.hash,
            entry.mode,
        ):
            unchanged += 1
            continue
        content = read_blob(store, entry.hash, path=rel)
        writes.append(
            FileWrite(
                rel, content, entry.mode, "link" if entry.kind == "l" else "file", rel in current
            )
        )
    # Files the checkpoint left out on purpose (over the size cap) are not "created after" it.
    keep = skipped | set(now_skipped)
    removes = sorted(rel for rel in current if rel not in target and rel not in keep)
    for rel in removes:
        _check_path(root, rel, folders)
    return RollbackPlan(_checkpoint_dict(row), writes, removes, unchanged, root, current, target)


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

    The plan already scanned the workspace, so only the paths that differ from the latest
    checkpoint are captured (an incremental checkpoint over it), not the whole tree again.
    """
    changed: set[str] | None = None
    latest = store.query_one(
        "SELECT root_tree FROM checkpoints ORDER BY created_at DESC, rowid DESC LIMIT 1"
    )
    if latest is not None and plan.current:
        before = dict(_walk_manifest(store, latest["root_tree"]))
        changed = {
            rel
            for rel, entry in plan.current.items()
            if rel not in before
            or (before[rel].kind, before[rel].hash, before[rel].mode)
            != (entry.kind, entry.hash, entry.mode)
        }
        changed.update(rel for rel in before if rel not in plan.current)
    return create(
        store,
        description=f"before rolling back to {plan.checkpoint['id']}",
        reason="pre-rollback",
        settings=settings,
        session_id=session_id,
        now=now,
        changed=changed,
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
