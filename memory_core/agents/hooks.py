"""`engram hook AGENT EVENT`: one handler per agent event, reading the hook's JSON from stdin.

What each event records (Claude Code names; Gemini CLI's events are mapped onto them):
- SessionStart: the session; prints the memory of earlier sessions (`context`) for the agent.
- UserPromptSubmit: ingests the transcript so far; prints gotchas relevant to the prompt.
- PreToolUse (file tools): prints the gotchas anchored in the file about to be changed.
- PostToolUse / PostToolUseFailure: the tool call, its success, the file changed (file evolution,
  attributed to the session), the command run, and failures into gotcha error tracking.
- PreCompact: ingests the transcript and writes a digest before the context is compacted.
- PostCompact, Stop, SubagentStop: ingest; Stop writes a digest when one is due.
- SessionEnd: flushes the last turn, closes the session, writes the final digest.

A hook never fails the agent: any error is written to the store's log and the exit code is 0.
Payloads without a transcript (Gemini, or a transcript not written yet) fall back to what the
payload itself says, so turns are recorded either way but never twice.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from memory_core import clock, log
from memory_core.agents.payload import HookPayload, agent_name, parse

# A hook is a cold process per agent event, and every module it loads is paid on each one:
# here only what every event needs; what one event needs is imported in its handler (the
# recording itself, `record` and redaction, too: an event answered before it is recorded
# loads them after its answer), and `typing` (a third of Python's own start) is read by the
# type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from memory_core.agents import quiet_events, record
    from memory_core.store import Store

# What one turn's closing message adds to the rolling summary at most.
ROLLING_SUMMARY_TURN_CHARS = 600
# store_meta key: the digest timer's interval as the settings said at the last session start.
DIGEST_INTERVAL_KEY = "agents.digest_interval_minutes"
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


class HookRun:
    """One hook invocation: the payload, the workspace's store, settings loaded on demand."""

    def __init__(self, payload: HookPayload, store: Store, now: float) -> None:
        self.payload = payload
        self.store = store
        self.now = now
        self.output: dict[str, Any] | None = None
        # The quota's view of this run (agents.quota_hook): the payload's size, whether its
        # writes are guarded, refused, and the session's use measured as they committed.
        self.payload_bytes = 0
        self.quota_guarded = False
        self.quota_refused = False
        self.quota_measured: int | None = None
        self.quota_pending = 0  # this hook's bound, when `before_quietly` left it to add
        self._settings: Any = None
        self._finished: list[record.FinishedTurn] = []

    @property
    def settings(self) -> Any:
        if self._settings is None:
            from memory_core import config

            self._settings = config.load(self.store.root)
        return self._settings

    @property
    def session_id(self) -> str:
        return self.payload.session_id or f"{self.payload.agent}-unknown"

    # -- shared steps ----------------------------------------------------------------------

    def touch(self) -> None:
        from memory_core.agents import record

        with self.store.transaction() as db:
            is_new = record.touch_session(
                db,
                self.session_id,
                agent=self.payload.agent,
                ts=self.now,
                transcript_path=self.payload.transcript_path,
                cwd=self.payload.cwd,
                model=self.payload.model,
            )
        if is_new:
            record.start_session(
                self.store,
                self.session_id,
                agent=self.payload.agent,
                ts=self.now,
                resumed=self.payload.source in ("resume", "compact", "fork"),
            )
        elif self.payload.event == "SessionStart":
            from memory_core.sessions.model import restore_archived

            # A conversation resumed after its session was archived: its turns come back
            # before new ones join them, so the session is whole again for whoever reads it.
            restore_archived(self.store, self.session_id)

    def transcript(self) -> Path | None:
        """The agent's own record named in the payload (`transcript_path`), when it exists and
        is in the agent's format: Claude Code's JSONL transcript, Gemini CLI's chat file."""
        raw = self.payload.transcript_path
        if not raw or self.payload.agent not in ("claude-code", "gemini"):
            return None
        path = Path(raw).expanduser()
        try:
            if not path.is_file():
                return None
        except (OSError, ValueError):  # a name too long, a NUL byte: no file of the agent's
            return None
        from memory_core.agents.transcripts import is_claude_transcript

        if is_claude_transcript(path) != (self.payload.agent == "claude-code"):
            return None  # a migrated hook handed the other agent's file
        return path

    def ingest(self, *, flush: bool = False) -> bool:
        """Ingest the payload's transcript(s); False when there is none (use the payload instead)."""
        if self.payload.agent == "codex":
            from memory_core.agents import codex_rollouts

            # Codex names its rollout as transcript_path: the same reader as `ingest codex`.
            return codex_rollouts.ingest_for_hook(
                self.store, self.payload.transcript_path, settings=self.settings, flush=flush
            )
        path = self.transcript()
        if path is None:
            return False
        if self.payload.agent == "gemini":
            from memory_core.agents import gemini_chats

            # The chat carries what the hooks do not: tokens, and an id for every tool call.
            gemini_chats.ingest_chat_file(self.store, path, settings=self.settings, flush=flush)
            return True
        from memory_core.agents import transcripts

        transcripts.ingest_file(self.store, path, settings=self.settings, flush=flush, now=self.now)
        sub = self.payload.raw.get("agent_transcript_path")
        if isinstance(sub, str) and sub and Path(sub).is_file():
            # Never flushed: a subagent's lines belong to the parent's session, so a flush would
            # close the parent's turn while the parent is still answering the same request. The
            # parent's own transcript (above) says when that turn ends.
            transcripts.ingest_file(
                self.store, sub, settings=self.settings, flush=False, now=self.now
            )
        return True

    def add_context(self, event: str, text: str) -> None:
        if text.strip():
            self.output = {
                "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}
            }

    def digest(self, trigger: str) -> None:
        from memory_core.agents import digest

        digest.write_digest(self.store, self.session_id, trigger=trigger, now=self.now)

    def backup_transcript(self) -> None:
        """Seed 002's transcript backup: the JSONL, redacted and compressed, within the quota."""
        path = self.transcript()
        if path is None or self.payload.agent != "claude-code":
            return
        from memory_core import log
        from memory_core.session_vault import backup_transcript

        try:
            done = backup_transcript(
                self.store, self.session_id, path, settings=self.settings.values
            )
        except Exception as exc:  # a backup must never cost the session's other records
            log.write(self.store.root, "warning", f"transcript backup failed: {exc}", exc=exc)
            return
        if "skipped" in done:
            log.write(self.store.root, "info", f"transcript not backed up: {done['skipped']}")

    def digest_if_due(self) -> None:
        """The digest timer: no process stays alive, so the hooks check whether one is due.

        Tool-call hooks must stay fast, so the interval comes from the store (written when a
        session starts, from the settings) and the check is one query; the settings and the
        digest module are loaded only when a digest is actually due.
        """
        row = self.store.query_one(
            "SELECT COALESCE(last_digest_at, started_at) AS since, "
            "(SELECT value FROM store_meta WHERE key = ?) AS interval "
            "FROM agent_sessions WHERE session_id = ? AND ended_at IS NULL",
            (DIGEST_INTERVAL_KEY, self.session_id),
        )
        if row is None:
            return
        try:
            interval = float(row["interval"])
        except (TypeError, ValueError):
            interval = self.remember_digest_interval()
        if interval <= 0 or self.now - float(row["since"]) < interval * 60:
            return
        self.digest("timer")

    def remember_digest_interval(self) -> float:
        interval = float(self.settings["agents.digest_interval_minutes"])
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO store_meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (DIGEST_INTERVAL_KEY, repr(interval)),
            )
        return interval

    def open_payload_turn(self, prompt: str) -> None:
        from memory_core.agents import record
        from memory_core.agents.record import clean

        turn_id = f"hook:{self.session_id}:{self.payload.raw.get('prompt_id') or self.now}"
        text = clean(prompt)
        with self.store.transaction() as db:
            previous = record.load_open_turn(db, self.session_id)
            if previous is not None and previous.uuid == turn_id:
                # The same prompt delivered again: its turn is open already. Closing it here
                # would record it now, and the answer that ends it would find no turn to go to.
                return
            if previous is not None:
                self._finish(db, previous)
            db.execute(
                "INSERT OR IGNORE INTO agent_prompts (uuid, session_id, ts, text) VALUES (?, ?, ?, ?)",
                (turn_id, self.session_id, self.now, text),
            )
            record.save_open_turn(
                db,
                record.Turn(
                    uuid=turn_id, session_id=self.session_id, started_at=self.now, user_message=text
                ),
            )
        self._apply_finished()

    def _finish(self, db: Any, turn: record.Turn) -> None:
        from memory_core.agents import record

        done = record.close_turn(db, turn, self.now)
        if done is not None:
            self._finished.append(done)

    def _apply_finished(self) -> None:
        from memory_core.agents import record

        finished, self._finished = self._finished, []
        if finished:  # settings are read on demand: most hook runs finish no turn
            record.apply_turns(self.store, finished, self.settings, now=self.now)

    def close_payload_turn(self, response: str | None, prompt: str | None = None) -> None:
        from memory_core.agents import record
        from memory_core.agents.record import clean

        with self.store.transaction() as db:
            turn = record.load_open_turn(db, self.session_id)
            if turn is None and prompt:
                turn_id = f"hook:{self.session_id}:{self.now}"
                db.execute(
                    "INSERT OR IGNORE INTO agent_prompts (uuid, session_id, ts, text) VALUES (?, ?, ?, ?)",
                    (turn_id, self.session_id, self.now, clean(prompt)),
                )
                turn = record.Turn(
                    uuid=turn_id,
                    session_id=self.session_id,
                    started_at=self.now,
                    user_message=clean(prompt),
                )
            if turn is not None:
                if response:
                    turn.assistant_parts = [clean(response)]
                self._finish(db, turn)
        self._apply_finished()

    # -- events ------------------------------------------------------------------------------

    def session_start(self) -> None:
        from memory_core.agents.context import session_start_text

        if self.payload.session_id:
            self.touch()
            self.ingest()
        self.remember_digest_interval()
        self.settle_earlier_sessions()
        budget = int(self.settings["agents.context_token_budget"])
        text = session_start_text(
            self.store, current_session=self.session_id, token_budget=budget, now=self.now
        )
        from memory_core.session_state import context_message
        from memory_core.session_vault import reminder

        # AIOS's continuity line (previous agent, task, workflow) and seed 002's auto-reminder.
        for extra in (
            context_message(self.store, exclude=self.session_id, now=self.now),
            reminder(self.store, current=self.session_id, now=self.now),
        ):
            if extra:
                text = f"{text}\n\n{extra}" if text.strip() else extra
        self.add_context("SessionStart", text)
        from memory_core.agents import memory_files

        # Facts the agent wrote into its own memory file since last time come into engram.
        memory_files.on_hook(self.store, self.payload.agent, "SessionStart", now=self.now)

    def settle_earlier_sessions(self) -> None:
        """Earlier sessions that never reported their end and have been silent for 30 minutes
        are over: ended (finished or stopped, from their transcript), no longer "active"."""
        from memory_core.agents import transcripts

        rows = self.store.query(
            "SELECT session_id, agent, transcript_path FROM agent_sessions WHERE ended_at IS NULL "
            "AND session_id != ? AND last_seen < ? ORDER BY last_seen DESC LIMIT 20",
            (self.session_id, self.now - transcripts.SETTLED_AFTER_SECONDS),
        )
        for row in rows:
            # A Gemini CLI session that ended without SessionEnd: its chat, read at the ends of
            # turns only, may hold a last request nobody answered (the task in progress).
            chat = row["transcript_path"]
            if row["agent"] == "gemini" and chat and Path(chat).is_file():
                from memory_core.agents import gemini_chats

                gemini_chats.ingest_chat_file(self.store, chat, settings=self.settings, flush=False)
        if not rows:
            return
        notes: list[tuple[str, float]] = []
        transcripts.settle_sessions(
            self.store, [str(row["session_id"]) for row in rows], now=self.now, notes=notes
        )
        if notes:
            # Each settled session's vault note (three quarters of the settling's time) is a
            # view of what was just committed, and nothing of the answer reads it: where the
            # answer can go first (a resident child), the notes are written after it.
            self.write_notes_after_answer(notes)

    def write_notes_after_answer(self, notes: list[tuple[str, float]]) -> None:
        from memory_core.store import after_answer

        def write_notes(store: Store) -> None:
            from memory_core.sessions.note import refresh_note

            for session_id, at in notes:
                refresh_note(store, session_id, at)

        after_answer(self.store, write_notes)

    def user_prompt_submit(self) -> None:
        self.touch()
        prompt = (self.payload.prompt or "").lstrip()
        if prompt.startswith("/") and self.session_id:
            from memory_core.session_state import record_activity

            # A slash command is the agent's command in AIOS's sense (lastCommands, workflow).
            with self.store.transaction() as db:
                record_activity(db, self.session_id, command=prompt.split()[0])
        if self.payload.agent == "gemini" and self.transcript() is not None:
            # BeforeAgent fires before Gemini CLI records the prompt: the chat brings it, with
            # the turn's calls and tokens, when AfterAgent reads it.
            pass
        elif not self.ingest() and self.payload.prompt:
            self.open_payload_turn(self.payload.prompt)
        if self.payload.prompt:
            from memory_core.gotchas.context import context_for_task

            text = context_for_task(self.store, self.payload.prompt, (), 3)
            self.add_context("UserPromptSubmit", text)
        self.digest_if_due()

    def pre_tool_use(self) -> None:
        from memory_core.agents import record

        payload = self.payload
        if payload.agent == "codex":
            self.codex_patch_gotchas()
            return
        if payload.tool_name not in record.FILE_TOOLS or payload.agent != "claude-code":
            return
        rel = record.workspace_path(
            self.store.root, record.file_path_of(payload.tool_input), payload.cwd
        )
        if rel is None:
            return
        from memory_core.gotchas.context import context_for_task

        # No task words: only gotchas anchored in (or globbed onto) this file score at all.
        text = context_for_task(self.store, "", [rel], 3)
        if text.strip():
            self.add_context("PreToolUse", f"engram: known gotchas for {rel}\n{text}")

    def codex_patch_gotchas(self) -> None:
        """Codex's apply_patch may change several files: the gotchas of each, before it does."""
        from memory_core.agents import record

        if self.payload.tool_name != "apply_patch":
            return
        from memory_core.agents.codex_outputs import patch_files
        from memory_core.gotchas.context import context_for_task

        files = [
            rel
            for name in patch_files(self.payload.tool_input)
            if (rel := record.workspace_path(self.store.root, name, self.payload.cwd)) is not None
        ]
        if not files:
            return
        text = context_for_task(self.store, "", files, 3)
        if text.strip():
            self.add_context("PreToolUse", f"engram: known gotchas for {', '.join(files)}\n{text}")

    def post_tool_use(self) -> None:
        from memory_core.agents import record

        payload = self.payload
        if not payload.tool_name:
            return
        self.touch()
        if payload.agent == "gemini" and self.transcript() is not None:
            # Gemini's tool hooks carry no call id: the chat file records the call under its
            # own, so it is taken from there, and a later `engram ingest gemini` of the same
            # chat finds it counted. Read at the end of the turn (AfterAgent) rather than here:
            # the chat is rewritten as a whole log, and reading it on every tool call would
            # cost each call the time of the whole session so far.
            self.digest_if_due()
            return
        if (
            payload.agent == "codex"
            and not payload.tool_response
            and payload.error is None
            and not payload.is_interrupt
            and self.ingest()
        ):
            # Codex's PostToolUse gives a shell call's output without its exit code (0.125 to
            # 0.171 at least), and fires before the rollout has the output line that holds it:
            # the rollout, read at the next hook or at Stop, records the call and its outcome.
            # Claiming it here would count a failed command as a success, for good.
            self.digest_if_due()
            return
        from memory_core.agents import failures
        from memory_core.agents.record import ToolCall, ToolOutcome

        call = ToolCall(
            tool_use_id=payload.tool_use_id or f"hook:{self.session_id}:{self.now}",
            session_id=self.session_id,
            tool=payload.tool_name,
            input=payload.tool_input,
            ts=self.now,
            sidechain=payload.in_subagent,
        )
        response = payload.tool_response
        interrupted = payload.is_interrupt or (
            isinstance(response, dict) and response.get("interrupted") is True
        )
        # The one definition of a failed call (failures.classify): an error event, a non-zero
        # exit however it is phrased, an interruption, a hook's block, a timeout.
        failure = failures.classify(
            is_error=payload.failed,
            text=payload.error,
            structured=response,
            interrupted=interrupted,
        )
        failed = failure is not None
        outcome = ToolOutcome(
            ok=not failed,
            error=(payload.error or _response_text(response) or failure.kind) if failure else None,
            interrupted=failure is not None and failure.kind == "interrupted",
            structured=response,
            exit_code=failure.exit_code if failure else 0,
        )
        with self.store.transaction() as db:
            claimed = record.claim_outcome(db, call, outcome, self.store.root)
        if claimed:
            # Live: the file on disk is the edit's result, so evolution reads it (after=None).
            # Settings matter only to gotcha tracking; reading them for every call would cost time.
            settings = self.settings if failed else None
            record.apply_outcome(self.store, call, outcome, settings=settings, cwd=payload.cwd)
        self.digest_if_due()

    def pre_compact(self) -> None:
        self.touch()
        if self.payload.agent == "gemini" and self.payload.trigger != "manual":
            # Gemini CLI fires PreCompress "auto" before every model request, before it checks
            # whether the context is full (0.61): a digest each time would be a dozen a turn.
            # A compression it does make is in the chat (`<state_snapshot>`), read at AfterAgent.
            self.digest_if_due()
            return
        self.ingest()
        self.digest(self.payload.trigger or "auto")

    def post_compact(self) -> None:
        from memory_core.agents.record import clean

        self.touch()
        self.ingest()
        if self.payload.agent == "codex" and self.payload.trigger:
            # Codex's rollout records a compaction without what started it; its hook says.
            with self.store.transaction() as db:
                db.execute(
                    "UPDATE agent_compactions SET trigger = ? WHERE rowid = (SELECT rowid FROM "
                    "agent_compactions WHERE session_id = ? AND trigger IS NULL "
                    "ORDER BY ts DESC LIMIT 1)",
                    (self.payload.trigger, self.session_id),
                )
        if self.payload.compact_summary:
            with self.store.transaction() as db:
                db.execute(
                    "INSERT OR IGNORE INTO agent_compactions (uuid, session_id, ts, trigger, summary) VALUES (?, ?, ?, ?, ?)",
                    (
                        f"hook:{self.session_id}:{self.now}",
                        self.session_id,
                        self.now,
                        self.payload.trigger,
                        clean(self.payload.compact_summary, 20000),
                    ),
                )

    def stop(self) -> None:
        from memory_core.agents.record import clean

        self.touch()
        # The agent finished answering: the turn ends here (transcripts say so nowhere else).
        if not self.ingest(flush=True):
            self.close_payload_turn(
                self.payload.prompt_response or self.payload.last_assistant_message,
                self.payload.prompt,
            )
        if self.payload.last_assistant_message:
            # The rolling summary: what the agent said at the end of each turn, compacted to
            # 500 characters once it outgrows `sessions.summary_compact_chars`.
            from memory_core import sessions

            sessions.append_rolling_summary(
                self.store,
                self.session_id,
                clean(self.payload.last_assistant_message, ROLLING_SUMMARY_TURN_CHARS),
                threshold=int(self.settings["sessions.summary_compact_chars"]),
                now=self.now,
            )
        has_digest = self.store.query_one(
            "SELECT 1 FROM digests WHERE session_id = ? LIMIT 1", (self.session_id,)
        )
        if has_digest is None:
            self.digest("stop")
        else:
            self.digest_if_due()

    def subagent_stop(self) -> None:
        self.touch()
        self.ingest()

    def session_end(self) -> None:
        import contextlib

        from memory_core import limits, quota, sessions
        from memory_core.agents import transcripts

        self.touch()
        self.ingest(flush=True)
        transcripts.flush_session(self.store, self.session_id, ended_at=self.now)
        transcripts.count_unanswered_calls(self.store, self.session_id)
        with self.store.transaction() as db:
            db.execute(
                "UPDATE agent_sessions SET ended_at = ?, end_reason = ? WHERE session_id = ?",
                (self.now, self.payload.reason or "other", self.session_id),
            )
        from memory_core.errors import NotFoundError

        # The user may have deleted the session while the agent ran: nothing left to close then.
        with contextlib.suppress(NotFoundError):
            sessions.close(
                self.store, self.session_id, status="closed", reason="completion", now=self.now
            )
        self.digest("session_end")
        from memory_core.agents import memory_files

        # Both ways: new facts in, engram's section of CLAUDE.md / GEMINI.md rewritten.
        memory_files.on_hook(self.store, self.payload.agent, "SessionEnd", now=self.now)
        self.backup_transcript()
        limits.enforce(self.store, self.settings, now=self.now)
        quota.enforce(self.store, self.session_id, self.settings, now=self.now)

    def autosave(self) -> None:
        """beans' auto-save for sessions only hooks record (the editor saves its own on a timer):
        at the end of a turn when `sessions.autosave_minutes` have passed since the last save,
        and at the end of the session when anything happened since. Never at the cost of the
        hook: a save that would take the session past its quota is skipped, a failure logged."""
        if self.payload.event not in AUTOSAVE_EVENTS or not self.payload.session_id:
            return
        from memory_core import quota
        from memory_core.errors import QuotaExceededError

        interval = float(self.settings["sessions.autosave_minutes"])
        try:
            if self.quota_guarded:
                with quota.guarded_write(self.store, self.session_id, self.settings):
                    self._autosave(interval)
            else:
                self._autosave(interval)
        except QuotaExceededError as exc:
            log.write(self.store.root, "info", f"auto-save skipped: {exc.one_line()}")
        except Exception as exc:  # the turn is recorded; a save that fails must not undo that
            log.write(self.store.root, "warning", f"auto-save failed: {exc}", exc=exc)

    def _autosave(self, interval: float) -> None:
        from memory_core import sessions

        sessions.autosave_session(
            self.store,
            self.session_id,
            interval_minutes=interval,
            final=self.payload.event == "SessionEnd",
            now=self.now,
        )

    def other(self) -> None:
        if self.payload.session_id:
            self.touch()


