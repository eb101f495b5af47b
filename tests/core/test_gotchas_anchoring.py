"""Where gotchas show in code: patterns (bounded in time), anchors that follow edits, annotations."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memory_core import gotchas
from memory_core.errors import UsageError
from memory_core.gotchas.patterns import Matcher, PatternSpec, required_literal, validate_regex
from memory_core.gotchas.records import Anchor, Gotcha, line_hash
from memory_core.gotchas.scan import GotchaIndex, find_annotations
from memory_core.store import Store

NOW = 1_800_000_000.0


def index_of(*items: Gotcha, **kwargs: object) -> GotchaIndex:
    return GotchaIndex(list(items), now=NOW, **kwargs)  # type: ignore[arg-type]


def pattern(
    gotcha_id: str, text: str, kind: str = "literal", files: list[str] | None = None
) -> Gotcha:
    return Gotcha(
        id=gotcha_id,
        title=gotcha_id,
        code_pattern=text,
        pattern_kind=kind,
        related_files=files or [],
    )


def spans(index: GotchaIndex, path: str, lines: list[str]) -> list[tuple[str, int, int, int]]:
    return sorted((h.gotcha_id, h.line, h.start, h.end) for h in index.scan(path, lines).hits)


def test_an_invalid_regex_is_refused_with_the_position_of_the_error(store: Store) -> None:
    with pytest.raises(UsageError, match=r"missing \) at position 7"):
        gotchas.add(store, "bad", pattern="foo(bar")
    with pytest.raises(UsageError, match="position 0"):
        validate_regex("*oops")
    assert gotchas.list_gotchas(store) == []  # nothing half-written


def test_a_catastrophic_regex_is_refused_when_written(store: Store) -> None:
    with pytest.raises(UsageError, match="pathological time"):
        gotchas.add(store, "slow", pattern=r"(a|aa)+$")


def test_a_catastrophic_regex_that_slips_through_is_bounded_at_scan_time() -> None:
    # Not caught by the write-time probes (needs 'x' runs), so only the timeout protects us.
    slow = pattern("G-00000001", r"(x|xx)+\d", kind="regex")
    fast = pattern("G-00000002", "needle")
    index = index_of(slow, fast, regex_timeout_ms=30)
    lines = ["x" * 40 + " needle"] * 50
    started = time.perf_counter()
    result = index.scan("big.txt", lines)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0  # one 30 ms budget for the pattern over the file, not 50 x forever
    assert [s.gotcha_id for s in result.slow] == ["G-00000001"]
    assert (
        len([h for h in result.hits if h.gotcha_id == "G-00000002"]) == 50
    )  # the others still run


def test_literals_and_regexes_match_at_exact_columns_including_overlaps() -> None:
    index = index_of(
        pattern("G-a", "foo"),
        pattern("G-b", "foobar"),
        pattern("G-c", r"bar\(\d+\)", kind="regex"),
        pattern("G-d", r"^\s*import os$", kind="regex"),
    )
    lines = ["x = foobar(12) + foo", "import os", "  import os2"]
    assert spans(index, "a.py", lines) == [
        ("G-a", 0, 4, 7),
        ("G-a", 0, 17, 20),
        ("G-b", 0, 4, 10),
        ("G-c", 0, 7, 14),
        ("G-d", 1, 0, 9),
    ]


def test_patterns_apply_only_to_their_related_files() -> None:
    index = index_of(
        pattern("G-py", "print(", files=["*.py"]), pattern("G-src", "TODO", files=["src/**"])
    )
    assert [h.gotcha_id for h in index.scan("pkg/a.py", ["print(1) # TODO"]).hits] == ["G-py"]
    assert [h.gotcha_id for h in index.scan("src/deep/a.js", ["print(1) # TODO"]).hits] == ["G-src"]


def test_a_gotcha_with_only_related_files_shows_once_on_line_one() -> None:
    note = Gotcha(
        id="G-note", title="Migrations are irreversible", related_files=["migrations/*.sql"]
    )
    index = index_of(note)
    hits = index.scan("migrations/0001.sql", ["CREATE TABLE t (x);", "-- more"]).hits
    assert [(h.gotcha_id, h.line, h.start, h.end, h.kind) for h in hits] == [
        ("G-note", 0, 0, 19, "file")
    ]
    assert index.scan("src/app.py", ["x"]).hits == []


def test_an_anchor_follows_its_line_when_lines_move_and_is_flagged_when_it_changes() -> None:
    anchored = Gotcha(
        id="G-anch",
        title="t",
        anchors=[Anchor("app.py", 1, 1, line_hash("    foo()"), "    foo()")],
    )
    index = index_of(anchored)
    [same] = index.scan("app.py", ["def f():", "    foo()"]).hits
    assert (same.line, same.start, same.end, same.stale) == (1, 4, 9, False)
    [moved] = index.scan("app.py", ["# new", "# lines", "def f():", "    foo()"]).hits
    assert (moved.line, moved.stale) == (3, False)
    [changed] = index.scan("app.py", ["def f():", "    bar()"]).hits
    assert (changed.line, changed.stale) == (1, True)


@pytest.mark.parametrize(
    "line",
    [
        "x = 1  # gotcha: the cache is per process",
        "// GOTCHA: the cache is per process",
        "-- Gotcha: the cache is per process",
        "; gotcha: the cache is per process",
        "/* gotcha: the cache is per process */",
        "<!-- GOTCHA: the cache is per process -->",
        " * gotcha: the cache is per process",
    ],
)
def test_annotations_in_any_comment_syntax(line: str) -> None:
    [annotation] = find_annotations("f.txt", ["before", line])
    assert annotation.text == "the cache is per process"
    assert annotation.line == 1


def test_text_that_only_mentions_gotcha_is_not_an_annotation() -> None:
    assert (
        find_annotations(
            "f.py", ['msg = "gotcha: not a comment"', "gotchas = []", "url = 'http://gotcha:1'"]
        )
        == []
    )


def test_annotation_severity_and_sync_with_the_store(store: Store) -> None:
    [annotation] = find_annotations("a.py", ["# GOTCHA(high): never call this twice"])
    assert annotation.severity == "high"
    from memory_core.gotchas.records import sync_annotations
    from memory_core.gotchas.scan import annotation_gotcha

    assert sync_annotations(store, "a.py", [annotation_gotcha("a.py", annotation, NOW)])
    assert not sync_annotations(
        store, "a.py", [annotation_gotcha("a.py", annotation, NOW)]
    )  # unchanged
    [stored] = gotchas.list_gotchas(store)
    assert (stored.source_type, stored.severity, stored.status) == (
        "annotation",
        "high",
        "confirmed",
    )
    assert sync_annotations(store, "a.py", [])  # the comment was deleted
    assert gotchas.list_gotchas(store) == []


def test_binary_and_huge_files_are_skipped(workspace: Path) -> None:
    index = index_of(pattern("G-x", "needle"), max_file_bytes=1000)
    (workspace / "blob.bin").write_bytes(b"needle\x00\x01\x02" * 10)
    (workspace / "huge.txt").write_text("needle\n" * 500)
    (workspace / "ok.txt").write_text("a needle\n")
    assert index.scan_file(workspace, "blob.bin").skipped == "binary file"
    huge = index.scan_file(workspace, "huge.txt")
    assert huge.hits == [] and "max_file_bytes" in (huge.skipped or "")
    assert [h.start for h in index.scan_file(workspace, "ok.txt").hits] == [2]
    assert index.scan("open.txt", ["needle"] * 400).skipped  # an open buffer over the cap too


def test_resolved_snoozed_and_decayed_gotchas_are_not_shown() -> None:
    shown = pattern("G-show", "x")
    resolved = pattern("G-res", "x")
    resolved.status = "resolved"
    snoozed = pattern("G-snz", "x")
    snoozed.snoozed_until = NOW + 10
    decayed = pattern("G-old", "x")
    decayed.source_type, decayed.status, decayed.last_seen, decayed.updated_at = (
        "auto_detected",
        "candidate",
        NOW - 40 * 86400,
        NOW - 40 * 86400,
    )
    index = index_of(shown, resolved, snoozed, decayed, decay_days=30)
    assert [h.gotcha_id for h in index.scan("a", ["x"]).hits] == ["G-show"]


def test_required_literal_prefilter() -> None:
    assert required_literal(r"datetime\.utcnow\(\)") == "datetime.utcnow()"
    assert required_literal(r"foo\d+barbaz") == "barbaz"
    assert required_literal(r"(?i)secret") is None
    assert required_literal(r"a|b") is None


def test_the_matcher_caches_lines_so_only_changed_lines_are_rescanned() -> None:
    matcher = Matcher([PatternSpec("G-1", "abc", "literal")])
    first = matcher.match_line("xx abc")
    assert matcher.match_line("xx abc") is first  # cached by the line's text
