"""What a checkpoint stores: listings (trees) of entries, content-addressed by SHA-256
and zstd-compressed; names in a stored listing are checked before anything is written from it."""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
import os
import sys
import threading
from typing import Any, NamedTuple, cast

from memory_core.errors import EngramError
from memory_core.workspace import STORE_DIRNAME

# orjson reads and writes listings three times faster than the json module (byte for byte the
# same: see Tree.encode), but importing it costs a cold process a third of Python's own start
# (it loads dataclasses, inspect, ast): a process uses it once it has read this many listings
# (a scan, a rollback, the server), and the json module before (a CLI checkpoint reads a few).
ORJSON_AFTER_LISTINGS = 32
_LISTINGS_READ = [0]
_ORJSON: list[Any] = []


def _orjson() -> Any:
    """orjson once this process has read enough listings to gain from it, or has it imported
    already (the resident server's child: its server imported it), else None."""
    if _ORJSON:
        return _ORJSON[0]
    _LISTINGS_READ[0] += 1
    if _LISTINGS_READ[0] <= ORJSON_AFTER_LISTINGS and "orjson" not in sys.modules:
        return None
    import orjson

    _ORJSON.append(orjson)
    return orjson


def _dumps(value: Any) -> bytes:
    """`value` as JSON exactly as a listing holds it (no spaces, not ASCII-escaped), as UTF-8;
    UnicodeEncodeError for a name that is not UTF-8 on disk (a surrogate escape)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


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


class Entry(NamedTuple):
    """One name in a tree: a file ('f'), a symbolic link ('l') or a directory ('d').

    A tuple, so that listings are decoded and compared in C: a stored row becomes an entry
    without a Python call per row, and two listings' differences are one set operation on
    their items (a rollback compares hundreds of 100-entry listings)."""

    kind: str
    mode: int
    hash: str
    size: int
    files: int = 1

    def as_list(self, name: str) -> list[Any]:
        return [name, *self]


class Tree:
    """One folder's listing: name -> entry. (A plain class, as `Found`: no dataclasses on a
    cold checkpoint's path.)"""

    __slots__ = ("entries",)

    def __init__(self, entries: dict[str, Entry] | None = None) -> None:
        self.entries: dict[str, Entry] = {} if entries is None else entries

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tree) and self.entries == other.entries

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __repr__(self) -> str:
        return f"Tree(entries={self.entries!r})"

    def encode(self) -> bytes:
        """The listing's bytes: exactly `json.dumps(rows, separators=(",", ":"),
        ensure_ascii=False)` of its sorted (name, kind, mode, hash, size, files) rows (digests
        name these bytes). orjson writes the same bytes for every string and 64-bit integer in
        a third of the time; anything else (a size past 2**64) goes to the json module."""
        orjson = _orjson()
        names = sorted(self.entries)  # each row: (name,) + its entry, built in C
        rows = list(map(tuple.__add__, zip(names), map(self.entries.__getitem__, names)))
        if orjson is not None:
            try:
                return orjson.dumps(rows)  # type: ignore[no-any-return]
            except orjson.JSONEncodeError:
                pass
        # A name that is not UTF-8 on disk (os.fsdecode's surrogate escapes) is stored as its
        # own bytes, which decode_tree turns back into the same name.
        text = json.dumps(rows, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8", "surrogateescape")

    def totals(self) -> tuple[int, int]:
        entries = self.entries.values()
        return sum(map(_FILES, entries)), sum(map(_SIZE, entries))


class Listing:
    """A folder's listing as a capture edits it. Read from the store, it stays the bytes it was
    stored as, and a name the capture looks up, replaces or removes is found and edited in
    those bytes: a checkpoint of 10 changed files reads, edits and writes back some twenty
    listings of about a hundred rows, each of which cost more to decode into entries and encode
    again than everything else done with it. It is decoded (`entries`) only for what its bytes
    cannot answer cheaply: a name it does not hold (the new row's sorted place), or every row.

    The bytes stay canonical (`Tree.encode`'s): rows sorted by name, `["N","f",...]` each. Only
    the row of name N holds `["N","`: outside strings `[` opens the list or a row, and in a
    string the unescaped `"` after it would close that string, a name, whose row goes on with
    `,"`, a one-letter kind and `"`, which `N","` cannot spell (N's own `"` are written `\\"`).
    A row found is read back and checked before it is used; a name not found, or bytes not as
    expected, decode the listing, and the entries answer.
    """

    __slots__ = ("_data", "_files", "_size", "_tree", "_where")

    def __init__(self, tree: Tree | None = None) -> None:
        self._data: bytes | None = None
        self._tree: Tree | None = tree if tree is not None else Tree()
        self._files = self._size = 0
        self._where = ""

    @classmethod
    def stored(cls, data: bytes, files: int, size: int, where: str) -> Listing:
        """A listing's stored bytes (verified), with the totals its folder's entry gives."""
        listing = cls.__new__(cls)
        listing._data, listing._tree = data, None
        listing._files, listing._size, listing._where = files, size, where
        return listing

    @property
    def entries(self) -> dict[str, Entry]:
        """Every row, decoded (from then on the listing is edited as entries)."""
        if self._tree is None:
            self._decode()
        assert self._tree is not None
        return self._tree.entries

    def get(self, name: str) -> Entry | None:
        found = self._find(name)
        return found[2] if found is not None else self.entries.get(name)

    def set(self, name: str, entry: Entry) -> None:
        found = self._find(name)
        if found is not None and self._data is not None:
            orjson = _orjson()
            start, end, old = found
            try:
                row = orjson.dumps((name, *entry)) if orjson is not None else _dumps((name, *entry))
            except (ValueError, TypeError):  # (a size past 2**64: Tree.encode's json module;
                pass  # orjson's JSONEncodeError is a TypeError, a surrogate a ValueError)
            else:
                self._data = self._data[:start] + row + self._data[end:]
                self._count(entry, +1)
                self._count(old, -1)
                return
        self.entries[name] = entry

    def pop(self, name: str) -> Entry | None:
        found = self._find(name)
        if found is None:
            return self.entries.pop(name, None)
        start, end, old = found
        data = self._data
        assert data is not None
        # The row goes with one comma: the one before it, or after it when it is the first.
        if data[start - 1 : start] == b",":
            start -= 1
        elif data[end : end + 1] == b",":
            end += 1
        self._data = data[:start] + data[end:]
        self._count(old, -1)
        return old

    def __bool__(self) -> bool:
        return self._data != b"[]" if self._data is not None else bool(self.entries)

    def totals(self) -> tuple[int, int]:
        if self._data is not None:
            return self._files, self._size
        return Tree(self.entries).totals()

    def encode(self) -> bytes:
        return self._data if self._data is not None else Tree(self.entries).encode()

    def decoded(self) -> Tree | None:
        """The entries, when they were decoded anyway (a cache of listings keeps them)."""
        return self._tree

    def _decode(self) -> None:
        assert self._data is not None
        self._tree, self._data = decode_tree(self._data, self._where, validate=False), None

    def _count(self, entry: Entry, sign: int) -> None:
        self._files += sign * entry.files
        self._size += sign * entry.size

    def _find(self, name: str) -> tuple[int, int, Entry] | None:
        """Where the row of `name` starts and ends in the bytes, and its entry; None when the
        caller is to ask the entries: the listing was decoded, or is now, because its bytes
        hold no such row (a new name needs its sorted place; and a miss is never trusted to
        bytes alone) or are not as expected."""
        data = self._data
        if data is None:
            return None
        orjson = _orjson()
        try:
            key = b"[" + (orjson.dumps(name) if orjson is not None else _dumps(name)) + b',"'
        except (ValueError, TypeError):  # (a name only the json module writes: Tree.encode)
            self._decode()
            return None
        start = data.find(key)
        if start < 0:
            self._decode()
            return None
        end = data.find(b"]", start + len(key)) + 1
        try:
            row = (orjson or json).loads(data[start:end])
            if type(row) is not list or len(row) != 6 or row[0] != name or row[1] not in _KINDS:
                raise ValueError(name)
            entry = Entry(*row[1:])
        except (ValueError, TypeError):
            self._decode()
            return None
        return start, end, entry


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


_FILES, _SIZE = operator.attrgetter("files"), operator.attrgetter("size")
_AS_ENTRY = cast(Any, tuple.__new__)  # (Entry, fields) -> an Entry, without a Python call
_COLUMN_TYPES = (str, int, str, int, int)  # kind, mode, hash, size, files


def decode_tree(data: bytes, where: str, *, validate: bool = True) -> Tree:
    """A stored listing. `validate` checks every name and field: always before anything is
    written from it (rollback, manifest); capture, which only re-encodes listings, skips it.

    Rows are checked a column at a time and become entries without a Python call per row
    (about as fast as the per-row code was for the dataclass entries, which compared slowly)."""
    try:
        rows = _rows(data)
        names, *columns = zip(*rows, strict=True) if rows else ((),) * 6
        if validate:
            _validate(names, columns, where)
        entries = map(_AS_ENTRY, itertools.repeat(Entry), zip(*columns, strict=True))
        return Tree(dict(zip(names, entries, strict=True)))
    except (ValueError, TypeError) as exc:
        raise _corrupt(where, exc) from None


Row = tuple[str, str, int, str, int, int]  # (name, kind, mode, hash, size, files)


def listing_rows(data: bytes, where: str) -> frozenset[Row]:
    """A stored listing's rows as a set, each checked as `decode_tree` checks them, with no
    entry made: two listings' differences are then one set operation, and only the rows that
    differ become entries (`row_entry`). A rollback compares two listings of about a hundred
    rows for each changed folder, and making every row an entry cost three times the parse."""
    try:
        rows = _rows(data)
        names, *columns = zip(*rows, strict=True) if rows else ((),) * 6
        _validate(names, columns, where)
        if len(set(names)) != len(names):
            # (A listing engram wrote names each file once.) The last row of a name counts,
            # as in decode_tree.
            return tree_rows(decode_tree(data, where))
        return frozenset(map(tuple, rows))  # (each row checked above)
    except (ValueError, TypeError) as exc:
        raise _corrupt(where, exc) from None


def tree_rows(tree: Tree) -> frozenset[Row]:
    """A decoded listing's rows, as `listing_rows` gives a stored one's."""
    joined = map(tuple.__add__, zip(tree.entries), tree.entries.values())
    return cast(frozenset[Row], frozenset(joined))


def row_entry(row: Row) -> Entry:
    return _AS_ENTRY(Entry, row[1:])  # type: ignore[no-any-return]


def _rows(data: bytes) -> list[Any]:
    """A listing's rows as parsed, each a list of six values (ValueError otherwise)."""
    orjson = _orjson()
    try:
        if orjson is None:
            raise ValueError("read by the json module")
        rows = orjson.loads(data)
    except ValueError:  # what orjson refuses (NaN, bytes of a name that is not UTF-8:
        # Tree.encode) is judged by json
        rows = json.loads(data.decode("utf-8", "surrogateescape"))
    if type(rows) is not list or not set(map(type, rows)) <= {list}:
        raise ValueError("a listing is a list of rows")
    if not set(map(len, rows)) <= {6}:
        raise ValueError("a row is [name, kind, mode, hash, size, files]")
    return rows


def _validate(names: tuple[Any, ...], columns: list[tuple[Any, ...]], where: str) -> None:
    # The names all at once (a listing of safe names is the rule), one by one for the message.
    try:
        joined = "\0".join(names)
    except TypeError:
        joined = "/"
    if (
        "/" in joined
        or joined.count("\0") != max(len(names) - 1, 0)
        or (_BACKSLASH_SEPARATES and "\\" in joined)
        or not _NEVER_NAMES.isdisjoint(names)
    ):
        for name in names:
            if not valid_name(name):
                raise CorruptCheckpointError(
                    f"the checkpoint names an unsafe path {where}{name!r}",
                    hint="it was refused; nothing was written",
                )
    for column, expected in zip(columns, _COLUMN_TYPES, strict=True):
        if not set(map(type, column)) <= {expected}:
            name = next(
                n for n, value in zip(names, column, strict=True) if type(value) is not expected
            )
            raise ValueError(f"bad entry {name!r}")
    if not set(columns[0]) <= _KINDS:
        name = next(n for n, kind in zip(names, columns[0], strict=True) if kind not in _KINDS)
        raise ValueError(f"bad entry {name!r}")


def _corrupt(where: str, exc: Exception) -> CorruptCheckpointError:
    return CorruptCheckpointError(
        f"the checkpoint's manifest is corrupt at {where or '/'}: {exc}",
        hint="it was refused; nothing was written",
    )
