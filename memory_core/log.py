"""The store's log (`.engram/engram.log`): where hooks and background work report problems.

Hooks must never fail the agent, so they write what went wrong here and exit 0. The log is
capped: past 1 MB it is rotated once to `engram.log.1`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memory_core.clock import iso, now
from memory_core.workspace import STORE_DIRNAME

LOG_NAME = "engram.log"
MAX_LOG_BYTES = 1_000_000


def log_path(root: Path) -> Path:
    return root / STORE_DIRNAME / LOG_NAME


def write(root: Path | None, level: str, message: str, *, exc: BaseException | None = None) -> None:
    """Append one entry to the store's log; never raises."""
    if root is None or not (root / STORE_DIRNAME).is_dir():
        return
    with contextlib.suppress(OSError):
        path = log_path(root)
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > MAX_LOG_BYTES:
                os.replace(path, path.with_suffix(".log.1"))
        text = f"{iso(now())} {level.upper()} [{os.getpid()}] {message}\n"
        if exc is not None:
            import traceback  # only now: every hook process imports this module

            text += "".join(traceback.format_exception(exc))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
