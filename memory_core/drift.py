"""Drift: where the work of different hands collides or has gone stale.

Four kinds (docs/design.md section 3), each a `DriftItem` with a severity low < medium < high < critical:

- `overlap`: two actors (or two agent sessions) changed overlapping lines of a file within
  `drift.window_minutes`. Severity rises with the overlap and with how close in time the two
  changes were: points for overlap (>= 3 lines: 1, >= 10 lines: 2) plus points for closeness
  (within half the window: 1, within a sixth: 2); 0-1 low, 2 medium, 3 high, 4 critical.
  Line ranges are compared as each change recorded them (an approximation: an insertion between
  the two changes shifts the later lines).
- `unsaved`: an editor buffer with unsaved edits whose file changed on disk. Medium; high when
  the disk change touched lines edited in the buffer; critical when the file was deleted.
  The language server knows buffers, so it builds these with `unsaved_conflict`.
- `stale-citation`: a gotcha or memory cites lines of code that changed since it was recorded.
  One mechanism for every feature that cites code:

      anchor = drift.anchor(lines)            # when recording: a hash of the cited lines
      drift.is_stale(anchor, current_lines)   # later: did they change?
      drift.check_citation(root, Citation(...))  # DriftItem or None, with relocation

  The hash ignores indentation, trailing spaces and blank lines, so re-indenting is not a
  change. Severity: low when the same lines moved elsewhere in the file (`locate` finds them),
  medium when they changed, high when the file no longer has those lines, critical when the file
  is gone. `detect` checks the gotchas' anchors (`gotcha_anchors`) itself; any other module that
  stores citations exposes `citations(store) -> Iterable[Citation]`, and the modules named in
  gotchas' anchors and memories that cite code are checked.
- `workspace`: the workspace moved since a context snapshot (or the active session began):
  history rewritten (critical), branch switched (high), new commits or documents gone
  (medium), files changed (low).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_core import clock, git
from memory_core.config import Settings
from memory_core.store import Store

SEVERITIES = ("low", "medium", "high", "critical")
KINDS = ("overlap", "unsaved", "stale-citation", "workspace")
# Characters of a citation's label (the first line of what cites the code).
LABEL_CHARS = 80
# How far `locate` looks for cited lines that moved, in lines either side of where they were.
LOCATE_RADIUS = 2000


@dataclass(slots=True)
class DriftItem:
    kind: str
    severity: str
    summary: str
    path: str | None = None
    lines: tuple[int, int] | None = None  # 1-based, inclusive
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        key = json.dumps([self.kind, self.path, self.lines, self.details.get("key")], default=str)
        return "D-" + hashlib.blake2b(key.encode(), digest_size=4).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "severity": self.severity,
            "summary": self.summary,
            "path": self.path,
            "lines": list(self.lines) if self.lines else None,
            "details": self.details,
        }


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


# -- stale citations -------------------------------------------------------------------------


def _normalise(lines: Sequence[str] | str) -> list[str]:
    items = lines.splitlines() if isinstance(lines, str) else list(lines)
    return [line.strip() for line in items if line.strip()]


def anchor(text_lines: Sequence[str] | str) -> str:
    """A content hash of cited lines, blind to indentation, trailing spaces and blank lines."""
    joined = "\n".join(_normalise(text_lines))
    return hashlib.blake2b(joined.encode("utf-8"), digest_size=12).hexdigest()


def is_stale(anchor_hash: str, current_text_lines: Sequence[str] | str) -> bool:
    """True when the lines now at the cited place no longer hash to `anchor_hash`."""
    return anchor(current_text_lines) != anchor_hash


def locate(anchor_hash: str, text: str, start: int, end: int) -> int | None:
    """Where the cited block (same number of lines) is now: its 1-based start line, or None.

    Searches outward from the original position, so the nearest copy wins.
    """
    lines = text.splitlines()
    span = max(1, end - start + 1)
    if len(lines) < span:
        return None
    origin = max(0, min(start - 1, len(lines) - span))
    for distance in range(0, LOCATE_RADIUS + 1):
        for candidate in {origin - distance, origin + distance}:
            if 0 <= candidate <= len(lines) - span and not is_stale(
                anchor_hash, lines[candidate : candidate + span]
            ):
                return candidate + 1
        if origin - distance < 0 and origin + distance > len(lines) - span:
            break
    return None


@dataclass(slots=True)
class Citation:
    """Lines of a file that a gotcha or memory (`owner`) refers to, with their anchor hash."""

    owner: str
    path: str
    start: int
    end: int
    anchor: str
    label: str = ""


def check_citation(root: Path, citation: Citation, *, text: str | None = None) -> DriftItem | None:
    """A stale-citation DriftItem when the cited lines changed; None while they are intact."""
    where = f"{citation.path}:{citation.start}-{citation.end}"
    who = f"{citation.owner}" + (f" ({citation.label})" if citation.label else "")
    details: dict[str, Any] = {
        "owner": citation.owner,
        "key": citation.owner,
        "anchor": citation.anchor,
    }
    if text is None:
        try:
            text = (root / citation.path).read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return DriftItem(
                "stale-citation",
                "critical",
                f"{who} cites {where}, but the file is gone",
                citation.path,
                (citation.start, citation.end),
                details,
            )
        except OSError as exc:
            details["error"] = str(exc)
            return DriftItem(
                "stale-citation",
                "high",
                f"{who} cites {where}, which cannot be read",
                citation.path,
                (citation.start, citation.end),
                details,
            )
    lines = text.splitlines()
    current = lines[citation.start - 1 : citation.end]
    if len(current) == citation.end - citation.start + 1 and not is_stale(citation.anchor, current):
        return None
    moved_to = locate(citation.anchor, text, citation.start, citation.end)
    if moved_to is not None:
        details["moved_to"] = moved_to
        span = citation.end - citation.start
        return DriftItem(
            "stale-citation",
            "low",
            f"{who} cites {where}; the code moved to lines {moved_to}-{moved_to + span}",
            citation.path,
            (moved_to, moved_to + span),
            details,
        )
    if len(lines) < citation.start:
        return DriftItem(
            "stale-citation",
            "high",
            f"{who} cites {where}, but the file now has {len(lines)} lines",
            citation.path,
            (citation.start, citation.end),
            details,
        )
    return DriftItem(
        "stale-citation",
        "medium",
        f"{who} cites {where}, and that code changed since",
        citation.path,
        (citation.start, citation.end),
        details,
    )


def gotcha_anchor_citations(store: Store) -> list[Citation]:
    """Citations from the gotchas' anchors (`gotcha_anchors`: 0-based line and the text there)."""
    if "gotcha_anchors" not in store.tables():
        return []
    rows = store.query(
        "SELECT a.gotcha_id, a.path, a.line, a.text, g.title FROM gotcha_anchors a "
        "JOIN gotchas g ON g.id = a.gotcha_id WHERE a.text IS NOT NULL AND g.status != 'resolved'"
    )
    citations = []
    for row in rows:
        text = str(row["text"])
        start = int(row["line"]) + 1
        span = max(1, len(text.splitlines()))
        citations.append(
            Citation(
                row["gotcha_id"], row["path"], start, start + span - 1, anchor(text), row["title"]
            )
        )
    return citations


