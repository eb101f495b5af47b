"""What `engram doctor` tells a user (issue 31): one line per problem still present, none for
what was repaired, the note about content awaiting clean-up, each table's area."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import doctor


def _report(**parts: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "integrity": {"ok": True, "messages": []},
        "indexes": {"memories_fts": "ok", "search_fts": "rebuilt"},
        "orphaned_rows": {"rows": 0, "by_table": {}, "moved_to": None},
        "checkpoint_content": {
            "orphaned": 0,
            "orphaned_bytes": 0,
            "freed_bytes": 0,
            "awaiting_collection": {"items": 0, "bytes": 0, "collected_after_removals": 0},
        },
        "annotations": {"stale": [], "resynced": []},
        "wrong_types": {},
        "files": {"orphaned_exports": [], "stale_temp_files": [], "removed": []},
    }
    report.update(parts)
    return report


def test_a_healthy_report_has_no_problems_and_no_notes() -> None:
    assert doctor.problems_of(_report()) == []
    assert doctor.notes_of(_report()) == []


def test_a_damaged_file_names_its_first_three_messages_and_the_way_out() -> None:
    report = _report(integrity={"ok": False, "messages": ["m1", "m2", "m3", "m4"]})
    assert doctor.problems_of(report) == [
        "the database file is damaged: m1; m2; m3 (export what still reads with "
        "`engram export`, then start a fresh store)"
    ]


def test_a_broken_index_is_a_problem_until_rebuilt() -> None:
    report = _report(indexes={"memories_fts": "missing rows", "search_fts": "rebuilt"})
    assert doctor.problems_of(report) == [
        "full-text index memories_fts: missing rows (`engram doctor --repair` rebuilds it)"
    ]


def test_orphaned_rows_are_a_problem_until_moved_aside() -> None:
    orphans = {"rows": 3, "by_table": {"memory_tags": 2, "session_turns": 1}, "moved_to": None}
    assert doctor.problems_of(_report(orphaned_rows=orphans)) == [
        "3 orphaned row(s): memory_tags 2, session_turns 1 (`--repair` moves them aside)"
    ]
    moved = {**orphans, "moved_to": "deleted_rows"}
    assert doctor.problems_of(_report(orphaned_rows=moved)) == []


def test_unreferenced_checkpoint_content_is_a_problem_until_freed() -> None:
    content = {
        "orphaned": 4,
        "orphaned_bytes": 123456,
        "freed_bytes": 0,
        "awaiting_collection": {"items": 0, "bytes": 0, "collected_after_removals": 0},
    }
    assert doctor.problems_of(_report(checkpoint_content=content)) == [
        "4 checkpoint blob(s)/tree(s) no checkpoint references and no clean-up is scheduled"
        " for, 123,456 bytes (`--repair` deletes them)"
    ]
    freed = {**content, "freed_bytes": 123456}
    assert doctor.problems_of(_report(checkpoint_content=freed)) == []


def test_stale_annotation_anchors_are_a_problem_until_resynced() -> None:
    stale = {"stale": ["a.py", "b.py"], "resynced": []}
    assert doctor.problems_of(_report(annotations=stale)) == [
        "2 file(s) whose gotcha comments are stored with an old anchor, so drift reports them"
        " as changed (`--repair` re-reads them)"
    ]
    assert doctor.problems_of(_report(annotations={**stale, "resynced": ["a.py"]})) == []


def test_values_of_the_wrong_type_name_at_most_five_columns() -> None:
    wrong = {f"t.c{n}": n + 1 for n in range(6)}
    (line,) = doctor.problems_of(_report(wrong_types=wrong))
    assert line.startswith(
        "21 value(s) of the wrong type, which commands reading them fail on: "
        "t.c0 1, t.c1 2, t.c2 3, t.c3 4, t.c4 5 (an import"
    )
    assert "t.c5" not in line


def test_stray_files_are_a_problem_until_removed() -> None:
    files = {"orphaned_exports": ["x.md"], "stale_temp_files": [".a.tmp", ".b.tmp"], "removed": []}
    assert doctor.problems_of(_report(files=files)) == [
        "3 stray file(s) in .engram (`--repair` removes them)"
    ]
    assert doctor.problems_of(_report(files={**files, "removed": ["x.md"]})) == []


@pytest.mark.parametrize(
    ("removals", "when"),
    [
        (0, "the next checkpoint collects them"),
        (
            2,
            "they go once retention removes 2 more checkpoint(s) (at `checkpoints.max_count`, "
            "each new checkpoint removes one)",
        ),
    ],
)
def test_content_awaiting_clean_up_is_a_note_saying_when_it_goes(removals: int, when: str) -> None:
    content = {
        "orphaned": 0,
        "orphaned_bytes": 0,
        "freed_bytes": 0,
        "awaiting_collection": {
            "items": 5,
            "bytes": 2048,
            "collected_after_removals": removals,
        },
    }
    assert doctor.notes_of(_report(checkpoint_content=content)) == [
        f"5 checkpoint blob(s)/tree(s), 2,048 bytes, wait for the next scheduled clean-up: "
        f"{when}; `engram doctor --repair` collects them now"
    ]
    assert doctor.notes_of(_report(checkpoint_content={**content, "freed_bytes": 10})) == []


@pytest.mark.parametrize(
    ("table", "area"),
    [
        ("memories", "memory"),
        ("memory_tags", "memory"),
        ("saved_sessions", "sessions"),
        ("session_turns", "sessions"),
        ("digests", "agents"),
        ("error_occurrences", "gotchas"),
        ("events", "evolution and timeline"),
        ("snapshots", "snapshots"),
        ("checkpoint_blobs", "checkpoints"),
        ("search_docs", "search index"),
        ("deleted_rows", "deleted (recoverable)"),
        ("archived_rows", "archived"),
        ("schema_version", "other"),
    ],
)
def test_each_table_belongs_to_the_area_a_person_knows(table: str, area: str) -> None:
    assert doctor.area_of(table) == area
