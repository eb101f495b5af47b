"""What a checkpoint stores: listings (trees) of entries, content-addressed by SHA-256
and zstd-compressed; names in a stored listing are checked before anything is written from it."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from memory_core.errors import EngramError
from memory_core.workspace import STORE_DIRNAME

NEVER_CAPTURED = frozenset({".git", STORE_DIRNAME})


class CorruptCheckpointError(EngramError):
    """A checkpoint's manifest or content cannot be trusted; nothing was written."""


# -- compression (zstandard is imported lazily: hooks import this module's neighbours) ---------


_ZSTD = threading.local()  # one compressor and decompressor per thread, made once


def compress(data: bytes) -> bytes:
    compressor = getattr(_ZSTD, "compressor", None)
    if compressor is None:
        import zstandard

        compressor = _ZSTD.compressor = zstandard.ZstdCompressor(level=3)
    return bytes(compressor.compress(data))


def decompress(data: bytes) -> bytes:
    decompressor = getattr(_ZSTD, "decompressor", None)
    if decompressor is None:
        import zstandard

        decompressor = _ZSTD.decompressor = zstandard.ZstdDecompressor()
    return bytes(decompressor.decompress(data, max_output_size=1 << 31))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- what a file looks like --------------------------------------------------------------------


@dataclass(slots=True)
class Entry:
    """One name in a tree: a file ('f'), a symbolic link ('l') or a directory ('d')."""

    kind: str
    mode: int
    hash: str
    size: int
    files: int = 1

    def as_list(self, name: str) -> list[Any]:
        return [name, self.kind, self.mode, self.hash, self.size, self.files]


@dataclass
class Tree:
    entries: dict[str, Entry] = field(default_factory=dict)

    def encode(self) -> bytes:
        rows = [self.entries[name].as_list(name) for name in sorted(self.entries)]
        return json.dumps(rows, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def totals(self) -> tuple[int, int]:
        files = sum(e.files for e in self.entries.values())
        size = sum(e.size for e in self.entries.values())
        return files, size


# A backslash separates folders only on Windows; elsewhere it is a character a file name may
# hold, and refusing it made every checkpoint of a workspace with such a file unrestorable.
_BACKSLASH_SEPARATES = os.name == "nt"


def valid_name(name: Any) -> bool:
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and not (_BACKSLASH_SEPARATES and "\\" in name)
        and "\0" not in name
        and name not in NEVER_CAPTURED
    )


def decode_tree(data: bytes, where: str, *, validate: bool = True) -> Tree:
    """A stored listing. `validate` checks every name and field: always before anything is
    written from it (rollback, manifest); capture, which only re-encodes listings, skips it."""
    try:
        rows = json.loads(data)
        tree = Tree()
        if not validate:
            tree.entries = {row[0]: Entry(row[1], row[2], row[3], row[4], row[5]) for row in rows}
            return tree
        for name, kind, mode, digest, size, files in rows:
            if not valid_name(name):
                raise CorruptCheckpointError(
                    f"the checkpoint names an unsafe path {where}{name!r}",
                    hint="it was refused; nothing was written",
                )
            if (
                kind not in ("f", "l", "d")
                or not isinstance(digest, str)
                or not isinstance(mode, int)
            ):
                raise ValueError(f"bad entry {name!r}")
            tree.entries[name] = Entry(kind, int(mode), digest, int(size), int(files))
        return tree
    except CorruptCheckpointError:
        raise
    except (ValueError, TypeError) as exc:
        raise CorruptCheckpointError(
            f"the checkpoint's manifest is corrupt at {where or '/'}: {exc}",
            hint="it was refused; nothing was written",
        ) from None
