"""Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`): parse and ingest.

`parse_line` turns one JSON line into an `Entry` (a plain dataclass) or None for lines that are
not part of the conversation (progress, snapshots, titles, types a newer Claude Code invented).
`ingest_file` reads a transcript from where the previous run stopped (an offset per file, always
at a line boundary; a last line without its newline waits until the file stops growing or the
session ends) and builds sessions, turns, tool calls, tokens, modified files, commands,
failures, sidechains and compactions. Everything counts once wherever it is read (the ledgers
keyed by message id, line uuid and tool_use id): a copy of the file, or a resumed session's
file replaying its parent's lines, adds nothing.

Token usage is de-duplicated as the usage accounting tools do: one API response is written as
several lines (one content block each) that repeat its `usage`; it is counted once under its
`message.id`, keeping the largest values seen (early lines may carry a partial output count),
and a sidechain replay never replaces the main conversation's copy.

A "human prompt" is a user line that is not a sidechain, meta text, compaction summary, tool
result, slash-command echo, shell escape or interrupt marker.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memory_core import clock, cyclic_gc
from memory_core.agents import failures, record
from memory_core.agents.payload import scrub
from memory_core.agents.record import FinishedTurn, ToolCall, ToolOutcome, Turn, clean
from memory_core.lazy_pattern import compile_bytes_later, compile_later
from memory_core.store import Store

AGENT = "claude-code"
# The session's figures in agent_sessions (migration 0007): kept up to date as messages arrive,
# so that retention pruning the per-message ledger never changes a session's totals.
TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")
TOKEN_COLUMNS = (
    *(f"main_{kind}" for kind in TOKEN_KINDS),
    "main_messages",
    *(f"sub_{kind}" for kind in TOKEN_KINDS),
    "sub_messages",
)
HEAD_BYTES = 512
CHUNK_LINES = 5000
# Lines whose key says whether they were counted before (a replay) or are new.
_KEYED = frozenset({"prompt", "assistant", "tool_results", "compact_boundary"})
_STOP_REASONS_THAT_END_A_TURN = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal"})
_NOT_PROMPTS = (
    "<command-name>",
    "<local-command-",
    "<bash-",
    "<command-message>",
    "<task-notification>",
)
_INTERRUPT = "[Request interrupted by user"
# A decision the user states in a prompt ("we'll go with SQLite", "decision: no ORM"): the
# sentence it is in. Conservative on purpose: a request ("let's look at X") is not a decision.
# Patterns used inside functions, compiled on first use like the others (a resident
# server compiles every module-level one before it forks).
_NOT_ALPHANUMERIC = compile_later(r"[^A-Za-z0-9]")
_DECISION = compile_later(
    r"\b(?:(?:we(?:'ll| will)|let'?s|we(?:'re| are)) go(?:ing)? with\b|we decided\b|"
    r"i decided\b|(?:the )?decision(?: is)?:)",
    re.IGNORECASE,
)
_SENTENCE_BREAK = compile_later(r"(?<=[.!?])\s+|\n+")


def decisions_in(text: str) -> list[str]:
    """The sentences of a prompt in which the user states a decision."""
    if not _DECISION.search(text):
        return []
    return [
        " ".join(part.split())[:600]
        for part in _SENTENCE_BREAK.split(text)
        if _DECISION.search(part)
    ]


_COMPACT_PREFIX = "This session is being continued from a previous conversation"
# Every user, assistant and system line holds one of these (the top-level "type"); a line with
# none of them cannot matter and is skipped without decoding. A false match only costs a decode.
_MAY_BE_CONVERSATION = compile_bytes_later(rb'"type": ?"(?:user|assistant|system)"')
_decode_json = json.JSONDecoder().decode
# orjson reads lines four times faster than the json module, but importing it costs a cold
# process more than Python's own start, and most hooks read a few kB of new lines: it is loaded
# once this process has this many bytes to read in all (`fast_decoder_for`: one large file, or
# an `engram ingest` of many small ones); the json module reads less.
ORJSON_FROM_BYTES = 512 * 1024
_orjson: Any = None
_bytes_to_read = 0
# Only a line holding a UTF-16 surrogate, escaped (`\ud83d`) or as raw bytes (which
# "surrogatepass" lets through), can decode to a lone one.
_MAY_HOLD_SURROGATE = compile_bytes_later(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def fast_decoder_for(unread_bytes: int) -> None:
    """Count `unread_bytes` about to be read; from ORJSON_FROM_BYTES in this process on, lines
    are read with orjson."""
    global _orjson, _bytes_to_read
    _bytes_to_read += max(0, unread_bytes)
    if _orjson is None and _bytes_to_read >= ORJSON_FROM_BYTES:
        import orjson

        _orjson = orjson


def _decode_line(line: bytes) -> Any:
    """One transcript line as JSON; ValueError when it is not JSON.

    orjson (for large reads, `fast_decoder_for`) reads the bytes as they are. A line it refuses
    is read by the json module, which takes what orjson does not: an escaped lone surrogate
    (half of a pair, cut by a truncation; scrubbed to U+FFFD) and NaN. Nesting deeper than
    either decoder goes is not JSON either.
    """
    if _orjson is not None:
        try:
            return _orjson.loads(line)
        except _orjson.JSONDecodeError:
            pass
    try:
        # Decoded here rather than by json.loads, which would first guess the encoding.
        value = _decode_json(line.decode("utf-8", "surrogatepass"))
    except RecursionError:
        raise ValueError("nested too deeply") from None
    return scrub(value) if _MAY_HOLD_SURROGATE.search(line) else value


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_tokens
            + self.cache_read_tokens
        )


@dataclass(slots=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(slots=True)
class ToolResult:
    tool_use_id: str
    is_error: bool
    text: str
    structured: Any = None
    interrupted: bool = False


@dataclass(slots=True)
class Entry:
    """One meaningful transcript line."""

    kind: str  # prompt | assistant | tool_results | compact_boundary | compact_summary | user_other
    uuid: str | None
    session_id: str | None
    ts: float
    sidechain: bool = False
    cwd: str | None = None
    git_branch: str | None = None
    text: str = ""
    message_key: str | None = None
    model: str | None = None
    usage: Usage | None = None
    stop_reason: str | None = None
    tool_uses: list[ToolUse] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    trigger: str | None = None
    pre_tokens: int | None = None


def _int(value: Any) -> int:
    # `type() is int`: a bool is an int to isinstance, and `true` is no token count.
    return value if type(value) is int and value > 0 else 0


def _str_or_none(value: Any) -> str | None:
    return value if type(value) is str else None


def _ts(value: Any) -> float:
    """A line's time; 0.0 when it has none (the ingest then uses the previous line's time:
    "now" would stretch an old session to today)."""
    if isinstance(value, str) and value:
        try:
            return clock.parse_iso(value)
        except ValueError:
            pass
    return 0.0


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    creation = _int(raw.get("cache_creation_input_tokens"))
    if not creation:
        # Some versions reported 0 here while the nested breakdown held the real figure.
        nested = raw.get("cache_creation")
        if isinstance(nested, dict):
            creation = sum(_int(v) for v in nested.values())
    return Usage(
        input_tokens=_int(raw.get("input_tokens")),
        output_tokens=_int(raw.get("output_tokens")),
        cache_creation_tokens=creation,
        cache_read_tokens=_int(raw.get("cache_read_input_tokens")),
    )


def _block_text(content: Any) -> str:
    """The text of a message or tool_result content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                parts.append(block["text"])
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def is_human_text(text: str) -> bool:
    stripped = text.lstrip()
    if not stripped:
        return False
    if stripped.startswith(_NOT_PROMPTS) or stripped.startswith(_INTERRUPT):
        return False
    return not stripped.startswith(_COMPACT_PREFIX)


