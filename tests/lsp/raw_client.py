"""A JSON-RPC client that writes raw bytes to `engram lsp` over real stdio.

pytest-lsp only sends well-formed messages; hostile input (broken frames, invalid JSON, params of
the wrong type, absurd lengths) needs a client that writes bytes. This one answers the server's
own requests (configuration, registrations, showMessageRequest) so the server never waits, and
keeps every response and notification for assertions.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVER_COMMAND = [sys.executable, "-m", "lsp_server"]


class RawServer:
    def __init__(self, folder: Path, log: Path, command: list[str] | None = None) -> None:
        self.folder = folder
        self.log_path = log
        self._log = open(log, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            command or SERVER_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=folder,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.responses: dict[Any, dict[str, Any]] = {}
        self.null_id_errors: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        # Every message from the server, in the order it came (requests included).
        self.received: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._next_id = 0
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        self._writer = threading.Thread(target=self._write, daemon=True)
        self._writer.start()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- sending ---------------------------------------------------------------------------

    def send_bytes(self, data: bytes) -> None:
        # Through a writer thread: the reader thread answers the server's requests while the
        # test may be blocked writing a burst, and the two must not wait on each other.
        self._outbox.put(data)

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        while True:
            data = self._outbox.get()
            if data is None:
                return
            try:
                stdin.write(data)
                stdin.flush()
            except (BrokenPipeError, ValueError):
                return

    def frame(self, body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def send(self, message: Any) -> None:
        self.send_bytes(self.frame(json.dumps(message).encode()))

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def request_async(self, method: str, params: Any = None, *, omit_params: bool = False) -> int:
        msg_id = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if not omit_params:
            message["params"] = params
        self.send(message)
        return msg_id

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        return self.wait(self.request_async(method, params), timeout)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, msg_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(
                        f"no answer to request {msg_id!r} (server alive: {self.proc.poll() is None})"
                    )
                self._cond.wait(min(left, 0.2))
            return self.responses[msg_id]

    def wait_null_errors(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.null_id_errors) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{len(self.null_id_errors)} of {count} id-less error responses"
                    )
                self._cond.wait(min(left, 0.2))
            return list(self.null_id_errors)

    # -- lifecycle ---------------------------------------------------------------------------

    def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        uri = self.folder.as_uri()
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri,
                "capabilities": capabilities or {},
                "workspaceFolders": [{"uri": uri, "name": self.folder.name}],
            },
        )
        self.notify("initialized", {})
        return result

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None, timeout=10)
                self.notify("exit", None)
                self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        finally:
            self._outbox.put(None)
            self._log.close()

    def log_text(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    # -- reading -----------------------------------------------------------------------------

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line.strip() == b"":
                    break
                name, _, value = line.decode().partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                continue
            message = json.loads(stream.read(length))
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        with self._cond:
            self.received.append(message)
        if "method" in message and "id" in message:
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": self._answer(message)})
            return
        with self._cond:
            if "method" in message:
                self.notifications.append(message)
            elif message.get("id") is None:
                self.null_id_errors.append(message)
            else:
                self.responses[message["id"]] = message
            self._cond.notify_all()

    def _answer(self, message: dict[str, Any]) -> Any:
        if message["method"] == "workspace/configuration":
            return [None for _ in message.get("params", {}).get("items", [])]
        if message["method"] == "workspace/applyEdit":
            return {"applied": True}
        return None
