"""Checkpoints where their parts meet (memory_core/checkpoints/): an incremental checkpoint
judging a changed file's folders by the ignore files above them (a file git cannot re-include
inside an ignored folder stays out, as a scan leaves it out), garbage collection of content an
older engram stored unpacked, one file restored by `write_file` alone, and a rollback stopped by
a folder replaced under it, saying which folder."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memory_core import checkpoints, config, journal
from memory_core.checkpoints import build as checkpoint_build
from memory_core.checkpoints import trees as checkpoint_trees
from memory_core.checkpoints.restore import Folders
from memory_core.errors import EngramError
from memory_core.store import Store
from tests.conftest import count_file_reads
from tests.conftest import write_file as _write


@pytest.fixture
def project(store: Store) -> Store:
    config.set_value(store.root, "checkpoints.watchman", False)
    _write(store.root, "README.md", "# demo\n")
    _write(store.root, "src/app.py", "def main():\n    return 1\n")
    return store


def _paths(store: Store, checkpoint: dict[str, object]) -> set[str]:
    return {item["path"] for item in checkpoints.manifest(store, str(checkpoint["id"]))}


def test_a_file_inside_a_folder_a_nested_gitignore_ignores_stays_out_when_reported(
    project: Store,
) -> None:
    # git cannot re-include a file whose folder is ignored: `!generated/keep.py` is no
    # exception while `generated/` is out. A watcher reporting that file changes nothing.
    _write(project.root, "src/.gitignore", "generated/\n!generated/keep.py\n")
    _write(project.root, "src/generated/keep.py", "K = 1\n")
    first = checkpoints.create(project)
    assert "src/generated/keep.py" not in _paths(project, first)
    _write(project.root, "src/generated/keep.py", "K = 2\n")
    second = checkpoints.create(project, changed=["src/generated/keep.py"])
    assert second["mode"] == "incremental" and second["changed"] == 0
    assert _paths(project, second) == _paths(project, first)


def test_collecting_keeps_the_unpacked_content_of_an_older_engram_still_in_use(
    project: Store,
) -> None:
    used, unused = b"kept by an older engram\n", b"no checkpoint names this any more\n"
    with project.transaction() as db:
        for data in (used, unused):
            packed = checkpoint_trees.compress(data)
            db.execute(
                "INSERT INTO checkpoint_blobs (hash, size, stored_size, data) VALUES (?, ?, ?, ?)",
                (checkpoint_trees.sha(data), len(data), len(packed), packed),
            )
    _write(project.root, "old.txt", used.decode())
    made = checkpoints.create(project)
    freed = checkpoints.gc(project)
    assert freed >= len(checkpoint_trees.compress(unused))
    left = {row[0] for row in project.query("SELECT hash FROM checkpoint_blobs")}
    assert left == {checkpoint_trees.sha(used)}
    assert checkpoints.file_content(project, made["id"], "old.txt") == used


def test_one_file_restored_on_its_own_makes_its_folders(project: Store) -> None:
    root = project.root
    checkpoints.write_file(
        root, checkpoints.FileWrite("notes/2026/plan.md", b"# plan\n", 0o600, "file", False)
    )
    assert (root / "notes/2026/plan.md").read_bytes() == b"# plan\n"
    assert (root / "notes/2026/plan.md").stat().st_mode & 0o777 == 0o600
    # The folders it made are ordinary ones, as `mkdir` makes them under the user's umask.
    umask = os.umask(0o022)
    os.umask(umask)
    assert (root / "notes").stat().st_mode & 0o7777 == 0o777 & ~umask
    assert (root / "notes/2026").stat().st_mode & 0o7777 == 0o777 & ~umask
    checkpoints.write_file(
        root, checkpoints.FileWrite("src/app.py", b"X = 2\n", 0o644, "file", True)
    )
    assert (root / "src/app.py").read_bytes() == b"X = 2\n"


def test_a_rollback_stopped_by_a_replaced_folder_names_that_folder(
    project: Store, tmp_path: Path
) -> None:
    root = project.root
    _write(root, "src/lib/util.py", "X = 1\n")
    with Folders(root) as folders:
        folders.open("src/lib", create=False, for_path="src/lib/util.py")
        folders.check("src/lib", "src/lib/util.py")  # nothing moved: no error
        os.rename(root / "src", tmp_path / "moved-src")
        (root / "src" / "lib").mkdir(parents=True)
        with pytest.raises(EngramError) as stopped:
            folders.check("src/lib", "src/lib/util.py")
    assert stopped.value.one_line().startswith(
        "stopped at src/lib/util.py: src was replaced or moved while the rollback was writing"
    )


def test_a_rollback_stopped_by_its_workspace_folder_replaced_says_so(
    project: Store, tmp_path: Path
) -> None:
    root = project.root
    with Folders(root) as folders:
        os.rename(root, tmp_path / "moved-workspace")
        root.mkdir()
        with pytest.raises(EngramError) as stopped:
            folders.check("", "README.md")
    assert stopped.value.one_line().startswith(
        "stopped at README.md: . was replaced or moved while the rollback was writing"
    )


def test_a_patch_follows_the_settings_it_is_given_over_the_config_file(project: Store) -> None:
    # The command line's `--set` and the editor's settings come on top of .engram/config.toml:
    # a file they leave out is no change of the patch either.
    made = checkpoints.create(project)
    _write(project.root, "src/app.py", "def main():\n    return 2\n")
    _write(project.root, "debug.log", "trace\n")
    settings = config.load(project.root, overrides={"watch.exclude": ["*.log"]})
    shown = checkpoints.patch(project, made["id"], settings=settings)
    assert "+++ b/src/app.py" in shown and "debug.log" not in shown
    assert "debug.log" in checkpoints.patch(project, made["id"])


@pytest.mark.skipif(shutil.which("watchman") is None, reason="watchman is not installed")
def test_a_cold_process_reaches_watchman_through_the_socket_the_last_checkpoint_stored(
    project: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.root
    config.set_value(root, "checkpoints.watchman", True)
    saved = journal._SOCKET[0]
    try:
        checkpoints.create(project)  # watchman's clock and socket stored with it
        # The next checkpoint runs in a new process (a hook): it knows no socket yet, and
        # watchman's command line is not on its PATH.
        journal._SOCKET[0] = None
        monkeypatch.delenv("WATCHMAN_SOCK", raising=False)
        monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))
        _write(root, "src/app.py", "def main():\n    return 3\n")
        second = checkpoints.create(project)
        assert (second["source"], second["changed"]) == ("watchman", 1)
    finally:
        journal._SOCKET[0] = saved
        monkeypatch.undo()
        subprocess.run(["watchman", "watch-del", str(root)], capture_output=True, check=False)


def test_one_file_removed_on_its_own_is_gone_and_its_neighbours_stay(project: Store) -> None:
    root = project.root
    _write(root, "notes/a.md", "a\n")
    _write(root, "notes/b.md", "b\n")
    checkpoints.remove_file(root, "notes/a.md")
    assert not (root / "notes/a.md").exists() and (root / "notes/b.md").read_text() == "b\n"


@pytest.mark.parametrize(
    ("inside", "where"), [(False, "outside the workspace"), (True, "elsewhere")]
)
def test_a_folder_turned_into_a_link_is_refused_saying_where_it_points(
    project: Store, tmp_path: Path, inside: bool, where: str
) -> None:
    root = project.root
    target = root / "docs" if inside else tmp_path / "outside"
    target.mkdir()
    os.rename(root / "src", tmp_path / "old-src")
    os.symlink(target, root / "src")
    with pytest.raises(EngramError) as refused:
        checkpoints.write_file(
            root, checkpoints.FileWrite("src/app.py", b"X = 2\n", 0o644, "file", True)
        )
    assert refused.value.one_line().startswith(
        f"refusing to write src/app.py: src is a symbolic link to {target} ({where})"
    )
    assert not (target / "app.py").exists()


def test_a_file_the_previous_checkpoint_could_not_read_is_never_removed_by_the_next(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An incremental checkpoint holds no copy of a file its base could not read and nothing
    reported since: it still says so, and a rollback to it leaves that file alone."""
    root = project.root
    _write(root, "private/notes.txt", "someone else's notes\n")
    real_read = checkpoint_build.read_file

    def denied(top: Path, rel: str, kind: str) -> bytes:
        if rel == "private/notes.txt":
            raise PermissionError(13, "Permission denied", str(top / rel))
        return real_read(top, rel, kind)

    monkeypatch.setattr(checkpoint_build, "read_file", denied)
    checkpoints.create(project)
    monkeypatch.undo()
    _write(root, "src/app.py", "def main():\n    return 2\n")
    second = checkpoints.create(project, changed=["src/app.py"])
    assert second["mode"] == "incremental"
    assert second["unreadable"] == ["private/notes.txt"]
    _write(root, "src/app.py", "def main():\n    return 3\n")
    result = checkpoints.rollback(project, second["id"])
    assert result["done"] and result["removed"] == []
    assert (root / "private/notes.txt").read_text() == "someone else's notes\n"