def parse_line(obj: Any) -> Entry | None:
    """The conversation content of one decoded transcript line, or None."""
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if kind not in ("user", "assistant", "system"):
        return None
    get = obj.get
    message = get("message")
    message = message if isinstance(message, dict) else {}
    entry = Entry(
        kind="user_other",
        uuid=_str_or_none(get("uuid")),
        session_id=_str_or_none(get("sessionId")),
        ts=_ts(get("timestamp")),
        sidechain=get("isSidechain") is True,
        cwd=_str_or_none(get("cwd")),
        git_branch=_str_or_none(get("gitBranch")),
    )
    if kind == "system":
        if obj.get("subtype") != "compact_boundary":
            return entry  # no content of its own, but the session was there at its time
        entry.kind = "compact_boundary"
        meta = obj.get("compactMetadata")
        if isinstance(meta, dict):
            entry.trigger = meta.get("trigger") if isinstance(meta.get("trigger"), str) else None
            entry.pre_tokens = _int(meta.get("preTokens")) or None
        return entry
    if kind == "assistant":
        entry.kind = "assistant"
        model = message.get("model")
        entry.model = model if isinstance(model, str) else None
        if entry.model == "<synthetic>":
            # An error message Claude Code wrote itself: no API call, no tokens.
            return None
        # Keyed by message.id alone: the lines of one response share it (and its requestId), and
        # a sidechain replay of a parent response under another requestId must meet the parent's
        # copy. Lines without an id are never merged.
        message_id = message.get("id")
        if isinstance(message_id, str) and message_id:
            entry.message_key = message_id
        elif entry.uuid:
            entry.message_key = f"line:{entry.uuid}"
        entry.usage = _usage(message.get("usage"))
        stop = message.get("stop_reason")
        entry.stop_reason = stop if isinstance(stop, str) else None
        content = message.get("content")
        texts: list[str] = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            block_type = block.get("type")
            if block_type == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif block_type == "tool_use" and isinstance(block.get("id"), str):
                tool_input = block.get("input")
                entry.tool_uses.append(
                    ToolUse(
                        id=block["id"],
                        name=str(block.get("name") or "unknown"),
                        input=tool_input if isinstance(tool_input, dict) else {},
                    )
                )
        entry.text = "\n".join(texts)
        return entry
    # A user line: a prompt, tool results, a compaction summary, or meta text.
    content = message.get("content")
    if obj.get("isCompactSummary") is True:
        entry.kind = "compact_summary"
        entry.text = _block_text(content)
        return entry
    results = []
    if isinstance(content, list):
        structured = obj.get("toolUseResult")
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                tool_use_id = block.get("tool_use_id")
                if not isinstance(tool_use_id, str):
                    continue
                interrupted = isinstance(structured, dict) and structured.get("interrupted") is True
                results.append(
                    ToolResult(
                        tool_use_id=tool_use_id,
                        is_error=block.get("is_error") is True,
                        text=_block_text(block.get("content")),
                        structured=structured,
                        interrupted=interrupted,
                    )
                )
    if results:
        entry.kind = "tool_results"
        entry.tool_results = results
        return entry
    text = _block_text(content)
    entry.text = text
    if (
        not entry.sidechain
        and obj.get("isMeta") is not True
        and obj.get("isVisibleInTranscriptOnly") is not True
        and is_human_text(text)
        and not (
            isinstance(obj.get("origin"), dict) and obj["origin"].get("kind") == "task-notification"
        )
        and obj.get("promptSource") != "system"
    ):
        entry.kind = "prompt"
    return entry


# -- where transcripts live -------------------------------------------------------------------


def project_dir_name(root: Path) -> str:
    """Claude Code's folder name for a project: every non-alphanumeric character becomes '-'."""
    return _NOT_ALPHANUMERIC.sub("-", str(root))


def claude_config_dirs() -> list[Path]:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    if configured:
        # "a, b" as well as "a,b": a space after the comma is not part of the folder's name.
        return [Path(p.strip()).expanduser() for p in configured.split(",") if p.strip()]
    home = Path.home()
    return [home / ".claude", home / ".config" / "claude"]


def default_transcripts(root: Path) -> list[Path]:
    """This workspace's transcripts, subagent files included, oldest first."""
    name = project_dir_name(root)
    # Claude Code 2.1.234+: with CLAUDE_CONFIG_DIR, this variable names the project folder itself.
    override = (
        os.environ.get("CLAUDE_CODE_PROJECT_DIR_NAME")
        if os.environ.get("CLAUDE_CONFIG_DIR")
        else None
    )
    if override:
        name = override
    found: list[Path] = []
    for config_dir in claude_config_dirs():
        projects = config_dir / "projects"
        if not projects.is_dir():
            continue
        for candidate in projects.iterdir():
            matches = candidate.name == name or (
                len(name) > 200 and candidate.name.startswith(name[:200])
            )
            if matches and candidate.is_dir():
                found.extend(p for p in candidate.rglob("*.jsonl") if p.is_file())
    return sorted(found, key=lambda p: (p.stat().st_mtime, str(p)))


def _session_id_of(path: Path) -> str | None:
    """The `sessionId` of a transcript's first lines that carry one (None if none says)."""
    try:
        with path.open("rb") as handle:
            for _ in range(20):
                line = handle.readline(1 << 20)
                if not line:
                    break
                found = re.search(rb'"sessionId": ?"([^"]+)"', line)
                if found:
                    return found.group(1).decode("utf-8", "replace")
    except OSError:
        return None
    return None


