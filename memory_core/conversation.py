"""Checkpoints and the conversation (beans' Checkpoint: `turnNumber` and the session with it).

A checkpoint taken during a session records the session, the turn it was at and the session's
summary fields as they stood (rolling summary, overview, decisions, outcomes, open items, tags,
search footprint, status). Rolling back to it can also rewind the session: the turns after it,
the tool calls, commands and files recorded after it leave the session, and its summary fields
return to what they were; the next agent's context is then the session as it stood at that turn.

Nothing is lost by a rewind: the whole session is saved first (a version in `saved_sessions`,
loadable with `engram session load`), and the agent ledger's rows after the checkpoint move to
a detached id `<session>@rewound-<time>` instead of being deleted. Rewinding to a checkpoint
taken later than the session now is (the undo checkpoint a rollback makes) restores the turns
from that saved version.
"""

from __future__ import annotations

import json
import os
from typing import Any

from memory_core import clock, events
from memory_core.errors import NotFoundError, UsageError

# In their own module so that checkpoints (which record the turn) and this one (which reads
# it back) do not import each other; re-exported here.
from memory_core.session_turns import STATE_FIELDS, record_checkpoint  # noqa: F401
from memory_core.store import Store

# The agent ledger's tables and their time column: rows after the checkpoint are detached.
_AGENT_TABLES = (
    ("agent_prompts", "ts"),
    ("agent_tool_uses", "ts"),
    ("agent_turns", "started_at"),
    ("agent_messages", "ts"),
    ("agent_compactions", "ts"),
)


def rewind(store: Store, checkpoint_ref: str, *, now: float | None = None) -> dict[str, Any]:
    """Return the checkpoint's session to the turn the checkpoint was taken at."""
    from memory_core import checkpoints, sessions

    ts = clock.now() if now is None else now
    info = checkpoints.get(store, checkpoint_ref)
    row = store.query_one(
        "SELECT session_id, turn_number, session_state, created_at FROM checkpoints WHERE id = ?",
        (info["id"],),
    )
    assert row is not None
    if not row["session_id"] or row["turn_number"] is None:
        raise UsageError(
            f"checkpoint {info['id']} was not taken during a session, so there is no conversation "
            "to rewind",
            hint="roll back its files without rewinding",
        )
    sid = str(row["session_id"])
    turn = int(row["turn_number"])
    taken = float(row["created_at"])
    state: dict[str, Any] = json.loads(row["session_state"] or "{}")
    current = store.query_one("SELECT turn_count FROM sessions WHERE id = ?", (sid,))
    if current is None:
        raise NotFoundError(
            f"the session {sid} of checkpoint {info['id']} no longer exists",
            hint="restore it with `engram session load` first",
        )
    if int(current[0]) < turn:
        _restore_saved(store, sid, turn)
    saved = sessions.save(store, sid, now=ts)  # the session as it is now, kept before trimming
    detached = f"{sid}@rewound-{clock.iso(ts)}"
    with store.transaction() as db:
        dropped = db.execute(
            "DELETE FROM session_turns WHERE session_id = ? AND seq > ?", (sid, turn)
        ).rowcount
        db.execute("DELETE FROM session_tool_calls WHERE session_id = ? AND ts > ?", (sid, taken))
        db.execute("DELETE FROM session_commands WHERE session_id = ? AND ts > ?", (sid, taken))
        db.execute("DELETE FROM session_files WHERE session_id = ? AND first_ts > ?", (sid, taken))
        for table, column in _AGENT_TABLES:
            db.execute(
                f"UPDATE {table} SET session_id = ? WHERE session_id = ? AND {column} > ?",
                (detached, sid, taken),
            )
        tokens = db.execute(
            "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) "
            "FROM session_turns WHERE session_id = ?",
            (sid,),
        ).fetchone()
        fields = {key: state[key] for key in STATE_FIELDS if key in state}
        if fields.get("status") == "closed":
            fields["status"] = "active"  # work goes on from the checkpoint
        assignments = ", ".join(f"{key} = ?" for key in fields)
        db.execute(
            f"UPDATE sessions SET {assignments}{', ' if assignments else ''}turn_count = ?, "
            "input_tokens = ?, output_tokens = ?, ended_at = NULL, end_reason = NULL, "
            "last_action = 'resume', last_activity_at = MAX(last_activity_at, ?) WHERE id = ?",
            (*fields.values(), turn, int(tokens[0]), int(tokens[1]), ts, sid),
        )
        events.append(
            store,
            events.Event(
                "session.rewound",
                session_id=sid,
                data={"checkpoint": info["id"], "turn": turn, "turns_removed": dropped},
                ts=ts,
            ),
            db=db,
        )
    sessions.refresh_note(store, sid, ts)
    return {
        "session_id": sid,
        "turn": turn,
        "turns_removed": dropped,
        "saved_before_rewind": saved["saved_at"],
        "detached_id": detached,
    }


def _restore_saved(store: Store, session_id: str, turn: int) -> None:
    """Bring back turns a rewind removed, from the newest saved version that has them."""
    from memory_core import sessions

    for saved in store.query(
        "SELECT payload FROM saved_sessions WHERE session_id = ? ORDER BY saved_at DESC, id DESC",
        (session_id,),
    ):
        doc = sessions.parse_document(sessions.unpack_document(saved["payload"]))
        if len(doc.get("turns") or []) >= turn:
            sessions.restore_document(store, doc, replace=True, trusted=True)
            return
    raise UsageError(
        f"session {session_id} has fewer than {turn} turns and no saved version has them",
        hint="nothing was changed in the conversation",
    )


