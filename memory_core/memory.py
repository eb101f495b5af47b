"""Long-term memory entries: what an agent or a person decided, found, learned or prefers.

An entry has a type (project, preference, action, decision, finding, learning), content,
tags, provenance (who recorded it, from which session, turn or tool), relations to other
entries (resolves, led_to, influenced), a pin, and a priority that decays with time and is
raised by access (`memory_core.decay`). Every text is redacted before it is stored.

Deleting an entry (`forget`) moves it into the recoverable state of `memory_core.lifecycle`;
search lives in `memory_core.search` and is re-exported here as `search`.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_core import clock, decay
from memory_core.errors import NotFoundError, UsageError
from memory_core.redact import redact, redact_obj
from memory_core.store import Store
from memory_core.tags import normalize_tags  # re-exported: memory.normalize_tags

TYPES = ("project", "preference", "action", "decision", "finding", "learning")
RELATIONS = ("resolves", "led_to", "influenced")
STATUSES = ("open", "resolved", "archived")
MAX_CONTENT_CHARS = 64 * 1024


def add(
    store: Store,
    content: str,
    *,
    type: str = "learning",
    tags: Iterable[str] = (),
    pinned: bool = False,
    provenance: Mapping[str, Any] | None = None,
    session_id: str | None = None,
    agent: str | None = None,
    explicit: bool = False,
    base_priority: float | None = None,
    impact: str | None = None,
    status: str = "open",
    file: str | None = None,
    line: int | None = None,
    end_line: int | None = None,
    relations: Iterable[tuple[str, str]] = (),
    now: float | None = None,
) -> dict[str, Any]:
    """Store one memory entry durably and return it.

    `relations` are (kind, target_id) pairs from the new entry to existing ones, e.g.
    `[("resolves", "M-1a2b3c4d")]`. `base_priority` defaults to the type's (decision 0.95,
    finding 0.90, preference 0.85, ...: `decay.BASE_PRIORITIES`). `impact` (critical, high,
    medium, low) is a finding's severity or a decision's impact; with `explicit` it sets the
    floor the entry never decays below (`decay.floor`).
    `file` (workspace-relative or absolute inside the workspace) and `line`/`end_line`
    (1-based) cite code; the cited lines are hashed so drift reports when they change.
    """
    now = clock.now() if now is None else now
    text = _clean_content(content)
    _check_choice("type", type, TYPES)
    _check_choice("status", status, STATUSES)
    if impact is not None:
        _check_choice("impact", impact, decay.IMPACTS)
    if base_priority is None:
        base_priority = decay.base_priority(type)
    if not 0.0 <= float(base_priority) <= 1.0:
        raise UsageError(f"base priority must be between 0 and 1, got {base_priority!r}")
    tag_list = normalize_tags(tags)
    prov = dict(provenance or {})
    if session_id and "session_id" not in prov:
        prov["session_id"] = session_id
    pairs = [(kind, target) for kind, target in relations]
    for kind, _target in pairs:
        _check_choice("relation", kind, RELATIONS)
    rel_file, anchor, line, end_line = _citation(store, file, line, end_line)
    with store.transaction() as db:
        memory_id = _new_id(db)
        db.execute(
            "INSERT INTO memories (id, type, content, tags, created_at, last_accessed, access_count,"
            " base_priority, pinned, explicit, status, agent, session_id, provenance, project, file,"
            " line, end_line, anchor, impact)"
            " VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                memory_id,
                type,
                text,
                " ".join(tag_list),
                now,
                now,
                float(base_priority),
                int(pinned),
                int(explicit),
                status,
                redact(agent) if agent else None,
                session_id,
                json.dumps(redact_obj(prov), ensure_ascii=False, sort_keys=True),
                str(store.root),
                rel_file,
                line,
                end_line,
                anchor,
                impact,
            ),
        )
        db.executemany(
            "INSERT INTO memory_tags (tag, memory_id) VALUES (?, ?)",
            [(tag, memory_id) for tag in tag_list],
        )
        for kind, target in pairs:
            _relate(db, memory_id, kind, target, now)
    return get(store, memory_id, record_access=False, now=now)


def get(
    store: Store, memory_id: str, *, record_access: bool = True, now: float | None = None
) -> dict[str, Any]:
    """One entry with its relations; reading it counts as an access unless told otherwise."""
    now = clock.now() if now is None else now
    if record_access:
        with store.transaction() as db:
            if not record_accesses(db, [memory_id], now):
                raise _not_found(memory_id)
    row = store.query_one("SELECT * FROM memories WHERE id = ?", (memory_id,))
    if row is None:
        raise _not_found(memory_id)
    entry = to_dict(row, now)
    entry["relations"] = relations_of(store, memory_id)
    return entry


def list_memories(
    store: Store,
    *,
    type: str | None = None,
    tag: str | None = None,
    tags: Iterable[str] = (),
    agent: str | None = None,
    session_id: str | None = None,
    since: float | None = None,
    until: float | None = None,
    include_archived: bool = False,
    min_priority: float | None = None,
    include_decayed: bool = True,
    limit: int = 100,
    offset: int = 0,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """Entries, newest first, filtered (every tag given must be present); not an access.

    `min_priority`, `include_decayed` (False: not below 0.3) and `offset` as in search.
    """
    now = clock.now() if now is None else now
    if offset < 0:
        raise UsageError(f"offset must be 0 or more, got {offset}")
    threshold = min_priority
    if threshold is not None and not 0.0 <= float(threshold) <= 1.0:
        raise UsageError(f"minimum priority must be between 0 and 1, got {threshold!r}")
    if not include_decayed:
        threshold = max(decay.COLD, float(threshold or 0.0))
    where, params = filter_sql(
        "m",
        types=[type] if type else None,
        tags=[*tags, *([tag] if tag else [])],
        agent=agent,
        session_id=session_id,
        since=since,
        until=until,
        include_archived=include_archived,
    )
    if threshold:
        where += f" AND {decay.sql_priority('m', repr(float(now)))} >= ?"
        params.append(float(threshold))
    rows = store.query(
        f"SELECT m.* FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.seq DESC"
        " LIMIT ? OFFSET ?",
        (*params, max(1, int(limit)), int(offset)),
    )
    return [to_dict(row, now) for row in rows]


def newest_rows(store: Store, limit: int) -> list[sqlite3.Row]:
    """The rows of what `list_memories(store, limit=limit)` lists (the newest entries not
    archived), for a caller that reads a few fields of each: `to_dict` (a label, two times,
    provenance) for each of 200 entries was most of a session start's memory section."""
    where, params = filter_sql("m")
    return store.query(
        f"SELECT m.* FROM memories m WHERE {where} ORDER BY m.created_at DESC, m.seq DESC"
        " LIMIT ? OFFSET ?",
        (*params, max(1, int(limit)), 0),
    )