def memory_citations(store: Store) -> list[Citation]:
    """Citations from memories that cite code (file, lines and the anchor text there)."""
    if "memories" not in store.tables():
        return []
    rows = store.query(
        "SELECT id, content, file, line, end_line, anchor FROM memories "
        "WHERE anchor IS NOT NULL AND status != 'archived'"
    )
    return [
        Citation(
            owner=row["id"],
            path=row["file"],
            start=row["line"],
            end=row["end_line"] or row["line"],
            anchor=row["anchor"],
            label=label_for(row["content"]),
        )
        for row in rows
    ]


def label_for(content: str) -> str:
    """How a citation's owner is shown: its first line, cut to LABEL_CHARS."""
    first = content.strip().splitlines()[0] if content.strip() else ""
    return first if len(first) <= LABEL_CHARS else first[: LABEL_CHARS - 1] + "…"


def _provided_citations(store: Store) -> list[Citation]:
    # The areas that cite code keep their citations in tables of the store: read here, so
    # neither area imports the other (memory uses drift's anchors).
    return [*gotcha_anchor_citations(store), *memory_citations(store)]


def stale_citations(store: Store, citations: Iterable[Citation] | None = None) -> list[DriftItem]:
    items = []
    for citation in _provided_citations(store) if citations is None else citations:
        item = check_citation(store.root, citation)
        if item is not None:
            items.append(item)
    return items


