"""Server start to initialize result (docs/design.md section 7: < 1 s), a real process over stdio."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from tests.bench.harness import Figure, summarize

RUNS = 8


async def _start_once(folder: Path) -> float:
    client = LanguageClient("bench", "1")
    start = time.perf_counter()
    await client.start_io(sys.executable, "-m", "lsp_server")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name="bench")],
        )
    )
    elapsed = (time.perf_counter() - start) * 1000
    client.initialized(types.InitializedParams())
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return elapsed


def _python_startup_ms() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - start) * 1000


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # A project (a git repository): the language server makes a store only in one.
        subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
        samples = [asyncio.run(_start_once(folder)) for _ in range(RUNS)]
    median, p95 = summarize(samples)
    bare = summarize([_python_startup_ms() for _ in range(RUNS)])[0]
    return [
        Figure(
            "server start to initialize result",
            "< 1 s",
            median,
            p95,
            ratio=f"{median / bare:.1f}x `python -c pass`",
            within_budget=p95 < 1000,
        )
    ]
