"""`initialize` answered by the stdio front before pygls loads (lsp_server/front.py).

The front's answer must be exactly pygls' own (compared byte for byte, for every recorded real
client and each client capability the answer depends on), the messages sent while the server
loads must all be served in order, and a server that cannot load must say so.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp

from lsp_server import capabilities, front
from lsp_server.frames import Frame
from lsp_server.setup import create_server
from tests.lsp.conftest import make_project
from tests.lsp.raw_client import RawServer

RECORDED_CLIENTS = sorted((Path(pytest_lsp.__file__).parent / "clients").glob("*.json"))

# Each client capability the answer depends on (lsp_server/capabilities.py), and null levels.
VARIATIONS: dict[str, dict[str, Any]] = {
    "nothing": {},
    "utf-8 preferred": {"general": {"positionEncodings": ["utf-8", "utf-16"]}},
    "utf-32 only": {"general": {"positionEncodings": ["utf-32"]}},
    "no known encoding": {"general": {"positionEncodings": ["utf-7"]}},
    "empty encodings": {"general": {"positionEncodings": []}},
    "pulls and refreshes": {
        "textDocument": {"diagnostic": {}},
        "workspace": {"diagnostics": {"refreshSupport": True}},
    },
    "pulls, no refresh": {
        "textDocument": {"diagnostic": {"dynamicRegistration": True}},
        "workspace": {"diagnostics": {"refreshSupport": False}},
    },
    "refreshes, no pull": {"workspace": {"diagnostics": {"refreshSupport": True}}},
    "will save": {"textDocument": {"synchronization": {"willSave": True}}},
    "will save declined": {
        "textDocument": {"synchronization": {"willSave": False, "willSaveWaitUntil": True}}
    },
    "file operations": {
        "workspace": {"fileOperations": {"didRename": True, "didDelete": True, "willRename": True}}
    },
    "renames only": {"workspace": {"fileOperations": {"didRename": True, "didDelete": False}}},
    "notebooks": {"notebookDocument": {"synchronization": {}}},
    "null levels": {"general": None, "textDocument": None, "workspace": None},
    "null leaves": {
        "textDocument": {"diagnostic": None, "synchronization": {"willSave": None}},
        "workspace": {"diagnostics": None, "fileOperations": None},
    },
}

# The other top-level params, as real clients send them.
FULL_PARAMS: dict[str, Any] = {
    "processId": 4242,
    "clientInfo": {"name": "Neovim", "version": "0.11.0"},
    "locale": "en-gb",
    "rootPath": "/nonexistent/engram-test",
    "rootUri": None,
    "initializationOptions": {"anything": [1, 2]},
    "trace": "off",
    "workDoneToken": "start-1",
    "workspaceFolders": None,
}


def _pygls_frames(message: dict[str, Any]) -> list[bytes]:
    """The frames engram's server built by pygls writes for one message, in process."""
    server = create_server()
    sent: list[bytes] = []

    class Capture:
        def write(self, data: bytes) -> None:
            sent.append(data)

        def close(self) -> None:
            return None

    server.protocol.set_writer(Capture())

    async def handle() -> None:
        server._protocol.handle_frames([Frame(body=json.dumps(message).encode())])

    asyncio.run(handle())
    return sent


def _answer_to(frames: list[bytes], msg_id: int) -> bytes:
    answers = [
        frame
        for frame in frames
        if (body := json.loads(frame.split(b"\r\n\r\n", 1)[1])).get("id") == msg_id
        and "method" not in body
    ]
    assert len(answers) == 1, frames
    return answers[0]


def _initialize(params: dict[str, Any], msg_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}


def _fast_frame(params: dict[str, Any], msg_id: int = 7) -> bytes:
    result = capabilities.initialize_result(params)
    assert result is not None, "the front would leave these params to pygls"
    return front._frame({"id": msg_id, "jsonrpc": "2.0", "result": result})


@pytest.mark.parametrize("client", RECORDED_CLIENTS, ids=lambda path: path.stem)
def test_the_early_answer_is_pygls_answer_for_every_recorded_client(client: Path) -> None:
    params = {**json.loads(client.read_text()), "processId": 1, "workspaceFolders": []}
    assert _fast_frame(params) == _answer_to(_pygls_frames(_initialize(params)), 7)


@pytest.mark.parametrize("name", VARIATIONS)
def test_the_early_answer_is_pygls_answer_for_each_capability_it_depends_on(name: str) -> None:
    params = {"capabilities": VARIATIONS[name]}
    assert _fast_frame(params) == _answer_to(_pygls_frames(_initialize(params)), 7)


