"""Codex CLI's rollouts, ingested into the same session records as Claude Code's transcripts.

Where: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl` (`CODEX_HOME` is
`~/.codex` unless set), archived ones under `$CODEX_HOME/archived_sessions/`, and `.jsonl.zst`
when Codex compressed one. A rollout names its project only in its first line (`cwd`).

Format, as openai/codex writes it (codex-rs/protocol `RolloutItem`, `RolloutLine`):

- Since September 2025 (the releases after 0.3x) every line is an envelope
  `{"timestamp", "type", "payload"}` where type is `session_meta` (the first line: id, cwd,
  cli_version, source, git), `turn_context` (model, cwd; written per request in some releases,
  per turn in others), `response_item` (what the model saw: `message`, `reasoning`,
  `function_call` / `function_call_output`, `custom_tool_call` / `custom_tool_call_output`,
  `local_shell_call`, `web_search_call`, ...), `event_msg` (`user_message`, `agent_message`,
  `token_count`, `turn_aborted`, `task_started`, ...) or `compacted` (one per compaction, with
  its summary).
- Before that, the first line is a bare header `{id, timestamp, instructions, cwd?, git?}`,
  then bare response items and `{"record_type": "state"}` markers, with no time of their own
  and no token counts.

What engram takes (the choices are written down in docs/agents.md, "Codex CLI rollouts"):

- A prompt is an `event_msg` `user_message` (a `response_item` user message in a rollout
  without envelopes) that is not context Codex injected: `<environment_context>`,
  `<user_instructions>`, "# AGENTS.md instructions for ...", `<user_shell_command>` and other
  whole-message tags, nor a message whose `kind` says it is injected. A rollout with no
  `user_message` event at all (another program wrote it) has its user messages as prompts.
- Tool calls keep one name per kind: every shell (`shell`, `container.exec`, `shell_command`,
  `exec_command`, `local_shell_call`) is `Bash` with its command as text; `apply_patch` is
  `apply_patch`, also when the model ran it through the shell (`apply_patch <<'EOF' ...`);
  `web_search_call` is `WebSearch`; MCP tools are `mcp__<server>__<tool>`; others keep Codex's
  name. The files a patch adds, updates, deletes or moves are the files it changed.
- A call failed when its output reports a non-zero exit code (the JSON `metadata.exit_code` of
  0.4x-0.5x, the `Exit code: N` / `Process exited with code N` header of later releases), an
  MCP result with `isError`, or a call Codex could not run; "aborted" is an interruption
  (`codex_outputs`, which the PostToolUse hook reads a call's response with too).
- Tokens are Codex's own cumulative `total_token_usage`: each `token_count` adds what the total
  grew by, so a figure Codex repeats (it writes the same event again after a rate-limit update)
  counts once, and the session's tokens are its last total. `cached_input_tokens` are cache
  reads; input is the rest of `input_tokens`; output includes reasoning, as Codex counts it.
  A total that goes down (a resumed session that counts from zero again) starts a new run.
- A fork (Codex's backtrack or /fork) starts with a copy of its parent's rollout; the copied
  lines are matched against the parent's rollout and counted with the parent, once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memory_core import clock, cyclic_gc
from memory_core.agents.codex_outputs import content_text, read_output
from memory_core.agents.record import Turn
from memory_core.agents.transcripts import (
    CHUNK_LINES,
    Entry,
    IngestStats,
    ToolResult,
    ToolUse,
    Usage,
    _decode_line,
    _Run,
    _SessionState,
    fast_decoder_for,
)
from memory_core.lazy_pattern import compile_bytes_later, compile_later
from memory_core.store import Store

AGENT = "codex"
HEAD_BYTES = 512
_STATE_KEY = "codex.rollout:"
# Shells Codex runs a script through: `["bash", "-lc", "<script>"]` is the script.
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "fish", "pwsh", "powershell", "cmd"})
_SHELL_TOOLS = frozenset({"shell", "container.exec", "shell_command", "exec_command"})
_APPLY_PATCH_NAMES = frozenset({"apply_patch", "applypatch"})
# A whole message wrapped in one tag is context Codex injected, not something the user typed.
_WHOLE_TAG = compile_later(r"^\s*<([A-Za-z_][\w-]*)>.*</\1>\s*$", re.DOTALL)
_INJECTED_PREFIXES = (
    "# AGENTS.md instructions for ",
    "<user_instructions>",
    "<environment_context>",
)
_INJECTED_KINDS = frozenset({"environment_context", "user_instructions"})
_HEREDOC_PATCH = compile_later(r"\bapply_?patch\b[^\n]*<<")


def codex_home() -> Path:
    configured = os.environ.get("CODEX_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".codex"


_SESSION_DIRS = ("sessions", "archived_sessions")


def rollout_files(home: Path | None = None) -> list[Path]:
    """Every rollout under `home` (default: `codex_home()`), live and archived."""
    base = home or codex_home()
    found: list[Path] = []
    for folder in (base / name for name in _SESSION_DIRS):
        if folder.is_dir():
            found.extend(
                p
                for p in folder.rglob("rollout-*.jsonl*")
                if p.is_file() and p.name.endswith((".jsonl", ".jsonl.zst"))
            )
    return found


def _read_bytes(path: Path) -> bytes:
    """The rollout's text as bytes; a `.zst` file decompressed (a cut one as far as it goes)."""
    if path.name.endswith(".zst"):
        import zstandard

        out = bytearray()
        with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            try:
                while chunk := reader.read(1 << 20):
                    out += chunk
            except zstandard.ZstdError:
                pass  # truncated: what was decompressed is what there is
        return bytes(out)
    return path.read_bytes()