HANDLERS: dict[str, Callable[[HookRun], None]] = {
    "SessionStart": HookRun.session_start,
    "UserPromptSubmit": HookRun.user_prompt_submit,
    "PreToolUse": HookRun.pre_tool_use,
    "PostToolUse": HookRun.post_tool_use,
    "PostToolUseFailure": HookRun.post_tool_use,
    "PreCompact": HookRun.pre_compact,
    "PostCompact": HookRun.post_compact,
    "Stop": HookRun.stop,
    "SubagentStop": HookRun.subagent_stop,
    "SessionEnd": HookRun.session_end,
}

# The events after which a hook-recorded session may be auto-saved: the end of a turn, the
# end of the session.
AUTOSAVE_EVENTS = frozenset({"Stop", "SessionEnd"})

# The events `engram hooks install` registers (the others would only cost a process start).
INSTALLED_EVENTS = {
    "claude-code": (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
        "PostCompact",
        "Stop",
        "SubagentStop",
        "SessionEnd",
    ),
    "gemini": (
        "SessionStart",
        "BeforeAgent",
        "BeforeTool",
        "AfterTool",
        "PreCompress",
        "AfterAgent",
        "SessionEnd",
    ),
    # Codex CLI (codex-rs/config hook_config.rs): no SessionEnd there, Stop ends each turn.
    "codex": (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PreCompact",
        "PostCompact",
        "Stop",
    ),
}


