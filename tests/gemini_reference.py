"""What a Gemini CLI chat file holds, counted straight from the format (not from engram's code).

Written from gemini-cli's chatRecordingService.ts (v0.56.0): the file is a log in which a
message is written again in full whenever it changes (the last copy counts), `$rewindTo` drops
a message and everything after it, and `$set` patches the metadata (its `messages` is the
model's context, not the history). A prompt is a `user` message a person typed: not tool
results sent back (functionResponse parts, since 0.44), not a slash or shell command, not text
Gemini CLI writes itself (the "Please continue." nudge, `System: ` feedback, the session
context, a compression's `<state_snapshot>`; nor the `<hook_context>` blocks hooks added to it).
A tool call failed when its status is "error" or
"cancelled", or a shell command reports a non-zero `Exit Code`.

Checked on real chats kept public in `~/.gemini` backups (wingorithm/Vibe-Coding-Comparison-Project,
LAF-US/IDAHO-VAULT; March and April 2026, `.json` and JSONL, subagents included). Neither may be
copied here (no license; "all rights reserved"): point ENGRAM_REAL_GEMINI_CHATS at such files
to run the comparison (tests/core/test_gemini_current_format.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_EXIT = re.compile(r"Exit Code: (-?\d+)")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return content.get("text", "") if isinstance(content.get("text"), str) else ""
    if isinstance(content, list):
        return "\n".join(_text(part) for part in content)
    return ""


def count(path: Path) -> dict[str, Any]:
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        whole = json.loads(raw)
        records = [whole, *whole.get("messages", [])]
    else:
        records = [json.loads(line) for line in raw.splitlines() if line.strip()]
    messages: dict[str, dict[str, Any]] = {}
    for record in records:
        if "$rewindTo" in record:
            ids = list(messages)
            if record["$rewindTo"] in ids:
                for key in ids[ids.index(record["$rewindTo"]) :]:
                    del messages[key]
            continue
        if "id" in record and "type" in record:
            messages[record["id"]] = record
        for message in (record.get("$set") or {}).get("messages") or []:
            # 0.61 records /compress only as the new context, which starts with the summary.
            if (
                message.get("type") == "user"
                and "<state_snapshot>" in _text(message.get("content"))
                and message["id"] not in messages
            ):
                messages[message["id"]] = message
    figures = {
        "prompts": 0,
        "responses": 0,
        "tool_calls": 0,
        "failed": 0,
        "compactions": 0,
        "input": 0,
        "output": 0,
        "cached": 0,
        "last": "",
    }
    for message in messages.values():
        figures["last"] = max(figures["last"], message.get("timestamp", ""))
        kind = message["type"]
        if kind == "user":
            content = message.get("content")
            parts = content if isinstance(content, list) else [content]
            if any(isinstance(p, dict) and "functionResponse" in p for p in parts):
                continue
            typed = _text(message.get("displayContent") or content)
            # What hooks added (SessionStart's context, recorded inside the prompt) is not typed.
            typed = re.sub(r"<hook_context>.*?</hook_context>", "", typed, flags=re.S).strip()
            if "<state_snapshot>" in _text(content):
                figures["compactions"] += 1
            elif typed and not typed.startswith(
                ("/", "!", "Please continue.", "System: ", "<session_context>")
            ):
                figures["prompts"] += 1
        elif kind == "gemini":
            figures["responses"] += 1
            tokens = message.get("tokens") or {}
            figures["input"] += tokens.get("input", 0)
            figures["output"] += tokens.get("output", 0) + tokens.get("thoughts", 0)
            figures["cached"] += tokens.get("cached", 0)
            for call in message.get("toolCalls") or []:
                if call.get("status") in (None, "", "scheduled", "validating", "executing"):
                    continue
                figures["tool_calls"] += 1
                exit_code = _EXIT.search(json.dumps(call.get("result")))
                if call.get("status") in ("error", "cancelled") or (
                    call.get("name") == "run_shell_command"
                    and exit_code is not None
                    and exit_code.group(1) != "0"
                ):
                    figures["failed"] += 1
    return figures
