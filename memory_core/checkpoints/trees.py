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


# Listings (a few kB each) come out smaller and faster at level 1 than at 3 (measured on the
# benchmark's: 3.7 against 3.8 kB, 37 against 53 us); content packs (256 kB) gain from level 3.
LISTING_LEVEL = 1


def compress(data: bytes, level: int = 3) -> bytes:
    compressors = getattr(_ZSTD, "compressors", None)
    if compressors is None:
        compressors = _ZSTD.compressors = {}
    compressor = compressors.get(level)
    if compressor is None:
        import zstandard

        compressor = compressors[level] = zstandard.ZstdCompressor(level=level)
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
        """The listing's bytes: exactly `json.dumps(rows, separators=(",", ":"),
        ensure_ascii=False)` of its sorted [name, kind, mode, hash, size, files] rows (digests
        name these bytes). orjson writes the same bytes for every string and 64-bit integer in
        a third of the time; anything else (a size past 2**64) goes to the json module."""
        import orjson  # lazily, as zstandard: hooks import this module's neighbours

        rows = [
            [name, e.kind, e.mode, e.hash, e.size, e.files]
            for name, e in sorted(self.entries.items())
        ]
        try:
            return orjson.dumps(rows)
        except orjson.JSONEncodeError:
            return json.dumps(rows, separators=(",", ":"), ensure_ascii=False).encode()

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


_KINDS = frozenset({"f", "l", "d"})
_NEVER_NAMES = frozenset({"", ".", ".."}) | NEVER_CAPTURED


def decode_tree(data: bytes, where: str, *, validate: bool = True) -> Tree:
    """A stored listing. `validate` checks every name and field: always before anything is
    written from it (rollback, manifest); capture, which only re-encodes listings, skips it."""
    import orjson

    try:
        try:
            rows = orjson.loads(data)
        except orjson.JSONDecodeError:  # what orjson refuses (NaN, say) is judged by json
            rows = json.loads(data.decode("utf-8"))
        tree = Tree(
            {
                name: Entry(kind, mode, digest, size, files)
                for name, kind, mode, digest, size, files in rows
            }
        )
    except (ValueError, TypeError) as exc:
        raise _corrupt(where, exc) from None
    if validate:
        _validate(tree.entries, where)
    return tree


def _validate(entries: dict[str, Entry], where: str) -> None:
    # The names all at once (a listing of safe names is the rule), one by one for the message.
    try:
        joined = "\0".join(entries)
    except TypeError:
        joined = "/"
    if (
        "/" in joined
        or joined.count("\0") != max(len(entries) - 1, 0)
        or (_BACKSLASH_SEPARATES and "\\" in joined)
        or not _NEVER_NAMES.isdisjoint(entries)
    ):
        for name in entries:
            if not valid_name(name):
                raise CorruptCheckpointError(
                    f"the checkpoint names an unsafe path {where}{name!r}",
                    hint="it was refused; nothing was written",
                )
    shapes = {
        (e.kind, type(e.mode), type(e.hash), type(e.size), type(e.files)) for e in entries.values()
    }
    for kind, *types in shapes:
        if kind not in _KINDS or types != [int, str, int, int]:
            name = next(n for n, e in entries.items() if e.kind == kind)
            raise _corrupt(where, ValueError(f"bad entry {name!r}"))


def _corrupt(where: str, exc: Exception) -> CorruptCheckpointError:
    return CorruptCheckpointError(
        f"the checkpoint's manifest is corrupt at {where or '/'}: {exc}",
        hint="it was refused; nothing was written",
    )