_FIRST_LINE_LIMIT = 4 << 20


def _first_line(path: Path) -> Any:
    """A rollout's first line, decoded; None when it cannot be read or is not JSON."""
    try:
        if path.name.endswith(".zst"):
            line = _first_compressed_line(path)
        else:
            with path.open("rb") as handle:
                line = handle.readline(_FIRST_LINE_LIMIT)
        return _decode_line(line)
    except (OSError, ValueError):
        return None


def _first_compressed_line(path: Path) -> bytes:
    """The first line of a `.zst` rollout, decompressed only that far."""
    import zstandard

    data = b""
    with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
        try:
            while b"\n" not in data and len(data) < _FIRST_LINE_LIMIT:
                chunk = reader.read(1 << 16)
                if not chunk:
                    break
                data += chunk
        except zstandard.ZstdError:
            pass  # not zstd, or cut: what came out is all there is
    return data.split(b"\n", 1)[0]


_ENV_CWD = compile_later(r"<cwd>([^<\n]+)</cwd>")


def session_cwd(path: Path) -> str | None:
    """The folder a rollout's session ran in: its first line says, or (the oldest rollouts,
    whose header has no `cwd`) the `<environment_context>` Codex sent first."""
    obj = _first_line(path)
    if not isinstance(obj, dict):
        return None
    meta = obj.get("payload") if obj.get("type") == "session_meta" else obj
    cwd = meta.get("cwd") if isinstance(meta, dict) else None
    if isinstance(cwd, str) and cwd:
        return cwd
    if "type" in obj or path.name.endswith(".zst"):
        return None
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 16).decode("utf-8", "replace")
    except OSError:
        return None
    match = _ENV_CWD.search(head)
    return match.group(1).strip() if match else None


def _inside(cwd: str, root: Path) -> bool:
    top = str(root).rstrip(os.sep)
    if cwd.rstrip(os.sep) == top or cwd.startswith(top + os.sep):
        return True
    try:
        resolved = str(Path(cwd).resolve())
    except OSError:
        return False
    return resolved == top or resolved.startswith(top + os.sep)


def default_rollouts(root: Path) -> list[Path]:
    """This workspace's rollouts (their session ran in it or below it), oldest first."""
    found = [p for p in rollout_files() if (cwd := session_cwd(p)) and _inside(cwd, root)]
    return sorted(found, key=lambda p: (p.stat().st_mtime, str(p)))


def requested_rollouts(raw_paths: Iterable[str], root: Path) -> list[Path]:
    """The rollouts a command line names (files, or folders of them); none named: this
    workspace's. A name that is neither is the user's mistake, said in one line."""
    from memory_core.errors import UsageError

    names = list(raw_paths)
    if not names:
        return default_rollouts(root)
    paths: list[Path] = []
    for raw in names:
        path = Path(raw).expanduser()
        if path.is_dir():
            paths.extend(
                sorted(rollout_files_under(path), key=lambda p: (p.stat().st_mtime, str(p)))
            )
        elif path.is_file():
            paths.append(path)
        else:
            raise UsageError(
                f"no transcript at {raw}",
                hint=f"pass rollout files or folders Codex wrote ({codex_home() / 'sessions'})",
            )
    return list(dict.fromkeys(paths))