def _response_text(response: Any) -> str | None:
    """The text of a tool response worth keeping as a failure's error."""
    if isinstance(response, str):
        return response or None
    if isinstance(response, dict):
        for key in ("error", "stderr", "llmContent", "stdout"):
            value = response.get(key)
            if isinstance(value, str) and value.strip():
                return value
    return None


def _workspace_for(payload: HookPayload | None, workspace: str | None) -> str | None:
    if workspace:
        return workspace
    if payload is not None and payload.cwd and os.path.isdir(payload.cwd):
        return payload.cwd
    for variable in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "GEMINI_CWD"):
        value = os.environ.get(variable)
        if value and os.path.isdir(value):
            return value
    return None


def handle(
    agent: str,
    event: str,
    data: bytes | str,
    *,
    workspace: str | None = None,
    now: float | None = None,
) -> tuple[int, str]:
    """Run one hook; returns (exit code, stdout text). The exit code is always 0."""
    root: Path | None = None
    payload: HookPayload | None = None
    try:
        from memory_core.workspace import find_root

        try:
            payload = parse(agent_name(agent), event, data)
        except Exception:  # an unknown agent too: logged in the workspace it ran in
            root = find_root(_workspace_for(None, workspace))
            raise
        root = find_root(_workspace_for(payload, workspace))
        if payload.session_id is None and payload.event != "SessionStart":
            # Without a session nothing can be attributed; storing it under a made-up one would
            # mix unrelated agents' work. Said in the log so a broken agent setup can be found.
            log.write(root, "warning", f"hook {agent} {event}: payload without session_id ignored")
            return 0, ""
        from memory_core.workspace import has_store, is_git_repository

        if not has_store(root) and not is_git_repository(root):
            # A `cwd` that is no project (`/etc`, `/tmp/x`): nothing to record, nothing created.
            return 0, ""
        when = clock.now() if now is None else now
        if _silent_where_it_can_answer_first(payload, root) and _record_after_answer(
            root, agent, event, data, payload, when
        ):
            return 0, ""
        output = _record(root, agent, event, data, payload, when)
        return 0, (json.dumps(output, ensure_ascii=False) if output else "")
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            return 0, ""
        # The agent must never fail because of engram: log (when there is a store) and go on.
        _log_failure(root, agent, event, exc)
        return 0, ""


