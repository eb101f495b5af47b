"""Checkpoint storage: small blobs packed together, large ones alone, blobs of older stores
still read, and packs collected only when none of their blobs is referenced."""

from __future__ import annotations

import os

from memory_core import checkpoints, config
from memory_core.checkpoints import trees as checkpoint_trees
from memory_core.store import Store


def _write(root: os.PathLike[str], rel: str, data: bytes) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    os.utime(path, (1_600_000_000, 1_600_000_000))


def test_small_files_share_a_pack_and_large_ones_are_stored_alone(store: Store) -> None:
    config.set_value(store.root, "checkpoints.watchman", False)
    for index in range(200):
        _write(
            store.root, f"src/m{index:03d}.py", f"def f{index}():\n    return {index}\n".encode()
        )
    big = os.urandom(100_000)
    _write(store.root, "assets/big.bin", big)
    made = checkpoints.create(store)
    packs = store.query_one("SELECT COUNT(*) FROM checkpoint_packs")
    alone = store.query_one("SELECT COUNT(*) FROM checkpoint_objects WHERE pack IS NULL")
    assert packs is not None and alone is not None
    assert packs[0] == 1 and alone[0] == 1
    # 200 similar files compressed together take far less than 200 compressed one by one.
    pack_bytes = store.query_one("SELECT LENGTH(data) FROM checkpoint_packs")
    assert pack_bytes is not None and pack_bytes[0] < 200 * 40
    for index in (0, 57, 199):
        os.unlink(store.root / f"src/m{index:03d}.py")
    os.unlink(store.root / "assets/big.bin")
    checkpoints.rollback(store, made["id"])
    assert (store.root / "src/m057.py").read_text() == "def f57():\n    return 57\n"
    assert (store.root / "assets/big.bin").read_bytes() == big


def test_blobs_stored_before_packing_are_still_read(store: Store) -> None:
    data = b"stored by an older engram\n"
    digest = checkpoint_trees.sha(data)
    packed = checkpoint_trees.compress(data)
    with store.transaction() as db:
        db.execute(
            "INSERT INTO checkpoint_blobs (hash, size, stored_size, data) VALUES (?, ?, ?, ?)",
            (digest, len(data), len(packed), packed),
        )
    assert checkpoints.read_blob(store, digest) == data


def _rows(store: Store, table: str) -> int:
    row = store.query_one(f"SELECT COUNT(*) FROM {table}")
    assert row is not None
    return int(row[0])


def test_content_an_earlier_checkpoint_stored_is_not_stored_again(store: Store) -> None:
    """A new file (or one copied, renamed, reverted) whose content the store already holds,
    packed, unpacked or from an older engram, adds only the listings above it."""
    config.set_value(store.root, "checkpoints.watchman", False)
    small, big, older = b"print('hello')\n" * 20, os.urandom(50_000), b"from an older store\n"
    _write(store.root, "src/a.py", small)
    _write(store.root, "assets/a.bin", big)
    checkpoints.create(store)
    with store.transaction() as db:
        packed = checkpoint_trees.compress(older)
        db.execute(
            "INSERT INTO checkpoint_blobs (hash, size, stored_size, data) VALUES (?, ?, ?, ?)",
            (checkpoint_trees.sha(older), len(older), len(packed), packed),
        )
    objects, packs = _rows(store, "checkpoint_objects"), _rows(store, "checkpoint_packs")
    _write(store.root, "src/copy.py", small)
    _write(store.root, "assets/copy.bin", big)
    _write(store.root, "old.txt", older)
    made = checkpoints.create(store)
    assert made["changed"] == 3
    assert (_rows(store, "checkpoint_objects"), _rows(store, "checkpoint_packs")) == (
        objects,
        packs,
    )
    listings = store.query_one(
        "SELECT SUM(LENGTH(data)) FROM checkpoint_trees WHERE hash IN "
        "(SELECT root_tree FROM checkpoints WHERE id = ?)",
        (made["id"],),
    )
    assert listings is not None and made["added_bytes"] > listings[0]  # root, src/, assets/
    assert checkpoints.file_content(store, made["id"], "old.txt") == older
    assert checkpoints.file_content(store, made["id"], "assets/copy.bin") == big


def test_a_pack_stays_while_one_of_its_blobs_is_referenced(store: Store) -> None:
    config.set_value(store.root, "checkpoints.watchman", False)
    _write(store.root, "keep.txt", b"kept in every checkpoint\n")
    _write(store.root, "gone.txt", b"only in the first\n")
    first = checkpoints.create(store)
    os.unlink(store.root / "gone.txt")
    second = checkpoints.create(store)
    checkpoints.delete(store, first["id"])
    # keep.txt shares the first pack with gone.txt: the pack stays, keep.txt still reads.
    files = {i["path"]: i["hash"] for i in checkpoints.manifest(store, second["id"])}
    assert checkpoints.read_blob(store, files["keep.txt"]) == b"kept in every checkpoint\n"
    assert checkpoints.stored_bytes(store) == checkpoints.space(store)["stored_bytes"]
    checkpoints.delete(store, second["id"])
    empty = store.query_one("SELECT COUNT(*) FROM checkpoint_packs")
    assert empty is not None and empty[0] == 0
    assert checkpoints.stored_bytes(store) == 0


def test_a_mostly_dead_pack_is_rewritten_so_retention_frees_space(store: Store) -> None:
    config.set_value(store.root, "checkpoints.watchman", False)
    for index in range(100):
        _write(store.root, f"gen/f{index:03d}.txt", os.urandom(300).hex().encode())
    first = checkpoints.create(store)
    for index in range(1, 100):
        os.unlink(store.root / f"gen/f{index:03d}.txt")
    second = checkpoints.create(store)
    before = checkpoints.stored_bytes(store)
    checkpoints.delete(store, first["id"])
    # One file of the hundred is still referenced: its pack is rewritten with it alone.
    assert checkpoints.stored_bytes(store) < before / 5
    assert checkpoints.stored_bytes(store) == checkpoints.space(store)["stored_bytes"]
    (item,) = checkpoints.manifest(store, second["id"])
    assert checkpoints.read_blob(store, item["hash"]) == (store.root / item["path"]).read_bytes()
