"""The session's turn and state recorded with a checkpoint (beans' Checkpoint.turnNumber).

Written by `checkpoints` inside the checkpoint's transaction and read back by `conversation`
(rewind); a module of its own so that those two do not import each other.
"""

from __future__ import annotations

import json
import sqlite3

STATE_FIELDS = (
    "status",
    "rolling_summary",
    "overview",
    "decisions",
    "outcomes",
    "open_items",
    "tags",
    "summary_source",
    "search_footprint",
    "active_workflow",
    "workflow_state",
    "active_story",
    "active_subtask",
)


def record_checkpoint(db: sqlite3.Connection, checkpoint_id: str, session_id: str | None) -> None:
    """At checkpoint creation (inside its transaction): the session's turn and state now."""
    if not session_id:
        return
    row = db.execute(
        f"SELECT turn_count, {', '.join(STATE_FIELDS)} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        return
    state = {key: row[index + 1] for index, key in enumerate(STATE_FIELDS)}
    db.execute(
        "UPDATE checkpoints SET turn_number = ?, session_state = ? WHERE id = ?",
        (int(row[0]), json.dumps(state, ensure_ascii=False), checkpoint_id),
    )
