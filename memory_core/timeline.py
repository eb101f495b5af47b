"""The unified timeline: one query over everything that happened in the workspace.

Sources: `evolution` (file changes and git events), `snapshot`, `checkpoint`, `session`,
`gotcha` and `event` (the event log, including manual entries added with `add`). Every entry is
normalised to {id, timestamp, source, event_type, session_id, summary, details} (plus
`created_at`, the same ISO time, as list items carry).

The areas own their tables; some may not exist yet in a given store, and their columns are read
by name from `PRAGMA table_info` so a missing optional column does not break the timeline. One
SQL query (UNION ALL of the sources present) orders and cuts the result. Limits always apply:
at most `timeline.max_entries` entries and nothing older than `timeline.max_age_days`, whatever
the caller asks for; the rows themselves are bounded by the same settings through `limits`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memory_core import clock
from memory_core.config import Settings
from memory_core.errors import UsageError
from memory_core.events import Event, append
from memory_core.store import Store

SOURCES = ("evolution", "snapshot", "checkpoint", "session", "gotcha", "event")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str, *, now: float | None = None) -> float:
    """`2h`, `30m`, `3d`, `1w` ago, or an ISO date/time; UsageError otherwise."""
    now = clock.now() if now is None else now
    match = _DURATION.match(text)
    if match:
        return now - float(match.group(1)) * _UNITS[match.group(2)]
    try:
        return clock.parse_iso(text)
    except ValueError:
        raise UsageError(
            f"cannot read {text!r} as a time",
            hint="use 30m, 2h, 3d, 1w or an ISO date like 2026-01-31",
        ) from None


def _columns(store: Store, table: str) -> set[str]:
    return {row["name"] for row in store.query(f'PRAGMA table_info("{table}")')}


def _ts_expr(column: str) -> str:
    # Areas store times as Unix seconds or as ISO text; the timeline compares seconds.
    return (
        f"(CASE WHEN typeof(\"{column}\") IN ('real', 'integer') THEN \"{column}\" "
        f'ELSE (julianday("{column}") - 2440587.5) * 86400.0 END)'
    )


def _first(columns: set[str], *names: str) -> str | None:
    return next((name for name in names if name in columns), None)


def _details(columns: set[str], wanted: tuple[str, ...]) -> str:
    pairs = [f"'{c}', \"{c}\"" for c in wanted if c in columns]
    return f"json_object({', '.join(pairs)})" if pairs else "'{}'"


def _parts(store: Store) -> list[str]:
    """One SELECT per source present, each yielding the columns of `_COLUMNS`."""
    tables = set(store.tables())
    parts: list[str] = []
    if "file_changes" in tables:
        parts.append(
            "SELECT 'evolution:' || id, ts, 'evolution', "
            "CASE change WHEN 'git' THEN 'git.' || COALESCE(json_extract(data, '$.operation'), 'operation') "
            "ELSE 'file.' || change END, session_id, "
            "CASE change WHEN 'git' THEN COALESCE(json_extract(data, '$.summary'), 'git operation') "
            "ELSE path || ' ' || change || ' by ' || actor || "
            "CASE WHEN line_count = 1 THEN ' (1 line)' WHEN line_count > 1 "
            "THEN ' (' || line_count || ' lines)' ELSE '' END END, "
            "json_object('path', path, 'old_path', old_path, 'actor', actor, 'lines', json(lines), "
            "'hash_before', hash_before, 'hash_after', hash_after, 'size', size, 'data', json(data)), "
            "path, old_path FROM file_changes"
        )
    if "snapshots" in tables:
        parts.append(
            "SELECT 'snapshot:' || id, created_at, 'snapshot', 'snapshot.captured', session_id, "
            "'snapshot ' || id || COALESCE(' on ' || branch, '') || COALESCE(': ' || note, ''), "
            "json_object('branch', branch, 'head', head, 'dirty_files', json(dirty_files), "
            "'stash_count', stash_count, 'open_documents', json(open_documents), 'note', note), "
            "NULL, NULL FROM snapshots"
        )
    if "checkpoints" in tables:
        cols = _columns(store, "checkpoints")
        ts, ident = _first(cols, "created_at", "ts", "timestamp"), _first(cols, "id")
        if ts and ident:
            name = _first(cols, "name", "label", "title")
            reason = _first(cols, "reason")
            session = _first(cols, "session_id") or "NULL"
            event_type = (
                f"'checkpoint.' || COALESCE({reason}, 'created')"
                if reason
                else "'checkpoint.created'"
            )
            label = f"COALESCE({name}, {ident})" if name else ident
            details = _details(cols, ("name", "description", "reason", "file_count", "total_bytes"))
            parts.append(
                f"SELECT 'checkpoint:' || {ident}, {_ts_expr(ts)}, 'checkpoint', {event_type}, "
                f"{session}, 'checkpoint ' || {label}, {details}, NULL, NULL FROM checkpoints"
            )
    if "sessions" in tables:
        cols = _columns(store, "sessions")
        ident, started = _first(cols, "id"), _first(cols, "started_at", "created_at")
        if ident and started:
            name, agent = _first(cols, "name"), _first(cols, "agent")
            label = f"COALESCE({name}, {ident})" if name else ident
            by = f" || COALESCE(' (' || {agent} || ')', '')" if agent else ""
            details = _details(cols, ("name", "agent", "status", "started_at", "ended_at"))
            parts.append(
                f"SELECT 'session:' || {ident}, {_ts_expr(started)}, 'session', 'session.started', "
                f"{ident}, 'session ' || {label} || ' started'{by}, {details}, NULL, NULL FROM sessions"
            )
            ended = _first(cols, "ended_at", "closed_at")
            if ended:
                parts.append(
                    f"SELECT 'session:' || {ident} || ':end', {_ts_expr(ended)}, 'session', "
                    f"'session.ended', {ident}, 'session ' || {label} || ' ended', {details}, "
                    f"NULL, NULL FROM sessions WHERE {ended} IS NOT NULL"
                )
    if "gotchas" in tables:
        cols = _columns(store, "gotchas")
        ident, created = _first(cols, "id"), _first(cols, "created_at", "first_seen")
        if ident and created:
            title = _first(cols, "title")
            session = _first(cols, "session_id") or "NULL"
            title_part = f" || COALESCE(': ' || {title}, '')" if title else ""
            details = _details(cols, ("title", "category", "severity", "status"))
            parts.append(
                f"SELECT 'gotcha:' || {ident}, {_ts_expr(created)}, 'gotcha', 'gotcha.created', "
                f"{session}, 'gotcha ' || {ident}{title_part}, {details}, NULL, NULL FROM gotchas"
            )
    if "events" in tables:
        # Events that restate a row of the tables above would show every such moment twice.
        restated = ", ".join(f"'{kind}'" for kind in _RESTATED_EVENTS)
        parts.append(
            "SELECT 'event:' || id, ts, 'event', kind, session_id, "
            "COALESCE(json_extract(data, '$.summary'), kind || COALESCE(' ' || path, '')), "
            "json_object('actor', actor, 'path', path, 'data', json(data)), path, NULL FROM events "
            f"WHERE kind NOT IN ({restated})"
        )
    return parts


_COLUMNS = "id, ts, source, event_type, session_id, summary, details, path, old_path"
_RESTATED_EVENTS = ("checkpoint.created", "session.started", "session.closed")


def entries(
    store: Store,
    settings: Settings | None = None,
    *,
    since: float | None = None,
    until: float | None = None,
    sources: tuple[str, ...] | list[str] | None = None,
    file: str | None = None,
    limit: int | None = None,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """Timeline entries, newest first, within the limits whatever is asked."""
    settings = settings or Settings()
    now = clock.now() if now is None else now
    max_entries = int(settings["timeline.max_entries"])
    oldest = now - float(settings["timeline.max_age_days"]) * 86400
    if limit is not None and limit < 1:
        raise UsageError(f"the limit must be at least 1, got {limit}")
    limit = min(limit or max_entries, max_entries)
    since = max(since, oldest) if since is not None else oldest
    for source in sources or ():
        if source not in SOURCES:
            raise UsageError(
                f"unknown timeline source {source!r}", hint=f"one of {', '.join(SOURCES)}"
            )
    parts = _parts(store)
    if not parts:
        return []
    clauses: list[str] = ["ts >= ?"]
    params: list[object] = [since]
    if until is not None:
        clauses.append("ts <= ?")
        params.append(until)
    if sources:
        clauses.append(f"source IN ({', '.join('?' for _ in sources)})")
        params.extend(sources)
    if file:
        # The file under its name, or under its old name when it was renamed.
        clauses.append("(path = ? OR old_path = ?)")
        params.extend([file, file])
    rows = store.query(
        f"WITH t({_COLUMNS}) AS ({' UNION ALL '.join(parts)}) "
        f"SELECT * FROM t WHERE {' AND '.join(clauses)} ORDER BY ts DESC, id DESC LIMIT ?",
        (*params, limit),
    )
    result = []
    for row in rows:
        try:
            details = json.loads(row["details"]) if row["details"] else {}
        except (TypeError, ValueError):
            details = {}
        stamp = clock.iso(float(row["ts"]))
        result.append(
            {
                "id": row["id"],
                "timestamp": stamp,
                "created_at": stamp,
                "source": row["source"],
                "event_type": row["event_type"],
                "session_id": row["session_id"],
                "summary": row["summary"],
                "details": details,
            }
        )
    return humanize(store, result, now=now, times=[float(row["ts"]) for row in rows])


def add(
    store: Store,
    summary: str,
    *,
    event_type: str = "manual.note",
    session_id: str | None = None,
    path: str | None = None,
    details: dict[str, Any] | None = None,
    now: float | None = None,
) -> int:
    """Add a manual entry (a note, a deploy, a decision) to the timeline; returns its event id."""
    if not summary.strip():
        raise UsageError("a timeline entry needs a summary")
    return append(
        store,
        Event(
            kind=event_type,
            actor="manual",
            session_id=session_id,
            path=path,
            data={**(details or {}), "summary": summary},
            ts=now,
        ),
    )


# A rollback's own writes reach the evolution log moments after its event (the watcher or the
# editor's reload reports them): changes of its files this close to it are the rollback's.
ROLLBACK_ATTRIBUTION_SECONDS = 30.0
_ACTOR_WORDS = {
    "editor": "you (in the editor)",
    "agent": "the agent",
    "external": "another program",
    "git": "git",
}
_CHANGE_WORDS = {
    "created": "created",
    "modified": "changed",
    "deleted": "deleted",
    "renamed": "renamed",
}


def _rollbacks(store: Store, since: float) -> list[dict[str, Any]]:
    """Rollbacks since `since` (minus the attribution window), with the files each wrote."""
    if "events" not in set(store.tables()):
        return []
    found = []
    for row in store.query(
        "SELECT ts, data FROM events WHERE kind = 'checkpoint.rollback' AND ts >= ? ORDER BY ts",
        (since - ROLLBACK_ATTRIBUTION_SECONDS,),
    ):
        try:
            data = json.loads(row["data"]) if row["data"] else {}
        except (TypeError, ValueError):
            data = {}
        paths = {
            str(p)
            for key in ("restored", "removed", "via_editor", "buffers")
            for p in data.get(key) or []
        }
        found.append({"ts": float(row["ts"]), "checkpoint": data.get("checkpoint"), "paths": paths})
    return found


def _rollback_reports(
    rollbacks: list[dict[str, Any]], found: list[dict[str, Any]], times: list[float]
) -> dict[tuple[str, float], Any]:
    """(path, time) of the watcher's first report of each file a rollback wrote, within
    ROLLBACK_ATTRIBUTION_SECONDS after it, mapped to that rollback's checkpoint."""
    reports = sorted(
        (ts, str(details.get("path")))
        for entry, ts in zip(found, times, strict=True)
        if entry["source"] == "evolution"
        and (details := entry.get("details") or {}).get("actor") == "external"
        and not (details.get("data") or {}).get("rollback")
    )
    credited: dict[tuple[str, float], Any] = {}
    for rollback in rollbacks:
        pending = set(rollback["paths"])
        for ts, path in reports:
            if not pending:
                break
            if path in pending and 0.0 <= ts - rollback["ts"] <= ROLLBACK_ATTRIBUTION_SECONDS:
                pending.discard(path)
                credited.setdefault((path, ts), rollback["checkpoint"])
    return credited