# -- overlapping edits -----------------------------------------------------------------------


def _party(row: Any) -> str:
    return f"agent:{row['session_id']}" if row["actor"] == "agent" else str(row["actor"])


_ACTOR_WORDS = {"editor": "you (in the editor)", "external": "another program", "git": "git"}


def _who(row: Any) -> str:
    if row["actor"] == "agent":
        return f"the agent (session {row['session_id']})" if row["session_id"] else "the agent"
    return _ACTOR_WORDS.get(str(row["actor"]), str(row["actor"]))


def _lines_label(start: int, end: int) -> str:
    return f"line {start}" if start == end else f"lines {start}-{end}"


def overlap_severity(overlap_lines: int, gap_seconds: float, window_seconds: float) -> str:
    points = 2 if overlap_lines >= 10 else 1 if overlap_lines >= 3 else 0
    if window_seconds <= 0 or gap_seconds <= window_seconds / 6:
        points += 2
    elif gap_seconds <= window_seconds / 2:
        points += 1
    return SEVERITIES[max(0, points - 1)]


def overlaps(
    store: Store, path: str, *, window_minutes: float, now: float | None = None
) -> list[DriftItem]:
    """Overlapping line ranges changed by two different actors or sessions within the window."""
    now = clock.now() if now is None else now
    window = window_minutes * 60
    rows = store.query(
        "SELECT id, ts, actor, session_id, lines FROM file_changes WHERE path = ? AND ts >= ? "
        "AND change = 'modified' AND lines IS NOT NULL ORDER BY ts DESC LIMIT 200",
        (path, now - window),
    )
    by_range: dict[tuple[int, int], DriftItem] = {}
    parsed = [(row, [tuple(r) for r in json.loads(row["lines"])]) for row in rows]
    for i, (newer, newer_ranges) in enumerate(parsed):
        for older, older_ranges in parsed[i + 1 :]:
            if _party(newer) == _party(older):
                continue
            for a_start, a_end in newer_ranges:
                for b_start, b_end in older_ranges:
                    start, end = max(a_start, b_start), min(a_end, b_end)
                    if start > end:
                        continue
                    gap = abs(float(newer["ts"]) - float(older["ts"]))
                    severity = overlap_severity(end - start + 1, gap, window)
                    existing = by_range.get((start, end))
                    if existing and severity_rank(existing.severity) >= severity_rank(severity):
                        continue
                    by_range[(start, end)] = DriftItem(
                        "overlap",
                        severity,
                        f"{_lines_label(start, end)} of {path} changed by {_who(older)} "
                        f"({clock.ago(float(older['ts']), now_ts=now)}) and by {_who(newer)} "
                        f"({clock.ago(float(newer['ts']), now_ts=now)})",
                        path,
                        (start, end),
                        {
                            "key": f"{older['id']}-{newer['id']}",
                            "changes": [
                                {
                                    "id": row["id"],
                                    "actor": row["actor"],
                                    "session_id": row["session_id"],
                                    "timestamp": clock.iso(float(row["ts"])),
                                    "ago": clock.ago(float(row["ts"]), now_ts=now),
                                }
                                for row in (older, newer)
                            ],
                        },
                    )
    return sorted(by_range.values(), key=lambda item: item.lines or (0, 0))


def unsaved_conflict(
    path: str,
    *,
    disk_lines: Sequence[tuple[int, int]] | None,
    unsaved_lines: Sequence[tuple[int, int]],
    deleted: bool = False,
) -> DriftItem:
    """The unsaved-buffer drift for a file that changed on disk while its buffer had edits."""
    if deleted:
        return DriftItem(
            "unsaved",
            "critical",
            f"{path} was deleted on disk while this buffer has unsaved changes",
            path,
            (1, 1),
            {"key": "deleted"},
        )
    touched = any(max(a, c) <= min(b, d) for a, b in (disk_lines or ()) for c, d in unsaved_lines)
    return DriftItem(
        "unsaved",
        "high" if touched else "medium",
        f"{path} changed on disk while this buffer has unsaved changes"
        + (" to the same lines" if touched else ""),
        path,
        (1, 1),
        {"key": "changed", "disk_lines": [list(r) for r in disk_lines or ()]},
    )


