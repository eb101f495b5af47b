"""The one line a user reads for an error, and the exit code a script sees (issue 31)."""

from __future__ import annotations

import pytest

from memory_core import errors


def test_the_one_line_adds_the_hint_in_parentheses_only_when_there_is_one() -> None:
    assert errors.EngramError("no store here").one_line() == "no store here"
    assert (
        errors.UsageError("bad --since", hint="use a date like 2026-11-27").one_line()
        == "bad --since (use a date like 2026-11-27)"
    )
    assert errors.NotFoundError("no gotcha g1", hint="").one_line() == "no gotcha g1"


def test_the_message_and_hint_are_kept_for_every_front_end() -> None:
    error = errors.StoreError("the store is newer", hint="upgrade engram")
    assert (error.message, error.hint, str(error)) == (
        "the store is newer",
        "upgrade engram",
        "the store is newer",
    )
    assert errors.QuotaExceededError("full").hint is None


@pytest.mark.parametrize(
    ("cls", "code", "exit_code"),
    [
        (errors.EngramError, "MEM_E000", 1),
        (errors.UsageError, "MEM_E004", 2),
        (errors.NotFoundError, "MEM_E005", 1),
        (errors.NothingYetError, "MEM_E005", 1),
        (errors.StoreError, "MEM_E003", 1),
        (errors.QuotaExceededError, "MEM_E001", 1),
    ],
)
def test_each_error_has_its_documented_code_and_exit_code(
    cls: type[errors.EngramError], code: str, exit_code: int
) -> None:
    assert (cls.code, cls.exit_code) == (code, exit_code)
    assert (errors.EXIT_OK, errors.EXIT_FAILED, errors.EXIT_USAGE) == (0, 1, 2)


def test_an_empty_state_is_still_a_not_found_for_callers_that_catch_that() -> None:
    with pytest.raises(errors.NotFoundError):
        raise errors.NothingYetError("no session recorded in this workspace yet")
