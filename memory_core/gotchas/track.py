"""Auto-capture: count occurrences of the same error and learn a gotcha when it keeps coming back.

One occurrence is one row in `error_occurrences`, keyed by the hash of the normalised error.
When the count inside the sliding window (`gotchas.window_hours`, 24 h) reaches
`gotchas.threshold` (3), a candidate gotcha is created from the occurrences in the window.
An error that already has a gotcha adds to it; if that gotcha was resolved it is reopened.
Called by `engram error track`, the `engram.error.track` LSP command and the agent hooks (for
every failed command), so it stays light: the standard library and one transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from memory_core import clock, events
from memory_core.config import Settings
from memory_core.errors import UsageError
from memory_core.gotchas import normalize as norm
from memory_core.gotchas.records import (
    MAX_SAMPLES,
    Anchor,
    Gotcha,
    add_anchor,
    after_change,
    bump_revision,
    insert,
    line_hash,
    new_id,
)
from memory_core.redact import redact
from memory_core.store import Store

MAX_MESSAGE_CHARS = 20_000
MAX_ANCHORS = 10


@dataclass(frozen=True, slots=True)
class TrackResult:
    gotcha_id: str | None
    created: bool
    reopened: bool
    occurrences: int
    normalized: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "gotcha_id": self.gotcha_id,
            "created": self.created,
            "reopened": self.reopened,
            "occurrences": self.occurrences,
            "normalized": self.normalized,
        }


class _Analysis:
    """What gotcha tracking reads in an error's text, whatever else goes with it."""

    __slots__ = ("digest", "locations", "meaningful", "normalized")

    def __init__(self, message: str) -> None:
        line = norm.meaningful_line(message)
        self.normalized = norm.normal_form(line)  # norm.normalize(message), the line read once
        self.digest = norm.error_hash(self.normalized)
        self.meaningful = line[:500]
        self.locations = tuple(norm.error_locations(message))


@lru_cache(maxsize=512)
def _analysis(message: str) -> _Analysis:
    """The analysis of an error's text, once per text: an agent meets the same errors again and
    again (an ingest of a month of sessions tracks hundreds, few of them distinct)."""
    return _Analysis(message)


def _line_text(root: Path, relative: str, line: int) -> str | None:
    try:
        with (root / relative).open("r", encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle):
                if number == line:
                    return text.rstrip("\r\n")
    except OSError:
        return None
    return None


def _location(
    store: Store, message: str, file: str | None, line: int | None
) -> tuple[str, int] | None:
    """Where the error points: the explicit file/line if given, else parsed from the message."""
    root = store.root
    if file:
        spot = norm.resolve_location(
            root, norm.ErrorLocation(file, line if line and line > 0 else 1)
        )
        if spot is None:
            from memory_core.workspace import relative_path

            relative_path(root, file)  # raises a clear UsageError for a path outside
            return None
        return spot
    for location in _analysis(message).locations:
        spot = norm.resolve_location(root, location)
        if spot is not None:
            return spot
    return None


def _anchor_for(store: Store, spot: tuple[str, int] | None) -> Anchor | None:
    if spot is None:
        return None
    path, line = spot
    text = _line_text(store.root, path, line)
    return Anchor(
        path,
        line,
        line,
        line_hash(text) if text is not None else None,
        redact(text) if text else text,
    )


def _matching_gotcha(db: Any, digest: str, message: str) -> Any:
    row = db.execute(
        "SELECT * FROM gotchas WHERE error_hash = ? ORDER BY created_at LIMIT 1", (digest,)
    ).fetchone()
    if row is not None:
        return row
    # A person's trigger text ("ECONNREFUSED") matches any error that contains it.
    lowered = message.lower()
    for candidate in db.execute(
        "SELECT id, error_pattern FROM gotchas WHERE error_pattern IS NOT NULL "
        "AND source_type != 'auto_detected' ORDER BY created_at"
    ):
        pattern = (candidate["error_pattern"] or "").strip().lower()
        if pattern and pattern in lowered:
            return db.execute("SELECT * FROM gotchas WHERE id = ?", (candidate["id"],)).fetchone()
    return None