def _checkpoint_labels(store: Store) -> dict[str, str]:
    if "checkpoints" not in set(store.tables()):
        return {}
    cols = _columns(store, "checkpoints")
    name = _first(cols, "name", "label", "title")
    if "id" not in cols:
        return {}
    select = (
        f"SELECT id, {name} AS name FROM checkpoints"
        if name
        else "SELECT id, NULL AS name FROM checkpoints"
    )
    return {str(row["id"]): str(row["name"] or row["id"]) for row in store.query(select)}


def _checkpoint_times(store: Store) -> list[tuple[float, str]]:
    """(creation time, id) of every checkpoint, oldest first."""
    if "checkpoints" not in set(store.tables()):
        return []
    cols = _columns(store, "checkpoints")
    if "id" not in cols or "created_at" not in cols:
        return []
    return [
        (float(row["ts"]), str(row["id"]))
        for row in store.query(
            f"SELECT id, {_ts_expr('created_at')} AS ts FROM checkpoints ORDER BY ts, rowid"
        )
    ]


def _lines_words(lines: Any) -> str:
    if not isinstance(lines, list) or not lines:
        return ""
    spans = []
    for span in lines[:4]:
        if isinstance(span, list | tuple) and len(span) == 2:
            a, b = span
            spans.append(f"{a}" if a == b else f"{a}–{b}")
    more = "…" if len(lines) > 4 else ""
    label = "line" if len(spans) == 1 and "–" not in spans[0] else "lines"
    return f" ({label} {', '.join(spans)}{more})" if spans else ""


