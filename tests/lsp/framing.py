"""The LSP base protocol's framing, for tests that feed a server bytes and read what it wrote."""

from __future__ import annotations

import json
from typing import Any


def frame(message: Any) -> bytes:
    """One message with its header (bytes are sent as they are: a body that is not JSON)."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frames(data: bytes) -> list[dict[str, Any]]:
    """Every message in `data`, which holds whole frames only."""
    found = []
    while data:
        head, rest = data.split(b"\r\n\r\n", 1)
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        found.append(json.loads(rest[:length]))
        data = rest[length:]
    return found
