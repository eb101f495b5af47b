"""The stdio front (lsp_server/front.py) in process: what it answers while the server loads.

The bytes a client writes reach the front in reads of any size: the first frame, `initialize`,
is answered once, after its last byte and never before, whatever the reads cut; every byte goes
on to the server in order; and when the server cannot be built the front itself answers until
`shutdown` and `exit`. test_fast_initialize.py drives the same over a real pipe and process.
"""

from __future__ import annotations

import io
import json
import os
import queue
import threading
from pathlib import Path
from typing import Any

import pytest

from lsp_server import capabilities, early, front
from lsp_server.stdio import Handover
from memory_core import gotchas
from memory_core.store import Store
from tests.lsp.conftest import make_project
from tests.lsp.framing import frame, read_frames

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}


class Written(io.BytesIO):
    def messages(self) -> list[dict[str, Any]]:
        return read_frames(self.getvalue())


@pytest.fixture(autouse=True)
def no_early_diagnostics(monkeypatch: pytest.MonkeyPatch) -> None:
    """The early diagnostics are off unless a test turns them on (they open stores)."""
    monkeypatch.setenv(early.ENABLE_ENV, "0")


def _front() -> tuple[front._Front, Written]:
    written = Written()
    return front._Front(front._Output(written)), written


def pieces(stream: bytes, size: int) -> list[bytes]:
    return [stream[at : at + size] for at in range(0, len(stream), size)]


# -- the first frame ----------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 5, 16, 10_000])
def test_initialize_is_answered_once_after_its_last_byte_however_the_reads_cut_it(
    size: int,
) -> None:
    stream = frame(INITIALIZE) + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    first_end = len(frame(INITIALIZE))
    checking, written = _front()
    judged_at = []
    offset = 0
    for chunk in pieces(stream, size):
        offset += len(chunk)
        if checking.take(chunk):
            judged_at.append(offset)
        assert bool(written.getvalue()) == (offset >= first_end)
    assert len(judged_at) == 1 and first_end <= judged_at[0] < first_end + size
    expected = capabilities.initialize_result({"capabilities": {}})
    assert written.messages() == [{"id": 1, "jsonrpc": "2.0", "result": expected}]
    assert written.getvalue() == front._frame({"id": 1, "jsonrpc": "2.0", "result": expected})
    assert checking.answered == (1, expected)
    assert b"".join(checking.read) == stream


