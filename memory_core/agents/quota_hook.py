"""The session quota on the agent-hook path: warn the agent at 80 % and 95 %, refuse at 100 %.

Every hook that writes to a session is bracketed by `before` and `after`:

- `before`: a session at 100 % of its quota is compacted first; when that frees no room the
  hook records nothing (the write is refused, error MEM_E001), says so to the agent and logs
  it, and still exits 0: the agent goes on, and nothing already stored is touched.
- `after`: at 80 % and again at 95 % the session is compacted and the agent is told once per
  threshold, in the hook's `additionalContext` where the event carries one (SessionStart,
  UserPromptSubmit, PreToolUse, PostToolUse), else as a `systemMessage` shown to the user
  (Stop, SubagentStop); every warning also goes to the store's log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_core import log, quota
from memory_core.errors import QuotaExceededError

if TYPE_CHECKING:
    from memory_core.agents.hooks import HookRun

# Events whose hookSpecificOutput.additionalContext reaches the agent (Claude Code hooks
# reference; Gemini CLI's BeforeAgent / AfterTool map onto UserPromptSubmit / PostToolUse).
CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"})
# Events whose top-level systemMessage is shown to the user (PreCompact, PostCompact and
# SessionEnd discard it).
MESSAGE_EVENTS = frozenset({"Stop", "SubagentStop", "PostToolUseFailure"})


def before(run: HookRun) -> bool:
    """False when the session is full and this hook must record nothing."""
    if not run.payload.session_id:
        return True
    try:
        quota.before_write(run.store, run.session_id, run.settings, now=run.now)
    except QuotaExceededError as exc:
        text = f"engram: error: {exc.one_line()}"
        log.write(run.store.root, "error", f"hook {run.payload.event}: {text}")
        _tell(run, text)
        return False
    return True


def after(run: HookRun) -> None:
    """Compact at 80 % / 95 % and warn the agent once per threshold."""
    if not run.payload.session_id:
        return
    notice = quota.after_write(
        run.store, run.session_id, run.settings, once_per_level=True, now=run.now
    )
    if notice is None:
        return
    log.write(run.store.root, "warning", notice["message"])
    if _tell(run, notice["message"]):
        quota.mark_warned(run.store, run.session_id, int(notice["threshold"]))


def _tell(run: HookRun, text: str) -> bool:
    """Add `text` to the hook's output; False when this event has no way to show it."""
    event = run.payload.event
    output: dict[str, Any] = dict(run.output or {})
    if event in CONTEXT_EVENTS:
        specific = dict(output.get("hookSpecificOutput") or {"hookEventName": event})
        context = str(specific.get("additionalContext") or "")
        specific["additionalContext"] = f"{context}\n\n{text}" if context else text
        output["hookSpecificOutput"] = specific
    elif event in MESSAGE_EVENTS:
        message = str(output.get("systemMessage") or "")
        output["systemMessage"] = f"{message}\n{text}" if message else text
    else:
        return False
    run.output = output
    return True
