"""File names made from outside values (session ids, names from exports): never a path."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memory_core.errors import UsageError
from memory_core.filenames import MAX_NAME_CHARS, child_path, safe_filename


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def test_a_plain_name_is_kept_as_it_is() -> None:
    assert safe_filename("session-2026_11.27") == "session-2026_11.27"
    assert safe_filename(42) == "42"


def test_a_name_with_a_slash_becomes_one_file_name_that_differs_from_its_lookalike() -> None:
    made = safe_filename("a/b")
    assert made == f"a_b-{_digest('a/b')}"
    assert "/" not in made
    assert made != safe_filename("a_b") == "a_b"


def test_runs_of_unsafe_characters_become_one_underscore() -> None:
    assert safe_filename("a /\\:b").startswith("a_b-")


def test_leading_dots_are_dropped_so_no_hidden_file_and_no_parent() -> None:
    assert safe_filename("..") == f"_-{_digest('..')}"
    assert safe_filename("../etc") == f"_etc-{_digest('../etc')}"
    assert safe_filename(".hidden") == f"hidden-{_digest('.hidden')}"
    assert safe_filename("a.b.") == "a.b."  # only leading dots go


def test_an_empty_name_still_gives_a_file_name() -> None:
    assert safe_filename("") == f"_-{_digest('')}"


def test_the_length_limit_on_both_sides_of_its_edge() -> None:
    at_limit = "a" * MAX_NAME_CHARS
    assert safe_filename(at_limit) == at_limit
    over = "a" * (MAX_NAME_CHARS + 1)
    made = safe_filename(over)
    assert len(made) == MAX_NAME_CHARS
    assert made == "a" * (MAX_NAME_CHARS - 9) + "-" + _digest(over)
    assert safe_filename("abcdef", max_chars=6) == "abcdef"
    assert safe_filename("abcdefg", max_chars=6) == f"a-{_digest('abcdefg')}"


def test_a_tiny_limit_keeps_at_least_one_character_of_the_name() -> None:
    assert safe_filename("abcdef", max_chars=3) == f"a-{_digest('abcdef')}"


def test_a_name_that_is_not_valid_unicode_text_still_gets_a_name() -> None:
    made = safe_filename("a\udcffb")
    assert made.startswith("a_b-") and len(made) == len("a_b-") + 8


def test_child_path_joins_plain_names_inside_the_folder(tmp_path: Path) -> None:
    assert child_path(tmp_path, "sessions", "x.md") == tmp_path / "sessions" / "x.md"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "a\0b", "../x"])
def test_child_path_refuses_a_name_that_is_not_plain(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="not a plain name"):
        child_path(tmp_path, "ok", name)


def test_child_path_refuses_an_absolute_name_that_would_leave_the_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        child_path(tmp_path / "store", "/etc")


def test_a_one_character_name_and_a_name_starting_with_a_capital_are_kept() -> None:
    assert safe_filename("a") == "a"
    assert safe_filename("X") == "X"
    assert safe_filename("XX.Xcode") == "XX.Xcode"
