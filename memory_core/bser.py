"""watchman's binary protocol (BSER, version 1), for the requests engram makes over its socket.

watchman's JSON protocol cannot carry a file name that is not UTF-8, and it answers such a
query with nothing at all. BSER carries names as their bytes, which are decoded here as
`os.fsdecode` decodes names (UTF-8, other bytes as surrogate escapes), the names the rest of
engram uses. Integers are in the machine's byte order, as watchman writes them.
"""

from __future__ import annotations

import struct
from typing import Any

HEADER = b"\x00\x01"

_ARRAY, _OBJECT, _STRING = 0x00, 0x01, 0x02
_INT8, _INT16, _INT32, _INT64, _REAL = 0x03, 0x04, 0x05, 0x06, 0x07
_TRUE, _FALSE, _NULL, _TEMPLATE, _SKIP, _UTF8 = 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D

_INTS = ((_INT8, "=b"), (_INT16, "=h"), (_INT32, "=i"), (_INT64, "=q"))
_SIZES = {code: struct.calcsize(fmt) for code, fmt in _INTS}
_FORMATS = dict(_INTS)


class BserError(ValueError):
    """Bytes that are not a BSER value (a short read, an unknown type)."""


def _int(value: int) -> bytes:
    for code, fmt in _INTS:
        try:
            return bytes([code]) + struct.pack(fmt, value)
        except struct.error:
            continue
    raise BserError(f"integer out of range: {value}")


def _encode(value: Any, out: list[bytes]) -> None:
    if value is True:
        out.append(bytes([_TRUE]))
    elif value is False:
        out.append(bytes([_FALSE]))
    elif value is None:
        out.append(bytes([_NULL]))
    elif isinstance(value, int):
        out.append(_int(value))
    elif isinstance(value, float):
        out.append(bytes([_REAL]) + struct.pack("=d", value))
    elif isinstance(value, (str, bytes)):
        raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
        out.append(bytes([_STRING]) + _int(len(raw)) + raw)
    elif isinstance(value, (list, tuple)):
        out.append(bytes([_ARRAY]) + _int(len(value)))
        for item in value:
            _encode(item, out)
    elif isinstance(value, dict):
        out.append(bytes([_OBJECT]) + _int(len(value)))
        for key, item in value.items():
            _encode(str(key), out)
            _encode(item, out)
    else:
        raise BserError(f"cannot encode {type(value).__name__}")


def dumps(value: Any) -> bytes:
    """One PDU: the header, the length of the value, the value."""
    out: list[bytes] = []
    _encode(value, out)
    body = b"".join(out)
    return HEADER + _int(len(body)) + body


def pdu_length(head: bytes) -> int | None:
    """The whole PDU's length from its first bytes (None: not enough of them yet)."""
    if len(head) < 3:
        return None
    if head[:2] != HEADER:
        raise BserError("not a BSER version 1 answer")
    size = _SIZES.get(head[2])
    if size is None:
        raise BserError("a BSER length that is no integer")
    if len(head) < 3 + size:
        return None
    (length,) = struct.unpack_from(_FORMATS[head[2]], head, 3)
    return 3 + size + int(length)


def loads(data: bytes) -> Any:
    """The value of one whole PDU."""
    total = pdu_length(data)
    if total is None or len(data) < total:
        raise BserError("a BSER answer cut short")
    value, end = _decode(data, 3 + _SIZES[data[2]])
    if end != total:
        raise BserError("a BSER answer with bytes after its value")
    return value


def _decode(data: bytes, at: int) -> tuple[Any, int]:
    try:
        code = data[at]
    except IndexError:
        raise BserError("a BSER answer cut short") from None
    at += 1
    if code in _FORMATS:
        if at + _SIZES[code] > len(data):
            raise BserError("a BSER answer cut short")
        return struct.unpack_from(_FORMATS[code], data, at)[0], at + _SIZES[code]
    if code in (_STRING, _UTF8):
        length, at = _decode_length(data, at)
        if at + length > len(data):
            raise BserError("a BSER answer cut short")
        return data[at : at + length].decode("utf-8", "surrogateescape"), at + length
    if code == _ARRAY:
        count, at = _decode_length(data, at)
        items = []
        for _ in range(count):
            item, at = _decode(data, at)
            items.append(item)
        return items, at
    if code == _OBJECT:
        count, at = _decode_length(data, at)
        found: dict[str, Any] = {}
        for _ in range(count):
            key, at = _decode(data, at)
            found[str(key)], at = _decode(data, at)
        return found, at
    if code == _TEMPLATE:
        keys, at = _decode(data, at)
        if not isinstance(keys, list):
            raise BserError("a BSER template without its keys")
        count, at = _decode_length(data, at)
        rows = []
        for _ in range(count):
            row: dict[str, Any] = {}
            for key in keys:
                if at < len(data) and data[at] == _SKIP:
                    at += 1
                    continue
                row[str(key)], at = _decode(data, at)
            rows.append(row)
        return rows, at
    if code == _REAL:
        if at + 8 > len(data):
            raise BserError("a BSER answer cut short")
        return struct.unpack_from("=d", data, at)[0], at + 8
    if code in (_TRUE, _FALSE, _NULL):
        return {_TRUE: True, _FALSE: False, _NULL: None}[code], at
    raise BserError(f"unknown BSER type {code:#04x}")


def _decode_length(data: bytes, at: int) -> tuple[int, int]:
    value, at = _decode(data, at)
    if type(value) is not int or value < 0:
        raise BserError("a BSER length that is no count")
    return value, at
