"""Corpus E is well formed: a held-out corpus is only worth its figure if every line says what it
is, where it comes from and under which license, and if its secrets are really in its texts.

The detector's figures on it are NOT asserted here: the corpus is held out, measured by
`scripts/measure_redaction.py --corpus-e` and reported in docs/secrets.md.
"""

from __future__ import annotations

import json
from collections import Counter

from tests.core.public_secret_corpus import (
    PATH_E,
    check_lines_say_what_they_are,
    check_secrets_are_in_their_texts,
    check_split_follows_the_rule,
    load,
)

ROWS = [json.loads(line) for line in PATH_E.read_text(encoding="utf-8").splitlines()]
CASES = load(PATH_E)
PUBLIC_SOURCES = (
    "microsoft/security-utilities@",
    "awslabs/git-secrets@",
    "thoughtworks/talisman@",
    "americanexpress/earlybird@",
    "deepfence/SecretScanner@",
)


def test_every_line_says_what_it_is_where_it_comes_from_and_its_license() -> None:
    check_lines_say_what_they_are(ROWS, PUBLIC_SOURCES)


def test_each_secret_is_in_its_text_and_ordinary_strings_hold_none() -> None:
    check_secrets_are_in_their_texts(CASES)


def test_the_corpus_is_large_and_varied_enough_to_say_something() -> None:
    types = Counter(c.type for c in CASES)
    assert types["secret"] >= 500 and types["ordinary"] >= 300, types
    secret_kinds = {c.kind for c in CASES if c.type == "secret"}
    assert len(secret_kinds) >= 300
    # every family of context the corpus promises is there
    prefixes = Counter(k.split("-")[0] for k in secret_kinds)
    for family in ("msu", "gitsecrets", "talisman", "earlybird", "token", "cmd", "cfg", "out"):
        assert prefixes[family] >= 1, family
    for family in ("code", "prompt", "split", "key"):
        assert prefixes[family] >= 1, family
    prompts = {k for k in secret_kinds if k.startswith("prompt-")}
    assert len(prompts) >= 10  # prompts in more than one language
    ordinary_kinds = Counter(c.kind.split("-")[0] for c in CASES if c.type == "ordinary")
    assert ordinary_kinds["placeholder"] >= 30


def test_a_third_of_each_family_is_held_out_by_the_fixed_rule() -> None:
    check_split_follows_the_rule(ROWS)


def test_no_case_is_counted_twice() -> None:
    seen = Counter((c.type, c.text) for c in CASES)
    assert [key for key, n in seen.items() if n > 1] == []
