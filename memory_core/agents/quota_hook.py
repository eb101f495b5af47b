"""The session quota on the agent-hook path: warn the agent at 80 % and 95 %, refuse at 100 %.

Every hook that writes to a session is bracketed by `before` and `after`:

- `before`: a session at 100 % of its quota is compacted first; when that frees no room the
  hook records nothing (the write is refused, error MEM_E001), says so to the agent and logs
  it, and still exits 0: the agent goes on, and nothing already stored is touched.
- `after`: at 80 % and again at 95 % the session is compacted and the agent is told once per
  threshold, in the hook's `additionalContext` where the event carries one (SessionStart,
  UserPromptSubmit, PreToolUse, PostToolUse), else as a `systemMessage` shown to the user
  (Stop, SubagentStop); every warning also goes to the store's log.

- `guard`: when the session may be near its quota, the hook's writes run in one transaction
  and the session is measured before it commits: a hook whose records would take the session
  past its quota records nothing (MEM_E001), exactly like a full session. The quota is a hard
  limit from the first write that would cross it.

Measuring a session costs a read of all its rows (10 to 30 ms for a 5 MB session), too much
for every tool call. So each measurement is remembered (`store_meta`) with, added up since,
a bound on what each later hook may have written (`write_bound`: twice its payload and the
transcript it reads, plus room for a digest). For 30 seconds after a measurement, a hook
whose bound keeps the session under 90 % neither measures nor guards, and one that keeps it
under 70 % does not measure to warn either (a changed `sessions.quota_bytes` setting measures
again at once). Near the quota, or with a small quota, every hook is measured and guarded.
Writes from elsewhere (the CLI, the editor) check the quota themselves.
"""

from __future__ import annotations

import contextlib
import os
import time

from memory_core import log, quota
from memory_core.errors import QuotaExceededError

# Every hook runs these checks: `typing` (a third of Python's own start) is for the checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Protocol

    from memory_core.agents.payload import HookPayload
    from memory_core.store import Store

# Events whose handler writes nothing (it only reads gotchas for the agent): never refused.
READ_ONLY_EVENTS = frozenset({"PreToolUse"})
CHECKED_KEY = "quota.checked:"
RECHECK_SECONDS = 30.0
QUIET_BELOW_PERCENT = 70.0
NO_REFUSAL_BELOW_PERCENT = 90.0
# The events whose handler ingests the payload's transcript (hooks.TRANSCRIPT_EVENTS; not
# imported, so that the hooks module keeps importing this one and not the other way round).
TRANSCRIPT_EVENTS = frozenset(
    {
        "UserPromptSubmit",
        "Stop",
        "SubagentStop",
        "PreCompact",
        "PostCompact",
        "SessionEnd",
        "SessionStart",
    }
)
# What a hook may write besides its payload and transcript: rows' own columns, a digest, the
# rolling summary (see `write_bound`).
HOOK_OVERHEAD_BYTES = 16 * 1024


if TYPE_CHECKING:

    class HookRun(Protocol):
        """What these checks need of a hook run (`memory_core.agents.hooks.HookRun` has it); a
        protocol, so this module does not import the hooks that call it."""

        payload: HookPayload
        store: Store
        now: float
        output: dict[str, Any] | None
        payload_bytes: int
        quota_pending: int
        quota_guarded: bool
        quota_refused: bool
        quota_measured: int | None

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


def write_bound(run: HookRun) -> int:
    """At most what this hook can add to its session, in bytes (a generous bound, not a guess).

    Everything a hook records comes from its payload or from the transcript lines it reads,
    each stored at most about twice (a tool call in the agent ledger and in the session), plus
    what it derives: a digest, the rolling summary, the rows' own ids and times.
    """
    transcript = 0
    if run.payload.event in TRANSCRIPT_EVENTS:
        for path in (run.payload.transcript_path, run.payload.raw.get("agent_transcript_path")):
            if isinstance(path, str) and path:
                transcript += _unread_bytes(run.store, path)
    return 2 * (run.payload_bytes + transcript) + HOOK_OVERHEAD_BYTES


def _unread_bytes(store: Store, path: str) -> int:
    """The bytes of a transcript past where the last ingest stopped."""
    try:
        size = os.stat(os.path.expanduser(path)).st_size
    except (OSError, ValueError):
        return 0
    row = store.query_one(
        "SELECT offset FROM agent_ingest_offsets WHERE path = ?",
        (os.path.realpath(os.path.expanduser(path)),),
    )
    return max(0, size - (int(row[0]) if row is not None else 0))


def before(run: HookRun) -> bool:
    """False when the session is full and this hook must record nothing.

    Also decides whether the hook's writes are guarded (`run.quota_guarded`): every time the
    session may be near its quota, that is unless a recent measurement plus the bounds of the
    hooks since and of this one stay under 90 %.
    """
    run.quota_guarded = False
    if not run.payload.session_id or run.payload.event in READ_ONLY_EVENTS:
        return True
    bound = write_bound(run)
    if _recently_below(run, NO_REFUSAL_BELOW_PERCENT, extra=bound):
        _add_pending(run, bound)
        return True
    try:
        quota.before_write(run.store, run.session_id, run.settings, incoming=bound, now=run.now)
    except QuotaExceededError as exc:
        _refuse(run, exc)
        return False
    run.quota_guarded = True
    return True


