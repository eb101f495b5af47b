"""AIOS session state (seed 001): session type, who worked last, what they ran, which workflow
and task are in progress.

AIOS keeps `.aios/session-state.json` with a 1-hour TTL: `detectSessionType()` answers `new`
when there is no state or it expired, `workflow` when a workflow is active, else `existing`;
`updateSessionState(agentId, command)` appends the agent to `agentSequence` (at most 20) and
the command to `lastCommands` (at most 10) and infers the workflow state from the command;
`onTaskComplete(taskName, result)` appends to `taskHistory` (at most 20) and moves the workflow;
`loadContext()` returns the type, a message, the previous agent, the commands and the workflow.

engram keeps the same state per session in the store (columns of `sessions`), with the same
TTL, bounds and answers; the task in progress (story and subtask) is part of it, and context
snapshots and digests carry it.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memory_core import clock
from memory_core.errors import NotFoundError
from memory_core.store import Store

SESSION_TTL_SECONDS = 3600
MAX_AGENTS = 20
MAX_COMMANDS = 10
# AIOS onTaskComplete(): the tasks an agent finished, newest last, at most 20.
MAX_TASKS = 20
# AIOS infers the workflow state from the task an agent runs (36 mappings there; the story
# development ones here). A command is matched by its name without a leading `*` or `/`.
WORKFLOW_COMMANDS: dict[str, tuple[str, str]] = {
    "create-next-story": ("story_development", "created"),
    "create-story": ("story_development", "created"),
    "draft": ("story_development", "created"),
    "validate-next-story": ("story_development", "validated"),
    "validate-story": ("story_development", "validated"),
    "develop": ("story_development", "in_development"),
    "develop-story": ("story_development", "in_development"),
    "review": ("story_development", "in_review"),
    "review-story": ("story_development", "in_review"),
    "qa-gate": ("story_development", "qa_gate"),
    "apply-qa-fixes": ("story_development", "qa_fixes"),
    "story-done": ("story_development", "done"),
    "create-epic": ("epic_planning", "created"),
    "create-prd": ("planning", "prd"),
    "create-architecture": ("planning", "architecture"),
}
DONE_STATES = ("done",)


def _command_name(command: str) -> str:
    word = command.strip().split()[0] if command.strip() else ""
    return word.lstrip("*/").lower()


def infer_workflow(command: str) -> tuple[str, str] | None:
    """(workflow, state) a command moves the session to, when it is a known workflow task."""
    return WORKFLOW_COMMANDS.get(_command_name(command))


def detect_type(store: Store, *, now: float | None = None, exclude: str | None = None) -> str:
    """`new`, `existing` or `workflow`, as AIOS's detectSessionType() answers.

    From the most recently active session other than `exclude`: none, or silent for more than
    the TTL, is `new`; one with an active workflow is `workflow`; otherwise `existing`.
    """
    ts = clock.now() if now is None else now
    row = store.query_one(
        "SELECT last_activity_at, active_workflow, workflow_state FROM sessions WHERE id != ? "
        "ORDER BY last_activity_at DESC, rowid DESC LIMIT 1",
        (exclude or "",),
    )
    if row is None or ts - float(row["last_activity_at"]) > SESSION_TTL_SECONDS:
        return "new"
    if row["active_workflow"] and row["workflow_state"] not in DONE_STATES:
        return "workflow"
    return "existing"


def _bounded(items: list[str], item: str, limit: int) -> list[str]:
    return [*items, item][-limit:]


def record_activity(
    db: sqlite3.Connection,
    session_id: str,
    *,
    agent: str | None = None,
    command: str | None = None,
) -> None:
    """AIOS updateSessionState(agent, command), inside the caller's transaction."""
    row = db.execute(
        "SELECT agent_sequence, last_commands FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        return
    agents: list[str] = json.loads(row[0])
    commands: list[str] = json.loads(row[1])
    if agent and (not agents or agents[-1] != agent):
        agents = _bounded(agents, agent, MAX_AGENTS)
    updates: dict[str, Any] = {"agent_sequence": json.dumps(agents)}
    if command:
        from memory_core.redact import redact

        commands = _bounded(commands, redact(command.strip())[:200], MAX_COMMANDS)
        updates["last_commands"] = json.dumps(commands)
        inferred = infer_workflow(command)
        if inferred is not None:
            updates["active_workflow"], updates["workflow_state"] = inferred
    assignments = ", ".join(f"{key} = ?" for key in updates)
    db.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*updates.values(), session_id))


