"""Corpus F is well formed: a held-out corpus is only worth its figure if every line says what it
is, where it comes from and under which license, and if its secrets are really in its texts.

The detector's figures on it are NOT asserted here: the corpus is held out, measured by
`scripts/measure_redaction.py --corpus-f` and reported in docs/secrets.md.
"""

from __future__ import annotations

import json
from collections import Counter

from tests.core.public_secret_corpus import (
    PATH_F,
    check_lines_say_what_they_are,
    check_secrets_are_in_their_texts,
    check_split_follows_the_rule,
    load,
)

ROWS = [json.loads(line) for line in PATH_F.read_text(encoding="utf-8").splitlines()]
CASES = load(PATH_F)
PUBLIC_SOURCES = ("securego/gosec@", "PyCQA/bandit@", "github/codeql@")


def test_every_line_says_what_it_is_where_it_comes_from_and_its_license() -> None:
    check_lines_say_what_they_are(ROWS, PUBLIC_SOURCES)


def test_each_secret_is_in_its_text_and_ordinary_strings_hold_none() -> None:
    check_secrets_are_in_their_texts(CASES)


def test_the_corpus_is_large_and_varied_enough_to_say_something() -> None:
    types = Counter(c.type for c in CASES)
    assert types["secret"] >= 400 and types["ordinary"] >= 300, types
    secret_kinds = {c.kind for c in CASES if c.type == "secret"}
    assert len(secret_kinds) >= 250
    prefixes = Counter(k.split("-")[0] for k in secret_kinds)
    for family in (
        "gosec",
        "bandit",
        "codeql",
        "token",
        "cmd",
        "cfg",
        "out",
        "code",
        "prompt",
        "key",
    ):
        assert prefixes[family] >= 1, family
    assert prefixes["code"] >= 10  # code in more than ten languages
    assert prefixes["prompt"] >= 10  # prompts in more than ten languages
    # every token format is shown in two different contexts
    contexts = Counter(c.kind for c in CASES if c.kind.startswith("token-"))
    assert set(contexts.values()) == {2}
    ordinary = Counter(c.kind.split("-")[0] for c in CASES if c.type == "ordinary")
    assert ordinary["real"] >= 200 and ordinary["placeholder"] >= 30, ordinary
    # the public sources' unflagged or dummy examples are reported apart, not dropped
    assert Counter(c.kind.split("-")[0] for c in CASES if c.type == "negative")["gosec"] >= 5


def test_no_case_is_counted_twice() -> None:
    seen = Counter((c.type, c.text) for c in CASES)
    assert [key for key, n in seen.items() if n > 1] == []


def test_a_third_of_each_family_is_held_out_by_the_fixed_rule() -> None:
    check_split_follows_the_rule(ROWS)
