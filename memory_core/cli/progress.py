"""Progress bars for long work: shown on a terminal, nothing on a pipe."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Progress(Protocol):
    def advance(self, amount: int = 1) -> None: ...


class _Silent:
    def advance(self, amount: int = 1) -> None:
        pass


@contextmanager
def progress(description: str, total: int | None) -> Iterator[Progress]:
    if not sys.stderr.isatty():
        yield _Silent()
        return
    # rich is imported only here: it costs ~40 ms, which the hook path must never pay.
    from rich.progress import Progress as RichProgress

    with RichProgress(transient=True) as bar:
        task = bar.add_task(description, total=total)

        class _Bar:
            def advance(self, amount: int = 1) -> None:
                bar.advance(task, amount)

        yield _Bar()
