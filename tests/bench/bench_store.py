"""Durable write of one event (docs/design.md section 7: p95 < 2 ms), with raw sqlite3 as the peer."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from memory_core import events
from memory_core.events import Event
from memory_core.store import Store
from tests.bench.harness import Figure, summarize, time_ms

WRITES = 2000


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = Store.init(root)
        payload = {"command": "pytest -q tests/test_api.py", "exit_code": 1, "pad": "x" * 200}
        samples = time_ms(
            lambda: events.append(store, Event("bench.write", actor="cli", data=payload)), WRITES
        )
        store.close()

        # The peer: the same insert through bare sqlite3 with the same pragmas, no redaction or JSON.
        raw = sqlite3.connect(root / "peer.db", isolation_level=None)
        raw.execute("PRAGMA journal_mode = WAL")
        raw.execute("PRAGMA synchronous = NORMAL")
        raw.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, ts REAL, data TEXT)")

        def peer_write() -> None:
            raw.execute("BEGIN IMMEDIATE")
            raw.execute("INSERT INTO t (ts, data) VALUES (1.0, ?)", ("x" * 250,))
            raw.execute("COMMIT")

        peer = time_ms(peer_write, WRITES)
        raw.close()
    median, p95 = summarize(samples)
    peer_median, _ = summarize(peer)
    return [
        Figure(
            "durable write of one event",
            "p95 < 2 ms",
            median,
            p95,
            ratio=f"{median / peer_median:.1f}x bare sqlite3",
            within_budget=p95 < 2.0,
        )
    ]