@pytest.mark.parametrize(
    "first",
    [
        frame({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}),
        frame(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '),
        frame(b"[" * 50_000 + b"]" * 50_000),
        frame({"jsonrpc": "2.0", "method": "initialize", "params": {"capabilities": {}}}),
        frame({**INITIALIZE, "params": {"capabilities": {"general": 5}}}),  # for pygls to judge
        frame({**INITIALIZE, "params": None}),
    ],
    ids=["shutdown", "invalid", "deep", "no id", "odd params", "no params"],
)
def test_a_first_frame_the_front_cannot_judge_is_left_to_the_server(first: bytes) -> None:
    checking, written = _front()
    assert checking.take(first + frame(INITIALIZE)) is True
    assert written.getvalue() == b""
    assert checking.answered is None
    # Nothing more is parsed: every later byte is the server's alone.
    assert checking.take(frame(INITIALIZE)) is False
    assert written.getvalue() == b"" and checking.parser is None


def test_a_refused_first_frame_is_left_to_the_server() -> None:
    checking, written = _front()
    assert checking.take(b"Content-Length: 99999999999\r\n\r\n{") is True
    assert written.getvalue() == b"" and checking.answered is None


def test_reads_without_a_whole_frame_answer_nothing() -> None:
    checking, written = _front()
    assert checking.take(b"Content-Length: 5\r\n") is False
    assert checking.take(b"") is False  # the end of input
    assert written.getvalue() == b"" and checking.answered is None
    assert checking.read == [b"Content-Length: 5\r\n", b""]


# -- what the server is handed ----------------------------------------------------------------


def test_the_server_gets_every_byte_read_as_one_burst_then_the_end_of_input() -> None:
    checking, _ = _front()
    parts = pieces(frame(INITIALIZE) + frame({"jsonrpc": "2.0", "method": "x"}), 7)
    for part in parts:
        checking.take(part)
    checking.take(b"")
    handover = checking.handover(pump=None, pending=list)  # type: ignore[arg-type]
    assert handover.read == [b"".join(parts), b""]
    assert handover.answered is not None and handover.answered[0] == 1
    assert handover.pulls_answered == {} and handover.gotcha_indexes == {}


def test_nothing_read_hands_nothing_over() -> None:
    checking, _ = _front()
    assert checking.handover(pump=None, pending=list).read == []  # type: ignore[arg-type]
    checking.take(b"")
    assert checking.handover(pump=None, pending=list).read == [b""]  # type: ignore[arg-type]


def test_the_chunks_not_taken_yet_are_handed_over_in_order() -> None:
    events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    for data in (b"one", b"two", b""):
        events.put(("data", data))
    assert front._pending(events) == [b"one", b"two", b""]
    assert front._pending(events) == []


# -- the early diagnostics ----------------------------------------------------------------------


def _project(tmp_path: Path) -> tuple[Path, str]:
    folder = make_project(tmp_path / "ws")
    with Store.init(folder) as store:
        gotcha = gotchas.add(store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    return folder, gotcha.id


def _initialize_in(folder: Path, capabilities: dict[str, Any]) -> dict[str, Any]:
    params = {"capabilities": capabilities, "rootUri": folder.as_uri()}
    return {**INITIALIZE, "params": params}


def _did_open(uri: str, text: str = "eval(x)\n") -> dict[str, Any]:
    document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    return {
        "jsonrpc": "2.0",
        "method": "textDocument/didOpen",
        "params": {"textDocument": document},
    }


def test_the_frames_after_initialize_get_their_early_squiggles_in_any_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(early.ENABLE_ENV, "1")
    folder, gotcha_id = _project(tmp_path)
    uri = (folder / "app.py").as_uri()
    pulls = {
        "textDocument": {"diagnostic": {}},
        "workspace": {"diagnostics": {"refreshSupport": True}},
    }
    pull = {"jsonrpc": "2.0", "id": 5, "method": "textDocument/diagnostic"}
    pull["params"] = {"textDocument": {"uri": uri}}
    # The initialize and the open in one read, the pull cut over two.
    checking, written = _front()
    rest = frame(pull)
    checking.take(frame(_initialize_in(folder, pulls)) + frame(_did_open(uri)) + rest[:9])
    checking.take(rest[9:])
    answer, pulled = written.messages()
    assert answer["id"] == 1 and pulled["id"] == 5
    assert [item["code"] for item in pulled["result"]["items"]] == [gotcha_id]
    handover = checking.handover(pump=None, pending=list)  # type: ignore[arg-type]
    assert handover.pulls_answered == {5: pulled["result"]}
    assert list(handover.gotcha_indexes) == [folder]


def test_with_the_early_diagnostics_off_the_front_only_answers_initialize(
    tmp_path: Path,
) -> None:
    folder = tmp_path
    checking, written = _front()
    checking.take(frame(_initialize_in(folder, {})))
    checking.take(frame(_did_open((folder / "app.py").as_uri())))
    assert [m.get("id") for m in written.messages()] == [1]
    assert checking.early is None and checking.parser is None


def test_early_diagnostics_that_cannot_start_leave_everything_to_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(early.ENABLE_ENV, "1")

    def broken(*args: Any) -> None:
        raise ValueError("no")

    monkeypatch.setattr(front, "EarlyDiagnostics", broken)
    folder = tmp_path
    checking, written = _front()
    checking.take(frame(_initialize_in(folder, {})) + frame(_did_open((folder / "a.py").as_uri())))
    assert [m.get("id") for m in written.messages()] == [1]
    assert checking.early is None and checking.parser is None
    assert "no early diagnostics" in caplog.text


# -- a server that cannot be built --------------------------------------------------------------


def _unloaded(answered: bool = True) -> tuple[front._WithoutServer, Written]:
    written = Written()
    try:
        raise ModuleNotFoundError("No module named 'pygls'")
    except ModuleNotFoundError as failure:
        return front._WithoutServer(failure, answered, front._Output(written)), written


def _request(msg_id: Any, method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method}


def test_without_a_server_each_request_gets_an_error_naming_the_failure() -> None:
    unloaded, written = _unloaded(answered=False)
    stream = (
        frame(_request(1, "initialize"))
        + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + frame(_request("h", "textDocument/hover"))
    )
    for chunk in pieces(stream, 3):
        unloaded.take(chunk)
    shown, logged, first, second = written.messages()
    assert shown["method"] == "window/showMessage" and shown["params"]["type"] == 1
    assert shown["params"]["message"] == (
        "engram's language server could not start: "
        "ModuleNotFoundError: No module named 'pygls' (details in its log)"
    )
    assert logged["method"] == "window/logMessage" and logged["params"]["type"] == 1
    assert "Traceback" in logged["params"]["message"]
    assert [first["id"], second["id"]] == [1, "h"]
    assert first == {
        "id": 1,
        "jsonrpc": "2.0",
        "error": {
            "code": -32603,
            "message": "engram's language server could not start: "
            "ModuleNotFoundError: No module named 'pygls'",
        },
    }


def test_without_a_server_the_answered_initialize_is_not_answered_again() -> None:
    unloaded, written = _unloaded(answered=True)
    unloaded.take(frame(_request(1, "initialize")) + frame(_request(2, "x")))
    assert [m.get("id") for m in written.messages()] == [None, None, 2]


@pytest.mark.parametrize(
    "body",
    [
        b"{nope",
        b"[" * 50_000,
        b"[1]",
        json.dumps({"jsonrpc": "2.0", "id": 1, "result": None}).encode(),
        json.dumps({"jsonrpc": "2.0", "method": 5, "id": 1}).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "x"}).encode(),
        json.dumps(_request(True, "x")).encode(),
        json.dumps(_request(None, "x")).encode(),
    ],
)
def test_without_a_server_what_needs_no_answer_gets_none(body: bytes) -> None:
    unloaded, written = _unloaded(answered=False)
    unloaded.take(frame(body))
    assert written.getvalue() == b""


