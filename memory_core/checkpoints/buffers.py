"""Unsaved editor text kept with a pre-rollback checkpoint.

A checkpoint holds what is on disk. A rollback also replaces the text of open buffers with
unsaved changes (their files are restored, and the editor reloads them), so the language server
keeps that text with the rollback's own pre-rollback checkpoint: undoing the rollback (rolling
back to that checkpoint) gives the buffers their unsaved text back.
"""

from __future__ import annotations

from collections.abc import Mapping

from memory_core.store import Store


def keep(store: Store, checkpoint_id: str, texts: Mapping[str, str], *, max_bytes: int) -> None:
    """Keep `texts` (path -> unsaved buffer text) with checkpoint `checkpoint_id`; a text
    larger than `max_bytes` (the checkpoint's file size cap) is not kept."""
    rows = [
        (checkpoint_id, rel, text)
        for rel, text in sorted(texts.items())
        if len(text.encode("utf-8", "surrogatepass")) <= max_bytes
    ]
    if not rows:
        return
    with store.transaction() as db:
        db.executemany(
            "INSERT OR REPLACE INTO checkpoint_buffers (checkpoint_id, path, text) VALUES (?, ?, ?)",
            rows,
        )


def kept(store: Store, checkpoint_id: str) -> dict[str, str]:
    """The unsaved buffer texts kept with checkpoint `checkpoint_id`, by path."""
    return {
        str(row["path"]): str(row["text"])
        for row in store.query(
            "SELECT path, text FROM checkpoint_buffers WHERE checkpoint_id = ? ORDER BY path",
            (checkpoint_id,),
        )
    }