def session_files(path: Path) -> list[Path]:
    """The transcripts a path names: a folder's, or a session's file with its subagents'.

    A session's subagents are written to `<session>/subagents/agent-*.jsonl` (Claude Code
    2.1), or beside the session's file as `agent-*.jsonl` naming the session in their lines
    (2.0); older releases wrote them into the session's own file. The main file comes first.
    """
    if path.is_dir():
        return sorted(
            (p for p in path.rglob("*.jsonl") if p.is_file()),
            key=lambda p: (p.name.startswith("agent-"), len(p.parts), str(p)),
        )
    found = [path]
    if path.name.startswith("agent-"):
        return found
    folder = path.with_suffix("")
    subagents = folder / "subagents"
    if subagents.is_dir():
        found.extend(sorted(p for p in subagents.rglob("agent-*.jsonl") if p.is_file()))
    session_id = path.stem
    for candidate in sorted(path.parent.glob("agent-*.jsonl")):
        if candidate.is_file() and _session_id_of(candidate) == session_id:
            found.append(candidate)
    return found


def is_claude_transcript(path: Path) -> bool:
    """False for a Gemini chat file handed over as `transcript_path` (metadata line first, or .json)."""
    if path.suffix == ".json":
        return False
    try:
        with path.open("rb") as handle:
            first = handle.readline(65536)
    except OSError:
        return False
    if not first.strip():
        return True
    try:
        obj = json.loads(first)
    except ValueError:
        return True
    return not (isinstance(obj, dict) and "projectHash" in obj and "type" not in obj)


# -- ingest -----------------------------------------------------------------------------------


@dataclass
class IngestStats:
    path: str
    lines: int = 0
    bytes: int = 0
    malformed: int = 0
    prompts: int = 0
    turns: int = 0
    assistant_messages: int = 0
    tool_calls: int = 0
    failures: int = 0
    # Of the failures, the calls the user interrupted or rejected (no error to learn from).
    interrupted: int = 0
    compactions: int = 0
    sidechain_lines: int = 0
    sessions: list[str] = field(default_factory=list)
    restarted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class _SessionState:
    session_id: str
    turn: Turn | None = None
    first_ts: float = float("inf")
    last_ts: float = 0.0
    model: str | None = None
    # What the main conversation did last: reply | tool_call | tool_result | prompt | interrupt.
    # A transcript ending on a reply is a finished session; on anything else, nobody knows.
    last_event: str | None = None
    # Token and message figures added in this run, main chain and subagents apart, in the
    # order of TOKEN_COLUMNS (written to agent_sessions once per chunk).
    deltas: list[int] = field(default_factory=lambda: [0] * len(TOKEN_COLUMNS))
    # The folder the session started in, which the workspace stands for.
    cwd: str | None = None
    # Whether this run counted something of the session (a line read before that, in a
    # resumed session's file, replays its parent's: its time is not this session's).
    seen_new: bool = False
    # The time of the first line, when this run created the session.
    created_ts: float | None = None
    # Times of lines that say nothing of their own (meta text, echoes) read before anything
    # new: the session's if something new follows them, its parent's if a replay does.
    pending_first: float = float("inf")
    pending_last: float = 0.0
    replay_seen: bool = False

    def observe(self, ts: float, *, new: bool, keyed: bool) -> None:
        """Take a line's time into the session's span, unless it replays the parent's lines."""
        if new or self.seen_new:
            self.seen_new = True
            self.first_ts = min(self.first_ts, ts, self.pending_first)
            self.last_ts = max(self.last_ts, ts, self.pending_last)
            self.pending_first, self.pending_last = float("inf"), 0.0
        elif keyed:  # counted already: a replayed line, and the lines before it replayed too
            self.replay_seen = True
            self.pending_first, self.pending_last = float("inf"), 0.0
        else:
            self.pending_first = min(self.pending_first, ts)
            self.pending_last = max(self.pending_last, ts)

    def span(self) -> tuple[float, float] | None:
        """The session's (first, last) times from this run, or None when it has none."""
        if self.seen_new:
            return self.first_ts, self.last_ts
        if not self.replay_seen and self.pending_last > 0:
            return self.pending_first, self.pending_last  # only lines of its own kind, none new
        return None


