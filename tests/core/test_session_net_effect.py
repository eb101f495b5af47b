"""A session's net effect, one case at a time: which files it changed and which it only touched
(changed, then put back by an edit, `git checkout`, `git restore`, `git reset --hard` or `rm`),
as the summary, `session show` and the next session's context report them.

Each case runs real git in the workspace: whether a file is "put back" depends on what git
really holds, including the cases git does not touch (untracked files, an index-only restore).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import evolution, sessions
from memory_core.store import Store
from tests.conftest import git

T0 = 1_700_000_000.0
SID = "S-net"


@pytest.fixture
def repo(store: Store) -> Store:
    """The store's workspace as a git repository whose HEAD holds `app.py` ("v1\n")."""
    root = store.root
    (root / "app.py").write_text("v1\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "app.py")
    git(root, "commit", "-qm", "start")
    sessions.start(store, session_id=SID, agent="claude-code", now=T0)
    return store


def _edit(store: Store, path: str, before: str | None, after: str, ts: float) -> None:
    """The session writes `after` over `before` (None: a file it creates), as the hooks record it."""
    (store.root / path).write_text(after, encoding="utf-8")
    evolution.record_change(
        store, path, actor="agent", session_id=SID, before=before, after=after, now=ts
    )
    sessions.record_file_modified(store, SID, path, ts=ts)


def _run(store: Store, command: str, ts: float, *args: str) -> None:
    """The session runs `command` (really, through git, when `args` are given) and it succeeds."""
    if args:
        git(store.root, *args)
    sessions.record_command(store, SID, command, exit_code=0, ts=ts)


def test_a_file_created_then_removed_with_rm_is_only_touched(repo: Store) -> None:
    _edit(repo, "scratch.py", None, "print('try')\n", T0 + 10)
    _edit(repo, "app.py", "v1\n", "v2\n", T0 + 20)
    (repo.root / "scratch.py").unlink()
    _run(repo, "rm ./scratch.py", T0 + 30)
    assert sessions.net_files_changed(repo, SID) == ["app.py"]
    summary = sessions.summary_markdown(repo, SID, now=T0 + 60)
    assert "- `scratch.py` (changed, then put back)" in summary
    assert "| files modified | 1 (2 touched, 1 put back) |" in summary


@pytest.mark.parametrize(
    "command",
    [
        "rm scratch.py && ls",  # a chain: which part ran is not known
        "rm *.py",  # a glob: which files it named is not known
        "rm other.py",  # another file
    ],
)
def test_an_rm_that_may_not_have_removed_the_file_leaves_it_changed(
    repo: Store, command: str
) -> None:
    _edit(repo, "scratch.py", None, "print('try')\n", T0 + 10)
    _run(repo, command, T0 + 30)
    assert sessions.net_files_changed(repo, SID) == ["scratch.py"]


def test_an_rm_before_the_last_edit_does_not_undo_it(repo: Store) -> None:
    _edit(repo, "scratch.py", None, "one\n", T0 + 10)
    _run(repo, "rm scratch.py", T0 + 20)
    _edit(repo, "scratch.py", None, "two\n", T0 + 30)
    assert sessions.net_files_changed(repo, SID) == ["scratch.py"]


def test_removing_a_file_that_existed_before_the_session_is_a_change(repo: Store) -> None:
    _edit(repo, "app.py", "v1\n", "v2\n", T0 + 10)
    _run(repo, "git rm -f app.py", T0 + 20, "rm", "-qf", "app.py")
    assert sessions.net_files_changed(repo, SID) == ["app.py"]


def test_a_checkout_puts_back_a_file_that_was_as_committed(repo: Store) -> None:
    _edit(repo, "app.py", "v1\n", "v2\n", T0 + 10)
    _run(repo, "git checkout -- app.py", T0 + 20, "checkout", "--", "app.py")
    assert sessions.net_files_changed(repo, SID) == []
    assert sessions.reverted_files(repo, SID) == ["app.py"]


def test_a_checkout_of_a_file_the_user_had_changed_before_the_session_is_a_change(
    repo: Store,
) -> None:
    """The user's own uncommitted edit was there when the session began; the checkout threw it
    away along with the session's edit: the file differs from the session's start."""
    (repo.root / "app.py").write_text("v1 with the user's fix\n", encoding="utf-8")
    _edit(repo, "app.py", "v1 with the user's fix\n", "v2\n", T0 + 10)
    _run(repo, "git checkout -- app.py", T0 + 20, "checkout", "--", "app.py")
    assert (repo.root / "app.py").read_text(encoding="utf-8") == "v1\n"
    assert sessions.net_files_changed(repo, SID) == ["app.py"]


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("git reset --hard", ("reset", "-q", "--hard")),
        ("git stash", ("stash", "-q")),
    ],
)
def test_git_leaves_an_untracked_file_the_session_wrote_changed(
    repo: Store, command: str, args: tuple[str, ...]
) -> None:
    """An empty untracked file (a notes file, an `__init__.py` not yet added) filled in by the
    session: `git reset --hard` and `git stash` leave untracked files alone."""
    (repo.root / "notes.txt").write_text("", encoding="utf-8")
    _edit(repo, "notes.txt", "", "todo: retry on 503\n", T0 + 10)
    _edit(repo, "app.py", "v1\n", "v2\n", T0 + 11)
    _run(repo, command, T0 + 20, *args)
    assert (repo.root / "notes.txt").read_text(encoding="utf-8") == "todo: retry on 503\n"
    assert sessions.net_files_changed(repo, SID) == ["notes.txt"]


