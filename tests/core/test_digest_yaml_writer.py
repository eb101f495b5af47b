"""The digest's frontmatter writer without PyYAML writes byte for byte what PyYAML writes, or
hands the value to PyYAML: checked against both of PyYAML's safe dumpers on random values built
from the characters and words YAML treats specially."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest
import yaml

from memory_core.agents import digest

TRICKY = [
    "pytest -q", "git commit -m 'fix: it'", "a: b", "x #y", "a#b", "key:", ":a", "- a", "-a",
    "? x", "?x", "yes", "Yes", "no", "NO", "null", "~", "1.5", ".5", ".inf", "2026-01-01", "on",
    "off", "True", "y", "n", "0x1f", "1_000", "<<", "=", "'q'", '"dq"', "a: ", " lead",
    "trail ", "", "x" * 95, "word " * 30, "café", "a\nb", "a\tb", "\u2028", "[a]", "{b}", "!tag",
    "&anchor", "*alias", "|", ">", "%x", "@x", "`x`", "src/app.py", "/abs/path", "C:\\x",
]  # fmt: skip
ALPHABET = string.ascii_letters + string.digits + " :#-?,[]{}&*!|>'\"%@`/._~=<+\\" + "  é\n"


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.2:
        keys = ["command", "ok", "at", "tokens", rng.choice(TRICKY)]
        return {f"{rng.choice(keys)}{i}": _value(rng, depth + 1) for i in range(rng.randint(0, 4))}
    if depth < 3 and roll < 0.4:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    text = (
        rng.choice(TRICKY)
        if rng.random() < 0.4
        else "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40)))
    )
    numbers = [rng.randint(-(10**6), 10**12), rng.random() * 1000, round(rng.random(), 3)]
    return rng.choice([None, True, False, 0.0, 1e20, float("inf"), *numbers, text, text])


@pytest.mark.parametrize("dumper", [yaml.SafeDumper, getattr(yaml, "CSafeDumper", yaml.SafeDumper)])
def test_the_writer_matches_pyyaml_byte_for_byte(dumper: type) -> None:
    rng = random.Random(32)
    written_by_us = 0
    for _ in range(3000):
        mapping = {"engram": _value(rng)}
        expected = yaml.dump(mapping, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)
        lines: list[str] = []
        try:
            digest._yaml_lines(mapping, 0, lines, "")
        except digest._NeedsYaml:
            continue
        written_by_us += 1
        assert "\n".join(lines) + "\n" == expected
    # Most values are written without PyYAML (the check would be empty otherwise).
    assert written_by_us > 1500


def test_what_the_writer_declines_pyyaml_writes() -> None:
    # Negative control of the fallback: these values are refused by engram's own writer, and the
    # mapping still comes out as PyYAML writes it.
    for value in ("café", "a\nb", "yes", "2026-01-01", "x " * 60, 1e20, float("nan")):
        with pytest.raises(digest._NeedsYaml):
            digest._yaml_lines({"engram": {"v": value}}, 0, [], "")
        expected = yaml.safe_dump(
            {"engram": {"v": value}}, sort_keys=False, allow_unicode=True, width=100
        )
        assert digest._yaml_mapping({"engram": {"v": value}}) == expected.rstrip("\n")
