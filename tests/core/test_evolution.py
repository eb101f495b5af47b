"""File evolution: actors, lines, hashes, attribution, bursts and git operations."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import evolution
from memory_core.errors import UsageError
from memory_core.evolution import Change
from memory_core.store import Store
from tests.conftest import git

TEXT = "".join(f"line {n}\n" for n in range(1, 21))


def test_a_change_records_actor_lines_hashes_and_size(store: Store, workspace: Path) -> None:
    after = TEXT.replace("line 5\n", "line five\n").replace("line 6\n", "line six\n")
    (workspace / "a.py").write_text(after)
    row = evolution.record_change(
        store, "a.py", actor="editor", before=TEXT, after=after, now=100.0
    )
    assert row is not None
    assert (row["actor"], row["change"], row["path"]) == ("editor", "modified", "a.py")
    assert row["lines"] == [[5, 6]]
    assert row["hash_before"] == evolution.content_hash(TEXT)
    assert row["hash_after"] == evolution.content_hash(after)
    assert row["size"] == len(after.encode())
    assert [h["id"] for h in evolution.history(store, "a.py")] == [row["id"]]


def test_an_agent_change_carries_its_session_and_the_next_change_chains_hashes(
    store: Store, workspace: Path
) -> None:
    first = evolution.record_change(
        store, "b.py", actor="agent", session_id="sess-1", before="", after=TEXT, now=1.0
    )
    assert first is not None and first["session_id"] == "sess-1" and first["change"] == "created"
    (workspace / "b.py").write_text(TEXT + "tail\n")
    second = evolution.record_change(store, "b.py", actor="external", now=2.0)
    assert second is not None
    assert second["hash_before"] == first["hash_after"]
    assert second["hash_after"] == evolution.content_hash(TEXT + "tail\n")


def test_the_same_content_seen_again_is_not_a_change(store: Store, workspace: Path) -> None:
    (workspace / "c.py").write_text(TEXT)
    assert evolution.record_change(store, "c.py", actor="external", now=1.0) is not None
    assert evolution.record_change(store, "c.py", actor="external", now=2.0) is None
    assert len(evolution.history(store, "c.py")) == 1


def test_a_hook_report_after_the_watcher_reattributes_the_external_row(
    store: Store, workspace: Path
) -> None:
    (workspace / "d.py").write_text(TEXT)
    seen = evolution.record_change(store, "d.py", actor="external", now=10.0)
    assert seen is not None
    claimed = evolution.record_change(
        store, "d.py", actor="agent", session_id="s9", after=TEXT, now=12.0
    )
    assert claimed is not None and claimed["id"] == seen["id"]
    history = evolution.history(store, "d.py")
    assert [(h["actor"], h["session_id"]) for h in history] == [("agent", "s9")]


def test_store_and_git_folders_are_never_recorded_and_outside_paths_refused(
    store: Store, workspace: Path
) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("x")
    assert evolution.record_change(store, ".git/config", actor="external") is None
    assert evolution.record_change(store, ".engram/engram.db", actor="external") is None
    with pytest.raises(UsageError, match="outside the workspace"):
        evolution.record_change(store, "/etc/passwd", actor="external")
    with pytest.raises(UsageError, match="unknown actor"):
        evolution.record_change(store, "x.py", actor="robot")


def test_delete_and_rename_are_recorded_once(store: Store, workspace: Path) -> None:
    (workspace / "old.py").write_text(TEXT)
    evolution.record_change(store, "old.py", actor="external", now=1.0)
    (workspace / "old.py").rename(workspace / "new.py")
    renamed = evolution.record_change(
        store, "new.py", actor="editor", change="renamed", old_path="old.py", now=2.0
    )
    assert renamed is not None and renamed["old_path"] == "old.py"
    # The watcher's view of the same rename (old deleted, new created) adds nothing.
    assert evolution.record_change(store, "old.py", actor="external", now=3.0) is None
    assert evolution.record_change(store, "new.py", actor="external", now=3.0) is None
    (workspace / "new.py").unlink()
    deleted = evolution.record_change(store, "new.py", actor="external", now=4.0)
    assert deleted is not None and deleted["change"] == "deleted" and deleted["hash_after"] is None
    assert [h["change"] for h in evolution.history(store, "old.py")] == ["renamed", "modified"]


def test_a_burst_is_one_transaction_and_most_active_ranks_files(
    store: Store, workspace: Path
) -> None:
    for n in range(30):
        (workspace / f"f{n}.txt").write_text(f"v{n}\n")
    result = evolution.record_batch(
        store, [Change(path=f"f{n}.txt", actor="external") for n in range(30)], now=5.0
    )
    assert len(result.recorded) == 30
    for version in range(3):
        (workspace / "f7.txt").write_text(f"again {version}\n")
        evolution.record_change(store, "f7.txt", actor="agent", session_id="s1", now=6.0 + version)
    active = evolution.most_active(store)
    assert active[0]["path"] == "f7.txt" and active[0]["changes"] == 4
    assert active[0]["last_actor"] == "agent"


def test_activity_counts_todays_edits_for_the_code_lens(store: Store, workspace: Path) -> None:
    now = 1_800_000_000.0
    midnight = evolution.start_of_day(now)
    (workspace / "g.py").write_text("a\n")
    evolution.record_change(
        store, "g.py", actor="editor", before="", after="a\n", now=midnight - 60
    )
    evolution.record_change(store, "g.py", actor="editor", before="a\n", after="b\n", now=now - 900)
    evolution.record_change(
        store, "g.py", actor="agent", session_id="s", before="b\n", after="c\n", now=now - 300
    )
    facts = evolution.activity(store, "g.py", now=now)
    assert facts == {
        "edits_today": 2,
        "last_actor": "agent",
        "last_session_id": "s",
        "last_ts": now - 300,
        "last_ago": "5 min ago",
    }
    assert evolution.activity(store, "never.py", now=now) is None


def test_changed_lines_finds_separate_hunks_and_deletions() -> None:
    before = TEXT
    after = (
        before.replace("line 2\n", "two\n")
        .replace("line 15\n", "")
        .replace("line 19\n", "19\nnew\n")
    )
    assert evolution.changed_lines(before, after) == [(2, 2), (15, 15), (18, 19)]


def test_a_git_checkout_of_another_branch_is_one_git_event(store: Store, workspace: Path) -> None:
    git(workspace, "init", "-q", "-b", "main")
    for n in range(40):
        (workspace / f"m{n}.py").write_text(f"main {n}\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "main")
    git(workspace, "checkout", "-q", "-b", "feature")
    for n in range(40):
        (workspace / f"m{n}.py").write_text(f"feature {n}\n")
    git(workspace, "commit", "-q", "-am", "feature")
    git(workspace, "checkout", "-q", "main")
    assert evolution.observe_git(store, now=1.0) is None  # the first look is a baseline
    git(workspace, "checkout", "-q", "feature")
    # The watcher's burst: every rewritten file, plus git's own folder it never records.
    burst = [Change(path=f"m{n}.py", actor="external") for n in range(40)]
    burst.append(Change(path=".git/HEAD", actor="external"))
    result = evolution.record_batch(store, burst, now=100.0)
    assert result.git_event is not None and result.recorded == []
    data = result.git_event["data"]
    assert (data["operation"], data["from_branch"], data["to_branch"]) == (
        "checkout",
        "main",
        "feature",
    )
    assert data["summary"] == "git checkout main -> feature"
    rows = store.query("SELECT actor, change FROM file_changes")
    assert [(r["actor"], r["change"]) for r in rows] == [("git", "git")]
    assert data["files_changed"] == 40


def test_external_rows_just_before_the_head_move_fold_into_the_git_event(
    store: Store, workspace: Path
) -> None:
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "x.py").write_text("one\n")
    (workspace / "z.py").write_text("one\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "one")
    git(workspace, "checkout", "-q", "-b", "other")
    (workspace / "x.py").write_text("two\n")
    (workspace / "z.py").write_text("two\n")
    git(workspace, "commit", "-q", "-am", "two")
    git(workspace, "checkout", "-q", "main")
    evolution.observe_git(store, now=1.0)
    git(workspace, "checkout", "-q", "other")
    # Files seen before HEAD moved (an earlier batch of the same checkout)...
    early = evolution.record_batch(
        store, [Change(path="x.py", actor="external")], now=49.0, check_git=False
    )
    assert len(early.recorded) == 1
    # ...then the move itself: one git event remains, and later stragglers of git's join it,
    (workspace / "y.py").write_text("someone else's\n")
    moved = evolution.record_batch(store, [], now=50.0)
    assert moved.git_event is not None and moved.git_event["data"]["files"] == ["x.py"]
    late = evolution.record_batch(
        store,
        [Change(path="z.py", actor="external"), Change(path="y.py", actor="external")],
        now=51.0,
    )
    # ...while a file git did not write in the meantime stays someone else's change.
    assert [r["path"] for r in late.recorded] == ["y.py"] and late.absorbed == 1
    rows = store.query("SELECT actor, path, data FROM file_changes ORDER BY id")
    assert [(r["actor"], r["path"]) for r in rows] == [("git", None), ("external", "y.py")]
    assert '"files_changed":2' in rows[0]["data"]
