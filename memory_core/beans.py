"""The beans `SessionExport` (seed 004): a session in beans' own JSON shape, on request.

`engram session export --format beans` writes

    {"version": "1.0",
     "session": {sessionId, startedAt, turnCount, totalTokens, modifiedFiles, commandsExecuted},
     "turns": [{turnNumber, userMessage, assistantResponse, toolCalls, timestamp,
                tokens: {prompt, completion}}],
     "workspace": {rootPath, isGitRepo, gitBranch},
     "savedAt": ...,
     "metrics": SessionMetrics}

with beans' SessionMetrics (durationMs, averageTokensPerTurn, toolCallSuccessRate, ...) added,
because beans makes metrics "exportable for analysis" without saying where. engram's own
export (`--format engram`, the default) holds more (summary, commands, files with times) and is
what `engram session import` prefers; both import.
"""

from __future__ import annotations

from typing import Any

from memory_core import clock, git, sessions
from memory_core.store import Store

BEANS_VERSION = "1.0"


def metrics(store: Store, session_id: str, *, now: float | None = None) -> dict[str, Any]:
    """beans' SessionMetrics for one session."""
    m = sessions.metrics(store, session_id, now=now)
    return {
        "sessionId": m["id"],
        "durationMs": round(m["duration_seconds"] * 1000),
        "turnCount": m["turns"],
        "totalTokens": m["total_tokens"],
        "averageTokensPerTurn": m["avg_tokens_per_turn"],
        "filesModified": m["files_modified"],
        "commandsExecuted": m["commands"],
        "successfulToolCalls": m["tool_calls_succeeded"],
        "failedToolCalls": m["tool_calls_failed"],
        "toolCallSuccessRate": m["success_rate"] if m["success_rate"] is not None else 0.0,
    }


def export(store: Store, ref: str, *, now: float | None = None) -> dict[str, Any]:
    """The session as a beans SessionExport."""
    ts = clock.now() if now is None else now
    session = sessions.get(store, ref, now=ts)
    sid = session["id"]
    numbers = metrics(store, sid, now=ts)
    turns = [
        {
            "turnNumber": turn["seq"],
            "userMessage": turn["user_message"] or "",
            "assistantResponse": turn["assistant_response"] or "",
            "toolCalls": turn["tool_calls"],
            "timestamp": turn["started_at"] or turn["ended_at"] or session["started_at"],
            "tokens": {"prompt": turn["input_tokens"], "completion": turn["output_tokens"]},
        }
        for turn in sessions.history(store, sid)
    ]
    head = git.read_head(store.root)
    return {
        "version": BEANS_VERSION,
        "session": {
            "sessionId": sid,
            "startedAt": session["started_at"],
            "turnCount": numbers["turnCount"],
            "totalTokens": numbers["totalTokens"],
            "modifiedFiles": sorted(sessions.net_files_changed(store, sid)),
            "commandsExecuted": numbers["commandsExecuted"],
        },
        "turns": turns,
        "workspace": {
            "rootPath": str(store.root),
            "isGitRepo": head is not None,
            "gitBranch": head.branch if head is not None else None,
        },
        "savedAt": clock.iso(ts),
        "metrics": numbers,
    }
