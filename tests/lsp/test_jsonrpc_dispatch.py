"""What a client gets back for each message it sends, through engram's JSON-RPC reader in process.

The bytes go through `lsp_server.jsonrpc.serve` (the loop `engram lsp` runs on stdio and TCP) into
the server `engram lsp` builds, whole and cut into pieces: every request gets exactly one answer,
the errors JSON-RPC 2.0 names (parse error, invalid request, invalid params) carry the request's
id when it can be known, notifications are never answered, and one bad message never costs the
others read with it. test_hostile_requests.py sends the same kinds over a real pipe.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.workspace import Workspace

from lsp_server.frames import FrameParser
from lsp_server.jsonrpc import MAX_FRAME_BYTES, EngramProtocol, coalesce_did_change, serve
from lsp_server.server import EngramServer
from lsp_server.setup import create_server
from tests.lsp.framing import frame

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
ONLY_2_0 = 'only JSON-RPC "2.0" messages are served'


def request(msg_id: Any, method: str, params: Any = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method, **extra}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


class Client:
    """The server `engram lsp` builds, its output captured, fed bytes through `serve`."""

    def __init__(self) -> None:
        self.server: EngramServer = create_server()
        self.server.protocol.client_capabilities = types.ClientCapabilities()
        self.sent: list[dict[str, Any]] = []
        client = self

        class Capture:
            def write(self, data: bytes) -> None:
                client.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

            def close(self) -> None:
                return None

        self.server.protocol.set_writer(Capture())

    @property
    def protocol(self) -> EngramProtocol:
        assert isinstance(self.server.protocol, EngramProtocol)
        return self.server.protocol

    def feed(self, *chunks: bytes, answers: int = 0) -> list[dict[str, Any]]:
        """Serve `chunks` as successive reads, then wait for `answers` responses in all (the
        handlers that run as tasks), then the end of input. Returns what was sent."""
        asyncio.run(self.serve(list(chunks), answers))
        return self.sent

    async def serve(self, chunks: list[bytes], answers: int) -> None:
        async def read_chunk() -> bytes:
            if chunks:
                return chunks.pop(0)
            for _ in range(400):
                if len(self.responses()) >= answers:
                    break
                await asyncio.sleep(0.005)
            return b""

        await serve(read_chunk, self.protocol, lambda: False)

    def responses(self) -> list[dict[str, Any]]:
        return [m for m in self.sent if "method" not in m]

    def errors(self) -> list[tuple[Any, int]]:
        return [(m["id"], m["error"]["code"]) for m in self.responses() if "error" in m]


@pytest.fixture
def client() -> Iterator[Client]:
    made = Client()
    yield made
    made.server.close_all()


def pieces(stream: bytes, size: int) -> list[bytes]:
    return [stream[at : at + size] for at in range(0, len(stream), size)]


# -- one answer per request, whole or in pieces --------------------------------------------------


@pytest.mark.parametrize("size", [1, 3, 17, 10_000])
def test_requests_cut_anywhere_are_each_answered_once_in_order(client: Client, size: int) -> None:
    stream = b"".join(
        [
            frame(request(1, "engram/noSuchMethod")),
            frame(notification("engram/noSuchNotification")),
            frame(request("two", "engram/noSuchMethod")),
            frame(request(3, "shutdown")),
        ]
    )
    sent = client.feed(*pieces(stream, size))
    assert [m["id"] for m in sent] == [1, "two", 3]
    assert [m.get("error", {}).get("code") for m in sent] == [METHOD_NOT_FOUND] * 2 + [None]
    assert sent[2]["result"] is None


def test_invalid_json_is_a_parse_error_and_the_next_request_is_still_answered(
    client: Client,
) -> None:
    sent = client.feed(
        frame(b'{"jsonrpc": "2.0", "id": 1, "method": '), frame(request(2, "shutdown"))
    )
    assert client.errors() == [(None, PARSE_ERROR)]
    assert "invalid JSON" in sent[0]["error"]["message"]
    assert sent[1] == {"jsonrpc": "2.0", "id": 2, "result": None}


def test_a_body_that_is_two_objects_is_invalid_json_even_in_a_burst(client: Client) -> None:
    """Bodies read together are decoded as one array; a body `{..},{..}` must not pass there
    as two messages: alone, it is invalid JSON."""
    two = json.dumps(request(8, "shutdown")) + "," + json.dumps(request(9, "shutdown"))
    sent = client.feed(frame(request(7, "engram/noSuchMethod")) + frame(two.encode()))
    assert sorted(client.errors(), key=str) == [(7, METHOD_NOT_FOUND), (None, PARSE_ERROR)]
    assert len(sent) == 2


def test_a_burst_with_one_invalid_body_answers_all_the_others(client: Client) -> None:
    stream = (
        frame(request(1, "engram/noSuchMethod"))
        + frame(b"{nope}")
        + frame(request(2, "engram/noSuchMethod"))
    )
    client.feed(stream)
    # The parse error is sent as the bodies are decoded, before the requests are dispatched:
    # the answers match their requests by id, not by order.
    assert client.errors() == [(None, PARSE_ERROR), (1, METHOD_NOT_FOUND), (2, METHOD_NOT_FOUND)]


def test_deeply_nested_json_is_a_parse_error_not_a_crash(client: Client) -> None:
    client.feed(frame(b"[" * 100_000 + b"]" * 100_000), frame(request(1, "shutdown")))
    assert client.errors() == [(None, PARSE_ERROR)]
    assert client.responses()[1]["id"] == 1


def test_a_frame_over_the_limit_is_refused_with_its_id_and_the_next_is_answered(
    client: Client,
) -> None:
    declared = MAX_FRAME_BYTES + 1
    head = b'{"jsonrpc": "2.0", "id": 41, "method": "x", "params": "'
    sent = client.feed(
        b"Content-Length: %d\r\n\r\n" % declared + head,
        b"y" * 70_000,
        frame(request(42, "shutdown")),
    )
    assert sent[0]["id"] == 41 and sent[0]["error"]["code"] == INVALID_REQUEST
    assert f"{declared} bytes refused" in sent[0]["error"]["message"]
    assert str(MAX_FRAME_BYTES) in sent[0]["error"]["message"]
    assert sent[1] == {"jsonrpc": "2.0", "id": 42, "result": None}


def test_a_frame_of_exactly_the_limit_is_read() -> None:
    body = json.dumps(request(1, "x", {"p": "y" * 10})).encode()
    parser = FrameParser(max_frame=len(body))
    parser.feed(frame(body) + frame(body + b" "))
    assert [(f.body, f.oversize) for f in parser.frames()] == [(body, None), (None, len(body) + 1)]


# -- JSON-RPC 2.0's errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected", "says"),
    [
        (
            [request(1, "shutdown")],
            (None, INVALID_REQUEST),
            "a message must be a JSON object (no batches)",
        ),
        (5, (None, INVALID_REQUEST), "a message must be a JSON object (no batches)"),
        ({"jsonrpc": "1.0", "id": 3, "method": "shutdown"}, (3, INVALID_REQUEST), ONLY_2_0),
        ({"id": 3, "method": "shutdown"}, (3, INVALID_REQUEST), ONLY_2_0),
        (
            {"jsonrpc": "2.0", "id": 4},
            (4, INVALID_REQUEST),
            "a request needs a method name (a string)",
        ),
        (request(5, ""), (5, INVALID_REQUEST), "a request needs a method name (a string)"),
        (
            {"jsonrpc": "2.0", "id": 6, "method": 12},
            (6, INVALID_REQUEST),
            "a request needs a method name (a string)",
        ),
        (
            request(True, "shutdown"),
            (None, INVALID_REQUEST),
            "a request id is a string or an integer",
        ),
        (
            request(1.5, "shutdown"),
            (None, INVALID_REQUEST),
            "a request id is a string or an integer",
        ),
        (
            request(None, "shutdown"),
            (None, INVALID_REQUEST),
            "a request id is a string or an integer",
        ),
        (
            request({"n": 1}, "shutdown"),
            (None, INVALID_REQUEST),
            "a request id is a string or an integer",
        ),
        (
            request(8, "textDocument/hover", "x"),
            (8, INVALID_PARAMS),
            "textDocument/hover: params must be an object",
        ),
        (
            request(9, "textDocument/hover", 3),
            (9, INVALID_PARAMS),
            "textDocument/hover: params must be an object",
        ),
    ],
)
def test_a_message_that_is_no_request_gets_the_error_json_rpc_names(
    client: Client, message: Any, expected: tuple[Any, int], says: str
) -> None:
    sent = client.feed(frame(message), frame(request(100, "shutdown")))
    assert client.errors() == [expected]
    assert sent[0]["error"]["message"] == says
    assert sent[-1] == {"jsonrpc": "2.0", "id": 100, "result": None}


def test_a_bad_id_gets_an_error_with_id_null_even_in_a_burst(client: Client) -> None:
    client.feed(frame(request(False, "shutdown")) + frame(request(1, "engram/noSuchMethod")))
    assert client.errors() == [(None, INVALID_REQUEST), (1, METHOD_NOT_FOUND)]


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "1.0", "id": 3, "result": 1},  # a response of another protocol
        {"jsonrpc": "1.0", "id": 3, "error": {"code": 1, "message": "x"}},
        notification("engram/noSuchNotification", "a string"),
        notification("$/cancelRequest", {"id": True}),
        notification("$/cancelRequest", {}),
        notification("$/cancelRequest", ["x"]),
        notification("$/cancelRequest"),
        notification("$/cancelRequest", {"id": 99}),  # nothing to cancel: no answer either
        notification("textDocument/didOpen", {"textDocument": {"uri": 5}}),
    ],
)
def test_what_needs_no_answer_gets_none(client: Client, message: Any) -> None:
    sent = client.feed(frame(message), frame(request(100, "shutdown")))
    assert sent == [{"jsonrpc": "2.0", "id": 100, "result": None}]


def test_params_that_do_not_fit_the_method_are_invalid_params_naming_the_field(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="engram.lsp")
    hover = {"textDocument": {"uri": "file:///w/a.py"}, "position": {"line": -1, "character": 0}}
    sent = client.feed(frame(request(1, "textDocument/hover", hover)))
    assert client.errors() == [(1, INVALID_PARAMS)]
    assert "invalid params for textDocument/hover" in sent[0]["error"]["message"]
    assert "$.params.position" in sent[0]["error"]["message"]


def test_a_request_of_params_as_a_list_is_read_not_refused(client: Client) -> None:
    client.feed(frame(request(1, "engram/noSuchMethod", [1, 2])))
    assert client.errors() == [(1, METHOD_NOT_FOUND)]


def test_a_command_refusing_its_arguments_is_invalid_params_in_one_log_line(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    params = {"command": "engram.status", "arguments": ["not an object"]}
    with caplog.at_level(logging.INFO, logger="engram.lsp"):
        sent = client.feed(frame(request(1, "workspace/executeCommand", params)), answers=1)
    assert client.errors() == [(1, INVALID_PARAMS)]
    assert "engram.status takes one JSON object" in sent[0]["error"]["message"]
    refused = [r for r in caplog.records if "request 1:" in r.getMessage()]
    assert len(refused) == 1 and refused[0].exc_info is None
    assert refused[0].getMessage() == f"request 1: {sent[0]['error']['message']}"


def test_a_command_that_fails_unexpectedly_is_an_internal_error(client: Client) -> None:
    # No folder is open: engram.status says so, as invalid params with the error's code.
    params = {"command": "engram.status", "arguments": [{}]}
    sent = client.feed(frame(request(1, "workspace/executeCommand", params)), answers=1)
    assert client.errors() == [(1, INVALID_PARAMS)]
    assert "no workspace folder is open" in sent[0]["error"]["message"]


def test_a_dispatch_bug_answers_the_request_and_keeps_the_others(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = client.protocol.handle_message

    def flaky(message: Any) -> None:
        if getattr(message, "id", None) == 2:
            raise RuntimeError("a bug")
        real(message)

    monkeypatch.setattr(client.protocol, "handle_message", flaky)
    sent = client.feed(
        frame(request(1, "engram/noSuchMethod"))
        + frame(request(2, "engram/noSuchMethod"))
        + frame(notification("engram/noSuchNotification"))
        + frame(request(3, "engram/noSuchMethod"))
    )
    assert [m["id"] for m in sent] == [1, 2, 3]
    assert sent[1]["error"] == {"code": -32603, "message": "internal error: a bug"}


def test_a_dispatch_bug_on_a_notification_sends_nothing(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(message: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(client.protocol, "handle_message", broken)
    assert client.feed(frame(notification("initialized", {}))) == []


def test_a_bug_in_the_reader_does_not_end_the_session(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = client.protocol.handle_frames
    calls: list[int] = []

    def first_fails(frames: Any) -> None:
        calls.append(len(frames))
        if len(calls) == 1:
            raise RuntimeError("a bug")
        real(frames)

    monkeypatch.setattr(client.protocol, "handle_frames", first_fails)
    sent = client.feed(frame(request(1, "shutdown")), frame(request(2, "engram/x")))
    assert calls == [1, 1]
    assert [m["id"] for m in sent] == [2]


def test_the_reader_stops_when_the_server_does(client: Client) -> None:
    reads: list[int] = []

    async def read_chunk() -> bytes:
        reads.append(1)
        return frame(request(len(reads), "engram/x"))

    asyncio.run(serve(read_chunk, client.protocol, lambda: len(reads) >= 3))
    assert [m["id"] for m in client.sent] == [1, 2, 3]


# -- answers from the client ------------------------------------------------------------------


def _ask(client: Client, answer: dict[str, Any]) -> Any:
    """The server asks the client to show a document; the client answers `answer`."""
    params = types.ShowDocumentParams(uri="file:///w/a.py")
    future = client.protocol.send_request(types.WINDOW_SHOW_DOCUMENT, params)
    asked = client.sent[-1]
    assert asked["method"] == types.WINDOW_SHOW_DOCUMENT
    client.feed(frame({"jsonrpc": "2.0", "id": asked["id"], **answer}))
    return future.result(timeout=1)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"result": None}, None),  # some clients answer showDocument with null
        ({"result": {"success": True}}, types.ShowDocumentResult(success=True)),
        ({"result": "yes"}, "yes"),  # an unexpected shape reaches the request as it came
    ],
)
def test_the_request_waiting_on_a_client_answer_gets_it_whatever_its_shape(
    client: Client, answer: dict[str, Any], expected: Any
) -> None:
    assert _ask(client, answer) == expected


def test_a_null_answer_without_a_usable_id_is_dropped(client: Client) -> None:
    client.feed(frame({"jsonrpc": "2.0", "id": None, "result": None}))
    client.feed(frame({"jsonrpc": "2.0", "id": [1], "result": "x"}))
    assert client.sent == []


# -- the answers the stdio front already sent ---------------------------------------------------


def test_an_early_pull_answer_equal_to_the_servers_is_sent_once(client: Client) -> None:
    refreshed: list[int] = []
    client.server.refresh_diagnostics = lambda: refreshed.append(1)
    client.protocol.pull_answered_early(5, None)
    client.protocol._send_data({"jsonrpc": "2.0", "id": 5, "result": None})
    client.protocol._send_data({"jsonrpc": "2.0", "id": 5, "result": None})
    assert client.sent == [{"jsonrpc": "2.0", "id": 5, "result": None}]  # the second: no pull
    assert refreshed == []


def test_an_early_pull_answer_that_differs_asks_the_client_to_pull_again(client: Client) -> None:
    refreshed: list[int] = []
    client.server.refresh_diagnostics = lambda: refreshed.append(1)
    early = {"kind": "full", "items": []}
    client.protocol.pull_answered_early("p", early)
    client.protocol._send_data({"jsonrpc": "2.0", "id": "p", "result": {"kind": "full"}})
    assert client.sent == [] and refreshed == [1]

    async def in_loop() -> None:
        client.protocol.pull_answered_early("q", early)
        client.protocol._send_data({"jsonrpc": "2.0", "id": "q", "result": None})
        assert refreshed == [1]  # asked from the loop, once the current message is done
        await asyncio.sleep(0)

    asyncio.run(in_loop())
    assert client.sent == [] and refreshed == [1, 1]


def test_an_early_answer_only_holds_back_the_answer_to_its_own_id(client: Client) -> None:
    client.protocol.answered_early(7, {"capabilities": {}})
    client.protocol.pull_answered_early(8, None)
    client.protocol._send_data({"jsonrpc": "2.0", "id": 6, "result": 1})
    client.protocol._send_data({"jsonrpc": "2.0", "id": "7", "result": 1})
    client.protocol._send_data({"jsonrpc": "2.0", "id": 7, "method": "x"})  # a request of ours
    assert [m["id"] for m in client.sent] == [6, "7", 7]


# -- didChange bursts -------------------------------------------------------------------------


def _edit(uri: str, version: int, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}],
        },
        **extra,
    }


def test_three_edits_in_a_row_merge_into_one_with_the_last_version() -> None:
    messages = [_edit("a", 2, "1"), _edit("a", 3, "2"), _edit("a", 4, "3")]
    merged = coalesce_did_change(messages)
    assert len(merged) == 1
    assert [c["text"] for c in merged[0]["params"]["contentChanges"]] == ["1", "2", "3"]
    assert merged[0]["params"]["textDocument"]["version"] == 4
    assert [len(m["params"]["contentChanges"]) for m in messages] == [1, 1, 1]


@pytest.mark.parametrize(
    "odd",
    [
        {**_edit("a", 3, "2"), "jsonrpc": "1.0"},
        {**_edit("a", 3, "2"), "id": 1},
        {**_edit("a", 3, "2"), "params": None},
        {**_edit("a", 3, "2"), "params": {"textDocument": "a", "contentChanges": []}},
        {**_edit("a", 3, "2"), "params": {"textDocument": {"uri": "a"}, "contentChanges": {}}},
        {**_edit("a", 3, "2"), "method": "textDocument/didSave"},
        [_edit("a", 3, "2")],
    ],
)
def test_only_plain_edits_of_the_same_document_merge(odd: Any) -> None:
    messages = [_edit("a", 2, "1"), odd, _edit("a", 4, "3")]
    merged = coalesce_did_change(messages)
    assert merged == messages


def test_a_burst_of_typing_reaches_the_document_as_typed(client: Client, tmp_path: Path) -> None:
    uri = (tmp_path / "a.py").as_uri()
    client.server.protocol._workspace = Workspace(None, types.TextDocumentSyncKind.Incremental)
    opened = {"uri": uri, "languageId": "python", "version": 1, "text": ""}
    typed = "def f():\n    return 1\n"
    stream = frame(notification("textDocument/didOpen", {"textDocument": opened}))
    line = character = 0
    for version, char in enumerate(typed, start=2):
        where = {"line": line, "character": character}
        change = {"range": {"start": where, "end": where}, "rangeLength": 0, "text": char}
        params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
        stream += frame(notification("textDocument/didChange", params))
        line, character = (line + 1, 0) if char == "\n" else (line, character + 1)
    client.feed(*pieces(stream, 700))
    document = client.server.workspace.get_text_document(uri)
    assert document.source == typed
    assert document.version == len(typed) + 1


def test_edits_at_the_edge_of_lsps_numbers_are_read_and_past_it_refused(client: Client) -> None:
    from pygls.protocol import default_converter

    from lsp_server.jsonrpc import _did_change_message

    converter = default_converter()
    top = 2**31 - 1

    def message(line: int, character: int, length: int | None) -> dict[str, Any]:
        where = {"line": line, "character": character}
        change: dict[str, Any] = {"range": {"start": where, "end": where}, "text": ""}
        if length is not None:
            change["rangeLength"] = length
        params = {"textDocument": {"uri": "file:///a", "version": 1}, "contentChanges": [change]}
        return notification("textDocument/didChange", params)

    for line, character, length in ((top, 0, None), (0, top, 0), (0, 0, top), (0, 0, 0)):
        fast = _did_change_message(converter, message(line, character, length))
        assert fast is not None
        expected = converter.structure(
            message(line, character, length), types.DidChangeTextDocumentNotification
        )
        assert fast == expected
    for line, character, length in ((top + 1, 0, None), (0, top + 1, 0), (0, 0, top + 1)):
        assert _did_change_message(converter, message(line, character, length)) is None
    for end in (
        {"line": 0},
        {"line": 0, "character": 0, "x": 1},
        [0, 0],
        {"line": 0, "character": -1},
    ):
        odd = message(0, 0, None)
        odd["params"]["contentChanges"][0]["range"]["end"] = end
        assert _did_change_message(converter, odd) is None, end
    extra = message(0, 0, None)
    extra["params"]["other"] = 1
    assert _did_change_message(converter, extra) is None
    not_a_list = message(0, 0, None)
    not_a_list["params"]["contentChanges"] = {"0": {}}
    assert _did_change_message(converter, not_a_list) is None
    hover = message(0, 0, None)
    hover["method"] = "textDocument/hover"
    assert _did_change_message(converter, hover) is None
    odd_range = message(0, 0, None)
    odd_range["params"]["contentChanges"][0]["range"] = {"start": {"line": 0, "character": 0}}
    assert _did_change_message(converter, odd_range) is None


def test_an_unknown_method_without_params_is_method_not_found_not_a_traceback(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    """JSON-RPC lets params out: an unknown request gets "method not found" and an unknown
    notification (a `$/` one a newer client sends) is ignored without an error in the log."""
    with caplog.at_level(logging.WARNING):
        sent = client.feed(frame(request(1, "$/engramUnknown")), frame(notification("$/x")))
    assert client.errors() == [(1, METHOD_NOT_FOUND)]
    assert "$/engramUnknown" in sent[0]["error"]["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_params_pygls_cannot_convert_are_invalid_params_and_the_next_is_answered(
    client: Client,
) -> None:
    """pygls turns the params of a method it does not know into named tuples; a key it cannot
    use (`type_name` names the tuple) is answered, never left without an answer."""
    sent = client.feed(
        frame(request(1, "engram/x", {"type_name": 5})), frame(request(2, "engram/x", {}))
    )
    assert client.errors() == [(1, INVALID_PARAMS), (2, METHOD_NOT_FOUND)]
    assert sent[0]["error"]["message"].startswith("cannot read the params: ")


def test_a_notification_with_params_that_are_no_object_is_ignored_with_a_warning(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="engram.lsp"):
        assert client.feed(frame(notification("engram/x", 5))) == []
    assert [r.getMessage() for r in caplog.records] == [
        "ignored engram/x: params must be an object"
    ]


def test_a_cancelled_request_is_answered_as_cancelled(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    params = {"command": "engram.status", "arguments": [{}]}
    with caplog.at_level(logging.WARNING, logger="engram.lsp"):
        sent = client.feed(
            frame(request(1, "workspace/executeCommand", params))
            + frame(notification("$/cancelRequest", {"id": 1})),
            answers=1,
        )
    assert client.errors() == [(1, -32800)]
    assert "ignored $/cancelRequest" not in caplog.text
    assert len(sent) == 1


def _initialize(params: dict[str, Any], msg_id: int = 7) -> bytes:
    return frame(request(msg_id, "initialize", params))


def test_pygls_answer_to_an_initialize_the_front_answered_is_not_sent(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    from lsp_server import capabilities

    params = {"capabilities": {}}
    early = capabilities.initialize_result(params)
    assert early is not None
    client.protocol.answered_early(7, early)
    with caplog.at_level(logging.WARNING, logger="engram.lsp"):
        sent = client.feed(_initialize(params), frame(request(8, "engram/x")))
    assert [m["id"] for m in sent] == [8]  # the early answer was the answer
    assert "differs" not in caplog.text


def test_an_early_answer_that_differs_from_pygls_is_logged_with_both(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    client.protocol.answered_early(7, {"capabilities": {"hoverProvider": False}})
    with caplog.at_level(logging.WARNING, logger="engram.lsp"):
        assert client.feed(_initialize({"capabilities": {}})) == []
    [logged] = [r.getMessage() for r in caplog.records if "differs" in r.getMessage()]
    assert logged.startswith(
        "the early answer to initialize differs from pygls': "
        'sent {"capabilities": {"hoverProvider": false}}, pygls {"capabilities": {'
    )
    assert '"serverInfo": {"name": "engram"' in logged


def test_an_initialize_pygls_refuses_after_the_early_answer_is_shown_to_the_user(
    client: Client,
) -> None:
    client.protocol.answered_early(7, {"capabilities": {}})
    params = {"capabilities": {"textDocument": {"hover": {"contentFormat": 5}}}}
    [shown] = client.feed(_initialize(params))
    assert shown["method"] == "window/showMessage"
    assert shown["params"]["type"] == 1
    message = shown["params"]["message"]
    assert message.startswith("engram could not initialize: invalid params for initialize: ")
    assert message.endswith("@ $.params.capabilities.text_document.hover.content_format")