def _log_failure(root: Path | None, agent: str, event: str, exc: BaseException) -> None:
    log.write(root, "error", f"hook {agent} {event} failed: {type(exc).__name__}: {exc}", exc=exc)


def _record(
    root: Path, agent: str, event: str, data: bytes | str, payload: HookPayload, when: float
) -> dict[str, Any] | None:
    """Record one event in the store of `root`; the output for the agent, if any."""
    store = _store_within_budget(root, agent, event, data, when)
    if store is None:
        return None  # spooled: the next hook folds it in
    try:
        fold_spool(store)
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        return _run_payload(store, payload, when, payload_bytes=len(data), raw=raw)
    finally:
        store.close()


def _silent_where_it_can_answer_first(payload: HookPayload, root: Path) -> bool:
    """Whether this process can answer before recording the event (a resident child, which
    tells its client the exit code and then goes on) and the event's answer is known before
    it is recorded: an event that never tells the agent anything (no context, no message,
    not even the quota's warnings), into a store that exists already."""
    from memory_core.agents.quota_hook import CONTEXT_EVENTS, MESSAGE_EVENTS
    from memory_core.store import answers_first
    from memory_core.workspace import STORE_DIRNAME, has_store

    return (
        answers_first()
        and payload.event not in CONTEXT_EVENTS
        and payload.event not in MESSAGE_EVENTS
        and has_store(root)
        # A store that cannot be written is said on the hook's stderr (spool.report_once),
        # which must still be the agent's then.
        and _writable(root / STORE_DIRNAME)
    )


