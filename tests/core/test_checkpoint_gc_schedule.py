"""Garbage collection after retention is spread out: a full collection walks every listing of
every checkpoint kept, so it runs once an eighth of `checkpoints.max_count` was removed, or
when the store is over its cap (before any checkpoint is removed for space), not after every
checkpoint once the count limit is reached; and it never collects what a checkpoint committed
while it ran uses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core import checkpoints, config
from memory_core.checkpoints import retention
from memory_core.store import Store


def _stored_blobs(store: Store) -> int:
    row = store.query_one("SELECT COUNT(*) FROM checkpoint_objects")
    assert row is not None
    return int(row[0])


def _referenced_blobs(store: Store) -> int:
    return len(
        {
            item["hash"]
            for c in checkpoints.list_checkpoints(store)
            for item in checkpoints.manifest(store, c["id"])
        }
    )


def _change(root: Path) -> None:
    # Incompressible and over the packing size: each version is a blob of its own, 40 kB.
    (root / "data.txt").write_text(os.urandom(20_000).hex())


def test_garbage_waits_for_an_eighth_of_the_kept_count_then_all_of_it_goes(store: Store) -> None:
    settings = config.load(store.root, overrides={"checkpoints.max_count": 16})
    for _ in range(16):
        _change(store.root)
        checkpoints.create(store, settings=settings)
    assert _stored_blobs(store) == 16
    _change(store.root)
    checkpoints.create(store, settings=settings)  # removes the oldest: 1 of the 2 (16 / 8)
    assert len(checkpoints.list_checkpoints(store)) == 16
    assert _stored_blobs(store) == 17  # its content waits
    _change(store.root)
    checkpoints.create(store, settings=settings)  # the second removal: collected now
    assert _stored_blobs(store) == _referenced_blobs(store) == 16
    assert checkpoints.stored_bytes(store) == checkpoints.space(store)["stored_bytes"]


def test_a_collection_owed_is_made_after_the_answer_where_the_answer_comes_first(
    store: Store,
) -> None:
    """The resident server's child answers before it closes its stores: the collection the
    count limit owes (a walk of every listing kept) comes after its answer, and before any
    other command reads the store."""
    from memory_core import store as store_module

    settings = config.load(store.root, overrides={"checkpoints.max_count": 8})
    for _ in range(8):
        _change(store.root)
        checkpoints.create(store, settings=settings)
    assert _stored_blobs(store) == 8
    _change(store.root)
    store_module.defer_closing()  # what the resident child does before it runs the command
    try:
        made = checkpoints.create(store, settings=settings)  # removes one: 1 of 1 (8 / 8)
        assert made["removed_by_retention"]  # answered: retention told, the garbage still there
        assert _stored_blobs(store) == 9
    finally:
        store_module.close_deferred()  # the child, once its client has the exit code
    assert _stored_blobs(store) == _referenced_blobs(store) == 8


def test_a_collection_left_undone_after_the_answer_is_made_by_the_next_checkpoint(
    store: Store,
) -> None:
    """The child killed between its answer and the collection: nothing a checkpoint holds is
    lost, and the next checkpoint collects what is owed."""
    from memory_core import store as store_module

    settings = config.load(store.root, overrides={"checkpoints.max_count": 8})
    for _ in range(8):
        _change(store.root)
        checkpoints.create(store, settings=settings)
    _change(store.root)
    store_module.defer_closing()
    try:
        checkpoints.create(store, settings=settings)
    finally:
        store_module._later.clear()  # (killed: the work after the answer never runs)
        store_module.close_deferred()
    assert _stored_blobs(store) == 9
    assert all(checkpoints.manifest(store, c["id"]) for c in checkpoints.list_checkpoints(store))
    (store.root / "other.txt").write_text("a file more, data.txt unchanged\n")
    checkpoints.create(store, settings=settings)  # removes one more, and collects
    assert _stored_blobs(store) == _referenced_blobs(store) == 8


def test_over_its_cap_the_store_collects_garbage_before_removing_checkpoints(
    store: Store,
) -> None:
    settings = config.load(store.root, overrides={"checkpoints.max_count": 24})
    for _ in range(25):
        _change(store.root)
        checkpoints.create(store, settings=settings)
    assert _stored_blobs(store) == 25  # one removal waits (3 are allowed to)
    capped = config.load(
        store.root,
        overrides={
            "checkpoints.max_count": 24,
            "checkpoints.store_cap_bytes": checkpoints.stored_bytes(store) - 1,
        },
    )
    _change(store.root)
    checkpoints.create(store, settings=capped)
    # Adding 40 kB and collecting the two dead 40 kB blobs brings it under the cap: no
    # checkpoint had to go for space.
    assert len(checkpoints.list_checkpoints(store)) == 24
    assert checkpoints.stored_bytes(store) <= capped["checkpoints.store_cap_bytes"]
    assert _stored_blobs(store) == _referenced_blobs(store) == 24


def test_a_checkpoint_committed_while_garbage_is_marked_keeps_its_content(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process (a hook, the server) may commit a checkpoint while a collection marks
    what is live without the write lock: the collection marks it too before it deletes."""
    _change(store.root)
    checkpoints.create(store)
    _change(store.root)
    made: list[dict[str, object]] = []
    real_load = retention.load_tree

    def load_while_another_process_commits(*args: object, **kwargs: object) -> object:
        if not made:
            with Store.open(store.root) as other:
                made.append(checkpoints.create(other))
        return real_load(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(retention, "load_tree", load_while_another_process_commits)
    checkpoints.gc(store)
    monkeypatch.undo()
    for item in checkpoints.manifest(store, str(made[0]["id"])):
        assert checkpoints.read_blob(store, item["hash"], path=item["path"])
