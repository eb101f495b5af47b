"""FastTextDocument gives exactly pygls' text for every edit, at O(edit) cost."""

from __future__ import annotations

import random
import time

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
        reference.apply_change(change)
        fast.apply_change(change)
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
