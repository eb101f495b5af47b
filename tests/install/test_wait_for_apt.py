"""The setup scripts wait for a package manager that another process is running, not fail."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "wait-for-apt.sh"


def run_wait(lock: Path, limit: float) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "-c", f"source {SCRIPT}; wait_for_apt"],
        env={**os.environ, "ENGRAM_APT_LOCKS": str(lock), "ENGRAM_APT_WAIT": str(limit)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, time.monotonic() - started


def hold_lock(lock: Path, seconds: float, taken: threading.Event) -> None:
    # fcntl locks belong to a process, so the holder must be another process, as apt is.
    holder = subprocess.Popen(
        [
            "python3",
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(lock)!r}, os.O_RDWR)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            f"time.sleep({seconds})\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    holder.stdout.readline()
    taken.set()
    holder.wait()


def test_waits_while_another_process_holds_the_lock_then_goes_on(tmp_path: Path) -> None:
    lock = tmp_path / "lock-frontend"
    lock.touch()
    taken = threading.Event()
    holder = threading.Thread(target=hold_lock, args=(lock, 3, taken))
    holder.start()
    assert taken.wait(10)
    done, waited = run_wait(lock, limit=30)
    holder.join()
    assert done.returncode == 0, done.stderr
    assert "waiting for it" in done.stderr
    assert waited >= 2, f"returned after {waited:.1f} s while the lock was still held"


def test_gives_up_with_a_clear_message_when_the_lock_is_never_released(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    lock.touch()
    taken = threading.Event()
    holder = threading.Thread(target=hold_lock, args=(lock, 6, taken))
    holder.start()
    assert taken.wait(10)
    done, _ = run_wait(lock, limit=1)
    holder.join()
    assert done.returncode == 1
    assert "still held" in done.stderr


def test_a_free_lock_costs_nothing(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    lock.touch()
    done, waited = run_wait(lock, limit=30)
    assert done.returncode == 0
    assert done.stderr == ""
    assert waited < 5