def test_the_early_answer_is_pygls_answer_with_every_top_level_param() -> None:
    params = {**FULL_PARAMS, "capabilities": VARIATIONS["pulls and refreshes"]}
    request = _initialize(params, msg_id=3)
    request["id"] = "a string id"
    result = capabilities.initialize_result(params)
    fast = front._frame({"id": "a string id", "jsonrpc": "2.0", "result": result})
    frames = _pygls_frames(request)
    assert [frame for frame in frames if b'"a string id"' in frame] == [fast]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"capabilities": []},
        {"capabilities": {}, "processId": "42"},
        {"capabilities": {}, "processId": True},
        {"capabilities": {}, "trace": "everything"},
        {"capabilities": {}, "workDoneToken": {"token": 1}},
        {"capabilities": {}, "rootUri": 7},
        {"capabilities": {}, "clientInfo": {"version": "1"}},
        {"capabilities": {}, "workspaceFolders": [{"uri": "file:///x"}]},
        {"capabilities": {"general": {"positionEncodings": "utf-8"}}},
        {"capabilities": {"general": []}},
        {"capabilities": {"textDocument": {"diagnostic": True}}},
        {"capabilities": {"textDocument": {"synchronization": {"willSave": "yes"}}}},
        {"capabilities": {"workspace": {"fileOperations": {"didRename": 1}}}},
    ],
)
def test_params_the_front_cannot_judge_are_left_to_pygls(params: dict[str, Any]) -> None:
    assert capabilities.initialize_result(params) is None


