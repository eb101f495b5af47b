"""Every line a client sends the MCP server is answered: invalid JSON, a message that is not
JSON-RPC 2.0, params that are no object, JSON nested 200 deep each get the JSON-RPC error the
specification names, and the server goes on serving. A real `engram mcp` process over stdio."""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core.store import Store


class Lines:
    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memory_core", "--workspace", str(root), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=root,
        )
        self.pending = b""

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 30.0) -> dict[str, Any]:
        """The next line the server wrote (read from the descriptor with our own buffer: a
        buffered reader may hold the next line already while select() says nothing is there)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], timeout)
            assert ready, "no answer"
            chunk = os.read(fd, 1 << 16)
            assert chunk, "the server closed its output"
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        return answer


@pytest.fixture
def mcp(store: Store) -> Iterator[Lines]:
    lines = Lines(store.root)
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    lines.send(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}).encode()
    )
    assert lines.receive(60)["id"] == 1
    lines.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    yield lines
    lines.proc.kill()
    lines.proc.wait()


DEEP = (
    b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"a": '
    + b"[" * 200
    + b"]" * 200
    + b"}}"
)


@pytest.mark.parametrize(
    ("line", "expected_id", "code"),
    [
        (b'{"jsonrpc": "2.0", "id": 2,', None, -32700),
        (b"\xff\xfe not even text", None, -32700),
        (b'{"jsonrpc": "1.0", "id": 3, "method": "tools/list"}', 3, -32600),
        (b'{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": "x"}', 4, -32602),
        (DEEP, 5, -32600),
        (b'[{"jsonrpc": "2.0", "id": 6, "method": "ping"}]', None, -32600),
        (b'{"jsonrpc": "2.0", "id": 7, "method": 12}', 7, -32600),
    ],
    ids=[
        "invalid-json",
        "not-text",
        "jsonrpc-1.0",
        "params-text",
        "nested-200",
        "batch",
        "method-number",
    ],
)
def test_a_line_the_server_cannot_serve_gets_its_json_rpc_error(
    mcp: Lines, line: bytes, expected_id: Any, code: int
) -> None:
    mcp.send(line)
    answer = mcp.receive()
    assert answer["jsonrpc"] == "2.0" and answer["id"] == expected_id, answer
    assert answer["error"]["code"] == code, answer
    mcp.send(b'{"jsonrpc": "2.0", "id": 99, "method": "ping"}')
    assert mcp.receive() == {"jsonrpc": "2.0", "id": 99, "result": {}}


def _value(rng: random.Random, depth: int) -> Any:
    """A JSON value from a small grammar of what hostile clients send."""
    choices = ["null", "bool", "int", "float", "text", "odd-text"]
    if depth < 6:
        choices += ["list", "object"]
    kind = rng.choice(choices)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, -1, 1, 2**31, 2**63, -(2**63), 10**30])
    if kind == "float":
        return rng.choice([0.5, -1e308, 1e308, 3.14])
    if kind == "text":
        return rng.choice(["", "x", "tools/list", "2.0", "1.0", "a" * 1000])
    if kind == "odd-text":
        return rng.choice(["\u0000", "\ud800", "é", "\n", '"', "\\"])
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["id", "method", "params", "jsonrpc", "x"]): _value(rng, depth + 1)}


def _message(rng: random.Random, msg_id: int) -> bytes:
    message: dict[str, Any] = {}
    if rng.random() < 0.9:
        message["jsonrpc"] = rng.choice(["2.0", "2.0", "2.0", "1.0", 2, None])
    message["id"] = msg_id if rng.random() < 0.85 else _value(rng, 5)
    if rng.random() < 0.95:
        message["method"] = rng.choice(
            ["tools/list", "tools/call", "ping", "resources/list", "prompts/list", "nope", 7, ""]
        )
    if rng.random() < 0.8:
        message["params"] = (
            {
                "name": rng.choice(["memory_search", "checkpoint_list", "x"]),
                "arguments": _value(rng, 1),
            }
            if rng.random() < 0.5
            else _value(rng, 0)
        )
    text = json.dumps(message)
    cut = rng.random()
    if cut < 0.05:
        text = text[: rng.randint(0, len(text))]  # cut short
    elif cut < 0.08:
        text = "[" * 300 + "]" * 300
    return text.encode("utf-8", "surrogatepass")


def test_requests_from_a_grammar_are_each_answered_and_the_server_serves_on(mcp: Lines) -> None:
    """Seeded (ENGRAM_FUZZ_SEED, default 27); ENGRAM_FUZZ_ROUNDS x 5 requests (default 12)."""
    seed = int(os.environ.get("ENGRAM_FUZZ_SEED", "27"))
    count = 5 * int(os.environ.get("ENGRAM_FUZZ_ROUNDS", "12"))
    rng = random.Random(f"mcp-{seed}")
    for n in range(count):
        msg_id = 1000 + n
        line = _message(rng, msg_id)
        mcp.send(line)
        # The server must still answer a ping after each line: every line before it was read,
        # and each got at most one answer. (A tool call may be answered after the ping, as
        # JSON-RPC allows: the first call of a tool that imports its modules is slower than a
        # ping. Its answer is waited for, so it cannot be taken for the next line's.)
        mcp.send(json.dumps({"jsonrpc": "2.0", "id": f"ping-{n}", "method": "ping"}).encode())
        awaited = _request_id(line)
        answers: list[dict[str, Any]] = []
        pinged = False
        while not (pinged and (awaited is None or any(a.get("id") == awaited for a in answers))):
            answer = mcp.receive()
            if answer.get("id") == f"ping-{n}":
                pinged = True
            else:
                answers.append(answer)
        assert len(answers) <= 1, (seed, n, line, answers)
        if _is_request(line):
            # A request with an id is answered, whatever else is wrong with it.
            sent_id = json.loads(line)["id"]
            assert [a.get("id") for a in answers] == [sent_id], (seed, n, line, answers)
        for answer in answers:
            assert answer.get("jsonrpc") == "2.0" and ("result" in answer or "error" in answer)


def _request_id(line: bytes) -> Any:
    """The id an answer to this line must carry, when the line is a request that reaches a
    handler with a usable id (None: a notification, a response, or a line refused before)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    msg_id = message.get("id")
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
        return None
    return msg_id


def _is_request(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return (
        isinstance(message, dict)
        and "method" in message
        and isinstance(message.get("id"), int)
        and not isinstance(message.get("id"), bool)
    )
