"""The workspace-root rule of docs/design.md section 2, the same for every front end."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memory_core.errors import UsageError
from memory_core.workspace import (
    find_root,
    has_store,
    is_git_repository,
    relative_path,
    store_dir,
)


def test_a_plain_folder_is_its_own_root(workspace: Path) -> None:
    assert find_root(workspace) == workspace


def test_a_subfolder_of_a_git_repository_resolves_to_the_top_level(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    nested = workspace / "src" / "pkg"
    nested.mkdir(parents=True)
    assert find_root(nested) == workspace


def test_an_existing_store_wins_over_the_git_top_level(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    service = workspace / "services" / "api"
    (service / ".engram").mkdir(parents=True)
    (service / "handlers").mkdir()
    assert find_root(service / "handlers") == service


def test_a_file_path_resolves_through_its_folder(workspace: Path) -> None:
    target = workspace / "main.py"
    target.write_text("print(1)\n")
    assert find_root(target) == workspace


def test_the_home_folder_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(UsageError, match="home folder"):
        find_root(home)


def test_the_filesystem_root_is_refused() -> None:
    with pytest.raises(UsageError, match="filesystem root") as caught:
        find_root("/")
    assert caught.value.message == "refusing to use the filesystem root (/) as a workspace"


def test_a_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        find_root(tmp_path / "nope")


def test_paths_outside_the_workspace_are_refused(workspace: Path) -> None:
    assert relative_path(workspace, workspace / "a" / "b.py") == "a/b.py"
    assert relative_path(workspace, "a/./c.py") == "a/c.py"
    with pytest.raises(UsageError, match="outside the workspace"):
        relative_path(workspace, workspace / ".." / "elsewhere.py")
    with pytest.raises(UsageError, match="outside the workspace"):
        relative_path(workspace, "/etc/passwd")


# Edges of the rule (issue 31): the root itself, a sibling sharing the root's name as a prefix,
# a home folder that holds a dotfiles repository, `.git` as a worktree's file.


def test_the_root_itself_is_dot_and_a_lookalike_sibling_is_outside(workspace: Path) -> None:
    assert relative_path(workspace, workspace) == "."
    assert relative_path(workspace, "sub/..") == "."
    sibling = Path(str(workspace) + "-old") / "a.py"
    with pytest.raises(UsageError, match="outside the workspace") as caught:
        relative_path(workspace, sibling)
    assert caught.value.hint == "engram only records files inside the workspace"


def test_a_root_given_with_a_trailing_slash_still_relates_its_files(workspace: Path) -> None:
    assert relative_path(Path(str(workspace) + "/"), workspace / "x.py") == "x.py"
    assert relative_path(Path("/"), "/etc/hosts") == "etc/hosts"


def test_a_dotfiles_repository_in_home_does_not_make_home_the_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    project = home / "code" / "app"
    project.mkdir(parents=True)
    (home / ".git").mkdir()
    monkeypatch.setenv("HOME", str(home))
    # no marker below home: the folder itself, not home
    assert find_root(project) == project.resolve()
    (project.parent / ".engram").mkdir()
    assert find_root(project) == project.parent.resolve()


def test_an_empty_home_variable_refuses_nothing(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    monkeypatch.setenv("HOME", "")
    assert find_root(workspace) == workspace
    monkeypatch.delenv("HOME")
    assert find_root(workspace) == workspace


def test_a_worktrees_git_file_marks_its_project(workspace: Path) -> None:
    (workspace / ".git").write_text("gitdir: /elsewhere/.git/worktrees/w\n")
    (workspace / "src").mkdir()
    assert find_root(workspace / "src") == workspace
    assert is_git_repository(workspace)
    assert not has_store(workspace)
    assert store_dir(workspace) == workspace / ".engram"


def test_a_file_named_engram_is_not_a_store(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / ".engram").write_text("not a folder")
    assert find_root(workspace / "src") == (workspace / "src")
    assert not has_store(workspace / "src")


def test_the_current_folder_is_the_default(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    monkeypatch.chdir(workspace)
    assert find_root() == workspace


def test_a_path_under_a_file_is_a_usage_error(workspace: Path) -> None:
    (workspace / "f.txt").write_text("x")
    with pytest.raises(UsageError, match="does not exist") as caught:
        find_root(workspace / "f.txt" / "below")
    assert caught.value.hint == "pass an existing folder"


def test_refusing_home_says_how_to_go_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(UsageError) as caught:
        find_root(home)
    assert (
        caught.value.message == f"refusing to use the home folder ({home.resolve()}) as a workspace"
    )
    assert caught.value.hint == "run engram inside a project folder or pass --workspace PATH"


def test_an_empty_home_variable_does_not_refuse_the_current_folder(
    monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("HOME", "")
    assert find_root(workspace) == workspace


def test_a_missing_or_unreadable_path_is_named_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        find_root(tmp_path / "nope")
    assert caught.value.message == f"workspace path {str(tmp_path / 'nope')!r} does not exist"
    too_long = tmp_path / ("x" * 300)
    with pytest.raises(UsageError) as caught:
        find_root(too_long)
    assert caught.value.message.startswith(f"cannot read the workspace path {str(too_long)!r}: ")
    assert "File name too long" in caught.value.message


def test_a_symbolic_link_loop_is_a_clear_error_not_a_crash(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(UsageError, match="cannot read the workspace path") as caught:
        find_root(loop)
    assert str(loop) in caught.value.message


def test_a_path_outside_is_named_in_the_error(workspace: Path) -> None:
    with pytest.raises(UsageError) as caught:
        relative_path(workspace, "/etc/passwd")
    assert caught.value.message == f"'/etc/passwd' is outside the workspace {workspace}"
