"""watchman's binary protocol as engram speaks it: names in any bytes, watchman's templates,
and answers cut short refused rather than misread. (The real watchman is asked in
test_checkpoint_hostile_fs.py.)"""

from __future__ import annotations

import struct

import pytest

from memory_core import bser


def test_a_request_and_its_answer_keep_every_value_and_names_in_any_bytes() -> None:
    value = {
        "files": ["caf\udce9.txt", "ok.txt"],
        "clock": "c:1:2",
        "n": [0, -1, 200, -40000, 2**40],
        "flags": [True, False, None],
        "ratio": 0.5,
    }
    data = bser.dumps(value)
    assert bser.pdu_length(data) == len(data)
    assert bser.loads(data) == value
    assert b"caf\xe9.txt" in data  # the name's own bytes on the wire


def test_a_template_answer_is_read_as_rows_with_skipped_fields_left_out() -> None:
    keys = bser.dumps(["name", "exists"])[3 + 1 :]  # the array without the PDU header
    body = b"\x0b" + keys + b"\x03\x02" + b"\x02\x03\x01a" + b"\x08" + b"\x02\x03\x01b" + b"\x0c"
    data = bser.HEADER + b"\x03" + struct.pack("=b", len(body)) + body
    assert bser.loads(data) == [{"name": "a", "exists": True}, {"name": "b"}]


def test_an_answer_cut_short_is_refused() -> None:
    data = bser.dumps({"files": ["a.txt"]})
    assert bser.pdu_length(data[:2]) is None
    with pytest.raises(bser.BserError):
        bser.loads(data[:-1])
    with pytest.raises(bser.BserError):
        bser.loads(b"{}\n")
