"""The server `engram lsp` builds, serving stdio in this process: what the stdio front hands it,
how a session ends, and the helpers features tell the user through.

The bytes go through real pipes and engram's own reader (lsp_server/jsonrpc.py); what the
server writes is read back as a client reads it. test_lifecycle.py drives real clients over a
real process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from lsp_server import capabilities
from lsp_server.server import EngramServer
from lsp_server.setup import create_server
from lsp_server.stdio import Handover, StdinPump, drain
from memory_core.gotchas import records
from tests.lsp.framing import frame, read_frames


@pytest.fixture
def server() -> Iterator[EngramServer]:
    made = create_server()
    yield made
    made.close_all()


def request(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


EXIT = {"jsonrpc": "2.0", "method": "exit"}


def serve(server: EngramServer, stream: bytes, *, early: dict[str, Any] | None = None) -> Any:
    """`start_io` over pipes holding `stream` (then the end of input). With `early`, as the
    stdio front hands it over: `read` (bytes it took) and what it answered."""
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    with open(stdin_write, "wb") as pipe:
        pipe.write(stream)
    with open(stdin_read, "rb") as stdin, open(stdout_write, "wb") as stdout:
        if early is None:
            server.start_io(stdin, stdout)
        else:
            chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
            pump = StdinPump(stdin.fileno(), chunks.put)
            handover = Handover(pump, early.pop("read"), lambda: drain(chunks), **early)
            server.start_io(stdout=stdout, handover=handover)
    with open(stdout_read, "rb") as answers:
        return read_frames(answers.read())


def test_a_session_ends_at_exit_after_shutdown_and_stops_the_server(server: EngramServer) -> None:
    stream = frame(request(1, "shutdown")) + frame(EXIT) + frame(request(2, "shutdown"))
    assert serve(server, stream) == [{"jsonrpc": "2.0", "id": 1, "result": None}]
    assert server._stopping()


@pytest.mark.parametrize(
    "stream",
    [frame(EXIT), frame(request(1, "engram/x")), b""],
    ids=["exit without shutdown", "end of input", "nothing at all"],
)
def test_a_session_ended_any_other_way_stops_the_server_too(
    server: EngramServer, stream: bytes
) -> None:
    sent = serve(server, stream)
    assert [m.get("id") for m in sent] == ([1] if b"engram/x" in stream else [])
    assert server._stopping()


def test_a_server_not_started_is_not_stopping(server: EngramServer) -> None:
    assert not server._stopping()


def test_what_the_front_answered_is_not_answered_again_and_its_indexes_are_kept(
    server: EngramServer, tmp_path: Path
) -> None:
    params = {"capabilities": {}}
    answered = capabilities.initialize_result(params)
    assert answered is not None
    index = object()
    indexes = {tmp_path: ("key", index, 1.0)}
    sent = serve(
        server,
        frame(request(2, "shutdown")) + frame(EXIT),
        early={
            "read": [frame(request(1, "initialize", params))],
            "answered": (1, answered),
            "pulls_answered": {"p": {"kind": "full", "items": []}},
            "gotcha_indexes": indexes,
        },
    )
    assert sent == [{"jsonrpc": "2.0", "id": 2, "result": None}]
    assert server.early_gotcha_indexes == indexes
    assert server.early_gotcha_indexes is not indexes  # the server's own copy
    assert server.early_gotcha_indexes[tmp_path][1] is index
    assert server._protocol._early_pulls == {"p": {"kind": "full", "items": []}}


def test_without_the_front_the_initialize_is_answered_by_the_server(server: EngramServer) -> None:
    params = {"capabilities": {}}
    sent = serve(server, frame(request(1, "initialize", params)) + frame(EXIT))
    assert [m["id"] for m in sent] == [1]
    assert sent[0]["result"] == capabilities.initialize_result(params)


# -- what features tell the user ----------------------------------------------------------------


class Captured:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def close(self) -> None:
        return None


def test_messages_and_log_lines_reach_the_client_at_their_kind(server: EngramServer) -> None:
    captured = Captured()
    server.protocol.set_writer(captured)
    server.show_message("plain")
    server.show_message("bad", types.MessageType.Error)
    server.log("a line")
    server.log("a warning", types.MessageType.Warning)
    assert [(m["method"], m["params"]) for m in captured.sent] == [
        ("window/showMessage", {"type": 3, "message": "plain"}),
        ("window/showMessage", {"type": 1, "message": "bad"}),
        ("window/logMessage", {"type": 4, "message": "a line"}),
        ("window/logMessage", {"type": 2, "message": "a warning"}),
    ]


def test_store_work_runs_off_the_event_loop(server: EngramServer) -> None:
    def work(a: int, *, b: int) -> tuple[int, str]:
        return a + b, threading.current_thread().name

    async def run() -> tuple[tuple[int, str], str]:
        return await server.run_blocking(work, 1, b=2), threading.current_thread().name

    (total, worker), loop_thread = asyncio.run(run())
    assert total == 3 and worker != loop_thread


def test_a_store_notice_from_a_worker_thread_is_sent_from_the_loop(
    server: EngramServer, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    senders: list[tuple[str, Any, str]] = []
    server.show_message = lambda message, kind=types.MessageType.Info: senders.append(  # type: ignore[method-assign]
        (message, kind, threading.current_thread().name)
    )

    async def run() -> str:
        state = server.add_folder(root.resolve())
        assert state is not None
        notice = state.store.notice_listeners[-1]
        worker = threading.Thread(target=notice, args=("recreated",), name="store-worker")
        worker.start()
        worker.join()
        for _ in range(100):
            if senders:
                break
            await asyncio.sleep(0.001)
        return threading.current_thread().name

    loop_thread = asyncio.run(run())
    assert senders == [("engram: recreated", types.MessageType.Warning, loop_thread)]


def test_closing_everything_closes_every_store(server: EngramServer, tmp_path: Path) -> None:
    roots = []
    for name in ("one", "two"):
        (tmp_path / name / ".git").mkdir(parents=True)
        roots.append((tmp_path / name).resolve())
    stores = []
    for root in roots:
        state = server.add_folder(root)
        assert state is not None
        stores.append(state.store)
    server.close_all()
    assert server.folders == {} and server._opened == {}
    for store in stores:
        with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
            records.revision(store)
    for root in roots:  # opened again as new
        assert server.add_folder(root) is not None


def test_a_tcp_client_is_served_and_its_goodbye_stops_the_server(
    server: EngramServer, caplog: pytest.LogCaptureFixture
) -> None:
    import socket

    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ended: list[BaseException] = []

    def run() -> None:
        try:
            server.start_tcp("127.0.0.1", port)
        except BaseException as exc:
            ended.append(exc)

    caplog.set_level(logging.INFO, logger="engram.lsp")
    serving = threading.Thread(target=run)
    serving.start()
    for _ in range(1000):
        try:
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except ConnectionRefusedError:
            serving.join(0.005)
    # Only on the interface asked for, never on every one.
    assert {sock.getsockname()[0] for sock in server._server.sockets} == {"127.0.0.1"}
    with client:
        client.sendall(frame(request(1, "shutdown")) + frame(EXIT))
        received = b""
        while chunk := client.recv(65536):
            received += chunk
    serving.join(10)
    # `exit` after `shutdown` ends the process with 0, as over stdio.
    assert not serving.is_alive()
    assert [type(exc) for exc in ended] == [SystemExit] and ended[0].args == (0,)
    assert read_frames(received) == [{"jsonrpc": "2.0", "id": 1, "result": None}]
    assert server._stopping()
    assert f"serving on 127.0.0.1:{port}" in [r.getMessage() for r in caplog.records]
