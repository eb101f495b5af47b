"""File evolution: every change to a workspace file, who made it, which lines, when.

A change has an actor: `editor` (the user typing, reported by the language server), `agent`
(an agent session's tool call, reported by its hook, with the session id), `external` (any other
process writing on disk: a formatter, a build, an agent without hooks) or `git` (a checkout,
commit, reset: one event per HEAD or branch move, never one per file it rewrote).

Rows live in `file_changes` (migration 0003). Each carries the touched line ranges (1-based,
inclusive, in the coordinates of the file after the change), the content hash before and after
and the size after. The hash chain is what makes attribution work without coordination between
processes:

- a change whose content hash equals the last recorded `hash_after` of that file is not a change
  (the editor's own save seen again by a watcher, a duplicate notification) and is skipped;
- an agent's report (its hook) of content that a watcher recorded as `external` moments ago
  re-attributes that row instead of adding a second one (the hook often runs after the watcher
  saw the write). An editor reloading a file changed on disk reports the same content too; that
  is skipped, never re-attributed, so the disk writer keeps the credit.

Bursts (a watcher's batch, a formatter touching 200 files) go through `record_batch` in one
transaction. Before it records, it compares HEAD and branch with what it saw last
(`store_meta`); if they moved, the burst was git's and becomes one git event (and the external
rows of the seconds just before it, written by the same checkout, are folded into it).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_core import clock
from memory_core.errors import UsageError
from memory_core.redact import redact_obj
from memory_core.store import Store
from memory_core.workspace import STORE_DIRNAME, relative_path

ACTORS = ("editor", "agent", "external", "git")
CHANGE_KINDS = ("created", "modified", "deleted", "renamed")
# A hook's report of an agent write re-attributes an `external` row of the same content this recent.
ATTRIBUTION_SECONDS = 30.0
# A checkout rewrites files before it moves HEAD; external rows this recent are folded into the
# git event when the move is seen, and external changes this soon after it are too, when the
# file's content is the one HEAD has (`written_by_git`).
GIT_SETTLE_BEFORE_SECONDS = 5.0
GIT_SETTLE_AFTER_SECONDS = 3.0
# Files larger than this are hashed but not diffed line by line.
DIFF_MAX_BYTES = 2 * 1024 * 1024
GIT_META_KEY = "evolution.git_head"
NEVER_RECORDED = (STORE_DIRNAME, ".git")

LineRange = tuple[int, int]


class Change:
    """One change to record. `after=None` means: read the file now (or it was deleted).

    (Plain classes here: an agent's edit reaches this module from a cold hook process, and
    `dataclasses` loads inspect, ast and dis, more than Python's own start.)"""

    __slots__ = (
        "actor",
        "after",
        "before",
        "change",
        "data",
        "lines",
        "old_path",
        "path",
        "session_id",
        "ts",
    )

    def __init__(
        self,
        path: str,
        actor: str,
        session_id: str | None = None,
        before: str | bytes | None = None,
        after: str | bytes | None = None,
        lines: Sequence[LineRange] | None = None,
        change: str | None = None,
        old_path: str | None = None,
        ts: float | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        self.path = path
        self.actor = actor
        self.session_id = session_id
        self.before = before
        self.after = after
        self.lines = lines
        self.change = change
        self.old_path = old_path
        self.ts = ts
        self.data: dict[str, Any] = {} if data is None else data

    def __repr__(self) -> str:
        return f"Change(path={self.path!r}, actor={self.actor!r}, change={self.change!r})"


class BatchResult:
    __slots__ = ("absorbed", "git_event", "recorded", "skipped")

    def __init__(self) -> None:
        self.recorded: list[dict[str, Any]] = []
        self.skipped = 0
        self.git_event: dict[str, Any] | None = None
        self.absorbed = 0


def content_hash(data: str | bytes) -> str:
    payload = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.blake2b(payload, digest_size=16).hexdigest()


def _as_text(data: str | bytes) -> str:
    return data if isinstance(data, str) else data.decode("utf-8", errors="replace")


def merge_ranges(ranges: Iterable[LineRange]) -> list[LineRange]:
    """Sorted, with overlapping and adjacent ranges merged."""
    merged: list[LineRange] = []
    for start, end in sorted((min(a, b), max(a, b)) for a, b in ranges):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def changed_lines(before: str, after: str) -> list[LineRange]:
    """The line ranges of `after` (1-based, inclusive) that differ from `before`.

    A pure deletion is reported as the line where the text was removed. The common prefix and
    suffix are trimmed first, so the usual small edit to a big file costs one linear scan.
    """
    old, new = before.splitlines(), after.splitlines()
    if old == new:
        return []
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    old_mid, new_mid = old[prefix : len(old) - suffix], new[prefix : len(new) - suffix]
    last_line = max(1, len(new))
    if len(old_mid) * len(new_mid) > 4_000_000:
        # Too big to align line by line cheaply: report the changed block as one range.
        return [(prefix + 1, min(last_line, max(prefix + 1, prefix + len(new_mid))))]
    import difflib

    ranges: list[LineRange] = []
    matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = prefix + j1 + 1
        end = prefix + j2 if j2 > j1 else start
        ranges.append((min(start, last_line), min(end, last_line)))
    return merge_ranges(ranges)


def _line_count(ranges: Sequence[LineRange] | None) -> int:
    return sum(end - start + 1 for start, end in ranges) if ranges else 0


def is_recordable(rel: str) -> bool:
    """False for the store itself, git's folder, and a rollback's own temporary files (written
    and renamed into place within a moment): engram never records those."""
    first = rel.split("/", 1)[0]
    if ".engram-rollback-" in rel.rsplit("/", 1)[-1]:
        return False
    return bool(rel) and rel != "." and first not in NEVER_RECORDED


def _row_dict(row: sqlite3.Row | Mapping[str, Any]) -> dict[str, Any]:
    lines = json.loads(row["lines"]) if row["lines"] else None
    return {
        "id": row["id"],
        "timestamp": clock.iso(row["ts"]),
        "ts": row["ts"],
        "path": row["path"],
        "old_path": row["old_path"],
        "actor": row["actor"],
        "session_id": row["session_id"],
        "change": row["change"],
        "lines": [list(r) for r in lines] if lines else None,
        "line_count": row["line_count"],
        "hash_before": row["hash_before"],
        "hash_after": row["hash_after"],
        "size": row["size"],
        "data": json.loads(row["data"]),
    }


def _last_row(db: sqlite3.Connection, rel: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = db.execute(
        "SELECT * FROM file_changes WHERE (path = ? OR old_path = ?) AND change != 'git' "
        "ORDER BY ts DESC, id DESC LIMIT 1",
        (rel, rel),
    ).fetchone()
    return row


def _record_one(
    db: sqlite3.Connection, root: Path, item: Change, now: float
) -> dict[str, Any] | None:
    if item.actor not in ACTORS or item.actor == "git":
        raise UsageError(
            f"unknown actor {item.actor!r} for a file change",
            hint="use editor, agent or external",
        )
    if item.change is not None and item.change not in CHANGE_KINDS:
        raise UsageError(f"unknown change kind {item.change!r}", hint=", ".join(CHANGE_KINDS))
    rel = relative_path(root, item.path)
    if not is_recordable(rel):
        return None
    ts = item.ts if item.ts is not None else now
    old_rel = relative_path(root, item.old_path) if item.old_path else None

    after_bytes: bytes | None
    kind = item.change
    if kind == "deleted":
        after_bytes = None
    elif item.after is not None:
        after_bytes = item.after.encode("utf-8") if isinstance(item.after, str) else item.after
    else:
        try:
            after_bytes = (root / rel).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            after_bytes = None
        except (IsADirectoryError, PermissionError):
            return None
    if after_bytes is None:
        kind = "deleted"
    hash_after = content_hash(after_bytes) if after_bytes is not None else None

    last = _last_row(db, rel)
    # What the store believes the file holds now: gone if it was deleted or renamed away.
    if last is None:
        known_hash, known_gone = None, False
    elif last["path"] == rel and last["change"] != "deleted":
        known_hash, known_gone = last["hash_after"], False
    else:
        known_hash, known_gone = None, True
    same_as_known = (hash_after is not None and hash_after == known_hash) or (
        hash_after is None and known_gone
    )
    if same_as_known and kind != "renamed":
        if (
            last is not None
            and item.actor == "agent"
            and last["actor"] == "external"
            and ts - float(last["ts"]) <= ATTRIBUTION_SECONDS
        ):
            db.execute(
                "UPDATE file_changes SET actor = ?, session_id = ? WHERE id = ?",
                (item.actor, item.session_id, last["id"]),
            )
            updated = db.execute(
                "SELECT * FROM file_changes WHERE id = ?", (last["id"],)
            ).fetchone()
            return _row_dict(updated)
        return None

    hash_before = content_hash(item.before) if item.before is not None else known_hash
    if hash_before is not None and hash_before == hash_after and kind != "renamed":
        return None
    if kind is None:
        kind = "created" if (known_gone or (last is None and item.before == "")) else "modified"

    lines: list[LineRange] | None
    if item.lines is not None:
        lines = merge_ranges((int(a), int(b)) for a, b in item.lines)
    elif kind == "deleted" or after_bytes is None:
        lines = None
    elif kind == "created" or item.before == "":
        count = max(1, after_bytes.count(b"\n") + (0 if after_bytes.endswith(b"\n") else 1))
        lines = [(1, count)] if after_bytes else []
    elif item.before is not None and len(after_bytes) <= DIFF_MAX_BYTES:
        lines = changed_lines(_as_text(item.before), _as_text(after_bytes))
    else:
        lines = None

    data = redact_obj(dict(item.data)) if item.data else {}
    stored = {
        "ts": float(ts),  # as the REAL column gives it back
        "path": rel,
        "old_path": old_rel,
        "actor": item.actor,
        "session_id": item.session_id,
        "change": kind,
        "lines": json.dumps(lines) if lines is not None else None,
        "line_count": _line_count(lines),
        "hash_before": hash_before,
        "hash_after": hash_after,
        "size": len(after_bytes) if after_bytes is not None else None,
        "data": json.dumps(data, separators=(",", ":")),
    }
    cursor = db.execute(
        "INSERT INTO file_changes (ts, path, old_path, actor, session_id, change, lines, "
        "line_count, hash_before, hash_after, size, data) VALUES (:ts, :path, :old_path, :actor, "
        ":session_id, :change, :lines, :line_count, :hash_before, :hash_after, :size, :data)",
        stored,
    )
    # The row as stored, without reading it back (an ingest records thousands).
    return _row_dict({"id": cursor.lastrowid, **stored})


def record_change(
    store: Store,
    path: str | os.PathLike[str],
    *,
    actor: str,
    session_id: str | None = None,
    before: str | bytes | None = None,
    after: str | bytes | None = None,
    lines: Sequence[LineRange] | None = None,
    now: float | None = None,
    change: str | None = None,
    old_path: str | os.PathLike[str] | None = None,
) -> dict[str, Any] | None:
    """Record one change of `path` by `actor`; returns the stored row, or None if nothing changed.

    `before`/`after` are the whole contents (text or bytes) when the caller has them; without
    `after` the file is read from disk (missing: a deletion). `lines` (1-based inclusive ranges
    in the new text) wins over the lines computed from `before`/`after`. An agent change carries
    its `session_id`.
    """
    result = record_batch(
        store,
        [
            Change(
                path=str(path),
                actor=actor,
                session_id=session_id,
                before=before,
                after=after,
                lines=lines,
                change=change,
                old_path=str(old_path) if old_path is not None else None,
            )
        ],
        now=now,
        check_git=False,
    )
    return result.recorded[0] if result.recorded else None


def _git_move(db: sqlite3.Connection, root: Path) -> dict[str, Any] | None:
    """Compare HEAD with the last one seen (inside the caller's transaction) and remember it."""
    from memory_core import git  # not loaded by an agent's edit (check_git=False)

    head = git.read_head(root)
    if head is None:
        return None
    current = {"branch": head.branch, "commit": head.commit}
    row = db.execute("SELECT value FROM store_meta WHERE key = ?", (GIT_META_KEY,)).fetchone()
    previous = json.loads(row["value"]) if row else None
    if previous == current:
        return None
    db.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (GIT_META_KEY, json.dumps(current)),
    )
    if previous is None:
        return None  # the first look: a baseline, not a move
    if previous.get("branch") != current["branch"]:
        operation = "checkout"
    elif previous.get("commit") is None:
        operation = "commit"
    else:
        operation = "head-moved"  # commit, pull, reset, rebase: HEAD moved on the same branch
    return {
        "operation": operation,
        "from_branch": previous.get("branch"),
        "to_branch": current["branch"],
        "from_commit": previous.get("commit"),
        "to_commit": current["commit"],
    }


def _describe_git(move: dict[str, Any]) -> str:
    def short(commit: str | None) -> str:
        return commit[:8] if commit else "nothing"

    if move["operation"] == "checkout":
        return (
            f"git checkout {move['from_branch'] or 'detached'} -> {move['to_branch'] or 'detached'}"
        )
    return f"git HEAD moved on {move['to_branch'] or 'detached'}: {short(move['from_commit'])} -> {short(move['to_commit'])}"


def observe_git(store: Store, *, now: float | None = None) -> dict[str, Any] | None:
    """Record a git event if HEAD or the branch moved since last seen; returns it or None."""
    return record_batch(store, [], now=now).git_event


def written_by_git(root: Path, rels: Iterable[str]) -> set[str]:
    """The files among `rels` whose content now is HEAD's (or that HEAD no longer has and are gone).

    Right after HEAD moved, those are the checkout's work; anything else changed meanwhile (an
    agent, a formatter) stays an external change.
    """
    paths = sorted(set(rels))
    if not paths:
        return set()
    from memory_core import git

    ids = git.head_blob_ids(root, paths)
    if ids is None:
        return set(paths)  # git cannot tell: fold them all, as a checkout is the likely cause
    found = set()
    for rel in paths:
        try:
            data = (root / rel).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            if rel not in ids:
                found.add(rel)
            continue
        except OSError:
            continue
        oid = ids.get(rel)
        if oid is not None and git.blob_id(data, sha256=len(oid) == 64) == oid:
            found.add(rel)
    return found


def _git_suspect(store: Store, now: float) -> bool:
    """Whether HEAD moved since last seen, or a git event is very recent (a cheap look)."""
    from memory_core import git  # not loaded by an agent's edit (check_git=False)

    head = git.read_head(store.root)
    if head is None:
        return False
    row = store.query_one("SELECT value FROM store_meta WHERE key = ?", (GIT_META_KEY,))
    if row is None or json.loads(row["value"]) != {"branch": head.branch, "commit": head.commit}:
        return True
    recent = store.query_one(
        "SELECT 1 FROM file_changes WHERE change = 'git' AND ts >= ? LIMIT 1",
        (now - GIT_SETTLE_AFTER_SECONDS,),
    )
    return recent is not None


def record_batch(
    store: Store,
    changes: Sequence[Change],
    *,
    now: float | None = None,
    check_git: bool = True,
) -> BatchResult:
    """Record a burst of changes in one transaction, noticing git operations first."""
    now = clock.now() if now is None else now
    result = BatchResult()
    batch_paths: dict[int, str] = {}
    for index, item in enumerate(changes):
        if item.actor == "external":
            try:
                rel = relative_path(store.root, item.path)
            except UsageError:
                continue
            if is_recordable(rel):
                batch_paths[index] = rel
    # Which files git wrote is decided before the transaction: it asks git (a subprocess).
    by_git: set[str] = set()
    if check_git and _git_suspect(store, now):
        earlier = store.query(
            "SELECT DISTINCT path FROM file_changes WHERE actor = 'external' AND ts >= ? "
            "AND change != 'git' AND path IS NOT NULL",
            (now - GIT_SETTLE_BEFORE_SECONDS,),
        )
        by_git = written_by_git(
            store.root, [*batch_paths.values(), *(row["path"] for row in earlier)]
        )
    with store.transaction() as db:
        move = _git_move(db, store.root) if check_git else None
        git_row: sqlite3.Row | None = None
        if move is not None:
            # The files the checkout wrote just before HEAD moved were its work, not external.
            earlier_rows = [
                row
                for row in db.execute(
                    "SELECT id, path FROM file_changes WHERE actor = 'external' AND ts >= ? "
                    "AND change != 'git'",
                    (now - GIT_SETTLE_BEFORE_SECONDS,),
                ).fetchall()
                if row["path"] in by_git
            ]
            db.executemany(
                "DELETE FROM file_changes WHERE id = ?", [(r["id"],) for r in earlier_rows]
            )
            files = sorted({r["path"] for r in earlier_rows})
            data = {
                **move,
                "summary": _describe_git(move),
                "files": files[:50],
                "files_changed": len(files),
            }
            cursor = db.execute(
                "INSERT INTO file_changes (ts, actor, change, data) VALUES (?, 'git', 'git', ?)",
                (now, json.dumps(data, separators=(",", ":"))),
            )
            result.absorbed = len(earlier_rows)
            git_row = db.execute(
                "SELECT * FROM file_changes WHERE id = ?", (cursor.lastrowid,)
            ).fetchone()
        elif check_git:
            git_row = db.execute(
                "SELECT * FROM file_changes WHERE change = 'git' AND ts >= ? ORDER BY ts DESC LIMIT 1",
                (now - GIT_SETTLE_AFTER_SECONDS,),
            ).fetchone()

        absorbed_paths: list[str] = []
        for index, item in enumerate(changes):
            written = batch_paths.get(index)
            if git_row is not None and written is not None and written in by_git:
                absorbed_paths.append(written)
                continue
            recorded = _record_one(db, store.root, item, now)
            if recorded is None:
                result.skipped += 1
            else:
                result.recorded.append(recorded)

        if git_row is not None and (absorbed_paths or move is not None):
            data = json.loads(git_row["data"])
            files = sorted({*data.get("files", []), *absorbed_paths})
            data["files_changed"] = int(data.get("files_changed", 0)) + len(absorbed_paths)
            data["files"] = files[:50]
            db.execute(
                "UPDATE file_changes SET data = ? WHERE id = ?",
                (json.dumps(data, separators=(",", ":")), git_row["id"]),
            )
            result.absorbed += len(absorbed_paths)
            if move is not None:
                result.git_event = _row_dict(
                    db.execute(
                        "SELECT * FROM file_changes WHERE id = ?", (git_row["id"],)
                    ).fetchone()
                )
    return result


def history(
    store: Store, path: str | os.PathLike[str], *, limit: int = 100
) -> list[dict[str, Any]]:
    """The recorded changes of one file, newest first (a rename shows under both names)."""
    rel = relative_path(store.root, path)
    rows = store.query(
        "SELECT * FROM file_changes WHERE (path = ? OR old_path = ?) AND change != 'git' "
        "ORDER BY ts DESC, id DESC LIMIT ?",
        (rel, rel, limit),
    )
    return [_row_dict(row) for row in rows]


def most_active(
    store: Store, *, since: float | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """Files with the most recorded changes (since `since`), with who changed them."""
    params: list[object] = []
    where = "change != 'git' AND path IS NOT NULL"
    if since is not None:
        where += " AND ts >= ?"
        params.append(since)
    rows = store.query(
        f"SELECT path, COUNT(*) AS changes, MAX(ts) AS last_ts, SUM(line_count) AS lines, "
        f"SUM(actor = 'editor') AS editor, SUM(actor = 'agent') AS agent, "
        f"SUM(actor = 'external') AS external FROM file_changes WHERE {where} "
        f"GROUP BY path ORDER BY changes DESC, last_ts DESC LIMIT ?",
        (*params, limit),
    )
    files = []
    for row in rows:
        last = store.query_one(
            "SELECT actor, session_id FROM file_changes WHERE path = ? AND change != 'git' "
            "ORDER BY ts DESC, id DESC LIMIT 1",
            (row["path"],),
        )
        files.append(
            {
                "id": row["path"],
                "path": row["path"],
                "changes": row["changes"],
                "lines_touched": row["lines"] or 0,
                "last_timestamp": clock.iso(row["last_ts"]),
                "last_actor": last["actor"] if last else None,
                "last_session_id": last["session_id"] if last else None,
                "actors": {
                    "editor": row["editor"],
                    "agent": row["agent"],
                    "external": row["external"],
                },
            }
        )
    return files


def start_of_day(now: float) -> float:
    """Local midnight of the day holding `now` ("today" as the person at the editor means it)."""
    local = time.localtime(now)
    return time.mktime((local.tm_year, local.tm_mon, local.tm_mday, 0, 0, 0, 0, 0, -1))


def activity(store: Store, rel: str, *, now: float | None = None) -> dict[str, Any] | None:
    """Today's activity on one file for the code lens; None if nothing was ever recorded."""
    now = clock.now() if now is None else now
    last = store.query_one(
        "SELECT ts, actor, session_id FROM file_changes WHERE path = ? AND change != 'git' "
        "ORDER BY ts DESC, id DESC LIMIT 1",
        (rel,),
    )
    if last is None:
        return None
    today = store.query_one(
        "SELECT COUNT(*) FROM file_changes WHERE path = ? AND change != 'git' AND ts >= ?",
        (rel, start_of_day(now)),
    )
    return {
        "edits_today": int(today[0]) if today else 0,
        "last_actor": last["actor"],
        "last_session_id": last["session_id"],
        "last_ts": float(last["ts"]),
        "last_ago": clock.ago(float(last["ts"]), now_ts=now),
    }


def describe(change: dict[str, Any]) -> str:
    """One human line for a recorded change."""
    when = change["timestamp"]
    if change["change"] == "git":
        return f"{when}  git     {change['data'].get('summary', 'git operation')}"
    who = change["actor"] + (f" ({change['session_id']})" if change.get("session_id") else "")
    lines = ""
    if change.get("lines"):
        spans = [f"{a}" if a == b else f"{a}-{b}" for a, b in change["lines"][:6]]
        lines = " lines " + ",".join(spans) + ("..." if len(change["lines"]) > 6 else "")
    moved = f" (from {change['old_path']})" if change.get("old_path") else ""
    return f"{when}  {change['change']:<8} {change['path']}{moved}{lines}  by {who}"
