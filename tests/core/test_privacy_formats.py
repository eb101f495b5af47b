"""An export's formats read and written (issue 31): every refusal says what is wrong, each
column type's check on both sides, the size limit at its edge."""

from __future__ import annotations

import json

import pytest

from memory_core import privacy
from memory_core.errors import UsageError


def _export(**extra: object) -> dict[str, object]:
    return {
        "format": privacy.FORMAT,
        "format_version": privacy.FORMAT_VERSION,
        "tables": {},
        **extra,
    }


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_an_export_round_trips_through_json_and_yaml(fmt: str) -> None:
    data = _export(tables={"memories": [{"id": "M-1", "content": "café"}]})
    text = privacy.render(data, fmt)
    assert privacy.parse(text, fmt) == data
    assert "café" in text


def test_json_is_indented_and_ends_with_a_newline() -> None:
    text = privacy.render({"a": [1]}, "json")
    assert text == json.dumps({"a": [1]}, indent=2) + "\n"


def test_an_unknown_format_is_refused_with_the_known_ones() -> None:
    with pytest.raises(UsageError, match="unknown format 'csv'") as caught:
        privacy.render({}, "csv")
    assert caught.value.hint == "json, yaml or md"
    with pytest.raises(UsageError, match="cannot import 'md'") as caught:
        privacy.parse("# x", "md")
    assert caught.value.hint == "import reads json or yaml exports"


def test_a_broken_file_says_it_is_not_valid() -> None:
    with pytest.raises(UsageError, match=r"^the file is not valid json: "):
        privacy.parse("{", "json")
    with pytest.raises(UsageError, match=r"^the file is not valid yaml: ") as caught:
        privacy.parse("a: [1\nb", "yaml")
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(
    "data",
    [
        [1, 2],
        {"format": "other", "format_version": 1, "tables": {}},
        {"format": privacy.FORMAT, "format_version": 1, "tables": []},
    ],
)
def test_a_file_that_is_not_an_export_is_refused(data: object) -> None:
    with pytest.raises(UsageError, match=r"^this is not an engram export$") as caught:
        privacy.parse(json.dumps(data), "json")
    assert caught.value.hint == "make one with `engram export --format json`"


def test_an_export_of_another_version_names_both_versions() -> None:
    data = _export(format_version=999)
    with pytest.raises(UsageError) as caught:
        privacy.parse(json.dumps(data), "json")
    assert caught.value.message == (
        f"export format version 999 is not one this engram reads ({privacy.FORMAT_VERSION})"
    )
    assert caught.value.hint == "import it with the engram that wrote it, or upgrade"


def test_yaml_aliases_are_refused_with_their_line() -> None:
    text = "format: x\na: &x [1]\nb: *x\n"
    with pytest.raises(UsageError) as caught:
        privacy.parse(text, "yaml")
    assert caught.value.message == (
        "the file is not an engram export: it uses YAML aliases (line 3)"
    )


@pytest.mark.parametrize(
    ("declared", "value", "ok"),
    [
        ("INTEGER", 3, True),
        ("INTEGER", "3", False),
        ("TEXT", "x", True),
        ("VARCHAR(10)", b"x", True),
        ("CLOB", 3, False),
        ("REAL", 1.5, True),
        ("FLOAT", 2, True),
        ("DOUBLE", True, False),
        ("REAL", float("nan"), False),
        ("REAL", "1.5", False),
        ("BLOB", {"any": 1}, True),
        ("", [1], True),
        ("NUMERIC", 5, True),
        ("NUMERIC", float("nan"), False),
        ("NUMERIC", "5", False),
        ("integer", None, True),
    ],
)
def test_each_column_type_takes_its_values_only(declared: str, value: object, ok: bool) -> None:
    problem = privacy._type_problem(declared, value)
    assert (problem is None) is ok
    if not ok:
        assert problem == f"{type(value).__name__} {str(value)[:40]!r} where {declared} belongs"


def test_a_value_at_the_size_limit_is_taken_and_one_more_character_refused() -> None:
    limit = privacy.MAX_IMPORT_VALUE_CHARS
    assert privacy._type_problem("TEXT", "x" * limit) is None
    assert privacy._type_problem("TEXT", "x" * (limit + 1)) == (
        f"a value of {limit + 1} characters (the limit is {limit})"
    )
    assert privacy._type_problem("BLOB", b"x" * (limit + 1)) is not None
