"""Nothing is lost (docs/design.md section 8): a killed writer, and several writers at once.

These run real processes against a real SQLite file. A write counts as acknowledged once the
writer has printed its sequence number, which it does only after `transaction()` returned.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.store import Store

WRITER = """
import sys
from memory_core.store import Store
from memory_core import events
from memory_core.events import Event

store = Store.open_or_init(__import__("pathlib").Path(sys.argv[1]))
start, stop, tag = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
for seq in range(start, stop):
    events.append(store, Event("reliability", actor=tag, data={"seq": seq, "pad": "x" * 200}))
    sys.stdout.write(f"{seq}\\n")
    sys.stdout.flush()
"""

pytestmark = pytest.mark.slow


def spawn_writer(root: Path, start: int, stop: int, tag: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), str(start), str(stop), tag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stored_seqs(root: Path, tag: str) -> list[int]:
    with Store.open(root) as store:
        assert store.query_one("PRAGMA integrity_check")[0] == "ok"  # type: ignore[index]
        rows = store.query(
            "SELECT json_extract(data, '$.seq') AS seq FROM events WHERE kind = 'reliability' AND actor = ?",
            (tag,),
        )
    return [int(row["seq"]) for row in rows]


def test_a_writer_killed_at_random_points_loses_no_acknowledged_write(workspace: Path) -> None:
    Store.init(workspace).close()
    rng = random.Random(20261122)
    total, kills, acknowledged = 10_000, 0, set()
    next_seq = 0
    while next_seq < total:
        writer = spawn_writer(workspace, next_seq, total, "crash")
        assert writer.stdout is not None
        # Kill after a random number of acknowledged writes: a random point in the write loop.
        kill_after = rng.randint(100, 400) if kills < 25 else None
        for count, line in enumerate(writer.stdout, start=1):
            if line.endswith("\n"):
                acknowledged.add(int(line))
            if kill_after is not None and count >= kill_after:
                os.kill(writer.pid, signal.SIGKILL)
                kills += 1
                break
        remainder = writer.stdout.read()
        acknowledged.update(
            int(line) for line in remainder.splitlines(keepends=True) if line.endswith("\n")
        )
        writer.wait()
        if writer.returncode not in (0, -signal.SIGKILL):
            raise AssertionError(f"writer failed: {writer.stderr.read() if writer.stderr else ''}")
        # Resume after the last write that reached the store (it may be one past the last
        # acknowledged one, if the kill came between commit and print).
        seqs = stored_seqs(workspace, "crash")
        lost = acknowledged - set(seqs)
        assert not lost, (
            f"kill {kills}: {len(lost)} acknowledged writes lost, e.g. {sorted(lost)[:5]}"
        )
        next_seq = max(seqs) + 1 if seqs else 0
    assert kills >= 20
    stored = stored_seqs(workspace, "crash")
    assert len(stored) == len(set(stored)) == total


def test_four_processes_writing_at_once_lose_nothing(workspace: Path) -> None:
    Store.init(workspace).close()
    writers = [spawn_writer(workspace, i * 2500, (i + 1) * 2500, "concurrent") for i in range(4)]
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
        assert err == ""
        assert len(out.splitlines()) == 2500
    assert sorted(stored_seqs(workspace, "concurrent")) == list(range(10_000))
