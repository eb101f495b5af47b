"""A scripted model server on 127.0.0.1 for running the real Gemini CLI and Codex CLI offline.

It answers the Gemini API (`models/<m>:streamGenerateContent`, `:generateContent`,
`:countTokens`) and the OpenAI Responses API (`POST .../responses`, server-sent events) with
canned replies, so the real agents write their real chat files and rollouts and run their real
hooks without a network. Used by `scripts/record-agents.sh`, never by the test suite.

What the model says is decided by the request alone (no state in the server): the scenario is
the one whose key appears in the last prompt the person typed, and the step is the number of
tool results sent back since that prompt. Each step is a tool call or the final text. Token
figures are distinct per request (`usage_for`) so a count that adds one twice shows.

    python3 scripts/fake_model_server.py --port-file /tmp/port --log /tmp/requests.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Each scenario: steps in order. ("call", tool kind, arguments) or ("text", reply).
# Tool kinds are abstract ("shell", "write", "read", "grep", "patch"); each agent's tool names
# and argument shapes are chosen from the tools its request declares.
SCENARIOS: dict[str, list[tuple[str, ...]]] = {
    "create hello.py": [
        ("call", "write", "hello.py", 'print("hello")\n'),
        ("call", "shell", "python3 hello.py"),
        ("text", "Created hello.py; it prints hello."),
    ],
    "run the checks": [
        ("call", "read", "hello.py"),
        ("call", "shell", "python3 -c 'import missing_helper_module'"),
        ("call", "shell", "python3 -c 'import missing_helper_module'"),
        ("call", "shell", "python3 -c 'import missing_helper_module'"),
        ("text", "The checks fail: the module missing_helper_module is not installed."),
    ],
    "add a greeting function": [
        ("call", "patch", "hello.py"),
        ("call", "grep", "def greet"),
        ("call", "shell", "python3 hello.py"),
        ("text", "Added greet() to hello.py and ran it."),
    ],
    "patch it through the shell": [
        ("call", "shell_patch", "notes.txt", "a note\n"),
        ("text", "Wrote notes.txt."),
    ],
    "just answer": [
        ("text", "Nothing to change: the project is one script."),
    ],
}

STATE_SNAPSHOT = (
    "<state_snapshot>\n<overall_goal>Make the checks of hello.py pass.</overall_goal>\n"
    "<key_knowledge>python3 -c 'import missing_helper_module' fails: the module is not "
    "installed.</key_knowledge>\n</state_snapshot>"
)

CODEX_SUMMARY = "Handoff: the checks fail because missing_helper_module is not installed."

_lock = threading.Lock()
_request_number = 0


def _next_request_number() -> int:
    global _request_number
    with _lock:
        _request_number += 1
        return _request_number


def usage_for(number: int, prompt_size: int) -> dict[str, int]:
    """Distinct token figures for the Nth request (a double count would show)."""
    cached = 0 if number % 2 else 512
    return {
        "input": 1000 + prompt_size // 4 + number,
        "cached": cached,
        "output": 20 + number,
        "reasoning": 3 + number % 5,
    }


def pick_scenario(prompt: str) -> list[tuple[str, ...]]:
    # The prompt may carry context a hook added before it (Gemini's `<hook_context>`, which can
    # quote earlier prompts): the key that appears last is what the person asked now.
    lowered = prompt.lower()
    found = [(lowered.rfind(key), key) for key in SCENARIOS if key in lowered]
    if not found:
        return [("text", "I can only follow the recorded scenarios.")]
    return SCENARIOS[max(found)[1]]


# --- Gemini API -----------------------------------------------------------------------------


def _gemini_function_names(body: dict[str, Any]) -> set[str]:
    names = set()
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            names.add(declaration.get("name", ""))
    return names


def _gemini_call(kind: str, args: tuple[str, ...], names: set[str]) -> dict[str, Any]:
    if kind == "shell":
        return {"name": "run_shell_command", "args": {"command": args[0], "description": "run"}}
    if kind == "write":
        return {"name": "write_file", "args": {"file_path": args[0], "content": args[1]}}
    if kind == "read":
        return {"name": "read_file", "args": {"file_path": args[0]}}
    if kind == "grep":
        name = "grep_search" if "grep_search" in names else "search_file_content"
        return {"name": name, "args": {"pattern": args[0]}}
    if kind == "patch":
        return {
            "name": "replace",
            "args": {
                "file_path": args[0],
                "old_string": 'print("hello")\n',
                "new_string": 'def greet():\n    return "hello"\n\n\nprint(greet())\n',
                "instruction": "Add a greet function and print its result.",
            },
        }
    raise ValueError(kind)


def gemini_reply(body: dict[str, Any], number: int) -> dict[str, Any]:
    contents = body.get("contents") or []
    last_prompt_at = -1
    prompt = ""
    for index, content in enumerate(contents):
        parts = content.get("parts") or []
        if content.get("role") != "user" or any("functionResponse" in p for p in parts):
            continue
        text = "\n".join(p.get("text", "") for p in parts if isinstance(p.get("text"), str))
        if text.strip():
            last_prompt_at, prompt = index, text
    step = sum(1 for c in contents[last_prompt_at + 1 :] if c.get("role") == "model")
    usage = usage_for(number, len(json.dumps(body)))
    metadata = {
        "promptTokenCount": usage["input"],
        "candidatesTokenCount": usage["output"],
        "cachedContentTokenCount": usage["cached"],
        "thoughtsTokenCount": usage["reasoning"],
        "totalTokenCount": usage["input"] + usage["output"] + usage["reasoning"],
    }
    schema = (body.get("generationConfig") or {}).get("responseJsonSchema") or (
        body.get("generationConfig") or {}
    ).get("responseSchema")
    instruction = json.dumps(body.get("systemInstruction") or "")
    if "<state_snapshot>" in instruction:
        # A compression (`/compress`, or the context filling up): the summary it asks for.
        parts: list[dict[str, Any]] = [{"text": STATE_SNAPSHOT}]
    elif schema is not None or last_prompt_at < 0:
        # A side request of the CLI's own (routing, next-speaker check, a title): JSON it
        # accepts, naming no tool.
        answer = {
            "reasoning": "scripted",
            "next_speaker": "user",
            "model_choice": "flash",
            "complexity_reasoning": "scripted",
            "complexity_score": 10,
        }
        parts = [{"text": json.dumps(answer)}]
    else:
        steps = pick_scenario(prompt)
        kind, *args = steps[min(step, len(steps) - 1)]
        if kind == "text":
            parts = [{"text": args[0]}]
        else:
            parts = [
                {
                    "functionCall": _gemini_call(
                        args[0], tuple(args[1:]), _gemini_function_names(body)
                    )
                }
            ]
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": metadata,
        "modelVersion": "gemini-2.5-pro",
        "responseId": f"resp-{number}",
    }


# --- OpenAI Responses API (Codex) ----------------------------------------------------------


def _responses_tools(body: dict[str, Any]) -> dict[str, str]:
    tools = {}
    for tool in body.get("tools") or []:
        name = tool.get("name") or tool.get("type", "")
        tools[name] = tool.get("type", "function")
    return tools


def _input_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def _codex_call(
    kind: str, args: tuple[str, ...], tools: dict[str, str], call_id: str
) -> dict[str, Any]:
    if kind == "write":
        kind, args = "patch_add", args
    if kind == "read":
        kind, args = "shell", (f"cat {args[0]}",)
    if kind == "grep":
        kind, args = "shell", (f"grep -n '{args[0]}' hello.py",)
    if kind == "shell_patch":
        body = "".join(f"+{line}\n" for line in args[1].splitlines())
        patch = f"*** Begin Patch\n*** Add File: {args[0]}\n{body}*** End Patch\n"
        kind, args = "shell", (f"apply_patch <<'EOF'\n{patch}EOF",)
    if kind in ("patch", "patch_add"):
        if kind == "patch_add":
            body = "".join(f"+{line}\n" for line in args[1].splitlines())
            patch = f"*** Begin Patch\n*** Add File: {args[0]}\n{body}*** End Patch\n"
        else:
            patch = (
                f'*** Begin Patch\n*** Update File: {args[0]}\n@@\n-print("hello")\n'
                '+def greet():\n+    return "hello"\n+\n+\n+print(greet())\n*** End Patch\n'
            )
        if tools.get("apply_patch") == "custom":
            return {
                "type": "custom_tool_call",
                "call_id": call_id,
                "name": "apply_patch",
                "input": patch,
            }
        if "apply_patch" in tools:
            arguments = json.dumps({"input": patch})
            return {
                "type": "function_call",
                "call_id": call_id,
                "name": "apply_patch",
                "arguments": arguments,
            }
        kind, args = "shell", (f"apply_patch <<'EOF'\n{patch}EOF",)
    if kind == "shell":
        if "exec_command" in tools:
            arguments = {"cmd": args[0]}
            name = "exec_command"
        elif "shell_command" in tools:
            arguments = {"command": args[0]}
            name = "shell_command"
        else:
            arguments = {"command": ["bash", "-lc", args[0]]}
            name = "shell"
        return {
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": json.dumps(arguments),
        }
    raise ValueError(kind)


def responses_events(body: dict[str, Any], number: int) -> list[dict[str, Any]]:
    items = body.get("input") or []
    last_prompt_at = -1
    prompt = ""
    for index, item in enumerate(items):
        if item.get("type") == "message" and item.get("role") == "user":
            text = _input_text(item).strip()
            if text and not text.startswith(("<", "# AGENTS.md", "Warning: ")):
                last_prompt_at, prompt = index, text
    step = sum(
        1 for item in items[last_prompt_at + 1 :] if str(item.get("type", "")).endswith("_output")
    )
    usage = usage_for(number, len(json.dumps(body)))
    response_id = f"resp_{number}"
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": response_id}}]
    if "CHECKPOINT COMPACTION" in prompt:
        # Codex's /compact (or its automatic compaction): the handoff summary it asks for.
        steps: list[tuple[str, ...]] = [("text", CODEX_SUMMARY)]
    elif last_prompt_at < 0:
        steps = [("text", "scripted")]
    else:
        steps = pick_scenario(prompt)
    kind, *args = steps[min(step, len(steps) - 1)]
    if kind == "text":
        item = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{number}",
            "content": [{"type": "output_text", "text": args[0]}],
        }
        events.append({"type": "response.output_item.added", "item": item})
        events.append({"type": "response.output_text.delta", "delta": args[0]})
        events.append({"type": "response.output_item.done", "item": item})
    else:
        call = _codex_call(args[0], tuple(args[1:]), _responses_tools(body), f"call_{number}")
        events.append({"type": "response.output_item.done", "item": call})
    events.append(
        {
            "type": "response.completed",
            "response": {
                "id": response_id,
                "usage": {
                    "input_tokens": usage["input"],
                    "input_tokens_details": {"cached_tokens": usage["cached"]},
                    "output_tokens": usage["output"],
                    "output_tokens_details": {"reasoning_tokens": usage["reasoning"]},
                    "total_tokens": usage["input"] + usage["output"],
                },
            },
        }
    )
    return events


class Handler(BaseHTTPRequestHandler):
    log_path: Path | None = None

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _log(self, record: dict[str, Any]) -> None:
        if self.log_path is not None:
            with _lock, self.log_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._log({"method": "GET", "path": self.path})
        if self.path.split("?")[0].endswith("/models"):
            self._send_json(200, {"models": [], "data": [], "object": "list"})
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        number = _next_request_number()
        path = self.path.split("?")[0]
        self._log({"method": "POST", "path": self.path, "number": number, "body": body})
        if path.endswith(":countTokens"):
            self._send_json(200, {"totalTokens": len(raw) // 4})
        elif path.endswith(":generateContent"):
            self._send_json(200, gemini_reply(body, number))
        elif path.endswith(":streamGenerateContent"):
            reply = gemini_reply(body, number)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(f"data: {json.dumps(reply)}\r\n\r\n".encode())
        elif path.endswith("/responses"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in responses_events(body, number):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        else:
            self._send_json(404, {"error": {"message": f"no such endpoint: {path}"}})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--log", type=Path)
    options = parser.parse_args()
    Handler.log_path = options.log
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    options.port_file.write_text(str(server.server_address[1]), encoding="utf-8")
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
