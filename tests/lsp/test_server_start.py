"""The language server's process as it starts serving."""

from __future__ import annotations

import subprocess
import sys

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
