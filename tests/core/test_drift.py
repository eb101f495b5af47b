"""Drift: overlapping edits, unsaved buffers, stale citations, the workspace since a snapshot."""

from __future__ import annotations

from pathlib import Path

from memory_core import config, drift, evolution, snapshots
from memory_core.drift import Citation
from memory_core.store import Store
from tests.conftest import git

TEXT = "".join(f"line {n}\n" for n in range(1, 41))
NOW = 1_800_000_000.0


def record(
    store: Store,
    actor: str,
    lines: list[tuple[int, int]],
    at: float,
    session: str | None = None,
    path: str = "a.py",
) -> None:
    (store.root / path).write_text(f"{actor} {at} {lines}\n")
    evolution.record_change(store, path, actor=actor, session_id=session, lines=lines, now=at)


def test_overlapping_lines_by_two_actors_are_drift_and_others_are_not(store: Store) -> None:
    record(store, "editor", [(10, 12)], NOW - 60)
    record(store, "external", [(12, 14)], NOW - 30)
    record(store, "external", [(30, 31)], NOW - 20)  # the same actor again, elsewhere
    items = drift.overlaps(store, "a.py", window_minutes=30, now=NOW)
    assert [(i.kind, i.lines) for i in items] == [("overlap", (12, 12))]
    who = [c["actor"] for c in items[0].details["changes"]]
    assert who == ["editor", "external"]
    # The actors in words, not as stored.
    assert "you (in the editor)" in items[0].summary and "another program" in items[0].summary


def test_the_same_actor_never_drifts_with_itself_but_two_agent_sessions_do(store: Store) -> None:
    record(store, "editor", [(1, 5)], NOW - 50)
    record(store, "editor", [(1, 5)], NOW - 40)
    assert drift.overlaps(store, "a.py", window_minutes=30, now=NOW) == []
    record(store, "agent", [(3, 3)], NOW - 30, session="s1", path="b.py")
    record(store, "agent", [(3, 3)], NOW - 20, session="s2", path="b.py")
    assert len(drift.overlaps(store, "b.py", window_minutes=30, now=NOW)) == 1


def test_edits_outside_the_window_are_not_drift(store: Store) -> None:
    record(store, "editor", [(1, 5)], NOW - 3600)
    record(store, "external", [(1, 5)], NOW - 10)
    assert drift.overlaps(store, "a.py", window_minutes=30, now=NOW) == []


def test_overlap_severity_rises_with_overlap_and_closeness() -> None:
    window = 1800.0
    assert drift.overlap_severity(1, 1500, window) == "low"
    assert drift.overlap_severity(1, 60, window) == "medium"
    assert drift.overlap_severity(5, 60, window) == "high"
    assert drift.overlap_severity(12, 60, window) == "critical"
    assert drift.overlap_severity(12, 1500, window) == "medium"


def test_every_severity_is_reachable_through_the_store(store: Store) -> None:
    cases = {
        "low": ((1, 1), 1500),
        "medium": ((1, 1), 60),
        "high": ((1, 5), 60),
        "critical": ((1, 12), 60),
    }
    for severity, (lines, gap) in cases.items():
        path = f"{severity}.py"
        record(store, "editor", [lines], NOW - gap - 10, path=path)
        record(store, "agent", [lines], NOW - 10, session="s", path=path)
        assert [i.severity for i in drift.overlaps(store, path, window_minutes=30, now=NOW)] == [
            severity
        ]


def test_unsaved_conflict_severity() -> None:
    assert (
        drift.unsaved_conflict("a.py", disk_lines=[(3, 4)], unsaved_lines=[(10, 10)]).severity
        == "medium"
    )
    assert (
        drift.unsaved_conflict("a.py", disk_lines=[(3, 4)], unsaved_lines=[(4, 6)]).severity
        == "high"
    )
    gone = drift.unsaved_conflict("a.py", disk_lines=None, unsaved_lines=[(1, 1)], deleted=True)
    assert gone.severity == "critical" and gone.lines == (1, 1)


def test_anchor_ignores_indentation_and_blank_lines_but_not_code() -> None:
    lines = ["def f():", "    return 1"]
    mark = drift.anchor(lines)
    assert not drift.is_stale(mark, ["def f():", "", "        return 1   "])
    assert drift.is_stale(mark, ["def f():", "    return 2"])
    assert drift.anchor("def f():\n    return 1\n") == mark


