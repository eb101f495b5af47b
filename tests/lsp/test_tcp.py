"""`engram lsp --tcp`: loopback only (docs/design.md section 8), and a real client can talk to it."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from tests.conftest import run_cli
from tests.lsp.conftest import make_project


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_non_loopback_host_is_refused(workspace: Path) -> None:
    result = run_cli("lsp", "--tcp", "--host", "0.0.0.0", "--port", str(free_port()), cwd=workspace)
    assert result.code == 2
    assert "loopback only" in result.stderr and "Traceback" not in result.stderr


async def test_a_client_initializes_over_loopback_tcp(workspace: Path) -> None:
    make_project(workspace)  # the server makes a store only in a project
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "memory_core", "lsp", "--tcp", "--port", str(port)],
        cwd=workspace,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Retry the connection itself: a probe connection would be the server's one client.
        client = LanguageClient("tcp-test", "1")
        deadline = time.monotonic() + 20
        while True:
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)
        result = await client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
            )
        )
        assert result.server_info is not None and result.server_info.name == "engram"
        client.initialized(types.InitializedParams())
        status = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="engram.status", arguments=[{}])
        )
        assert status["root"] == str(workspace)
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    finally:
        server.kill()
        server.wait()
