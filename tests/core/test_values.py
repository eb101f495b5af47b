"""The value bases that replace dataclasses on the cold hook path (memory_core/values.py): the
classes built on them must still compare, hash and print by their fields, as the dataclasses did,
or duplicate error locations stop collapsing and logs print objects nobody can read."""

from __future__ import annotations

import pytest

from memory_core.gotchas.normalize import ErrorLocation
from memory_core.gotchas.records import Anchor
from memory_core.gotchas.tool_errors import ToolError
from memory_core.values import Value


class _Place(Value):
    """Another value class with ErrorLocation's very fields."""

    __slots__ = ("column", "line", "path")
    FIELDS = ("path", "line", "column")

    def __init__(self, path: str, line: int, column: int | None) -> None:
        self.path = path
        self.line = line
        self.column = column


def test_values_with_the_same_fields_are_equal_and_collapse_in_a_set() -> None:
    first = ErrorLocation("src/app.py", 12, 4)
    again = ErrorLocation("src/app.py", 12, 4)
    assert first == again
    assert hash(first) == hash(again)
    assert {first, again} == {first}


@pytest.mark.parametrize(
    "other",
    [
        ErrorLocation("src/other.py", 12, 4),
        ErrorLocation("src/app.py", 13, 4),
        ErrorLocation("src/app.py", 12, None),
    ],
)
def test_values_differing_in_any_field_are_different(other: ErrorLocation) -> None:
    location = ErrorLocation("src/app.py", 12, 4)
    assert location != other
    assert len({location, other}) == 2


def test_a_value_never_equals_another_class_with_the_same_fields() -> None:
    location = ErrorLocation("src/app.py", 12, 4)
    assert location != ("src/app.py", 12, 4)
    assert location.__eq__(("src/app.py", 12, 4)) is NotImplemented
    assert location != _Place("src/app.py", 12, 4)
    assert ToolError("boom", "a.py", 3) != ToolError("boom", "a.py", 4)


def test_a_value_prints_its_class_and_fields_in_order() -> None:
    assert repr(ErrorLocation("a.py", 3)) == "ErrorLocation(path='a.py', line=3, column=None)"


def test_a_record_compares_by_fields_but_cannot_be_hashed() -> None:
    anchor = Anchor("a.py", 1, 2, "h", "x = 1")
    assert anchor == Anchor("a.py", 1, 2, "h", "x = 1")
    assert anchor != Anchor("a.py", 1, 3, "h", "x = 1")
    assert repr(anchor) == "Anchor(path='a.py', line=1, end_line=2, content_hash='h', text='x = 1')"
    with pytest.raises(TypeError):
        hash(anchor)


def test_different_values_spread_over_hashes_so_sets_of_many_stay_fast() -> None:
    # One hash for all would still compare right, but make every set and dict lookup linear.
    assert len({hash(ErrorLocation("a.py", line)) for line in range(200)}) == 200