def rollout_files_under(folder: Path) -> list[Path]:
    return [
        p
        for p in folder.rglob("*.jsonl*")
        if p.is_file() and p.name.endswith((".jsonl", ".jsonl.zst"))
    ]


# -- reading one rollout -----------------------------------------------------------------------


@dataclass
class _FileState:
    """What a later run over the same file needs from the lines an earlier run read."""

    session_id: str | None = None
    legacy: bool = False
    sidechain: bool = False
    cwd: str | None = None
    branch: str | None = None
    model: str | None = None
    # Codex's cumulative total_token_usage as last seen: input, cached, output, total.
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    lines: int = 0
    last_ts: float = 0.0
    # The rollout's own id (a subagent's lines go to its parent's session_id).
    own_id: str | None = None
    # A fork's copy of its parent's history, being read: the parent's id, and the index of
    # the parent's line the next copied line matches.
    replaying: str | None = None
    replay_index: int = 0
    # Whether the rollout records prompts as `user_message` events (every Codex release with
    # envelopes does); a rollout without any (another program wrote it) has only its user
    # message items, and those are its prompts.
    user_events: bool = False
    # How often each thing (a prompt's text, a web search, a compaction) came so far: the n-th
    # occurrence is its identity, whoever wrote the line and when (see `_key`).
    seen: dict[str, int] = field(default_factory=dict)
    # The last request's tokens (`last_token_usage`): the context's size before a compaction.
    context_tokens: int = 0
    # In a review (/review): the session's own cumulative figures, put aside while the review
    # counts its tokens from zero in the same rollout; and whether its request was taken.
    review_saved: list[int] | None = None
    review_prompted: bool = False
    # This rollout is a review's own (`source.subagent` "review").
    review_file: bool = False

    @classmethod
    def load(cls, raw: str | None) -> _FileState:
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            return cls()
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def _int(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _ts(value: Any) -> float:
    if isinstance(value, str) and value:
        try:
            return clock.parse_iso(value)
        except ValueError:
            pass
    return 0.0


def _digest(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()[:16]


def is_injected(text: str) -> bool:
    """True for context Codex put in a user message itself (environment, AGENTS.md, ...)."""
    stripped = text.lstrip()
    return stripped.startswith(_INJECTED_PREFIXES) or bool(_WHOLE_TAG.match(stripped))


def shell_text(command: Any) -> str | None:
    """A shell call's command as one line of text: the script of `bash -lc <script>`, else the
    argv joined as a shell would read it."""
    if isinstance(command, str):
        return _str(command)
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        return None
    if not command:
        return None
    name = os.path.basename(command[0]).lower()
    if name in _SHELLS and len(command) >= 3 and command[-2] in ("-lc", "-c", "/c", "-Command"):
        return str(command[-1])
    return shlex.join(command)


def patch_of(command: Any) -> str | None:
    """The patch when a shell call is really `apply_patch` (argv form or a heredoc script)."""
    if isinstance(command, list) and len(command) >= 2 and all(isinstance(a, str) for a in command):
        if os.path.basename(command[0]) in _APPLY_PATCH_NAMES:
            return str(command[1])
        script = shell_text(command)
    else:
        script = command if isinstance(command, str) else None
    if script and "*** Begin Patch" in script and _HEREDOC_PATCH.search(script):
        return script[script.index("*** Begin Patch") :]
    return None


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def tool_result(call_id: str, output: Any, exit_code: int | None = None) -> ToolResult:
    """A call's outcome from its output (`codex_outputs.read_output`), as the ingest takes it."""
    outcome = read_output(output, exit_code)
    return ToolResult(
        call_id,
        outcome.failed,
        outcome.text,
        structured=outcome.structured,
        interrupted=outcome.interrupted,
    )


def tool_use(name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """engram's name and input for a Codex tool call (see the module docstring)."""
    if name in _SHELL_TOOLS:
        raw = arguments.get("cmd") if name == "exec_command" else arguments.get("command")
        patch = patch_of(raw)
        if patch is not None:
            return "apply_patch", {"patch": patch}
        data: dict[str, Any] = {}
        command = shell_text(raw)
        if command:
            data["command"] = command
        workdir = arguments.get("workdir")
        if isinstance(workdir, str):
            data["workdir"] = workdir
        return "Bash", data
    if name in _APPLY_PATCH_NAMES:
        patch = arguments.get("input", arguments.get("patch"))
        return "apply_patch", {"patch": patch} if isinstance(patch, str) else {}
    if "__" in name and not name.startswith("mcp__"):
        return f"mcp__{name}", arguments
    return name, arguments


class _Reader:
    """Turns a rollout's lines into the entries the transcript ingest handles."""

    def __init__(self, state: _FileState, path: Path, fallback_id: str | None = None) -> None:
        self.state = state
        self.path = path
        self.fallback_id = fallback_id
        self.silent_time: str | None = None
        # (parent id, the signatures of its rollout's lines) while a fork's copy is read
        self.parent_lines: tuple[str, list[tuple[Any, ...]]] | None = None
        # call_id -> exit code from an exec_command_end event whose output is still to come
        self.exit_codes: dict[str, int] = {}

    def _entry(self, kind: str, ts: float, **values: Any) -> Entry:
        s = self.state
        return Entry(
            kind,
            values.pop("uuid", None),
            s.session_id,
            ts,
            sidechain=s.sidechain,
            cwd=s.cwd,
            git_branch=s.branch,
            model=s.model,
            **values,
        )

    def entries(self, obj: Any, line_no: int) -> Iterator[Entry]:
        """The line's entries; a line that means nothing else still marks the session's time
        (its end is the last line's time, whatever that line says)."""
        found = False
        for entry in self._entries(obj, line_no):
            found = True
            yield entry
        if found:
            self.silent_time = None
        elif isinstance(obj, dict) and isinstance(obj.get("timestamp"), str):
            self.silent_time = obj["timestamp"]

    def end_time(self) -> Entry | None:
        """The time of the last lines read when they meant nothing else (the session's end is
        its last line's time); asked once per chunk rather than an entry per line."""
        raw, self.silent_time = self.silent_time, None
        ts = _ts(raw)
        return self._entry("user_other", ts) if ts > 0 and self.state.session_id else None

    def _entries(self, obj: Any, line_no: int) -> Iterator[Entry]:
        if not isinstance(obj, dict):
            return
        s = self.state
        if line_no == 0 and "type" not in obj and "record_type" not in obj and "id" in obj:
            s.legacy = True
            yield from self._meta(obj, _ts(obj.get("timestamp")))
            return
        if s.legacy:
            if "record_type" not in obj:
                yield from self._response_item(obj, 0.0)
            return
        kind = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return
        ts = _ts(obj.get("timestamp"))
        if s.replaying is not None:
            if self._replayed(kind, payload):
                return
            s.replaying = None  # the fork's own lines begin
        if kind == "session_meta":
            yield from self._meta(payload, ts)
            return
        if s.session_id is None:
            # A rollout whose first line was lost (cut, or a partial copy): the file's name
            # still says whose session it is.
            if self.fallback_id is None:
                return
            s.session_id = self.fallback_id
        if kind == "turn_context":
            s.model = _str(payload.get("model")) or s.model
            s.cwd = _str(payload.get("cwd")) or s.cwd
        elif kind == "response_item":
            yield from self._response_item(payload, ts)
        elif kind == "event_msg":
            yield from self._event(payload, ts)
        elif kind == "compacted":
            uuid = self._key("compacted", json.dumps(payload.get("message")))
            # The context's size then: the last request's tokens before the compaction.
            pre = s.context_tokens or None
            yield self._entry("compact_boundary", ts, uuid=uuid, pre_tokens=pre)
            message = payload.get("message")
            if isinstance(message, str) and message:
                yield self._entry("compact_summary", ts, text=message)

    def _meta(self, meta: dict[str, Any], ts: float) -> Iterator[Entry]:
        s = self.state
        sid = _str(meta.get("id")) or _str(meta.get("session_id"))
        if s.session_id is not None:
            if sid is not None and sid != s.own_id and s.replaying is None:
                # A fork (Codex's backtrack or /fork) copies its parent's rollout, first line
                # included, after its own first line: what follows is the parent's, counted
                # with the parent (see `_replayed`).
                s.replaying, s.replay_index = sid, 1
            return
        if sid is None:
            return
        s.own_id = sid
        source = meta.get("source")
        parent = None
        subagent = source.get("subagent") if isinstance(source, dict) else None
        if isinstance(subagent, dict):
            spawn = subagent.get("thread_spawn")
            parent = _str(spawn.get("parent_thread_id")) if isinstance(spawn, dict) else None
        # A review's own rollout (/review): its work, but its tokens are written into the
        # session's rollout too (between entered_ and exited_review_mode), and counted there.
        s.review_file = subagent == "review" or (
            isinstance(subagent, dict) and "review" in subagent
        )
        s.session_id = parent or sid
        s.sidechain = parent is not None or s.review_file
        s.cwd = _str(meta.get("cwd"))
        git = meta.get("git")
        s.branch = _str(git.get("branch")) if isinstance(git, dict) else None
        s.model = _str(meta.get("model")) or s.model
        # The session starts here (its first line), even before anything else happens.
        yield self._entry("user_other", ts)

    def _replayed(self, kind: Any, payload: dict[str, Any]) -> bool:
        """True when the line is the next line of the parent's rollout (a fork's copy).

        Compared by what identifies a line (its kind, a call id, a message's text, a token
        total), not byte for byte: the copy is written again by the fork's Codex, with its own
        times. Without the parent's rollout nothing is known, and the copy counts in the fork.
        """
        s = self.state
        if self.parent_lines is None or self.parent_lines[0] != s.replaying:
            found = find_rollout(s.replaying or "", self.path)
            self.parent_lines = (s.replaying or "", _signatures(found) if found else [])
        lines = self.parent_lines[1]
        if _never_counts(kind, payload):
            return True  # not compared (see _signatures), and it counts for nothing anyway
        if s.replay_index < len(lines) and lines[s.replay_index] == _signature(kind, payload):
            s.replay_index += 1
            return True
        return False

    def _prompt(self, text: str, ts: float) -> Entry:
        s = self.state
        if s.sidechain or not text.strip() or is_injected(text):
            return self._entry("user_other", ts, text=text)
        return self._entry("prompt", ts, uuid=self._key("prompt", text), text=text)

    def _key(self, kind: str, content: str) -> str:
        """A line's identity in its session: what it holds and the how-many-th such it is.

        Not its time nor its place in the file: a rollout that repeats a session's lines (a
        copy, a compressed one, a history written again) must meet the first reading's keys.
        """
        digest = _digest(kind, content)
        count = self.state.seen.get(digest, 0) + 1
        self.state.seen[digest] = count
        return f"codex:{self.state.session_id}:{kind}:{digest}:{count}"

    def _event(self, payload: dict[str, Any], ts: float) -> Iterator[Entry]:
        s = self.state
        kind = payload.get("type")
        if kind == "user_message":
            if payload.get("kind") in _INJECTED_KINDS:
                return
            if s.review_saved is not None:
                if s.review_prompted:
                    return  # Codex writes a review's request twice: one request
                s.review_prompted = True
            text = _str(payload.get("message")) or ""
            images = payload.get("images")
            if not text.strip() and isinstance(images, list) and images:
                text = "[image]"
            yield self._prompt(text, ts)
        elif kind == "token_count":
            info = payload.get("info")
            usage = info.get("total_token_usage") if isinstance(info, dict) else None
            if not isinstance(usage, dict):
                return
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            if isinstance(last, dict):
                s.context_tokens = _int(last.get("total_tokens"))
            now = [
                _int(usage.get("input_tokens")),
                _int(usage.get("cached_input_tokens")),
                _int(usage.get("output_tokens")),
                _int(usage.get("total_tokens")),
            ]
            before = s.totals
            if now[3] < before[3] or any(n < b for n, b in zip(now, before, strict=True)):
                before = [0, 0, 0, 0]  # the count started again (a resumed session)
            delta = [n - b for n, b in zip(now, before, strict=True)]
            s.totals = now
            if delta[3] <= 0 and not any(delta[:3]):
                return  # the same total again: nothing new was used
            if s.review_file:
                return  # counted in the reviewed session's rollout (see _meta)
            cached = min(delta[1], delta[0])
            entry = self._entry(
                "assistant",
                ts,
                # Codex's cumulative figures after the response: each is reached once.
                message_key=f"codex:{s.session_id}:usage:{':'.join(map(str, now))}",
                usage=Usage(
                    input_tokens=max(0, delta[0] - cached),
                    output_tokens=max(0, delta[2]),
                    cache_read_tokens=max(0, cached),
                ),
                stop_reason="usage",
            )
            if s.review_saved is not None:
                entry.sidechain = True  # a review's tokens are subagent work of the session
            yield entry
        elif kind == "turn_aborted":
            yield self._entry("interrupt", ts)
        elif kind == "entered_review_mode" and s.review_saved is None:
            # A review runs in its own thread but writes here: its token counts start from
            # zero and stop at exited_review_mode, where the session's own count goes on.
            s.review_saved, s.totals, s.review_prompted = s.totals, [0, 0, 0, 0], False
        elif kind == "exited_review_mode" and s.review_saved is not None:
            s.totals, s.review_saved = s.review_saved, None
        elif kind == "exec_command_end":
            # Persisted by some releases before the call's output: its exit code is the truth
            # when the output text does not carry one.
            call_id, code = _str(payload.get("call_id")), payload.get("exit_code")
            if call_id is not None and type(code) is int:
                self.exit_codes[call_id] = code

    def _response_item(self, item: dict[str, Any], ts: float) -> Iterator[Entry]:
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            text = content_text(item.get("content"))
            if role == "assistant":
                if text:
                    yield self._entry("assistant", ts, text=text)
            elif role == "user" and self.state.legacy:
                if self.state.cwd is None and (found := _ENV_CWD.search(text)):
                    self.state.cwd = found.group(1).strip()  # a header without `cwd`
                yield self._prompt(text, ts)
            elif role == "user" and not self.state.user_events:
                yield self._prompt(text, ts)
        elif kind in ("function_call", "custom_tool_call"):
            call_id = _str(item.get("call_id"))
            if call_id is None:
                return
            raw = item.get("input") if kind == "custom_tool_call" else item.get("arguments")
            name = str(item.get("name") or "unknown")
            if kind == "custom_tool_call":
                arguments: dict[str, Any] = {"input": raw} if isinstance(raw, str) else {}
            else:
                arguments = _arguments(raw)
            tool, data = tool_use(name, arguments)
            yield self._entry("assistant", ts, tool_uses=[ToolUse(call_id, tool, data)])
        elif kind == "local_shell_call":
            call_id = _str(item.get("call_id")) or _str(item.get("id"))
            action = item.get("action")
            if call_id is None or not isinstance(action, dict):
                return
            tool, data = tool_use("shell", {"command": action.get("command")})
            yield self._entry("assistant", ts, tool_uses=[ToolUse(call_id, tool, data)])
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = _str(item.get("call_id"))
            if call_id is not None:
                result = tool_result(
                    call_id, item.get("output"), self.exit_codes.pop(call_id, None)
                )
                yield self._entry("tool_results", ts, tool_results=[result])
        elif kind == "web_search_call":
            action = item.get("action")
            query = action.get("query") if isinstance(action, dict) else None
            call_id = _str(item.get("id")) or self._key(
                "web_search", json.dumps(item, sort_keys=True)
            )
            data = {"query": query} if isinstance(query, str) else {}
            yield self._entry("assistant", ts, tool_uses=[ToolUse(call_id, "WebSearch", data)])
            failed = item.get("status") in ("failed", "incomplete")
            status_text = "web search failed" if failed else ""
            yield self._entry(
                "tool_results", ts, tool_results=[ToolResult(call_id, failed, status_text)]
            )


def _signature(kind: Any, payload: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a rollout line, whoever wrote it and when."""
    what = payload.get("type")
    ident: Any = payload.get("call_id") or payload.get("id")
    if what == "message":
        ident = (payload.get("role"), content_text(payload.get("content")))
    elif what in ("user_message", "agent_message"):
        ident = payload.get("message")
    elif what == "token_count":
        info = payload.get("info")
        usage = info.get("total_token_usage") if isinstance(info, dict) else None
        ident = usage.get("total_tokens") if isinstance(usage, dict) else None
    elif kind == "compacted":
        ident = payload.get("message")
    return (kind, what, ident if isinstance(ident, str | int | tuple) or ident is None else None)


def _signatures(path: Path) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    for line in _read_bytes(path).split(b"\n"):
        if _NEVER_COUNTS.match(line):
            continue
        try:
            obj = _decode_line(line) if line.strip() else None
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        kind, payload = obj.get("type"), obj.get("payload")
        if isinstance(payload, dict) and not _never_counts(kind, payload):
            found.append(_signature(kind, payload))
    return found


_NEVER_COUNT_TYPES = frozenset(
    {
        "reasoning",
        "ghost_snapshot",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
    }
)


def _never_counts(kind: Any, payload: dict[str, Any]) -> bool:
    """The lines `_NEVER_COUNTS` spots without decoding, however they were serialized."""
    what = payload.get("type")
    if kind in ("response_item", "event_msg") and what in _NEVER_COUNT_TYPES:
        return True
    return kind == "event_msg" and what == "token_count" and payload.get("info") is None


def find_rollout(session_id: str, near: Path | None = None) -> Path | None:
    """The rollout of a session, looked for in the Codex home `near` lies in, then in
    `codex_home()`."""
    homes = [p.parent for p in (near.parents if near else []) if p.name in _SESSION_DIRS]
    for home in dict.fromkeys([*homes, codex_home()]):
        for folder in _SESSION_DIRS:
            base = home / folder
            if base.is_dir():
                for path in base.rglob(f"rollout-*{session_id}.jsonl*"):
                    if path.is_file() and path != near:
                        return path
    return None


class _CodexRun(_Run):
    """The transcript ingest's pass, with what Codex records differently."""

    def usage(
        self, db: sqlite3.Connection, state: _SessionState, entry: Entry, turn: Turn | None
    ) -> None:
        # A key is Codex's cumulative figures after a response: reached once, so the first
        # reading stands (a later line that repeats them adds nothing, whatever it follows).
        key = entry.message_key
        if (
            key in self.messages
            or db.execute("SELECT 1 FROM agent_messages WHERE message_key = ?", (key,)).fetchone()
        ):
            return
        super().usage(db, state, entry, turn)

    def assistant(self, db: sqlite3.Connection, state: _SessionState, entry: Entry) -> None:
        if entry.stop_reason == "usage":
            # A token count is no reply: what the session did last stays what it was.
            last = state.last_event
            entry.stop_reason = None
            super().assistant(db, state, entry)
            state.last_event = last
            return
        super().assistant(db, state, entry)

    def handle(self, db: sqlite3.Connection, entry: Entry) -> None:
        if entry.kind == "interrupt":
            state = self.session(db, entry)
            if state is not None and not entry.sidechain:
                entry.kind = "user_other"
                super().handle(db, entry)
                state.last_event = "interrupt"
            return
        super().handle(db, entry)


# Lines no figure depends on (reasoning, its summaries, ghost snapshots, token counts that
# carry only rate limits), as Codex serializes them: not decoded, only their time is kept. A
# line written another way is decoded and skipped by the reader all the same.
_NEVER_COUNTS = compile_bytes_later(
    rb'^\{"timestamp":"([^"]+)","type":"(?:response_item|event_msg)","payload":\{"type":'
    rb'"(?:reasoning|ghost_snapshot|agent_reasoning|agent_reasoning_raw_content|'
    rb'agent_reasoning_section_break)"'
    rb'|^\{"timestamp":"([^"]+)","type":"event_msg","payload":\{"type":"token_count","info":null'
)
_NAME_ID = compile_later(
    r"-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl(?:\.zst)?$", re.I
)


def session_id_in_name(path: Path) -> str | None:
    """The session id Codex puts at the end of a rollout's name."""
    match = _NAME_ID.search(path.name)
    return match.group(1).lower() if match else None


def _head(data: bytes) -> str:
    return data[:HEAD_BYTES].hex()


def _complete_lines(body: bytes, offset: int) -> tuple[list[bytes], int]:
    """The whole lines of `body` (the file's bytes from `offset`), and where they end in the
    file. A last line without its newline is taken when it is a complete JSON object (Codex
    writes a line at once; only a half-written one does not parse), else it waits."""
    end = body.rfind(b"\n") + 1
    lines = body[:end].split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    tail = body[end:]
    if tail.strip():
        try:
            _decode_line(tail)
        except ValueError:
            return lines, offset + end  # half-written: read with the next run
        lines.append(tail)
    return lines, offset + len(body)


class _Source:
    """A rollout's first bytes and size, and its bytes from an offset (only those are read from
    a plain file; a `.zst` one is decompressed whole)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: bytes | None = None
        if path.name.endswith(".zst"):
            self.data = _read_bytes(path)
            self.head, self.size = self.data[:HEAD_BYTES], len(self.data)
        else:
            with path.open("rb") as handle:
                self.head = handle.read(HEAD_BYTES)
                self.size = os.fstat(handle.fileno()).st_size

    def tail(self, offset: int) -> bytes:
        if self.data is not None:
            return self.data[offset:]
        with self.path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(max(0, self.size - offset))


def ingest_file(
    store: Store,
    path: str | os.PathLike[str],
    *,
    settings: Any = None,
    flush: bool = True,
    progress: Any = None,
) -> IngestStats:
    """Ingest what was added to a rollout since the last run (`.jsonl` or `.jsonl.zst`).

    `flush` (the default) closes the open turn at the end of the file; a hook that fires while
    Codex is still answering passes False. `progress(bytes_done)` is called per chunk.
    """
    file_path = Path(path).expanduser().resolve()
    key = str(file_path)
    stats = IngestStats(path=key)
    source = _Source(file_path)
    head = _head(source.head)
    row = store.query_one("SELECT offset, head FROM agent_ingest_offsets WHERE path = ?", (key,))
    state_row = store.query_one("SELECT value FROM store_meta WHERE key = ?", (_STATE_KEY + key,))
    offset = 0
    state = _FileState()
    if row is not None:
        previous = str(row["head"])
        common = min(len(previous), len(head))
        if source.size < int(row["offset"]) or previous[:common] != head[:common]:
            stats.restarted = True  # replaced: read again (the ledgers keep counts once)
        else:
            offset = int(row["offset"])
            state = _FileState.load(state_row["value"] if state_row is not None else None)
    fast_decoder_for(source.size - offset)
    body = source.tail(offset)
    if b'"user_message"' in body:
        state.user_events = True  # decided before any line is read: see _FileState
    lines, end = _complete_lines(body, offset)
    if not lines:
        if flush and state.session_id:
            from memory_core.agents.transcripts import flush_session

            if store.query_one(
                "SELECT 1 FROM agent_turns WHERE session_id = ? AND recorded = 0 LIMIT 1",
                (state.session_id,),
            ):
                stats.turns += len(flush_session(store, state.session_id))
        return stats
    if settings is None:
        from memory_core import config

        settings = config.load(store.root)
    reader = _Reader(state, file_path, session_id_in_name(file_path))
    run = _CodexRun(store, file_path, stats, settings, agent=AGENT)
    run.last_known_ts = state.last_ts
    position = offset
    for start in range(0, len(lines), CHUNK_LINES):
        chunk = lines[start : start + CHUNK_LINES]
        last_chunk = start + CHUNK_LINES >= len(lines)
        with cyclic_gc.paused(), store.transaction() as db:
            for line in chunk:
                position = min(position + len(line) + 1, end)
                line_no = state.lines
                state.lines += 1
                stats.lines += 1
                if not line.strip():
                    continue
                skipped = _NEVER_COUNTS.match(line)
                if skipped is not None:
                    reader.silent_time = (skipped.group(1) or skipped.group(2)).decode()
                    continue
                try:
                    obj = _decode_line(line)  # lone surrogates scrubbed there
                except (ValueError, RecursionError):
                    stats.malformed += 1
                    continue
                for entry in reader.entries(obj, line_no):
                    run.handle(db, entry)
            end_time = reader.end_time()
            if end_time is not None:
                run.handle(db, end_time)
            state.last_ts = run.last_known_ts
            if last_chunk:
                position = end
                run.end_of_input(db, flush=flush)
            run.write_figures(db)
            _save_position(db, key, state, position, source.size, head, len(chunk))
        with cyclic_gc.paused(), store.transaction():
            run.run_effects()
        if progress is not None:
            progress(position - offset)
    stats.bytes = position - offset
    return stats


def _save_position(
    db: sqlite3.Connection,
    key: str,
    state: _FileState,
    position: int,
    size: int,
    head: str,
    lines: int,
) -> None:
    db.execute(
        "INSERT INTO agent_ingest_offsets (path, agent, session_id, offset, size, head, lines, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET offset = excluded.offset, "
        "size = excluded.size, head = excluded.head, lines = lines + excluded.lines, "
        "updated_at = excluded.updated_at, session_id = COALESCE(excluded.session_id, session_id)",
        (key, AGENT, state.session_id, position, size, head, lines, clock.now()),
    )
    db.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (_STATE_KEY + key, json.dumps(asdict(state))),
    )


def ingest_for_hook(
    store: Store, transcript_path: str | None, *, settings: Any, flush: bool
) -> bool:
    """A hook's ingest of the rollout Codex names; False when Codex keeps none (its
    `transcript_path` is null), and the hook records the turn from its payload instead.

    A rollout Codex names but has not written yet (a first prompt) is still the record: the
    hooks leave the turn to it rather than open one from the payload that the rollout would
    then open again.
    """
    if not transcript_path:
        return False
    path = Path(transcript_path).expanduser()
    if path.is_file() and path.name.endswith((".jsonl", ".jsonl.zst")):
        ingest_file(store, path, settings=settings, flush=flush)
    return True
