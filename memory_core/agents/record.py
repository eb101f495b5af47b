"""Where what an agent did reaches the rest of engram, once.

Two sources see the same session: hooks (live, per tool call) and the transcript ingest (after
the fact, complete). Both go through here. The ledger tables of migration 0006 make every
effect happen once: a tool call's effects (a session tool call, a modified file in file
evolution, a command, an error into gotcha tracking) run for whoever first records its outcome,
a turn reaches the session once, keyed by its prompt's uuid.

The other areas are called with plain imports, typed and checked by mypy. They are imported
inside the functions that need them: a hook is a cold process, and most hook runs need none of
them. A failure in one of them raises like any code; only the hook's outermost entry point
(`hooks.handle`) logs it and exits 0, so a bug here fails the tests instead of silently turning a
feature off.
"""

from __future__ import annotations

import json
import os
import re

from memory_core.errors import EngramError
from memory_core.redact import redact, remember_redacted
from memory_core.workspace import relative_path

# Every hook imports this module: `dataclasses` (inspect, ast, dis) and `typing` would cost each
# one more than Python's own start, so the classes below are plain and the types are for the
# type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any

    from memory_core.sessions import Activity
    from memory_core.store import Store

FILE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
SHELL_TOOLS = frozenset({"Bash"})
MAX_TEXT = 4000
# A failed command's output is kept cut in the middle to this size: real test runs put the error
# that matters in the middle (maven prints ~3.5 kB of plugin lines around it, pytest its warnings
# and the list of fixtures), and a smaller cut loses it.
MAX_ERROR = 8000

_EXIT_CODE = re.compile(r"^(?:Error:\s*)?Exit[ _]code:?\s*(-?\d+)\s*$", re.IGNORECASE)


class _Plain:
    """Equality and repr over `__slots__`, as the dataclasses these were compared and printed."""

    __slots__: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class ToolCall(_Plain):
    __slots__ = ("input", "session_id", "sidechain", "tool", "tool_use_id", "ts")

    def __init__(
        self,
        tool_use_id: str,
        session_id: str,
        tool: str,
        input: dict[str, Any],
        ts: float,
        sidechain: bool = False,
    ) -> None:
        self.tool_use_id = tool_use_id
        self.session_id = session_id
        self.tool = tool
        self.input = input
        self.ts = ts
        self.sidechain = sidechain


class ToolOutcome(_Plain):
    __slots__ = ("error", "exit_code", "interrupted", "ok", "structured")

    def __init__(
        self,
        ok: bool,
        error: str | None = None,
        interrupted: bool = False,
        structured: Any = None,
        exit_code: int | None = None,
    ) -> None:
        self.ok = ok
        self.error = error
        self.interrupted = interrupted
        # The tool's structured result (transcript `toolUseResult`, hook `tool_response`).
        self.structured = structured
        self.exit_code = exit_code


class Turn(_Plain):
    __slots__ = (
        "assistant_parts",
        "ended_at",
        "last_stop_reason",
        "session_id",
        "started_at",
        "tool_calls",
        "user_message",
        "uuid",
    )

    def __init__(
        self,
        uuid: str,
        session_id: str,
        started_at: float,
        user_message: str,
        ended_at: float | None = None,
        assistant_parts: list[str] | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        last_stop_reason: str | None = None,
    ) -> None:
        self.uuid = uuid
        self.session_id = session_id
        self.started_at = started_at
        self.user_message = user_message
        self.ended_at = ended_at
        self.assistant_parts: list[str] = [] if assistant_parts is None else assistant_parts
        self.tool_calls: list[dict[str, Any]] = [] if tool_calls is None else tool_calls
        self.last_stop_reason = last_stop_reason

    @property
    def assistant_response(self) -> str:
        """The agent's text of the turn, cut and redacted (parts are kept raw until then)."""
        return clean("\n\n".join(part for part in self.assistant_parts if part), MAX_TEXT)


