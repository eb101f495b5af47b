"""Rollback: planned and verified first (every listing and blob, every path), then written;
the pre-rollback checkpoint makes it undoable."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_core import clock, config, cyclic_gc, events
from memory_core.checkpoints.capture import (
    Capture,
    capture_workspace,
    commit,
    create,
)
from memory_core.checkpoints.disk import StoredRules, settings_for
from memory_core.checkpoints.history import checkpoint_dict, find_row, unreadable_of
from memory_core.checkpoints.storage import (
    TreeLookup,
    Writer,
    load_listing,
    load_listings,
    read_blob,
    read_blobs,
)
from memory_core.checkpoints.trees import (
    CorruptCheckpointError,
    Entry,
    Row,
    Tree,
    decode_tree,
    listing_rows,
    row_entry,
    tree_rows,
    valid_name,
)
from memory_core.errors import EngramError
from memory_core.journal import ChangeJournal, EditorFiles, GitInBackground
from memory_core.store import Store

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
    target: TreeLookup | None = field(default=None, repr=False)
    # Writes left out, with why (the file could not be saved in the pre-rollback checkpoint).
    blocked: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        planned: dict[str, Any] = {
            "checkpoint": self.checkpoint["id"],
            "restore": [w.path for w in self.writes],
            "remove": list(self.removes),
            "unchanged": self.unchanged,
        }
        if self.blocked:
            planned["blocked"] = list(self.blocked)
        return planned


def _check_path(root: Path, rel: str, folders: dict[str, bool] | None = None) -> None:
    """Refuse a path that leaves the root, names .git, or passes through a symbolic link.

    `folders` caches what each folder on the way was found to be, for a plan that checks every
    path of a large workspace (their folders are shared); writes check again without it.
    """
    parts = rel.split("/")
    if not rel or any(not valid_name(part) for part in parts):
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


class _Listings:
    """The listings a plan reads, each read and checked once: their verified bytes by digest
    (which the capture then edits as any checkpoint does, without decoding them) and their
    rows as sets to compare (`listing_rows`). `trees`: a long-running caller's decoded
    listings (the language server's), used where they hold one; `pending`: the capture's new
    listings, not yet in the store."""

    def __init__(self, store: Store, trees: dict[str, Tree] | None) -> None:
        self.store = store
        self.trees = trees
        self.data: dict[str, bytes] = {}
        self.rows: dict[str, frozenset[Row]] = {}
        self.pending: Writer | None = None

    def _read(self, digest: str, where: str) -> bytes | Tree:
        pending = self.pending
        found: bytes | Tree | None = None
        if pending is not None:
            found = pending.decoded.get(digest) or pending.encoded.get(digest)
        if found is None and self.trees is not None:
            found = self.trees.get(digest)
        if found is None:
            found = self.data.get(digest)
        if found is None:
            found = self.data[digest] = load_listing(self.store, digest, where)
        return found

    def rows_of(self, digest: str, where: str) -> frozenset[Row]:
        known = self.rows.get(digest)
        if known is None:
            listing = self._read(digest, where)
            known = self.rows[digest] = (
                tree_rows(listing) if isinstance(listing, Tree) else listing_rows(listing, where)
            )
        return known

    def read_many(self, digests: list[str]) -> None:
        """Read these listings in one query (those missing or damaged are left for `_read`
        to report, with the folder's name)."""
        unknown = [d for d in digests if d not in self.data and d not in self.rows]
        if self.trees is not None:
            unknown = [d for d in unknown if d not in self.trees]
        if unknown:
            self.data.update(load_listings(self.store, unknown))

    def tree(self, digest: str, where: str) -> Tree:
        listing = self._read(digest, where)
        return listing if isinstance(listing, Tree) else decode_tree(listing, where)


class _Changes:
    """Files to write (path, target entry) and files to remove, to turn one tree into another:
    listings are compared by digest and only folders that differ are read, and in those, only
    the rows that differ become entries. Methods, not closures that call themselves: such a
    closure is a reference cycle, which kept every listing read alive until the cyclic
    collector found it."""

    def __init__(self, listings: _Listings) -> None:
        self.listings = listings
        self.writes: list[tuple[str, Entry]] = []
        self.removes: list[str] = []

    def read_ahead(self, target_root: str, latest_root: str) -> None:
        """Read what the capture and the comparison will read (while git works), a folder
        level at a time, each level's listings in one query: below each folder where the
        checkpoint differs from the latest one, the checkpoint's listing (its rows) and the
        latest's bytes, which the capture edits. A listing holding no folder is not parsed
        on the latest's side: the capture edits its bytes, the comparison reads the new one."""
        level = [(target_root, latest_root, "")]
        while level:
            self.listings.read_many([digest for pair in level for digest in pair[:2]])
            below: list[tuple[str, str, str]] = []
            for target_digest, latest_digest, prefix in level:
                where = prefix + "/" if prefix else ""
                target = self.listings.rows_of(target_digest, where)
                if not any(row[1] == "d" for row in target):
                    continue
                latest = self.listings.rows_of(latest_digest, where)
                had = {row[0]: row for row in latest - target}
                for row in target - latest:
                    have = had.get(row[0])
                    if row[1] == "d" and have is not None and have[1] == "d":
                        below.append((row[3], have[3], f"{prefix}/{row[0]}" if prefix else row[0]))
            level = below

    def every_file(self, digest: str, prefix: str) -> Iterator[tuple[str, Entry]]:
        tree = self.listings.tree(digest, prefix + "/")
        for name, entry in tree.entries.items():
            rel = f"{prefix}/{name}"
            if entry.kind == "d":
                yield from self.every_file(entry.hash, rel)
            else:
                yield rel, entry

    def compare(self, target_digest: str, current_digest: str | None, prefix: str) -> None:
        where = prefix + "/" if prefix else ""
        target = self.listings.rows_of(target_digest, where)
        current = self.listings.rows_of(current_digest, where) if current_digest else frozenset()
        # Only the rows that differ (one set operation in C; most are the same); a name is in
        # a listing once, so a name's differing row on one side means its row on the other,
        # if any, differs too.
        wanted = {row[0]: row_entry(row) for row in target - current}
        had = {row[0]: row_entry(row) for row in current - target}
        for name in sorted(wanted.keys() | had.keys()):
            rel = f"{prefix}/{name}" if prefix else name
            want, have = wanted.get(name), had.get(name)
            if want is not None and have is not None:
                if want.kind == "d" and have.kind == "d":
                    if want.hash != have.hash:
                        self.compare(want.hash, have.hash, rel)
                    continue
                if (want.kind, want.hash, want.mode) == (have.kind, have.hash, have.mode):
                    continue
            if have is not None and (want is None or want.kind == "d" or have.kind == "d"):
                # Absent from the checkpoint's (verified) listing of this folder, or of
                # another kind there: the current file or folder goes.
                if have.kind == "d":
                    self.removes.extend(rel_ for rel_, _ in self.every_file(have.hash, rel))
                else:
                    self.removes.append(rel)
            if want is not None:
                if want.kind == "d":
                    self.writes.extend(self.every_file(want.hash, rel))
                else:
                    self.writes.append((rel, want))


@cyclic_gc.paused()
def plan_rollback(
    store: Store,
    ref: str,
    *,
    settings: config.Settings | None = None,
    journal: ChangeJournal | None = None,
    hints: Iterable[str] | None = None,
    tree_cache: dict[str, Tree] | None = None,
    git: GitInBackground | None = None,
) -> RollbackPlan:
    """Work out and verify a rollback to checkpoint `ref`, writing nothing.

    The workspace as it is now is captured like any incremental checkpoint (from the change
    journal, watchman or git when they vouch), then compared with the checkpoint tree by tree:
    the cost grows with what differs, not with the workspace. Raises CorruptCheckpointError for
    a missing, corrupt or unsafe manifest or blob, and EngramError for a path that would be
    written through a symbolic link. `git`: a `git status` the caller started already (a cold
    `engram rollback` starts it before loading this code).
    """
    settings = settings_for(store, settings)
    row = find_row(store, ref)
    root = store.root
    if journal is not None and not journal.sync():
        journal = None  # it could not show it has seen every change made until now
    # Listings read once for the capture and the comparison (and kept, given a cache).
    listings = _Listings(store, tree_cache)
    if journal is not None:
        git = None  # (the journal vouches; a status started by the caller goes unused)
    elif git is not None or not settings["checkpoints.watchman"] or not shutil.which("watchman"):
        # Only git can vouch (or nothing): start its status now (unless the caller did), and
        # meanwhile read the listings where the checkpoint differs from the latest one, which
        # the capture and the comparison read next (mostly the same ones): git works in its
        # own process.
        git = git if git is not None else GitInBackground(root)
        latest = store.query_one(
            "SELECT root_tree FROM checkpoints ORDER BY created_at DESC, rowid DESC LIMIT 1"
        )
        if latest is not None:
            with contextlib.suppress(CorruptCheckpointError):  # the plan itself reports it
                _Changes(listings).read_ahead(row["root_tree"], latest["root_tree"])
    capture = capture_workspace(
        store,
        settings,
        clock.now(),
        watcher=journal,
        hints=hints,
        tree_cache=tree_cache,
        git=git,
        listing_data=listings.data,
    )
    listings.pending = capture.writer
    changes = _Changes(listings)
    changes.compare(row["root_tree"], capture.root_tree, "")
    planned_writes, planned_removes = changes.writes, changes.removes
    # An editor's swap, lock or auto-save file in a checkpoint made before engram knew its name
    # is neither written back over the live one nor removed: it holds someone's unsaved work.
    editor_files = EditorFiles(settings["watch.editor_files"], StoredRules(store))
    planned_writes = [(rel, entry) for rel, entry in planned_writes if rel not in editor_files]
    planned_removes = [rel for rel in planned_removes if rel not in editor_files]
    folders: dict[str, bool] = {}
    writes: list[FileWrite] = []
    removed_set = set(planned_removes)
    if row["reason"] == "pre-rollback":
        # An undo: a link on the way that this plan removes (the rollback being undone restored
        # it where the later state had a folder) is removed, never followed, and the folder
        # made again; refusing it would leave the rollback without an undo. (A link found in
        # the way of an ordinary rollback is still refused: see _real_folder.)
        for rel in removed_set:
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.lstat(os.path.join(root, rel)).st_mode):
                    folders[rel] = False
    contents = read_blobs(store, [entry.hash for _, entry in planned_writes])
    for rel, entry in planned_writes:
        _check_path(root, rel, folders)
        content = contents.get(entry.hash)
        if content is None:
            content = read_blob(store, entry.hash, path=rel)  # (or the reason it cannot be)
        existed = rel in removed_set or _exists(root, rel)
        writes.append(
            FileWrite(rel, content, entry.mode, "link" if entry.kind == "l" else "file", existed)
        )
    # Files the checkpoint left out on purpose (over the size cap) are not "created after" it;
    # secret files and ignored files never reach either tree. Nor is what it could not read
    # (permissions, a file that kept changing): never removed, whatever is there now.
    keep = set(json.loads(row["skipped"])) | set(capture.skipped)
    not_read = _Prefixes(unreadable_of(row))
    # What the pre-rollback checkpoint could not read is not in it: overwriting it could not
    # be undone, so it is left as it is and reported.
    not_saved = _Prefixes(capture.unreadable)
    blocked = [
        {"path": w.path, "error": f"not restored: {w.path} could not be read to save it first"}
        for w in writes
        if not_saved.holds(w.path)
    ]
    writes = [w for w in writes if not not_saved.holds(w.path)]
    written = {w.path for w in writes}
    removes = sorted(
        rel
        for rel in planned_removes
        if rel not in keep and rel not in written and not not_read.holds(rel)
    )
    for rel in removes:
        _check_path(root, rel, folders)
    unchanged = max(0, int(row["file_count"]) - len(writes))
    return RollbackPlan(
        checkpoint_dict(row),
        writes,
        removes,
        unchanged,
        root,
        capture,
        TreeLookup(store, row["root_tree"]),
        blocked,
    )


class _Prefixes:
    """Paths, and whether a path is one of them or inside one ("." is the whole workspace)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = set(paths)

    def holds(self, rel: str) -> bool:
        if not self.paths:
            return False
        if "." in self.paths or rel in self.paths:
            return True
        parts = rel.split("/")
        return any("/".join(parts[:depth]) in self.paths for depth in range(1, len(parts)))


def _exists(root: Path, rel: str) -> bool:
    try:
        os.lstat(os.path.join(root, rel))
    except OSError:
        return False
    return True


class FolderChangedError(EngramError):
    """A folder the rollback writes into was replaced or moved while it ran: it stops there."""


_OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC


class Folders:
    """The project's folders a rollback writes into, each opened once relative to the folder
    above it (`openat`), never through a symbolic link: a folder swapped for a link while the
    rollback runs cannot redirect a write, because names are only ever looked up inside a
    folder already held. Before and after each write, the folders on the way are checked to be
    still where they were (`check`); when one is not, the rollback stops (FolderChangedError).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fds: dict[str, int] = {"": os.open(root, _OPEN_FOLDER)}
        self._ids: dict[str, tuple[int, int]] = {"": _identity(os.fstat(self._fds[""]))}

    def __enter__(self) -> Folders:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def open(self, rel_dir: str, *, create: bool, for_path: str) -> int | None:
        """The folder `rel_dir`, opened (None: missing, or a file, and not `create`). With
        `create`, missing folders are made and a file where a folder must be is removed (it was
        created after the checkpoint); a symbolic link on the way is refused."""
        known = self._fds.get(rel_dir)
        if known is not None:
            return known
        parent, _, name = rel_dir.rpartition("/")
        parent_fd = self.open(parent, create=create, for_path=for_path)
        if parent_fd is None:
            return None
        try:
            fd = os.open(name, _OPEN_FOLDER, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                return None
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=parent_fd)
            fd = self._open_made(name, parent_fd, rel_dir, for_path)
        except OSError:  # ENOTDIR: a file; ELOOP: a symbolic link
            found = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            if stat.S_ISLNK(found.st_mode):
                raise _link_refused(self.root, rel_dir, for_path) from None
            if not create:
                return None
            os.unlink(name, dir_fd=parent_fd)  # a file where a folder must be
            os.mkdir(name, 0o777, dir_fd=parent_fd)
            fd = self._open_made(name, parent_fd, rel_dir, for_path)
        self._fds[rel_dir] = fd
        self._ids[rel_dir] = _identity(os.fstat(fd))
        return fd

    def _open_made(self, name: str, parent_fd: int, rel_dir: str, for_path: str) -> int:
        try:
            return os.open(name, _OPEN_FOLDER, dir_fd=parent_fd)
        except OSError:  # replaced between the mkdir and the open
            raise _changed(rel_dir, for_path) from None

    def check(self, rel_dir: str, for_path: str) -> None:
        """Raise FolderChangedError unless every held folder from the root down to `rel_dir`
        is still the folder found at its name."""
        if _identity(os.stat(self.root, follow_symlinks=False)) != self._ids[""]:
            raise _changed(".", for_path)
        prefix = ""
        for part in rel_dir.split("/") if rel_dir else []:
            parent_fd = self._fds[prefix]
            prefix = f"{prefix}/{part}" if prefix else part
            try:
                found = _identity(os.stat(part, dir_fd=parent_fd, follow_symlinks=False))
            except OSError:
                found = None
            if found != self._ids.get(prefix):
                raise _changed(prefix, for_path)

    def forget(self, rel_dir: str) -> None:
        """A folder removed (left empty by a removal): its handle goes too."""
        fd = self._fds.pop(rel_dir, None)
        self._ids.pop(rel_dir, None)
        if fd is not None:
            os.close(fd)


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def _changed(folder: str, rel: str) -> FolderChangedError:
    return FolderChangedError(
        f"stopped at {rel}: {folder} was replaced or moved while the rollback was writing",
        hint="nothing was written through it; check the folder, then roll back again "
        "(or undo with the pre-rollback checkpoint)",
    )


def _link_refused(root: Path, folder: str, rel: str) -> EngramError:
    current = os.path.join(root, folder)
    target = os.path.realpath(current)
    where = "outside the workspace" if not _inside(root, Path(target)) else "elsewhere"
    return EngramError(
        f"refusing to write {rel}: {folder} is a symbolic link to {target} ({where})",
        hint="remove the link, then roll back again; nothing was written",
    )


_TEMP_NAMES = itertools.count()


def _rewrite_in_place(folder_fd: int, name: str, write: FileWrite) -> tuple[bytes, int] | None:
    """Overwrite an existing regular file that has no other name (no hard link elsewhere, which
    would change too), without following a link; None when it is not such a file, else what it
    held and its mode (to put back should its folder turn out to have moved, `_put_back`).

    The folder is left alone, so git's untracked cache and stat data of the folder stay valid
    (a temp file and a rename changed the folder, and the next `git status` read every folder
    a rollback touched and rewrote its index: 25-30 ms for 100 files). The content is written
    over the old and then cut to length, so the file is never empty in between.
    """
    try:
        seen = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        # Only a regular file is opened (opening a fifo or a device may block or act).
        if not stat.S_ISREG(seen.st_mode) or seen.st_nlink != 1:
            return None
        flags = os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
        fd = os.open(name, flags, dir_fd=folder_fd)
    except OSError:
        return None  # missing, not readable and writable: the temp file path decides
    with open(fd, "r+b", buffering=0) as handle:
        st = os.fstat(fd)
        if _identity(st) != _identity(seen) or st.st_nlink != 1:
            return None  # replaced in between
        held = handle.readall()
        handle.seek(0)
        _write_all(handle, write.content)
        handle.truncate(len(write.content))
        if stat.S_IMODE(st.st_mode) != write.mode:
            os.fchmod(fd, write.mode)
    return held, stat.S_IMODE(st.st_mode)


def _put_back(folder_fd: int, name: str, held: tuple[bytes, int]) -> None:
    """Give a file rewritten in place what it held (its folder moved while it was written)."""
    flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
    with contextlib.suppress(OSError), open(os.open(name, flags, dir_fd=folder_fd), "wb") as out:
        _write_all(out, held[0])
        out.truncate(len(held[0]))
        os.fchmod(out.fileno(), held[1])


def _keep_name(folder_fd: int, name: str) -> str | None:
    """A second name for `name` in its folder (a hard link, never following a link), so that
    a step made while the folder was being moved away can be taken back; None when there is
    nothing at `name` or the file system makes no hard links."""
    while True:
        keep = f".{name[:32]}.engram-rollback-keep-{os.getpid()}-{next(_TEMP_NAMES)}"
        try:
            os.link(name, keep, src_dir_fd=folder_fd, dst_dir_fd=folder_fd, follow_symlinks=False)
            return keep
        except FileExistsError:
            continue
        except OSError:
            return None


def _remove_empty_folders(parent_fd: int, name: str) -> bool:
    """Remove the folder `name` if it holds nothing but empty folders, never following a link;
    False, everything left as it was, when it holds anything else (looked at before removing)."""
    if not _folders_only(parent_fd, name, remove=False):
        return False
    return _folders_only(parent_fd, name, remove=True)


def _folders_only(parent_fd: int, name: str, *, remove: bool) -> bool:
    try:
        fd = os.open(name, _OPEN_FOLDER, dir_fd=parent_fd)
    except OSError:
        return False
    try:
        for entry in os.listdir(fd):
            found = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(found.st_mode) or not _folders_only(fd, entry, remove=remove):
                return False
        if remove:
            os.rmdir(name, dir_fd=parent_fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _write_all(handle: Any, content: bytes) -> None:
    view, written = memoryview(content), 0
    while written < len(view):
        written += handle.write(view[written:])


def write_file(root: Path, write: FileWrite, folders: Folders | None = None) -> None:
    """Write one restored file, replacing a link, not following it: an existing file with no
    other name is overwritten in place (`_rewrite_in_place`), anything else is written to a
    temp file renamed over it. Every name is looked up in a folder held open (`Folders`).

    Like `git checkout` and `git reset --hard`, it does not fsync what it writes (100 files
    would wait on the disk 100 times), and a process killed while writing a file may leave it
    part written, as git may: what it held is in the pre-rollback checkpoint, committed and
    synced before any file is written, and rolling back to that checkpoint restores it.
    """
    _check_path(root, write.path)  # names; and a link anywhere on the way is refused first
    if folders is None:
        with Folders(root) as own:
            write_file(root, write, own)
        return
    parent, _, name = write.path.rpartition("/")
    folder_fd = folders.open(parent, create=True, for_path=write.path)
    assert folder_fd is not None
    folders.check(parent, write.path)
    held = _rewrite_in_place(folder_fd, name, write) if write.kind == "file" else None
    if held is not None:
        try:
            folders.check(parent, write.path)
        except FolderChangedError:
            # The folder was moved away as the write went in: the write went with it (the one
            # window no check before a write closes). Take it back there, then stop.
            _put_back(folder_fd, name, held)
            raise
        return
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode):
            # A folder where the checkpoint had a file. Files created after the checkpoint were
            # removed already; what is left (ignored files, say) is not ours to delete. Empty
            # folders are no content (a checkpoint does not hold them, as git does not): a
            # tree of nothing else goes.
            if not _remove_empty_folders(folder_fd, name):
                raise EngramError(
                    f"{write.path} is now a folder that still holds files the checkpoint does not know",
                    hint="move them away and roll back again",
                )
            folders.forget(write.path)
    while True:
        # (A short piece of the name: the whole one plus the suffix could pass the 255 bytes
        # a name may have.)
        tmp = f".{name[:32]}.engram-rollback-{os.getpid()}-{next(_TEMP_NAMES)}"
        try:
            if write.kind == "link":
                os.symlink(write.content.decode("utf-8", "surrogateescape"), tmp, dir_fd=folder_fd)
                break
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(tmp, flags | os.O_CLOEXEC, 0o600, dir_fd=folder_fd)
            break
        except FileExistsError:
            continue  # left by a killed rollback of a process with the same id: another name
    try:
        if write.kind != "link":
            with open(fd, "wb", buffering=0) as handle:
                _write_all(handle, write.content)
                os.fchmod(handle.fileno(), write.mode)
        folders.check(parent, write.path)
        keep = _keep_name(folder_fd, name)
        os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder_fd)
        raise
    try:
        folders.check(parent, write.path)
    except FolderChangedError:
        # Moved away as the rename went in: put back what the name held there (or nothing).
        with contextlib.suppress(OSError):
            if keep is not None:
                os.replace(keep, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            else:
                os.unlink(name, dir_fd=folder_fd)
        raise
    if keep is not None:
        with contextlib.suppress(OSError):
            os.unlink(keep, dir_fd=folder_fd)


def remove_file(root: Path, rel: str, folders: Folders | None = None) -> None:
    """Remove a file created after the checkpoint, and folders it leaves empty."""
    _check_path(root, rel)
    if folders is None:
        with Folders(root) as own:
            remove_file(root, rel, own)
        return
    parent, _, name = rel.rpartition("/")
    folder_fd = folders.open(parent, create=False, for_path=rel)
    if folder_fd is None:
        return  # its folder is gone (or is a file now): so is it
    folders.check(parent, rel)
    keep = _keep_name(folder_fd, name)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=folder_fd)
    if keep is not None:
        try:
            folders.check(parent, rel)
        except FolderChangedError:
            # Moved away as the file was removed: it is given its name back there.
            with contextlib.suppress(OSError):
                os.rename(keep, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            raise
        with contextlib.suppress(OSError):
            os.unlink(keep, dir_fd=folder_fd)
    while parent:
        above, _, folder = parent.rpartition("/")
        above_fd = folders.open(above, create=False, for_path=rel)
        if above_fd is None:
            break
        try:
            os.rmdir(folder, dir_fd=above_fd)
        except OSError:
            break
        folders.forget(parent)
        parent = above


@cyclic_gc.paused()
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
    settings = settings_for(store, settings)
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
    # The one write a rollback syncs to disk: with it committed, whatever a power cut does to
    # the files written next can be undone (write_file does not fsync, like git).
    store.query("PRAGMA synchronous = FULL")
    try:
        return commit(
            store,
            capture,
            name=None,
            description=description,
            reason="pre-rollback",
            settings=settings,
            session_id=session_id,
            fixed_time=now is not None,
        )
    finally:
        store.query("PRAGMA synchronous = NORMAL")


def apply_plan(
    store: Store,
    plan: RollbackPlan,
    *,
    skip: Iterable[str] = (),
    undo_checkpoint: str | None = None,
    now: float | None = None,
    buffers: Iterable[str] = (),
    record: bool = True,
) -> dict[str, Any]:
    """Write a verified plan to disk, except the paths in `skip` (applied by an editor).

    `buffers`: files unchanged on disk whose open buffer's unsaved text the editor reverts;
    the rollback's event counts them, so the timeline says what the editor's message said.
    `record`: False leaves the rollback's event to the caller (`record_rollback`), which may
    record it after its answer.
    """
    skipped = set(skip)
    restored: list[str] = []
    removed: list[str] = []
    failed: list[dict[str, str]] = list(plan.blocked)
    stopped: str | None = None
    with Folders(plan.root) as folders:
        for rel in plan.removes:
            if rel in skipped:
                continue
            try:
                remove_file(plan.root, rel, folders)
                removed.append(rel)
            except FolderChangedError as exc:
                stopped = exc.one_line()
                failed.append({"path": rel, "error": exc.message})
                break
            except (OSError, EngramError) as exc:
                failed.append({"path": rel, "error": getattr(exc, "message", str(exc))})
        for write in plan.writes if stopped is None else []:
            if write.path in skipped:
                continue
            try:
                write_file(plan.root, write, folders)
                restored.append(write.path)
            except FolderChangedError as exc:
                stopped = exc.one_line()
                failed.append({"path": write.path, "error": exc.message})
                break
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
        "buffers": sorted(set(buffers) - set(restored)),
        "unchanged": plan.unchanged,
        "failed": failed,
    }
    if stopped is not None:
        # Something moved folders under the rollback: the rest was not attempted.
        result["stopped"] = stopped
    if record:
        record_rollback(store, result, ts)
    return result


def record_rollback(store: Store, result: dict[str, Any], ts: float) -> None:
    """The rollback's event in the timeline (its writes are credited to it)."""
    events.append(
        store,
        events.Event(
            "checkpoint.rollback", data={k: v for k, v in result.items() if k != "unchanged"}, ts=ts
        ),
    )


def rollback(
    store: Store,
    ref: str,
    *,
    settings: config.Settings | None = None,
    undo: bool = True,
    now: float | None = None,
) -> dict[str, Any]:
    """Roll the workspace back to checkpoint `ref`: plan and verify, checkpoint, then write."""
    settings = settings_for(store, settings)
    plan = plan_rollback(store, ref, settings=settings)
    undo_id = prepare_undo(store, plan, settings=settings, now=now)["id"] if undo else None
    return apply_plan(store, plan, undo_checkpoint=undo_id, now=now)