def record_task_done(
    db: sqlite3.Connection, session_id: str, task: str, *, result: str, ts: float
) -> None:
    """AIOS onTaskComplete(taskName, result): the task joins the session's task history (at
    most 20) and, when it is a known workflow task, moves the workflow as its command would."""
    from memory_core.redact import redact

    row = db.execute("SELECT data FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return
    data = _data_of(row[0])
    history = [item for item in data.get("task_history") or [] if isinstance(item, dict)]
    entry = {"task": redact(task.strip())[:200], "result": redact(result.strip())[:200]}
    data["task_history"] = [*history, {**entry, "at": clock.iso(ts)}][-MAX_TASKS:]
    updates: dict[str, Any] = {"data": json.dumps(data, ensure_ascii=False)}
    inferred = infer_workflow(task)
    if inferred is not None:
        updates["active_workflow"], updates["workflow_state"] = inferred
    assignments = ", ".join(f"{key} = ?" for key in updates)
    db.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*updates.values(), session_id))


def _data_of(text: Any) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def update(
    store: Store,
    session_id: str,
    *,
    agent: str | None = None,
    command: str | None = None,
    workflow: str | None = None,
    workflow_state: str | None = None,
    story: str | None = None,
    subtask: str | None = None,
    task_done: str | None = None,
    task_result: str = "done",
    now: float | None = None,
) -> dict[str, Any]:
    """Record an agent's activity and set the workflow and task; returns the new state."""
    ts = clock.now() if now is None else now
    with store.transaction() as db:
        if db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise NotFoundError(f"no session {session_id!r}", hint="see `engram session list`")
        record_activity(db, session_id, agent=agent, command=command)
        if task_done:
            record_task_done(db, session_id, task_done, result=task_result, ts=ts)
        fields = {
            "active_workflow": workflow,
            "workflow_state": workflow_state,
            "active_story": story,
            "active_subtask": subtask,
        }
        # An empty string clears a field; None leaves it as it is.
        chosen = {key: (value or None) for key, value in fields.items() if value is not None}
        if chosen:
            assignments = ", ".join(f"{key} = ?" for key in chosen)
            db.execute(
                f"UPDATE sessions SET {assignments} WHERE id = ?", (*chosen.values(), session_id)
            )
        db.execute(
            "UPDATE sessions SET last_activity_at = MAX(last_activity_at, ?) WHERE id = ?",
            (ts, session_id),
        )
    return state(store, session_id, now=ts)


def state(store: Store, session_id: str, *, now: float | None = None) -> dict[str, Any]:
    """The session's AIOS state: type, agents, commands, workflow, task, and whether it expired."""
    ts = clock.now() if now is None else now
    row = store.query_one("SELECT * FROM sessions WHERE id = ?", (session_id,))
    if row is None:
        raise NotFoundError(f"no session {session_id!r}", hint="see `engram session list`")
    agents: list[str] = json.loads(row["agent_sequence"])
    return {
        "id": row["id"],
        "session_type": row["session_type"],
        "agent": row["agent"],
        "agent_sequence": agents,
        "previous_agent": agents[-2] if len(agents) > 1 else None,
        "current_agent": agents[-1] if agents else row["agent"],
        "last_commands": json.loads(row["last_commands"]),
        "active_workflow": row["active_workflow"],
        "workflow_state": row["workflow_state"],
        "active_story": row["active_story"],
        "active_subtask": row["active_subtask"],
        "task_history": _data_of(row["data"]).get("task_history") or [],
        "last_activity_at": clock.iso(row["last_activity_at"]),
        "expired": ts - float(row["last_activity_at"]) > SESSION_TTL_SECONDS,
    }


def context_message(store: Store, *, exclude: str | None = None, now: float | None = None) -> str:
    """AIOS generateContextMessage(): one line on where the previous session stood, or ""."""
    ts = clock.now() if now is None else now
    kind = detect_type(store, now=ts, exclude=exclude)
    if kind == "new":
        return ""
    row = store.query_one(
        "SELECT id FROM sessions WHERE id != ? ORDER BY last_activity_at DESC, rowid DESC LIMIT 1",
        (exclude or "",),
    )
    assert row is not None
    current = state(store, str(row["id"]), now=ts)
    parts = [f"Continuing ({kind} session) from {current['current_agent']}"]
    if current["active_story"]:
        task = f"story {current['active_story']}"
        if current["active_subtask"]:
            task += f", subtask {current['active_subtask']}"
        parts.append(f"working on {task}")
    if current["active_workflow"]:
        parts.append(
            f"workflow {current['active_workflow']} ({current['workflow_state'] or 'started'})"
        )
    if current["last_commands"]:
        parts.append("last commands: " + ", ".join(current["last_commands"][-3:]))
    if current["task_history"]:
        last = current["task_history"][-1]
        parts.append(f"last task done: {last['task']} ({last['result']})")
    return "; ".join(parts) + "."
