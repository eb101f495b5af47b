"""Content is stored once and read back exactly however it was packed: files up to 32 KiB
share packs of about 256 KiB, larger ones are stored alone, a rollback reading many packs
gets every byte right, and what is not content (a named pipe) is never captured."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core import checkpoints, config
from memory_core.checkpoints.storage import PACK_MAX_BLOB, PACK_RAW_BYTES
from memory_core.store import Store


def _write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (1_600_000_000, 1_600_000_000))


def _count(store: Store, sql: str) -> int:
    row = store.query_one(sql)
    assert row is not None
    return int(row[0])


@pytest.fixture
def project(store: Store) -> Store:
    config.set_value(store.root, "checkpoints.watchman", False)
    return store


def test_the_size_limit_of_a_packed_file_is_inclusive(project: Store) -> None:
    _write(project.root, "at-limit.bin", os.urandom(PACK_MAX_BLOB))
    _write(project.root, "over-limit.bin", os.urandom(PACK_MAX_BLOB + 1))
    checkpoints.create(project)
    assert _count(project, "SELECT COUNT(*) FROM checkpoint_objects WHERE pack IS NULL") == 1
    alone = project.query_one("SELECT size FROM checkpoint_objects WHERE pack IS NULL")
    assert alone is not None and alone[0] == PACK_MAX_BLOB + 1
    assert _count(project, "SELECT COUNT(*) FROM checkpoint_packs") == 1


def test_a_rollback_reads_every_file_back_from_many_packs(project: Store) -> None:
    # About 2.5 MB of small files: ten packs, more than are kept decompressed in memory.
    contents = {
        f"gen/{index:03d}.txt": os.urandom(12_000).hex().encode()[: 24_000 - index]
        for index in range(100)
    }
    for rel, data in contents.items():
        _write(project.root, rel, data)
    _write(project.root, "gen/copy.txt", contents["gen/007.txt"])  # stored once
    made = checkpoints.create(project)
    packs = _count(project, "SELECT COUNT(*) FROM checkpoint_packs")
    assert packs >= sum(len(d) for d in contents.values()) // PACK_RAW_BYTES
    assert _count(project, "SELECT COUNT(*) FROM checkpoint_objects") == 100
    for rel in contents:
        _write(project.root, rel, b"overwritten")
    result = checkpoints.rollback(project, made["id"], undo=False)
    assert len(result["restored"]) == 100
    for rel, data in [*contents.items(), ("gen/copy.txt", contents["gen/007.txt"])]:
        assert (project.root / rel).read_bytes() == data, rel


def test_a_named_pipe_is_not_captured_and_does_not_block(project: Store) -> None:
    _write(project.root, "README.md", b"# demo\n")
    os.mkfifo(project.root / "events.fifo")
    made = checkpoints.create(project)
    assert [i["path"] for i in checkpoints.manifest(project, made["id"])] == ["README.md"]
    result = checkpoints.rollback(project, made["id"], undo=False)
    assert result["removed"] == [] and (project.root / "events.fifo").exists()