def _writable(folder: Path) -> bool:
    from memory_core.store import DB_NAME

    return os.access(folder, os.W_OK) and os.access(folder / DB_NAME, os.W_OK)


def _record_after_answer(
    root: Path, agent: str, event: str, data: bytes | str, payload: HookPayload, when: float
) -> bool:
    """Record the event once the agent has its answer, exactly as `_record` would have before
    it: the same time, the same store. Until then the event is kept in the spool, claimed by
    this process (were it killed, the next hook records it), and the store's after-answer
    lock makes the next hook or command wait for it. False when the event cannot be kept
    (nothing done: the caller records it before answering)."""
    from memory_core.agents import spool
    from memory_core.store import later

    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    kept = spool.keep_while_recording(root, agent, event, raw, when)
    if kept is None:
        return False  # it could not be kept: recorded before the answer, as by a cold process
    later(root, lambda: _record_claimed(root, agent, event, data, payload, when, kept))
    return True


def record_kept(kept: quiet_events.Kept) -> None:
    """Record, after the answer, an event a cold hook kept before it (`quiet_events.keep`):
    as `_record_after_answer` does, in a process that answers first (`store.defer_closing`)."""
    from memory_core.store import adopt_after_answer_lock, later

    root = Path(kept.root)
    adopt_after_answer_lock(root, kept.lock_fd)

    def record() -> None:
        try:
            payload = parse(agent_name(kept.agent), kept.event, kept.data)
        except Exception as exc:
            _log_failure(root, kept.agent, kept.event, exc)
            _unlink(Path(kept.claim))
            return
        _record_claimed(root, kept.agent, kept.event, kept.data, payload, kept.when, kept.claim)

    later(root, record)