def workspace_changes(store: Store, session_id: str, *, settings: Any = None) -> dict[str, Any]:
    """What happened to the workspace since the session last worked in it (beans FR4).

    The files: against the session's newest checkpoint when it has one (exact, by content),
    else the evolution record's changes after its last activity together with the files whose
    modification time is later than it (what nobody recorded: edits while no editor or agent
    of engram's ran), and the session's files that are gone. The branch: the one the agent
    reported, against the one checked out now.
    """
    from memory_core import checkpoints, git

    session = store.query_one("SELECT last_activity_at FROM sessions WHERE id = ?", (session_id,))
    if session is None:
        raise NotFoundError(f"no session {session_id!r}", hint="see `engram session list`")
    since = float(session["last_activity_at"])
    result: dict[str, Any] = {
        "since": clock.iso(since),
        "checkpoint": None,
        "added": [],
        "modified": [],
        "deleted": [],
        "branch": None,
    }
    latest = store.query_one(
        "SELECT id FROM checkpoints WHERE session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
        (session_id,),
    )
    if latest is not None:
        found = checkpoints.diff(store, str(latest["id"]), settings=settings)
        result.update(
            checkpoint=found["id"],
            added=found["added"],
            modified=sorted({*found["modified"], *found["mode_changed"]}),
            deleted=found["deleted"],
        )
    else:
        rows = store.query(
            "SELECT DISTINCT path FROM file_changes WHERE ts > ? AND path IS NOT NULL "
            "AND NOT (actor = 'agent' AND session_id IS ?) ORDER BY path",
            (since, session_id),
        )
        recorded = {str(r["path"]) for r in rows}
        # Nothing watched the workspace for engram meanwhile (no editor running, no hook): the
        # files' own times say which were written since; the session's files that are gone
        # were deleted.
        edited, gone = _changed_on_disk(store, session_id, since, settings)
        result["deleted"] = sorted(gone)
        result["modified"] = sorted((recorded | edited) - gone)
    agent = store.query_one(
        "SELECT git_branch FROM agent_sessions WHERE session_id = ?", (session_id,)
    )
    head = git.read_head(store.root)
    then = agent["git_branch"] if agent is not None else None
    now_branch = head.branch if head is not None else None
    if then and now_branch and then != now_branch:
        result["branch"] = {"then": then, "now": now_branch}
    return result


def _changed_on_disk(
    store: Store, session_id: str, since: float, settings: Any
) -> tuple[set[str], set[str]]:
    """(files written after `since`, files the session changed that no longer exist).

    A walk of the workspace with the ignore rules engram watches by (`.gitignore`,
    `watch.exclude`), comparing each file's modification time with the session's last
    activity; files the session itself wrote are older than that.
    """
    from memory_core import config, journal
    from memory_core.checkpoints.disk import scan

    values = settings if settings is not None else config.load(store.root)
    rules = journal.watch_rules(store.root, values["watch.exclude"])
    found = scan(store.root, rules, max_file_bytes=1 << 62)
    since_ns = int(since * 1e9)
    edited = {rel for rel, entry in found.files.items() if entry.mtime_ns > since_ns}
    touched = store.query(
        "SELECT path FROM session_files WHERE session_id = ? AND outside = 0", (session_id,)
    )
    gone = {
        str(row["path"])
        for row in touched
        if str(row["path"]) not in found.files and not os.path.lexists(store.root / row["path"])
    }
    return edited, gone


def changes_text(changes: dict[str, Any]) -> str:
    """The workspace changes for people: one line per kind, or that nothing changed."""
    lines = []
    if changes["branch"]:
        lines.append(
            f"branch switched from {changes['branch']['then']} to {changes['branch']['now']}"
        )
    for key in ("added", "modified", "deleted"):
        paths = changes[key]
        if paths:
            shown = ", ".join(paths[:8]) + (f" and {len(paths) - 8} more" if len(paths) > 8 else "")
            lines.append(f"{key}: {shown}")
    where = f" (against checkpoint {changes['checkpoint']})" if changes["checkpoint"] else ""
    if not lines:
        return f"workspace: unchanged since the session{where}"
    return f"workspace changes since the session{where}:\n" + "\n".join(
        f"  {line}" for line in lines
    )


def resume(store: Store, ref: str | None = None, *, settings: Any = None) -> dict[str, Any]:
    """Resume a session (sessions.resume) with the workspace changes since it (beans FR4).

    The changes are measured first: resuming counts as activity.
    """
    from memory_core import sessions

    if ref is None:
        current = sessions.latest(store)
        if current is None:
            raise NotFoundError("there is no session to resume", hint="start one, or import one")
        sid = str(current["id"])
    else:
        try:
            sid = str(sessions.get(store, ref)["id"])
        except NotFoundError:
            # Only a saved copy is left (deleted, or saved elsewhere): restored first, as it
            # stood, so the changes are measured from its own last activity (resuming it first
            # made that "now", and every change since the session was lost).
            sid = str(sessions.load(store, ref)["session"]["id"])
    changes = workspace_changes(store, sid, settings=settings)
    loaded = sessions.resume(store, sid)
    loaded["workspace_changes"] = changes
    return loaded
