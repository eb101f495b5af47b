"""stdin, read by one thread for the life of the process and handed from the front to the server.

The standard library only (asyncio is imported when the server's event loop takes over): the
stdio front (lsp_server/front.py) reads through it before pygls is loaded.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from lsp_server.frames import CHUNK_BYTES

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")
# At most this many chunks wait unread (4 MiB): a client that sends faster than the server
# reads is slowed by the pipe, not buffered without end.
MAX_WAITING_CHUNKS = 64


class StdinPump:
    """Reads a file descriptor in 64 KiB chunks on a daemon thread, for the process's life.

    One thread hop per chunk, not per line as in pygls, and a blocked read never keeps the
    process from exiting. Chunks go to `deliver` (the front's queue at first, then the server's
    event loop); an empty chunk is the end of input.
    """

    def __init__(self, fd: int, deliver: Callable[[bytes], None]) -> None:
        self._fd = fd
        self._deliver = deliver
        self._lock = threading.Lock()
        self._room = threading.Semaphore(MAX_WAITING_CHUNKS)
        threading.Thread(target=self._pump, name="engram-stdin", daemon=True).start()

    def taken(self) -> None:
        """One chunk was taken off by its reader: room to read another."""
        self._room.release()

    def _pump(self) -> None:
        while True:
            self._room.acquire()
            try:
                data = os.read(self._fd, CHUNK_BYTES)
            except OSError:
                data = b""
            with self._lock:
                try:
                    self._deliver(data)
                except RuntimeError:  # the loop has closed: the server is going away
                    return
            if not data:
                return

    def to_loop(
        self,
        loop: asyncio.AbstractEventLoop,
        first: list[bytes] | None = None,
        pending: Callable[[], list[bytes]] | None = None,
    ) -> Callable[[], Awaitable[bytes]]:
        """From now on chunks go to `loop`; the returned coroutine function reads them.

        `first` (bytes the front already took) and `pending()` (chunks delivered to the
        front but not taken, collected while no new chunk can arrive) are read before them.
        """
        import asyncio

        chunks: asyncio.Queue[bytes] = asyncio.Queue()
        ready = list(first or [])

        def deliver(data: bytes) -> None:
            loop.call_soon_threadsafe(chunks.put_nowait, data)

        with self._lock:
            waiting = pending() if pending is not None else []
            for _ in waiting:
                self._room.release()
            ready.extend(waiting)
            self._deliver = deliver

        async def read_chunk() -> bytes:
            if ready:
                return ready.pop(0)
            data = await chunks.get()
            self._room.release()
            return data

        return read_chunk


class Handover:
    """What the front passes to the server: the pump, what was read so far, the early answer
    to `initialize` (its id and result) if there was one, and what the early diagnostics
    (lsp_server/early.py) did: the `textDocument/diagnostic` requests answered (id -> result)
    and the gotcha indexes built (root -> (key, index, built at))."""

    def __init__(
        self,
        pump: StdinPump,
        read: list[bytes],
        pending: Callable[[], list[bytes]] | None = None,
        answered: tuple[int | str, dict[str, Any]] | None = None,
        pulls_answered: dict[int | str, Any] | None = None,
        gotcha_indexes: dict[Any, tuple[object, Any, float]] | None = None,
    ) -> None:
        self.pump = pump
        self.read = read
        self.pending = pending
        self.answered = answered
        self.pulls_answered = pulls_answered or {}
        self.gotcha_indexes = gotcha_indexes or {}

    @classmethod
    def plain(cls, fd: int) -> Handover:
        """Stdin read from the start by the server itself (no front)."""
        chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        return cls(StdinPump(fd, chunks.put), [], pending=lambda: drain(chunks))

    def reader(self, loop: asyncio.AbstractEventLoop) -> Callable[[], Awaitable[bytes]]:
        return self.pump.to_loop(loop, self.read, self.pending)


def drain(items: queue.SimpleQueue[T]) -> list[T]:
    found: list[T] = []
    while True:
        try:
            found.append(items.get_nowait())
        except queue.Empty:
            return found