def _record_claimed(
    root: Path,
    agent: str,
    event: str,
    data: bytes | str,
    payload: HookPayload,
    when: float,
    claim: Path | str,
) -> None:
    """Record an event kept in the spool under this process's claim, then let go of it."""
    try:
        _record(root, agent, event, data, payload, when)
    except Exception as exc:
        _log_failure(root, agent, event, exc)
    finally:
        _unlink(Path(claim))


def _unlink(path: Path) -> None:
    import contextlib

    with contextlib.suppress(OSError):
        path.unlink()


# Once a hook holds the store, a later write of the same event waits this long for another
# process's lock: giving up half-way would leave part of the event recorded, and its spooled
# copy would record that part twice.
HOOK_WRITE_WAIT_SECONDS = 10.0


def _store_within_budget(
    root: Path, agent: str, event: str, data: bytes | str, now: float
) -> Store | None:
    """The store, once this hook could take its write lock within `agents.hook_wait_seconds`;
    None when it could not (busy, read-only): the event was spooled instead (spool.py)."""
    from memory_core import config
    from memory_core.agents import spool
    from memory_core.store import Store, StoreFaultError

    try:
        wait = float(config.load(root)["agents.hook_wait_seconds"])
    except Exception:
        wait = 2.0
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    store: Store | None = None
    try:
        store = Store.open_or_init(root, busy_timeout=wait)
        with store.transaction():
            pass  # the write lock, taken and released: nothing else holds it for long
    except StoreFaultError as exc:
        if store is not None:
            store.close()
        if exc.cause not in ("busy", "read-only"):
            raise
        spool.keep(root, agent, event, raw, now, exc.cause)
        if exc.cause == "read-only":
            spool.report_once(
                root,
                f"engram: the store of {root} is read-only: hook events are kept in "
                f"{spool.cache_spool(root)} until it can be written ({exc.one_line()})",
            )
        else:
            log.write(root, "warning", f"hook {agent} {event}: store busy for {wait:g} s; spooled")
        return None
    store.wait_when_busy(HOOK_WRITE_WAIT_SECONDS)
    return store


