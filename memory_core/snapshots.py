"""Context snapshots: where the work stood at a moment, so it can be picked up again.

A snapshot holds git's view (branch, HEAD, dirty files, stash count; a folder that is not a
repository still gets a snapshot, with `is_repo: false`), the open documents with cursor and
selection (the language server passes them in: memory_core cannot see an editor), the active
agent session, the task in progress (AIOS's storyId and subtask; by default the active session's
story and subtask) and a note. Restoring never checks out, stashes or writes a file: `restore_plan`
says which documents to reopen where and warns about what moved since (branch differs, HEAD
moved, tree dirty, files gone); the front end reopens them (`window/showDocument`).

Retention: `snapshots.max_count` (50) and `snapshots.max_age_days` (7), through `limits`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory_core import clock, git, limits
from memory_core.config import Settings
from memory_core.errors import NotFoundError, UsageError
from memory_core.redact import redact
from memory_core.store import Store
from memory_core.workspace import relative_path


def _position(value: Any, what: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be an object with line and character, got {value!r}")
    try:
        line, character = int(value.get("line", 0)), int(value.get("character", 0))
    except (TypeError, ValueError):
        raise UsageError(
            f"{what} must have whole-number line and character, got {value!r}"
        ) from None
    if line < 0 or character < 0:
        raise UsageError(f"{what} must not be negative, got {value!r}")
    return {"line": line, "character": character}


def normalise_document(store: Store, document: dict[str, Any]) -> dict[str, Any]:
    """One open document as stored: workspace-relative path, 0-based cursor and selection."""
    if not isinstance(document, dict) or not isinstance(document.get("path"), str):
        raise UsageError(f"an open document needs a path, got {document!r}")
    rel = relative_path(store.root, document["path"])
    cursor = _position(document.get("cursor") or {"line": 0, "character": 0}, "cursor")
    selection = document.get("selection")
    if selection is None:
        selection = {"start": cursor, "end": cursor}
    elif isinstance(selection, dict):
        selection = {
            "start": _position(selection.get("start"), "selection start"),
            "end": _position(selection.get("end"), "selection end"),
        }
    else:
        raise UsageError(f"selection must be an object with start and end, got {selection!r}")
    return {
        "path": rel,
        "cursor": cursor,
        "selection": selection,
        "dirty": bool(document.get("dirty", False)),
    }


def _ts(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        with contextlib.suppress(ValueError):
            return clock.parse_iso(value)
    return None


def active_session(store: Store) -> dict[str, Any] | None:
    """The active agent session, if the sessions feature has one: {id, agent, started_ts}."""
    from memory_core import sessions

    session: Any = sessions.latest(store)
    if not isinstance(session, dict) or not session.get("id"):
        return None
    if session.get("status", "active") != "active":
        return None
    return {
        "id": str(session["id"]),
        "agent": session.get("agent"),
        "started_ts": _ts(session.get("started_at")),
    }


def _new_id(db: sqlite3.Connection) -> str:
    while True:
        candidate = "SN-" + secrets.token_hex(4)
        if db.execute("SELECT 1 FROM snapshots WHERE id = ?", (candidate,)).fetchone() is None:
            return candidate


def _row_dict(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "created_at": clock.iso(row["created_at"]),
        "ts": row["created_at"],
        "label": row["note"] or f"{row['branch'] or 'snapshot'} at {clock.iso(row['created_at'])}",
        "note": row["note"],
        "is_repo": bool(row["is_repo"]),
        "branch": row["branch"],
        "head": row["head"],
        "dirty_files": json.loads(row["dirty_files"]),
        "stash_count": row["stash_count"],
        "open_documents": json.loads(row["open_documents"]),
        "session_id": row["session_id"],
        "agent": row["agent"],
        "story_id": row["story_id"],
        "subtask": row["subtask"],
        # AIOS's "working directory": where the work happened, relative to the workspace root
        # ("." the root itself; an absolute path when it was outside the workspace).
        "working_directory": _data(row).get("working_directory"),
    }


def _data(row: sqlite3.Row) -> dict[str, Any]:
    try:
        data = json.loads(row["data"] or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def working_directory_of(root: Path, path: str | os.PathLike[str] | None) -> str:
    """A working directory as a snapshot keeps it: relative to the root when inside it."""
    if path is None:
        return "."
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return str(absolute)
    return relative.as_posix() if relative.parts else "."


def capture(
    store: Store,
    *,
    note: str | None = None,
    open_documents: Sequence[dict[str, Any]] = (),
    session_id: str | None = None,
    agent: str | None = None,
    story_id: str | None = None,
    subtask: str | None = None,
    working_directory: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Take a snapshot now; with `settings`, retention is applied afterwards.

    The task in progress is `story_id`/`subtask`, else what the session's state says. The
    working directory is the one given (the command line's current directory), else the agent
    session's (its hooks report where the agent runs), else the workspace root.
    """
    now = clock.now() if now is None else now
    documents = [normalise_document(store, doc) for doc in open_documents]
    status = git.status(store.root)
    if session_id is None:
        active = active_session(store)
        if active:
            session_id, agent = active["id"], agent or active.get("agent")
    if session_id is not None and (story_id is None or subtask is None):
        task = store.query_one(
            "SELECT active_story, active_subtask FROM sessions WHERE id = ?", (session_id,)
        )
        if task is not None:
            story_id = story_id if story_id is not None else task["active_story"]
            subtask = subtask if subtask is not None else task["active_subtask"]
    if working_directory is None and session_id is not None:
        agent_row = store.query_one(
            "SELECT cwd FROM agent_sessions WHERE session_id = ?", (session_id,)
        )
        working_directory = agent_row["cwd"] if agent_row is not None else None
    where = working_directory_of(store.root, working_directory)
    with store.transaction() as db:
        snapshot_id = _new_id(db)
        db.execute(
            "INSERT INTO snapshots (id, created_at, note, is_repo, branch, head, dirty_files, "
            "stash_count, open_documents, session_id, agent, story_id, subtask, data) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                snapshot_id,
                now,
                redact(note) if note else None,
                int(status.is_repo),
                status.branch,
                status.head,
                json.dumps(status.dirty_files),
                status.stash_count,
                json.dumps(documents),
                session_id,
                agent,
                redact(story_id) if story_id else None,
                redact(subtask) if subtask else None,
                json.dumps({"working_directory": where}),
            ),
        )
        row = db.execute("SELECT * FROM snapshots WHERE id = ?", (snapshot_id,)).fetchone()
    if settings is not None:
        limits.enforce(store, settings, now=now)
    return _row_dict(row)