class _Run:
    """One ingest pass over one file: in-memory turn state, effects run with each chunk."""

    def __init__(
        self,
        store: Store,
        path: Path,
        stats: IngestStats,
        settings: Any,
        agent: str = AGENT,
        *,
        now: float | None = None,
    ) -> None:
        self.agent = agent
        # The caller's present (a hook's time; None: the clock's): turns that ended long before
        # it are replayed history, which takes no automatic checkpoint (record.apply_turns).
        self.now = now
        self.store = store
        self.path = path
        self.stats = stats
        self.settings = settings
        self.sessions: dict[str, _SessionState] = {}
        # (call, outcome, cwd, whether the call itself still has to reach the session)
        self.pending_effects: list[tuple[ToolCall, ToolOutcome, str | None, bool]] = []
        self.finished_turns: list[FinishedTurn] = []
        self.new_sessions: list[str] = []
        # message keys this run stored first (a line of theirs is new to the store)
        self.new_messages: set[str] = set()
        self.calls: dict[str, ToolCall] = {}
        # tool_use id -> (call, cwd) of calls this chunk has not stored yet
        self.unnoted: dict[str, tuple[ToolCall, str | None]] = {}
        # tool_use id -> (line, result) of results read before their call
        self.early_results: dict[str, tuple[Entry, ToolResult]] = {}
        # message key -> (sidechain, the four token counts) as stored, for this run's responses
        self.messages: dict[str, tuple[bool, tuple[int, int, int, int]]] = {}
        # message key -> (the four token counts and sidechain flag, turn uuid) not yet written
        self.message_updates: dict[str, tuple[tuple[int, ...], str | None]] = {}
        # The ledgers as this chunk found them (`read_ledgers`: one read for the chunk's keys),
        # and the rows this run adds to them, written together (`write_ledger_rows`): whether
        # this run records a response or a tool call first is decided here, not by a
        # statement and its row count per fact. The chunk's transaction holds the write lock,
        # so nobody else adds to them meanwhile.
        self.stored_messages: dict[str, tuple[bool, tuple[int, int, int, int]]] = {}
        self.new_message_rows: list[tuple[Any, ...]] = []
        # tool_use id -> its `ok` as stored (None: the call waits for its outcome)
        self.stored_calls: dict[str, int | None] = {}
        # The keys read (stored or not): a reader that does not read ahead (Gemini's chats,
        # Codex's rollouts) has each read when first met.
        self.read_messages: set[str] = set()
        self.read_calls: set[str] = set()
        # tool_use id -> the row this run stores for the call
        self.new_call_rows: dict[str, list[Any]] = {}
        self.last_known_ts = 0.0
        # Whether this is the last chunk of the input (`run_effects` then starts every session).
        self.final = True
        # (session, text, time) of corrections and rules the user stated, for long-term memory
        self.memories: list[tuple[str, str, float, str]] = []

    def session(self, db: sqlite3.Connection, entry: Entry) -> _SessionState | None:
        sid = entry.session_id
        if sid is None:
            return None
        state = self.sessions.get(sid)
        if state is None:
            row = db.execute(
                "SELECT cwd FROM agent_sessions WHERE session_id = ?", (sid,)
            ).fetchone()
            started_in = row[0] if row is not None else None
            is_new = record.touch_session(
                db,
                sid,
                agent=self.agent,
                ts=entry.ts,
                transcript_path=str(self.path) if not entry.sidechain else None,
                cwd=entry.cwd,
                git_branch=entry.git_branch,
            )
            if is_new:
                self.new_sessions.append(sid)
            state = _SessionState(sid, record.load_open_turn(db, sid))
            state.created_ts = entry.ts if is_new else None
            # Files are placed in the workspace from the folder the session started in (the
            # project's): after a `cd` into a subfolder, the lines carry that subfolder as
            # their cwd, and the same file would otherwise be named two ways.
            state.cwd = started_in or entry.cwd
            self.sessions[sid] = state
            self.stats.sessions.append(sid)
        return state

    def finish_turn(
        self, db: sqlite3.Connection, state: _SessionState, ended_at: float | None
    ) -> None:
        if state.turn is None:
            return
        self.write_message_updates(db)  # the turn's tokens are summed from agent_messages
        finished = record.close_turn(db, state.turn, ended_at)
        if finished is not None:
            self.finished_turns.append(finished)
            self.stats.turns += 1
        state.turn = None

    def handle(self, db: sqlite3.Connection, entry: Entry) -> None:
        if entry.ts <= 0:
            entry.ts = self.last_known_ts or clock.now()
        else:
            self.last_known_ts = entry.ts
        state = self.session(db, entry)
        if state is None:
            return
        if entry.model and not entry.sidechain:
            state.model = entry.model
        if entry.sidechain:
            self.stats.sidechain_lines += 1
        new = False
        if entry.kind == "prompt":
            new = self.prompt(db, state, entry)
        elif entry.kind == "assistant":
            self.assistant(db, state, entry)
            new = entry.message_key in self.new_messages
        elif entry.kind == "tool_results":
            new = self.tool_results(db, state, entry)
        elif entry.kind == "compact_boundary":
            # The turn goes on: an automatic compaction happens in the middle of an answer, and
            # what the agent does after it still belongs to the request it was working on.
            cursor = db.execute(
                "INSERT OR IGNORE INTO agent_compactions (uuid, session_id, ts, trigger, pre_tokens) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    entry.uuid or f"{state.session_id}:{entry.ts}",
                    state.session_id,
                    entry.ts,
                    entry.trigger,
                    entry.pre_tokens,
                ),
            )
            if cursor.rowcount:
                new = True
                self.stats.compactions += 1
                db.execute(
                    "UPDATE agent_sessions SET compactions = compactions + 1 WHERE session_id = ?",
                    (state.session_id,),
                )
        elif entry.kind == "compact_summary":
            db.execute(
                "UPDATE agent_compactions SET summary = ? WHERE rowid = (SELECT rowid FROM agent_compactions "
                "WHERE session_id = ? AND summary IS NULL ORDER BY ts DESC LIMIT 1)",
                (clean(entry.text, 20000), state.session_id),
            )
        state.observe(entry.ts, new=new, keyed=entry.kind in _KEYED)

    def prompt(self, db: sqlite3.Connection, state: _SessionState, entry: Entry) -> bool:
        self.finish_turn(db, state, None)
        uuid = entry.uuid or f"{state.session_id}:{entry.ts}"
        text = clean(entry.text)
        cursor = db.execute(
            "INSERT OR IGNORE INTO agent_prompts (uuid, session_id, ts, text) VALUES (?, ?, ?, ?)",
            (uuid, state.session_id, entry.ts, text),
        )
        if not cursor.rowcount:
            return False  # a prefix replayed into a resumed session's file: already counted
        self.stats.prompts += 1
        state.last_event = "prompt"
        earlier = db.execute(
            "SELECT 1 FROM agent_prompts WHERE session_id = ? AND ts < ? LIMIT 1",
            (state.session_id, entry.ts),
        ).fetchone()
        # A resumed session's file replays its parent's conversation first: its first new
        # prompt follows that conversation, and may correct it.
        first = earlier is None and not state.replay_seen
        self.remember_user_rules(state.session_id, text, entry.ts, first=first)
        state.turn = Turn(
            uuid=uuid, session_id=state.session_id, started_at=entry.ts, user_message=text
        )
        return True

    def remember_user_rules(
        self, session_id: str, text: str, ts: float, *, first: bool = False
    ) -> None:
        """Corrections and rules the user stated become long-term memories: the per-prompt
        ledger is pruned by age (`timeline.max_age_days`), what the user taught is not."""
        from memory_core.agents.digest import axioms_in, is_correction, own_words

        own = own_words(text)  # not what the user pasted, nor an agent's template
        decided = decisions_in(own)
        found = [rule for rule in axioms_in(text) if not any(rule in d for d in decided)]
        if is_correction(text, first=first):
            found = [" ".join(own.split())[:600], *found]
        for item in dict.fromkeys(found):
            self.memories.append((session_id, item, ts, "preference"))
        for sentence in decided:
            self.memories.append((session_id, sentence, ts, "decision"))

    def assistant(self, db: sqlite3.Connection, state: _SessionState, entry: Entry) -> None:
        turn = state.turn if not entry.sidechain else None
        if not entry.sidechain:
            state.last_event = "tool_call" if entry.tool_uses else "reply"
        if entry.message_key and entry.usage is not None:
            self.usage(db, state, entry, turn)
        if turn is not None:
            if entry.text:
                turn.assistant_parts.append(entry.text)
            turn.ended_at = entry.ts
            if entry.stop_reason:
                turn.last_stop_reason = entry.stop_reason
        for use in entry.tool_uses:
            call = ToolCall(
                use.id, state.session_id, use.name, use.input, entry.ts, entry.sidechain
            )
            self.calls[use.id] = call
            # Stored with its outcome when the result comes in this chunk (one statement, not
            # two), or at the end of the chunk for a later run to find (`note_pending_calls`).
            self.unnoted.setdefault(use.id, (call, state.cwd or entry.cwd))
            if turn is not None:
                # Summarised when its result is claimed (`tool_results`), from the call itself: a
                # summary cut from the ledger's copy of a long command (already cut to 1,000
                # characters) would misstate how much was cut.
                turn.tool_calls.append({"id": use.id, "tool": use.name})
        for use in entry.tool_uses:
            early = self.early_results.pop(use.id, None)
            if early is not None:
                result_entry, result = early
                self.tool_results(db, state, replace(result_entry, tool_results=[result]))

    def usage(
        self, db: sqlite3.Connection, state: _SessionState, entry: Entry, turn: Turn | None
    ) -> None:
        usage = entry.usage
        assert usage is not None and entry.message_key is not None
        # The lines of one response come one after another: remember what this run stored
        # instead of asking the database again for each of them.
        existing = self.messages.get(entry.message_key)
        values = (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_creation_tokens,
            usage.cache_read_tokens,
        )
        if existing is None:
            if entry.message_key not in self.read_messages:
                self.read_stored_messages(db, {entry.message_key})
            existing = self.stored_messages.get(entry.message_key)
        if existing is None:
            # A response nobody stored: this run records it (written with the chunk's others).
            self.new_message_rows.append(
                (
                    entry.message_key,
                    state.session_id,
                    turn.uuid if turn else None,
                    entry.ts,
                    entry.model,
                    int(entry.sidechain),
                    *values,
                )
            )
            self.stats.assistant_messages += 1
            self.new_messages.add(entry.message_key)
            self.messages[entry.message_key] = (entry.sidechain, values)
            _add(state.deltas, entry.sidechain, values, 1)
            return
        was_sidechain, old = existing
        if entry.sidechain and not was_sidechain:
            return  # a subagent's replay of the parent's response: the parent's copy stands
        if (was_sidechain and not entry.sidechain) or usage.total > sum(old):
            self.messages[entry.message_key] = (entry.sidechain, values)
            _add(state.deltas, was_sidechain, old, -1)
            _add(state.deltas, entry.sidechain, values, 1)
            # Written with the chunk (or before a turn's tokens are summed): the last line of a
            # response raises its output count, so nearly every response would cost a statement.
            pending = self.message_updates.get(entry.message_key)
            turn_uuid = turn.uuid if turn else None
            if pending is not None and pending[1] is not None:
                turn_uuid = pending[1]  # the first turn named wins, as COALESCE keeps it
            self.message_updates[entry.message_key] = ((*values, int(entry.sidechain)), turn_uuid)

    def read_ledgers(self, db: sqlite3.Connection, entries: list[Entry]) -> None:
        """What the usage and tool-call ledgers hold of the responses and calls of `entries`."""
        self.read_stored_messages(
            db, {e.message_key for e in entries if e.message_key and e.usage is not None}
        )
        ids = {use.id for e in entries for use in e.tool_uses}
        ids.update(result.tool_use_id for e in entries for result in e.tool_results)
        self.read_stored_calls(db, ids)

    def read_stored_messages(self, db: sqlite3.Connection, keys: set[str]) -> None:
        keys = keys - self.read_messages - self.messages.keys()
        self.read_messages.update(keys)
        for part in _parts(sorted(keys)):
            for row in db.execute(
                "SELECT message_key, sidechain, input_tokens, output_tokens, cache_creation_tokens, "
                f"cache_read_tokens FROM agent_messages WHERE message_key IN ({_marks(part)})",
                part,
            ):
                self.stored_messages[row[0]] = (
                    bool(row[1]),
                    (int(row[2]), int(row[3]), int(row[4]), int(row[5])),
                )

    def read_stored_calls(self, db: sqlite3.Connection, ids: set[str]) -> None:
        ids = ids - self.read_calls
        self.read_calls.update(ids)
        for part in _parts(sorted(ids)):
            for row in db.execute(
                f"SELECT tool_use_id, ok FROM agent_tool_uses WHERE tool_use_id IN ({_marks(part)})",
                part,
            ):
                self.stored_calls.setdefault(row[0], row[1])

    def claim(
        self,
        db: sqlite3.Connection,
        call: ToolCall,
        outcome: ToolOutcome | None,
        cwd: str | None,
        *,
        noted: bool = False,
    ) -> bool:
        """`record.note_tool_use` (`outcome` None) or `record.claim_outcome` against the ledger
        as read for the chunk: True when this run records the call, or its outcome, first."""
        tool_use_id = call.tool_use_id
        if tool_use_id not in self.read_calls:
            self.read_stored_calls(db, {tool_use_id})
        if tool_use_id not in self.stored_calls:
            if noted:
                return False  # (its row is gone: nothing to record the outcome on)
            row = record.tool_use_row(call, self.store.root, cwd, outcome)
            self.new_call_rows[tool_use_id] = row
            self.stored_calls[tool_use_id] = row[7]
            return True
        if outcome is None or self.stored_calls[tool_use_id] is not None:
            return False
        ok, error = int(outcome.ok), record.stored_error(outcome)
        self.stored_calls[tool_use_id] = ok
        new_row = self.new_call_rows.get(tool_use_id)
        if new_row is not None:
            new_row[7], new_row[8] = ok, error
        else:
            db.execute(
                "UPDATE agent_tool_uses SET ok = ?, error = ? WHERE tool_use_id = ? AND ok IS NULL",
                (ok, error, tool_use_id),
            )
        return True

    def write_ledger_rows(self, db: sqlite3.Connection) -> None:
        """The responses and calls this run recorded first, in the order it met them."""
        if self.new_message_rows:
            db.executemany(
                "INSERT INTO agent_messages (message_key, session_id, turn_uuid, ts, model, sidechain, "
                "input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self.new_message_rows,
            )
            self.new_message_rows.clear()
        if self.new_call_rows:
            db.executemany(
                "INSERT INTO agent_tool_uses (tool_use_id, session_id, ts, tool, sidechain, "
                "path, command, ok, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                list(self.new_call_rows.values()),
            )
            self.new_call_rows.clear()

    def write_message_updates(self, db: sqlite3.Connection) -> None:
        self.write_ledger_rows(db)
        if not self.message_updates:
            return
        db.executemany(
            "UPDATE agent_messages SET input_tokens = ?, output_tokens = ?, cache_creation_tokens = ?, "
            "cache_read_tokens = ?, sidechain = ?, turn_uuid = COALESCE(turn_uuid, ?) WHERE message_key = ?",
            [(*row, turn_uuid, key) for key, (row, turn_uuid) in self.message_updates.items()],
        )
        self.message_updates.clear()

    def tool_results(self, db: sqlite3.Connection, state: _SessionState, entry: Entry) -> bool:
        """Record the results' outcomes; True when one of them was recorded first here."""
        any_claimed = False
        for result in entry.tool_results:
            call = self.calls.pop(result.tool_use_id, None)
            if call is None:
                self.write_ledger_rows(db)  # (a call this run recorded is read back too)
                row = record.pending_call(db, result.tool_use_id)
                if row is None:
                    # The call comes later in the file (Claude Code sometimes writes a result
                    # before the call's line), or was in a part of the file we never saw.
                    self.early_results[result.tool_use_id] = (entry, result)
                    continue
                call = ToolCall(
                    result.tool_use_id,
                    row["session_id"],
                    row["tool"],
                    _input_from_row(row),
                    float(row["ts"]),
                    bool(row["sidechain"]),
                )
            failure = failures.classify(
                is_error=result.is_error,
                text=result.text,
                structured=result.structured,
                interrupted=result.interrupted,
            )
            failed = failure is not None
            error = None
            if failure is not None:
                error = result.structured if isinstance(result.structured, str) else result.text
                error = error or failure.kind
            interrupted = failure is not None and failure.kind == "interrupted"
            outcome = ToolOutcome(
                ok=not failed,
                error=error,
                interrupted=interrupted,
                structured=result.structured,
                exit_code=failure.exit_code if failure is not None else 0,
            )
            if not entry.sidechain:
                state.last_event = "interrupt" if interrupted else "tool_result"
            # A call of this chunk is stored now, with its outcome and as its first tool_use line
            # gave it (a replay of the line may follow); one of an earlier chunk was stored then.
            unnoted = self.unnoted.pop(result.tool_use_id, None)
            if unnoted is None:
                claimed = self.claim(db, call, outcome, None, noted=True)
            else:
                noted_call, cwd = unnoted
                claimed = self.claim(db, noted_call, outcome, cwd)
            in_turn = False
            if state.turn is not None and not entry.sidechain:
                for item in state.turn.tool_calls:
                    if item.get("id") == result.tool_use_id:
                        item["ok"] = not failed
                        if claimed:
                            # Handed to the session with its turn, in one transaction.
                            item["claimed"] = True
                            in_turn = True
                        if "summary" not in item:
                            # Shown in the turn whoever recorded the call first (a hook or this
                            # ingest); stored in agent_turns with the open turn, so redacted.
                            rel = record.workspace_path(
                                self.store.root,
                                record.file_path_of(call.input),
                                state.cwd or entry.cwd,
                            )
                            item["summary"] = clean(record.tool_summary(call, rel), 300)
            if claimed:
                any_claimed = True
                # Counted where its outcome is first recorded, as `session metrics` counts it: a
                # replayed line, a copy of the file or a hook that saw the call first adds nothing.
                self.stats.tool_calls += 1
                if failed:
                    self.stats.failures += 1  # interrupted and rejected calls failed, as in metrics
                if interrupted:
                    self.stats.interrupted += 1
                self.pending_effects.append((call, outcome, state.cwd or entry.cwd, not in_turn))
        return any_claimed

    def note_pending_calls(self, db: sqlite3.Connection) -> None:
        """Store the calls of this chunk still waiting for their result."""
        for call, cwd in self.unnoted.values():
            self.claim(db, call, None, cwd)
        self.unnoted.clear()

    def write_figures(self, db: sqlite3.Connection) -> None:
        """This chunk's token and message figures, times and last event into agent_sessions."""
        self.note_pending_calls(db)
        self.write_message_updates(db)
        assignments = ", ".join(f"{column} = {column} + ?" for column in TOKEN_COLUMNS)
        # A session that counted something in this run has its times from those lines (`handle`
        # gives a line without a time the previous line's, or now); one this run created starts
        # at its first such line, not at the replayed lines of a resumed session's file.
        for state in self.sessions.values():
            span = state.span()
            first, last = span if span is not None else (None, None)
            created = state.created_ts is not None and span is not None
            db.execute(
                f"UPDATE agent_sessions SET {assignments}, "
                "last_seen = CASE WHEN ? THEN ? ELSE MAX(last_seen, COALESCE(?, last_seen)) END, "
                "started_at = CASE WHEN ? THEN ? ELSE MIN(started_at, COALESCE(?, started_at)) END, "
                "model = COALESCE(?, model), last_event = COALESCE(?, last_event) "
                "WHERE session_id = ?",
                (
                    *state.deltas,
                    created,
                    last,
                    last,
                    created,
                    first,
                    first,
                    state.model,
                    state.last_event,
                    state.session_id,
                ),
            )
            state.deltas = [0] * len(TOKEN_COLUMNS)
            state.last_event = None

    def end_of_input(self, db: sqlite3.Connection, *, flush: bool) -> None:
        """Close turns that are over, or all of them on `flush` (the end of the transcript).

        Real transcripts carry `stop_reason: null` on every line, so a turn ends at the next
        prompt, at the Stop or SessionEnd hook, or here at the end of an ingested transcript;
        a stop reason written by an older build only ends it sooner.
        """
        for state in self.sessions.values():
            if state.turn is None:
                continue
            if flush or state.turn.last_stop_reason in _STOP_REASONS_THAT_END_A_TURN:
                self.finish_turn(db, state, None)
            else:
                record.save_open_turn(db, state.turn)

    def run_effects(self) -> None:
        from memory_core import sessions

        waiting = []
        for sid in self.new_sessions:
            state = self.sessions[sid]
            span = state.span()
            if not state.seen_new and not self.final:
                waiting.append(sid)  # only replayed lines so far: its start is still to come
                continue
            ts = span[0] if span is not None else state.created_ts
            record.start_session(self.store, sid, agent=self.agent, ts=ts or clock.now())
        self.new_sessions = waiting
        for state in self.sessions.values():
            span = state.span()
            if span is None or state.session_id in waiting:
                continue
            # Start and last activity from the transcript's own times, whatever order the
            # files (main transcript, subagents) are read in.
            sessions.observe_times(self.store, state.session_id, first_ts=span[0], last_ts=span[1])
        changes: list[dict[str, Any]] = []
        activity = sessions.Activity(self.store)
        for call, outcome, cwd, record_call in self.pending_effects:
            after = record.reconstructed_after(call, outcome.structured) if outcome.ok else None
            record.apply_outcome(
                self.store,
                call,
                outcome,
                settings=self.settings,
                cwd=cwd,
                after_text=after,
                record_call=record_call,
                file_changes=changes,
                activity=activity,
            )
        self.pending_effects.clear()
        activity.write()
        if self.memories:
            from memory_core import log, memory
            from memory_core.errors import EngramError
        for sid, text, ts, kind in self.memories:
            try:
                memory.add(
                    self.store,
                    text,
                    type=kind,
                    tags=["user-rule" if kind == "preference" else "user-decision"],
                    explicit=True,  # an explicit preference never decays away
                    session_id=sid,
                    agent=self.agent,
                    provenance={"source": "transcript", "session_id": sid},
                    now=ts,
                )
            except EngramError as exc:  # a text memory refuses: the ingest goes on
                log.write(
                    self.store.root, "warning", "ingest: a user rule was not remembered", exc=exc
                )
        self.memories.clear()
        record.record_file_changes(self.store, changes, now=clock.now())
        record.apply_turns(self.store, self.finished_turns, self.settings, now=self.now)
        self.finished_turns.clear()


