"""The MCP server's line guard, in-process (issue 31): each line the SDK would drop gets the
JSON-RPC error the specification names, and every line it can serve passes through untouched.
test_mcp_hostile_lines.py proves the same over the real process's stdio."""

from __future__ import annotations

import json
import os

import pytest

from memory_core.mcp_server import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_DEPTH,
    PARSE_ERROR,
    guard_lines,
    line_problem,
)


def _nested(depth: int) -> bytes:
    """A request whose params hold lists nested so that the message is `depth` levels deep."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return f'{{"jsonrpc": "2.0", "id": 1, "method": "m", "params": {{"a": {inner}}}}}'.encode()


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": "a-1", "method": "tools/call", "params": {"name": "x"}}',
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        b'{"jsonrpc": "2.0", "id": 9, "result": {}}',  # a response to the server's request
        b'{"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"n": 18446744073709551615}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"n": -9223372036854775808}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"t": "\\ud83d\\ude00"}}',
        _nested(MAX_DEPTH),
    ],
    ids=[
        "request",
        "string-id",
        "notification",
        "response",
        "u64-max",
        "i64-min",
        "pair",
        "deep-ok",
    ],
)
def test_a_line_the_library_can_serve_passes(line: bytes) -> None:
    assert line_problem(line) is None


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        (b'{"jsonrpc": "2.0", "id": 2,', (None, PARSE_ERROR)),
        (b"[1, 2]", (None, INVALID_REQUEST)),
        (b'{"jsonrpc": "2.0", "id": true, "method": "m"}', (None, INVALID_REQUEST)),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "m"}', (None, INVALID_REQUEST)),
        (b'{"jsonrpc": "1.0", "id": 3, "method": "m"}', (3, INVALID_REQUEST)),
        (b'{"id": 3, "method": "m"}', (3, INVALID_REQUEST)),
        (b'{"jsonrpc": "2.0", "id": 4, "method": ""}', (4, INVALID_REQUEST)),
        (b'{"jsonrpc": "2.0", "id": 4, "method": ["m"]}', (4, INVALID_REQUEST)),
        (b'{"jsonrpc": "2.0", "id": 5, "method": "m", "params": [1]}', (5, INVALID_PARAMS)),
        (b'{"jsonrpc": "2.0", "id": 5, "method": "m", "params": "x"}', (5, INVALID_PARAMS)),
        (
            b'{"jsonrpc": "2.0", "id": 6, "method": "m", "params": {"n": 18446744073709551616}}',
            (6, INVALID_REQUEST),
        ),
        (
            b'{"jsonrpc": "2.0", "id": 6, "method": "m", "params": {"n": -9223372036854775809}}',
            (6, INVALID_REQUEST),
        ),
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "m", "params": {"t": "\\ud800"}}',
            (7, INVALID_REQUEST),
        ),
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "m", "params": {"\\udfff": 1}}',
            (7, INVALID_REQUEST),
        ),
        (_nested(MAX_DEPTH + 1), (1, INVALID_REQUEST)),
    ],
    ids=[
        "cut-json",
        "batch",
        "bool-id",
        "float-id",
        "jsonrpc-1.0",
        "no-jsonrpc",
        "empty-method",
        "list-method",
        "params-list",
        "params-text",
        "past-u64",
        "past-i64",
        "lone-surrogate",
        "lone-surrogate-key",
        "one-level-too-deep",
    ],
)
def test_a_line_the_library_would_drop_gets_its_error(
    line: bytes, answer: tuple[object, int]
) -> None:
    problem = line_problem(line)
    assert problem is not None
    assert (problem[0], problem[1]) == answer
    assert problem[2]  # a message a person can read


def test_the_messages_say_what_is_wrong() -> None:
    assert "nested deeper than 64" in str(line_problem(_nested(MAX_DEPTH + 1)))
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"n": 99999999999999999999}}'
    assert "a whole number past 64 bits (99999999999999999999)" in str(line_problem(big))
    problem = line_problem(b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": 3}')
    assert problem is not None and problem[2] == "tools/call: params must be an object"


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_the_guard_passes_what_the_library_can_serve_and_answers_the_rest() -> None:
    client_in_r, client_in_w = os.pipe()
    client_out_r, client_out_w = os.pipe()
    library_in_r, library_in_w = os.pipe()
    library_out_r, library_out_w = os.pipe()
    threads = guard_lines(client_in_r, client_out_w, library_in_w, library_out_r)
    os.write(
        client_in_w,
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\n'
        b"   \n"
        b'{"jsonrpc": "1.0", "id": 2, "method": "tools/list"}\n'
        b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}',  # the last line has no newline
    )
    os.close(client_in_w)
    assert _read_all(library_in_r).splitlines(keepends=True) == [
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\n',
        b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}\n',
    ]
    os.write(library_out_w, b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n')
    os.close(library_out_w)
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()
    answers = [json.loads(line) for line in _read_all(client_out_r).splitlines()]
    assert answers == [
        {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {
                "code": INVALID_REQUEST,
                "message": 'only JSON-RPC "2.0" messages are served',
            },
        },
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ]
    os.close(client_out_r)
    os.close(library_in_r)
