"""A gotcha's code pattern, matched the way the editor shows it: the columns of every match,
literals that share a prefix, regexes gated by their required literal, the lines a file scan
looks at, a regex's time budget, and what is refused when the pattern is written."""

from __future__ import annotations

import pytest

from memory_core.errors import UsageError
from memory_core.gotchas import patterns
from memory_core.gotchas.patterns import Match, Matcher, PatternSpec, SlowPattern


def _spans(matches: tuple[Match, ...]) -> set[tuple[str, int, int]]:
    return {(m.gotcha_id, m.start, m.end) for m in matches}


def test_literals_sharing_a_prefix_each_match_where_they_are() -> None:
    matcher = Matcher(
        [
            PatternSpec("G-os", "os.", "literal"),
            PatternSpec("G-system", "os.system(", "literal"),
            PatternSpec("G-popen", "os.popen(", "literal"),
            PatternSpec("G-also-system", "os.system(", "literal"),
        ]
    )
    line = "x = os.system('a') or os.popen('b')"
    assert _spans(matcher.match_line(line)) == {
        ("G-os", 4, 7),
        ("G-system", 4, 14),
        ("G-also-system", 4, 14),
        ("G-os", 22, 25),
        ("G-popen", 22, 31),
    }
    assert matcher.match_line("nothing here") == ()
    assert matcher.specs == 4


def test_a_regex_runs_only_where_its_required_literal_is_and_reports_each_match() -> None:
    matcher = Matcher(
        [
            PatternSpec("G-utc", r"datetime\.utcnow\(\)", "regex"),
            PatternSpec("G-todo", r"TODO\(\w+\)", "regex"),
        ]
    )
    line = "a = datetime.utcnow(); b = datetime.utcnow()  # TODO(ann) TODO(bob)"
    assert _spans(matcher.match_line(line)) == {
        ("G-utc", 4, 21),
        ("G-utc", 27, 44),
        ("G-todo", 48, 57),
        ("G-todo", 58, 67),
    }
    # The needle alone is not a match of the regex.
    assert matcher.match_line("datetime.utcnow") == ()


def test_a_regex_that_matches_only_empty_text_shows_nothing() -> None:
    matcher = Matcher([PatternSpec("G-empty", r"x*", "regex")])
    assert matcher.match_line("abc") == ()
    assert _spans(matcher.match_line("axxb")) == {("G-empty", 1, 3)}


def test_the_file_scan_names_only_lines_holding_a_needle_each_once() -> None:
    matcher = Matcher(
        [PatternSpec("G-print", "print(", "literal"), PatternSpec("G-eval", r"eval\(.+\)", "regex")]
    )
    text = "a = 1\nprint(a); print(b)\nb = 2\nx = eval(s)\n"
    starts = [0, 6, 26, 32]
    assert matcher.candidate_lines(text, starts) == [1, 3]
    assert Matcher([]).candidate_lines(text, starts) == []
    # A regex without a required literal: every line must be checked.
    assert Matcher([PatternSpec("G-any", r"\d+", "regex")]).candidate_lines(text, starts) is None
    # A needle spanning lines cannot be found line by line either.
    spanning = Matcher([PatternSpec("G-nl", "a\nb", "literal")])
    assert spanning.candidate_lines(text, starts) is None


def test_an_invalid_regex_is_remembered_and_the_others_still_match() -> None:
    matcher = Matcher(
        [PatternSpec("G-bad", "foo(", "regex"), PatternSpec("G-good", "foo", "literal")]
    )
    assert _spans(matcher.match_line("foo(1)")) == {("G-good", 0, 3)}
    assert "G-bad" in matcher.invalid and "position" in matcher.invalid["G-bad"]
    assert _spans(matcher.match_line("foo(2)")) == {("G-good", 0, 3)}


