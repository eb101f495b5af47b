"""The session quota on the agent-hook path: warn the agent at 80 % and 95 %, refuse at 100 %.

Every hook that writes to a session is bracketed by `before` and `after`:

- `before`: a session at 100 % of its quota is compacted first; when that frees no room the
  hook records nothing (the write is refused, error MEM_E001), says so to the agent and logs
  it, and still exits 0: the agent goes on, and nothing already stored is touched.
- `after`: at 80 % and again at 95 % the session is compacted and the agent is told once per
  threshold, in the hook's `additionalContext` where the event carries one (SessionStart,
  UserPromptSubmit, PreToolUse, PostToolUse), else as a `systemMessage` shown to the user
  (Stop, SubagentStop); every warning also goes to the store's log.

Measuring a session costs a read of all its rows (10 to 30 ms for a 5 MB session), too much
for every tool call. So each measurement is remembered (`store_meta`), and for 30 seconds
after one below 70 % the hooks do not measure again, nor before writing after one below
90 % (a changed `sessions.quota_bytes` setting measures again at once). One hook writes
at most some tens of kilobytes (texts are cut to a few thousand characters): a 10 MB session
would need more than a megabyte of hook writes in those 30 seconds to pass 100 % unseen.
"""

from __future__ import annotations

from typing import Any, Protocol

from memory_core import log, quota
from memory_core.agents.payload import HookPayload
from memory_core.errors import QuotaExceededError
from memory_core.store import Store

# Events whose handler writes nothing (it only reads gotchas for the agent): never refused.
READ_ONLY_EVENTS = frozenset({"PreToolUse"})
CHECKED_KEY = "quota.checked:"
RECHECK_SECONDS = 30.0
QUIET_BELOW_PERCENT = 70.0
NO_REFUSAL_BELOW_PERCENT = 90.0


class HookRun(Protocol):
    """What these checks need of a hook run (`memory_core.agents.hooks.HookRun` has it); a
    protocol, so this module does not import the hooks that call it."""

    payload: HookPayload
    store: Store
    now: float
    output: dict[str, Any] | None

    @property
    def settings(self) -> Any: ...

    @property
    def session_id(self) -> str: ...

    def add_context(self, event: str, text: str) -> None: ...


# Events whose hookSpecificOutput.additionalContext reaches the agent (Claude Code hooks
# reference; Gemini CLI's BeforeAgent / AfterTool map onto UserPromptSubmit / PostToolUse).
CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"})
# Events whose top-level systemMessage is shown to the user (PreCompact, PostCompact and
# SessionEnd discard it).
MESSAGE_EVENTS = frozenset({"Stop", "SubagentStop", "PostToolUseFailure"})


def before(run: HookRun) -> bool:
    """False when the session is full and this hook must record nothing."""
    if (
        not run.payload.session_id
        or run.payload.event in READ_ONLY_EVENTS
        or _recently_below(run, NO_REFUSAL_BELOW_PERCENT)
    ):
        return True
    try:
        quota.before_write(run.store, run.session_id, run.settings, now=run.now)
    except QuotaExceededError as exc:
        text = f"engram: error: {exc.one_line()}"
        log.write(run.store.root, "error", f"hook {run.payload.event}: {text}")
        if run.payload.event == "SessionStart":
            # Reading costs no room: a full session still starts with its memory.
            _start_context(run)
        _tell(run, text)
        return False
    return True


def _start_context(run: HookRun) -> None:
    from memory_core.agents.context import session_start_text

    budget = int(run.settings["agents.context_token_budget"])
    text = session_start_text(
        run.store, current_session=run.session_id, token_budget=budget, now=run.now
    )
    run.add_context("SessionStart", text)


def after(run: HookRun) -> None:
    """Compact at 80 % / 95 % and warn the agent once per threshold."""
    if (
        not run.payload.session_id
        or run.payload.event in READ_ONLY_EVENTS
        or _recently_below(run, QUIET_BELOW_PERCENT)
    ):
        return
    facts = quota.usage(run.store, run.session_id, run.settings)
    with run.store.transaction() as db:
        db.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (
                f"{CHECKED_KEY}{run.session_id}",
                f"{run.now!r} {facts['used_bytes']} {facts['quota_bytes']}",
            ),
        )
    notice = quota.after_write(
        run.store, run.session_id, run.settings, once_per_level=True, facts=facts, now=run.now
    )
    if notice is None:
        return
    log.write(run.store.root, "warning", notice["message"])
    if _tell(run, notice["message"]):
        quota.mark_warned(run.store, run.session_id, int(notice["threshold"]))


def _recently_below(run: HookRun, percent: float) -> bool:
    """True when the session was measured in the last 30 s, under `percent` of today's quota."""
    row = run.store.query_one(
        "SELECT value FROM store_meta WHERE key = ?", (f"{CHECKED_KEY}{run.session_id}",)
    )
    if row is None:
        return False
    try:
        at, used, quota_then = (float(part) for part in str(row[0]).split())
    except ValueError:
        return False
    quota_now = float(run.settings["sessions.quota_bytes"])
    if quota_now != quota_then or quota_now <= 0:
        return False
    return 0.0 <= run.now - at < RECHECK_SECONDS and 100.0 * used / quota_now < percent


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
