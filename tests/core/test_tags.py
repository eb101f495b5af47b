"""Tags as a user sees them stored: `engram remember --tag`, `--topic` selectors (issue 31)."""

from __future__ import annotations

from memory_core.tags import normalize_tags


def test_a_single_tag_given_as_a_string_is_one_tag_not_its_letters() -> None:
    assert normalize_tags("Auth Flow") == ["auth-flow"]


def test_tags_are_trimmed_lowered_and_their_inner_spaces_become_one_dash() -> None:
    assert normalize_tags(["  Auth  ", "Data\tBase  Layer", "API"]) == [
        "auth",
        "data-base-layer",
        "api",
    ]


def test_a_tag_repeated_in_another_spelling_is_kept_once_in_first_seen_order() -> None:
    assert normalize_tags(["db", "Auth", "DB ", "auth", "cache"]) == ["db", "auth", "cache"]


def test_blank_tags_are_dropped() -> None:
    assert normalize_tags(["", "   ", "\t", "ok"]) == ["ok"]
    assert normalize_tags([]) == []


def test_a_tag_that_is_not_text_is_stored_as_its_text() -> None:
    assert normalize_tags([2026, "v2"]) == ["2026", "v2"]  # type: ignore[list-item]


def test_a_secret_pasted_as_a_tag_is_stored_redacted() -> None:
    tags = normalize_tags(["AKIAIOSFODNN7EXAMPLE", "release"])
    assert tags == ["[redacted:aws-access-key]", "release"]
    assert not any("AKIA" in tag for tag in tags)