def test_a_regex_out_of_time_is_reported_slow_and_skipped_for_the_rest_of_the_file() -> None:
    catastrophic = r"(a|aa)+$"
    matcher = Matcher([PatternSpec("G-slow", catastrophic, "regex")], timeout_ms=5)
    budget: dict[str, float] = {}
    slow: list[SlowPattern] = []
    line = "a" * 60 + "!"
    assert matcher.match_line(line, budget, slow) == ()
    assert slow == [SlowPattern("G-slow", catastrophic)] and budget == {"G-slow": 0.0}
    # Out of budget: not run again (no second report), and an incomplete answer is not cached.
    assert matcher.match_line("a" * 61 + "!", budget, slow) == ()
    assert len(slow) == 1
    assert matcher.match_line(line, {}, []) == () and not matcher.mostly_cached([line])


def test_a_regex_spends_its_budget_and_a_fresh_budget_runs_it_again() -> None:
    matcher = Matcher([PatternSpec("G-x", r"x+", "regex")], timeout_ms=1000)
    budget: dict[str, float] = {}
    assert _spans(matcher.match_line("axxa", budget)) == {("G-x", 1, 3)}
    assert 0 < budget["G-x"] < 1.0
    empty_budget = {"G-x": 0.0}
    assert matcher.match_line("bxb", empty_budget) == ()
    assert _spans(matcher.match_line("bxb", {})) == {("G-x", 1, 2)}


def test_lines_seen_before_come_from_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    matcher = Matcher([PatternSpec("G-p", "print(", "literal")])
    first = matcher.match_line("print(1)")
    assert matcher.match_line("print(1)") is first
    assert matcher.mostly_cached(["print(1)", "print(1)", "other"]) is True
    assert matcher.mostly_cached(["print(1)", "a", "b", "c"]) is False
    assert matcher.mostly_cached(["print(1)", "a"]) is False  # half is not most
    monkeypatch.setattr(patterns, "LINE_CACHE_LIMIT", 2)
    matcher.match_line("print(2)")
    matcher.match_line("print(3)")  # the cache was full: emptied, then this line kept
    assert matcher.mostly_cached(["print(3)"]) and not matcher.mostly_cached(["print(1)"])


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        (r"datetime\.utcnow\(\)", "datetime.utcnow()"),
        (r"foo\d+barbaz", "barbaz"),
        (r"ab(cdef)gh", "cdef"),
        (r"(?i)password", None),
        (r"(?x) pass word", None),
        (r"xy(?i:longliteral)z", "xy"),
        (r"\d+", None),
        (r"foo(", None),
        (r"ab|cd", None),
    ],
)
def test_the_required_literal_is_the_longest_run_every_match_holds(
    pattern: str, needle: str | None
) -> None:
    assert patterns.required_literal(pattern) == needle


def test_the_trie_regex_finds_the_longest_literal_at_a_position() -> None:
    import re

    rendered = patterns._trie_regex(["ab", "abc", "b"])
    assert [m.group() for m in re.finditer(rendered, "abc b ab")] == ["abc", "b", "ab"]
    assert patterns._trie_regex([]) == ""


def test_a_pattern_is_refused_when_written_with_a_reason_and_a_hint() -> None:
    with pytest.raises(UsageError) as raised:
        patterns.validate_regex("a(b")
    assert str(raised.value).startswith("invalid regular expression 'a(b': ")
    assert str(raised.value).endswith("missing ) at position 3")
    assert raised.value.hint == "fix the pattern, or pass it as a literal"
    with pytest.raises(UsageError) as raised:
        patterns.validate_regex(r"(a|aa)+$")
    assert "takes pathological time" in str(raised.value)
    assert str(raised.value).endswith("on a 41-character input")
    assert raised.value.hint == "remove nested repetition like (a+)+ or (a|aa)+"
    patterns.validate_regex(r"os\.system\(")  # a plain one passes


def test_each_match_is_reported_once_when_the_needle_occurs_twice() -> None:
    matcher = Matcher([PatternSpec("G-todo", r"TODO\(\w+\)", "regex")])
    found = matcher.match_line("TODO(ann) and TODO(bob)")
    assert sorted((m.start, m.end) for m in found) == [(0, 9), (14, 23)]


def test_overlapping_literal_matches_are_each_found() -> None:
    matcher = Matcher([PatternSpec("G-eq", "==", "literal")])
    assert [(m.start, m.end) for m in matcher.match_line("a === b")] == [(2, 4), (3, 5)]
