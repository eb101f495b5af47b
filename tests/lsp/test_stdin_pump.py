"""The thread that reads the language server's stdin (lsp_server/stdio.py), on a real pipe: every
byte the client writes reaches the server once and in order, whoever holds the stream (the stdio
front, then the server's event loop), and the end of input is said once.

test_fast_initialize.py checks the same hand-over through the front; these tests drive the pump
directly, chunk by chunk, so each step is known.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import queue
import struct
import termios
import threading
import time
from collections.abc import Awaitable, Callable, Iterator

import pytest

from lsp_server import stdio
from lsp_server.frames import CHUNK_BYTES

WAIT = 5.0  # seconds: only reached when the pump is broken


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        with contextlib.suppress(OSError):  # closed by the test
            os.close(fd)


class Front:
    """The front's side: chunks delivered to a queue, each arrival signalled."""

    def __init__(self) -> None:
        self.chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self.arrived = threading.Semaphore(0)

    def deliver(self, data: bytes) -> None:
        self.chunks.put(data)
        self.arrived.release()

    def wait(self) -> None:
        assert self.arrived.acquire(timeout=WAIT), "the pump delivered nothing"


async def _read_until_end(read_chunk: Callable[[], Awaitable[bytes]]) -> list[bytes]:
    read: list[bytes] = []
    while True:
        chunk = await asyncio.wait_for(read_chunk(), WAIT)
        read.append(chunk)
        if not chunk:
            return read


def test_chunks_reach_the_front_in_order_then_the_end_of_input(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    front = Front()
    stdio.StdinPump(read_end, front.deliver)
    for n in range(3):
        os.write(write_end, b"message %d;" % n)
        front.wait()
    os.close(write_end)
    front.wait()
    assert stdio.drain(front.chunks) == [b"message 0;", b"message 1;", b"message 2;", b""]


def test_a_chunk_is_at_most_64_kib_and_nothing_is_lost(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    front = Front()
    stdio.StdinPump(read_end, front.deliver)
    sent = bytes(range(256)) * (3 * CHUNK_BYTES // 256 + 7)
    writer = threading.Thread(target=lambda: (os.write(write_end, sent), os.close(write_end)))
    writer.start()
    got: list[bytes] = []
    while not got or got[-1]:
        front.wait()
        got.append(front.chunks.get_nowait())
    writer.join()
    assert b"".join(got) == sent
    assert max(len(chunk) for chunk in got) == CHUNK_BYTES == 64 * 1024


def test_a_read_error_is_the_end_of_input(pipe: tuple[int, int]) -> None:
    read_end, _write_end = pipe
    os.close(read_end)  # reading a closed descriptor fails with EBADF
    front = Front()
    stdio.StdinPump(read_end, front.deliver)
    front.wait()
    assert stdio.drain(front.chunks) == [b""]


def test_the_pump_stops_once_the_server_loop_has_closed(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    calls: list[bytes] = []
    called = threading.Semaphore(0)

    def closed_loop(data: bytes) -> None:
        calls.append(data)
        called.release()
        raise RuntimeError("Event loop is closed")

    before = set(threading.enumerate())
    stdio.StdinPump(read_end, closed_loop)
    [thread] = set(threading.enumerate()) - before
    assert thread.name == "engram-stdin"
    assert thread.daemon  # a blocked read never keeps the process from exiting
    os.write(write_end, b"first")
    assert called.acquire(timeout=WAIT)
    thread.join(WAIT)
    assert not thread.is_alive()
    assert calls == [b"first"]


def test_the_server_reads_what_the_front_took_then_what_waited_then_the_rest(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    front = Front()
    pump = stdio.StdinPump(read_end, front.deliver)
    # More chunks wait in the front than the pump may read ahead: it stops reading until the
    # server takes them, so the pipe, not memory, holds what the client sends next.
    for n in range(stdio.MAX_WAITING_CHUNKS):
        os.write(write_end, b"%d;" % n)
        front.wait()
    os.write(write_end, b"after;")

    async def serve() -> list[bytes]:
        read_chunk = pump.to_loop(
            asyncio.get_running_loop(), [b"taken;"], lambda: stdio.drain(front.chunks)
        )
        os.close(write_end)
        return await _read_until_end(read_chunk)

    read = asyncio.run(serve())
    waiting = [b"%d;" % n for n in range(stdio.MAX_WAITING_CHUNKS)]
    assert read == [b"taken;", *waiting, b"after;", b""]


def test_the_pump_reads_ahead_only_as_far_as_its_room(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    front = Front()
    pump = stdio.StdinPump(read_end, front.deliver)
    for n in range(stdio.MAX_WAITING_CHUNKS):
        os.write(write_end, b"%d;" % n)
        front.wait()
    os.write(write_end, b"one more;")
    # The room is used up: the next chunk stays in the pipe until one is taken.
    assert not front.arrived.acquire(timeout=0.05)
    pump.taken()
    front.wait()
    assert stdio.drain(front.chunks)[-1] == b"one more;"


def test_a_server_without_a_front_reads_stdin_from_the_start(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b"Content-Length: 2\r\n\r\n{}")
    os.close(write_end)
    handover = stdio.Handover.plain(read_end)
    assert (handover.read, handover.answered) == ([], None)

    async def serve() -> list[bytes]:
        return await _read_until_end(handover.reader(asyncio.get_running_loop()))

    read = asyncio.run(serve())
    assert b"".join(read) == b"Content-Length: 2\r\n\r\n{}"
    assert read[-1] == b""


def test_drain_takes_everything_waiting_in_order() -> None:
    items: queue.SimpleQueue[int] = queue.SimpleQueue()
    assert stdio.drain(items) == []
    for n in (3, 1, 2):
        items.put(n)
    assert stdio.drain(items) == [3, 1, 2]
    assert items.empty()


def _until_read(fd: int) -> None:
    """Wait until the pump has taken every byte out of the pipe (bounded: 5 s)."""
    for _ in range(5000):
        if struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0] == 0:
            return
        time.sleep(0.001)
    raise AssertionError("the pump never read the pipe")


def test_bytes_read_before_the_server_took_over_are_not_lost(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    handover = stdio.Handover.plain(read_end)
    os.write(write_end, b"early;")
    _until_read(read_end)  # delivered to the hand-over's own queue, not yet to a loop
    os.write(write_end, b"later;")
    os.close(write_end)

    async def serve() -> list[bytes]:
        return await _read_until_end(handover.reader(asyncio.get_running_loop()))

    assert b"".join(asyncio.run(serve())) == b"early;later;"


def test_the_hand_over_passes_what_the_front_read_and_what_waits(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    front = Front()
    pump = stdio.StdinPump(read_end, front.deliver)
    os.write(write_end, b"waiting;")
    front.wait()
    handover = stdio.Handover(pump, [b"taken;"], lambda: stdio.drain(front.chunks))
    os.close(write_end)

    async def serve() -> list[bytes]:
        return await _read_until_end(handover.reader(asyncio.get_running_loop()))

    assert asyncio.run(serve()) == [b"taken;", b"waiting;", b""]


def test_a_hand_over_with_nothing_waiting_reads_on(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    pump = stdio.StdinPump(read_end, Front().deliver)

    async def serve() -> list[bytes]:
        read_chunk = pump.to_loop(asyncio.get_running_loop())
        os.write(write_end, b"after;")
        os.close(write_end)
        return await _read_until_end(read_chunk)

    assert b"".join(asyncio.run(serve())) == b"after;"
