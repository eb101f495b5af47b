"""Gotchas in the store: the model, reading, and every change a person or a tool makes.

Every change bumps the `gotchas.revision` counter in `store_meta` inside the same transaction,
so a language server (or any other reader) notices a change made by another process with one
cheap query, and rewrites the exports (`exports/gotchas.md`, `exports/gotchas.json`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from memory_core import clock
from memory_core.errors import NotFoundError, UsageError
from memory_core.gotchas import rank_index
from memory_core.gotchas.normalize import (
    CATEGORIES,
    SEVERITIES,
    SEVERITY_RANK,
    error_hash,
    normalize,
)
from memory_core.redact import redact, redact_obj
from memory_core.store import Store
from memory_core.values import Record

TYPE_CHECKING = False  # `typing` costs a cold hook a third of Python's start
if TYPE_CHECKING:
    from typing import Any

STATUSES = ("candidate", "confirmed", "resolved")
SOURCE_TYPES = ("manual", "auto_detected", "annotation", "team")
PATTERN_KINDS = ("regex", "literal")
MAX_SAMPLES = 5
REVISION_KEY = "gotchas.revision"

# Set by the package (`memory_core/gotchas/__init__.py`): the team file's gotchas and the
# exports rewritten after every change live in modules that import this one, so this one
# reaches them through these instead of importing them back.
team_gotchas: Callable[[Path], list[Gotcha]] | None = None
change_listeners: list[Callable[[Store], None]] = []


class Anchor(Record):
    """A place in code a gotcha points at; `line`/`end_line` are 0-based."""

    FIELDS = ("path", "line", "end_line", "content_hash", "text")

    def __init__(
        self,
        path: str,
        line: int,
        end_line: int,
        content_hash: str | None = None,
        text: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.end_line = end_line
        self.content_hash = content_hash
        self.text = text

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line + 1,
            "end_line": self.end_line + 1,
            "text": self.text,
        }


class Gotcha(Record):
    """One gotcha as stored (a plain class, not a dataclass: see memory_core/values.py)."""

    FIELDS = (
        "id",
        "title",
        "description",
        "category",
        "severity",
        "workaround",
        "related_files",
        "code_pattern",
        "pattern_kind",
        "error_pattern",
        "error_hash",
        "source_type",
        "occurrences",
        "first_seen",
        "last_seen",
        "samples",
        "provenance",
        "status",
        "snoozed_until",
        "promoted",
        "extra",
        "created_at",
        "updated_at",
        "anchors",
    )

    def __init__(
        self,
        id: str,
        title: str,
        description: str = "",
        category: str = "general",
        severity: str = "medium",
        workaround: str = "",
        related_files: list[str] | None = None,
        code_pattern: str | None = None,
        pattern_kind: str = "regex",
        error_pattern: str | None = None,
        error_hash: str | None = None,
        source_type: str = "manual",
        occurrences: int = 0,
        first_seen: float | None = None,
        last_seen: float | None = None,
        samples: list[dict[str, Any]] | None = None,
        provenance: dict[str, Any] | None = None,
        status: str = "confirmed",
        snoozed_until: float | None = None,
        promoted: bool = False,
        extra: dict[str, Any] | None = None,
        created_at: float = 0.0,
        updated_at: float = 0.0,
        anchors: list[Anchor] | None = None,
    ) -> None:
        self.id = id
        self.title = title
        self.description = description
        self.category = category
        self.severity = severity
        self.workaround = workaround
        self.related_files: list[str] = [] if related_files is None else related_files
        self.code_pattern = code_pattern
        self.pattern_kind = pattern_kind
        self.error_pattern = error_pattern
        self.error_hash = error_hash
        self.source_type = source_type
        self.occurrences = occurrences
        self.first_seen = first_seen
        self.last_seen = last_seen
        self.samples: list[dict[str, Any]] = [] if samples is None else samples
        self.provenance: dict[str, Any] = {} if provenance is None else provenance
        self.status = status
        self.snoozed_until = snoozed_until
        self.promoted = promoted
        self.extra: dict[str, Any] = {} if extra is None else extra
        self.created_at = created_at
        self.updated_at = updated_at
        self.anchors: list[Anchor] = [] if anchors is None else anchors

    @property
    def severity_rank(self) -> int:
        return SEVERITY_RANK.get(self.severity, len(SEVERITIES))

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape the CLI (`--json`) and the LSP commands return."""

        def when(ts: float | None) -> str | None:
            return clock.iso(ts) if ts is not None else None

        return {
            "id": self.id,
            "label": f"[{self.severity}] {self.title}",
            "title": self.title,
            "description": self.description,
            "category": self.category,
            "severity": self.severity,
            "workaround": self.workaround,
            "related_files": list(self.related_files),
            "code_pattern": self.code_pattern,
            "pattern_kind": self.pattern_kind,
            "trigger": {"error_pattern": self.error_pattern},
            "status": self.status,
            "source": {
                "type": self.source_type,
                "occurrences": self.occurrences,
                "first_seen": when(self.first_seen),
                "last_seen": when(self.last_seen),
                "samples": list(self.samples),
                "provenance": dict(self.provenance),
            },
            "anchors": [anchor.to_dict() for anchor in self.anchors],
            "snoozed_until": when(self.snoozed_until),
            "promoted": self.promoted,
            # Team gotchas come from a file and have no time of their own.
            "created_at": when(self.created_at or None),
            "updated_at": when(self.updated_at or None),
            **({"extra": self.extra} if self.extra else {}),
        }