@pytest.mark.parametrize("staged", ["--staged", "-S"])
def test_an_index_only_restore_leaves_the_file_changed(repo: Store, staged: str) -> None:
    """`git restore --staged` unstages: the working tree keeps the session's edit."""
    _edit(repo, "app.py", "v1\n", "v2\n", T0 + 10)
    git(repo.root, "add", "app.py")
    _run(repo, f"git restore {staged} app.py", T0 + 20, "restore", staged, "app.py")
    assert (repo.root / "app.py").read_text(encoding="utf-8") == "v2\n"
    assert sessions.net_files_changed(repo, SID) == ["app.py"]


def test_a_restore_of_both_index_and_worktree_puts_the_file_back(repo: Store) -> None:
    _edit(repo, "app.py", "v1\n", "v2\n", T0 + 10)
    git(repo.root, "add", "app.py")
    _run(
        repo,
        "git restore --staged --worktree app.py",
        T0 + 20,
        "restore",
        "--staged",
        "--worktree",
        "app.py",
    )
    assert (repo.root / "app.py").read_text(encoding="utf-8") == "v1\n"
    assert sessions.net_files_changed(repo, SID) == []


def test_switching_branches_is_not_a_revert(repo: Store) -> None:
    git(repo.root, "branch", "other")
    _edit(repo, "app.py", "v1\n", "v2\n", T0 + 10)
    _run(repo, "git checkout other", T0 + 20, "checkout", "-q", "other")
    assert sessions.net_files_changed(repo, SID) == ["app.py"]


def test_each_sessions_summary_counts_only_its_own_reverts(repo: Store) -> None:
    """Another session that put its own file back does not make this one's file "put back"."""
    sessions.start(repo, session_id="S-other", now=T0)
    evolution.record_change(
        repo, "lib.py", actor="agent", session_id="S-other", before=None, after="x\n", now=T0 + 5
    )
    sessions.record_file_modified(repo, "S-other", "lib.py", ts=T0 + 5)
    sessions.record_command(repo, "S-other", "rm lib.py", exit_code=0, ts=T0 + 6)
    _edit(repo, "lib.py", None, "y\n", T0 + 10)
    summary = sessions.summary_markdown(repo, SID, now=T0 + 60)
    assert "(changed, then put back)" not in summary
    assert "| files modified | 1 |" in summary
    assert "- `lib.py` (changed, then put back)" in sessions.summary_markdown(
        repo, "S-other", now=T0 + 60
    )


def test_a_file_outside_a_git_repository_is_never_put_back_by_git(
    store: Store, tmp_path: Path
) -> None:
    """No repository: `git checkout` failed for real, whatever exit code was recorded."""
    sessions.start(store, session_id=SID, now=T0)
    _edit(store, "app.py", "v1\n", "v2\n", T0 + 10)
    _run(store, "git checkout -- app.py", T0 + 20)
    assert sessions.net_files_changed(store, SID) == ["app.py"]
