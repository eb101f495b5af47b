"""The stdio front: `initialize` answered before pygls and lsprotocol are loaded.

Importing pygls, lsprotocol (about 560 attrs classes) and engram's features takes half a
second and more; an editor waits for the `initialize` answer before anything else. The front
starts with the standard library only, in this order:

1. one daemon thread reads stdin for the whole life of the process (`StdinPump`), another
   imports and builds the server (`lsp_server.setup.create_server`);
2. the main thread reads the first frame; if it is an `initialize` request it can judge
   (lsp_server/capabilities.py), it answers at once with the capabilities pygls would
   announce;
3. once the server is built, every byte read so far, the first frame included, goes to it in
   the order it came, then the stream itself: pygls handles `initialize` again (the folders'
   stores open there, as before) and its answer, compared with the early one, is not sent.

While the server loads, the front keeps reading the frames after `initialize` and sends the
first gotcha squiggles of the documents opened meanwhile (lsp_server/early.py: published to a
push client, a pull answered for a pull client, with memory_core only); it only watches the
frames, every byte still goes to the server.

Nothing is answered twice, nothing is lost or reordered: the server parses the same bytes it
would have read itself (a pull the front answered is handled again, its answer not sent). A `shutdown` or `exit` sent while the server loads is served by it,
in order, once it is up. When the load fails (a broken install), the client is told with
`window/showMessage` and `window/logMessage`, the traceback goes to the log, and the front goes
on answering: every request gets an error naming the failure, `shutdown` and `exit` end the
session. An editor never waits on a silent server.

Whatever the front does not recognise as a plain `initialize` request in the first frame (no
frame yet when the server is ready, invalid JSON, odd params) is left to pygls entirely.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO

from lsp_server import capabilities
from lsp_server.early import ENABLE_ENV, EarlyDiagnostics
from lsp_server.frames import FrameParser, valid_id
from lsp_server.stdio import Handover, StdinPump, drain

if TYPE_CHECKING:
    from lsp_server.server import EngramServer

logger = logging.getLogger("engram.lsp")

# How long a thread may hold the interpreter lock while another waits, until the first frame
# is answered (Python's default is 5 ms).
FRONT_SWITCH_INTERVAL = 0.0002
INTERNAL_ERROR = -32603
# Tests only: the server's load waits until the file this names exists, so a test can show
# what the front does while the server loads without relying on timing.
TEST_LOAD_GATE_ENV = "ENGRAM_LSP_TEST_LOAD_GATE"
CONTENT_TYPE = "application/vscode-jsonrpc; charset=utf-8"


def _frame(message: dict[str, Any]) -> bytes:
    """One message framed as pygls frames it (the same headers, the same JSON spacing)."""
    body = json.dumps(message)
    return f"Content-Length: {len(body)}\r\nContent-Type: {CONTENT_TYPE}\r\n\r\n{body}".encode()


class _Output:
    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.stream.write(_frame(message))
            self.stream.flush()
        except OSError:  # the client went away: the server finds out at the end of input
            logger.warning("cannot write to the client")


def _load(events: queue.SimpleQueue[tuple[str, Any]]) -> None:
    try:
        gate = os.environ.get(TEST_LOAD_GATE_ENV)
        if gate:  # tests only: the load waits until this file exists
            while not os.path.exists(gate):
                time.sleep(0.005)
        from lsp_server.setup import create_server

        server = create_server()
        # Everything imported so far (pygls, lsprotocol's classes, cattrs' generated code,
        # every feature) lives as long as the process: out of the cyclic collector's reach.
        # Its full collections otherwise walked them all, 50 ms at a time, now and then in the
        # middle of a burst of edits a hover waited behind.
        gc.freeze()
    except BaseException as exc:  # reported to the client, never swallowed
        events.put(("failed", exc))
        return
    events.put(("loaded", server))


def _answer_initialize(
    data: bytes | None, output: _Output
) -> tuple[tuple[int | str, dict[str, Any]], dict[str, Any]] | None:
    """Answer the first frame if it is an `initialize` request the front can judge: its id
    and the result sent, and its params; or None (left to pygls)."""
    try:
        message: Any = json.loads(data) if data is not None else None
    except (ValueError, RecursionError):
        return None
    if not capabilities.is_initialize_request(message):
        return None
    result = capabilities.initialize_result(message["params"])
    if result is None:
        return None
    output.send({"id": message["id"], "jsonrpc": "2.0", "result": result})
    return (message["id"], result), message["params"]


def _early_diagnostics(
    answered: tuple[int | str, dict[str, Any]], params: dict[str, Any], output: _Output
) -> EarlyDiagnostics | None:
    if os.environ.get(ENABLE_ENV, "1") == "0":
        return None
    try:
        return EarlyDiagnostics(params, answered[1], output.send)
    except Exception:
        logger.exception("no early diagnostics; the server will send them")
        return None


class _Front:
    """What the front does with each chunk read before the server is built: keep it for the
    server, answer the first frame if it is an `initialize` it can judge, and show the early
    diagnostics of the frames after it (lsp_server/early.py)."""

    def __init__(self, output: _Output) -> None:
        self.output = output
        self.read: list[bytes] = []
        # None once the first frame was judged, unless the early diagnostics follow the frames.
        self.parser: FrameParser | None = FrameParser()
        self.answered: tuple[int | str, dict[str, Any]] | None = None
        self.early: EarlyDiagnostics | None = None

    def take(self, data: bytes) -> bool:
        """One chunk read (empty: the end of input); True when the first frame was judged
        with it."""
        self.read.append(data)
        if self.parser is None or not data:
            return False
        self.parser.feed(data)
        frames = self.parser.frames()
        judged_now = False
        if frames and self.answered is None and self.early is None:
            judged_now = True
            judged = _answer_initialize(frames.pop(0).body, self.output)
            if judged is not None:
                self.answered = judged[0]
                self.early = _early_diagnostics(self.answered, judged[1], self.output)
            if self.early is None:
                self.parser = None
        if self.early is not None:
            # Only watched: every byte still goes to the server, in order.
            for frame in frames:
                self.early.handle(frame.body)
        return judged_now

    def handover(self, pump: StdinPump, pending: Callable[[], list[bytes]]) -> Handover:
        """What the server takes over: the bytes read so far joined as one burst for its
        reader (the end of input, if it came, stays last), the early answers and indexes."""
        burst = [b"".join(self.read)] if any(self.read) else []
        if self.read and not self.read[-1]:
            burst.append(b"")
        handover = Handover(pump, burst, pending, self.answered)
        if self.early is not None:
            handover.pulls_answered = self.early.pulls_answered
            handover.gotcha_indexes = self.early.gotcha_indexes()
        return handover


def _pending(events: queue.SimpleQueue[tuple[str, Any]]) -> list[bytes]:
    """The chunks delivered to the front but not taken (the loader's one event was taken)."""
    return [data for _, data in drain(events)]


def serve_stdio(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Serve LSP on stdio: answer `initialize` early, then hand the stream to the server."""
    output = _Output(stdout or sys.stdout.buffer)
    events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    pump = StdinPump((stdin or sys.stdin.buffer).fileno(), lambda data: events.put(("data", data)))
    # The loader holds the interpreter lock for most of its half second: the threads that
    # read and answer the first frame take it back within a fifth of a millisecond, not the
    # default 5 ms at each of their three hand-offs, until the first frame is judged.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(FRONT_SWITCH_INTERVAL)
    threading.Thread(target=_load, args=(events,), name="engram-load", daemon=True).start()
    front = _Front(output)
    while True:
        kind, value = events.get()
        if kind == "data":
            pump.taken()
            if front.take(value):
                sys.setswitchinterval(switch_interval)
            continue
        sys.setswitchinterval(switch_interval)
        if kind == "failed":
            _serve_without_server(value, events, pump, front.read, front.answered, output)
            return
        server: EngramServer = value
        break
    server.start_io(stdout=output.stream, handover=front.handover(pump, partial(_pending, events)))


class _WithoutServer:
    """The server could not be built: the client is told, and answered until it says goodbye."""

    def __init__(self, failure: BaseException, answered: bool, output: _Output) -> None:
        summary = f"{type(failure).__name__}: {failure}"
        self.details = "".join(traceback.format_exception(failure))
        self.reason = f"engram's language server could not start: {summary}"
        self.output = output
        self.reported = False
        self.shutdown = False
        self.skip = 1 if answered else 0  # the initialize request already answered
        self.parser = FrameParser()

    def report(self) -> None:
        if self.reported:
            return
        self.reported = True
        self.output.send(
            {
                "jsonrpc": "2.0",
                "method": "window/showMessage",
                "params": {"type": 1, "message": f"{self.reason} (details in its log)"},
            }
        )
        self.output.send(
            {
                "jsonrpc": "2.0",
                "method": "window/logMessage",
                "params": {"type": 1, "message": f"{self.reason}\n{self.details}"},
            }
        )

    def take(self, data: bytes) -> None:
        """One chunk read; raises SystemExit at `exit` or the end of input (empty)."""
        if not data:
            raise SystemExit(0 if self.shutdown else 1)  # the end of input: the client is gone
        self.parser.feed(data)
        for frame in self.parser.frames():
            if self.skip:
                self.skip -= 1
                continue
            self.handle(frame.body)

    def handle(self, body: bytes | None) -> None:
        try:
            message = json.loads(body or b"")
        except (ValueError, RecursionError):
            return
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return  # a response, or no JSON-RPC: nothing to answer
        method, msg_id = message["method"], message.get("id")
        if method == "exit":
            raise SystemExit(0 if self.shutdown else 1)
        if not valid_id(msg_id):
            return  # a notification
        if method == "shutdown":
            self.shutdown = True
            self.output.send({"id": msg_id, "jsonrpc": "2.0", "result": None})
            return
        self.report()
        error = {"code": INTERNAL_ERROR, "message": self.reason}
        self.output.send({"id": msg_id, "jsonrpc": "2.0", "error": error})


def _serve_without_server(
    failure: BaseException,
    events: queue.SimpleQueue[tuple[str, Any]],
    pump: StdinPump,
    read: list[bytes],
    answered: tuple[int | str, dict[str, Any]] | None,
    output: _Output,
) -> None:
    """The server could not be built: say so, and answer until the client says goodbye."""
    unloaded = _WithoutServer(failure, answered is not None, output)
    logger.error("the language server could not start:\n%s", unloaded.details)
    if answered is not None:
        unloaded.report()
    chunks = iter(read)
    while True:
        data = next(chunks, None)
        if data is None:
            _, data = events.get()  # only chunks now: the loader's one event was taken
            pump.taken()
        unloaded.take(data)
