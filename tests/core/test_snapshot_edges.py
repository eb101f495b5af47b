"""Context snapshots at their edges (issue 31): each restore warning on its own, positions and
selections as editors send them, the one-line description, the working directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memory_core import session_state, sessions, snapshots
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store
from tests.conftest import git

NOW = 1_800_000_000.0


@pytest.fixture
def repo(workspace: Path) -> Path:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.py").write_text("a\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "first")
    return workspace


def test_a_document_without_a_selection_has_it_at_its_cursor(store: Store) -> None:
    doc = snapshots.normalise_document(
        store, {"path": "a.py", "cursor": {"line": 3, "character": 7}}
    )
    assert doc == {
        "path": "a.py",
        "cursor": {"line": 3, "character": 7},
        "selection": {"start": {"line": 3, "character": 7}, "end": {"line": 3, "character": 7}},
        "dirty": False,
    }
    bare = snapshots.normalise_document(store, {"path": "b.py", "dirty": 1})
    assert bare["cursor"] == {"line": 0, "character": 0} and bare["dirty"] is True


def test_a_selection_is_kept_and_line_zero_is_a_line(store: Store) -> None:
    doc = snapshots.normalise_document(
        store,
        {
            "path": str(store.root / "src" / "a.py"),
            "cursor": {"line": 0, "character": 0},
            "selection": {"start": {"line": 0, "character": 0}, "end": {"line": 2}},
        },
    )
    assert doc["path"] == "src/a.py"
    assert doc["selection"] == {
        "start": {"line": 0, "character": 0},
        "end": {"line": 2, "character": 0},
    }


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"path": 3}, "needs a path"),
        ("a.py", "needs a path"),
        ({"path": "a.py", "cursor": [1, 2]}, "cursor must be an object"),
        ({"path": "a.py", "cursor": {"line": "x"}}, "whole-number line and character"),
        ({"path": "a.py", "cursor": {"line": -1}}, "must not be negative"),
        ({"path": "a.py", "cursor": {"line": 0, "character": -1}}, "must not be negative"),
        ({"path": "a.py", "selection": "all"}, "selection must be an object"),
        ({"path": "a.py", "selection": {"start": None}}, "selection start must be an object"),
        ({"path": "a.py", "selection": {"start": {}, "end": 5}}, "selection end must be"),
        ({"path": "../out.py"}, "outside the workspace"),
    ],
)
def test_bad_documents_say_what_is_wrong(store: Store, document: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        snapshots.normalise_document(store, document)  # type: ignore[arg-type]


def test_the_working_directory_is_kept_relative_when_inside(
    workspace: Path, tmp_path: Path
) -> None:
    assert snapshots.working_directory_of(workspace, None) == "."
    assert snapshots.working_directory_of(workspace, workspace) == "."
    assert snapshots.working_directory_of(workspace, workspace / "src" / "lib") == "src/lib"
    assert snapshots.working_directory_of(workspace, tmp_path / "x") == str(tmp_path / "x")


def test_restore_warns_of_another_branch_but_not_of_head_then(store: Store, repo: Path) -> None:
    snap = snapshots.capture(store, now=NOW)
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "a.py").write_text("changed\n")
    git(repo, "commit", "-qam", "second")
    plan = snapshots.restore_plan(store, snap["id"])
    assert plan["warnings"] == [
        "branch differs: the snapshot was on main, the workspace is on feature "
        "(engram does not check out)"
    ]


def test_restore_warns_when_head_moved_on_the_same_branch(store: Store, repo: Path) -> None:
    snap = snapshots.capture(store, now=NOW)
    (repo / "a.py").write_text("changed\n")
    git(repo, "commit", "-qam", "second")
    now_head = git(repo, "rev-parse", "HEAD").strip()
    plan = snapshots.restore_plan(store, snap["id"])
    assert plan["warnings"] == [f"HEAD moved: {snap['head'][:8]} then, {now_head[:8]} now"]


def test_restore_warns_of_a_detached_head(store: Store, repo: Path) -> None:
    snap = snapshots.capture(store, now=NOW)
    git(repo, "checkout", "-q", "--detach")
    plan = snapshots.restore_plan(store, snap["id"])
    assert plan["warnings"] == [
        "branch differs: the snapshot was on main, the workspace is on a detached HEAD "
        "(engram does not check out)"
    ]


def test_restore_warns_when_the_repository_is_gone_and_of_gone_files(
    store: Store, repo: Path
) -> None:
    (repo / "src").mkdir()
    snap = snapshots.capture(
        store,
        open_documents=[{"path": "a.py"}, {"path": "gone.py"}],
        working_directory=repo / "src",
        now=NOW,
    )
    shutil.rmtree(repo / ".git")
    shutil.rmtree(repo / "src")
    plan = snapshots.restore_plan(store, snap["id"])
    assert plan["warnings"] == [
        "the workspace is no longer a git repository",
        "gone.py is gone",
        "the working directory src is gone",
    ]
    assert [(d["path"], d["exists"]) for d in plan["documents"]] == [
        ("a.py", True),
        ("gone.py", False),
    ]
    assert plan["documents"][0]["absolute_path"] == str(repo / "a.py")


def test_restore_warns_of_a_dirty_tree_with_its_count(store: Store, repo: Path) -> None:
    snap = snapshots.capture(store, now=NOW)
    (repo / "a.py").write_text("dirty\n")
    (repo / "new.py").write_text("n\n")
    plan = snapshots.restore_plan(store, snap["id"])
    assert plan["warnings"] == ["the working tree is dirty (2 file(s) with uncommitted changes)"]


def test_a_snapshot_outside_a_repository_gives_no_git_warning(store: Store) -> None:
    snap = snapshots.capture(store, now=NOW)
    assert snapshots.restore_plan(store, snap["id"])["warnings"] == []
    assert snap["label"] == "snapshot at 2027-01-15T08:00:00Z"


def test_the_description_says_where_and_what_in_one_line(store: Store, repo: Path) -> None:
    sessions.start(store, session_id="s1", agent="claude-code", now=NOW)
    (repo / "a.py").write_text("dirty\n")
    (repo / "src").mkdir()
    snap = snapshots.capture(
        store,
        note="before the refactor",
        open_documents=[{"path": "a.py"}],
        story_id="MIS-1",
        subtask="2",
        working_directory=repo / "src",
        now=NOW,
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    assert snapshots.describe(snap) == (
        f"{snap['id']}  2027-01-15T08:00:00Z  main@{head[:8]}  "
        "1 dirty, 1 open, session s1, in src, story MIS-1 / 2  before the refactor"
    )
    assert snap["label"] == "before the refactor"


def test_a_bare_description(store: Store) -> None:
    snap = snapshots.capture(store, now=NOW)
    assert snapshots.describe(snap) == f"{snap['id']}  2027-01-15T08:00:00Z  not a git repository"
    detached = {**snap, "is_repo": True, "branch": None, "head": None, "stash_count": 2}
    assert snapshots.describe(detached).endswith("  detached@no commits  2 stashed")
    story = {**snap, "story_id": "MIS-2", "subtask": None}
    assert snapshots.describe(story).endswith("  story MIS-2")


def test_a_closed_session_is_not_captured_as_active(store: Store) -> None:
    sessions.start(store, session_id="s1", now=NOW)
    assert snapshots.active_session(store) == {
        "id": "s1",
        "agent": "editor",
        "started_ts": NOW,
    }
    sessions.close(store, "s1", now=NOW + 5)
    assert snapshots.active_session(store) is None
    assert snapshots.capture(store, now=NOW + 10)["session_id"] is None


def test_snapshots_are_listed_newest_first_and_by_limit(store: Store) -> None:
    first = snapshots.capture(store, now=NOW)
    second = snapshots.capture(store, now=NOW + 1)
    assert [s["id"] for s in snapshots.list_snapshots(store)] == [second["id"], first["id"]]
    assert [s["id"] for s in snapshots.list_snapshots(store, limit=1)] == [second["id"]]
    assert snapshots.latest(store) == second
    assert first["id"].startswith("SN-") and len(first["id"]) == 11


def test_a_story_given_keeps_the_sessions_subtask_and_overrides_its_story(store: Store) -> None:
    sessions.start(store, session_id="s1", now=NOW)
    session_state.update(store, "s1", story="MIS-1", subtask="3", now=NOW)
    snap = snapshots.capture(store, session_id="s1", story_id="MIS-9", now=NOW + 1)
    assert (snap["story_id"], snap["subtask"]) == ("MIS-9", "3")


def test_an_unknown_snapshot_says_where_the_ids_are(store: Store) -> None:
    with pytest.raises(NotFoundError) as caught:
        snapshots.get(store, "SN-nope")
    assert caught.value.hint == "see `engram snapshot list` for the ids"