def humanize(
    store: Store,
    found: list[dict[str, Any]],
    *,
    now: float | None = None,
    times: list[float] | None = None,
) -> list[dict[str, Any]]:
    """Add to each entry `who` (the actor in words), `text` (one readable sentence naming the
    files, never an internal id) and `ago`; a rollback's own writes are credited to it."""
    now = clock.now() if now is None else now
    if not found:
        return found
    # The stored times (the ISO text is rounded): a rollback's writes follow it by milliseconds.
    times = times or [clock.parse_iso(e["timestamp"]) for e in found]
    oldest = min(times)
    first_reports = _rollback_reports(_rollbacks(store, oldest), found, times)
    labels = _checkpoint_labels(store)
    stamps = _checkpoint_times(store)
    for entry, ts in zip(found, times, strict=True):
        details = entry.get("details") or {}
        entry["ago"] = clock.ago(ts, now_ts=now)
        source, kind = entry["source"], entry["event_type"]
        if source == "evolution" and not kind.startswith("git."):
            path = details.get("path") or "a file"
            actor = str(details.get("actor") or "")
            who = _ACTOR_WORDS.get(actor, actor or "someone")
            if actor == "agent" and entry.get("session_id"):
                who = f"the agent (session {entry['session_id']})"
            recorded_by = (details.get("data") or {}).get("rollback")
            if recorded_by:
                # Recorded by the rollback itself (the language server does so).
                by_rollback: Any = recorded_by
            elif actor == "external":
                # Else (a rollback from the command line, reported later by a watcher): the
                # watcher's first report of a file the rollback wrote, within moments of it.
                # A person typing (editor) or an agent writing is never the rollback, nor is a
                # second change of the same file.
                by_rollback = first_reports.get((path, ts))
            else:
                by_rollback = None
            if by_rollback:
                label = labels.get(str(by_rollback), str(by_rollback))
                who = f"the rollback to “{label}”"
            # The checkpoints just before and just after the change (precise times): an editor
            # shows the change as the diff between them (VS Code's Timeline does).
            before = [cid for cts, cid in stamps if cts <= ts]
            after = [cid for cts, cid in stamps if cts > ts]
            details["around"] = {
                "before": before[-1] if before else None,
                "after": after[0] if after else None,
            }
            change = _CHANGE_WORDS.get(kind.removeprefix("file."), kind.removeprefix("file."))
            moved = f" (from {details['old_path']})" if details.get("old_path") else ""
            entry["who"] = who
            entry["text"] = f"{path}{moved} {change} by {who}{_lines_words(details.get('lines'))}"
        elif source == "evolution":
            entry["who"] = "git"
            entry["text"] = f"git: {entry['summary']}"
        elif source == "checkpoint":
            reason = str(details.get("reason") or "")
            name = details.get("name")
            shown = f"“{name}”" if name else entry["summary"].removeprefix("checkpoint ")
            files = details.get("file_count")
            made = {
                "manual": "made",
                "burst": "made automatically (many files changed at once)",
                "pre-rollback": "made before a rollback (to undo it)",
                "turns": "made automatically (every few agent turns)",
            }.get(reason, f"made ({reason})" if reason else "made")
            entry["who"] = "engram"
            entry["text"] = f"Checkpoint {shown} {made}" + (
                f", {files} file(s)" if isinstance(files, int) else ""
            )
        elif kind == "checkpoint.rollback":
            data = details.get("data") or {}
            target = labels.get(str(data.get("checkpoint")), str(data.get("checkpoint") or "?"))
            restored = len(
                {
                    str(p)
                    for key in ("restored", "via_editor", "buffers")
                    for p in data.get(key) or []
                }
            )
            removed = len(data.get("removed") or [])
            entry["who"] = "engram"
            entry["text"] = (
                f"Rolled back to checkpoint “{target}”: {restored} "
                f"{'file' if restored == 1 else 'files'} restored, {removed} removed"
            )
        elif source == "session":
            entry["who"] = str(details.get("agent") or "the agent")
            name = details.get("name") or entry.get("session_id")
            verb = "ended" if kind == "session.ended" else "started"
            agent = f" ({details['agent']})" if details.get("agent") else ""
            entry["text"] = f"Agent session “{name}”{agent} {verb}"
        elif source == "gotcha":
            entry["who"] = "engram"
            title = details.get("title") or entry["summary"]
            entry["text"] = f"Gotcha learned: {title}"
        elif source == "snapshot":
            entry["who"] = "you"
            note = details.get("note")
            branch = details.get("branch")
            entry["text"] = (
                "Context snapshot captured"
                + (f" on {branch}" if branch else "")
                + (f": {note}" if note else "")
            )
        else:
            entry["who"] = str(details.get("actor") or "engram")
            entry["text"] = _event_words(kind, str(entry["summary"]), details)
    return found


