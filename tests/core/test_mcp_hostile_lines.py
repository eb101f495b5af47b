"""Every line a client sends the MCP server is answered: invalid JSON, a message that is not
JSON-RPC 2.0, params that are no object, JSON nested 200 deep each get the JSON-RPC error the
specification names, and the server goes on serving. A real `engram mcp` process over stdio."""

from __future__ import annotations

import json
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

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 30.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no answer"
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
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