def fold_spool(store: Store) -> int:
    """Record the spooled hook events of this store's workspace (the language server calls it
    now and then, so events wait no longer than that when no hook comes after them)."""
    from memory_core.agents import spool

    return spool.fold(store.root, lambda a, e, d, ts: _record_spooled(store, a, e, d, ts))


def _record_spooled(store: Store, agent: str, event: str, data: bytes, ts: float) -> None:
    # Its payload counts in the quota's bound as it would have for the hook that spooled it:
    # without it, the bound (and the session's running total of what its hooks may have
    # written since it was last measured) held the fixed overhead alone.
    _run_payload(store, parse(agent_name(agent), event, data), ts, payload_bytes=len(data))


def _run_payload(
    store: Store,
    payload: HookPayload,
    now: float,
    *,
    payload_bytes: int = 0,
    raw: bytes | None = None,
) -> dict[str, Any] | None:
    """Record one event in an open store; the output for the agent (context), if any.
    `payload_bytes`: the size of the payload as the agent sent it (the quota's bound).
    `raw`: the payload as the agent sent it, given where the handler's work may follow the
    answer (`_handle_after_answer`)."""
    if payload.session_id is None and payload.event != "SessionStart":
        return None
    handler = HANDLERS.get(payload.event, HookRun.other)
    run = HookRun(payload, store, now)
    run.payload_bytes = payload_bytes
    from memory_core.agents import quota_hook

    # The session quota (seed 003): full sessions record nothing, nor does a hook whose
    # records would take its session past the quota; 80 % / 95 % warn.
    if (
        raw is not None
        and payload.event in HANDLERS_WITHOUT_CONTEXT
        and quota_hook.before_quietly(run)
    ):
        # Nothing for the agent, whatever the handler records: the work may follow the answer.
        if _handle_after_answer(run, handler, raw):
            return None
        quota_hook.add_pending(run)
        _handle(run, handler)
    elif quota_hook.before(run):
        _handle(run, handler)
    output: dict[str, Any] | None = run.output
    return output


