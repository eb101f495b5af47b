"""FastTextDocument gives exactly pygls' text for every edit, at O(edit) cost."""

from __future__ import annotations

import copy
import random
import time
from typing import Any

import pytest
from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_server.features.fast_documents import FastTextDocument

ALPHABET = ["a", "b", " ", "\n", "\r\n", "\r", "😋", "é", "\t", "\u2028", "xyz\n"]


def random_text(rng: random.Random, size: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(size))


def random_change(rng: random.Random, lines: int) -> types.TextDocumentContentChangePartial:
    start_line = rng.randint(0, lines + 1)
    end_line = rng.choice(
        [
            start_line,
            start_line,
            start_line + 1,
            start_line + rng.randint(0, 4),
            max(0, start_line - 1),
        ]
    )
    return types.TextDocumentContentChangePartial(
        range=types.Range(
            start=types.Position(line=start_line, character=rng.randint(0, 6)),
            end=types.Position(line=end_line, character=rng.randint(0, 6)),
        ),
        text=random_text(rng, rng.choice([0, 1, 2, 5, 12])),
    )


@pytest.mark.parametrize("seed", range(40))
def test_random_edits_give_the_same_text_as_pygls(seed: int) -> None:
    rng = random.Random(seed)
    initial = random_text(rng, 300) if seed % 5 else ""
    reference = TextDocument("file:///ref.txt", initial)
    fast = FastTextDocument("file:///fast.txt", initial)
    for step in range(400):
        change = random_change(rng, len(reference.lines))
        # pygls clamps the range of the change it applies in place: each document its own.
        fast.apply_change(copy.deepcopy(change))
        reference.apply_change(change)
        if step % 7 == 0:  # reading in between must not disturb the next edit
            assert fast.lines == reference.lines
        assert fast.source == reference.source, (seed, step, change)
    assert fast.lines == reference.lines


def test_full_changes_and_reads_between_edits() -> None:
    fast = FastTextDocument("file:///x.py", "one\ntwo\n")
    fast.apply_change(types.TextDocumentContentChangeWholeDocument(text="alpha\nbeta\ngamma\n"))
    assert fast.lines == ("alpha\n", "beta\n", "gamma\n")
    fast.apply_change(
        types.TextDocumentContentChangePartial(
            range=types.Range(
                start=types.Position(line=1, character=0), end=types.Position(line=2, character=0)
            ),
            text="",
        )
    )
    assert fast.source == "alpha\ngamma\n"
    assert fast.word_at_position(types.Position(line=1, character=2)) == "gamma"


def test_an_edit_to_a_big_document_does_not_cost_the_whole_document() -> None:
    text = "".join(f"line {n} of a big file\n" for n in range(50_000))
    fast, reference = FastTextDocument("file:///big.py", text), TextDocument("file:///big.py", text)
    change = types.TextDocumentContentChangePartial(
        range=types.Range(
            start=types.Position(line=25_000, character=0),
            end=types.Position(line=25_000, character=0),
        ),
        text="x",
    )
    fast.apply_change(change)  # the first edit splits the text once

    def per_edit(document: TextDocument) -> float:
        start = time.perf_counter()
        for _ in range(50):
            document.apply_change(change)
        return (time.perf_counter() - start) / 50

    assert per_edit(fast) * 20 < per_edit(reference)


# Plain ASCII text takes the shortcut past pygls' position codec (every unit a character):
# columns past the end of a line, empty lines, CR LF ends and edits past the last line.
ASCII_ALPHABET = ["a", "b", " ", "\n", "\r\n", "\r", "\t", "xyz\n", "\n\n"]


@pytest.mark.parametrize("seed", range(30))
def test_random_edits_of_ascii_text_give_the_same_text_as_pygls(seed: int) -> None:
    rng = random.Random(1000 + seed)
    initial = "".join(rng.choice(ASCII_ALPHABET) for _ in range(120)) if seed % 6 else ""
    reference = TextDocument("file:///ref.txt", initial)
    fast = FastTextDocument("file:///fast.txt", initial)
    for step in range(150):
        lines = len(reference.lines)
        start_line = rng.randint(0, lines + 1)
        end_line = rng.choice([start_line, start_line + 1, max(0, start_line - 1)])
        change = types.TextDocumentContentChangePartial(
            range=types.Range(
                start=types.Position(line=start_line, character=rng.randint(0, 9)),
                end=types.Position(line=end_line, character=rng.randint(0, 9)),
            ),
            text="".join(rng.choice(ASCII_ALPHABET) for _ in range(rng.choice([0, 1, 3]))),
        )
        fast.apply_change(copy.deepcopy(change))
        reference.apply_change(change)
        assert fast.source == reference.source, (seed, step, change)
    assert fast.lines == reference.lines