# -- the workspace since a snapshot or session -------------------------------------------------


def workspace_since(
    store: Store,
    *,
    since: float,
    label: str,
    branch: str | None,
    head: str | None,
    dirty: Sequence[str] = (),
    documents: Sequence[str] = (),
    now: float | None = None,
) -> list[DriftItem]:
    """How the workspace moved since a moment whose git state and open documents are known."""
    root = store.root
    items: list[DriftItem] = []
    status = git.status(root) if (branch or head) else git.Status(is_repo=False)
    key = label
    if status.is_repo:
        if branch and status.branch != branch:
            items.append(
                DriftItem(
                    "workspace",
                    "high",
                    f"branch switched from {branch} to {status.branch or 'a detached HEAD'} since {label}",
                    details={"key": key + ":branch", "then": branch, "now": status.branch},
                )
            )
        elif head and status.head and head != status.head:
            ancestor = git.is_ancestor(root, head, status.head)
            if ancestor is False:
                items.append(
                    DriftItem(
                        "workspace",
                        "critical",
                        f"history rewritten since {label}: {head[:8]} is no longer behind HEAD {status.head[:8]}",
                        details={"key": key + ":rewritten", "then": head, "now": status.head},
                    )
                )
            else:
                count = git.commits_between(root, head, status.head)
                items.append(
                    DriftItem(
                        "workspace",
                        "medium",
                        f"{count if count is not None else 'new'} commit(s) since {label}",
                        details={
                            "key": key + ":commits",
                            "then": head,
                            "now": status.head,
                            "commits": count,
                        },
                    )
                )
        new_dirty = sorted(set(status.dirty_files) - set(dirty))
        if new_dirty:
            items.append(
                DriftItem(
                    "workspace",
                    "low",
                    f"{len(new_dirty)} file(s) with uncommitted changes that were clean at {label}",
                    details={"key": key + ":dirty", "files": new_dirty[:50]},
                )
            )
    gone = [doc for doc in documents if not (root / doc).exists()]
    if gone:
        items.append(
            DriftItem(
                "workspace",
                "medium",
                f"{len(gone)} document(s) open at {label} are gone: {', '.join(gone[:5])}",
                details={"key": key + ":gone", "files": gone},
            )
        )
    changed = store.query(
        "SELECT path, COUNT(*) AS n, GROUP_CONCAT(DISTINCT actor) AS actors FROM file_changes "
        "WHERE ts > ? AND change != 'git' AND path IS NOT NULL GROUP BY path ORDER BY n DESC",
        (since,),
    )
    if changed and not new_dirty_covers(items, len(changed)):
        items.append(
            DriftItem(
                "workspace",
                "low",
                f"{len(changed)} file(s) changed since {label}",
                details={
                    "key": key + ":changed",
                    "files": [
                        {"path": r["path"], "changes": r["n"], "actors": r["actors"]}
                        for r in changed[:50]
                    ],
                },
            )
        )
    return items


def new_dirty_covers(items: Sequence[DriftItem], count: int) -> bool:
    # The same files counted twice (dirty and changed) would read as two findings; keep both only
    # when the evolution record knows of changes git does not show as dirty.
    return any(
        i.details.get("key", "").endswith(":dirty") and len(i.details["files"]) >= count
        for i in items
    )


def since_snapshot(
    store: Store, snapshot_id: str | None = None, *, now: float | None = None
) -> list[DriftItem]:
    from memory_core import snapshots

    snap = snapshots.get(store, snapshot_id) if snapshot_id else snapshots.latest(store)
    if snap is None:
        return []
    return workspace_since(
        store,
        since=snap["ts"],
        label=f"snapshot {snap['id']}",
        branch=snap["branch"],
        head=snap["head"],
        dirty=snap["dirty_files"],
        documents=[d["path"] for d in snap["open_documents"]],
        now=now,
    )


