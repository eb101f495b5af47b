"""A rollback survives a power loss: every restored file reaches the disk while it is still the
temporary file (so the path holds the old content or the restored one, never an empty file),
and every folder it was renamed into (or a file removed from) is synced after the rename.

A power loss cannot be made in a test, so the real `os.fsync` and `os.replace` are wrapped to
record what they were called on, in order; both still do their work.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memory_core import checkpoints
from memory_core.store import Store


def _write(root: Path, rel: str, data: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data)
    past = time.time() - 60
    os.utime(path, (past, past))


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """("fsync", path synced) and ("replace", path replaced), in the order they happened."""
    recorded: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def recording_fsync(fd: int) -> None:
        recorded.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def recording_replace(src: str | Path, dst: str | Path) -> None:
        real_replace(src, dst)
        recorded.append(("replace", str(dst)))

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    return recorded


def test_restored_files_reach_the_disk_before_the_rename_and_their_folders_after(
    store: Store, calls: list[tuple[str, str]]
) -> None:
    root = store.root
    _write(root, "src/app.py", "def main():\n    return 1\n")
    _write(root, "docs/guide.md", "# guide\n")
    checkpoint = checkpoints.create(store)
    _write(root, "src/app.py", "broken\n")
    _write(root, "docs/guide.md", "rewritten\n")
    _write(root, "notes/later.txt", "created after\n")
    _write(root, "docs/draft.md", "created after\n")
    plan = checkpoints.plan_rollback(store, checkpoint["id"])
    calls.clear()

    result = checkpoints.apply_plan(store, plan)

    assert result["done"] and sorted(result["restored"]) == ["docs/guide.md", "src/app.py"]
    assert (root / "src/app.py").read_text() == "def main():\n    return 1\n"
    for rel in ("src/app.py", "docs/guide.md"):
        target = str(root / rel)
        renamed = calls.index(("replace", target))
        # The content was synced under the temporary name, in the same folder, before the rename.
        synced_before = [
            path
            for kind, path in calls[:renamed]
            if kind == "fsync" and path.startswith(str(root / rel).rsplit("/", 1)[0] + "/.")
        ]
        assert any(
            Path(p).name.startswith(f".{Path(rel).name}.engram-rollback-") for p in synced_before
        )
        # The folder holding the rename was synced after it.
        assert ("fsync", str((root / rel).parent)) in calls[renamed + 1 :]
    # notes/ was emptied and removed: the workspace folder that lost it is synced; docs/ lost
    # draft.md.
    assert not (root / "notes").exists()
    synced = [path for kind, path in calls if kind == "fsync"]
    assert str(root) in synced and str(root / "docs") in synced
    # Once per folder, not once per file.
    assert synced.count(str(root / "docs")) == 1


def test_a_single_restored_file_syncs_its_folder_itself(
    store: Store, calls: list[tuple[str, str]]
) -> None:
    root = store.root
    _write(root, "src/app.py", "original\n")
    checkpoint = checkpoints.create(store)
    _write(root, "src/app.py", "edited\n")
    (write,) = checkpoints.plan_rollback(store, checkpoint["id"]).writes
    calls.clear()
    checkpoints.write_file(root, write)
    assert (root / "src/app.py").read_text() == "original\n"
    assert calls[-2:] == [("replace", str(root / "src/app.py")), ("fsync", str(root / "src"))]
    assert calls[0][0] == "fsync" and "/src/.app.py.engram-rollback-" in calls[0][1]