@pytest.mark.parametrize(
    ("messages", "code"),
    [
        ([_request(1, "shutdown"), {"jsonrpc": "2.0", "method": "exit"}], 0),
        ([{"jsonrpc": "2.0", "method": "exit"}], 1),
        ([{"jsonrpc": "2.0", "method": "shutdown"}, {"jsonrpc": "2.0", "method": "exit"}], 1),
    ],
    ids=["shutdown then exit", "exit alone", "shutdown as a notification"],
)
def test_without_a_server_exit_ends_the_session_as_the_protocol_says(
    messages: list[dict[str, Any]], code: int
) -> None:
    unloaded, written = _unloaded(answered=False)
    with pytest.raises(SystemExit) as ended:
        unloaded.take(b"".join(frame(m) for m in messages) + frame(_request(9, "x")))
    assert ended.value.code == code
    assert all(m.get("id") != 9 for m in written.messages())  # nothing after exit
    if code == 0:
        assert written.messages() == [{"id": 1, "jsonrpc": "2.0", "result": None}]


@pytest.mark.parametrize(("shutdown", "code"), [(True, 0), (False, 1)])
def test_without_a_server_the_end_of_input_ends_the_session(shutdown: bool, code: int) -> None:
    unloaded, _ = _unloaded()
    if shutdown:
        unloaded.take(frame(_request(1, "initialize")) + frame(_request(2, "shutdown")))
    with pytest.raises(SystemExit) as ended:
        unloaded.take(b"")
    assert ended.value.code == code


def _serve(
    monkeypatch: pytest.MonkeyPatch, loaded: tuple[str, Any], stream: bytes
) -> tuple[int | str | None, list[dict[str, Any]]]:
    """`serve_stdio` over pipes, the server's load replaced by `loaded`, once `stream` is in."""
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    arrived = threading.Event()

    class Pump(front.StdinPump):
        def __init__(self, fd: int, deliver: Any) -> None:
            def counted(data: bytes) -> None:
                deliver(data)
                if not data:
                    arrived.set()

            super().__init__(fd, counted)

    def load(events: Any) -> None:
        arrived.wait(10)  # every byte read first: the order of the output does not depend on it
        events.put(loaded)

    monkeypatch.setattr(front, "StdinPump", Pump)
    monkeypatch.setattr(front, "_load", load)
    with open(stdin_write, "wb") as pipe:
        pipe.write(stream)
    code: int | str | None = None
    with open(stdin_read, "rb") as stdin, open(stdout_write, "wb") as stdout:
        try:
            front.serve_stdio(stdin, stdout)
        except SystemExit as ended:
            code = ended.code
    with open(stdout_read, "rb") as answers:
        return code, read_frames(answers.read())


