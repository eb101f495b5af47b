"""BSER at its edges (issue 31): each integer width on both sides of its limit, an answer fed
in pieces as it arrives from watchman's socket, and every malformed shape refused."""

from __future__ import annotations

import struct

import pytest

from memory_core import bser


@pytest.mark.parametrize(
    ("value", "code", "width"),
    [
        (0, 0x03, 1),
        (127, 0x03, 1),
        (-128, 0x03, 1),
        (128, 0x04, 2),
        (-129, 0x04, 2),
        (32767, 0x04, 2),
        (32768, 0x05, 4),
        (2**31 - 1, 0x05, 4),
        (2**31, 0x06, 8),
        (-(2**31) - 1, 0x06, 8),
        (2**63 - 1, 0x06, 8),
    ],
)
def test_an_integer_takes_the_narrowest_width_that_holds_it(
    value: int, code: int, width: int
) -> None:
    data = bser.dumps(value)
    body = data[3 + 1 :]  # header, then the one-byte length of a short body
    assert body[0] == code and len(body) == 1 + width
    assert bser.loads(data) == value


def test_an_integer_past_64_bits_is_refused() -> None:
    with pytest.raises(bser.BserError, match="out of range"):
        bser.dumps(2**63)


def test_the_bytes_of_a_small_request_are_watchmans() -> None:
    # header, length 2 as an int8, then the value 1 as an int8
    assert bser.dumps(1) == b"\x00\x01\x03\x02\x03\x01"
    assert bser.dumps(["a"]) == b"\x00\x01\x03\x07\x00\x03\x01\x02\x03\x01a"
    assert bser.dumps({"k": None}) == b"\x00\x01\x03\x08\x01\x03\x01\x02\x03\x01k\x0a"
    assert bser.dumps([True, False]) == b"\x00\x01\x03\x05\x00\x03\x02\x08\x09"
    assert bser.dumps(1.5) == b"\x00\x01\x03\x09\x07" + struct.pack("=d", 1.5)


def test_bytes_tuples_and_non_text_keys_are_sent_as_watchman_expects() -> None:
    assert bser.loads(bser.dumps((b"raw\xff", 2))) == ["raw\udcff", 2]
    assert bser.loads(bser.dumps({1: "one"})) == {"1": "one"}


def test_a_value_bser_cannot_carry_is_refused() -> None:
    with pytest.raises(bser.BserError, match="cannot encode set"):
        bser.dumps({1, 2})


def test_an_answer_fed_a_byte_at_a_time_knows_its_length_once_the_length_is_in() -> None:
    data = bser.dumps({"files": ["x" * 300]})  # a body longer than 255: an int16 length
    assert data[2] == 0x04
    for cut in range(0, 5):
        assert bser.pdu_length(data[:cut]) is None
    for cut in range(5, len(data) + 1, 37):
        assert bser.pdu_length(data[:cut]) == len(data)
    with pytest.raises(bser.BserError, match="cut short"):
        bser.loads(data[:-1])
    assert bser.loads(data) == {"files": ["x" * 300]}


def test_a_long_body_has_a_wider_length() -> None:
    data = bser.dumps("y" * 40000)
    assert data[2] == 0x05 and bser.pdu_length(data[:7]) == len(data)


def test_an_answer_that_is_not_bser_is_refused_as_soon_as_its_header_is_in() -> None:
    with pytest.raises(bser.BserError, match="not a BSER version 1"):
        bser.pdu_length(b'{"version"')
    with pytest.raises(bser.BserError, match=r"^a BSER length that is no integer$"):
        bser.pdu_length(b"\x00\x01\x02")


def test_bytes_after_the_value_are_refused() -> None:
    with pytest.raises(bser.BserError, match="bytes after"):
        bser.loads(b"\x00\x01\x03\x03\x03\x01\x0a")


@pytest.mark.parametrize(
    "body",
    [
        b"\x05\x01\x00",  # an int32 with two of its four bytes
        b"\x02\x03\x05ab",  # a string of 5 with 2 bytes
        b"\x07\x00\x00\x00",  # a real with 3 of its 8 bytes
        b"\x00\x03\x02\x03\x01",  # an array of 2 with one item
        b"\x00",  # an array without its count
    ],
)
def test_a_value_cut_short_inside_is_refused(body: bytes) -> None:
    data = bser.HEADER + b"\x03" + bytes([len(body)]) + body
    with pytest.raises(bser.BserError, match="cut short"):
        bser.loads(data)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\x0e", "unknown BSER type 0x0e"),
        (b"\x00\x03\xff", "no count"),  # an array of -1 items
        (b"\x00\x02\x03\x01a", "no count"),  # an array counted by a string
        (b"\x00\x08", "no count"),  # an array counted by `true`
        (b"\x0b\x03\x01\x03\x00", "template without its keys"),
    ],
)
def test_a_malformed_value_is_refused_with_what_is_wrong(body: bytes, message: str) -> None:
    data = bser.HEADER + b"\x03" + bytes([len(body)]) + body
    with pytest.raises(bser.BserError, match=message):
        bser.loads(data)


def test_watchmans_utf8_strings_and_an_empty_array_and_object() -> None:
    body = b"\x00\x03\x03" + b"\x0d\x03\x02\xc3\xa9" + b"\x00\x03\x00" + b"\x01\x03\x00"
    data = bser.HEADER + b"\x03" + bytes([len(body)]) + body
    assert bser.loads(data) == ["é", [], {}]


def test_a_template_row_whose_last_field_is_cut_short_is_refused() -> None:
    keys = b"\x00\x03\x02" + b"\x02\x03\x01a" + b"\x02\x03\x01b"
    body = b"\x0b" + keys + b"\x03\x01" + b"\x03\x07"  # one row: a = 7, then b is missing
    data = bser.HEADER + b"\x03" + bytes([len(body)]) + body
    with pytest.raises(bser.BserError, match="cut short"):
        bser.loads(data)
    whole = body + b"\x0c"
    data = bser.HEADER + b"\x03" + bytes([len(whole)]) + whole
    assert bser.loads(data) == [{"a": 7}]