def track_error(
    store: Store,
    message: str,
    *,
    settings: Settings | None = None,
    file: str | None = None,
    line: int | None = None,
    command: str | None = None,
    tool: str | None = None,
    session_id: str | None = None,
    now: float | None = None,
) -> TrackResult:
    """Record one occurrence of an error; may create (or reopen) a gotcha.

    `line` is 1-based, as tools print it. `now` lets tests inject the clock.
    """
    if not isinstance(message, str) or not message.strip():
        raise UsageError("the error message is empty", hint='engram error track "the error text"')
    if settings is None:
        from memory_core import config

        settings = config.load(store.root)
    threshold = int(settings["gotchas.threshold"])
    window = float(settings["gotchas.window_hours"]) * 3600
    now = clock.now() if now is None else now

    # Cut after redacting (with a margin): a secret across the cut would be kept in part.
    message = redact(message[: MAX_MESSAGE_CHARS + 2048])[:MAX_MESSAGE_CHARS]
    analysis = _analysis(message)
    normalized, digest = analysis.normalized, analysis.digest
    anchor = _anchor_for(store, _location(store, message, file, line))
    sample = {
        "message": analysis.meaningful,
        "ts": clock.iso(now),
        **({"file": anchor.path, "line": anchor.line + 1} if anchor else {}),
        **({"command": redact(command)[:500]} if command else {}),
        **({"tool": tool} if tool else {}),
        **({"session_id": session_id} if session_id else {}),
    }

    created = reopened = False
    gotcha_id: str | None = None
    with store.transaction() as db:
        db.execute(
            "INSERT INTO error_occurrences (hash, ts, normalized, message, file, line, command, tool, session_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                digest,
                now,
                normalized,
                message[:4000],
                anchor.path if anchor else None,
                anchor.line + 1 if anchor else None,
                sample.get("command"),
                tool,
                session_id,
            ),
        )
        # Occurrences older than the window can never count again.
        db.execute("DELETE FROM error_occurrences WHERE ts < ?", (now - window,))
        existing = _matching_gotcha(db, digest, message)
        # Read only while no gotcha holds the error: a recurring error would otherwise read every
        # occurrence of the window again at each new one (an ingest meets hundreds).
        in_window = (
            db.execute(
                "SELECT * FROM error_occurrences WHERE hash = ? AND ts >= ? AND ts <= ? ORDER BY ts",
                (digest, now - window, now),
            ).fetchall()
            if existing is None
            else []
        )
        if existing is not None:
            gotcha_id = existing["id"]
            samples = [*json.loads(existing["samples"]), sample][-MAX_SAMPLES:]
            status = existing["status"]
            if status == "resolved":
                status = "candidate" if existing["source_type"] == "auto_detected" else "confirmed"
                reopened = True
            occurrences = int(existing["occurrences"]) + 1
            db.execute(
                "UPDATE gotchas SET occurrences = ?, last_seen = ?, first_seen = COALESCE(first_seen, ?), "
                "samples = ?, status = ?, updated_at = ? WHERE id = ?",
                (
                    occurrences,
                    now,
                    now,
                    json.dumps(samples, ensure_ascii=False),
                    status,
                    now,
                    gotcha_id,
                ),
            )
            if anchor is not None and _anchor_count(db, gotcha_id) < MAX_ANCHORS:
                add_anchor(db, gotcha_id, anchor, now)
            bump_revision(db)
        elif len(in_window) >= threshold:
            gotcha = _learned_gotcha(store, in_window, message, normalized, digest, now, window)
            insert(db, gotcha)
            gotcha_id, created, occurrences = gotcha.id, True, gotcha.occurrences
        else:
            occurrences = len(in_window)
        events.append(
            store,
            events.Event(
                kind="gotcha.error",
                actor=f"agent:{session_id}" if session_id else (tool or "cli"),
                session_id=session_id,
                path=anchor.path if anchor else None,
                data={
                    "hash": digest,
                    "normalized": normalized,
                    "gotcha_id": gotcha_id,
                    "created": created,
                    "reopened": reopened,
                },
                ts=now,
            ),
            db=db,
        )
    # A new or reopened gotcha rewrites the exports; another occurrence of a known one does not
    # (hooks call this for every failed command and must stay fast): its count reaches the
    # exports with the next change.
    if created or reopened:
        after_change(store)
    return TrackResult(gotcha_id, created, reopened, occurrences, normalized)


def _anchor_count(db: Any, gotcha_id: str) -> int:
    return int(
        db.execute(
            "SELECT COUNT(*) FROM gotcha_anchors WHERE gotcha_id = ?", (gotcha_id,)
        ).fetchone()[0]
    )


def _learned_gotcha(
    store: Store,
    rows: list[Any],
    message: str,
    normalized: str,
    digest: str,
    now: float,
    window: float,
) -> Gotcha:
    # The error's own words decide the category: the command that hit it ("pytest") says
    # where it surfaced, not what it is.
    category = norm.infer_category(normalized)
    samples = []
    anchors: dict[tuple[str, int], Anchor] = {}
    for row in rows[-MAX_SAMPLES:]:
        sample: dict[str, Any] = {
            "message": norm.meaningful_line(row["message"])[:500],
            "ts": clock.iso(row["ts"]),
        }
        for key in ("file", "line", "command", "tool", "session_id"):
            if row[key] is not None:
                sample[key] = row[key]
        samples.append(sample)
    for row in rows:
        if row["file"] and row["line"] and len(anchors) < MAX_ANCHORS:
            spot = (row["file"], int(row["line"]) - 1)
            if spot not in anchors and (anchor := _anchor_for(store, spot)) is not None:
                anchors[spot] = anchor
    last = rows[-1]
    provenance = {
        key: last[key]
        for key in ("command", "tool", "session_id", "file", "line")
        if last[key] is not None
    }
    return Gotcha(
        id=new_id(),
        title=norm.title_for(message),
        description=_description(len(rows), window, normalized, message, rows[-1]["command"]),
        category=category,
        severity=norm.infer_severity(category),
        error_pattern=normalized,
        error_hash=digest,
        source_type="auto_detected",
        occurrences=len(rows),
        first_seen=float(rows[0]["ts"]),
        last_seen=now,
        samples=samples,
        provenance=provenance,
        status="candidate",
        created_at=now,
        updated_at=now,
        anchors=list(anchors.values()),
    )


def _description(
    count: int, window: float, normalized: str, message: str, command: str | None
) -> str:
    text = f"The same error came back {count} times within {window / 3600:g} h"
    if command:
        text += f", running `{command}`"
    text += "."
    if normalized != norm.title_for(message):
        text += f" Normalised: {normalized}"
    return text
