"""Evolution's line ranges and attribution, on their edges (issue 31).

Line ranges are what the timeline, `engram evolution` and drift's overlaps show; attribution
decides whether the user or an agent gets the credit for a change. Each rule is checked on
both sides of its edge.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import evolution
from memory_core.evolution import ATTRIBUTION_SECONDS, changed_lines, merge_ranges
from memory_core.store import Store

TEN = "".join(f"line {n}\n" for n in range(1, 11))


# -- merge_ranges -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ranges", "merged"),
    [
        ([(1, 2), (3, 4)], [(1, 4)]),  # adjacent: one block
        ([(1, 2), (4, 5)], [(1, 2), (4, 5)]),  # one line between: two blocks
        ([(5, 9), (1, 3)], [(1, 3), (5, 9)]),  # sorted
        ([(4, 2)], [(2, 4)]),  # given backwards
        ([(1, 10), (3, 4)], [(1, 10)]),  # inside another
        ([(1, 3), (3, 5), (9, 9)], [(1, 5), (9, 9)]),  # sharing a line
        ([], []),
    ],
)
def test_ranges_merge_when_they_touch_and_stay_apart_when_a_line_separates_them(
    ranges: list[tuple[int, int]], merged: list[tuple[int, int]]
) -> None:
    assert merge_ranges(ranges) == merged


# -- changed_lines ------------------------------------------------------------------------------


def test_an_edited_line_is_its_own_range() -> None:
    assert changed_lines(TEN, TEN.replace("line 4\n", "LINE 4\n")) == [(4, 4)]


def test_a_deleted_line_is_reported_as_the_line_where_the_text_was_removed() -> None:
    after = TEN.replace("line 4\n", "")
    assert changed_lines(TEN, after) == [(4, 4)]


def test_deleting_the_last_lines_points_at_the_new_last_line() -> None:
    after = "".join(f"line {n}\n" for n in range(1, 9))
    assert changed_lines(TEN, after) == [(8, 8)]


def test_inserting_a_copy_of_a_neighbouring_line_is_one_line() -> None:
    # Prefix and suffix trimming must not count the same line twice.
    before = "a\nb\nb\nc\n"
    after = "a\nb\nb\nb\nc\n"
    ranges = changed_lines(before, after)
    assert len(ranges) == 1 and ranges[0][1] - ranges[0][0] == 0
    assert 2 <= ranges[0][0] <= 4


def test_a_repeated_line_added_at_the_end() -> None:
    assert changed_lines("x\n", "x\nx\n") == [(2, 2)]
    assert changed_lines("x\nx\n", "x\n") == [(1, 1)]


def test_two_edits_with_one_unchanged_line_between_are_two_ranges() -> None:
    after = TEN.replace("line 3\n", "3!\n").replace("line 5\n", "5!\n")
    assert changed_lines(TEN, after) == [(3, 3), (5, 5)]


def test_two_adjacent_edits_are_one_range() -> None:
    after = TEN.replace("line 3\n", "3!\n").replace("line 4\n", "4!\n")
    assert changed_lines(TEN, after) == [(3, 4)]


def test_identical_texts_have_no_changed_lines() -> None:
    assert changed_lines(TEN, TEN) == []
    assert changed_lines("", "") == []


# -- created files --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "lines"),
    [("a\nb\nc\n", [[1, 3]]), ("a\nb\nc", [[1, 3]]), ("one line\n", [[1, 1]]), ("x", [[1, 1]])],
)
def test_a_new_file_covers_its_lines_whether_or_not_it_ends_with_a_newline(
    store: Store, content: str, lines: list[list[int]]
) -> None:
    row = evolution.record_change(
        store, "new.py", actor="agent", session_id="s", before="", after=content, now=1.0
    )
    assert row is not None and row["change"] == "created"
    assert row["lines"] == lines
    assert row["line_count"] == lines[0][1]


# -- attribution: an agent's write against the user's save --------------------------------------


def _watcher_then_hook(store: Store, workspace: Path, gap: float) -> dict[str, object] | None:
    (workspace / "w.py").write_text(TEN)
    seen = evolution.record_change(store, "w.py", actor="external", now=1000.0)
    assert seen is not None and seen["actor"] == "external"
    return evolution.record_change(
        store, "w.py", actor="agent", session_id="S1", after=TEN, now=1000.0 + gap
    )


def test_a_hook_within_the_window_takes_the_watchers_row(store: Store, workspace: Path) -> None:
    claimed = _watcher_then_hook(store, workspace, ATTRIBUTION_SECONDS)
    assert claimed is not None
    assert (claimed["actor"], claimed["session_id"]) == ("agent", "S1")
    history = evolution.history(store, "w.py")
    assert [(h["actor"], h["session_id"]) for h in history] == [("agent", "S1")]


def test_a_hook_just_past_the_window_leaves_the_external_row(store: Store, workspace: Path) -> None:
    assert _watcher_then_hook(store, workspace, ATTRIBUTION_SECONDS + 1) is None
    history = evolution.history(store, "w.py")
    assert [(h["actor"], h["session_id"]) for h in history] == [("external", None)]


def test_a_hook_long_after_leaves_the_external_row(store: Store, workspace: Path) -> None:
    assert _watcher_then_hook(store, workspace, 600.0) is None
    assert [h["actor"] for h in evolution.history(store, "w.py")] == ["external"]


def test_an_agent_reporting_the_users_editor_save_does_not_take_it(
    store: Store, workspace: Path
) -> None:
    saved = evolution.record_change(store, "e.py", actor="editor", before="", after=TEN, now=50.0)
    assert saved is not None
    again = evolution.record_change(
        store, "e.py", actor="agent", session_id="S1", after=TEN, now=52.0
    )
    assert again is None
    assert [(h["actor"], h["session_id"]) for h in evolution.history(store, "e.py")] == [
        ("editor", None)
    ]


def test_an_editor_reloading_a_file_an_agent_wrote_leaves_the_agent_the_credit(
    store: Store, workspace: Path
) -> None:
    wrote = evolution.record_change(
        store, "r.py", actor="agent", session_id="S2", before="", after=TEN, now=50.0
    )
    assert wrote is not None
    assert evolution.record_change(store, "r.py", actor="editor", after=TEN, now=51.0) is None
    assert [h["actor"] for h in evolution.history(store, "r.py")] == ["agent"]


def test_a_hook_reporting_different_content_is_a_change_of_its_own(
    store: Store, workspace: Path
) -> None:
    (workspace / "d.py").write_text(TEN)
    assert evolution.record_change(store, "d.py", actor="external", now=10.0) is not None
    changed = TEN.replace("line 2\n", "two\n")
    row = evolution.record_change(
        store, "d.py", actor="agent", session_id="S3", before=TEN, after=changed, now=11.0
    )
    assert row is not None and row["actor"] == "agent" and row["lines"] == [[2, 2]]
    assert [h["actor"] for h in evolution.history(store, "d.py")] == ["agent", "external"]


def test_describe_names_the_ranges_and_who(store: Store) -> None:
    row = evolution.record_change(
        store,
        "f.py",
        actor="agent",
        session_id="S9",
        before=TEN,
        after=TEN.replace("line 2\n", "2\n").replace("line 7\n", "7\n").replace("line 8\n", "8\n"),
        now=5.0,
    )
    assert row is not None
    line = evolution.describe(row)
    assert "f.py lines 2,7-8" in line and line.endswith("by agent (S9)")
