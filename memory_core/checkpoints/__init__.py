"""Checkpoints: the workspace's files at a moment, stored so that a rollback is byte-exact.

Storage, the way git stores a tree (`trees`, `storage`):
- a blob is one file's content, keyed by the SHA-256 of its bytes and stored zstd-compressed
  (small ones packed together), so identical content is stored once across every checkpoint;
- a tree is one directory's listing (name, kind, mode, hash, size), content-addressed too, so a
  checkpoint only adds the trees on the path from a changed file up to the root;
- a checkpoint row names its root tree. `manifest()` flattens it to (path, mode, hash, size).

Cost grows with the files changed since the previous checkpoint, not with the workspace
(`capture`, `build`):
- the stat cache (`checkpoint_index`, git's index) remembers mtime, size and inode of every file
  when it was hashed, so a full scan reads only files whose stat changed;
- when a change source vouches for the whole time since the latest checkpoint (a running
  watcher's `ChangeJournal`, watchman's clock, git's status), only the paths it names are even
  looked at.

`.gitignore` files (nested ones too) and the `watch.exclude` setting are honoured (`disk`);
`.git/` and `.engram/` are never captured. Files over `checkpoints.max_file_bytes` are left out
and listed. Retention (count, age, store cap) removes old checkpoints and collects unreferenced
blobs (`retention`).

Rollback is planned first (`plan_rollback`: every tree and blob verified, every path checked:
no `..`, no `.git`, no symbolic link on the way, nothing outside the root) and only then applied
(`apply_plan`), so a corrupt or hostile manifest is refused with nothing written. A front end
that owns open buffers (the language server) applies those itself and passes them as `skip`.
`rollback()` does it all, after an automatic pre-rollback checkpoint that makes it undoable.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_core.checkpoints import buffers
    from memory_core.checkpoints.capture import REASONS, Capture, create, every_n_turns
    from memory_core.checkpoints.disk import Scan, scan
    from memory_core.checkpoints.history import (
        diff,
        file_content,
        get,
        list_checkpoints,
        manifest,
        patch,
    )
    from memory_core.checkpoints.restore import (
        FileWrite,
        RollbackPlan,
        apply_plan,
        plan_rollback,
        prepare_undo,
        record_rollback,
        remove_file,
        rollback,
        write_file,
    )
    from memory_core.checkpoints.retention import delete, enforce_retention, gc, space
    from memory_core.checkpoints.storage import TreeCache, read_blob, stored_bytes
    from memory_core.checkpoints.trees import (
        NEVER_CAPTURED,
        CorruptCheckpointError,
        Entry,
        Tree,
    )
    from memory_core.journal import ChangeJournal

# Each name and the module it comes from, imported when first used: a cold `engram checkpoint
# create` needs the capture, not the rollback, retention's reports or the diff (their imports
# were a fifth of the command's time).
_WHERE = {
    "buffers": "memory_core.checkpoints.buffers",
    **dict.fromkeys(("REASONS", "Capture", "create", "every_n_turns"), "capture"),
    **dict.fromkeys(("Scan", "scan"), "disk"),
    **dict.fromkeys(
        ("diff", "file_content", "get", "list_checkpoints", "manifest", "patch"), "history"
    ),
    **dict.fromkeys(
        (
            "FileWrite",
            "RollbackPlan",
            "apply_plan",
            "plan_rollback",
            "prepare_undo",
            "record_rollback",
            "remove_file",
            "rollback",
            "write_file",
        ),
        "restore",
    ),
    **dict.fromkeys(("delete", "enforce_retention", "gc", "space"), "retention"),
    **dict.fromkeys(("TreeCache", "read_blob", "stored_bytes"), "storage"),
    **dict.fromkeys(("NEVER_CAPTURED", "CorruptCheckpointError", "Entry", "Tree"), "trees"),
    "ChangeJournal": "memory_core.journal",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(where if "." in where else f"{__name__}.{where}")
    value = module if where == f"{__name__}.{name}" else getattr(module, name)
    globals()[name] = value
    return value


__all__ = [
    "NEVER_CAPTURED",
    "REASONS",
    "Capture",
    "ChangeJournal",
    "CorruptCheckpointError",
    "Entry",
    "FileWrite",
    "RollbackPlan",
    "Scan",
    "Tree",
    "TreeCache",
    "apply_plan",
    "buffers",
    "create",
    "delete",
    "diff",
    "enforce_retention",
    "every_n_turns",
    "file_content",
    "gc",
    "get",
    "list_checkpoints",
    "manifest",
    "patch",
    "plan_rollback",
    "prepare_undo",
    "read_blob",
    "record_rollback",
    "remove_file",
    "rollback",
    "scan",
    "space",
    "stored_bytes",
    "write_file",
]