@contextlib.contextmanager
def guard(run: HookRun) -> Iterator[None]:
    """The hook's writes, refused together when they would take the session past its quota."""
    if not run.quota_guarded:
        yield
        return
    measured: list[int] = []
    started = time.time_ns()
    try:
        with quota.guarded_write(run.store, run.session_id, run.settings, measured=measured):
            yield
    except QuotaExceededError as exc:
        _forget_unrecorded_digests(run, started)
        _refuse(run, exc)
        run.quota_refused = True
        return
    run.quota_measured = measured[0] if measured else None


def _forget_unrecorded_digests(run: HookRun, since_ns: int) -> None:
    """A refused hook's digest file: its record was rolled back, so the file goes too (else a
    session just below its quota would leave one more file at every turn's end)."""
    from memory_core.agents.digest import DIGEST_DIR
    from memory_core.filenames import safe_filename

    folder = run.store.dir.joinpath(*DIGEST_DIR)
    try:
        candidates = list(folder.glob(f"{safe_filename(run.session_id)}-*.yaml"))
    except OSError:
        return
    for path in candidates:
        try:
            if path.stat().st_mtime_ns < since_ns:
                continue
        except OSError:
            continue
        relative = str(path.relative_to(run.store.dir))
        if run.store.query_one("SELECT 1 FROM digests WHERE path = ?", (relative,)) is None:
            with contextlib.suppress(OSError):
                path.unlink()


def _refuse(run: HookRun, exc: QuotaExceededError) -> None:
    text = f"engram: error: {exc.one_line()}"
    log.write(run.store.root, "error", f"hook {run.payload.event}: {text}")
    if run.payload.event == "SessionStart" and not _has_context(run):
        # Reading costs no room: a full session still starts with its memory.
        _start_context(run)
    _tell(run, text)


def _has_context(run: HookRun) -> bool:
    specific = (run.output or {}).get("hookSpecificOutput") or {}
    return bool(specific.get("additionalContext"))


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
        or run.quota_refused
        or _recently_below(run, QUIET_BELOW_PERCENT)
    ):
        return
    measured = run.quota_measured
    if measured is not None:  # the guard measured the session as this hook's writes committed
        quota_bytes = int(run.settings["sessions.quota_bytes"])
        facts = quota.usage_of(run.session_id, measured, quota_bytes)
    else:
        facts = quota.usage(run.store, run.session_id, run.settings)
    with run.store.transaction() as db:
        db.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (
                f"{CHECKED_KEY}{run.session_id}",
                f"{run.now!r} {facts['used_bytes']} {facts['quota_bytes']} 0",
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


def before_quietly(run: HookRun) -> bool:
    """True when `before` would let this hook record unguarded and `after` would then say
    nothing, whatever the handler records: the session was measured in the last 30 s and,
    with the bounds of the hooks since and this one's, stays under 70 % (so under 90 % too).
    Reads only: the caller then adds this hook's bound (`add_pending`) with its writes, as
    `before` would have, and runs the handler and `after`. False: nothing done, ask `before`."""
    if not run.payload.session_id or run.payload.event in READ_ONLY_EVENTS:
        return False
    bound = write_bound(run)
    if not _recently_below(run, QUIET_BELOW_PERCENT, extra=bound):
        return False
    run.quota_guarded = False
    run.quota_pending = bound
    return True


def add_pending(run: HookRun) -> None:
    """Add the bound `before_quietly` found for this hook to the session's running total."""
    _add_pending(run, run.quota_pending)


def _checked(run: HookRun) -> tuple[float, float, float, float] | None:
    """The last measurement: (when, bytes used, quota then, bounds of the hooks since)."""
    row = run.store.query_one(
        "SELECT value FROM store_meta WHERE key = ?", (f"{CHECKED_KEY}{run.session_id}",)
    )
    if row is None:
        return None
    parts = str(row[0]).split()
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        return None
    if len(numbers) == 3:  # written before the bounds were added up
        numbers.append(0.0)
    if len(numbers) != 4:
        return None
    return numbers[0], numbers[1], numbers[2], numbers[3]


def _recently_below(run: HookRun, percent: float, *, extra: int = 0) -> bool:
    """True when the session was measured in the last 30 s and, with what the hooks since may
    have written (and `extra`), stays under `percent` of today's quota."""
    checked = _checked(run)
    if checked is None:
        return False
    at, used, quota_then, pending = checked
    quota_now = float(run.settings["sessions.quota_bytes"])
    if quota_now != quota_then or quota_now <= 0:
        return False
    expected = used + pending + extra
    return 0.0 <= run.now - at < RECHECK_SECONDS and 100.0 * expected / quota_now < percent


def _add_pending(run: HookRun, bound: int) -> None:
    """Add this unmeasured hook's bound to the last measurement's running total."""
    key = f"{CHECKED_KEY}{run.session_id}"
    with run.store.transaction() as db:
        row = db.execute("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone()
        parts = str(row[0]).split() if row is not None else []
        if len(parts) == 3:
            parts.append("0")
        if len(parts) != 4:
            return
        try:
            parts[3] = str(int(float(parts[3])) + bound)
        except ValueError:
            return
        db.execute("UPDATE store_meta SET value = ? WHERE key = ?", (" ".join(parts), key))


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
