"""Patterns compiled on first use behave as `re.compile` would, and compile once."""

from __future__ import annotations

import re

import pytest

from memory_core.lazy_pattern import compile_bytes_later, compile_later


def test_a_later_pattern_matches_as_the_compiled_one_with_its_flags() -> None:
    pattern = compile_later(r"^error: (\w+)", re.IGNORECASE | re.MULTILINE)
    assert pattern.search("ok\nERROR: disk") is not None
    assert pattern.findall("Error: a\nerror: b") == ["a", "b"]
    assert pattern.pattern == r"^error: (\w+)"
    assert pattern.flags & re.IGNORECASE and pattern.flags & re.MULTILINE


def test_without_flags_the_pattern_is_case_sensitive() -> None:
    pattern = compile_later("error")
    assert pattern.search("ERROR") is None
    assert pattern.sub("warning", "an error") == "an warning"


def test_a_bytes_pattern_matches_bytes() -> None:
    pattern = compile_bytes_later(rb"\x00+", 0)
    assert pattern.split(b"a\x00\x00b") == [b"a", b"b"]
    assert compile_bytes_later(rb"ABC", re.IGNORECASE).match(b"abc") is not None


def test_the_pattern_is_compiled_once_and_then_kept() -> None:
    pattern = compile_later("x+")
    first = pattern.search
    assert pattern.search is first  # kept on the object, not compiled again
    assert "search" in vars(pattern)


def test_an_invalid_pattern_fails_when_used_not_when_defined() -> None:
    pattern = compile_later("(unclosed")
    with pytest.raises(re.error):
        pattern.search("x")


def test_dunder_lookups_are_not_forwarded_to_the_compiled_pattern() -> None:
    pattern = compile_later("x")
    # copy/pickle probe such attributes; answering them would compile for nothing
    with pytest.raises(AttributeError, match=r"^__deepcopy__$"):
        pattern.__deepcopy__  # noqa: B018
    assert vars(pattern) == {"_source": ("x", 0)}


def test_its_repr_names_the_pattern_and_flags() -> None:
    assert repr(compile_later("a.b", re.S)) == f"compile_later('a.b', {int(re.S)})"


def test_without_flags_a_bytes_pattern_has_the_flags_re_compile_gives_it() -> None:
    assert compile_bytes_later(rb"x+").flags == re.compile(rb"x+").flags
    assert compile_later("x+").flags == re.compile("x+").flags


def test_a_second_method_does_not_compile_again_once_re_forgot_the_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pattern = compile_later(r"\d+")
    assert pattern.search("a1") is not None
    re.purge()  # as in a resident server's child: its server compiled more than re keeps

    def no_compile(*args: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(re, "compile", no_compile)
    monkeypatch.setattr(re, "_compile", no_compile)
    assert pattern.sub("N", "a1b22") == "aNbN"


def test_the_resident_server_compiles_the_patterns_a_prompt_uses_before_it_forks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory_core import resident_server
    from memory_core.gotchas import normalize, tool_errors

    # Fresh modules' state: the patterns kept in tables (normalize's placeholders) included.
    for module in (normalize, tool_errors):
        for value in list(vars(module).values()):
            for lazy in resident_server._lazy_patterns_in(value, type(compile_later("x"))):
                monkeypatch.setattr(lazy, "__dict__", {"_source": lazy._source})
    resident_server.compile_module_patterns([normalize, tool_errors])
    re.purge()
    compiled: list[object] = []
    real = re._compile  # type: ignore[attr-defined]

    def counting(pattern: object, flags: int) -> object:
        if not isinstance(pattern, re.Pattern):
            compiled.append(pattern)
        return real(pattern, flags)

    monkeypatch.setattr(re, "_compile", counting)
    # What a session start's dead ends and a prompt's gotchas do with an error.
    assert normalize.normalize("FAILED tests/test_a.py::test_x - AssertionError: 500 != 200")
    assert tool_errors.key_error("  2 failing\n\n  1) login\n     Error: boom\n") is not None
    assert compiled == []