def new_id() -> str:
    return f"G-{secrets.token_hex(4)}"


def stable_id(*parts: str) -> str:
    """An id derived from content (annotations): the same comment keeps the same id."""
    return "G-" + hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:8]


def line_hash(text: str) -> str:
    """Hash of a line's text, ignoring indentation and trailing space (they move with edits)."""
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:16]


# -- validation ---------------------------------------------------------------------------


def check_choice(kind: str, value: str, choices: Sequence[str]) -> str:
    lowered = value.strip().lower()
    if lowered not in choices:
        raise UsageError(f"unknown {kind} {value!r}", hint=f"use one of: {', '.join(choices)}")
    return lowered


def _check_pattern(pattern: str | None, kind: str) -> None:
    if pattern is None:
        return
    if not pattern:
        raise UsageError("the code pattern is empty", hint="give a literal or a regular expression")
    if kind == "regex":
        from memory_core.gotchas.patterns import validate_regex

        validate_regex(pattern)


# -- reading ------------------------------------------------------------------------------


def _from_row(row: sqlite3.Row, anchors: list[Anchor] | None = None) -> Gotcha:
    return Gotcha(
        id=row["id"],
        title=row["title"],
        description=row["description"],
        category=row["category"],
        severity=row["severity"],
        workaround=row["workaround"],
        related_files=json.loads(row["related_files"]),
        code_pattern=row["code_pattern"],
        pattern_kind=row["pattern_kind"],
        error_pattern=row["error_pattern"],
        error_hash=row["error_hash"],
        source_type=row["source_type"],
        occurrences=row["occurrences"],
        first_seen=row["first_seen"],
        last_seen=row["last_seen"],
        samples=json.loads(row["samples"]),
        provenance=json.loads(row["provenance"]),
        status=row["status"],
        snoozed_until=row["snoozed_until"],
        promoted=bool(row["promoted"]),
        extra=json.loads(row["extra"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        anchors=anchors or [],
    )


def _anchors_by_gotcha(store: Store, ids: Iterable[str] | None = None) -> dict[str, list[Anchor]]:
    if ids is None:
        rows = store.query("SELECT * FROM gotcha_anchors ORDER BY path, line")
    else:
        wanted = list(ids)
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = store.query(
            f"SELECT * FROM gotcha_anchors WHERE gotcha_id IN ({marks}) ORDER BY path, line",
            tuple(wanted),
        )
    found: dict[str, list[Anchor]] = {}
    for row in rows:
        found.setdefault(row["gotcha_id"], []).append(
            Anchor(row["path"], row["line"], row["end_line"], row["content_hash"], row["text"])
        )
    return found


def sort_key(gotcha: Gotcha) -> tuple[int, int, float, str]:
    """Most important first: open before resolved, critical before low, recent before old."""
    return (
        1 if gotcha.status == "resolved" else 0,
        gotcha.severity_rank,
        -(gotcha.last_seen or gotcha.updated_at or 0.0),
        gotcha.id,
    )


def list_gotchas(
    store: Store, *, include_resolved: bool = False, include_team: bool = True
) -> list[Gotcha]:
    """Every gotcha in the store (and the team file), most important first."""
    where = "" if include_resolved else "WHERE status != 'resolved'"
    rows = store.query(f"SELECT * FROM gotchas {where}")
    anchors = _anchors_by_gotcha(store)
    found = [_from_row(row, anchors.get(row["id"])) for row in rows]
    if include_team and team_gotchas is not None:
        known = {g.id for g in found} | {
            row["id"] for row in store.query("SELECT id FROM gotchas WHERE status = 'resolved'")
        }
        found.extend(g for g in team_gotchas(store.root) if g.id not in known)
    found.sort(key=sort_key)
    return found


def by_ids(store: Store, ids: Sequence[str]) -> dict[str, Gotcha]:
    """The stored gotchas of `ids` (with their anchors), by id: what `list_gotchas` gives
    for them, read for those alone."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = store.query(f"SELECT * FROM gotchas WHERE id IN ({marks})", tuple(ids))
    anchors = _anchors_by_gotcha(store, ids)
    return {row["id"]: _from_row(row, anchors.get(row["id"])) for row in rows}


def team_only(store: Store) -> list[Gotcha]:
    """The team file's gotchas that the store does not hold (under any status): those
    `list_gotchas` adds to the stored ones."""
    if team_gotchas is None:
        return []
    team = team_gotchas(store.root)
    if not team:
        return []
    known = {str(row[0]) for row in store.query("SELECT id FROM gotchas")}
    return [gotcha for gotcha in team if gotcha.id not in known]


def get(store: Store, gotcha_id: str) -> Gotcha:
    """One gotcha by id (case-insensitive; a unique prefix will do); NotFoundError otherwise."""
    wanted = gotcha_id.strip()
    if not wanted:
        raise UsageError("a gotcha id is required", hint="see `engram gotcha list`")
    if not wanted.upper().startswith("G-"):
        wanted = "G-" + wanted
    wanted = "G-" + wanted[2:].lower()
    rows = store.query("SELECT * FROM gotchas WHERE id = ?", (wanted,))
    if not rows:
        rows = store.query(
            "SELECT * FROM gotchas WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (_like_prefix(wanted),)
        )
    if len(rows) == 1:
        row = rows[0]
        return _from_row(row, _anchors_by_gotcha(store, [row["id"]]).get(row["id"]))
    if len(rows) > 1:
        raise UsageError(f"{gotcha_id!r} matches several gotchas", hint="give more of the id")
    for gotcha in team_gotchas(store.root) if team_gotchas is not None else []:
        if gotcha.id == wanted or gotcha.id.startswith(wanted):
            return gotcha
    raise NotFoundError(f"no gotcha {gotcha_id!r}", hint="see `engram gotcha list --all`")


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def revision(store: Store) -> int:
    """A counter bumped by every gotcha change, from any process."""
    row = store.query_one("SELECT value FROM store_meta WHERE key = ?", (REVISION_KEY,))
    return int(row["value"]) if row else 0


def bump_revision(db: sqlite3.Connection) -> None:
    """Count a change of the gotchas (inside its transaction), and index the gotchas it
    changed for ranking (`rank_index`: the store's triggers marked them)."""
    db.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        (REVISION_KEY,),
    )
    rank_index.refresh(db)


# -- writing ------------------------------------------------------------------------------


def insert(db: sqlite3.Connection, gotcha: Gotcha) -> None:
    """Insert a gotcha and its anchors inside an open transaction (texts already redacted)."""
    db.execute(
        """INSERT INTO gotchas (id, title, description, category, severity, workaround, related_files,
               code_pattern, pattern_kind, error_pattern, error_hash, source_type, occurrences,
               first_seen, last_seen, samples, provenance, status, snoozed_until, promoted, extra,
               created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            gotcha.id,
            gotcha.title,
            gotcha.description,
            gotcha.category,
            gotcha.severity,
            gotcha.workaround,
            json.dumps(gotcha.related_files, ensure_ascii=False),
            gotcha.code_pattern,
            gotcha.pattern_kind,
            gotcha.error_pattern,
            gotcha.error_hash,
            gotcha.source_type,
            gotcha.occurrences,
            gotcha.first_seen,
            gotcha.last_seen,
            json.dumps(gotcha.samples[-MAX_SAMPLES:], ensure_ascii=False),
            json.dumps(gotcha.provenance, ensure_ascii=False),
            gotcha.status,
            gotcha.snoozed_until,
            int(gotcha.promoted),
            json.dumps(gotcha.extra, ensure_ascii=False),
            gotcha.created_at,
            gotcha.updated_at,
        ),
    )
    for anchor in gotcha.anchors:
        add_anchor(db, gotcha.id, anchor, gotcha.created_at)
    bump_revision(db)


def add_anchor(db: sqlite3.Connection, gotcha_id: str, anchor: Anchor, now: float) -> None:
    db.execute(
        "INSERT OR REPLACE INTO gotcha_anchors (gotcha_id, path, line, end_line, content_hash, text, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            gotcha_id,
            anchor.path,
            anchor.line,
            anchor.end_line,
            anchor.content_hash,
            anchor.text,
            now,
        ),
    )


def add(
    store: Store,
    title: str,
    *,
    description: str = "",
    workaround: str = "",
    category: str | None = None,
    severity: str = "medium",
    related_files: Sequence[str] = (),
    pattern: str | None = None,
    pattern_kind: str = "regex",
    error_pattern: str | None = None,
    source_type: str = "manual",
    status: str | None = None,
    anchors: Sequence[Anchor] = (),
    gotcha_id: str | None = None,
    extra: dict[str, Any] | None = None,
    now: float | None = None,
) -> Gotcha:
    """Write a gotcha a person (or an annotation, or the team file) gave. Confirmed from the start.

    The code pattern is checked first: an invalid regex is refused with the position of the
    error, and one that takes pathological time on a probe is refused as well.
    """
    title = redact(" ".join(title.split()))
    if not title:
        raise UsageError("a gotcha needs a title", hint='engram gotcha add "What goes wrong"')
    from memory_core.gotchas.normalize import infer_category

    severity = check_choice("severity", severity, SEVERITIES)
    pattern_kind = check_choice("pattern kind", pattern_kind, PATTERN_KINDS)
    source_type = check_choice("source type", source_type, SOURCE_TYPES)
    category = (
        check_choice("category", category, CATEGORIES)
        if category
        else infer_category(" ".join([title, description, error_pattern or ""]))
    )
    _check_pattern(pattern, pattern_kind)
    globs = [g.strip() for g in related_files if g and g.strip()]
    now = clock.now() if now is None else now
    normalized_trigger = normalize(error_pattern) if error_pattern else None
    gotcha = Gotcha(
        id=gotcha_id or new_id(),
        title=title,
        description=redact(description.strip()),
        category=category,
        severity=severity,
        workaround=redact(workaround.strip()),
        related_files=globs,
        code_pattern=redact(pattern)
        if pattern is not None and pattern_kind == "literal"
        else pattern,
        pattern_kind=pattern_kind,
        error_pattern=redact(error_pattern.strip()) if error_pattern else None,
        error_hash=error_hash(normalized_trigger) if normalized_trigger else None,
        source_type=source_type,
        status=check_choice("status", status, STATUSES) if status else "confirmed",
        extra=redact_obj(extra or {}),
        created_at=now,
        updated_at=now,
        anchors=list(anchors),
    )
    try:
        with store.transaction() as db:
            insert(db, gotcha)
    except sqlite3.IntegrityError:
        raise UsageError(f"a gotcha with id {gotcha.id} already exists") from None
    after_change(store)
    return gotcha


def _set(
    store: Store, gotcha_id: str, changes: dict[str, Any], *, now: float | None = None
) -> Gotcha:
    gotcha = get(store, gotcha_id)
    if gotcha.source_type == "team" and not store.query_one(
        "SELECT 1 FROM gotchas WHERE id = ?", (gotcha.id,)
    ):
        # A teammate's gotcha lives in the team file; a local change is kept as a local copy
        # that overrides it in this workspace (the file stays as reviewed).
        gotcha.created_at = gotcha.created_at or (clock.now() if now is None else now)
        with store.transaction() as db:
            insert(db, gotcha)
    now = clock.now() if now is None else now
    assignments = ", ".join(f"{column} = ?" for column in changes)
    with store.transaction() as db:
        db.execute(
            f"UPDATE gotchas SET {assignments}, updated_at = ? WHERE id = ?",
            (*changes.values(), now, gotcha.id),
        )
        bump_revision(db)
    after_change(store)
    return get(store, gotcha.id)


def resolve(store: Store, gotcha_id: str, *, now: float | None = None) -> Gotcha:
    """Mark a gotcha resolved: it leaves the editor until its error comes back."""
    return _set(store, gotcha_id, {"status": "resolved", "snoozed_until": None}, now=now)


def confirm(store: Store, gotcha_id: str, *, now: float | None = None) -> Gotcha:
    """A person agrees a candidate is real: it shows at its own severity from now on."""
    return _set(store, gotcha_id, {"status": "confirmed"}, now=now)


def snooze(store: Store, gotcha_id: str, days: float, *, now: float | None = None) -> Gotcha:
    """Hide a gotcha from the editor for `days` days."""
    if not days > 0:
        raise UsageError(f"snooze needs a positive number of days, got {days!r}")
    now = clock.now() if now is None else now
    return _set(store, gotcha_id, {"snoozed_until": now + days * 86400}, now=now)


def update(store: Store, gotcha_id: str, *, now: float | None = None, **fields: Any) -> Gotcha:
    """Change a gotcha's title, description, workaround, category, severity, files or pattern."""
    allowed = {
        "title",
        "description",
        "workaround",
        "category",
        "severity",
        "related_files",
        "code_pattern",
        "pattern_kind",
        "promoted",
    }
    unknown = set(fields) - allowed
    if unknown:
        raise UsageError(f"cannot change {', '.join(sorted(unknown))} of a gotcha")
    changes: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "severity":
            value = check_choice("severity", value, SEVERITIES)
        elif key == "category":
            value = check_choice("category", value, CATEGORIES)
        elif key == "related_files":
            value = json.dumps(list(value))
        elif key == "promoted":
            value = int(bool(value))
        elif isinstance(value, str):
            value = redact(value)
        changes[key] = value
    if "code_pattern" in fields:
        current = get(store, gotcha_id)
        _check_pattern(fields["code_pattern"], fields.get("pattern_kind", current.pattern_kind))
    return _set(store, gotcha_id, changes, now=now)


def delete(store: Store, gotcha_id: str) -> None:
    gotcha = get(store, gotcha_id)
    with store.transaction() as db:
        db.execute("DELETE FROM gotchas WHERE id = ?", (gotcha.id,))
        bump_revision(db)
    after_change(store)


def visible_in_editor(gotcha: Gotcha, *, now: float, decay_days: float) -> bool:
    """Whether the editor shows this gotcha now: open, not snoozed, and (if learned) not decayed.

    Auto-captured gotchas nobody used (no new occurrence, no confirmation) for `decay_days`
    fade out; gotchas people wrote (manual, annotation, team) never do.
    """
    if gotcha.status == "resolved":
        return False
    if gotcha.snoozed_until is not None and gotcha.snoozed_until > now:
        return False
    if gotcha.source_type == "auto_detected" and decay_days > 0:
        last_used = max(gotcha.last_seen or 0.0, gotcha.updated_at or 0.0)
        if now - last_used > decay_days * 86400:
            return False
    return True


# Stores whose exports wait for the end of a batch (`exports_deferred`): id -> [changed].
_DEFERRED: dict[int, list[bool]] = {}


@contextlib.contextmanager
def exports_deferred(store: Store) -> Iterator[None]:
    """Rewrite the exports once, when the block ends, however many gotchas change inside it:
    an ingest of a project's history tracks hundreds of errors, and rewriting `gotchas.md` and
    `gotchas.json` (each synced to disk) after every one was a tenth of the ingest."""
    if id(store) in _DEFERRED:  # an outer block rewrites them
        yield
        return
    changed = _DEFERRED[id(store)] = [False]
    try:
        yield
    finally:
        del _DEFERRED[id(store)]
        if changed[0]:
            after_change(store)


def after_change(store: Store) -> None:
    """Rewrite the human-readable exports; a failure there never undoes the change."""
    from memory_core import log

    deferred = _DEFERRED.get(id(store))
    if deferred is not None:
        deferred[0] = True
        return
    for listener in change_listeners:
        try:
            listener(store)
        except Exception as exc:
            log.write(store.root, "error", "cannot rewrite the gotcha exports", exc=exc)


def _redacted_anchor(anchor: Anchor) -> Anchor:
    # The line's text is stored, so a secret on it is redacted (its hash stays that of the line).
    if anchor.text is None:
        return anchor
    return Anchor(
        anchor.path, anchor.line, anchor.end_line, anchor.content_hash, redact(anchor.text)
    )


def sync_annotations(
    store: Store, path: str, found: Sequence[Gotcha], *, now: float | None = None
) -> bool:
    """Make the store's annotation gotchas of `path` exactly `found` (the comments in the file now).

    Returns whether anything changed; an unchanged file costs one query and no write.
    """
    rows = store.query(
        "SELECT g.id, a.line, a.content_hash FROM gotchas g JOIN gotcha_anchors a ON a.gotcha_id = g.id "
        "WHERE g.source_type = 'annotation' AND a.path = ?",
        (path,),
    )
    anchored = {(row["id"], row["line"], row["content_hash"]) for row in rows}
    existing = {row["id"] for row in rows}
    wanted = {gotcha.id: gotcha for gotcha in found}
    # Kept annotations whose anchor moved or was stored by an older engram (which hashed the
    # comment's words instead of its line, so drift saw every annotation as changed).
    moved = [
        gotcha
        for gotcha_id, gotcha in wanted.items()
        if gotcha_id in existing
        and {(gotcha_id, a.line, a.content_hash) for a in gotcha.anchors} - anchored
    ]
    if existing == set(wanted) and not moved:
        return False
    now = clock.now() if now is None else now
    with store.transaction() as db:
        for gone in existing - set(wanted):
            db.execute("DELETE FROM gotchas WHERE id = ?", (gone,))
        for gotcha in moved:
            db.execute("DELETE FROM gotcha_anchors WHERE gotcha_id = ?", (gotcha.id,))
            for anchor in gotcha.anchors:
                add_anchor(db, gotcha.id, _redacted_anchor(anchor), now)
        for new in set(wanted) - existing:
            gotcha = wanted[new]
            if db.execute("SELECT 1 FROM gotchas WHERE id = ?", (new,)).fetchone():
                continue
            gotcha.title = redact(gotcha.title)
            gotcha.description = redact(gotcha.description)
            gotcha.anchors = [_redacted_anchor(anchor) for anchor in gotcha.anchors]
            insert(db, gotcha)
        bump_revision(db)
    after_change(store)
    return True
