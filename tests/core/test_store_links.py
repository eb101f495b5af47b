"""The store only where it belongs: `.engram/` or one of its files as a symbolic link (to a
folder outside, dangling, or swapped in under a running engram) is refused with a clear message,
and nothing outside the project is written or has its mode changed."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from memory_core import events
from memory_core.errors import StoreError
from memory_core.store import Store
from tests.conftest import run_cli


def _snapshot(folder: Path) -> tuple[int, list[str]]:
    return stat.S_IMODE(folder.stat().st_mode), sorted(p.name for p in folder.iterdir())


def test_a_store_folder_linked_outside_is_refused_by_init_and_nothing_is_written_there(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir(mode=0o755)
    os.chmod(outside, 0o755)
    before = _snapshot(outside)
    (workspace / ".engram").symlink_to(outside)
    done = run_cli("init", cwd=workspace)
    assert done.code != 0
    assert "is a symbolic link" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert _snapshot(outside) == before  # no files, and still 0755 (not chmod 0700)
    with pytest.raises(StoreError):
        Store.init(workspace)
    assert _snapshot(outside) == before


def test_a_dangling_database_link_is_refused_and_its_target_never_created(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".engram").mkdir()
    target = tmp_path / "not-yet" / "engram.db"
    (workspace / ".engram" / "engram.db").symlink_to(target)
    for args in (["init"], ["status", "--json"], ["gotcha", "add", "x", "--json"]):
        done = run_cli(*args, cwd=workspace)
        assert done.code != 0, args
        assert "is a symbolic link" in (done.stdout + done.stderr), args
        assert "Traceback" not in done.stderr
    assert not target.exists() and not target.parent.exists()


def test_a_link_swapped_in_under_a_running_store_stops_its_writes(
    store: Store, tmp_path: Path
) -> None:
    events.append(store, events.Event("before.swap"))
    outside = tmp_path / "elsewhere"
    shutil.copytree(store.dir, outside)
    os.chmod(outside, 0o755)
    before = {p.name: p.read_bytes() for p in outside.iterdir() if p.is_file()}
    os.rename(store.dir, tmp_path / "moved-away")
    store.dir.symlink_to(outside)
    with pytest.raises(StoreError, match="is a symbolic link"):
        events.append(store, events.Event("after.swap"))
    assert {p.name: p.read_bytes() for p in outside.iterdir() if p.is_file()} == before
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755
