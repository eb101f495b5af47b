"""The session's vault note, `<vault>/sessions/<date>_<id>.md`: written after every change to
what it shows, never failing the change it follows."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory_core import log
from memory_core.sessions.document import FORMAT_VERSION
from memory_core.sessions.metrics import metrics
from memory_core.sessions.reading import decisions_of, get
from memory_core.sessions.summary import summary_markdown
from memory_core.store import Store


def export_path(store: Store, session: Mapping[str, Any]) -> Path:
    """Where the session's Markdown note is written (see `session_vault`)."""
    from memory_core import session_vault

    return session_vault.note_path(store, session, session_vault.vault_dir(store))


def write_export(store: Store, session_id: str, *, now: float | None = None) -> Path:
    """Write the session's vault note, `<vault>/sessions/<date>_<id>.md` (see `session_vault`)."""
    from memory_core import session_vault

    session = get(store, session_id, now=now)
    sid = session["id"]
    numbers = metrics(store, sid, now=now)
    text = session_vault.note_markdown(
        store,
        session,
        numbers,
        summary_markdown(store, sid, now=now, session=session, numbers=numbers),
        format_version=FORMAT_VERSION,
        decisions=decisions_of(store, sid, list(session["summary"]["decisions"])),
    )
    path = session_vault.note_path(store, session, session_vault.vault_dir(store))
    session_vault.write_view(path, text)
    return path


def refresh_note(store: Store, session_id: str, now: float | None = None) -> None:
    """Rewrite the session's vault note: its summary, decisions or status just changed.

    Called from the recording path (hooks too): a failure is logged, never raised, because the
    store already holds the change and the note is only a view of it.
    """
    try:
        write_export(store, session_id, now=now)
    except Exception as exc:  # a view must never fail the write it follows
        log.write(store.root, "warning", f"session note for {session_id} not written: {exc}")