def _add(deltas: list[int], sidechain: bool, values: tuple[int, int, int, int], sign: int) -> None:
    base = 5 if sidechain else 0
    for index, value in enumerate(values):
        deltas[base + index] += sign * value
    deltas[base + 4] += sign


# Keys per `IN (...)` read: under SQLite's oldest limit of 999 variables.
_KEYS_PER_READ = 900


def _parts(keys: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(keys), _KEYS_PER_READ):
        yield keys[start : start + _KEYS_PER_READ]


def _marks(keys: list[str]) -> str:
    return ", ".join("?" * len(keys))


def _input_from_row(row: sqlite3.Row) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if row["command"]:
        data["command"] = row["command"]
    if row["path"]:
        data["file_path"] = str(row["path"])
    return data


def sessions_of_file(store: Store, key: str) -> list[str]:
    """The sessions an ingested file was read for (its offset's row; `key`: its resolved path)."""
    rows = store.query(
        "SELECT session_id FROM agent_ingest_offsets WHERE path = ? AND session_id IS NOT NULL",
        (key,),
    )
    return [str(r["session_id"]) for r in rows]


def flush_session(
    store: Store, session_id: str, *, ended_at: float | None = None
) -> list[FinishedTurn]:
    """Close the session's open turn (session end) and hand it to sessions."""
    finished: list[FinishedTurn] = []
    with store.transaction() as db:
        turn = record.load_open_turn(db, session_id)
        if turn is not None:
            done = record.close_turn(db, turn, ended_at)
            if done is not None:
                finished.append(done)
    # A session said to end at `ended_at` (a hook's SessionEnd) ends now, as far as its turns go.
    record.apply_turns(store, finished, now=ended_at)
    return finished


