"""Content-Length frames read from a byte stream, with limits and resynchronisation.

The standard library only: the stdio front (lsp_server/front.py) reads the first frame with it
before pygls and lsprotocol are imported, and the full server (lsp_server/jsonrpc.py) reads
every frame with the same class, so both see the same messages in the same bytes.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

logger = logging.getLogger("engram.lsp")

# The largest message engram accepts: a whole file sent with didOpen is the biggest there is,
# and the checkpoint size cap keeps files that size out anyway.
MAX_FRAME_BYTES = 64 * 1024 * 1024
# A header line longer than this is garbage, not a header.
MAX_HEADER_BYTES = 8 * 1024
CHUNK_BYTES = 64 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

_HEADER = b"content-length:"
# Where a frame's header block is, inside a body: a header line (`Content-Length: 12` and a line
# break) or the blank line that ends a header block (CR LF CR LF). A JSON string cannot hold a
# raw line break and a header is no JSON token, so the first is never in a valid body; the
# second only in JSON padded with blank lines, which no client sends. Either means a frame was
# cut short and ran on into the next one: the two must never be read as one request.
_HEADER_INSIDE = re.compile(rb"content-length:[ \t]*\d*[ \t]*\r?\n|\r\n\r\n", re.IGNORECASE)
# How far past a body a header begun inside it is looked for (a header line is shorter).
_LOOKAHEAD = 64
_ID_HINT = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


class Frame:
    """One frame from the stream: a body, or a problem to answer."""

    # A plain class, not a dataclass: `dataclasses` imports `inspect`, 10 ms of the front's
    # start (lsp_server/front.py) spent before the `initialize` answer.
    __slots__ = ("body", "id_hint", "oversize")

    def __init__(
        self,
        body: bytes | None = None,
        oversize: int | None = None,  # the declared length of a refused frame
        id_hint: int | str | None = None,
    ) -> None:
        self.body = body
        self.oversize = oversize
        self.id_hint = id_hint

    def __repr__(self) -> str:
        return f"Frame(body={self.body!r}, oversize={self.oversize!r}, id_hint={self.id_hint!r})"


class FrameParser:
    """Splits a byte stream into `Content-Length` frames, with limits and resynchronisation."""

    def __init__(self, max_frame: int = MAX_FRAME_BYTES) -> None:
        self.buffer = bytearray()
        self.max_frame = max_frame
        self._length: int | None = None  # declared length once the headers are complete
        self._pending_length: int | None = None  # seen in a header line, blank line not yet
        self._skipping = False  # skipping the body of a refused frame

    def feed(self, data: bytes) -> None:
        self.buffer += data

    def frames(self) -> list[Frame]:
        """Every complete frame in the buffer (and refused ones), consuming them."""
        found: list[Frame] = []
        while True:
            frame = self._next()
            if frame is None:
                return found
            found.append(frame)

    def _next(self) -> Frame | None:
        buffer = self.buffer
        while True:
            if self._skipping:
                # Resynchronise: the next header starts the next frame. Nothing of the refused
                # body is kept.
                at = _find_header(buffer)
                if at < 0:
                    keep = len(_HEADER) - 1
                    del buffer[: max(0, len(buffer) - keep)]
                    return None
                del buffer[:at]
                self._skipping = False
                continue
            if self._length is not None:
                if len(buffer) < self._length:
                    return None
                body = bytes(buffer[: self._length])
                # A header that starts inside the body, whole or finished by the bytes after
                # it: a frame cut short that ran on into the next one.
                joined = _HEADER_INSIDE.search(bytes(buffer[: self._length + _LOOKAHEAD]))
                self._length = None
                if joined is not None and joined.start() < len(body):
                    # The short one is answered as the invalid JSON it is, and reading goes on
                    # at the header inside it: the next message is read whole, not lost.
                    logger.warning("a message ran into the next message's header; cut there")
                    del buffer[: joined.start()]
                    return Frame(body=body[: joined.start()])
                del buffer[: len(body)]
                return Frame(body=body)
            end = buffer.find(b"\n")
            if end < 0:
                if len(buffer) > MAX_HEADER_BYTES:
                    # No line break in 8 KiB: not a header. Drop it, keep looking for one.
                    at = _find_header(buffer)
                    if at > 0:
                        logger.warning("dropped %d bytes before a header", at)
                        del buffer[:at]
                        continue
                    logger.warning("dropped %d bytes that are no JSON-RPC header", len(buffer))
                    del buffer[: len(buffer) - len(_HEADER)]
                return None
            line = bytes(buffer[: end + 1])
            del buffer[: end + 1]
            stripped = line.strip()
            if not stripped:
                if self._pending_length is None:
                    continue  # a stray blank line
                length, self._pending_length = self._pending_length, None
                if length > self.max_frame:
                    logger.warning(
                        "refused a message of %d bytes (the limit is %d)", length, self.max_frame
                    )
                    # Answered at once, with the id if the first bytes of the body show it.
                    refused = Frame(oversize=length)
                    match = _ID_HINT.search(bytes(buffer[:4096]))
                    if match:
                        refused.id_hint = _decode_id(match.group(1))
                    self._skipping = True
                    return refused
                self._length = length
                continue
            at = stripped.lower().find(_HEADER)
            if at < 0:
                continue  # Content-Type, or junk between frames
            if at > 0:
                logger.warning("dropped %d bytes before a header", at)
            value = stripped[at + len(_HEADER) :].strip()
            if value.isdigit():
                # A length of 30 digits is refused like any too large one (and int() of a few
                # thousand digits would itself raise).
                self._pending_length = int(value) if len(value) <= 30 else 10**30
            else:
                logger.warning("ignored a Content-Length header of %r", value[:40])
                self._pending_length = None


def _find_header(buffer: bytearray) -> int:
    return bytes(buffer).lower().find(_HEADER)


def _decode_id(raw: bytes) -> int | str | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def valid_id(value: Any) -> bool:
    """Whether `value` is a JSON-RPC request id (a string or an integer, not a boolean)."""
    return isinstance(value, int | str) and not isinstance(value, bool)
