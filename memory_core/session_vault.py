"""The session vault: each session as a Markdown note, and its transcript backed up (seed 002).

The projecthub session protocol writes every session to `vault/sessions/<date>_<session_id>.md`
with a YAML frontmatter and the sections Summary (Overview, Key Decisions, Outcomes, Open Items,
Tags; when a summary was written), Rolling Summary, Decisions and Search Footprint, and rewrites
it whenever the session changes. engram does the same and adds its own facts (metrics, files,
checkpoints, failed commands) after those sections.

The vault is `.engram/exports` unless the `sessions.vault_dir` setting names another folder
(an Obsidian vault, say; relative to the workspace root). Transcripts are backed up, redacted and
zstd-compressed, to `<vault>/.projecthub/transcripts/<session_id>.jsonl.zst`, within the
session's quota.

Everything here is a view: rebuilt from the store at any time, written atomically.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory_core.filenames import child_path, safe_filename
from memory_core.store import Store

VAULT_SETTING = "sessions.vault_dir"
BACKUP_SETTING = "sessions.backup_transcripts"
# Transcripts larger than this are not backed up at SessionEnd: redacting them would hold the hook.
BACKUP_MAX_BYTES = 64 * 1024 * 1024
_TAG_SPACE = re.compile(r"\s+")


def vault_dir(store: Store, settings: Mapping[str, Any] | None = None) -> Path:
    """Where session notes go: the `sessions.vault_dir` setting, else `.engram/exports`."""
    if settings is None:
        from memory_core import config

        settings = config.load(store.root).values
    configured = str(settings.get(VAULT_SETTING) or "").strip()
    if not configured:
        return store.dir / "exports"
    path = Path(configured).expanduser()
    if path.is_absolute():
        return path  # a folder the user named outright (an Obsidian vault elsewhere)
    inside = (store.root / path).resolve()
    if not inside.is_relative_to(store.root.resolve()):
        # A relative path may come from a committed pyproject.toml: it must stay in the workspace.
        from memory_core import log

        log.write(
            store.root,
            "warning",
            f"{VAULT_SETTING} {configured!r} leaves the workspace; using .engram/exports",
        )
        return store.dir / "exports"
    return inside


def note_path(store: Store, session: Mapping[str, Any], vault: Path) -> Path:
    # The date comes from the record too (an imported export may carry anything): the whole
    # name is made safe, and child_path refuses anything that would leave the folder.
    date = str(session["started_at"])[:10]
    name = safe_filename(f"{date}_{session['id']}", max_chars=160) + ".md"
    return child_path(vault / "sessions", name)


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a valid YAML scalar


def has_summary(summary: Mapping[str, Any]) -> bool:
    """Whether someone (an agent, a person) wrote a SessionSummary for the session."""
    return bool(
        summary.get("overview")
        or summary.get("decisions")
        or summary.get("outcomes")
        or summary.get("open_items")
    )


def note_markdown(
    store: Store,
    session: Mapping[str, Any],
    numbers: Mapping[str, Any],
    facts: str,
    *,
    format_version: int,
    decisions: list[str] | None = None,
) -> str:
    """The session's vault note: frontmatter, the seed's sections, then engram's facts.

    `decisions`: the session's decisions for its Decisions section, those the user stated in
    the session included (default: the summary's).

    `session` and `numbers` are the session and its metrics as `sessions` gives them, `facts`
    its summary Markdown; this module renders and writes, and never reads the sessions itself
    (sessions rewrite their note when they change: the dependency goes one way).
    """
    sid = session["id"]
    summary = session["summary"]
    fields = {
        "session_id": sid,
        "name": session["name"],
        "project_dir": str(store.root),
        "agent": session["agent"],
        "status": session["status"],
        "session_type": session["session_type"],
        "started_at": session["started_at"],
        "ended_at": session["ended_at"],
        "saved_at": session["saved_at"],
        "turns": numbers["turns"],
        "turn_count": numbers["turns"],
        "total_tokens": numbers["total_tokens"],
        "files_modified": numbers["files_modified"],  # net: what differs at the end
        "files_touched": numbers["files_touched"],
        "success_rate": numbers["success_rate"],
        "has_summary": has_summary(summary),
        "format_version": format_version,
    }
    lines = ["---", *(f"{key}: {_yaml_scalar(value)}" for key, value in fields.items())]
    lines.append("tags: [" + ", ".join(_yaml_scalar(t) for t in summary["tags"]) + "]")
    lines += ["---", "", f"# Session {session['label']}", ""]

    def bullets(items: list[str], empty: str = "- none recorded") -> list[str]:
        return [f"- {item}" for item in items] if items else [empty]

    if has_summary(summary):
        lines += ["## Summary", "", "### Overview", "", summary["overview"] or "_not written_", ""]
        lines += ["### Key Decisions", "", *bullets(summary["decisions"]), ""]
        lines += ["### Outcomes", "", *bullets(summary["outcomes"]), ""]
        lines += ["### Open Items", "", *bullets(summary["open_items"]), ""]
        tags = " ".join("#" + _TAG_SPACE.sub("-", t) for t in summary["tags"])
        lines += ["### Tags", "", tags or "none", ""]
    lines += ["## Rolling Summary", "", session["rolling_summary"] or "_empty_", ""]
    lines += [
        "## Decisions",
        "",
        *bullets(summary["decisions"] if decisions is None else decisions),
        "",
    ]
    footprint = [f"- `{q}`" for q in session["search_footprint"]]
    lines += ["## Search Footprint", "", *(footprint or ["- none recorded"]), ""]
    # engram's facts (metrics, files, checkpoints, failed commands) as `engram session summary`
    # renders them, after the seed's sections.
    cut = facts.find("## Metrics")
    if cut >= 0:
        lines.append(facts[cut:].rstrip("\n"))
        lines.append("")
    return "\n".join(lines)


def write_view(path: Path, text: str) -> None:
    """Replace a generated view atomically. No fsync: the view is rebuilt from the store at any
    time, so it is not worth the milliseconds a save would otherwise spend waiting on the disk."""
    from memory_core.store import ensure_private_dir

    ensure_private_dir(path.parent)
    # The thread in the name too: the server writes the same note from two commands at once.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def remove_note(store: Store, session: Mapping[str, Any]) -> None:
    """A deleted session's views go with it: its note and its transcript backup."""
    for vault in {vault_dir(store), store.dir / "exports"}:
        for path in (
            note_path(store, session, vault),
            backup_path(store, str(session["id"]), vault),
        ):
            if path.exists():
                path.unlink()


# -- transcripts ----------------------------------------------------------------------------------


def backup_path(store: Store, session_id: str, vault: Path | None = None) -> Path:
    folder = (vault or vault_dir(store)) / ".projecthub" / "transcripts"
    return folder / f"{safe_filename(session_id)}.jsonl.zst"


def _redacted_lines(raw: bytes) -> bytes:
    from memory_core.redact import redact, redact_obj

    out = []
    for line in raw.splitlines():
        text = line.decode("utf-8", errors="replace")
        clean = redact(text)
        if clean != text:
            try:
                json.loads(clean)
            except json.JSONDecodeError:
                # The redaction broke the JSON syntax: redact the values instead of the text.
                # (Not JSON to begin with: the redacted text is all there is.)
                with contextlib.suppress(json.JSONDecodeError):
                    clean = json.dumps(redact_obj(json.loads(text)), ensure_ascii=False)
        out.append(clean.encode("utf-8"))
    return b"\n".join(out) + (b"\n" if out else b"")


def backup_transcript(
    store: Store,
    session_id: str,
    transcript: Path,
    *,
    quota_bytes: int | None = None,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Back up an agent's JSONL transcript, redacted and compressed, within the session quota.

    Returns what was done: `path` and `bytes` when written, `skipped` with the reason otherwise.
    """
    import zstandard

    from memory_core.store import write_private_file

    if settings is None:
        from memory_core import config

        settings = config.load(store.root).values
    if not settings.get(BACKUP_SETTING, True):
        return {"skipped": "sessions.backup_transcripts is off"}
    try:
        size = transcript.stat().st_size
        if size > BACKUP_MAX_BYTES:
            return {"skipped": f"transcript is {size} bytes, over {BACKUP_MAX_BYTES}"}
        raw = transcript.read_bytes()
    except OSError as exc:
        return {"skipped": f"cannot read {transcript}: {exc.strerror or exc}"}
    packed = zstandard.ZstdCompressor(level=3).compress(_redacted_lines(raw))
    quota = int(settings.get("sessions.quota_bytes", 0)) if quota_bytes is None else quota_bytes
    row = store.query_one("SELECT bytes_used FROM sessions WHERE id = ?", (session_id,))
    used = int(row[0]) if row is not None else 0
    if quota and used + len(packed) > quota:
        return {
            "skipped": f"the backup ({len(packed)} bytes) would take the session past its quota "
            f"({used} of {quota} bytes used)"
        }
    path = backup_path(store, session_id, vault_dir(store, settings))
    write_private_file(path, packed)
    return {"path": str(path), "bytes": len(packed), "original_bytes": len(raw)}


def read_backup(path: Path) -> bytes:
    import zstandard

    return bytes(
        zstandard.ZstdDecompressor().decompress(path.read_bytes(), max_output_size=1 << 31)
    )


# -- the start-of-session reminder ------------------------------------------------------------------


# Sessions older than this are not worth a reminder any more (an old project would nag forever).
REMINDER_DAYS = 30
_UNSUMMARISED = (
    "FROM sessions WHERE turn_count > 0 AND overview IS NULL AND decisions = '[]' "
    "AND outcomes = '[]' AND open_items = '[]' AND id != ? AND last_activity_at >= ?"
)


def unsummarised(
    store: Store, *, exclude: str | None = None, limit: int = 5, now: float | None = None
) -> list[dict[str, Any]]:
    """Recent sessions with turns but no written summary, most recent first."""
    from memory_core import clock

    since = (clock.now() if now is None else now) - REMINDER_DAYS * 86400
    rows = store.query(
        f"SELECT id, name, started_at, turn_count {_UNSUMMARISED} "
        "ORDER BY last_activity_at DESC LIMIT ?",
        (exclude or "", since, limit),
    )
    return [dict(row) for row in rows]


def reminder(store: Store, *, current: str | None = None, now: float | None = None) -> str:
    """One line for the session-start context when recent sessions have no summary."""
    from memory_core import clock

    ts = clock.now() if now is None else now
    count = store.query_one(
        f"SELECT COUNT(*) {_UNSUMMARISED}", (current or "", ts - REMINDER_DAYS * 86400)
    )
    total = int(count[0]) if count is not None else 0
    if not total:
        return ""
    latest = unsummarised(store, exclude=current, limit=3, now=ts)
    names = ", ".join(str(r["name"] or r["id"]) for r in latest)
    more = f" and {total - len(latest)} more" if total > len(latest) else ""
    return (
        f"{total} earlier session{'s have' if total != 1 else ' has'} no summary yet ({names}{more}): "
        "run /session-summarize to write them (projecthub_session_list hasSummary=false, "
        "projecthub_session_transcript, projecthub_session_update_summary)."
    )