_EVENT_WORDS = {
    "gotcha.error": "Error recorded{in_path}",
    "gotcha.resolved": "Gotcha resolved",
    "gotcha.reopened": "Gotcha reopened: its error came back",
    "session.saved": "Session saved",
    "session.deleted": "Session deleted",
    "session.compacted": "Session compacted by the agent",
    "memory.added": "Memory added",
    "snapshot.restored": "Context snapshot restored",
}


def _event_words(kind: str, summary: str, details: dict[str, Any]) -> str:
    """An event in words: its own summary when it has one, else its kind said plainly."""
    path = details.get("path")
    if summary and summary != kind and not summary.startswith(kind + " "):
        return summary[:1].upper() + summary[1:]
    template = _EVENT_WORDS.get(kind)
    if template:
        return template.format(in_path=f" in {path}" if path else "")
    words = kind.replace(".", " ").replace("_", " ")
    return words[:1].upper() + words[1:] + (f" ({path})" if path else "")


def markdown(found: list[dict[str, Any]], *, title: str = "Timeline") -> str:
    """The timeline as Markdown for people: newest first, grouped by day, relative times."""
    lines = [f"# {title}", ""]
    if not found:
        return "\n".join([*lines, "Nothing recorded yet.", ""])
    day = None
    for entry in found:
        stamp = entry["timestamp"]
        if stamp[:10] != day:
            day = stamp[:10]
            lines += ["", f"## {day}", ""]
        text = entry.get("text") or entry["summary"]
        lines.append(f"- **{stamp[11:16]}** ({entry.get('ago', '')}): {text}")
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def describe(entry: dict[str, Any]) -> str:
    stamp = entry["timestamp"][:19].replace("T", " ")
    text = entry.get("text") or entry["summary"]
    ago = f" ({entry['ago']})" if entry.get("ago") else ""
    return f"{stamp}{ago}  {text}"
