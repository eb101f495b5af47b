"""The workspace-root rule of docs/design.md section 2, the same for every front end."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memory_core.errors import UsageError
from memory_core.workspace import find_root, relative_path


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
    with pytest.raises(UsageError, match="filesystem root"):
        find_root("/")


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