def _handle(run: HookRun, handler: Callable[[HookRun], None]) -> None:
    """The event's own work, between the quota's checks."""
    from memory_core.agents import quota_hook

    with quota_hook.guard(run):
        handler(run)
    if not run.quota_refused:
        run.autosave()
    quota_hook.after(run)


# Events that tell the agent something only when the quota warns (a message or context the
# quota adds); their handlers themselves never do.
HANDLERS_WITHOUT_CONTEXT = frozenset({"PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop"})


def _handle_after_answer(run: HookRun, handler: Callable[[HookRun], None], raw: bytes) -> bool:
    """In a process that answers first: the event's work after the answer, once the quota has
    said that it will say nothing (`quota_hook.before_quietly`: the answer, exit 0 and no
    output, is known), the quota's note of this hook included; nothing is written before
    the answer, so the write-ahead log's first sync is not waited for either. Kept in the
    spool, claimed, until done, as `_record_after_answer` does; False when it cannot be (the
    caller does the work before answering)."""
    from memory_core.agents import quota_hook, spool
    from memory_core.store import Store, answers_first, later

    if not answers_first():
        return False
    root, payload = run.store.root, run.payload
    kept = spool.keep_while_recording(root, payload.agent, payload.event, raw, run.now)
    if kept is None:
        return False

    def finish() -> None:
        import contextlib

        try:
            run.store = Store.open(root)
            run.store.wait_when_busy(HOOK_WRITE_WAIT_SECONDS)
            try:
                quota_hook.add_pending(run)
                _handle(run, handler)
            finally:
                run.store.close()
        except Exception as exc:
            _log_failure(root, payload.agent, payload.event, exc)
        finally:
            with contextlib.suppress(OSError):
                kept.unlink()

    later(root, finish)
    return True


def main(agent: str, event: str, *, workspace: str | None = None, data: bytes | None = None) -> int:
    """Entry point of `engram hook AGENT EVENT`: stdin in (or `data`, read from it already),
    context (if any) out, exit 0."""
    if data is None:
        from memory_core.agents.quiet_events import read_stdin

        data = read_stdin()
    code, text = handle(agent, event, data, workspace=workspace)
    if text:
        try:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        except Exception:
            return 0
    return code
