"""The language server's process as it starts serving."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.main import run

_REPORT_INSTEAD_OF_SERVING = """
import gc
import lsp_server.server

def report(self, *args, **kwargs):
    print(gc.get_freeze_count(), len(gc.get_objects()))

lsp_server.server.EngramServer.start_io = report
from lsp_server.main import run
run()
"""


def test_the_startup_heap_is_out_of_the_cyclic_collectors_reach_when_serving_starts() -> None:
    """pygls, lsprotocol, cattrs' generated code and every feature live as long as the
    server: frozen before it serves, a full collection no longer walks their ~50,000 objects
    (50 ms each time, now and then in the middle of a burst of edits a hover waited behind)."""
    done = subprocess.run(
        [sys.executable, "-c", _REPORT_INSTEAD_OF_SERVING],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    frozen, still_walked = map(int, done.stdout.split())
    assert frozen > 20_000, done.stdout
    assert still_walked < frozen / 10, done.stdout


# In this process (where mutation testing sees it), what `engram lsp --tcp` does before and
# while it serves.


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_host_other_than_loopback_is_refused_before_anything_listens() -> None:
    from memory_core.errors import UsageError

    for host in ("0.0.0.0", "192.168.1.20", "example.com"):
        port = _free_port()
        with pytest.raises(UsageError) as refused:
            run(tcp=True, host=host, port=port)
        assert refused.value.message == f"refusing to listen on {host!r}"
        assert refused.value.hint == "engram lsp --tcp listens on loopback only"
        with socket.socket() as probe:  # nothing was left listening there
            assert probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
async def test_a_loopback_host_is_served_on_the_port_asked(host: str, workspace: Path) -> None:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    port = _free_port()
    exit_codes: list[object] = []
    # As a fresh process has it: an earlier run() in this process set it already.
    logging.getLogger("pygls").setLevel(logging.NOTSET)

    def serve() -> None:
        try:
            run(tcp=True, host=host, port=port)
        except SystemExit as exc:  # `exit` after `shutdown` ends the process, with status 0
            exit_codes.append(exc.code)

    serving = threading.Thread(target=serve, daemon=True)
    serving.start()
    client = LanguageClient("tcp-test", "1")
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
        result = await client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
            )
        )
        assert result.server_info is not None and result.server_info.name == "engram"
        if Path("/proc/net/tcp").exists():  # listening on loopback only, not every interface
            assert _listening_addresses(port) and _listening_addresses(port) <= {
                "0100007F",
                "00000000000000000000000001000000",
            }
        # pygls' own chatter stays out of the editor's log.
        assert logging.getLogger("pygls").level == logging.WARNING
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        serving.join(timeout=10)
        assert not serving.is_alive() and exit_codes == [0]
    finally:
        gc.unfreeze()  # run() freezes the heap it serves with: give the test process its own


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    """Logging as a fresh process has it (no handler on the root logger, pygls' level unset);
    pytest's own handlers (added for each phase of a test) and levels are put back after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    pygls_level = logging.getLogger("pygls").level
    for handler in handlers:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("pygls").setLevel(logging.NOTSET)
    try:
        yield
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
        logging.getLogger("pygls").setLevel(pygls_level)


def test_the_server_logs_engram_s_messages_to_stderr_and_only_pygls_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memory_core.errors import UsageError

    with _fresh_logging():
        with pytest.raises(UsageError):  # logging is set up before the host is judged
            run(tcp=True, host="0.0.0.0", port=_free_port())
        logging.getLogger("lsp_server.features.test").info("workspace opened")
        logging.getLogger("lsp_server.features.test").debug("not shown")
        logging.getLogger("pygls.protocol").info("sent 200 bytes")  # pygls' chatter
        logging.getLogger("pygls.protocol").warning("a client sent garbage")
    err = capsys.readouterr().err.splitlines()
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
    assert len(err) == 2, err
    assert re.fullmatch(rf"{stamp} INFO lsp_server\.features\.test: workspace opened", err[0])
    assert re.fullmatch(rf"{stamp} WARNING pygls\.protocol: a client sent garbage", err[1])


def _frame(message: dict[str, object]) -> bytes:
    import json

    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_by_default_the_server_speaks_lsp_on_stdio(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    import io
    import os

    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    session = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}},
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    os.write(stdin_write, b"".join(_frame(m) for m in session))
    os.close(stdin_write)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(open(stdin_read, "rb")))  # noqa: SIM115
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(open(stdout_write, "wb")))  # noqa: SIM115
    answered: list[bytes] = []

    def read_all() -> None:
        while chunk := os.read(stdout_read, 1 << 16):
            answered.append(chunk)

    reader = threading.Thread(target=read_all)
    reader.start()
    codes: list[object] = []
    try:
        run()  # serves until `exit`
    except SystemExit as ended:
        codes.append(ended.code)
    finally:
        gc.unfreeze()
        with contextlib.suppress(OSError):
            os.close(stdout_write)
        reader.join(timeout=10)
        os.close(stdout_read)
    assert codes in ([], [0])  # `exit` after `shutdown`: a clean end
    import json

    replies = {}
    for part in b"".join(answered).split(b"Content-Length: ")[1:]:
        message = json.loads(part.split(b"\r\n\r\n", 1)[1])
        if "id" in message and "method" not in message:
            replies[message["id"]] = message
    assert replies[1]["result"]["serverInfo"]["name"] == "engram"
    assert "capabilities" in replies[1]["result"]
    assert replies[2]["result"] is None


def _listening_addresses(port: int) -> set[str]:
    """The local addresses (as /proc/net/tcp and tcp6 write them) listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, _, hex_port = local.partition(":")
                if state == "0A" and int(hex_port, 16) == port:
                    found.add(address)
    return found
