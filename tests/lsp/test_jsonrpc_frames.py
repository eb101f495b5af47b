"""engram's JSON-RPC framing and didChange merging, below the server (fast, exact)."""

from __future__ import annotations

import json
from typing import Any

from lsp_server.jsonrpc import FrameParser, _loads_burst, coalesce_did_change


def _frame(message: Any) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_frames_split_anywhere_are_reassembled() -> None:
    messages = [
        {"jsonrpc": "2.0", "id": n, "method": "m", "params": {"n": "é" * n}} for n in range(20)
    ]
    stream = b"".join(_frame(m) for m in messages)
    parser = FrameParser()
    bodies = []
    for offset in range(0, len(stream), 7):  # 7-byte pieces cut headers and bodies anywhere
        parser.feed(stream[offset : offset + 7])
        bodies += [f.body for f in parser.frames()]
    assert [json.loads(b or b"") for b in bodies] == messages


def test_an_absurd_length_is_refused_unread_and_reading_resumes() -> None:
    parser = FrameParser(max_frame=1_000)
    lying = b'Content-Length: 1000000000000\r\n\r\n{"jsonrpc": "2.0", "id": 41, "method": "x"}'
    parser.feed(lying + b"y" * 50_000 + _frame({"jsonrpc": "2.0", "id": 42, "method": "ok"}))
    frames = parser.frames()
    assert frames[0].oversize == 1_000_000_000_000 and frames[0].id_hint == 41
    assert json.loads(frames[1].body or b"")["id"] == 42
    # Skipped bytes are dropped as they come, never kept: the buffer stays small.
    parser.feed(b"Content-Length: 5000\r\n\r\n" + b"z" * 200_000)
    assert parser.frames()[0].oversize == 5000
    assert len(parser.buffer) < 100


def test_junk_and_bad_lengths_between_frames_are_skipped() -> None:
    parser = FrameParser()
    parser.feed(
        b"garbage\r\nContent-Length: abc\r\n\r\n"
        + b"\r\n"
        + b"x" * 10_000  # a line too long to be a header
        + _frame({"jsonrpc": "2.0", "id": 7, "method": "ok"})
    )
    frames = [f for f in parser.frames() if f.body is not None]
    assert [json.loads(f.body or b"")["id"] for f in frames] == [7]


def _edit(uri: str, version: int, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}],
        },
    }


def test_did_change_runs_merge_per_document_and_keep_order() -> None:
    hover = {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {}}
    messages = [
        _edit("a", 2, "1"),
        _edit("a", 3, "2"),
        _edit("b", 2, "x"),
        _edit("a", 4, "3"),
        hover,
        _edit("a", 5, "4"),
    ]
    merged = coalesce_did_change(messages)
    assert [m.get("method") for m in merged] == [
        "textDocument/didChange",
        "textDocument/didChange",
        "textDocument/didChange",
        "textDocument/hover",
        "textDocument/didChange",
    ]
    first = merged[0]["params"]
    assert [c["text"] for c in first["contentChanges"]] == ["1", "2"]
    assert first["textDocument"]["version"] == 3
    # The originals are not changed (a merged copy is made).
    assert messages[0]["params"]["contentChanges"] == [{"text": "1"}]
    assert merged[0] is not messages[0] and messages[1] is not merged[0]


def test_a_burst_orjson_refuses_is_still_read_as_json_reads_it() -> None:
    """orjson reads bursts; what it refuses and Python's json accepts is read by json, so a
    burst means what its messages would mean one by one."""
    burst = b'[{"a": NaN}, {"b": 123456789012345678901234567890}, {"c": "\\ud800"}]'
    assert repr(_loads_burst(burst)) == repr(json.loads(burst))
    assert _loads_burst(b'[{"a": 1}, {"b": ]') is None


def _plain_did_change(changes: list[Any], document: Any = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {
            "textDocument": document or {"uri": "file:///w/a.py", "version": 7},
            "contentChanges": changes,
        },
    }


def _plain_edit(line: Any = 3, character: Any = 0, text: Any = "x", **extra: Any) -> dict[str, Any]:
    start = {"line": line, "character": character}
    return {"range": {"start": start, "end": {"line": 4, "character": 2}}, "text": text, **extra}


def test_a_burst_of_plain_edits_is_structured_as_cattrs_structures_it() -> None:
    """Plain edits skip cattrs (a third of a burst's cost) and come out as the same objects,
    with the `rangeLength` Neovim, eglot and VS Code send (and without it)."""
    import random

    from lsprotocol import types
    from pygls.protocol import default_converter

    from lsp_server.jsonrpc import _did_change_message

    converter = default_converter()
    rng = random.Random(3)
    changes = [
        _plain_edit(
            rng.randrange(2**31),
            rng.randrange(100),
            rng.choice(["", "x", "é\n😀", '"\\', "  indented\n"]),
            **({"rangeLength": rng.randrange(50)} if rng.random() < 0.7 else {}),
        )
        for _ in range(300)
    ]
    message = _plain_did_change(changes)
    fast = _did_change_message(converter, message)
    assert fast is not None
    assert fast == converter.structure(message, types.DidChangeTextDocumentNotification)
    assert fast.params.content_changes[0].range.start.line == changes[0]["range"]["start"]["line"]
    lengths = [change.range_length for change in fast.params.content_changes]
    assert lengths == [change.get("rangeLength") for change in changes]


def test_edits_cattrs_would_judge_otherwise_are_left_to_cattrs() -> None:
    """Anything but plain edits with LSP-range numbers goes to cattrs, which keeps its errors
    (a negative line) and its readings (a whole-document change)."""
    from pygls.protocol import default_converter

    from lsp_server.jsonrpc import _did_change_message

    converter = default_converter()
    assert _did_change_message(converter, _plain_did_change([_plain_edit()])) is not None
    for odd in (
        _plain_edit(line=-1),
        _plain_edit(line=2**31),
        _plain_edit(line=True),
        _plain_edit(line=1.0),
        _plain_edit(character="0"),
        _plain_edit(text=None),
        _plain_edit(rangeLength=-1),
        _plain_edit(rangeLength=True),
        _plain_edit(rangeLength="1"),
        _plain_edit(rangeOffset=1),
        {"text": "the whole document"},
        {"range": None, "text": "x"},
        "not an edit",
    ):
        assert _did_change_message(converter, _plain_did_change([_plain_edit(), odd])) is None, odd
    request = {**_plain_did_change([_plain_edit()]), "id": 1}
    assert _did_change_message(converter, request) is None