def forget(
    store: Store, memory_id: str, *, reason: str | None = None, now: float | None = None
) -> dict[str, Any]:
    """Delete one entry into the recoverable state; returns the deletion record."""
    from memory_core import lifecycle

    return lifecycle.delete(store, memory_ids=[memory_id], reason=reason, now=now)


def update(
    store: Store,
    memory_id: str,
    *,
    pinned: bool | None = None,
    status: str | None = None,
    tags: Iterable[str] | None = None,
    impact: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Pin or unpin, resolve or reopen, retag an entry, or set its impact."""
    sets: list[str] = []
    params: list[object] = []
    if pinned is not None:
        sets.append("pinned = ?")
        params.append(int(pinned))
    if status is not None:
        _check_choice("status", status, STATUSES)
        sets.append("status = ?")
        params.append(status)
    if impact is not None:
        _check_choice("impact", impact, decay.IMPACTS)
        sets.append("impact = ?")
        params.append(impact)
    tag_list = normalize_tags(tags) if tags is not None else None
    if tag_list is not None:
        sets.append("tags = ?")
        params.append(" ".join(tag_list))
    with store.transaction() as db:
        if sets:
            cursor = db.execute(
                f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", (*params, memory_id)
            )
            if cursor.rowcount == 0:
                raise _not_found(memory_id)
        elif db.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone() is None:
            raise _not_found(memory_id)
        if tag_list is not None:
            db.execute("DELETE FROM memory_tags WHERE memory_id = ?", (memory_id,))
            db.executemany(
                "INSERT INTO memory_tags (tag, memory_id) VALUES (?, ?)",
                [(tag, memory_id) for tag in tag_list],
            )
    return get(store, memory_id, record_access=False, now=now)


def recite(
    store: Store,
    memory_id: str,
    *,
    line: int | None = None,
    end_line: int | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Point a memory's citation at the code as it is now (after a person checked it still holds).

    Without `line`, the cited lines stay where they were (or where drift found them moved to);
    the anchor is the hash of what they hold now, so the citation is current again.
    """
    row = store.query_one("SELECT file, line, end_line FROM memories WHERE id = ?", (memory_id,))
    if row is None:
        raise _not_found(memory_id)
    if not row["file"] or (row["line"] is None and line is None):
        raise UsageError(f"memory {memory_id} cites no lines of code")
    start = int(line if line is not None else row["line"])
    if end_line is None:
        span = int(row["end_line"] or row["line"] or start) - int(row["line"] or start)
        end_line = start + max(0, span)
    if not (store.root / str(row["file"])).is_file():
        raise UsageError(f"{row['file']} no longer exists: forget the memory instead")
    rel, anchor, _line, end = _citation(store, str(row["file"]), start, end_line)
    if anchor is None:
        raise UsageError(f"{rel} has no line {start}")
    with store.transaction() as db:
        db.execute(
            "UPDATE memories SET line = ?, end_line = ?, anchor = ? WHERE id = ?",
            (start, end, anchor, memory_id),
        )
    return get(store, memory_id, record_access=False, now=now)


# -- relations -------------------------------------------------------------------------------


def relate(
    store: Store, source_id: str, kind: str, target_id: str, *, now: float | None = None
) -> None:
    """Record that `source_id` resolves / led_to / influenced `target_id`."""
    _check_choice("relation", kind, RELATIONS)
    with store.transaction() as db:
        _relate(db, source_id, kind, target_id, clock.now() if now is None else now)


def relations_of(store: Store, memory_id: str) -> list[dict[str, str]]:
    """The entry's direct relations, outgoing and incoming."""
    rows = store.query(
        "SELECT source_id, kind, target_id FROM memory_relations WHERE source_id = ? "
        "UNION ALL SELECT source_id, kind, target_id FROM memory_relations WHERE target_id = ?",
        (memory_id, memory_id),
    )
    out = []
    for row in rows:
        outgoing = row["source_id"] == memory_id
        out.append(
            {
                "kind": row["kind"],
                "direction": "out" if outgoing else "in",
                "id": row["target_id"] if outgoing else row["source_id"],
            }
        )
    return out


def find_related(
    store: Store, memory_id: str, *, depth: int = 2, now: float | None = None
) -> list[dict[str, Any]]:
    """Entries linked to `memory_id` through relations, nearest first, up to `depth` hops.

    Each result carries `distance` (hops) and `via`: the relation kinds on the path.
    """
    now = clock.now() if now is None else now
    if store.query_one("SELECT 1 FROM memories WHERE id = ?", (memory_id,)) is None:
        raise _not_found(memory_id)
    seen = {memory_id}
    frontier: list[tuple[str, list[str]]] = [(memory_id, [])]
    found: list[tuple[str, int, list[str]]] = []
    for distance in range(1, max(1, depth) + 1):
        next_frontier: list[tuple[str, list[str]]] = []
        for current, path in frontier:
            for relation in relations_of(store, current):
                other = relation["id"]
                if other in seen:
                    continue
                seen.add(other)
                label = (
                    relation["kind"] if relation["direction"] == "out" else f"{relation['kind']} by"
                )
                next_frontier.append((other, [*path, label]))
                found.append((other, distance, [*path, label]))
        frontier = next_frontier
    results = []
    for other, distance, via in found:
        row = store.query_one("SELECT * FROM memories WHERE id = ?", (other,))
        if row is not None:
            entry = to_dict(row, now)
            entry.update(distance=distance, via=via)
            results.append(entry)
    return results


def _relate(db: sqlite3.Connection, source_id: str, kind: str, target_id: str, now: float) -> None:
    if source_id == target_id:
        raise UsageError(f"a memory cannot relate to itself ({source_id})")
    for memory_id in (source_id, target_id):
        if db.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone() is None:
            raise _not_found(memory_id)
    db.execute(
        "INSERT OR IGNORE INTO memory_relations (source_id, kind, target_id, created_at) "
        "VALUES (?, ?, ?, ?)",
        (source_id, kind, target_id, now),
    )


# -- helpers shared with search, lifecycle and privacy ----------------------------------------


def record_accesses(db: sqlite3.Connection, memory_ids: Sequence[str], now: float) -> int:
    """Count one access of each entry (raises its priority); returns how many exist."""
    if not memory_ids:
        return 0
    marks = ",".join("?" * len(memory_ids))
    cursor = db.execute(
        f"UPDATE memories SET access_count = access_count + 1, last_accessed = ? "
        f"WHERE id IN ({marks})",
        (now, *memory_ids),
    )
    return int(cursor.rowcount)


def current_priority(row: Mapping[str, Any] | sqlite3.Row, now: float) -> float:
    return decay.priority(
        kind=row["type"],
        base=float(row["base_priority"]),
        created_at=float(row["created_at"]),
        last_accessed=float(row["last_accessed"]),
        access_count=int(row["access_count"]),
        now=now,
        pinned=bool(row["pinned"]),
        explicit=bool(row["explicit"]),
        resolved=row["status"] == "resolved",
        impact=row["impact"],
    )


def to_dict(row: sqlite3.Row, now: float) -> dict[str, Any]:
    """The public shape of an entry (CLI --json, LSP, MCP, export)."""
    value = current_priority(row, now)
    content = row["content"]
    return {
        "id": row["id"],
        "kind": "memory",
        "type": row["type"],
        "label": label_for(content),
        "content": content,
        "tags": row["tags"].split() if row["tags"] else [],
        "created_at": clock.iso(row["created_at"]),
        "last_accessed": clock.iso(row["last_accessed"]),
        "access_count": row["access_count"],
        "base_priority": row["base_priority"],
        "priority": round(value, 4),
        "tier": decay.tier(value),
        "pinned": bool(row["pinned"]),
        "explicit": bool(row["explicit"]),
        "impact": row["impact"],
        "status": row["status"],
        "agent": row["agent"],
        "session_id": row["session_id"],
        "provenance": json.loads(row["provenance"] or "{}"),
        "project": row["project"],
        "file": row["file"],
        "line": row["line"],
        "end_line": row["end_line"],
    }


def _citation(
    store: Store, file: str | None, line: int | None, end_line: int | None
) -> tuple[str | None, str | None, int | None, int | None]:
    """(relative path, anchor hash, line, end line) of a cited place; anchors need the file."""
    if not file:
        return None, None, None, None
    from memory_core.workspace import relative_path

    rel = relative_path(store.root, file)
    if line is not None and line < 1:
        raise UsageError(f"line numbers start at 1, got {line}")
    if line is None:
        return rel, None, None, None
    end = max(line, end_line if end_line is not None else line)
    try:
        text = (store.root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return rel, None, line, end
    from memory_core import drift

    lines = text.splitlines()[line - 1 : end]
    return rel, (drift.anchor(lines) if lines else None), line, end


def label_for(content: str) -> str:
    from memory_core import drift

    return drift.label_for(content)


def filter_sql(
    alias: str,
    *,
    types: Sequence[str] | None = None,
    tags: Sequence[str] = (),
    agent: str | None = None,
    session_id: str | None = None,
    since: float | None = None,
    until: float | None = None,
    include_archived: bool = False,
) -> tuple[str, list[object]]:
    """A WHERE clause (and its parameters) over `memories AS alias`."""
    clauses: list[str] = []
    params: list[object] = []
    if types:
        for value in types:
            _check_choice("type", value, TYPES)
        clauses.append(f"{alias}.type IN ({','.join('?' * len(types))})")
        params.extend(types)
    for tag in normalize_tags(tags):
        clauses.append(f"{alias}.id IN (SELECT memory_id FROM memory_tags WHERE tag = ?)")
        params.append(tag)
    if agent:
        clauses.append(f"{alias}.agent = ?")
        params.append(agent)
    if session_id:
        clauses.append(f"{alias}.session_id = ?")
        params.append(session_id)
    if since is not None:
        clauses.append(f"{alias}.created_at >= ?")
        params.append(since)
    if until is not None:
        clauses.append(f"{alias}.created_at < ?")
        params.append(until)
    if not include_archived:
        clauses.append(f"{alias}.status != 'archived'")
    return (" AND ".join(clauses) or "1"), params


def _clean_content(content: str) -> str:
    if not isinstance(content, str) or not content.strip():
        raise UsageError(
            "a memory needs some text", hint='e.g. engram memory add "we use uv, not pip"'
        )
    if len(content) > MAX_CONTENT_CHARS:
        raise UsageError(
            f"a memory is at most {MAX_CONTENT_CHARS} characters, got {len(content)}",
            hint="store a summary and cite the file",
        )
    return redact(content.strip())


def _check_choice(what: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise UsageError(f"unknown {what} {value!r}", hint=f"one of {', '.join(choices)}")


def _new_id(db: sqlite3.Connection) -> str:
    while True:
        candidate = f"M-{secrets.token_hex(4)}"
        if db.execute("SELECT 1 FROM memories WHERE id = ?", (candidate,)).fetchone() is None:
            return candidate


def _not_found(memory_id: str) -> NotFoundError:
    return NotFoundError(
        f"no memory {memory_id!r}",
        hint="see `engram memory list`; a forgotten one comes back with `engram undelete ID`",
    )


EXPORT_NAME = "memories.md"


def write_export(store: Store, *, now: float | None = None) -> tuple[Path, dict[str, int]]:
    """Rewrite `.engram/exports/memories.md` (atomically) and return (path, id -> 0-based line).

    The file is the human-readable view of every live memory; editors jump to a memory's line
    in it when a memory cites no code (workspace symbols).
    """
    from memory_core.store import write_private_file

    now = clock.now() if now is None else now
    rows = store.query(
        "SELECT * FROM memories WHERE status != 'archived' ORDER BY created_at DESC, seq DESC"
    )
    lines = [
        "# engram memories",
        "",
        f"Written {clock.iso(now)}. Edit with `engram memory ...`.",
        "",
    ]
    positions: dict[str, int] = {}
    for row in rows:
        entry = to_dict(row, now)
        tags = f" [{', '.join(entry['tags'])}]" if entry["tags"] else ""
        positions[entry["id"]] = len(lines)
        lines.append(f"## {entry['id']} ({entry['type']}, {entry['tier']}){tags}")
        lines.append("")
        lines.extend(entry["content"].splitlines() or [""])
        lines.append("")
    path = store.dir / "exports" / EXPORT_NAME
    write_private_file(path, "\n".join(lines) + "\n")
    return path, positions
