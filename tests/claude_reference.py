"""What a set of Claude Code transcript files holds, counted straight from the format.

An independent count for the tests on real transcripts: written from the published format
(shared notes, ccusage's de-duplication rule), never from engram's code, and kept as plain as
possible so that a disagreement points at engram. Every file is read whole (a last line without
a final newline included), and everything is counted once however many files repeat it:

- a response once per `message.id` (the lines of one response, a copy of the file, a resumed
  session replaying its parent's lines), keeping the copy with the largest total, a main-chain
  copy before a subagent's; `<synthetic>` responses (written by Claude Code itself) carry none;
- a prompt once per line `uuid`: a user line of the main chain whose text is typed by a person
  (not meta, a compaction summary, a tool result, a command echo, a shell escape, an interrupt
  marker or a task notification);
- a tool call once per `tool_use` id, whether its result came or not; it failed when its result
  says `is_error` (Claude Code's own verdict: errors, non-zero exits, interrupts, rejections);
- a compaction once per `compact_boundary` line;
- a file modified when an Edit, Write, MultiEdit or NotebookEdit call on it succeeded.

Checked on real sessions kept public by their authors in their `~/.claude` backups
(4thehalibit/omarchy-backup, Eiji1202/dotclaude, daniel-h-ward/.claude: Claude Code 2.0.14 to
2.1.97). None of them carries a license, so none is copied into this repository: point
ENGRAM_REAL_CLAUDE_TRANSCRIPTS at a folder of such files to run the comparison
(tests/cli/test_claude_code_exact.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

KINDS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")
FILE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
NOT_TYPED = (
    "<command-",
    "<local-command",
    "<bash-",
    "<task-notification",
    "[Request interrupted",
    "This session is being continued from a previous conversation",
)


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict):
            out.append(line)
    return out


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def count(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """Per session id: prompts, main/subagents tokens and messages, tool calls, failed calls,
    compactions, files modified (absolute paths) and the first and last line times."""
    responses: dict[str, tuple[str, bool, dict[str, int]]] = {}
    prompts: dict[str, str] = {}
    calls: dict[str, tuple[str, str, dict[str, Any]]] = {}
    results: dict[str, bool] = {}
    compactions: dict[str, str] = {}
    times: dict[str, list[str]] = {}
    for path in paths:
        for line in _lines(path):
            kind = line.get("type")
            sid = line.get("sessionId")
            if kind not in ("user", "assistant", "system") or not isinstance(sid, str):
                continue
            stamp = line.get("timestamp")
            if isinstance(stamp, str) and stamp:
                times.setdefault(sid, []).append(stamp)
            side = line.get("isSidechain") is True
            message = line.get("message") if isinstance(line.get("message"), dict) else {}
            content = message.get("content")
            if kind == "system":
                if line.get("subtype") == "compact_boundary":
                    compactions[str(line.get("uuid"))] = sid
                continue
            if kind == "assistant":
                if message.get("model") == "<synthetic>":
                    continue
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        calls.setdefault(
                            str(block.get("id")),
                            (sid, str(block.get("name")), block.get("input") or {}),
                        )
                usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
                creation = _number(usage.get("cache_creation_input_tokens"))
                if not creation and isinstance(usage.get("cache_creation"), dict):
                    creation = sum(_number(v) for v in usage["cache_creation"].values())
                figures = {
                    "input_tokens": _number(usage.get("input_tokens")),
                    "output_tokens": _number(usage.get("output_tokens")),
                    "cache_creation_tokens": creation,
                    "cache_read_tokens": _number(usage.get("cache_read_input_tokens")),
                }
                key = message.get("id") or f"line:{line.get('uuid')}"
                held = responses.get(key)
                if (
                    held is None
                    or (held[1] and not side)
                    or (held[1] == side and sum(figures.values()) > sum(held[2].values()))
                ):
                    responses[key] = (sid, side, figures)
                continue
            # a user line
            if isinstance(content, list):
                tool_results = [
                    b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
                for block in tool_results:
                    use_id = str(block.get("tool_use_id"))
                    results[use_id] = results.get(use_id, False) or block.get("is_error") is True
                if tool_results:
                    continue
                text = "\n".join(
                    b.get("text", "")
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "text"
                )
            else:
                text = content if isinstance(content, str) else ""
            origin = line.get("origin")
            if (
                side
                or line.get("isMeta") is True
                or line.get("isCompactSummary") is True
                or line.get("isVisibleInTranscriptOnly") is True
                or (isinstance(origin, dict) and origin.get("kind") == "task-notification")
                or line.get("promptSource") == "system"
                or not text.strip()
                or text.lstrip().startswith(NOT_TYPED)
            ):
                continue
            prompts.setdefault(str(line.get("uuid")), sid)
    out: dict[str, dict[str, Any]] = {}

    def session(sid: str) -> dict[str, Any]:
        if sid not in out:
            stamps = sorted(times.get(sid, []))
            out[sid] = {
                "prompts": 0,
                "tool_calls": 0,
                "failed": 0,
                "unanswered": 0,
                "commands": 0,
                "compactions": 0,
                "files": set(),
                "first": stamps[0] if stamps else None,
                "last": stamps[-1] if stamps else None,
                "main": dict.fromkeys((*KINDS, "messages"), 0),
                "subagents": dict.fromkeys((*KINDS, "messages"), 0),
            }
        return out[sid]

    for sid in times:
        session(sid)
    for sid in prompts.values():
        session(sid)["prompts"] += 1
    for sid in compactions.values():
        session(sid)["compactions"] += 1
    for sid, side, figures in responses.values():
        part = session(sid)["subagents" if side else "main"]
        part["messages"] += 1
        for kind in KINDS:
            part[kind] += figures[kind]
    for use_id, (sid, name, tool_input) in calls.items():
        figures = session(sid)
        figures["tool_calls"] += 1
        if name == "Bash":
            figures["commands"] += 1
        if use_id not in results:
            figures["unanswered"] += 1
        elif results[use_id]:
            figures["failed"] += 1
        elif name in FILE_TOOLS:
            target = tool_input.get("file_path") or tool_input.get("notebook_path")
            if isinstance(target, str) and target:
                figures["files"].add(target)
    return out