# Writes of an ingest that are committed together: files, or settled sessions, one after another
# in one transaction (each one's own transactions are savepoints inside it) until it has been
# open this long. Each commit writes the pages it changed to the write-ahead log again (the
# session rows, the indexes), and a commit per file or per session was a tenth of an ingest's
# time; a live session's hook waits for the lock no longer than this.
BATCH_SECONDS = 0.25


class WriteBatches:
    """Transactions of at most BATCH_SECONDS around units of work: `next()` before each unit
    commits the batch when its time is up and begins the next one. Leaving the block commits
    the last batch, or on an error rolls it back: a unit is never half committed, and the
    offsets of an ingested file are in the same commit as its rows."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._open: Any = None
        self._since = 0.0

    def next(self) -> None:
        if self._open is not None and time.monotonic() - self._since < BATCH_SECONDS:
            return
        self._close(None, None, None)
        self._open = self.store.transaction()
        self._open.__enter__()
        self._since = time.monotonic()

    def _close(self, *exc: Any) -> None:
        current, self._open = self._open, None
        if current is not None:
            current.__exit__(*exc)

    def __enter__(self) -> WriteBatches:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._close(*exc)


# Silence after which an ingested session that recorded no end is taken as over.
SETTLED_AFTER_SECONDS = 30 * 60


def count_unanswered_calls(store: Store, session_id: str) -> int:
    """Count the session's tool calls that never got a result, once it is over; returns how many.

    The agent asked for them (a call cut short by the end of the session, a transcript that
    stops while a command runs): they are tool calls of the session. Nobody knows how they
    went, so none is counted as failed. Only at the end of a session: while it runs, the result
    may still come, and its outcome (a failure to learn from, a file changed) is what counts.
    """
    from memory_core import sessions

    rows = store.query(
        "SELECT tool_use_id, tool, ts, path, command FROM agent_tool_uses "
        "WHERE session_id = ? AND ok IS NULL ORDER BY ts",
        (session_id,),
    )
    if not rows:
        return 0
    activity = sessions.Activity(store)
    counted = 0
    with store.transaction() as db:
        for row in rows:
            cursor = db.execute(
                "UPDATE agent_tool_uses SET ok = 1 WHERE tool_use_id = ? AND ok IS NULL",
                (row["tool_use_id"],),
            )
            if cursor.rowcount != 1:
                continue  # a hook or another ingest recorded its outcome meanwhile
            summary = row["command"] or row["path"] or row["tool"]
            activity.tool_call(
                session_id, tool=str(row["tool"]), ok=True, summary=summary, ts=float(row["ts"])
            )
            if row["command"]:
                # A command the agent ran: how it ended is unknown (no exit code, not failed).
                activity.command(session_id, str(row["command"]), ts=float(row["ts"]))
            counted += 1
    activity.write()
    return counted


def settle_sessions(
    store: Store,
    session_ids: Iterable[str],
    *,
    now: float | None = None,
    unanswered: list[int] | None = None,
    notes: list[tuple[str, float]] | None = None,
) -> int:
    """End the ingested sessions whose transcript stopped long ago; returns how many.

    A transcript whose last word is the agent's reply belongs to a session that finished
    (`end_reason` "finished"); one that stops anywhere else is "stopped": it ended, but nobody
    recorded how. Neither is called a crash: there is no evidence of one. The tool calls still
    waiting for a result are counted then (`count_unanswered_calls`; how many goes into
    `unanswered` when given). Sessions are settled in batches of one commit (`WriteBatches`).

    `notes`: when given, each settled session's vault note is not rewritten here; its id and
    the time to write it with (`sessions.refresh_note(store, id, at)`) are added to the list.
    """
    ts = clock.now() if now is None else now
    settled = 0
    with WriteBatches(store) as batches:
        for sid in dict.fromkeys(session_ids):
            due = _settling(store, sid, ts)
            if due is None:
                continue  # a read only: a session not due takes no write lock
            batches.next()
            counted = _settle(store, sid, *due, note=notes is None)
            if notes is not None:
                notes.append((sid, due[0]))
            if unanswered is not None:
                unanswered.append(counted)
            settled += 1
    return settled


def _settling(store: Store, sid: str, ts: float) -> tuple[float, str] | None:
    """(last seen, last event) of a session to settle at `ts`; None when it is not due."""
    row = store.query_one(
        "SELECT last_seen, last_event, ended_at FROM agent_sessions WHERE session_id = ?",
        (sid,),
    )
    if row is None or row["ended_at"] is not None:
        return None
    last_seen = float(row["last_seen"])
    if ts - last_seen < SETTLED_AFTER_SECONDS:
        return None
    last_event = row["last_event"]
    if last_event is None:
        # Fed by hooks alone: a turn UserPromptSubmit opened and no Stop closed is the
        # evidence of a request left unanswered; without one, the last turn was answered.
        open_turn = store.query_one(
            "SELECT 1 FROM agent_turns WHERE session_id = ? AND recorded = 0 LIMIT 1", (sid,)
        )
        last_event = "prompt" if open_turn is not None else "reply"
    return last_seen, str(last_event)


def _settle(store: Store, sid: str, last_seen: float, last_event: str, *, note: bool = True) -> int:
    """End the session: its end, last turn, unanswered calls and closing in one transaction
    (each of theirs a savepoint inside it); its vault note rewritten too unless `note` is
    false (the caller writes it later). Returns the unanswered calls counted."""
    from memory_core import sessions

    reason = "finished" if last_event == "reply" else "stopped"
    with store.transaction() as db:
        db.execute(
            "UPDATE agent_sessions SET ended_at = ?, end_reason = ?, last_event = ? "
            "WHERE session_id = ? AND ended_at IS NULL",
            (last_seen, reason, last_event, sid),
        )
        flush_session(store, sid, ended_at=None)
        counted = count_unanswered_calls(store, sid)
        sessions.end(
            store,
            sid,
            reason="completion" if reason == "finished" else "stopped",
            now=last_seen,
            note=note,
        )
    return counted


def _read_head(path: Path, size: int = HEAD_BYTES) -> str:
    """What recognises a file: `<n>:<sha256 of its first n bytes>`, n up to HEAD_BYTES. A
    hash, not the bytes: a transcript's first line is a prompt, which may hold a secret."""
    with path.open("rb") as handle:
        head = handle.read(size)
    return f"{len(head)}:{hashlib.sha256(head).hexdigest()}"


