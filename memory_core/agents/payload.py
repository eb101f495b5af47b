"""Hook input: the JSON an agent writes on a hook's stdin, read into one tolerant shape.

Claude Code and Gemini CLI send similar objects under different names (Gemini's AfterTool is
Claude's PostToolUse, its `run_shell_command` is Claude's Bash). `parse` maps both onto Claude's
vocabulary so the rest of engram handles one set of events and tools. Unknown fields (a newer
agent) are kept in `raw` and otherwise ignored; a field of the wrong type reads as missing.
"""

from __future__ import annotations

import array
import itertools
import json
import re

from memory_core.errors import UsageError

TYPE_CHECKING = False  # every hook parses its payload here: typing is for the type checker only
if TYPE_CHECKING:
    from typing import Any

AGENTS = ("claude-code", "gemini", "codex")

# Gemini CLI event -> the Claude Code event engram handles it as (`gemini hooks migrate` mapping).
_GEMINI_EVENTS = {
    "beforeagent": "UserPromptSubmit",
    "afteragent": "Stop",
    "beforetool": "PreToolUse",
    "aftertool": "PostToolUse",
    "precompress": "PreCompact",
    "sessionstart": "SessionStart",
    "sessionend": "SessionEnd",
    "notification": "Notification",
}

# Gemini CLI tool -> Claude Code tool.
_GEMINI_TOOLS = {
    "run_shell_command": "Bash",
    "write_file": "Write",
    "replace": "Edit",
    "read_file": "Read",
    "read_many_files": "Read",
    "glob": "Glob",
    "grep": "Grep",
    "search_file_content": "Grep",
    "grep_search": "Grep",  # its name since 0.4x
    "google_web_search": "WebSearch",
    "web_fetch": "WebFetch",
    "ls": "LS",
    "list_directory": "LS",
}

# Claude Code's events, so `engram hook claude-code precompact` finds `PreCompact`.
CLAUDE_EVENTS = (
    "SessionStart",
    "Setup",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "MessageDisplay",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "Stop",
    "StopFailure",
    "TeammateIdle",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "PreCompact",
    "PostCompact",
    "Elicitation",
    "ElicitationResult",
    "SessionEnd",
)
_CLAUDE_BY_LOWER = {name.lower(): name for name in CLAUDE_EVENTS}

_GEMINI_EXIT = re.compile(r"Exit Code:\s*(-?\d+)", re.IGNORECASE)


def agent_name(text: str) -> str:
    """The canonical agent name for what a user typed (`claude`, `Claude-Code`, `gemini`)."""
    key = text.strip().lower().replace("_", "-")
    if key in ("claude", "claude-code", "claudecode"):
        return "claude-code"
    if key in ("gemini", "gemini-cli"):
        return "gemini"
    if key in ("codex", "codex-cli", "openai-codex"):
        return "codex"
    raise UsageError(f"unknown agent {text!r}", hint="use claude-code, gemini or codex")


def canonical_event(agent: str, event: str) -> str:
    """The event name engram handles, whatever case it was typed in; unknown names pass through."""
    key = event.strip().replace("-", "").replace("_", "").lower()
    if agent == "gemini" and key in _GEMINI_EVENTS:
        return _GEMINI_EVENTS[key]
    return _CLAUDE_BY_LOWER.get(key, event.strip())


def canonical_tool(agent: str, tool: str) -> str:
    if agent == "gemini":
        return _GEMINI_TOOLS.get(tool, tool)
    return tool


def scrub(value: Any) -> Any:
    """`value` with lone UTF-16 surrogates replaced (SQLite and UTF-8 files cannot hold them).

    They are real: Claude Code middle-truncates long tool errors, which can cut an emoji's
    surrogate pair in two, and JSON escapes carry the half that is left.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {scrub(key): scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub(item) for item in value]
    return value


# Deeper than any real payload (a few levels) and than the code that walks one can recurse.
MAX_DEPTH = 200


_BRACKETS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")


def _depth_bound(text: str | bytes) -> int:
    """An upper bound of how deep the JSON in `text` nests, in C: the deepest running count of
    brackets (brackets inside strings only raise it). Below the limit, nothing is walked."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    steps = array.array("b", raw.translate(_BRACKETS, _NOT_BRACKETS))
    return max(itertools.accumulate(steps), default=0)


