"""A fuzzer of engram's language server over real stdio: every request gets an answer.

Malformed frames, invalid JSON, non-2.0 messages, params of the wrong shape for every method
the server handles, wrong-typed arguments for every `engram.*` command and absurd
Content-Length values. After each group the server must still answer a hover. Expected
errors are one log line: the server's stderr holds a traceback only for internal errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.raw_client import RawServer

INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
PARSE_ERROR = -32700
INTERNAL_ERROR = -32603

REQUEST_METHODS = [
    "textDocument/hover",
    "textDocument/codeAction",
    "textDocument/codeLens",
    "textDocument/diagnostic",
    "workspace/symbol",
    "workspace/executeCommand",
]
NOTIFICATION_METHODS = [
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didSave",
    "textDocument/didClose",
    "workspace/didChangeConfiguration",
    "workspace/didChangeWatchedFiles",
    "workspace/didChangeWorkspaceFolders",
    "workspace/didDeleteFiles",
    "workspace/didRenameFiles",
    "$/setTrace",
    "$/cancelRequest",
    "window/workDoneProgress/cancel",
    "notebookDocument/didOpen",
    "notebookDocument/didChange",
]


def _param_variants(uri: str) -> list[Any]:
    doc = {"uri": uri}
    return [
        None,
        [],
        "text",
        42,
        True,
        {},
        {"textDocument": 5},
        {"textDocument": {"uri": 5}},
        {"textDocument": doc, "position": {"line": -1, "character": 0}},
        {"textDocument": doc, "position": {"line": "1", "character": 0}},
        {"textDocument": doc, "position": {"line": 2**40, "character": 0}},
        {"textDocument": {"uri": "not a uri"}, "position": {"line": 0, "character": 0}},
        {"textDocument": doc, "range": {"start": {"line": 9, "character": 0}}},
        {
            "textDocument": doc,
            "range": {"start": {"line": 5, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []},
        },
        {"textDocument": {**doc, "version": "x"}, "contentChanges": [{"text": 5}]},
        {"textDocument": {**doc, "version": 2}, "contentChanges": "abc"},
        {"changes": [{"uri": 5, "type": 99}]},
        {"files": [{"oldUri": uri}]},
        {"event": {"added": [{"uri": 3}], "removed": None}},
        {"query": ["not", "text"]},
        {"id": {"nested": True}},
        {"command": 5, "arguments": "x"},
        {"command": "engram.status", "arguments": {"not": "a list"}},
        {"a": {"b": {"c": [{"d": None}] * 50}}},
    ]


COMMAND_ARGUMENTS: list[list[Any]] = [
    [],
    [None],
    ["text"],
    [42],
    [[]],
    [{}, {}],
    [{"limit": "ten"}],
    [{"id": 7}],
    [{"uri": 5}],
    [{"confirm": "yes", "id": []}],
    [{"files": "a.py"}],
    [{"line": -3}],
    [{"since": []}],
    [{"id": "nope-" + "x" * 50}],
    [{"workspace": "/etc"}],
    [{"title": "", "message": ""}],
    [{}],
]


@pytest.fixture
def server(tmp_path: Path) -> Any:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "app.py").write_text("import os\nprint(os.environ)\n")
    raw = RawServer(folder, tmp_path / "server.log")
    result = raw.initialize()
    assert "capabilities" in result["result"]
    raw.commands = result["result"]["capabilities"]["executeCommandProvider"]["commands"]  # type: ignore[attr-defined]
    raw.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": (folder / "app.py").as_uri(),
                "languageId": "python",
                "version": 1,
                "text": "import os\nprint(os.environ)\n",
            }
        },
    )
    yield raw
    raw.close()


def _hover_works(server: RawServer) -> None:
    answer = server.request(
        "textDocument/hover",
        {
            "textDocument": {"uri": (server.folder / "app.py").as_uri()},
            "position": {"line": 0, "character": 0},
        },
        timeout=30,
    )
    assert "result" in answer, answer


def test_the_documented_bad_requests_are_invalid_params(server: RawServer) -> None:
    uri = (server.folder / "app.py").as_uri()
    cases = {
        "hover with params null": ("textDocument/hover", None),
        "hover at a negative line": (
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}},
        ),
        "codeAction without context": (
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            },
        ),
        "executeCommand without command": ("workspace/executeCommand", {"arguments": []}),
        "gotcha.context with a string limit": (
            "workspace/executeCommand",
            {"command": "engram.gotcha.context", "arguments": [{"task": "x", "limit": "5"}]},
        ),
    }
    for label, (method, params) in cases.items():
        answer = server.request(method, params)
        assert answer.get("error", {}).get("code") == INVALID_PARAMS, (label, answer)
    assert "`limit` must be a whole number" in answer["error"]["message"]
    _hover_works(server)
    # Expected errors are one log line each, never a traceback.
    assert "Traceback" not in server.log_text()


def test_invalid_json_and_non_2_0_messages_are_answered(server: RawServer) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000  # deeper than any JSON decoder goes
    bodies = [
        b"{",
        b"[1, 2",
        b"nul",
        b"\xff\xfe\x00",
        b'{"jsonrpc": "2.0", "id": 1, "method"',
        deep,
    ]
    for body in bodies:
        server.send_bytes(server.frame(body))
    errors = server.wait_null_errors(len(bodies))
    assert [e["error"]["code"] for e in errors] == [PARSE_ERROR] * len(bodies)

    for body in (b'"a string"', b"[]", b"42"):  # JSON, but no request object
        server.send_bytes(server.frame(body))
    errors = server.wait_null_errors(len(bodies) + 3)
    assert [e["error"]["code"] for e in errors[len(bodies) :]] == [INVALID_REQUEST] * 3

    for message in (
        {"jsonrpc": "1.0", "id": 501, "method": "textDocument/hover", "params": {}},
        {"id": 502, "method": "workspace/symbol", "params": {"query": ""}},
        {"jsonrpc": "2.0", "id": 503, "method": 7},
        {"jsonrpc": "2.0", "id": 504, "method": "workspace/symbol", "params": "q"},
    ):
        server.send(message)
    for msg_id, code in ((501, INVALID_REQUEST), (502, INVALID_REQUEST), (503, INVALID_REQUEST)):
        assert server.wait(msg_id)["error"]["code"] == code
    assert server.wait(504)["error"]["code"] == INVALID_PARAMS
    _hover_works(server)
    assert "Traceback" not in server.log_text()


def test_malformed_frames_and_absurd_lengths_do_not_stop_the_server(server: RawServer) -> None:
    hover = {
        "jsonrpc": "2.0",
        "method": "textDocument/hover",
        "params": {
            "textDocument": {"uri": (server.folder / "app.py").as_uri()},
            "position": {"line": 0, "character": 0},
        },
    }
    # A declared length of a terabyte, with a small body: refused (not allocated), answered
    # with the request's id, and the next frame is served.
    small = json.dumps({**hover, "id": 601}).encode()
    server.send_bytes(b"Content-Length: 1000000000000\r\n\r\n" + small)
    server.send({**hover, "id": 602})
    assert server.wait(601)["error"]["code"] == INVALID_REQUEST
    assert "refused" in server.wait(601)["error"]["message"]
    assert "result" in server.wait(602)
    # 40 digits, a negative length, text as a length, no length, junk between frames.
    server.send_bytes(
        b"Content-Length: " + b"9" * 40 + b"\r\n\r\n" + json.dumps({**hover, "id": 603}).encode()
    )
    server.send_bytes(b"Content-Length: -5\r\n\r\n{}")
    server.send_bytes(b"Content-Length: abc\r\n\r\n{}")
    server.send_bytes(b"Content-Type: application/json\r\n\r\n{}")
    server.send_bytes(b"GARBAGE LINE WITHOUT MEANING\r\n" + b"x" * 20_000 + b"\r\n")
    # A body shorter than declared, padded: one invalid JSON message, then back in step.
    body = json.dumps({**hover, "id": 604}).encode()
    server.send_bytes(b"Content-Length: %d\r\n\r\n" % (len(body) + 10) + body[:-5] + b" " * 15)
    server.send({**hover, "id": 605})
    assert server.wait(603)["error"]["code"] == INVALID_REQUEST
    assert "result" in server.wait(605)
    assert server.proc.poll() is None
    _hover_works(server)


def test_fuzzed_params_for_every_method_and_command_get_answers(server: RawServer) -> None:
    uri = (server.folder / "app.py").as_uri()
    variants = _param_variants(uri)
    sent: list[tuple[int, str, Any]] = []
    for method in REQUEST_METHODS:
        for params in variants:
            sent.append((server.request_async(method, params), method, params))
        sent.append((server.request_async(method, omit_params=True), method, "<no params>"))
    for method in NOTIFICATION_METHODS:
        for params in variants:
            server.notify(method, params)
    commands: list[str] = server.commands  # type: ignore[attr-defined]
    assert len(commands) >= 30
    for command in commands:
        for arguments in COMMAND_ARGUMENTS:
            params = {"command": command, "arguments": arguments}
            sent.append(
                (server.request_async("workspace/executeCommand", params), command, arguments)
            )

    internal: list[Any] = []
    for msg_id, method, params in sent:
        answer = server.wait(msg_id, timeout=120)
        assert "result" in answer or "error" in answer, (method, params, answer)
        if answer.get("error", {}).get("code") == INTERNAL_ERROR:
            internal.append((method, params, answer["error"]["message"]))
    # Wrong-typed arguments are the caller's mistake: InvalidParams, never an internal error.
    for msg_id, method, params in sent:
        if method.startswith("engram.") and params in (
            [{"limit": "ten"}],
            [{"id": 7}],
            [{"uri": 5}],
        ):
            assert server.responses[msg_id]["error"]["code"] == INVALID_PARAMS, (method, params)
    assert internal == [], internal
    _hover_works(server)
    print(
        f"fuzzer: {len(sent)} requests answered, "
        f"{len(NOTIFICATION_METHODS) * len(variants)} notifications sent, "
        f"{len(commands)} commands x {len(COMMAND_ARGUMENTS)} argument shapes"
    )
    assert "Traceback" not in server.log_text()


def test_negative_control_pygls_reader_leaves_bad_requests_unanswered(tmp_path: Path) -> None:
    """The same server read by pygls' own reader drops a hover with params null: the checks
    above can fail, and the reader is what makes them pass."""
    from tests.bench.bench_flood import PYGLS_READER

    folder = tmp_path / "ws"
    folder.mkdir()
    raw = RawServer(folder, tmp_path / "pygls.log", command=PYGLS_READER)
    try:
        raw.initialize()
        dropped = raw.request_async("textDocument/hover", None)
        try:
            raw.wait(dropped, timeout=3)
        except AssertionError:
            pass
        else:
            raise AssertionError("pygls' reader answered; the negative control no longer holds")
        assert raw.request("workspace/symbol", {"query": ""}, timeout=30)  # it still serves
    finally:
        raw.close()
