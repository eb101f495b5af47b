"""Saved sessions: save (versioned documents, the newest kept), load and resume, delete into the
recoverable state, export and import of `SessionExport` files."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory_core import clock, events
from memory_core.errors import EngramError, NotFoundError, UsageError
from memory_core.redact import redact, redact_obj
from memory_core.sessions.document import (
    FORMAT_VERSION,
    _pack,
    _refuse_newer,
    _ts,
    document,
    document_json,
    fill_placeholders,
    parse_document,
    unpack_document,
)
from memory_core.sessions.model import (
    _SUMMARY_LISTS,
    STATUSES,
    NameTakenError,
    _find_row,
    _json,
)
from memory_core.sessions.note import refresh_note, write_export
from memory_core.sessions.reading import files_modified, get, history, latest
from memory_core.sessions.recording import start
from memory_core.store import Store

SAVED_VERSIONS_KEPT = 5


def save(
    store: Store,
    session_id: str | None = None,
    *,
    name: str | None = None,
    overwrite: bool = False,
    agent: str = "editor",
    now: float | None = None,
) -> dict[str, Any]:
    """Save a session (default: the latest; an editor session is started when there is none).

    A `name` another session holds raises NameTakenError unless `overwrite`, which moves the
    name to this session. Writes the versioned document and `exports/sessions/<date>_<id>.md`.
    """
    ts = clock.now() if now is None else now
    if name is not None:
        name = redact(name.strip())
        if not name:
            raise UsageError("a session name cannot be empty")
    if session_id is None:
        current = latest(store)
        sid = current["id"] if current else start(store, agent=agent, now=ts)["id"]
    else:
        sid = get(store, session_id, now=ts)["id"]
    with store.transaction() as db:
        if name is not None:
            holder = db.execute(
                "SELECT id FROM sessions WHERE name = ? AND id != ?", (name, sid)
            ).fetchone()
            if holder is not None:
                if not overwrite:
                    raise NameTakenError(name, holder[0])
                db.execute("UPDATE sessions SET name = NULL WHERE id = ?", (holder[0],))
                db.execute("UPDATE saved_sessions SET name = NULL WHERE name = ?", (name,))
            db.execute("UPDATE sessions SET name = ? WHERE id = ?", (name, sid))
        db.execute("UPDATE sessions SET saved_at = ? WHERE id = ?", (ts, sid))
    text = document_json(store, sid, now=ts)
    payload = _pack(text)
    with store.transaction() as db:
        db.execute(
            "INSERT INTO saved_sessions (session_id, name, format_version, saved_at, payload, size) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                sid,
                name if name is not None else _saved_name(db, sid),
                FORMAT_VERSION,
                ts,
                payload,
                len(text),
            ),
        )
        db.execute(
            "DELETE FROM saved_sessions WHERE session_id = ? AND id NOT IN (SELECT id FROM saved_sessions "
            "WHERE session_id = ? ORDER BY saved_at DESC, id DESC LIMIT ?)",
            (sid, sid, SAVED_VERSIONS_KEPT),
        )
        events.append(
            store, events.Event("session.saved", session_id=sid, data={"name": name}, ts=ts), db=db
        )
    path = write_export(store, sid, now=ts)
    session = get(store, sid, now=ts)
    return {
        **session,
        "export_path": str(path),
        "format_version": FORMAT_VERSION,
        "bytes": len(payload),
    }


def _saved_name(db: sqlite3.Connection, session_id: str) -> str | None:
    row = db.execute("SELECT name FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return row[0] if row is not None else None


def restore_document(
    store: Store, doc: Mapping[str, Any], *, replace: bool, trusted: bool = False
) -> str:
    """Write a parsed document's session into the live tables; returns the session id.

    `trusted`: the document is this store's own save, redacted when it was recorded; a document
    from elsewhere (an import) is redacted again.
    """
    clean: Any = (lambda text: text) if trusted else redact
    clean_obj: Any = (lambda value: value) if trusted else redact_obj
    s = doc["session"]
    sid = str(s["id"])
    started = _ts(s.get("started_at")) or clock.now()
    turns = doc.get("turns") or []
    input_tokens = sum(int(t.get("input_tokens") or 0) for t in turns)
    output_tokens = sum(int(t.get("output_tokens") or 0) for t in turns)
    with store.transaction() as db:
        if replace:
            db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
        name = clean(s["name"]) if s.get("name") else None
        if (
            name is not None
            and db.execute(
                "SELECT 1 FROM sessions WHERE name = ? AND id != ?", (name, sid)
            ).fetchone()
        ):
            name = None  # the name now belongs to another session; the id still finds this one
        db.execute(
            "INSERT INTO sessions (id, name, agent, session_type, status, last_action, end_reason, "
            "started_at, last_activity_at, ended_at, saved_at, rolling_summary, overview, decisions, "
            "outcomes, open_items, tags, summary_source, search_footprint, turn_count, input_tokens, "
            "output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sid,
                name,
                s.get("agent") or "editor",
                s.get("session_type") or "new",
                s.get("status") if s.get("status") in STATUSES else "closed",
                s.get("last_action") or "completion",
                s.get("end_reason"),
                started,
                _ts(s.get("last_activity_at")) or started,
                _ts(s.get("ended_at")),
                _ts(s.get("saved_at")),
                clean(s.get("rolling_summary") or ""),
                clean(s["overview"]) if s.get("overview") else None,
                *(_json(clean_obj(list(s.get(k) or []))) for k in _SUMMARY_LISTS),
                s.get("summary_source"),
                _json(clean_obj(list(s.get("search_footprint") or []))),
                len(turns),
                input_tokens,
                output_tokens,
            ),
        )
        db.executemany(
            "INSERT INTO session_turns (session_id, seq, user_message, assistant_response, tool_calls, "
            "input_tokens, output_tokens, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    sid,
                    index,
                    clean(t["user_message"]) if t.get("user_message") else t.get("user_message"),
                    clean(t["assistant_response"])
                    if t.get("assistant_response")
                    else t.get("assistant_response"),
                    _json(clean_obj(t.get("tool_calls") or [])),
                    int(t.get("input_tokens") or 0),
                    int(t.get("output_tokens") or 0),
                    _ts(t.get("started_at")),
                    _ts(t.get("ended_at")),
                )
                for index, t in enumerate(turns, start=1)
            ],
        )
        db.executemany(
            "INSERT INTO session_tool_calls (session_id, tool, ok, summary, ts) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    sid,
                    c.get("tool", "unknown"),
                    int(bool(c.get("ok", True))),
                    clean(c["summary"]) if c.get("summary") else None,
                    _ts(c.get("ts")) or started,
                )
                for c in doc.get("toolCalls") or []
            ],
        )
        db.executemany(
            "INSERT OR IGNORE INTO session_files (session_id, path, first_ts, last_ts, changes, outside) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (
                    sid,
                    # A file outside the workspace is an absolute path, redacted when recorded.
                    clean(f["path"]) if f.get("outside") else f["path"],
                    _ts(f.get("first_ts")) or started,
                    _ts(f.get("last_ts")) or started,
                    int(f.get("changes", 1)),
                    int(bool(f.get("outside"))),
                )
                for f in doc.get("files") or []
            ],
        )
        db.executemany(
            "INSERT INTO session_commands (session_id, command, exit_code, ts, failed) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (
                    sid,
                    clean(c["command"]),
                    c.get("exit_code"),
                    _ts(c.get("ts")) or started,
                    # Documents before this field: the exit code alone says whether it failed.
                    None if c.get("failed") is None else int(bool(c["failed"])),
                )
                for c in doc.get("commands") or []
                if c.get("command")
            ],
        )
    return sid


def _latest_saved(store: Store, ref: str) -> sqlite3.Row | None:
    row = _find_row(store, ref)
    if row is not None:
        saved = store.query_one(
            "SELECT * FROM saved_sessions WHERE session_id = ? ORDER BY saved_at DESC, id DESC LIMIT 1",
            (row["id"],),
        )
        if saved is not None:
            return saved
    return store.query_one(
        "SELECT * FROM saved_sessions WHERE name = ? OR session_id = ? ORDER BY saved_at DESC, id DESC LIMIT 1",
        (ref, ref),
    )


def load(
    store: Store, ref: str, *, now: float | None = None, history_limit: int | None = None
) -> dict[str, Any]:
    """Load a saved session by name or id (or a SessionExport JSON file by path).

    A session whose live records are gone (deleted, or saved in another workspace) is restored
    from its saved document. Returns the session, its turns and the files it touched.
    """
    ts = clock.now() if now is None else now
    if ref.endswith(".json") and os.path.isfile(ref):
        return import_file(store, Path(ref), now=ts)
    saved = _latest_saved(store, ref)
    if saved is not None:
        _refuse_newer(int(saved["format_version"]))
        if _find_row(store, saved["session_id"]) is None:
            restore_document(
                store,
                parse_document(unpack_document(saved["payload"])),
                replace=False,
                trusted=True,
            )
    elif _find_row(store, ref) is None:
        raise NotFoundError(f"no saved session {ref!r}", hint="see `engram session list`")
    session = get(store, saved["session_id"] if saved is not None else ref, now=ts)
    return {
        "session": session,
        "turns": history(store, session["id"], last=history_limit),
        "files": files_modified(store, session["id"]),
    }


def resume(store: Store, ref: str | None = None, *, now: float | None = None) -> dict[str, Any]:
    """Load a session (default: the latest, like `claude --continue`) and make it active again."""
    ts = clock.now() if now is None else now
    if ref is None:
        current = latest(store)
        if current is None:
            raise NotFoundError("there is no session to resume", hint="start one, or import one")
        ref = current["id"]
    loaded = load(store, ref, now=ts, history_limit=20)
    sid = loaded["session"]["id"]
    with store.transaction() as db:
        db.execute(
            "UPDATE sessions SET status = CASE WHEN status = 'closed' THEN 'active' ELSE status END, "
            "ended_at = NULL, end_reason = NULL, last_action = 'resume', last_activity_at = ? WHERE id = ?",
            (ts, sid),
        )
    refresh_note(store, sid, ts)
    loaded["session"] = get(store, sid, now=ts)
    return loaded


def delete(
    store: Store,
    ref: str,
    *,
    reason: str | None = None,
    actor: str = "user",
    settings: Any = None,
    now: float | None = None,
) -> dict[str, Any]:
    """Delete a session, its records and its saved copies into the recoverable state.

    Like every deletion (seed 003: 30 days in the deleted state), `engram undelete ID` puts
    it all back until `memory.recovery_days` have passed; then retention or `engram purge`
    removes it for good. The long-term memories the session produced stay. Its Markdown
    export is removed now and written again on undelete.
    """
    from memory_core import lifecycle

    session = get(store, ref)
    sid = session["id"]
    record = lifecycle.delete(
        store,
        session_id=sid,
        reason=reason or "engram session delete",
        actor=actor,
        settings=settings,
        include_memories=False,
        now=now,
    )
    # Not under the session's id: the deleted session leaves no live row citing it.
    events.append(
        store, events.Event("session.deleted", data={"session": sid, "deletion": record["id"]})
    )
    from memory_core import session_vault

    session_vault.remove_note(store, session)
    return {
        "id": sid,
        "name": session["name"],
        "deleted": True,
        "deletion": record["id"],
        "recover_until": record["recover_until"],
    }


def export_document(store: Store, ref: str, *, now: float | None = None) -> dict[str, Any]:
    """The session as a beans `SessionExport` JSON object."""
    return document(store, get(store, ref)["id"], now=now)


def import_document(
    store: Store, raw: Any, *, replace: bool = False, now: float | None = None
) -> dict[str, Any]:
    """Import a SessionExport object; an existing session with the same id needs `replace`."""
    doc = parse_document(raw)
    sid = doc["session"]["id"]
    if _find_row(store, sid) is not None and not replace:
        raise EngramError(
            f"session {sid} already exists here", hint="delete it first or import with --replace"
        )
    restore_document(store, doc, replace=replace)
    session = get(store, sid, now=now)
    return {
        "session": session,
        "turns": history(store, sid, last=20),
        "files": files_modified(store, sid),
        "notes": _import_notes(store, raw),
    }


def _import_notes(store: Store, raw: Any) -> list[str]:
    """What an import changed on the way in, for the person importing: the recorded workspace
    (beans' `workspace.rootPath`) is not kept, the session now belongs to this one."""
    notes = []
    workspace = raw.get("workspace") if isinstance(raw, dict) else None
    if isinstance(workspace, dict):
        recorded = workspace.get("rootPath") or workspace.get("root")
        if isinstance(recorded, str) and recorded and recorded != str(store.root):
            notes.append(
                f"the session was recorded in {recorded}; it is imported into this workspace"
                f" ({store.root}), and its files are read as this workspace's"
            )
    return notes


def import_file(
    store: Store, path: Path, *, replace: bool = False, now: float | None = None
) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file {str(path)!r}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None
    except OSError as exc:  # a folder (`import ''` names the current one), no permission
        raise UsageError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    placeholders = 0
    try:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as first:
            # Documentation examples write `[...]` for "some items": read it as none.
            filled, placeholders = fill_placeholders(text)
            if not placeholders:
                raise first from None
            raw = json.loads(filled)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None
    except RecursionError:
        raise UsageError(f"{path} is not JSON: nested too deeply") from None
    imported = import_document(store, raw, replace=replace, now=now)
    if placeholders:
        imported["notes"].insert(
            0,
            f"{path.name} has {placeholders} placeholder(s) (`[...]`), read as empty",
        )
    return imported
