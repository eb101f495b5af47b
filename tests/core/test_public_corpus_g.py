"""Corpus G is well formed: a held-out corpus is only worth its figure if every line says what it
is, where it comes from and under which license, and if its secrets are really in its texts.

The detector's figures on it are NOT asserted here: corpus G is held out whole, measured once by
`scripts/measure_redaction.py --corpus-g` and reported in docs/secrets.md.
"""

from __future__ import annotations

import json
from collections import Counter

from tests.core.public_secret_corpus import (
    PATH_G,
    check_lines_say_what_they_are,
    check_secrets_are_in_their_texts,
    load,
)

ROWS = [json.loads(line) for line in PATH_G.read_text(encoding="utf-8").splitlines()]
CASES = load(PATH_G)
PUBLIC_SOURCES = ("Samsung/CredSweeper@", "bridgecrewio/checkov@", "betterleaks/betterleaks@")


def test_every_line_says_what_it_is_where_it_comes_from_and_its_license() -> None:
    check_lines_say_what_they_are(ROWS, PUBLIC_SOURCES)


def test_each_secret_is_in_its_text_and_ordinary_strings_hold_none() -> None:
    check_secrets_are_in_their_texts(CASES)


def test_the_whole_corpus_is_held_out() -> None:
    # Measured once, never tuned on: no line may be moved to a tuned part.
    assert {c.split for c in CASES} == {"holdout"}


def test_the_corpus_is_large_and_varied_enough_to_say_something() -> None:
    types = Counter(c.type for c in CASES)
    assert types["secret"] >= 400 and types["ordinary"] >= 350, types
    secret_kinds = {c.kind for c in CASES if c.type == "secret"}
    assert len(secret_kinds) >= 250
    prefixes = Counter(k.split("-")[0] for k in secret_kinds)
    families = ("credsweeper", "checkov", "betterleaks", "token", "cmd", "cfg", "out", "code")
    for family in (*families, "prompt"):
        assert prefixes[family] >= 1, family
    assert prefixes["code"] >= 10  # fixtures in more than ten languages
    assert prefixes["prompt"] >= 10  # prompts in more than ten languages
    # every made-here token format is shown in two different contexts
    per_format = Counter(c.kind for c in CASES if c.kind.startswith("token-"))
    assert set(per_format.values()) == {2}
    token_contexts = {row["context"] for row in ROWS if row["kind"].startswith("token-")}
    assert len(token_contexts) >= 20
    ordinary = Counter(c.kind.split("-")[0] for c in CASES if c.type == "ordinary")
    assert ordinary["real"] >= 200 and ordinary["placeholder"] >= 30, ordinary
    # the public sources' dropped candidates and dummies are reported apart, not dropped
    negatives = Counter(c.kind.split("-")[0] for c in CASES if c.type == "negative")
    assert negatives["credsweeper"] >= 50 and negatives["betterleaks"] >= 50, negatives


def test_no_text_is_counted_twice() -> None:
    seen = Counter(c.text for c in CASES)
    assert [text for text, n in seen.items() if n > 1] == []
