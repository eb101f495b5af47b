"""Context snapshots: git state, open documents, retention, restore plans that change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import config, limits, snapshots
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store
from tests.conftest import git

NOW = 1_800_000_000.0


@pytest.fixture
def repo(workspace: Path) -> Path:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.py").write_text("a\n")
    (workspace / "b.py").write_text("b\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "first")
    return workspace


def test_a_snapshot_in_a_repository_holds_branch_head_dirty_files_and_stashes(
    store: Store, repo: Path
) -> None:
    (repo / "a.py").write_text("stashed\n")
    git(repo, "stash", "-q")
    (repo / "b.py").write_text("changed\n")
    (repo / "new.txt").write_text("untracked\n")
    head = git(repo, "rev-parse", "HEAD").strip()
    doc = {
        "path": str(repo / "b.py"),
        "cursor": {"line": 0, "character": 3},
        "selection": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 3}},
    }
    snap = snapshots.capture(
        store,
        note="before refactor",
        open_documents=[doc],
        session_id="sess-1",
        agent="claude-code",
        now=NOW,
    )
    assert snap["id"].startswith("SN-")
    assert (snap["is_repo"], snap["branch"], snap["head"]) == (True, "main", head)
    assert snap["dirty_files"] == ["b.py", "new.txt"]
    assert snap["stash_count"] == 1
    assert snap["open_documents"] == [
        {
            "path": "b.py",
            "cursor": {"line": 0, "character": 3},
            "selection": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 3}},
            "dirty": False,
        }
    ]
    assert (snap["session_id"], snap["agent"], snap["note"]) == (
        "sess-1",
        "claude-code",
        "before refactor",
    )
    assert snapshots.get(store, snap["id"]) == snap
    assert [s["id"] for s in snapshots.list_snapshots(store)] == [snap["id"]]


def test_a_folder_that_is_not_a_repository_still_gets_a_snapshot(store: Store) -> None:
    snap = snapshots.capture(store, note="plain", now=NOW)
    assert (snap["is_repo"], snap["branch"], snap["head"], snap["dirty_files"]) == (
        False,
        None,
        None,
        [],
    )


def test_restore_plan_warns_and_changes_nothing(store: Store, repo: Path) -> None:
    snap = snapshots.capture(
        store,
        open_documents=[{"path": "a.py", "cursor": {"line": 0, "character": 1}}, {"path": "b.py"}],
        now=NOW,
    )
    git(repo, "checkout", "-q", "-b", "elsewhere")
    (repo / "a.py").write_text("dirty now\n")
    (repo / "b.py").unlink()
    plan = snapshots.restore_plan(store, snap["id"])
    warnings = " | ".join(plan["warnings"])
    assert "branch differs" in warnings and "main" in warnings and "elsewhere" in warnings
    assert "dirty" in warnings and "b.py is gone" in warnings
    assert [(d["path"], d["exists"]) for d in plan["documents"]] == [
        ("a.py", True),
        ("b.py", False),
    ]
    assert plan["documents"][0]["selection"]["start"] == {"line": 0, "character": 1}
    # Nothing was checked out or stashed.
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "elsewhere"
    assert (repo / "a.py").read_text() == "dirty now\n"
    assert git(repo, "stash", "list") == ""


def test_bad_documents_and_unknown_ids_are_clear_errors(store: Store) -> None:
    with pytest.raises(UsageError, match="outside the workspace"):
        snapshots.capture(store, open_documents=[{"path": "/etc/hosts"}])
    with pytest.raises(UsageError, match="cursor"):
        snapshots.capture(store, open_documents=[{"path": "a.py", "cursor": {"line": -1}}])
    with pytest.raises(NotFoundError, match="no snapshot"):
        snapshots.get(store, "S-00000000")
    assert snapshots.list_snapshots(store) == []


def test_retention_keeps_fifty_and_seven_days_by_default(store: Store) -> None:
    settings = config.Settings()
    for n in range(60):
        snapshots.capture(store, note=f"n{n}", now=NOW - 3600 * n)
    old = snapshots.capture(store, note="old", now=NOW - 8 * 86400)
    limits.enforce(store, settings, now=NOW)
    kept = snapshots.list_snapshots(store)
    assert len(kept) == 50
    assert old["id"] not in {s["id"] for s in kept}
    assert kept[0]["note"] == "n0"


def test_capture_with_settings_applies_retention(store: Store, workspace: Path) -> None:
    settings = config.load(workspace, overrides={"snapshots": {"max_count": 2}})
    for n in range(4):
        snapshots.capture(store, note=str(n), settings=settings, now=NOW + n)
    assert [s["note"] for s in snapshots.list_snapshots(store)] == ["3", "2"]


def test_the_active_agent_session_is_captured_and_drift_since_it_is_reported(
    store: Store, workspace: Path
) -> None:
    from memory_core import drift, evolution

    sessions = pytest.importorskip("memory_core.sessions")
    sessions.start(store, session_id="sess-7", agent="claude-code", now=NOW - 600)
    snap = snapshots.capture(store, now=NOW - 500)
    assert (snap["session_id"], snap["agent"]) == ("sess-7", "claude-code")
    (workspace / "mine.py").write_text("agent\n")
    evolution.record_change(store, "mine.py", actor="agent", session_id="sess-7", now=NOW - 400)
    assert drift.since_session(store, now=NOW) == []
    (workspace / "theirs.py").write_text("someone else\n")
    evolution.record_change(store, "theirs.py", actor="external", now=NOW - 300)
    items = drift.since_session(store, now=NOW)
    assert [(i.severity, i.details["files"]) for i in items] == [("low", ["theirs.py"])]
    assert "since session sess-7 began" in items[0].summary
