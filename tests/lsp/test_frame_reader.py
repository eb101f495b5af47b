"""The `Content-Length` frame reader (lsp_server/frames.py) on the streams clients really send and
the broken ones they sometimes do, each fed whole and one byte at a time: which messages come
out, and what the log says about the bytes dropped."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from lsp_server.frames import MAX_HEADER_BYTES, Frame, FrameParser


def _frame(message: Any, newline: bytes = b"\r\n") -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d" % len(body) + newline + newline + body


REQUEST = {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover"}
NOTE = {"jsonrpc": "2.0", "method": "initialized", "params": {}}


def _read(stream: bytes, pieces: bool, max_frame: int = 1_000_000) -> list[Frame]:
    parser = FrameParser(max_frame=max_frame)
    if not pieces:
        parser.feed(stream)
        return parser.frames()
    found: list[Frame] = []
    for byte in range(len(stream)):
        parser.feed(stream[byte : byte + 1])
        found += parser.frames()
    return found


def _bodies(frames: list[Frame]) -> list[Any]:
    return [json.loads(f.body) if f.body is not None else ("refused", f.oversize) for f in frames]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.fixture(params=[False, True], ids=["whole", "byte-by-byte"])
def pieces(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def test_a_frame_cut_short_never_swallows_the_request_after_it(
    pieces: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # The first frame declares 30 bytes and sends 2: read as declared, it would take the next
    # frame's header, and the request after it would never be answered.
    stream = b"Content-Length: 30\r\n\r\n{}" + _frame(REQUEST) + _frame(NOTE)
    frames = _read(stream, pieces)
    assert [f.body for f in frames][:1] == [b"{}"]
    assert _bodies(frames[1:]) == [REQUEST, NOTE]
    assert _warnings(caplog) == ["a message ran into the next message's header; cut there"]


def test_a_frame_cut_short_inside_the_next_header_still_leaves_the_request_whole() -> None:
    # 5 bytes declared, 2 sent: the body would end inside the next header ("{}Con").
    stream = b"Content-Length: 5\r\n\r\n{}" + _frame(REQUEST)
    frames = _read(stream, pieces=False)
    assert frames[0].body == b"{}"
    assert _bodies(frames[1:]) == [REQUEST]


def test_a_body_that_ends_exactly_before_the_next_header_is_whole(
    pieces: bool, caplog: pytest.LogCaptureFixture
) -> None:
    stream = _frame(REQUEST) + _frame(NOTE) + _frame(REQUEST)
    assert _bodies(_read(stream, pieces)) == [REQUEST, NOTE, REQUEST]
    assert _warnings(caplog) == []


def test_line_feeds_alone_and_blank_lines_between_frames_are_read(pieces: bool) -> None:
    stream = _frame(REQUEST, newline=b"\n") + b"\r\n\n" + _frame(NOTE) + b"\n" + _frame(REQUEST)
    assert _bodies(_read(stream, pieces)) == [REQUEST, NOTE, REQUEST]


def test_every_frame_ready_comes_out_of_one_read() -> None:
    parser = FrameParser()
    parser.feed(_frame(REQUEST) + b"\r\n" + _frame(NOTE) + b"Content-Type: x\r\n" + _frame(NOTE))
    assert _bodies(parser.frames()) == [REQUEST, NOTE, NOTE]
    assert parser.buffer == bytearray()


def test_junk_before_a_header_on_its_line_is_dropped_and_logged(
    pieces: bool, caplog: pytest.LogCaptureFixture
) -> None:
    stream = b"xyz" + _frame(REQUEST)
    assert _bodies(_read(stream, pieces)) == [REQUEST]
    assert _warnings(caplog) == ["dropped 3 bytes before a header"]


def test_a_bad_length_is_logged_and_its_body_not_read_as_a_frame(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stream = b"Content-Length: twelve\r\n\r\n{}\r\n" + _frame(REQUEST)
    assert _bodies(_read(stream, pieces=False)) == [REQUEST]
    assert _warnings(caplog) == ["ignored a Content-Length header of b'twelve'"]


def test_a_line_of_8_kib_is_kept_waiting_and_one_byte_more_is_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parser = FrameParser()
    parser.feed(b"x" * MAX_HEADER_BYTES)
    assert parser.frames() == []
    assert len(parser.buffer) == MAX_HEADER_BYTES  # a header line may still be this long
    assert _warnings(caplog) == []
    parser.feed(b"x")
    assert parser.frames() == []
    # What is kept is the tail a header split across two reads could start in.
    assert len(parser.buffer) == len(b"content-length:")
    assert _warnings(caplog) == [
        f"dropped {MAX_HEADER_BYTES + 1} bytes that are no JSON-RPC header"
    ]
    parser.feed(_frame(REQUEST))
    assert _bodies(parser.frames()) == [REQUEST]


def test_a_header_split_across_the_drop_of_a_long_line_is_still_found() -> None:
    parser = FrameParser()
    parser.feed(b"x" * (MAX_HEADER_BYTES + 100) + b"Content-Len")
    assert parser.frames() == []
    parser.feed(_frame(REQUEST)[len(b"Content-Len") :])
    assert _bodies(parser.frames()) == [REQUEST]


def test_a_long_line_then_a_header_drops_only_the_line(caplog: pytest.LogCaptureFixture) -> None:
    stream = b"x" * (MAX_HEADER_BYTES + 5) + _frame(REQUEST)
    assert _bodies(_read(stream, pieces=False)) == [REQUEST]
    assert _warnings(caplog) == [f"dropped {MAX_HEADER_BYTES + 5} bytes before a header"]


def test_a_header_line_longer_than_8_kib_is_dropped_and_reading_goes_on() -> None:
    parser = FrameParser()
    parser.feed(b"Content-Length: " + b"9" * (MAX_HEADER_BYTES + 10))
    assert parser.frames() == []
    parser.feed(b"\r\n\r\n" + _frame(REQUEST))
    assert _bodies(parser.frames()) == [REQUEST]


def test_a_huge_length_is_refused_and_the_next_frame_read_however_it_arrives(
    pieces: bool, caplog: pytest.LogCaptureFixture
) -> None:
    refused = b"Content-Length: 5000\r\n\r\n" + b'{"id": 41, "pad": "' + b"z" * 200
    stream = refused + _frame(REQUEST)
    frames = _read(stream, pieces, max_frame=1_000)
    assert frames[0].oversize == 5000 and frames[0].body is None
    assert _bodies(frames[1:]) == [REQUEST]
    # The refused body is skipped unread: none of it is taken for junk before a header.
    assert _warnings(caplog) == ["refused a message of 5000 bytes (the limit is 1000)"]


def test_a_refused_frame_without_body_is_followed_by_the_next(pieces: bool) -> None:
    # The refused frame's header ends the read: the next header starts the buffer.
    parser = FrameParser(max_frame=1_000)
    parser.feed(b"Content-Length: 5000\r\n\r\n")
    [refused] = parser.frames()
    assert (refused.oversize, refused.id_hint) == (5000, None)
    for piece in [_frame(REQUEST)] if not pieces else [bytes([b]) for b in _frame(REQUEST)]:
        parser.feed(piece)
        if parser.frames():
            break
    else:
        pytest.fail("the frame after a refused one was lost")


def test_a_length_of_thirty_one_digits_is_refused_not_read() -> None:
    frames = _read(b"Content-Length: " + b"1" * 31 + b"\r\n\r\n{}" + _frame(REQUEST), False)
    assert frames[0].oversize == 10**30
    assert _bodies(frames[1:]) == [REQUEST]
    # Thirty digits are still read as the number they are (and refused as too large).
    frames = _read(b"Content-Length: " + b"1" * 30 + b"\r\n\r\n{}" + _frame(REQUEST), False)
    assert frames[0].oversize == int("1" * 30)


def test_a_long_line_ending_in_a_header_not_yet_finished_drops_only_the_junk(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parser = FrameParser()
    parser.feed(b"x" * (MAX_HEADER_BYTES + 7) + b"Content-Length: 2")
    assert parser.frames() == []
    assert _warnings(caplog) == [f"dropped {MAX_HEADER_BYTES + 7} bytes before a header"]
    parser.feed(b"\r\n\r\n{}")
    assert [f.body for f in parser.frames()] == [b"{}"]


def test_a_bad_length_is_shown_in_the_log_cut_to_forty_characters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _read(b"Content-Length: " + b"a" * 50 + b"\r\n\r\n", pieces=False)
    assert _warnings(caplog) == [f"ignored a Content-Length header of b'{'a' * 40}'"]