def _nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests deeper than `limit` (a stack over containers only)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _may_hold_surrogates(text: str | bytes) -> bool:
    """Whether decoded JSON can hold a surrogate at all: only a `\\ud800`-`\\udfff` escape (or
    one in a str given) makes one, UTF-8 bytes cannot; a payload without one is not walked
    value by value (`scrub` of 2 million small items took 6 s of a hook)."""
    if isinstance(text, str):
        if _has_surrogate_char(text):
            return True
        text = text.encode("utf-8")
    return _SURROGATE_ESCAPE.search(text) is not None


def _has_surrogate_char(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _bool(value: Any) -> bool:
    return value is True


class HookPayload:
    """One hook event, in Claude Code's vocabulary whatever agent sent it."""

    __slots__ = (
        "agent",
        "agent_id",
        "agent_type",
        "compact_summary",
        "custom_instructions",
        "cwd",
        "error",
        "event",
        "is_interrupt",
        "last_assistant_message",
        "model",
        "prompt",
        "prompt_response",
        "raw",
        "reason",
        "session_id",
        "source",
        "tool_input",
        "tool_name",
        "tool_response",
        "tool_use_id",
        "transcript_path",
        "trigger",
    )

    def __init__(
        self,
        agent: str,
        event: str,
        *,
        session_id: str | None = None,
        transcript_path: str | None = None,
        cwd: str | None = None,
        tool_name: str | None = None,
        tool_input: dict[str, Any] | None = None,
        tool_response: Any = None,
        tool_use_id: str | None = None,
        error: str | None = None,
        is_interrupt: bool = False,
        prompt: str | None = None,
        prompt_response: str | None = None,
        source: str | None = None,
        trigger: str | None = None,
        reason: str | None = None,
        last_assistant_message: str | None = None,
        compact_summary: str | None = None,
        custom_instructions: str | None = None,
        model: str | None = None,
        agent_id: str | None = None,
        agent_type: str | None = None,
        raw: dict[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.event = event
        self.session_id = session_id
        self.transcript_path = transcript_path
        self.cwd = cwd
        self.tool_name = tool_name
        self.tool_input: dict[str, Any] = {} if tool_input is None else tool_input
        self.tool_response = tool_response
        self.tool_use_id = tool_use_id
        self.error = error
        self.is_interrupt = is_interrupt
        self.prompt = prompt
        self.prompt_response = prompt_response
        self.source = source
        self.trigger = trigger
        self.reason = reason
        self.last_assistant_message = last_assistant_message
        self.compact_summary = compact_summary
        self.custom_instructions = custom_instructions
        self.model = model
        self.agent_id = agent_id
        self.agent_type = agent_type
        self.raw: dict[str, Any] = {} if raw is None else raw

    def __repr__(self) -> str:
        return f"HookPayload({self.agent!r}, {self.event!r}, session_id={self.session_id!r})"

    @property
    def failed(self) -> bool:
        """True when this tool event reports a failure (Claude's PostToolUseFailure, Gemini's error)."""
        return self.error is not None

    @property
    def in_subagent(self) -> bool:
        return self.agent_id is not None


def _gemini_tool_error(response: Any) -> str | None:
    """Gemini reports a failed tool in `tool_response.error`, a failed shell command by its exit code."""
    data = _dict(response)
    error = data.get("error")
    if isinstance(error, dict):
        error = error.get("message") or json.dumps(error)
    if isinstance(error, str) and error:
        return error
    content = data.get("llmContent")
    if isinstance(content, str):
        match = _GEMINI_EXIT.search(content)
        if match and match.group(1) != "0":
            return content
    return None


# The longest string engram keeps of a payload: head and tail of this many bytes each. Stored
# text is cut much shorter (record.MAX_TEXT characters, head and tail), so nothing stored is
# lost; everything after parsing (scrubbing, redaction, error extraction) then handles at most
# this much per string instead of a 50 MB prompt.
KEEP_BYTES = 32 * 1024
# Only strings longer than this are cut (head + tail + the marker): below it, cutting saves
# nothing worth the copy.
CUT_ABOVE_BYTES = 4 * KEEP_BYTES
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")


def _backslashes_before(raw: bytes, at: int, low: int) -> int:
    run = 0
    while at - run - 1 >= low and raw[at - run - 1] == 0x5C:
        run += 1
    return run


def _safe_cut(raw: bytes, at: int, step: int, low: int, high: int) -> int:
    """Move `at` (by `step`, +1 or -1) inside the string body `raw[low:high]` to a point where
    it may be cut: not inside a UTF-8 character, not inside an escape (`\\"`, `\\u00e9`), not
    between the two escaped halves of a surrogate pair (an emoji)."""
    for _ in range(32):
        if not low < at < high:
            break
        if raw[at] & 0xC0 == 0x80:  # a UTF-8 continuation byte
            at += step
            continue
        if _backslashes_before(raw, at, low) % 2:
            at += step
            continue
        start = raw.rfind(b"\\u", max(low, at - 5), at)
        if start >= 0 and _backslashes_before(raw, start, low) % 2 == 0:
            at += step
            continue
        if (
            at - 6 >= low
            and _HIGH_SURROGATE.fullmatch(raw, at - 6, at)
            and _backslashes_before(raw, at - 6, low) % 2 == 0
        ):
            at += step
            continue
        return at
    return max(low, min(at, high))


# Windows in which string ends are looked for with `bytes.count` (C speed, no copy).
_WINDOW = 1 << 20
_EXACT = 4096


def _no_delimiter(raw: bytes, low: int, high: int) -> bool:
    """True when `raw[low:high]`, inside a string, surely holds no closing quote.

    Every quote there is then preceded by exactly one backslash (an escaped quote): as many
    `\\"` as `"`, and no `\\\\"` (an escaped backslash, then perhaps a real quote)."""
    quotes = raw.count(b'"', low, high)
    if quotes == 0:
        return True
    if raw.count(b'\\"', max(0, low - 1), high) != quotes:
        return False
    return raw.count(b'\\\\"', max(0, low - 2), high) == 0


def _first_delimiter(raw: bytes, low: int, high: int, body_start: int) -> int:
    """The first closing quote in `raw[low:high]` (a string opened at `body_start`), or -1."""
    if high - low <= _EXACT:
        at = raw.find(b'"', low, high)
        while at >= 0:
            if _backslashes_before(raw, at, body_start) % 2 == 0:
                return at
            at = raw.find(b'"', at + 1, high)
        return -1
    middle = (low + high) // 2
    if not _no_delimiter(raw, low, middle):
        found = _first_delimiter(raw, low, middle, body_start)
        if found >= 0:
            return found
    if _no_delimiter(raw, middle, high):
        return -1
    return _first_delimiter(raw, middle, high, body_start)


def _string_end(raw: bytes, body_start: int) -> int:
    """Where the string whose body starts at `body_start` closes, or -1 (unterminated)."""
    # Most strings are short: look in the first few kB the plain way first.
    found = _first_delimiter(raw, body_start, min(len(raw), body_start + _EXACT), body_start)
    if found >= 0:
        return found
    low = body_start + _EXACT
    while low < len(raw):
        high = min(len(raw), low + _WINDOW)
        if not _no_delimiter(raw, low, high):
            found = _first_delimiter(raw, low, high, body_start)
            if found >= 0:
                return found
        low = high
    return -1


def _may_hold_a_long_string(raw: bytes) -> bool:
    """False when no JSON string in `raw` can be longer than CUT_ABOVE_BYTES. Such a string
    would cover a whole aligned block of half that size, and a block holding a quote with no
    backslash before it holds a string boundary (a string closes or opens there), so no
    string covers it. Two C counts per block; without this, a payload of millions of short
    strings (50 MB of small items) was walked string by string in Python, for seconds."""
    block = CUT_ABOVE_BYTES // 2
    for low in range(0, len(raw), block):
        high = min(len(raw), low + block)
        if raw.count(b'"', low, high) <= raw.count(b'\\"', max(0, low - 1), high):
            return True  # every quote here may be escaped: a long string may run through
    return False


def cut_long_strings(raw: bytes) -> bytes:
    """The payload with every JSON string longer than CUT_ABOVE_BYTES cut to head + tail.

    Done on the bytes, before `json.loads`: parsing a 50 MB prompt alone costs half a second,
    scrubbing and redacting it many more, and the agent waits for the hook. The result is
    valid JSON whenever the input is.

    Nothing walks the bytes in Python: the ends of strings are found by counting quotes and
    escaped quotes in 1 MB windows (`bytes.count`), narrowing down only in a window that holds
    a closing quote. The cost is a few passes of C over the payload.
    """
    if len(raw) <= CUT_ABOVE_BYTES or not _may_hold_a_long_string(raw):
        return raw
    parts: list[bytes] = []
    copied = 0
    position = 0
    while True:
        opening = raw.find(b'"', position)
        if opening < 0:
            break
        body_start = opening + 1
        body_end = _string_end(raw, body_start)
        if body_end < 0:
            break  # an unterminated string: json.loads will say so
        if body_end - body_start > CUT_ABOVE_BYTES:
            head_end = _safe_cut(raw, body_start + KEEP_BYTES, -1, body_start, body_end)
            tail_start = _safe_cut(raw, body_end - KEEP_BYTES, +1, body_start, body_end)
            parts.append(raw[copied:head_end])
            parts.append(f"\\n[... {tail_start - head_end} bytes cut ...]\\n".encode())
            copied = tail_start
        position = body_end + 1
    if not parts:
        return raw
    parts.append(raw[copied:])
    return b"".join(parts)


_HOOK_CONTEXT = re.compile(r"\s*<hook_context>.*?</hook_context>\s*", re.S)


def without_hook_context(text: str) -> str:
    """Gemini CLI's text without the `<hook_context>` blocks it adds: what hooks (engram's own
    SessionStart among them) asked to add, recorded inside the user's prompt and appended to
    tool results."""
    if "<hook_context>" not in text:
        return text
    return _HOOK_CONTEXT.sub("\n\n", text).strip()


def parse(agent: str, event: str, text: str | bytes) -> HookPayload:
    """Read one hook payload; UsageError when it is not a JSON object.

    Long strings are cut (head and tail kept) before anything else looks at them.
    """
    if isinstance(text, str) and len(text) > CUT_ABOVE_BYTES:
        text = text.encode("utf-8", "surrogatepass")
    if isinstance(text, bytes):
        text = cut_long_strings(text)
    try:
        data = json.loads(text) if text.strip() else {}
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"hook input is not JSON: {exc}") from None
    except RecursionError:
        raise UsageError("hook input is not JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise UsageError(f"hook input is a JSON {type(data).__name__}, expected an object")
    if _depth_bound(text) > MAX_DEPTH and _nested_deeper_than(data, MAX_DEPTH):
        # Decoded, but deeper than what reads it later (scrub, redaction) can recurse.
        raise UsageError("hook input is nested too deeply")
    if _may_hold_surrogates(text):
        data = scrub(data)
    named = _str(data.get("hook_event_name"))
    event_name = canonical_event(agent, event or named or "")
    tool = _str(data.get("tool_name"))
    payload = HookPayload(
        agent=agent,
        event=event_name,
        session_id=_str(data.get("session_id")),
        transcript_path=_str(data.get("transcript_path")),
        cwd=_str(data.get("cwd")),
        tool_name=canonical_tool(agent, tool) if tool else None,
        tool_input=_dict(data.get("tool_input")),
        tool_response=data.get("tool_response"),
        tool_use_id=_str(data.get("tool_use_id")),
        is_interrupt=_bool(data.get("is_interrupt")),
        prompt=_str(data.get("prompt")),
        prompt_response=_str(data.get("prompt_response")),
        source=_str(data.get("source")),
        trigger=_str(data.get("trigger")),
        reason=_str(data.get("reason")),
        last_assistant_message=_str(data.get("last_assistant_message")),
        compact_summary=_str(data.get("compact_summary")),
        custom_instructions=_str(data.get("custom_instructions")),
        model=_str(data.get("model")) if not isinstance(data.get("model"), dict) else None,
        agent_id=_str(data.get("agent_id")),
        agent_type=_str(data.get("agent_type")),
        raw=data,
    )
    if event_name == "PostToolUseFailure":
        payload.error = _str(data.get("error")) or "tool failed"
    elif agent == "gemini" and event_name == "PostToolUse":
        payload.error = _gemini_tool_error(payload.tool_response)
    if agent == "gemini" and payload.prompt:
        # Gemini CLI puts what SessionStart hooks added (engram's own context) into the prompt.
        payload.prompt = without_hook_context(payload.prompt)
    elif agent == "codex" and event_name == "PostToolUse":
        from memory_core.agents.codex_outputs import read_hook_response

        # Read as the rollout's output of the same call (whichever records it first, the call
        # is judged the same way): the exit code Codex reports decides.
        outcome = read_hook_response(payload.tool_response)
        payload.tool_response = outcome.structured or {}
        payload.error = (outcome.text or "tool failed") if outcome.failed else None
        payload.is_interrupt = payload.is_interrupt or outcome.interrupted
    return payload