def clip(text: str, limit: int) -> str:
    """`text` cut in the middle to at most `limit` characters, saying how many were cut.

    At most `limit`, so that cutting a cut text again leaves it as it is (a summary cut once
    when it was made and again when it is stored keeps the true count).
    """
    if len(text) <= limit:
        return text
    # Room for the marker with the largest count it could show (the count only shrinks).
    room = len(f"\n[... {len(text)} characters cut ...]\n")
    half = max(1, (limit - room) // 2)
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def clean(text: str | None, limit: int = MAX_TEXT) -> str:
    """Text ready to store: cut to `limit` and redacted.

    Redacted before the final cut, with a margin: a secret lying across a cut point would
    otherwise be stored in part (too short for its format to be recognised).
    """
    if not text:
        return ""
    redacted = redact(clip(text, limit + 2 * CUT_MARGIN))
    cut = clip(redacted, limit)
    if cut is not redacted:
        # A cut of a redacted text (the marker between its ends holds no secret): whoever
        # stores it next (the session, gotcha tracking) need not redact it again.
        remember_redacted(cut)
    return cut


# Longer than any secret format redact knows (PEM blocks aside, which it hides to the end).
CUT_MARGIN = 1024


def file_path_of(call_input: dict[str, Any]) -> str | None:
    for key in ("file_path", "notebook_path", "filePath", "path", "absolute_path"):
        value = call_input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def command_of(call: ToolCall) -> str | None:
    if call.tool not in SHELL_TOOLS:
        return None
    command = call.input.get("command")
    return command if isinstance(command, str) and command else None


SEARCH_TOOLS = {"Grep": "pattern", "Glob": "pattern", "WebSearch": "query"}


def search_of(call: ToolCall) -> str | None:
    """What a search tool looked for (the session's search footprint)."""
    key = SEARCH_TOOLS.get(call.tool)
    value = call.input.get(key) if key else None
    return clip(value, 200) if isinstance(value, str) and value else None


def exit_code_of(error: str | None) -> int | None:
    """The exit code an error reports, in any phrasing the agents write (see `failures`)."""
    from memory_core.agents import failures

    return failures.exit_code_in(error)


def error_message(error: str) -> str:
    """The part of a tool's error worth tracking: without the `Exit code N` header and wrappers.

    The exit code says that a command failed, not why; left in, it would become the title of
    every gotcha learned from a shell command.
    """
    text = error.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip()
    lines = text.splitlines()
    while lines and (not lines[0].strip() or _EXIT_CODE.match(lines[0].strip())):
        lines.pop(0)
    return "\n".join(lines).strip() or text


# A path the fast string check cannot take as it is: `.` or `..` parts, doubled separators.
_UNNORMAL = re.compile(r"(?:^|/)\.{1,2}(?:/|$)|//")


def workspace_path(root: Path, path: str | None, cwd: str | None = None) -> str | None:
    """`path` relative to the workspace, or None when it lies outside it.

    A transcript written in another folder than the workspace (a moved project, a worktree, a
    teammate's transcript) names files under its own `cwd`: those are mapped onto the workspace.
    """
    if not path:
        return None
    if not os.path.isabs(path) and cwd:
        path = os.path.join(cwd, path)
    top = str(root)
    prefix = top + os.sep
    if cwd and not path.startswith(prefix):
        base = cwd.rstrip(os.sep) + os.sep
        if not (cwd + os.sep).startswith(prefix):
            if path.startswith(base):
                path = os.path.join(top, path[len(base) :])
            elif path.rstrip(os.sep) + os.sep == base:
                path = top
    if path in (top, prefix):
        return "."  # the workspace itself (a search over the whole project)
    if path.startswith(prefix) and not _UNNORMAL.search(path):
        # The common case, without building Path objects (the ingest asks thousands of times).
        return path[len(prefix) :].replace(os.sep, "/") or None
    try:
        return relative_path(root, path)
    except EngramError:
        return None


# -- sessions ---------------------------------------------------------------------------------


def touch_session(
    db: sqlite3.Connection,
    session_id: str,
    *,
    agent: str,
    ts: float,
    transcript_path: str | None = None,
    cwd: str | None = None,
    git_branch: str | None = None,
    model: str | None = None,
) -> bool:
    """Create or refresh the agent session row; True when it is new."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO agent_sessions (session_id, agent, transcript_path, cwd, git_branch, "
        "model, started_at, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (session_id, agent, transcript_path, cwd, git_branch, model, ts, ts),
    )
    if cursor.rowcount:
        return True
    db.execute(
        "UPDATE agent_sessions SET last_seen = MAX(last_seen, ?), "
        "started_at = MIN(started_at, ?), "
        "transcript_path = COALESCE(?, transcript_path), cwd = COALESCE(?, cwd), "
        "git_branch = COALESCE(?, git_branch), model = COALESCE(?, model) WHERE session_id = ?",
        (ts, ts, transcript_path, cwd, git_branch, model, session_id),
    )
    return False


def start_session(
    store: Store, session_id: str, *, agent: str, ts: float, resumed: bool = False
) -> None:
    from memory_core import sessions

    sessions.begin(
        store,
        session_id=session_id,
        agent=agent,
        # A resumed conversation is existing; a fresh one is detected (new, existing, workflow).
        session_type="existing" if resumed else None,
        now=ts,
    )


# -- tool calls -------------------------------------------------------------------------------


def note_tool_use(
    db: sqlite3.Connection,
    call: ToolCall,
    root: Path,
    cwd: str | None = None,
    outcome: ToolOutcome | None = None,
) -> bool:
    """Remember a tool call, with its outcome when it is known; False if it was already stored
    (by a hook, or an earlier run), in which case nothing is written."""
    cursor = db.execute(
        "INSERT OR IGNORE INTO agent_tool_uses (tool_use_id, session_id, ts, tool, sidechain, "
        "path, command, ok, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        tool_use_row(call, root, cwd, outcome),
    )
    return cursor.rowcount == 1


def tool_use_row(
    call: ToolCall, root: Path, cwd: str | None, outcome: ToolOutcome | None
) -> list[Any]:
    """The call's row in agent_tool_uses, in the order of its columns: tool_use_id, session_id,
    ts, tool, sidechain, path, command, ok, error."""
    path = file_path_of(call.input)
    command = command_of(call)
    return [
        call.tool_use_id,
        call.session_id,
        call.ts,
        call.tool,
        int(call.sidechain),
        workspace_path(root, path, cwd) if path else None,
        clean(command, 1000) if command else None,
        None if outcome is None else int(outcome.ok),
        stored_error(outcome),
    ]


def stored_error(outcome: ToolOutcome | None) -> str | None:
    """A failed call's error as agent_tool_uses keeps it (cut and redacted)."""
    return clean(outcome.error, MAX_ERROR) if outcome is not None and outcome.error else None


def tracked_error(error: str) -> str:
    """A failed call's error as gotcha tracking keeps it: `error_message` of it, cut and redacted.

    An error the ledger stores whole is redacted once, for the ledger (`stored_error`), and its
    message is taken from that redacted text: stripping a header line and the
    `<tool_use_error>` wrapper from a redacted text leaves only redacted text. An error the
    ledger cuts (longer than MAX_ERROR, before or after redaction) has its message cut on its
    own (the cut falls elsewhere once the header is out).
    """
    if len(error) <= MAX_ERROR:
        redacted = redact(error)  # the ledger's text, redacted once in a process
        if len(redacted) <= MAX_ERROR:
            message = error_message(redacted)
            # Part of a redacted text: whoever stores it next need not redact it again.
            remember_redacted(message)
            return message
    return clean(error_message(error), MAX_ERROR)


def claim_outcome(
    db: sqlite3.Connection,
    call: ToolCall,
    outcome: ToolOutcome,
    root: Path,
    *,
    cwd: str | None = None,
    noted: bool = False,
) -> bool:
    """Record the outcome of a call; True only for the first source to do so (it runs the effects).

    `noted`: the call is already stored (`note_tool_use` without an outcome); otherwise it is
    stored with its outcome in one statement, unless another source stored it first.
    """
    if not noted and note_tool_use(db, call, root, cwd, outcome):
        return True
    cursor = db.execute(
        "UPDATE agent_tool_uses SET ok = ?, error = ? WHERE tool_use_id = ? AND ok IS NULL",
        (int(outcome.ok), stored_error(outcome), call.tool_use_id),
    )
    return cursor.rowcount == 1


def pending_call(db: sqlite3.Connection, tool_use_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = db.execute(
        "SELECT * FROM agent_tool_uses WHERE tool_use_id = ?", (tool_use_id,)
    ).fetchone()
    return row


def _changed_lines(structured: Any) -> list[tuple[int, int]] | None:
    """Line ranges (1-based, inclusive, in the new text) an edit touched, from its structuredPatch."""
    if not isinstance(structured, dict):
        return None
    hunks = structured.get("structuredPatch")
    if not isinstance(hunks, list) or not hunks:
        return None
    ranges: list[tuple[int, int]] = []
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        start, count = hunk.get("newStart"), hunk.get("newLines")
        if isinstance(start, int) and isinstance(count, int) and start >= 1:
            ranges.append((start, start + max(count, 1) - 1))
    return ranges or None


def reconstructed_after(call: ToolCall, structured: Any) -> str | None:
    """The file's text right after a past edit, rebuilt from the call and its result.

    The transcript ingest runs after the fact, when the file on disk may have moved on; the
    tool's own record of the original text and the replacement says what the edit produced.
    """
    if call.tool == "Write":
        content = call.input.get("content")
        return content if isinstance(content, str) else None
    if not isinstance(structured, dict):
        return None
    original = structured.get("originalFile", structured.get("originalFileContents"))
    if not isinstance(original, str):
        return None
    if call.tool == "Edit":
        edits = [call.input]
    elif call.tool == "MultiEdit":
        raw = call.input.get("edits")
        edits = [e for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []
    else:
        return None
    text = original
    for edit in edits:
        old, new = edit.get("old_string"), edit.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str) or old not in text:
            return None
        text = (
            text.replace(old, new) if edit.get("replace_all") is True else text.replace(old, new, 1)
        )
    return text


def record_file_changes(store: Store, changes: list[dict[str, Any]], *, now: float) -> None:
    """Agent file changes into file evolution, in one transaction (evolution.record_batch)."""
    if not changes:
        return
    from memory_core import evolution

    evolution.record_batch(
        store,
        [evolution.Change(**change) for change in changes],
        now=now,
        check_git=False,
    )


def tool_summary(call: ToolCall, rel_path: str | None) -> str:
    """One line saying what a call did (sessions redacts it when storing it)."""
    command = command_of(call)
    if command:
        return clean(command, 300)
    if rel_path:
        return rel_path
    outside = file_path_of(call.input)
    if outside:
        return outside  # a file outside the workspace, named as it is
    for key in ("pattern", "query", "url", "description", "prompt"):
        value = call.input.get(key)
        if isinstance(value, str) and value:
            return clean(f"{key}: {value}", 300)
    return call.tool


def apply_outcome(
    store: Store,
    call: ToolCall,
    outcome: ToolOutcome,
    *,
    settings: Any = None,
    cwd: str | None = None,
    after_text: str | None = None,
    record_call: bool = True,
    file_changes: list[dict[str, Any]] | None = None,
    activity: Activity | None = None,
) -> None:
    """Run the effects of one tool call's outcome (call only when `claim_outcome` said True).

    The transcript ingest hands the tool call to the session with its turn (`record_call`
    False), and gathers the session's activity into `activity` and file changes into
    `file_changes` to write each in one batch.
    """
    from memory_core import sessions

    batched = activity is not None
    if activity is None:
        activity = sessions.Activity(store)
    root = store.root
    path = file_path_of(call.input)
    rel = workspace_path(root, path, cwd)
    sid = call.session_id
    if record_call:
        activity.tool_call(
            sid,
            tool=call.tool,
            ok=outcome.ok,
            summary=tool_summary(call, rel),
            ts=call.ts,
        )
    if call.tool in FILE_TOOLS and outcome.ok and rel is None and path and os.path.isabs(path):
        activity.file_modified(sid, path, ts=call.ts, outside=True)
    if call.tool in FILE_TOOLS and outcome.ok and rel is not None:
        activity.file_modified(sid, rel, ts=call.ts)
        structured = outcome.structured if isinstance(outcome.structured, dict) else {}
        before = structured.get("originalFile")
        if before is None:
            before = structured.get("originalFileContents")
        change = {
            "path": rel,
            "actor": "agent",
            "session_id": sid,
            "before": before if isinstance(before, str) else None,
            "after": after_text,
            "lines": _changed_lines(outcome.structured),
            "ts": call.ts,
        }
        if file_changes is not None:
            file_changes.append(change)
        else:
            record_file_changes(store, [change], now=call.ts)
    if call.tool == "apply_patch" and outcome.ok:
        _patched_files(store, call, cwd, activity, file_changes)
    search = search_of(call)
    if search and outcome.ok:
        activity.search(sid, search, ts=call.ts)
    command = command_of(call)
    if command:
        exit_code = outcome.exit_code
        if exit_code is None:
            exit_code = 0 if outcome.ok else exit_code_of(outcome.error)
        activity.command(
            sid,
            clean(command, 1000),
            exit_code=exit_code,
            ts=call.ts,
            # Declined or stopped by the user: the call was unsuccessful, but the command did
            # not fail (no failed command, no open item to carry to the next session).
            failed=not outcome.ok and not outcome.interrupted,
        )
    if not batched:
        activity.write()
    if not outcome.ok and not outcome.interrupted and outcome.error:
        from memory_core.gotchas.track import track_error

        track_error(
            store,
            tracked_error(outcome.error),
            settings=settings,
            file=rel,
            command=clean(command, 1000) if command else None,
            tool=call.tool,
            session_id=sid,
            now=call.ts,
        )


def _patched_files(
    store: Store,
    call: ToolCall,
    cwd: str | None,
    activity: Activity,
    file_changes: list[dict[str, Any]] | None,
) -> None:
    """The files a Codex `apply_patch` changed (one call may change several), as changed files.

    Their text after the patch is read from disk (`after` None): the patch holds hunks, not the
    whole file.
    """
    from memory_core.agents.codex_outputs import patch_files

    for name in patch_files(call.input):
        rel = workspace_path(store.root, name, cwd)
        if rel is None:
            if os.path.isabs(name):
                activity.file_modified(call.session_id, name, ts=call.ts, outside=True)
            continue
        activity.file_modified(call.session_id, rel, ts=call.ts)
        change = {"path": rel, "actor": "agent", "session_id": call.session_id, "ts": call.ts}
        if file_changes is not None:
            file_changes.append(change)
        else:
            record_file_changes(store, [change], now=call.ts)


# -- turns ------------------------------------------------------------------------------------


def save_open_turn(db: sqlite3.Connection, turn: Turn, response: str | None = None) -> None:
    """Persist a turn still in progress, so the next ingest run carries it on.

    `response`: the turn's `assistant_response` when the caller has it already (redacting a
    long answer is the costly part).
    """
    db.execute(
        "INSERT INTO agent_turns (uuid, session_id, started_at, ended_at, user_message, "
        "assistant_response, tool_calls) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(uuid) DO UPDATE SET ended_at = excluded.ended_at, "
        "assistant_response = excluded.assistant_response, tool_calls = excluded.tool_calls "
        "WHERE recorded = 0",
        (
            turn.uuid,
            turn.session_id,
            turn.started_at,
            turn.ended_at,
            turn.user_message,
            turn.assistant_response if response is None else response,
            json.dumps(turn.tool_calls),
        ),
    )


def load_open_turn(db: sqlite3.Connection, session_id: str) -> Turn | None:
    row = db.execute(
        "SELECT * FROM agent_turns WHERE session_id = ? AND recorded = 0 ORDER BY started_at DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    if row is None:
        return None
    return Turn(
        uuid=row["uuid"],
        session_id=row["session_id"],
        started_at=row["started_at"],
        user_message=row["user_message"],
        ended_at=row["ended_at"],
        assistant_parts=[row["assistant_response"]] if row["assistant_response"] else [],
        tool_calls=json.loads(row["tool_calls"] or "[]"),
    )


class FinishedTurn(_Plain):
    __slots__ = (
        "assistant_response",
        "ended_at",
        "input_tokens",
        "output_tokens",
        "session_id",
        "started_at",
        "tool_calls",
        "user_message",
    )

    def __init__(
        self,
        session_id: str,
        user_message: str,
        assistant_response: str,
        tool_calls: list[dict[str, Any]],
        input_tokens: int,
        output_tokens: int,
        started_at: float,
        ended_at: float | None,
    ) -> None:
        self.session_id = session_id
        self.user_message = user_message
        self.assistant_response = assistant_response
        self.tool_calls = tool_calls
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.started_at = started_at
        self.ended_at = ended_at


def close_turn(db: sqlite3.Connection, turn: Turn, ended_at: float | None) -> FinishedTurn | None:
    """Mark a turn recorded (once) with its de-duplicated tokens; None if it already was.

    One statement writes the turn whole, whether it was saved open before or not (it was
    saved open, then marked recorded: two writes of the same row).
    """
    response = turn.assistant_response
    tokens = db.execute(
        "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM agent_messages "
        "WHERE turn_uuid = ? AND sidechain = 0",
        (turn.uuid,),
    ).fetchone()
    end = ended_at if ended_at is not None else turn.ended_at
    cursor = db.execute(
        "INSERT INTO agent_turns (uuid, session_id, started_at, ended_at, user_message, "
        "assistant_response, tool_calls, recorded, input_tokens, output_tokens) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?) "
        "ON CONFLICT(uuid) DO UPDATE SET ended_at = excluded.ended_at, "
        "assistant_response = excluded.assistant_response, tool_calls = excluded.tool_calls, "
        "recorded = 1, input_tokens = excluded.input_tokens, "
        "output_tokens = excluded.output_tokens WHERE recorded = 0",
        (
            turn.uuid,
            turn.session_id,
            turn.started_at,
            end,
            turn.user_message,
            response,
            json.dumps(turn.tool_calls),
            int(tokens[0]),
            int(tokens[1]),
        ),
    )
    if cursor.rowcount != 1:
        return None
    return FinishedTurn(
        session_id=turn.session_id,
        user_message=turn.user_message,
        assistant_response=response,
        tool_calls=list(turn.tool_calls),
        input_tokens=int(tokens[0]),
        output_tokens=int(tokens[1]),
        started_at=turn.started_at,
        ended_at=end,
    )


# A turn that ended longer ago than this before the moment its caller records it belongs to no
# live session: a transcript of last week's session read now (`engram ingest`, a resumed
# session's file read at its SessionStart). The same silence after which an ingested session is
# taken as over (transcripts.SETTLED_AFTER_SECONDS).
LIVE_TURN_SECONDS = 30 * 60


def apply_turns(
    store: Store, turns: Sequence[FinishedTurn], settings: Any = None, *, now: float | None = None
) -> None:
    """Hand finished turns to their sessions, and take the automatic checkpoint every
    `checkpoints.every_n_turns` turns of a live session.

    A checkpoint holds the workspace's files as they are now: it belongs to a turn that just
    ended (`now`: the caller's present, a hook's time). A turn replayed from an old transcript
    ended long before: today's files are not what that turn left, so none is taken for it.
    """
    if not turns:
        return
    from memory_core import clock, sessions

    if settings is None:
        # Once for the batch: an ingest applies hundreds of turns, each may be due a checkpoint.
        from memory_core import config

        settings = config.load(store.root)
    every = int(settings["checkpoints.every_n_turns"])
    # Per session, the last turn of the batch that is due a checkpoint, and when it ended.
    due: dict[str, tuple[int, float | None]] = {}
    for turn in turns:
        seq = sessions.record_turn(
            store,
            turn.session_id,
            user_message=turn.user_message,
            assistant_response=turn.assistant_response,
            # Every call of the turn is shown in it; the ones another source recorded first (a
            # hook's PostToolUse) reached the session's tool calls already and are not counted
            # again ("recorded").
            tool_calls=[
                {
                    "tool": c.get("tool"),
                    "ok": c.get("ok", True),
                    "summary": c.get("summary"),
                    "recorded": not c.get("claimed"),
                }
                for c in turn.tool_calls
                if c.get("claimed") or "ok" in c  # a call with no outcome yet is not shown
            ],
            input_tokens=turn.input_tokens,
            output_tokens=turn.output_tokens,
            started_at=turn.started_at,
            ended_at=turn.ended_at,
        )
        ended = turn.ended_at if turn.ended_at is not None else turn.started_at
        live = ended >= (clock.now() if now is None else now) - LIVE_TURN_SECONDS
        if every > 0 and seq > 0 and seq % every == 0 and live:
            due[turn.session_id] = (seq, turn.ended_at)
    # A checkpoint every N turns (the `checkpoints.every_n_turns` setting), one per batch: the
    # workspace does not change while a batch is applied, so an ingest of a long transcript
    # would otherwise take the same tree dozens of times, and those copies would push the
    # user's older checkpoints out of the checkpoint cap.
    if not due:
        return
    # Only now: the checkpoint machinery (git, the journal, compression) is most of what a hook
    # ending a turn would otherwise load, and few turns are due a checkpoint.
    from memory_core import checkpoints

    for session_id, (seq, ended_at) in due.items():
        checkpoints.every_n_turns(
            store, seq, settings=settings, session_id=session_id, now=ended_at
        )
