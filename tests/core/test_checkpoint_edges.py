"""Checkpoints where a workspace does something between two steps: a file that becomes a folder
after the rollback was planned, a file that could not be read when the checkpoint was made, a
file git lists as modified on every look, a store that has compiled many ignore files, and the
package's names in a process that has loaded none of them yet."""

from __future__ import annotations

import errno
import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from memory_core import checkpoints, config
from memory_core.checkpoints import build as checkpoint_build
from memory_core.checkpoints.disk import StoredRules
from memory_core.store import Store
from tests.conftest import count_file_reads, git
from tests.conftest import write_file as _write


@pytest.fixture
def project(store: Store) -> Store:
    config.set_value(store.root, "checkpoints.watchman", False)
    _write(store.root, "app.py", "print('v1')\n")
    _write(store.root, "private/notes.txt", "someone else's notes\n")
    return store


def test_a_file_that_became_a_folder_after_the_plan_is_reported_and_the_rest_restored(
    project: Store,
) -> None:
    """The plan removes `build`, a file made after the checkpoint; before the user confirms,
    a tool makes build/ a folder of its output. That one removal fails with a message, the
    folder keeps its file, and every other file is still restored."""
    root = project.root
    first = checkpoints.create(project)
    _write(root, "app.py", "print('v2')\n")
    _write(root, "build", "made after the checkpoint\n")
    plan = checkpoints.plan_rollback(project, first["id"])
    assert plan.removes == ["build"]
    (root / "build").unlink()
    _write(root, "build/out.o", "object code\n")
    undo = checkpoints.prepare_undo(project, plan)
    result = checkpoints.apply_plan(project, plan, undo_checkpoint=undo["id"])
    assert not result["done"]
    assert [f["path"] for f in result["failed"]] == ["build"]
    assert "directory" in result["failed"][0]["error"].lower()
    assert (root / "build/out.o").read_text() == "object code\n"
    assert result["restored"] == ["app.py"]
    assert (root / "app.py").read_text() == "print('v1')\n"


def test_a_disk_full_on_one_file_is_reported_and_leaves_no_temp_file(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills up as one deleted file is put back: that file is reported with the
    system's own message, no temp file is left beside it, and the other files are restored."""
    root = project.root
    _write(root, "docs/guide.md", "# Guide\n")
    first = checkpoints.create(project)
    (root / "docs/guide.md").unlink()
    _write(root, "app.py", "print('v2')\n")
    real_replace = os.replace

    def disk_full(src: Any, dst: Any, **kwargs: Any) -> None:
        if dst == "guide.md":
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst, **kwargs)

    plan = checkpoints.plan_rollback(project, first["id"])
    undo = checkpoints.prepare_undo(project, plan)
    monkeypatch.setattr(os, "replace", disk_full)
    result = checkpoints.apply_plan(project, plan, undo_checkpoint=undo["id"])
    monkeypatch.undo()
    assert not result["done"]
    assert result["failed"] == [
        {"path": "docs/guide.md", "error": "[Errno 28] No space left on device"}
    ]
    assert result["restored"] == ["app.py"]
    assert (root / "app.py").read_text() == "print('v1')\n"
    assert sorted(p.name for p in (root / "docs").iterdir()) == []


def test_what_a_checkpoint_could_not_read_is_kept_and_newer_files_still_go(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that could not be read when the checkpoint was made (permission denied) is never
    removed by a rollback to it; a file created after the checkpoint elsewhere still is."""
    root = project.root
    real_read = checkpoint_build.read_file

    def denied(top: Path, rel: str, kind: str) -> bytes:
        if rel == "private/notes.txt":
            raise PermissionError(13, "Permission denied", str(top / rel))
        return real_read(top, rel, kind)

    monkeypatch.setattr(checkpoint_build, "read_file", denied)
    made = checkpoints.create(project)
    monkeypatch.undo()
    assert made["unreadable"] == ["private/notes.txt"]
    _write(root, "app.py", "print('v2')\n")
    _write(root, "scratch.py", "made after the checkpoint\n")
    result = checkpoints.rollback(project, made["id"])
    assert result["done"], result
    assert result["removed"] == ["scratch.py"]
    assert not (root / "scratch.py").exists()
    assert (root / "private/notes.txt").read_text() == "someone else's notes\n"
    assert (root / "app.py").read_text() == "print('v1')\n"


def test_a_file_git_lists_as_modified_is_not_read_again_while_unchanged(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git names every file modified since HEAD on every look: one whose stat is what the
    previous checkpoint hashed is not read again, nor counted as changed."""
    root = project.root
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    _write(root, "app.py", "print('edited, not committed')\n")
    checkpoints.create(project)
    reads = count_file_reads(monkeypatch)
    second = checkpoints.create(project)
    assert second["source"] == "git", second
    assert (reads, second["changed"]) == ([], 0)


def test_the_kept_ignore_rules_are_bounded_and_their_pruning_keeps_the_rest_of_the_store(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each distinct set of ignore-file lines is compiled once and kept; past the limit the
    old ones go (compiled again when needed), and nothing else the store keeps goes with them."""
    checkpoints.create(project)
    stored = checkpoints.stored_bytes(project)
    assert stored > 0
    monkeypatch.setattr(StoredRules, "MOST", 3)
    rules = StoredRules(project)
    for n in range(3):
        rules.put(f"lines-{n}", f"compiled {n}")
    assert rules.get("lines-2") == "compiled 2"
    rules.put("lines-3", "compiled 3")
    # (However many rules the checkpoint itself kept, the oldest of these is gone by now.)
    assert (rules.get("lines-0"), rules.get("lines-3")) == (None, "compiled 3")
    assert checkpoints.stored_bytes(project) == stored


def test_every_exported_name_resolves_in_a_fresh_import_of_the_package() -> None:
    """`from memory_core.checkpoints import X` loads X's module on first use: each name in
    `__all__` resolves, in a copy of the package that has loaded nothing yet (as a new
    process's), to the very object the package gives."""
    spec = importlib.util.find_spec("memory_core.checkpoints")
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    for name in checkpoints.__all__:
        assert getattr(fresh, name) is getattr(checkpoints, name), name
    with pytest.raises(AttributeError):
        _ = fresh.no_such_name