def test_stale_citations_moved_changed_shortened_and_gone(store: Store) -> None:
    code = "a\nb\ndef f():\n    return 1\nc\n"
    (store.root / "m.py").write_text(code)
    cite = Citation(
        owner="G-12345678",
        path="m.py",
        start=3,
        end=4,
        anchor=drift.anchor(["def f():", "    return 1"]),
        label="f",
    )
    assert drift.check_citation(store.root, cite) is None
    (store.root / "m.py").write_text("new\nlines\nhere\n" + code)
    moved = drift.check_citation(store.root, cite)
    assert moved is not None and (moved.severity, moved.lines) == ("low", (6, 7))
    (store.root / "m.py").write_text(code.replace("return 1", "return 2"))
    changed = drift.check_citation(store.root, cite)
    assert changed is not None and changed.severity == "medium" and changed.kind == "stale-citation"
    (store.root / "m.py").write_text("a\n")
    assert drift.check_citation(store.root, cite).severity == "high"  # type: ignore[union-attr]
    (store.root / "m.py").unlink()
    assert drift.check_citation(store.root, cite).severity == "critical"  # type: ignore[union-attr]
    assert [i.severity for i in drift.stale_citations(store, [cite])] == ["critical"]


def test_workspace_drift_since_a_snapshot(store: Store, workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.py").write_text("one\n")
    (workspace / "gone.py").write_text("soon gone\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "one")
    snap = snapshots.capture(store, open_documents=[{"path": "gone.py"}], now=NOW - 100)
    assert drift.since_snapshot(store, snap["id"], now=NOW) == []

    (workspace / "a.py").write_text("two\n")
    git(workspace, "commit", "-q", "-am", "two")
    (workspace / "gone.py").unlink()
    git(workspace, "checkout", "-q", "-b", "other")
    (workspace / "new.py").write_text("x\n")
    evolution.record_change(store, "new.py", actor="agent", session_id="s", now=NOW - 10)
    items = drift.since_snapshot(store, snap["id"], now=NOW)
    by_severity = {i.severity: i.summary for i in items}
    assert "branch switched from main to other" in by_severity["high"]
    assert "gone.py" in by_severity["medium"]
    assert "low" in by_severity
    detected = drift.detect(store, config.Settings(), now=NOW)
    assert detected[0].severity == "high"  # sorted by severity, most severe first


def test_rewritten_history_since_a_snapshot_is_critical(store: Store, workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.py").write_text("one\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "one")
    (workspace / "a.py").write_text("two\n")
    git(workspace, "commit", "-q", "-am", "two")
    snap = snapshots.capture(store, now=NOW - 100)
    git(workspace, "reset", "-q", "--hard", "HEAD~1")
    (workspace / "a.py").write_text("three\n")
    git(workspace, "commit", "-q", "-am", "three")
    items = drift.since_snapshot(store, snap["id"], now=NOW)
    assert [i.severity for i in items] == ["critical"]
    assert "history rewritten" in items[0].summary


def test_a_gotcha_whose_anchored_code_changed_is_a_stale_citation(store: Store) -> None:
    import pytest

    gotchas = pytest.importorskip("memory_core.gotchas")
    records = pytest.importorskip("memory_core.gotchas.records")
    (store.root / "db.py").write_text("import sqlite3\nconn = sqlite3.connect(path, timeout=1)\n")
    anchor_type = records.Anchor
    gotcha = gotchas.add(
        store,
        "sqlite timeout too short",
        anchors=[
            anchor_type(
                path="db.py", line=1, end_line=1, text="conn = sqlite3.connect(path, timeout=1)"
            )
        ],
    )
    assert [
        i for i in drift.detect(store, config.Settings(), now=NOW) if i.kind == "stale-citation"
    ] == []
    (store.root / "db.py").write_text("import sqlite3\nconn = sqlite3.connect(path, timeout=30)\n")
    stale = [
        i for i in drift.detect(store, config.Settings(), now=NOW) if i.kind == "stale-citation"
    ]
    assert [(i.severity, i.details["owner"], i.lines) for i in stale] == [
        ("medium", gotcha.id, (2, 2))
    ]