def _edit(line: int, character: int, end_line: int, end_character: int, text: str) -> Any:
    return types.TextDocumentContentChangePartial(
        range=types.Range(
            start=types.Position(line=line, character=character),
            end=types.Position(line=end_line, character=end_character),
        ),
        text=text,
    )


@pytest.mark.parametrize(
    ("initial", "edit"),
    [
        ("abc\ndef\n", _edit(0, 3, 0, 3, "X")),  # at the end of a line
        ("abc\ndef\n", _edit(0, 4, 0, 4, "X")),  # one past it
        ("abc\ndef\n", _edit(0, 9, 0, 9, "X")),  # far past it
        ("abc\r\ndef\n", _edit(0, 3, 0, 4, "X")),  # into a CR LF
        ("abc\r\ndef\n", _edit(0, 5, 1, 0, "X")),
        ("\n\nabc", _edit(1, 0, 1, 3, "X")),  # an empty line
        ("\n\nabc", _edit(1, 2, 2, 1, "")),
        ("abc\ndef", _edit(2, 0, 2, 0, "X")),  # the line after the last
        ("abc\ndef", _edit(5, 2, 6, 0, "X")),  # far after it
        ("abc\ndéf", _edit(5, 2, 6, 0, "X")),  # ... when the last line is not ASCII
        ("abc\ndéf", _edit(1, 2, 1, 3, "X")),
        ("", _edit(0, 0, 0, 0, "X")),
        ("", _edit(3, 3, 3, 3, "X")),
        ("abc\ndef\n", _edit(1, 1, 0, 1, "X")),  # an inverted range
        ("a\r", _edit(0, 2, 1, 0, "\n")),  # CR then LF across the seam
    ],
)
def test_edges_of_lines_and_documents_are_edited_as_pygls_edits_them(
    initial: str, edit: Any
) -> None:
    reference = TextDocument("file:///ref.txt", initial)
    fast = FastTextDocument("file:///fast.txt", initial)
    fast.lines  # noqa: B018 - split first, as a server that read the document would have
    fast.apply_change(copy.deepcopy(edit))  # pygls clamps the range it applies in place
    reference.apply_change(copy.deepcopy(edit))
    assert (fast.source, fast.lines) == (reference.source, reference.lines)


def test_a_document_not_opened_with_text_reads_the_file(tmp_path: Any) -> None:
    path = tmp_path / "on_disk.py"
    path.write_text("from disk\n", encoding="utf-8")
    fast = FastTextDocument(path.as_uri())
    assert fast.source == "from disk\n" and fast.lines == ("from disk\n",)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_the_server_opens_fast_documents_in_the_negotiated_encoding(encoding: str) -> None:
    from pygls.workspace import PositionCodec, Workspace

    from lsp_server.setup import create_server

    server = create_server()
    server.protocol._workspace = Workspace(
        None, types.TextDocumentSyncKind.Incremental, [], types.PositionEncodingKind(encoding)
    )
    for listener in server.initialize_listeners:
        if listener.__module__.endswith("fast_documents"):
            listener(server, types.InitializeParams(capabilities=types.ClientCapabilities()))
    uri = "file:///w/a.py"
    server.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="python", version=4, text='s = "😀x"\n')
    )
    document = server.workspace.get_text_document(uri)
    assert isinstance(document, FastTextDocument)
    assert (document.version, document.language_id) == (4, "python")
    # The x after the emoji: column 6 in UTF-32, 7 in UTF-16, 9 in UTF-8.
    column = {"utf-32": 6, "utf-16": 7, "utf-8": 9}[encoding]
    server.workspace.update_text_document(
        types.VersionedTextDocumentIdentifier(uri=uri, version=5),
        _edit(0, column, 0, column + 1, "y"),
    )
    assert document.source == 's = "😀y"\n' and document.version == 5
    assert isinstance(document._position_codec, PositionCodec)


def test_a_workspace_it_cannot_change_keeps_pygls_documents(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from lsp_server.setup import create_server

    server = create_server()  # no workspace yet: installing fails, the server goes on
    for listener in server.initialize_listeners:
        if listener.__module__.endswith("fast_documents"):
            listener(server, types.InitializeParams(capabilities=types.ClientCapabilities()))
    [logged] = [r for r in caplog.records if r.name == "engram.lsp"]
    assert logged.getMessage() == "fast documents not installed; using pygls' TextDocument"
    assert logged.exc_info is not None  # with the traceback, to see what pygls changed
