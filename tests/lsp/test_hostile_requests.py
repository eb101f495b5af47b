"""Requests a careful user and a hostile one send to the language server, over real stdio: each
gets the right answer, and nothing that should be refused is carried out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core import checkpoints
from memory_core.store import Store
from tests.lsp.raw_client import RawServer

INVALID_PARAMS = -32602
PARSE_ERROR = -32700


@pytest.fixture
def server(tmp_path: Path) -> Any:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "app.py").write_text("print('checkpointed')\n")
    store = Store.init(folder)
    raw = RawServer(folder, tmp_path / "server.log")
    raw.checkpoint = checkpoints.create(store)["id"]  # type: ignore[attr-defined]
    store.close()
    (folder / "app.py").write_text("print('edited since')\n")
    result = raw.initialize({"window": {"showDocument": {"support": True}}})
    assert "capabilities" in result["result"]
    yield raw
    raw.close()


def _command(server: RawServer, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return server.request(
        "workspace/executeCommand", {"command": name, "arguments": [args]}, timeout=60
    )


@pytest.mark.parametrize("flag", ["preview", "confirm", "rewind"])
def test_a_rollback_flag_given_as_text_is_refused_not_coerced(server: RawServer, flag: str) -> None:
    args: dict[str, Any] = {"id": server.checkpoint, "confirm": True}  # type: ignore[attr-defined]
    args[flag] = "true"
    answer = _command(server, "engram.checkpoint.rollback", args)
    assert answer.get("error", {}).get("code") == INVALID_PARAMS, answer
    assert f"`{flag}` must be true or false" in answer["error"]["message"]
    assert (server.folder / "app.py").read_text() == "print('edited since')\n"


@pytest.mark.parametrize("second_header", [b"Content-Length: 7\r\n\r\n", b"\r\n\r\n"])
def test_two_broken_frames_never_join_into_a_request(
    server: RawServer, second_header: bytes
) -> None:
    """The first frame declares more bytes than it sends; the second has a header block (with
    a length, or none at all). Read as declared, the first body runs on through the second's
    header into one valid rollback request; neither may be run."""
    head = (
        b'{"jsonrpc":"2.0","id":77,"method":"workspace/executeCommand","params":{"command":'
        b'"engram.checkpoint.rollback","arguments":[{"id":"'
        + server.checkpoint.encode()  # type: ignore[attr-defined]
        + b'","confirm":true}'
    )
    tail = b"]}}"
    joined = head + second_header + tail
    if b"Content" not in second_header:
        assert json.loads(joined)["id"] == 77  # the join alone is a valid request
    server.send_bytes(b"Content-Length: " + str(len(joined)).encode() + b"\r\n\r\n" + head)
    server.send_bytes(second_header + tail)
    errors = server.wait_null_errors(1)
    assert errors[0]["error"]["code"] == PARSE_ERROR
    _hover(server)  # the stream is read on
    assert 77 not in server.responses
    assert (server.folder / "app.py").read_text() == "print('edited since')\n"


def _hover(server: RawServer) -> None:
    answer = server.request(
        "textDocument/hover",
        {
            "textDocument": {"uri": (server.folder / "app.py").as_uri()},
            "position": {"line": 0, "character": 0},
        },
    )
    assert "result" in answer, answer


def test_show_all_gotchas_is_answered_when_the_client_answers_show_document_with_null(
    server: RawServer,
) -> None:
    answer = _command(server, "engram.gotcha.showAll", {})
    assert answer["result"]["shown"] is False, answer
    assert any(
        "open gotchas" in n["params"]["message"]
        for n in server.notifications
        if n["method"] == "window/showMessage"
    )


def test_a_lone_surrogate_in_an_edit_does_not_break_the_drift_diff(server: RawServer) -> None:
    uri = (server.folder / "app.py").as_uri()
    opened = {
        "jsonrpc": "2.0",
        "method": "textDocument/didOpen",
        "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "x"}},
    }
    body = json.dumps(opened).replace('"text": "x"', '"text": "print(\'\\ud800\')\\n"').encode()
    server.send_bytes(server.frame(body))
    for _ in range(2):  # the first may race the open; the second must be answered
        answer = _command(server, "engram.drift.diff", {"uri": uri})
        if "result" in answer:
            break
    assert "result" in answer, answer
    assert "+print('\ufffd')" in answer["result"]["diff"]
    assert "Traceback" not in server.log_text()


def test_a_checkpoint_asked_for_right_after_a_write_holds_that_write(server: RawServer) -> None:
    """The server's watcher reports a write some 50-100 ms after it: a checkpoint asked for at
    once used to hold the old content (10 times in 15)."""
    _hover(server)  # the server is up, its watcher too
    first = _command(server, "engram.checkpoint.create", {})["result"]
    assert first["id"]
    app = server.folder / "app.py"
    sources = []
    for round_ in range(6):
        app.write_text(f"print('round {round_}')\n")
        made = _command(server, "engram.checkpoint.create", {})["result"]
        sources.append(made["source"])
        store = Store.open(server.folder)
        try:
            held = {
                item["path"]: checkpoints.read_blob(store, item["hash"])
                for item in checkpoints.manifest(store, made["id"])
            }
        finally:
            store.close()
        assert held["app.py"] == f"print('round {round_}')\n".encode(), (round_, made["source"])
    assert "watcher" in sources, sources  # the journal path was the one tested
