"""Compaction of a growing text (a rolling summary, an old turn) to its newest sentences."""

from __future__ import annotations

import re

COMPACT_TARGET_CHARS = 500

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def compact_text(text: str, limit: int = COMPACT_TARGET_CHARS) -> str:
    """The newest whole sentences of `text` that fit in `limit` characters.

    A rolling summary grows at its end, so the end is the most current part. When not even the
    last sentence fits, it is cut at a word boundary and marked with an ellipsis.
    """
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s]
    kept: list[str] = []
    length = 0
    for sentence in reversed(sentences):
        extra = len(sentence) + (1 if kept else 0)
        if length + extra > limit:
            break
        kept.append(sentence)
        length += extra
    if kept:
        return " ".join(reversed(kept))
    last = sentences[-1] if sentences else text
    cut = last[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"