def test_a_server_that_cannot_load_answers_what_was_sent_before_and_exits_as_asked(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stream = b"".join(
        frame(m)
        for m in (
            INITIALIZE,
            _request(2, "textDocument/hover"),
            _request(3, "shutdown"),
            {"jsonrpc": "2.0", "method": "exit"},
        )
    )
    code, sent = _serve(monkeypatch, ("failed", ImportError("pygls is broken")), stream)
    assert code == 0
    assert [m.get("id", m.get("method")) for m in sent] == [
        1,
        "window/showMessage",
        "window/logMessage",
        2,
        3,
    ]
    assert "ImportError: pygls is broken" in sent[3]["error"]["message"]
    [logged] = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert logged.startswith("the language server could not start:\nImportError: pygls is broken")


def test_a_server_that_fails_before_anything_was_read_answers_what_comes_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    failed = threading.Event()
    stream = (
        frame(INITIALIZE)
        + frame(_request(2, "shutdown"))
        + frame({"jsonrpc": "2.0", "method": "exit"})
    )

    def load(events: Any) -> None:
        events.put(("failed", ImportError("x")))
        failed.set()

    def write() -> None:
        failed.wait(10)  # the failure is taken first, then every chunk as it is read
        with open(stdin_write, "wb") as pipe:
            for chunk in pieces(stream, 50):
                pipe.write(chunk)
                pipe.flush()

    monkeypatch.setattr(front, "_load", load)
    writer = threading.Thread(target=write)
    writer.start()
    with (
        open(stdin_read, "rb") as stdin,
        open(stdout_write, "wb") as stdout,
        pytest.raises(SystemExit) as ended,
    ):
        front.serve_stdio(stdin, stdout)
    writer.join(10)
    with open(stdout_read, "rb") as answers:
        sent = read_frames(answers.read())
    assert ended.value.code == 0
    assert [m.get("id", m.get("method")) for m in sent] == [
        "window/showMessage",
        "window/logMessage",
        1,
        2,
    ]
    assert sent[2]["error"]["code"] == -32603


def test_a_server_that_cannot_load_before_any_request_says_so_at_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, sent = _serve(monkeypatch, ("failed", ImportError("x")), frame(_request(4, "x")))
    assert code == 1  # the end of input without shutdown
    assert [m.get("id", m.get("method")) for m in sent] == [
        "window/showMessage",
        "window/logMessage",
        4,
    ]


def test_the_loaded_server_is_handed_the_stream_and_the_early_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Server:
        handover: Handover | None = None

        def start_io(self, *, stdout: Any, handover: Handover) -> None:
            Server.handover = handover

    stream = frame(INITIALIZE) + frame(_request(2, "shutdown"))
    code, sent = _serve(monkeypatch, ("loaded", Server()), stream)
    assert code is None and [m["id"] for m in sent] == [1]
    handover = Server.handover
    assert handover is not None and handover.answered is not None
    assert handover.answered[0] == 1
    assert handover.read == [stream, b""]


def test_the_load_builds_the_server_or_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from lsp_server import setup
    from lsp_server.server import EngramServer

    events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    try:
        front._load(events)
    finally:
        gc.unfreeze()
    kind, server = events.get_nowait()
    assert kind == "loaded" and isinstance(server, EngramServer)

    def broken() -> None:
        raise ImportError("pygls is broken")

    monkeypatch.setattr(setup, "create_server", broken)
    front._load(events)
    kind, failure = events.get_nowait()
    assert kind == "failed" and str(failure) == "pygls is broken"


def test_the_load_waits_for_the_tests_gate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from lsp_server import setup

    gate = tmp_path / "gate"
    monkeypatch.setenv(front.TEST_LOAD_GATE_ENV, str(gate))
    monkeypatch.setattr(setup, "create_server", lambda: "built")
    events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    loading = threading.Thread(target=front._load, args=(events,))
    loading.start()
    loading.join(0.05)
    assert loading.is_alive() and events.empty()
    gate.touch()
    loading.join(10)
    assert events.get_nowait() == ("loaded", "built")


def test_a_client_gone_does_not_stop_the_front(caplog: pytest.LogCaptureFixture) -> None:
    class Gone:
        def write(self, data: bytes) -> int:
            raise BrokenPipeError("gone")

        def flush(self) -> None:
            return None

    front._Output(Gone()).send({"jsonrpc": "2.0", "id": 1, "result": None})  # type: ignore[arg-type]
    assert [r.getMessage() for r in caplog.records] == ["cannot write to the client"]