def test_the_front_answers_without_importing_pygls_or_lsprotocol() -> None:
    """What makes the early answer early: the front's modules are the standard library's."""
    code = (
        "import sys\n"
        "import lsp_server.main, lsp_server.front\n"
        "from lsp_server import capabilities\n"
        "assert capabilities.initialize_result({'capabilities': {}})\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'pygls', 'lsprotocol', 'attrs', 'attr', 'cattrs', 'asyncio', 'sqlite3'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_pygls_answer_replayed_behind_the_early_one_is_checked_and_not_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    params = {"capabilities": VARIATIONS["file operations"]}
    early = capabilities.initialize_result(params)
    assert early is not None
    for sent_early, drifted in ((early, False), ({**early, "capabilities": {}}, True)):
        server = create_server()
        sent: list[bytes] = []
        server.protocol.set_writer(type("W", (), {"write": sent.append, "close": print})())
        server._protocol.answered_early(7, sent_early)
        caplog.clear()

        async def handle(server: Any = server) -> None:
            server._protocol.handle_frames([Frame(body=json.dumps(_initialize(params)).encode())])

        with caplog.at_level(logging.WARNING, logger="engram.lsp"):
            asyncio.run(handle())
        assert sent == []  # answered once only: by the front
        assert ("differs from pygls'" in caplog.text) is drifted


def test_an_initialize_pygls_refuses_after_the_early_answer_is_reported() -> None:
    # lsprotocol refuses a hover content format that is no list: pygls answers with an error,
    # which the client, already answered, would never see.
    params = {"capabilities": {"textDocument": {"hover": {"contentFormat": 5}}}}
    server = create_server()
    sent: list[bytes] = []
    server.protocol.set_writer(type("W", (), {"write": sent.append, "close": print})())
    server._protocol.answered_early(7, {"capabilities": {}})

    async def handle() -> None:
        server._protocol.handle_frames([Frame(body=json.dumps(_initialize(params)).encode())])

    asyncio.run(handle())
    bodies = [json.loads(frame.split(b"\r\n\r\n", 1)[1]) for frame in sent]
    assert [body["method"] for body in bodies] == ["window/showMessage"]
    assert bodies[0]["params"]["type"] == 1
    assert "engram could not initialize" in bodies[0]["params"]["message"]


class _ReadingServer:
    """Stands in for the built server: reads what the front hands over, to the end.

    Before taking the stream it lets `before_taking` run (more bytes written and delivered
    to the front, not yet taken by it), then `after_taking`."""

    def __init__(self, before_taking: Any, after_taking: Any) -> None:
        self.read = bytearray()
        self.answered: Any = None
        self.before_taking = before_taking
        self.after_taking = after_taking

    def start_io(self, *, stdout: Any, handover: Any) -> None:
        self.answered = handover.answered

        async def read_all() -> None:
            self.before_taking()
            read_chunk = handover.reader(asyncio.get_running_loop())
            self.after_taking()
            while chunk := await read_chunk():
                self.read += chunk

        asyncio.run(read_all())


def test_every_byte_sent_while_the_server_loads_reaches_it_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hand-over itself: bytes the front took before the server was built, bytes that
    reached the front but were not taken yet, and bytes read after the hand-over."""
    frames = [front._frame(_initialize({"capabilities": {}}, msg_id=1))] + [
        front._frame({"jsonrpc": "2.0", "method": "note", "params": {"n": n, "pad": "x" * n}})
        for n in range(1500)
    ]
    stream = b"".join(frames)
    parts = [stream[:30_000], stream[30_000:50_000], stream[50_000:]]
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    delivered = threading.Condition()
    delivered_bytes = 0

    class CountingPump(front.StdinPump):
        def __init__(self, fd: int, deliver: Any) -> None:
            def counted(data: bytes) -> None:
                nonlocal delivered_bytes
                deliver(data)
                with delivered:
                    delivered_bytes += len(data)
                    delivered.notify_all()

            super().__init__(fd, counted)

    pipe = open(stdin_write, "wb", buffering=0)  # noqa: SIM115 - closed by the last step

    def write(part: bytes) -> None:
        for start in range(0, len(part), 1_000):
            pipe.write(part[start : start + 1_000])

    def delivered_up_to(total: int) -> None:
        # No assert here: a failure on these threads would hang the test; a byte short shows
        # in the comparison at the end.
        with delivered:
            delivered.wait_for(lambda: delivered_bytes >= total, timeout=30)

    def before_taking() -> None:
        write(parts[1])  # reaches the front's queue, behind the "loaded" event
        delivered_up_to(len(parts[0]) + len(parts[1]))

    def after_taking() -> None:
        threading.Thread(target=lambda: (write(parts[2]), pipe.close())).start()

    server = _ReadingServer(before_taking, after_taking)

    def load(events: Any) -> None:
        delivered_up_to(len(parts[0]))
        events.put(("loaded", server))

    monkeypatch.setattr(front, "StdinPump", CountingPump)
    monkeypatch.setattr(front, "_load", load)
    write(parts[0])
    with open(stdin_read, "rb") as stdin, open(stdout_write, "wb") as stdout:
        front.serve_stdio(stdin, stdout)
    with open(stdout_read, "rb") as answers:
        answered = answers.read()
    assert bytes(server.read) == stream
    assert server.answered is not None and server.answered[0] == 1
    assert answered == _fast_frame({"capabilities": {}}, msg_id=1)


def test_requests_sent_while_the_server_loads_are_answered_once_in_order(tmp_path: Path) -> None:
    """A client that sends everything at once, shutdown and exit included: each request is
    answered once, in order, `initialize` by the front only; what follows `shutdown` is not
    served, and the process ends as `exit` says."""
    folder = make_project(tmp_path / "ws")
    document = (folder / "app.py").as_uri()
    raw = RawServer(folder, tmp_path / "server.log")
    try:
        burst = [_initialize({"capabilities": {}, "rootUri": folder.as_uri()}, msg_id=1)]
        burst.append({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        hovers = list(range(2, 42))
        for msg_id in hovers:
            burst.append(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didOpen",
                    "params": {
                        "textDocument": {
                            "uri": document,
                            "languageId": "python",
                            "version": msg_id,
                            "text": f"value = {msg_id}\n",
                        }
                    },
                }
            )
            burst.append(
                {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "method": "textDocument/hover",
                    "params": {
                        "textDocument": {"uri": document},
                        "position": {"line": 0, "character": 1},
                    },
                }
            )
            burst.append(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didClose",
                    "params": {"textDocument": {"uri": document}},
                }
            )
        burst.append({"jsonrpc": "2.0", "id": 100, "method": "shutdown"})
        burst.append(
            {
                "jsonrpc": "2.0",
                "id": 101,
                "method": "textDocument/hover",
                "params": {
                    "textDocument": {"uri": document},
                    "position": {"line": 0, "character": 0},
                },
            }
        )
        burst.append({"jsonrpc": "2.0", "method": "exit"})
        raw.send_bytes(b"".join(raw.frame(json.dumps(message).encode()) for message in burst))
        assert raw.proc.wait(timeout=60) == 0
        raw._reader.join(timeout=10)  # it has read to the end of the server's output
        answered = [m["id"] for m in raw.received if "id" in m and "method" not in m]
        assert answered == [1, *hovers, 100]
        assert all("error" not in m for m in raw.received if "id" in m and "method" not in m)
        assert raw.responses[1]["result"] == capabilities.initialize_result({"capabilities": {}})
        assert "differs from pygls'" not in raw.log_text()
    finally:
        raw.close()


def test_a_server_that_cannot_load_says_so_and_still_answers(tmp_path: Path) -> None:
    """A broken install (pygls cannot be imported): the client is told, every request gets an
    error naming the failure, `shutdown` and `exit` end the session."""
    folder = make_project(tmp_path / "ws")
    broken = [
        sys.executable,
        "-c",
        "import sys\nsys.modules['pygls'] = None\nfrom lsp_server.main import run\nrun()",
    ]
    raw = RawServer(folder, tmp_path / "server.log", command=broken)
    try:
        assert raw.initialize()["result"] == capabilities.initialize_result(
            {"capabilities": {}, "rootUri": folder.as_uri()}
        )
        hover = raw.request(
            "textDocument/hover",
            {"textDocument": {"uri": "file:///x.py"}, "position": {"line": 0, "character": 0}},
        )
        assert hover["error"]["code"] == -32603
        assert "could not start" in hover["error"]["message"]
        assert "ModuleNotFoundError" in hover["error"]["message"]
        assert "pygls" in hover["error"]["message"]
        shown = [m for m in raw.notifications if m["method"] == "window/showMessage"]
        assert len(shown) == 1 and shown[0]["params"]["type"] == 1
        assert "could not start: ModuleNotFoundError" in shown[0]["params"]["message"]
        logged = [m for m in raw.notifications if m["method"] == "window/logMessage"]
        assert any("Traceback" in m["params"]["message"] for m in logged)
        assert raw.request("shutdown", None)["result"] is None
        raw.notify("exit", None)
        assert raw.proc.wait(timeout=30) == 0
        assert "ModuleNotFoundError" in raw.log_text()
    finally:
        raw.close()