def test_a_reported_file_whose_stat_did_not_change_is_not_read_again(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Editors and watchers report files they only touched: one whose size, times, inode and
    # mode are what the last checkpoint hashed costs no read (a scan of 50,000 would be slow).
    checkpoints.create(project)
    reads = count_file_reads(monkeypatch)
    second = checkpoints.create(project, changed=["src/app.py", "README.md"])
    assert second["mode"] == "incremental"
    assert (reads, second["changed"]) == ([], 0)
    (project.root / "README.md").chmod(0o600)  # the mode is part of what a checkpoint keeps
    third = checkpoints.create(project, changed=["README.md"])
    assert (reads, third["changed"]) == (["README.md"], 1)


def _swap_for_a_link_once_made(monkeypatch: pytest.MonkeyPatch, folder: str, outside: Path) -> None:
    """Another program replacing `folder` with a link to `outside` right after the rollback
    makes it (between its mkdir and its open)."""
    real_mkdir = os.mkdir

    def swapped(name: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(name, mode, dir_fd=dir_fd)
        if name == folder:
            os.rmdir(name, dir_fd=dir_fd)
            os.symlink(outside, name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", swapped)


def test_a_folder_swapped_for_a_link_right_after_the_rollback_made_it_is_named(
    project: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another program replaces the folder between the rollback's mkdir and its open (staged
    # here at the mkdir itself): nothing is written through the link, and the error says which.
    root = project.root
    outside = tmp_path / "outside"
    outside.mkdir()
    _swap_for_a_link_once_made(monkeypatch, "notes", outside)
    with pytest.raises(EngramError) as stopped:
        checkpoints.write_file(
            root, checkpoints.FileWrite("notes/plan.md", b"# plan\n", 0o644, "file", False)
        )
    monkeypatch.undo()
    assert stopped.value.one_line().startswith(
        "stopped at notes/plan.md: notes was replaced or moved while the rollback was writing"
    )
    assert list(outside.iterdir()) == []


def test_a_rollback_stopped_by_a_folder_swapped_while_it_writes_says_what_it_did_not_do(
    project: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.root
    _write(root, "notes/plan.md", "# plan\n")
    made = checkpoints.create(project)
    (root / "notes" / "plan.md").unlink()
    (root / "notes").rmdir()
    plan = checkpoints.plan_rollback(project, made["id"])
    outside = tmp_path / "outside"
    outside.mkdir()
    _swap_for_a_link_once_made(monkeypatch, "notes", outside)
    result = checkpoints.apply_plan(project, plan)
    monkeypatch.undo()
    message = "stopped at notes/plan.md: notes was replaced or moved while the rollback was writing"
    assert not result["done"] and result["stopped"].startswith(message)
    assert result["failed"] == [{"path": "notes/plan.md", "error": message}]
    assert list(outside.iterdir()) == []
