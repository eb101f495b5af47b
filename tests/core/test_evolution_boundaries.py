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


# -- what the timeline and `engram evolution` show of a change ----------------------------------


def test_a_changed_last_line_is_found_though_the_lines_before_it_match() -> None:
    assert changed_lines("a\nb\n", "a\nc\n") == [(2, 2)]
    assert changed_lines("a\nb\nc\n", "x\nb\nc\n") == [(1, 1)]


def test_a_change_too_big_to_align_is_one_block_of_the_new_text() -> None:
    before = "".join(f"old {n}\n" for n in range(2100))
    after = "keep\n" + "".join(f"new {n}\n" for n in range(2050))
    assert changed_lines("keep\n" + before, after) == [(2, 2051)]


def test_a_change_whose_lines_are_unknown_stores_none_and_drift_reads_it(
    store: Store, workspace: Path
) -> None:
    from memory_core import drift

    (workspace / "u.py").write_text(TEN)
    evolution.record_change(store, "u.py", actor="external", now=1.0)
    (workspace / "u.py").write_text(TEN + "more\n")
    row = evolution.record_change(store, "u.py", actor="agent", session_id="S", now=2.0)
    assert row is not None and row["lines"] is None and row["line_count"] == 0
    assert store.query_one("SELECT lines FROM file_changes WHERE id = ?", (row["id"],))[0] is None
    assert drift.overlaps(store, "u.py", window_minutes=10, now=3.0) == []


def test_the_data_of_a_change_is_kept_with_secrets_redacted(store: Store) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    result = evolution.record_batch(
        store,
        [
            evolution.Change(
                "k.py", "agent", "S", before="", after="x\n", data={"tool": "Write", "env": token}
            )
        ],
        now=1.0,
        check_git=False,
    )
    (row,) = result.recorded
    assert row["data"]["tool"] == "Write"
    assert token not in str(row["data"]) and "ghp_" not in str(row["data"]["env"])
    assert evolution.history(store, "k.py")[0]["data"] == row["data"]


def test_an_unknown_actor_is_refused_with_the_actors_to_use(store: Store) -> None:
    from memory_core.errors import UsageError

    with pytest.raises(UsageError) as refused:
        evolution.record_change(store, "a.py", actor="robot", after="x", now=1.0)
    assert refused.value.hint == "use editor, agent or external"


@pytest.mark.parametrize(
    ("rel", "recorded"),
    [
        ("src/app.py", True),
        (".git/objects/ab/cdef", False),
        (".git", False),
        (".engram/engram.db", False),
        ("src/.git-keep", True),
        ("docs/.engram-notes.md", True),
        ("src/app.py.engram-rollback-1a2b", False),
        ("", False),
        (".", False),
    ],
)
def test_the_store_gits_folder_and_rollback_files_are_never_recorded(
    rel: str, recorded: bool
) -> None:
    assert evolution.is_recordable(rel) is recorded


def test_describe_shows_six_ranges_then_says_there_are_more(store: Store) -> None:
    ranges = [(n * 3, n * 3) for n in range(1, 8)]
    row = evolution.record_change(
        store, "g.py", actor="editor", before="a", after="b", lines=ranges, now=5.0
    )
    assert row is not None
    assert " lines 3,6,9,12,15,18...  by editor" in evolution.describe(row)


def test_describe_of_a_deleted_file_names_no_lines(store: Store) -> None:
    evolution.record_change(store, "h.py", actor="editor", before="", after="x\n", now=1.0)
    gone = evolution.record_change(store, "h.py", actor="external", change="deleted", now=2.0)
    assert gone is not None
    line = evolution.describe(gone)
    assert line.endswith("deleted  h.py  by external") and "lines" not in line


def test_most_active_counts_changes_lines_and_actors(store: Store) -> None:
    evolution.record_change(store, "m.py", actor="editor", before=TEN, after=TEN + "x\n", now=1.0)
    evolution.record_change(
        store,
        "m.py",
        actor="agent",
        session_id="S7",
        before=TEN + "x\n",
        after=TEN.replace("line 1\n", "one\n") + "x\n",
        now=2.0,
    )
    (entry,) = evolution.most_active(store)
    assert entry["changes"] == 2 and entry["lines_touched"] == 2
    assert (entry["last_actor"], entry["last_session_id"]) == ("agent", "S7")
    assert entry["actors"] == {"editor": 1, "agent": 1, "external": 0}


def test_git_moves_are_described_with_both_commits(store: Store, workspace: Path) -> None:
    from tests.conftest import git

    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.txt").write_text("1\n")
    git(workspace, "add", "a.txt")
    git(workspace, "commit", "-qm", "one")
    first = git(workspace, "rev-parse", "HEAD").strip()
    assert evolution.observe_git(store, now=10.0) is None  # the first look is a baseline
    git(workspace, "commit", "-q", "--allow-empty", "-m", "two")
    second = git(workspace, "rev-parse", "HEAD").strip()
    event = evolution.observe_git(store, now=20.0)
    assert event is not None
    data = event["data"]
    assert (data["operation"], data["from_commit"], data["to_commit"]) == (
        "head-moved",
        first,
        second,
    )
    assert data["summary"] == f"git HEAD moved on main: {first[:8]} -> {second[:8]}"
    move = {"operation": "commit", "to_branch": "main", "from_commit": None, "to_commit": second}
    assert evolution._describe_git(move) == f"git HEAD moved on main: nothing -> {second[:8]}"


def test_files_git_wrote_include_those_head_no_longer_has(workspace: Path) -> None:
    from tests.conftest import git

    git(workspace, "init", "-q", "-b", "main")
    (workspace / "kept.txt").write_text("as committed\n")
    (workspace / "edited.txt").write_text("as committed\n")
    git(workspace, "add", ".")
    git(workspace, "commit", "-qm", "one")
    (workspace / "edited.txt").write_text("changed since\n")
    found = evolution.written_by_git(workspace, ["kept.txt", "edited.txt", "removed.txt"])
    assert found == {"kept.txt", "removed.txt"}