def list_snapshots(store: Store, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Snapshots, newest first."""
    rows = store.query(
        "SELECT * FROM snapshots ORDER BY created_at DESC, rowid DESC LIMIT ?",
        (limit if limit is not None else -1,),
    )
    return [_row_dict(row) for row in rows]


def get(store: Store, snapshot_id: str) -> dict[str, Any]:
    row = store.query_one("SELECT * FROM snapshots WHERE id = ?", (snapshot_id,))
    if row is None:
        raise NotFoundError(
            f"no snapshot {snapshot_id!r}", hint="see `engram snapshot list` for the ids"
        )
    return _row_dict(row)


def latest(store: Store) -> dict[str, Any] | None:
    found = list_snapshots(store, limit=1)
    return found[0] if found else None


def restore_plan(store: Store, snapshot_id: str) -> dict[str, Any]:
    """What restoring `snapshot_id` means now: the documents to reopen and the warnings.

    Nothing is changed: no checkout, no stash, no file written.
    """
    snap = get(store, snapshot_id)
    warnings: list[str] = []
    status = git.status(store.root)
    if snap["is_repo"] and not status.is_repo:
        warnings.append("the workspace is no longer a git repository")
    elif snap["is_repo"]:
        if status.branch != snap["branch"]:
            warnings.append(
                f"branch differs: the snapshot was on {snap['branch'] or 'a detached HEAD'}, "
                f"the workspace is on {status.branch or 'a detached HEAD'} (engram does not check out)"
            )
        elif snap["head"] and status.head != snap["head"]:
            warnings.append(
                f"HEAD moved: {snap['head'][:8]} then, {(status.head or 'nothing')[:8]} now"
            )
        if status.dirty_files:
            warnings.append(
                f"the working tree is dirty ({len(status.dirty_files)} file(s) with uncommitted changes)"
            )
    documents = []
    for document in snap["open_documents"]:
        exists = (store.root / document["path"]).is_file()
        if not exists:
            warnings.append(f"{document['path']} is gone")
        documents.append(
            {**document, "exists": exists, "absolute_path": str(store.root / document["path"])}
        )
    where = snap.get("working_directory")
    if where and not (store.root / where).is_dir():
        warnings.append(f"the working directory {where} is gone")
    return {"snapshot": snap, "documents": documents, "warnings": warnings}


def describe(snap: dict[str, Any]) -> str:
    where = (
        f"{snap['branch'] or 'detached'}@{snap['head'][:8] if snap['head'] else 'no commits'}"
        if snap["is_repo"]
        else "not a git repository"
    )
    extras = []
    if snap["dirty_files"]:
        extras.append(f"{len(snap['dirty_files'])} dirty")
    if snap["stash_count"]:
        extras.append(f"{snap['stash_count']} stashed")
    if snap["open_documents"]:
        extras.append(f"{len(snap['open_documents'])} open")
    if snap["session_id"]:
        extras.append(f"session {snap['session_id']}")
    if snap.get("working_directory") not in (None, "."):
        extras.append(f"in {snap['working_directory']}")
    if snap.get("story_id"):
        task = f"story {snap['story_id']}"
        extras.append(task + (f" / {snap['subtask']}" if snap.get("subtask") else ""))
    parts = [snap["id"], snap["created_at"], where]
    if extras:
        parts.append(", ".join(extras))
    if snap["note"]:
        parts.append(snap["note"])
    return "  ".join(parts)