def since_session(store: Store, *, now: float | None = None) -> list[DriftItem]:
    """Git operations and other hands' changes since the active agent session began."""
    from memory_core import snapshots

    session = snapshots.active_session(store)
    if not session or session.get("started_ts") is None:
        return []
    started = float(session["started_ts"])
    sid = session["id"]
    items: list[DriftItem] = []
    git_rows = store.query(
        "SELECT data FROM file_changes WHERE change = 'git' AND ts > ? ORDER BY ts", (started,)
    )
    for row in git_rows:
        data = json.loads(row["data"])
        severity = "high" if data.get("operation") == "checkout" else "medium"
        items.append(
            DriftItem(
                "workspace",
                severity,
                f"{data.get('summary', 'git operation')} during session {sid}",
                details={"key": f"session:{sid}:git:{data.get('to_commit')}", "session_id": sid},
            )
        )
    others = store.query(
        "SELECT DISTINCT path FROM file_changes WHERE ts > ? AND change != 'git' AND path IS NOT NULL "
        "AND NOT (actor = 'agent' AND session_id IS ?)",
        (started, sid),
    )
    if others:
        items.append(
            DriftItem(
                "workspace",
                "low",
                f"{len(others)} file(s) changed by others since session {sid} began",
                details={"key": f"session:{sid}:others", "files": [r["path"] for r in others[:50]]},
            )
        )
    return items


def active_paths(store: Store, *, window_minutes: float, now: float) -> list[str]:
    rows = store.query(
        "SELECT path FROM file_changes WHERE ts >= ? AND lines IS NOT NULL AND path IS NOT NULL "
        "GROUP BY path HAVING COUNT(DISTINCT actor || COALESCE(session_id, '')) >= 2",
        (now - window_minutes * 60,),
    )
    return [row["path"] for row in rows]


def detect(
    store: Store,
    settings: Settings,
    *,
    snapshot_id: str | None = None,
    now: float | None = None,
) -> list[DriftItem]:
    """Every drift the store can see without an editor: overlaps, stale citations, workspace."""
    now = clock.now() if now is None else now
    window = float(settings["drift.window_minutes"])
    items: list[DriftItem] = []
    for path in active_paths(store, window_minutes=window, now=now):
        items.extend(overlaps(store, path, window_minutes=window, now=now))
    items.extend(stale_citations(store))
    items.extend(since_snapshot(store, snapshot_id, now=now))
    items.extend(since_session(store, now=now))
    items.sort(key=lambda item: (-severity_rank(item.severity), item.kind, item.path or ""))
    return items


_SEVERITY_TITLES = {
    "critical": "Critical",
    "high": "High",
    "medium": "Medium",
    "low": "Low",
}


def markdown(items: Sequence[dict[str, Any]], *, title: str = "Drift") -> str:
    """Drift for people: by severity, each item naming its file and lines, and the files a
    workspace item covers (the summary alone says only how many)."""
    lines = [f"# {title}", ""]
    if not items:
        return "\n".join([*lines, "No drift: nothing changed under you.", ""])
    for severity in SEVERITIES[::-1]:
        group = [item for item in items if item.get("severity") == severity]
        if not group:
            continue
        lines += [f"## {_SEVERITY_TITLES.get(severity, severity)} ({len(group)})", ""]
        for item in group:
            where = ""
            if item.get("path"):
                span = item.get("lines")
                where = (
                    f"**{item['path']}**"
                    + (f" {_lines_label(int(span[0]), int(span[1]))}" if span else "")
                    + ": "
                )
            lines.append(f"- {where}{item.get('summary', '')}")
            files = (item.get("details") or {}).get("files")
            for entry in (files or [])[:20]:
                if isinstance(entry, dict):
                    actors = entry.get("actors") or ""
                    who = ", ".join(
                        _ACTOR_WORDS.get(a, "the agent" if a == "agent" else a)
                        for a in str(actors).split(",")
                        if a
                    )
                    changes = entry.get("changes")
                    lines.append(
                        f"  - {entry.get('path')}"
                        + (f": {changes} change(s)" if changes else "")
                        + (f" by {who}" if who else "")
                    )
                else:
                    lines.append(f"  - {entry}")
            if files and len(files) > 20:
                lines.append(f"  - and {len(files) - 20} more")
        lines.append("")
    return "\n".join(lines)
