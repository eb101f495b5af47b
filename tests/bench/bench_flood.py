"""Hover behind a flood of 1,000 queued didChange notifications, over real stdio.

The client writes 1,000 `didChange` (one keystroke each, into a 5,000-line document) and a
hover in one burst, so every edit is queued in the server's input ahead of the hover; the
figure is the time from writing the burst to the hover's answer. The peer is the same server
read by pygls' own reader (`pygls.io_.run_async`, a thread hop per header line and body, one
dispatch per message), started from the same code. Budget (docs/design.md section 7): < 50 ms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.harness import Figure, summarize
from tests.lsp.raw_client import RawServer

EDITS = 1_000
LINES = 5_000
ROUNDS = 15
PYGLS_READER = [
    sys.executable,
    "-c",
    "from pygls.server import JsonRPCServer\n"
    "from lsp_server.setup import create_server\n"
    "JsonRPCServer.start_io(create_server())",
]


def _document() -> str:
    return "".join(f"value_{n} = compute({n})  # line {n}\n" for n in range(LINES))


def _cpu_ms(pid: int) -> float:
    """CPU time (user + system) the process has used, from /proc: the figure that does not
    depend on how loaded the machine is."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")


def _flood(server: RawServer, uri: str, version: int) -> tuple[float, int]:
    frames = []
    for n in range(EDITS):
        line = (n * 53) % LINES
        message = {
            "jsonrpc": "2.0",
            "method": "textDocument/didChange",
            "params": {
                "textDocument": {"uri": uri, "version": version + n},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": line, "character": 0},
                            "end": {"line": line, "character": 0},
                        },
                        # (sent by Neovim, eglot and VS Code alike, though deprecated)
                        "rangeLength": 0,
                        "text": "x",
                    }
                ],
            },
        }
        frames.append(server.frame(json.dumps(message).encode()))
    hover_id = server.new_id()
    hover = {
        "jsonrpc": "2.0",
        "id": hover_id,
        "method": "textDocument/hover",
        "params": {"textDocument": {"uri": uri}, "position": {"line": 7, "character": 3}},
    }
    frames.append(server.frame(json.dumps(hover).encode()))
    start = time.perf_counter()
    server.send_bytes(b"".join(frames))
    answer = server.wait(hover_id, timeout=60)
    assert "result" in answer, answer
    return (time.perf_counter() - start) * 1000, version + EDITS


def _measure(command: list[str] | None) -> tuple[list[float], str]:
    """Hover latencies over ROUNDS bursts, and the server's median CPU time per burst."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        # A project (a git repository): the language server makes a store only in one.
        subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
        text = _document()
        (folder / "big.py").write_text(text)
        server = RawServer(folder.resolve(), Path(tmp) / "server.log", command=command)
        try:
            server.initialize()
            uri = (folder.resolve() / "big.py").as_uri()
            server.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
            )
            # `initialize` is answered before the server has loaded (lsp_server/front.py): one
            # answered request first, so the first burst measures a serving server, not its load.
            server.request(
                "textDocument/hover",
                {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
            )
            version = 2
            samples = []
            cpu = []
            for _ in range(ROUNDS):
                before = _cpu_ms(server.proc.pid)
                elapsed, version = _flood(server, uri, version)
                cpu.append(_cpu_ms(server.proc.pid) - before)
                samples.append(elapsed)
                time.sleep(0.3)  # let debounced work after the burst settle between rounds
            # The edits were all applied: the document has EDITS * ROUNDS more characters.
            check = server.request(
                "workspace/executeCommand",
                {"command": "engram.evolution.status", "arguments": [{}]},
            )
            assert "result" in check, check
        finally:
            server.close()
    median_cpu, _ = summarize(cpu)
    return samples, f"{median_cpu:.0f} ms"


def run() -> list[Figure]:
    ours, our_cpu = _measure(None)
    theirs, their_cpu = _measure(PYGLS_READER)
    median, p95 = summarize(ours)
    peer_median, peer_p95 = summarize(theirs)
    return [
        Figure(
            f"hover behind {EDITS:,} queued didChange (one burst, {LINES:,}-line document)",
            "< 50 ms",
            median,
            p95,
            ratio=f"{peer_median / median:.1f}x faster than pygls' reader ({peer_median:.0f} ms)",
            within_budget=max(ours) < 50,
            note=f"{ROUNDS} bursts, worst {max(ours):.1f} ms, server CPU per burst {our_cpu} "
            f"(median; 10 ms clock ticks); the same server read by pygls' reader: median "
            f"{peer_median:.0f} ms, p95 {peer_p95:.0f} ms, worst {max(theirs):.0f} ms, CPU per "
            f"burst {their_cpu}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        )
    ]
