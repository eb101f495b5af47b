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
    GitInBackground,
    capture_workspace,
    commit,
    create,
)
from memory_core.checkpoints.disk import settings_for
from memory_core.checkpoints.history import checkpoint_dict, find_row, unreadable_of
from memory_core.checkpoints.storage import TreeLookup, load_tree, read_blob
from memory_core.checkpoints.trees import CorruptCheckpointError, Entry, Tree, valid_name
from memory_core.errors import EngramError
from memory_core.journal import ChangeJournal
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


def _tree_loader(store: Store, pending: dict[str, Tree], cache: dict[str, Tree]) -> Any:
    """Load a tree from a capture's not yet written ones or from the store (verified)."""

    def load(digest: str, where: str) -> Tree:
        built = pending.get(digest)
        return built if built is not None else load_tree(store, digest, where, cache=cache)

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
    changes = _Changes(_tree_loader(store, pending, cache))
    changes.compare(target_tree, current_tree, "")
    return changes.writes, changes.removes


class _Changes:
    """The comparison's state. Methods, not closures that call themselves: such a closure is a
    reference cycle, which kept every listing read alive until the cyclic collector found it."""

    def __init__(self, load: Any) -> None:
        self.load = load
        self.writes: list[tuple[str, Entry]] = []
        self.removes: list[str] = []

    def every_file(self, digest: str, prefix: str) -> Iterator[tuple[str, Entry]]:
        tree = self.load(digest, prefix + "/")
        for name, entry in tree.entries.items():
            rel = f"{prefix}/{name}"
            if entry.kind == "d":
                yield from self.every_file(entry.hash, rel)
            else:
                yield rel, entry

    def compare(self, target_digest: str, current_digest: str | None, prefix: str) -> None:
        where = prefix + "/" if prefix else ""
        target = self.load(target_digest, where)
        current = self.load(current_digest, where) if current_digest else Tree()
        # Only the names whose entries differ (one set operation in C; most are the same).
        differing = target.entries.items() ^ current.entries.items()
        for name in sorted({name for name, _ in differing}):
            rel = f"{prefix}/{name}" if prefix else name
            want, have = target.entries.get(name), current.entries.get(name)
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
) -> RollbackPlan:
    """Work out and verify a rollback to checkpoint `ref`, writing nothing.

    The workspace as it is now is captured like any incremental checkpoint (from the change
    journal, watchman or git when they vouch), then compared with the checkpoint tree by tree:
    the cost grows with what differs, not with the workspace. Raises CorruptCheckpointError for
    a missing, corrupt or unsafe manifest or blob, and EngramError for a path that would be
    written through a symbolic link.
    """
    settings = settings_for(store, settings)
    row = find_row(store, ref)
    root = store.root
    if journal is not None and not journal.sync():
        journal = None  # it could not show it has seen every change made until now
    # Listings read once for the capture and the comparison (and kept, given a cache).
    trees: dict[str, Tree] = tree_cache if tree_cache is not None else {}
    git = None
    if journal is None and (not settings["checkpoints.watchman"] or not shutil.which("watchman")):
        # Only git can vouch (or nothing): start its status now, and meanwhile read the
        # listings where the checkpoint differs from the latest one, which the capture and the
        # comparison read next (mostly the same ones): git works in its own process.
        git = GitInBackground(root)
        latest = store.query_one(
            "SELECT root_tree FROM checkpoints ORDER BY created_at DESC, rowid DESC LIMIT 1"
        )
        if latest is not None:
            with contextlib.suppress(CorruptCheckpointError):  # the plan itself reports it
                _tree_changes(store, row["root_tree"], latest["root_tree"], {}, trees)
    capture = capture_workspace(
        store, settings, clock.now(), watcher=journal, hints=hints, tree_cache=trees, git=git
    )
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
        os.lstat(root / rel)
    except OSError:
        return False
    return True


def _make_folders(root: Path, rel: str) -> None:
    """Make the folders on the way to `rel` real folders, in one pass: a file in the way was
    created after the checkpoint and is removed; a symbolic link is refused (`_check_path`)."""
    _check_path(root, rel)  # names; and a link anywhere on the way is refused before any change
    parts = rel.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        current = os.path.join(root, *parts[:depth])
        try:
            if stat.S_ISDIR(os.lstat(current).st_mode):
                continue
            os.unlink(current)  # a file where a folder must be
        except FileNotFoundError:
            pass
        os.makedirs(os.path.join(root, *parts), exist_ok=True)
        return


_TEMP_NAMES = itertools.count()


def _rewrite_in_place(path: str, write: FileWrite) -> bool:
    """Overwrite an existing regular file that has no other name (no hard link elsewhere, which
    would change too), without following a link; False when it is not such a file.

    The folder is left alone, so git's untracked cache and stat data of the folder stay valid
    (a temp file and a rename changed the folder, and the next `git status` read every folder
    a rollback touched and rewrote its index: 25-30 ms for 100 files). The content is written
    over the old and then cut to length, so the file is never empty in between.
    """
    try:
        seen = os.lstat(path)
        # Only a regular file is opened (opening a fifo or a device may block or act).
        if not stat.S_ISREG(seen.st_mode) or seen.st_nlink != 1:
            return False
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False  # missing, not writable: the temp file path decides
    with open(fd, "wb", buffering=0) as handle:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino) or st.st_nlink != 1:
            return False  # replaced in between
        _write_all(handle, write.content)
        handle.truncate(len(write.content))
        if stat.S_IMODE(st.st_mode) != write.mode:
            os.fchmod(fd, write.mode)
    return True


def _write_all(handle: Any, content: bytes) -> None:
    view, written = memoryview(content), 0
    while written < len(view):
        written += handle.write(view[written:])


def write_file(root: Path, write: FileWrite) -> None:
    """Write one restored file, replacing a link, not following it: an existing file with no
    other name is overwritten in place (`_rewrite_in_place`), anything else is written to a
    temp file renamed over it.

    Like `git checkout` and `git reset --hard`, it does not fsync what it writes (100 files
    would wait on the disk 100 times), and a process killed while writing a file may leave it
    part written, as git may: what it held is in the pre-rollback checkpoint, committed and
    synced before any file is written, and rolling back to that checkpoint restores it.
    """
    _make_folders(root, write.path)
    path = os.path.join(root, write.path)
    if write.kind == "file" and _rewrite_in_place(path, write):
        return
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
    folder, name = os.path.split(path)
    while True:
        tmp = os.path.join(folder, f".{name}.engram-rollback-{os.getpid()}-{next(_TEMP_NAMES)}")
        try:
            if write.kind == "link":
                os.symlink(write.content.decode("utf-8", "surrogateescape"), tmp)
                break
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600
            )
            break
        except FileExistsError:
            continue  # left by a killed rollback of a process with the same id: another name
    if write.kind != "link":
        try:
            with open(fd, "wb", buffering=0) as handle:
                _write_all(handle, write.content)
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
) -> dict[str, Any]:
    """Write a verified plan to disk, except the paths in `skip` (applied by an editor)."""
    skipped = set(skip)
    restored: list[str] = []
    removed: list[str] = []
    failed: list[dict[str, str]] = list(plan.blocked)
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
    settings = settings_for(store, settings)
    plan = plan_rollback(store, ref, settings=settings)
    undo_id = prepare_undo(store, plan, settings=settings, now=now)["id"] if undo else None
    return apply_plan(store, plan, undo_checkpoint=undo_id, now=now)
