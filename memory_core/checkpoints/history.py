"""Reading checkpoints: by id, prefix or name; their manifests; diffs against the workspace."""

from __future__ import annotations

import json
from typing import Any

from memory_core import clock, config
from memory_core.checkpoints.disk import read_file, rules_for, scan, settings_for
from memory_core.checkpoints.storage import TreeLookup, read_blob, stat_cache, walk_manifest
from memory_core.checkpoints.trees import Entry, sha
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store

# -- reading -----------------------------------------------------------------------------------


def checkpoint_dict(row: Any) -> dict[str, Any]:
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
        "unreadable": unreadable_of(row),
    }


def unreadable_of(row: Any) -> list[str]:
    """The paths a stored checkpoint found but could not read (kept in its journal)."""
    try:
        token = json.loads(row["journal"]) if row["journal"] else {}
    except (ValueError, IndexError, KeyError):
        return []
    listed = token.get("unreadable") if isinstance(token, dict) else None
    return [rel for rel in listed if isinstance(rel, str)] if isinstance(listed, list) else []


def find_row(store: Store, ref: str) -> Any:
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
    return checkpoint_dict(find_row(store, ref))


def list_checkpoints(store: Store, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Every checkpoint, newest first."""
    rows = store.query(
        "SELECT * FROM checkpoints ORDER BY created_at DESC, rowid DESC LIMIT ?",
        (limit if limit else -1,),
    )
    return [checkpoint_dict(row) for row in rows]


def manifest(store: Store, ref: str) -> list[dict[str, Any]]:
    """The checkpoint's files: path, mode, hash, size (and kind: file or link), sorted by path."""
    row = find_row(store, ref)
    items = [
        {
            "path": rel,
            "kind": "link" if e.kind == "l" else "file",
            "mode": e.mode,
            "hash": e.hash,
            "size": e.size,
        }
        for rel, e in walk_manifest(store, row["root_tree"])
    ]
    return sorted(items, key=lambda item: item["path"])


def file_content(store: Store, ref: str, rel: str) -> bytes | None:
    """The content of file `rel` in checkpoint `ref` (None: not a file there), reading only the
    folders on its path, verified."""
    entry = TreeLookup(store, find_row(store, ref)["root_tree"]).get(rel)
    return (
        read_blob(store, entry.hash, path=rel) if entry is not None and entry.kind == "f" else None
    )


def _current(store: Store, settings: config.Settings) -> tuple[dict[str, Entry], list[str]]:
    """The workspace as it is now, hashed through the stat cache."""
    rules = rules_for(store, settings)
    found = scan(store.root, rules, int(settings["checkpoints.max_file_bytes"]))
    cache = stat_cache(store)
    # The stat cache is only read here, never written: its rows must name stored blobs.
    current: dict[str, Entry] = {}
    for rel, item in found.files.items():
        cached = cache.get(rel)
        seen = (item.mtime_ns, item.size, item.ino, item.mode)
        if cached is not None and cached[:4] == seen and cached[5] == item.ctime_ns:
            current[rel] = Entry(item.kind, item.mode, str(cached[4]), item.size)
            continue
        try:
            data = read_file(store.root, rel, item.kind)
        except OSError:
            continue
        current[rel] = Entry(item.kind, item.mode, sha(data), item.size)
    return current, found.skipped


def diff(
    store: Store, ref: str, other: str | None = None, *, settings: config.Settings | None = None
) -> dict[str, Any]:
    """What changed between a checkpoint and the workspace now (or another checkpoint)."""
    settings = settings_for(store, settings)
    row = find_row(store, ref)
    before = dict(walk_manifest(store, row["root_tree"]))
    if other is not None:
        other_row = find_row(store, other)
        after = dict(walk_manifest(store, other_row["root_tree"]))
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

    settings = settings_for(store, settings)
    changes = diff(store, ref, settings=settings)
    before = dict(walk_manifest(store, find_row(store, ref)["root_tree"]))
    chunks: list[str] = []
    for rel in [*changes["modified"], *changes["added"], *changes["deleted"]]:
        old = read_blob(store, before[rel].hash, path=rel) if rel in before else b""
        try:
            new = read_file(store.root, rel, "f") if rel not in changes["deleted"] else b""
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
