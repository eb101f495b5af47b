"""Finding the workspace's files on disk, with the ignore rules a checkpoint honours."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

from memory_core import config, journal
from memory_core.checkpoints.trees import NEVER_CAPTURED
from memory_core.errors import EngramError
from memory_core.journal import IgnoreRules
from memory_core.store import Store

# -- scanning ----------------------------------------------------------------------------------


# Plain classes, not dataclasses: a cold `engram checkpoint create` would import dataclasses
# (and with it inspect, ast, dis) for them, more than a tenth of Python's own start.


class Found:
    """What lstat said of a file found on disk."""

    __slots__ = ("ctime_ns", "ino", "kind", "mode", "mtime_ns", "size")

    def __init__(
        self, kind: str, mode: int, size: int, mtime_ns: int, ino: int, ctime_ns: int
    ) -> None:
        self.kind = kind
        self.mode = mode
        self.size = size
        self.mtime_ns = mtime_ns
        self.ino = ino
        self.ctime_ns = ctime_ns

    def _fields(self) -> tuple[object, ...]:
        return (self.kind, self.mode, self.size, self.mtime_ns, self.ino, self.ctime_ns)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Found) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __repr__(self) -> str:
        return (
            "Found(kind={!r}, mode={!r}, size={!r}, mtime_ns={!r}, ino={!r}, ctime_ns={!r})".format(
                *self._fields()
            )
        )


class Scan:
    """Files found on disk: path -> what lstat said; plus those over the size cap."""

    def __init__(
        self,
        files: dict[str, Found] | None = None,
        skipped: list[str] | None = None,
        unreadable: list[str] | None = None,
    ) -> None:
        self.files: dict[str, Found] = {} if files is None else files
        self.skipped: list[str] = [] if skipped is None else skipped
        # Folders that could not be listed (permissions): what they hold is unknown.
        self.unreadable: list[str] = [] if unreadable is None else unreadable


def classify(st: os.stat_result) -> str | None:
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
    # The folders being read, deepest last: a stack, not a function calling itself (a closure
    # that does is a reference cycle, which kept a whole scan alive until the cyclic collector
    # ran). Entries come in the order the recursive walk gave them.
    open_folders: list[tuple[str, list[tuple[str, Any]], os._ScandirIterator[str]]] = []

    def enter(rel_dir: str, chain: list[tuple[str, Any]]) -> None:
        spec = rules.spec_for(rel_dir)
        if spec is not None and (not chain or chain[-1][0] != rel_dir):
            chain = [*chain, (rel_dir, spec)]
        try:
            entries = os.scandir(root / rel_dir if rel_dir else root)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError:
            found.unreadable.append(rel_dir)
            return
        open_folders.append((rel_dir, chain, entries))

    enter(under, rules.chain_for(under.rsplit("/", 1)[0] if "/" in under else "") if under else [])
    try:
        while open_folders:
            rel_dir, chain, entries = open_folders[-1]
            for entry in entries:
                name = entry.name
                if name in NEVER_CAPTURED:
                    continue
                rel = f"{rel_dir}/{name}" if rel_dir else name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = classify(st)
                if kind is None:
                    continue
                if rules.ignored(rel, kind == "d", chain):
                    continue
                if kind == "d":
                    enter(rel, chain)
                    break  # into it now; the rest of this folder after it
                if kind == "f" and st.st_size > max_file_bytes:
                    found.skipped.append(rel)
                    continue
                found.files[rel] = Found(
                    kind,
                    stat.S_IMODE(st.st_mode),
                    st.st_size,
                    st.st_mtime_ns,
                    st.st_ino,
                    st.st_ctime_ns,
                )
            else:
                open_folders.pop()
                entries.close()
    finally:
        for _, _, entries in open_folders:
            entries.close()
    return found


class ChangingFileError(OSError):
    """A file that kept changing while it was read: no consistent copy of it could be taken."""


# Reads of one file before it is reported as changing (each one seen changed by another writer).
READ_ATTEMPTS = 4
# A write within this long of the read may share the file's change time with it (the kernel
# stamps times from a clock that ticks every few milliseconds): such a file is read twice.
SAME_TICK_SECONDS = 0.05


def read_file(root: Path, rel: str, kind: str) -> bytes:
    """A file's bytes (a link's target), read consistently: a file whose size or change time
    moved while it was read, or that was changed within a clock tick of the read and reads
    differently a second time, is read again; one that never holds still raises
    ChangingFileError. Never follows a link, never blocks on a fifo swapped in for the file."""
    path = os.path.join(root, rel)  # a string: a scan reads every new file through here
    if kind == "l":
        return os.readlink(path).encode("utf-8", "surrogateescape")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with open(fd, "rb", buffering=0) as handle:
        previous: bytes | None = None
        for _ in range(READ_ATTEMPTS):
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise OSError(f"{rel} is no longer a regular file")
            os.lseek(fd, 0, os.SEEK_SET)
            data = handle.readall()
            after = os.fstat(fd)
            if _stamp(after) != _stamp(before) or len(data) != after.st_size:
                previous = None  # changed while read
                continue
            if after.st_ctime_ns / 1e9 < time.time() - SAME_TICK_SECONDS or previous == data:
                return data
            previous = data  # changed just before: a second read must agree
        raise ChangingFileError(f"{rel} kept changing while it was read")


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# -- creating ----------------------------------------------------------------------------------


def settings_for(store: Store, settings: config.Settings | None) -> config.Settings:
    return settings if settings is not None else config.load(store.root)


class StoredRules(journal.RuleSources):
    """Compiled ignore files kept in the store (`store_meta`), so that a cold process (the CLI,
    a hook) rebuilds each from one regex instead of importing pathspec and compiling every
    pattern (about 30 ms of a 100 ms checkpoint). Keyed by the file's lines (and how they are
    compiled): a changed `.gitignore`, a new nested one or a changed setting has other lines,
    hence another key, and is compiled afresh; nothing needs invalidating."""

    PREFIX = "ignore-rules:"
    # Past this many kept, the old ones go (compiled again when a file has those lines again).
    MOST = 1024

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> str | None:
        row = self.store.query_one(
            "SELECT value FROM store_meta WHERE key = ?", (self.PREFIX + key,)
        )
        return None if row is None else str(row[0])

    def put(self, key: str, source: str) -> None:
        try:
            with self.store.transaction() as db:
                (kept,) = db.execute(
                    "SELECT COUNT(*) FROM store_meta WHERE key >= ? AND key < ?",
                    (self.PREFIX, self.PREFIX[:-1] + ";"),
                ).fetchone()
                if kept >= self.MOST:
                    db.execute(
                        "DELETE FROM store_meta WHERE key >= ? AND key < ?",
                        (self.PREFIX, self.PREFIX[:-1] + ";"),
                    )
                db.execute(
                    "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)",
                    (self.PREFIX + key, source),
                )
        except (sqlite3.Error, EngramError):
            pass  # a read-only or busy store: compiled again next time, nothing lost


def rules_for(store: Store, settings: config.Settings) -> IgnoreRules:
    return journal.checkpoint_rules(
        store.root,
        settings["watch.exclude"],
        include_secret_files=bool(settings["checkpoints.include_secret_files"]),
        editor_files=settings["watch.editor_files"],
        sources=StoredRules(store),
    )
