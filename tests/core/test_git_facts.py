"""What engram reads of git in-process: HEAD from files, status, ancestry, blob ids (issue 31).

Real repositories made with the real `git`; the parsers are also fed git's output directly.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memory_core import git

ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/nonexistent",
}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=ENV
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "trunk")
    (root / "a.py").write_text("a = 1\n")
    (root / "b.py").write_text("b = 1\n")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "first")
    return root


def test_a_folder_that_is_not_a_repository_has_no_head_and_no_status(tmp_path: Path) -> None:
    assert git.git_dir(tmp_path) is None
    assert git.read_head(tmp_path) is None
    assert git.status(tmp_path) == git.Status(is_repo=False)


def test_head_is_read_from_files_as_git_says_it(repo: Path) -> None:
    assert git.read_head(repo) == git.Head(branch="trunk", commit=_git(repo, "rev-parse", "HEAD"))


def test_a_repository_without_commits_has_a_branch_and_no_commit(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "dev")
    assert git.read_head(tmp_path) == git.Head(branch="dev", commit=None)
    (tmp_path / "x.txt").write_text("x")
    found = git.status(tmp_path)
    assert (found.is_repo, found.branch, found.head, found.dirty_files) == (
        True,
        "dev",
        None,
        ["x.txt"],
    )


def test_a_detached_head_has_no_branch(repo: Path) -> None:
    commit = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "--detach")
    assert git.read_head(repo) == git.Head(branch=None, commit=commit)
    assert git.status(repo).branch is None


def test_a_packed_branch_is_still_resolved(repo: Path) -> None:
    commit = _git(repo, "rev-parse", "HEAD")
    _git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "trunk").exists()
    assert git.read_head(repo) == git.Head(branch="trunk", commit=commit)


def test_a_linked_worktree_reads_its_own_head_and_the_shared_refs(
    repo: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    _git(repo, "worktree", "add", "-q", "-b", "side", str(other))
    assert (other / ".git").is_file()
    assert git.git_dir(other) == (repo / ".git" / "worktrees" / "other").resolve()
    assert git.read_head(other) == git.Head(branch="side", commit=_git(repo, "rev-parse", "HEAD"))
    _git(repo, "pack-refs", "--all")  # refs now only in the main repository's packed-refs
    assert git.read_head(other) == git.Head(branch="side", commit=_git(repo, "rev-parse", "HEAD"))


def test_a_dot_git_file_with_a_relative_gitdir_is_followed(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").write_text("gitdir: ../repo/.git\n")
    assert git.git_dir(linked) == (repo / ".git").resolve()
    assert git.read_head(linked) == git.read_head(repo)
    (linked / ".git").write_text("not a pointer\n")
    assert git.git_dir(linked) is None


def test_status_lists_dirty_files_without_engrams_own_and_counts_stashes(repo: Path) -> None:
    (repo / "a.py").write_text("a = 2\n")
    _git(repo, "stash", "-q")
    (repo / "b.py").write_text("b = 2\n")
    _git(repo, "stash", "-q")
    (repo / "a.py").write_text("a = 3\n")
    (repo / "new file.txt").write_text("n")
    (repo / ".engram").mkdir()
    (repo / ".engram" / ".gitignore").write_text("*\n!.gitignore\n")
    _git(repo, "mv", "b.py", "c.py")
    found = git.status(repo)
    assert found == git.Status(
        is_repo=True,
        branch="trunk",
        head=_git(repo, "rev-parse", "HEAD"),
        dirty_files=["a.py", "c.py", "new file.txt"],
        stash_count=2,
    )
    assert "stash_count=2" in repr(found)


def test_status_of_a_clean_repository(repo: Path) -> None:
    found = git.status(repo)
    assert (found.is_repo, found.dirty_files, found.stash_count) == (True, [], 0)


@pytest.mark.parametrize(
    ("output", "branch", "dirty"),
    [
        ("## main...origin/main [ahead 1]\0 M a.py\0?? z.txt\0", "main", ["a.py", "z.txt"]),
        ("## HEAD (no branch)\0 D gone.py\0", None, ["gone.py"]),
        ("## No commits yet on dev\0A  new.py\0", "dev", ["new.py"]),
        (
            "## main\0R  new.py\0old.py\0C  copy.py\0src.py\0 M m.py\0",
            "main",
            ["copy.py", "m.py", "new.py"],
        ),
        ("## main\0 M a.py\0MM a.py\0", "main", ["a.py"]),
        ("", None, []),
    ],
)
def test_porcelain_output_gives_the_branch_and_the_dirty_paths(
    output: str, branch: str | None, dirty: list[str]
) -> None:
    assert git._parse_porcelain(output) == (branch, dirty)


def test_ancestry_and_commits_between(repo: Path) -> None:
    first = _git(repo, "rev-parse", "HEAD")
    for n in range(2):
        (repo / "a.py").write_text(f"a = {n + 5}\n")
        _git(repo, "commit", "-qam", f"c{n}")
    last = _git(repo, "rev-parse", "HEAD")
    assert git.is_ancestor(repo, first, last) is True
    assert git.is_ancestor(repo, last, first) is False
    assert git.is_ancestor(repo, "0" * 40, last) is None
    assert git.commits_between(repo, first, last) == 2
    assert git.commits_between(repo, last, first) == 0
    assert git.commits_between(repo, "nope", last) is None


def test_head_blob_ids_match_git_and_leave_out_what_head_lacks(repo: Path) -> None:
    (repo / "sub").mkdir()
    found = git.head_blob_ids(repo, ["a.py", "b.py", "missing.py"])
    assert found == {
        "a.py": _git(repo, "rev-parse", "HEAD:a.py"),
        "b.py": _git(repo, "rev-parse", "HEAD:b.py"),
    }
    assert found["a.py"] == git.blob_id(b"a = 1\n")


def test_head_blob_ids_asks_git_in_batches_past_200_paths(repo: Path) -> None:
    names = [f"f{n:03}.txt" for n in range(201)]
    for name in names:
        (repo / name).write_text(name)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "many")
    found = git.head_blob_ids(repo, names)
    assert found is not None and len(found) == 201
    assert found["f200.txt"] == git.blob_id(b"f200.txt")


def test_head_blob_ids_is_unknown_outside_a_repository(tmp_path: Path) -> None:
    assert git.head_blob_ids(tmp_path, ["a.py"]) is None


def test_blob_ids_are_gits_for_sha1_and_sha256_repositories() -> None:
    assert git.blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert git.blob_id(b"", sha256=True) == (
        "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"
    )
    assert git.blob_id(b"hello\n", sha256=True) == (
        "2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4"
    )


def test_git_runs_without_taking_locks_or_prompting(repo: Path) -> None:
    result = git.run(repo, "config", "--get", "core.bare")
    assert result is not None and result.stdout.strip() == "false"
    env = git.run(repo, "var", "GIT_EDITOR")  # git answers; its env has no prompt
    assert env is not None


def test_a_failed_git_command_returns_its_result_not_an_exception(repo: Path) -> None:
    result = git.run(repo, "no-such-command")
    assert result is not None and result.returncode != 0


def test_a_file_named_like_a_pattern_is_asked_about_as_that_file_only(repo: Path) -> None:
    (repo / "*.py").write_text("star\n")
    _git(repo, "add", "--", ":(literal)*.py")
    _git(repo, "commit", "-qm", "star")
    assert git.head_blob_ids(repo, ["*.py"]) == {"*.py": git.blob_id(b"star\n")}


def test_statuses_differ_when_any_fact_differs_and_read_as_their_fields() -> None:
    assert git.Status(is_repo=True) != git.Status(is_repo=False)
    assert git.Status(is_repo=True, branch="a") != git.Status(is_repo=True, branch="b")
    assert git.Status(is_repo=False) != "Status(is_repo=False)"
    assert repr(git.Status(is_repo=True, branch="main", dirty_files=["a"], stash_count=1)) == (
        "Status(is_repo=True, branch='main', head=None, dirty_files=['a'], stash_count=1)"
    )


def test_a_branch_among_other_packed_branches_resolves_to_its_own_commit(repo: Path) -> None:
    first = _git(repo, "rev-parse", "HEAD")
    _git(repo, "branch", "aaa")  # sorts before trunk in packed-refs
    (repo / "a.py").write_text("a = 9\n")
    _git(repo, "commit", "-qam", "later")
    _git(repo, "pack-refs", "--all")
    assert git.read_head(repo) == git.Head(branch="trunk", commit=_git(repo, "rev-parse", "HEAD"))
    _git(repo, "checkout", "-q", "aaa")
    assert git.read_head(repo) == git.Head(branch="aaa", commit=first)


def test_a_repository_git_cannot_read_is_no_repository(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("gitdir: /nonexistent/elsewhere/.git\n")
    assert git.git_dir(tmp_path) == Path("/nonexistent/elsewhere/.git")
    assert git.status(tmp_path) == git.Status(is_repo=False)


def test_git_is_given_file_names_never_patterns(repo: Path) -> None:
    (repo / "*.py").write_text("star\n")
    _git(repo, "add", "--", ":(literal)*.py")
    listed = git.run(repo, "ls-files", "--", "*.py")
    assert listed is not None and listed.stdout.splitlines() == ["*.py"]