def _same_file(path: Path, previous_head: str, head: str) -> bool:
    """Whether the file still begins as it did when `previous_head` was taken (it may have
    grown since). An empty previous head (a store from before heads were hashed) is trusted."""
    if not previous_head or previous_head == head:
        return True
    length, _, _digest = previous_head.partition(":")
    if not length.isdigit() or int(length) >= int(head.partition(":")[0]):
        return False
    return _read_head(path, int(length)) == previous_head


# A file whose last change is older than this has stopped growing (Claude Code appends a line
# and its newline in one write; a line without one stays so only if the writer stopped).
QUIET_SECONDS = 2.0


def _is_finished_last_line(tail: bytes, path: Path, *, flush: bool) -> bool:
    """Whether a last line without a final newline is whole and will not grow: it is a JSON
    object, and the session ended (`flush`) or the file stopped growing. Files copied, or
    written by other tools that store sessions, often lack the final newline."""
    if not flush:
        try:
            if time.time() - path.stat().st_mtime < QUIET_SECONDS:
                return False
        except OSError:
            return False
    try:
        return isinstance(_decode_line(tail.strip()), dict)
    except ValueError:
        return False


def ingest_file(
    store: Store,
    path: str | os.PathLike[str],
    *,
    settings: Any = None,
    flush: bool = True,
    progress: Any = None,
    now: float | None = None,
) -> IngestStats:
    """Ingest what was appended to `path` since the last run.

    `flush` (the default) closes the open turn at the end: the end of an ingested transcript
    ends its turn, since real transcripts carry no stop reason to say so. Hooks that fire while
    the agent is still answering pass False, and the turn stays open for the next run.
    `progress(bytes_done)` is called per chunk. `now` is the caller's present (a hook's time):
    turns that ended long before it are history, and take no automatic checkpoint.
    """
    file_path = Path(path).expanduser().resolve()
    key = str(file_path)
    stats = IngestStats(path=key)
    size = file_path.stat().st_size
    head = _read_head(file_path)
    row = store.query_one("SELECT offset, head FROM agent_ingest_offsets WHERE path = ?", (key,))
    offset = 0
    if row is not None:
        offset = int(row["offset"])
        # A file shorter than what we read, or with a different beginning, was replaced:
        # read it again from the start (the ledgers keep what was already counted from counting twice).
        if size < offset or not _same_file(file_path, str(row["head"]), head):
            offset = 0
            stats.restarted = True
    if offset >= size:
        if flush:
            for sid in sessions_of_file(store, key):
                # A read first: nothing new and no open turn (the usual case) takes no write lock.
                if store.query_one(
                    "SELECT 1 FROM agent_turns WHERE session_id = ? AND recorded = 0 LIMIT 1",
                    (sid,),
                ):
                    stats.turns += len(flush_session(store, sid))
        return stats
    if settings is None:
        from memory_core import config

        # Loaded once here: gotcha tracking would otherwise read the settings per failure.
        settings = config.load(store.root)
    run = _Run(store, file_path, stats, settings, now=now)
    fast_decoder_for(size - offset)
    with file_path.open("rb") as handle:
        handle.seek(offset)
        data = handle.read(size - offset)  # offset < size here
    # Only whole lines: Claude Code writes asynchronously and the last line may be half there.
    end = data.rfind(b"\n") + 1
    body = data[:end]
    position = offset
    lines = body.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    tail = data[end:]
    if tail.strip() and _is_finished_last_line(tail, file_path, flush=flush):
        lines.append(tail)
    for start in range(0, max(len(lines), 1), CHUNK_LINES):
        chunk = lines[start : start + CHUNK_LINES]
        last_chunk = start + CHUNK_LINES >= len(lines)
        with cyclic_gc.paused(), store.transaction() as db:
            stats.lines += len(chunk)
            entries = []
            for line in chunk:
                # The last line may have no newline (`_is_finished_last_line`).
                position = min(position + len(line) + 1, size)
                if not line or line.isspace():  # isspace: no copy of a long line, as strip makes
                    continue
                if not _MAY_BE_CONVERSATION.search(line):
                    continue  # progress, snapshots, queue operations, titles: never decoded
                try:
                    obj = _decode_line(line)
                except ValueError:
                    stats.malformed += 1
                    continue
                entry = parse_line(obj)
                if entry is not None:
                    entries.append(entry)
            run.read_ledgers(db, entries)
            for entry in entries:
                run.handle(db, entry)
            if last_chunk:
                run.end_of_input(db, flush=flush)
            run.write_figures(db)
            db.execute(
                "INSERT INTO agent_ingest_offsets (path, agent, session_id, offset, size, head, lines, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
                # Two hooks may ingest the same file at once: never move back over lines the
                # other already read, unless the file was replaced (its head changed).
                "offset = CASE WHEN head = excluded.head THEN MAX(offset, excluded.offset) ELSE excluded.offset END, "
                "size = excluded.size, head = excluded.head, lines = lines + excluded.lines, "
                "updated_at = excluded.updated_at, session_id = COALESCE(excluded.session_id, session_id)",
                (
                    key,
                    AGENT,
                    stats.sessions[0] if stats.sessions else None,
                    position,
                    size,
                    head,
                    len(chunk),
                    clock.now(),
                ),
            )
            # What the chunk means to the other areas (sessions, file evolution, gotchas), in
            # the chunk's own commit: each of their calls is a savepoint inside it, and an
            # interruption leaves neither the chunk's rows nor their effects, so that a re-run
            # reads the chunk again and records all of it once (a commit of its own let a crash
            # between the two keep the rows, counted, without their effects).
            run.final = last_chunk
            run.run_effects()
        if progress is not None:
            progress(position - offset)
    stats.bytes = position - offset
    return stats


def ingest_paths(
    store: Store,
    paths: Iterable[Path],
    *,
    settings: Any = None,
    flush: bool = True,
    progress: Any = None,
) -> list[IngestStats]:
    from memory_core.gotchas.records import exports_deferred

    results = []
    with exports_deferred(store):
        for path in paths:
            results.append(
                ingest_file(store, path, settings=settings, flush=flush, progress=progress)
            )
    return results
