"""Corpus F is well formed: a held-out corpus is only worth its figure if every line says what it
is, where it comes from and under which license, and if its secrets are really in its texts.

The detector's figures on it are NOT asserted here: the corpus is held out, measured by
`scripts/measure_redaction.py --corpus-f` and reported in docs/secrets.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from tests.core.public_secret_corpus import PATH_F, corpus_e_split, load

ROWS = [json.loads(line) for line in PATH_F.read_text(encoding="utf-8").splitlines()]
CASES = load(PATH_F)
LICENSES = {"MIT", "Apache-2.0", "made here", "real output", "real text", "MIT (engram)"}
PUBLIC_SOURCES = ("securego/gosec@", "PyCQA/bandit@", "github/codeql@")


def test_every_line_says_what_it_is_where_it_comes_from_and_its_license() -> None:
    for row in ROWS:
        assert row["type"] in {"secret", "ordinary", "negative"}, row
        assert row["split"] in {"holdout", "tune"}, row
        assert row["kind"] and row["source"] and row["context"] and row["text"], row
        assert row["license"] in LICENSES, row
        if row["source"].startswith(PUBLIC_SOURCES):
            # a public source is named with its commit and the file the line comes from
            assert re.match(r"^[\w.-]+/[\w.-]+@[0-9a-f]{12}:\S", row["source"]), row
            assert row["license"] in {"MIT", "Apache-2.0"}, row


def test_each_secret_is_in_its_text_and_ordinary_strings_hold_none() -> None:
    secrets = [c for c in CASES if c.type == "secret"]
    for case in secrets:
        assert case.secret and case.secret in case.text, case
    assert all(not c.secret for c in CASES if c.type != "secret")
    # No ordinary string carries one of the corpus' own secrets: a case counted as a change
    # must be one where nothing needed hiding.
    long_secrets = {c.secret for c in secrets if len(c.secret) >= 12}
    for case in CASES:
        if case.type == "ordinary":
            assert not any(s in case.text for s in long_secrets), case


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
    # Split after its second measurement, by kind, with corpus E's rule: a line whose split no
    # longer follows it would move a case between the tuned and the held-out figures.
    split = corpus_e_split(ROWS)
    assert all(row["split"] == split[(row["type"], row["kind"])] for row in ROWS)
    held = {row["kind"] for row in ROWS if row["type"] == "secret" and row["split"] == "holdout"}
    tuned = {row["kind"] for row in ROWS if row["type"] == "secret" and row["split"] == "tune"}
    assert held and not held & tuned
