"""An incremental checkpoint (a watcher or the caller names what changed) holds exactly what a
full scan would: new folders reported without their files, folders replaced by files and back,
ignore rules of the folders above, and an exact count of what changed.

Watchman is turned off here, so the checkpoints without `changed=` are full scans (through the
stat cache), whatever is installed on the machine.
"""

from __future__ import annotations

import os
import shutil

import pytest

from memory_core import checkpoints, config
from memory_core.store import Store
from tests.conftest import write_file as _write


def _paths(store: Store, checkpoint: dict[str, object]) -> dict[str, str]:
    return {
        item["path"]: item["hash"] for item in checkpoints.manifest(store, str(checkpoint["id"]))
    }


@pytest.fixture
def project(store: Store) -> Store:
    config.set_value(store.root, "checkpoints.watchman", False)
    _write(store.root, "README.md", "# demo\n")
    _write(store.root, "src/app.py", "def main():\n    return 1\n")
    _write(store.root, "src/lib/util.py", "X = 1\n")
    return store


def _full_scan(store: Store) -> dict[str, str]:
    made = checkpoints.create(store)
    assert made["mode"] == "scan"
    return _paths(store, made)


def test_a_new_folder_reported_alone_is_captured_with_every_file_in_it(project: Store) -> None:
    checkpoints.create(project)
    _write(project.root, "pkg/a.py", "A = 1\n")
    _write(project.root, "pkg/deep/b.py", "B = 2\n")
    # A watcher whose watch on pkg/ came too late saw only the folder appear.
    second = checkpoints.create(project, changed=["pkg"])
    assert second["mode"] == "incremental"
    assert second["changed"] == 2
    assert second["files"] == 5
    assert _paths(project, second) == _full_scan(project)
    (project.root / "pkg" / "a.py").unlink()
    checkpoints.rollback(project, second["id"])
    assert (project.root / "pkg" / "a.py").read_text() == "A = 1\n"


def test_a_reported_folder_drops_the_files_no_longer_in_it(project: Store) -> None:
    checkpoints.create(project)
    (project.root / "src" / "lib" / "util.py").unlink()
    _write(project.root, "src/lib/other.py", "Y = 2\n")
    second = checkpoints.create(project, changed=["src/lib"])
    assert set(_paths(project, second)) == {"README.md", "src/app.py", "src/lib/other.py"}
    assert second["changed"] == 2  # one added, one gone


def test_a_deleted_folder_reported_alone_takes_its_files_out(project: Store) -> None:
    checkpoints.create(project)
    shutil.rmtree(project.root / "src")
    second = checkpoints.create(project, changed=["src"])
    assert set(_paths(project, second)) == {"README.md"}
    assert second["files"] == 1


def test_a_file_replaced_by_a_folder_is_seen_when_only_the_new_file_is_reported(
    project: Store,
) -> None:
    checkpoints.create(project)
    (project.root / "README.md").unlink()
    _write(project.root, "README.md/index.md", "# now a folder\n")
    # watchman reports files only: the new file, not the file the folder replaced.
    second = checkpoints.create(project, changed=["README.md/index.md"])
    assert set(_paths(project, second)) == {"README.md/index.md", "src/app.py", "src/lib/util.py"}
    assert _paths(project, second) == _full_scan(project)


def test_a_folder_replaced_by_a_file_is_captured_as_the_file(project: Store) -> None:
    first = checkpoints.create(project)
    shutil.rmtree(project.root / "src" / "lib")
    _write(project.root, "src/lib", "now a file\n")
    second = checkpoints.create(project, changed=["src/lib"])
    assert set(_paths(project, second)) == {"README.md", "src/app.py", "src/lib"}
    # And rolling back turns it into the folder again.
    result = checkpoints.rollback(project, first["id"])
    assert result["done"], result["failed"]
    assert (project.root / "src" / "lib" / "util.py").read_text() == "X = 1\n"


def test_unchanged_files_a_watcher_reports_count_as_unchanged(project: Store) -> None:
    checkpoints.create(project)
    _write(project.root, "src/app.py", "def main():\n    return 2\n")
    os.utime(project.root / "README.md")  # touched, same content
    second = checkpoints.create(project, changed=["src/app.py", "README.md", "missing.txt"])
    assert second["changed"] == 1
    assert second["added_bytes"] > 0


def test_a_new_folder_honours_the_gitignore_of_the_folders_above_it(project: Store) -> None:
    _write(project.root, "src/.gitignore", "*.gen\n")
    checkpoints.create(project)
    _write(project.root, "src/out/sub/code.py", "C = 3\n")
    _write(project.root, "src/out/sub/code.gen", "generated\n")
    second = checkpoints.create(project, changed=["src/out/sub"])
    paths = set(_paths(project, second))
    assert "src/out/sub/code.py" in paths
    assert "src/out/sub/code.gen" not in paths


def test_paths_in_git_or_the_store_reported_by_a_watcher_are_never_captured(
    project: Store,
) -> None:
    _write(project.root, ".git/HEAD", "ref: refs/heads/main\n")
    checkpoints.create(project)
    _write(project.root, ".git/index.lock", "x")
    second = checkpoints.create(
        project, changed=[".git/index.lock", ".git", ".engram/engram.db", "../outside"]
    )
    assert set(_paths(project, second)) == {"README.md", "src/app.py", "src/lib/util.py"}
    assert second["changed"] == 0


def test_a_checkpoint_whose_base_listing_is_missing_names_the_folder(project: Store) -> None:
    base = checkpoints.create(project)
    # Remove the stored listing of src/ (a damaged store).
    from memory_core.checkpoints.storage import load_tree

    root_tree = project.query_one("SELECT root_tree FROM checkpoints WHERE id = ?", (base["id"],))
    assert root_tree is not None
    src = load_tree(project, root_tree[0]).entries["src"].hash
    with project.transaction() as db:
        db.execute("DELETE FROM checkpoint_trees WHERE hash = ?", (src,))
    _write(project.root, "src/app.py", "changed\n")
    with pytest.raises(checkpoints.CorruptCheckpointError, match="listing of src/ is missing"):
        checkpoints.create(project, changed=["src/app.py"])


def test_a_reported_file_honours_the_gitignore_of_its_own_folder(project: Store) -> None:
    _write(project.root, "src/lib/.gitignore", "*.tmp\n")
    checkpoints.create(project)
    _write(project.root, "src/lib/scratch.tmp", "scratch\n")
    _write(project.root, "src/lib/kept.py", "K = 1\n")
    second = checkpoints.create(project, changed=["src/lib/scratch.tmp", "src/lib/kept.py"])
    paths = set(_paths(project, second))
    assert "src/lib/kept.py" in paths and "src/lib/scratch.tmp" not in paths
    assert second["changed"] == 1


def test_a_symbolic_link_reported_by_a_watcher_is_captured_as_a_link(project: Store) -> None:
    checkpoints.create(project)
    (project.root / "latest").symlink_to("src/app.py")
    second = checkpoints.create(project, changed=["latest"])
    kinds = {i["path"]: i["kind"] for i in checkpoints.manifest(project, second["id"])}
    assert kinds["latest"] == "link"
    (project.root / "latest").unlink()
    checkpoints.rollback(project, second["id"])
    assert os.readlink(project.root / "latest") == "src/app.py"
