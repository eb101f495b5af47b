"""The collector pause around checkpoints, rollback plans and ingest chunks never leaves the
collector off: a long-running language server would then keep every reference cycle it makes."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import pytest

from memory_core import checkpoints, cyclic_gc
from memory_core.store import Store


def test_the_collector_is_off_inside_and_back_on_after_even_when_the_work_fails() -> None:
    assert gc.isenabled()
    with cyclic_gc.paused():
        assert not gc.isenabled()
        with cyclic_gc.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block does not switch it on under the outer one
    assert gc.isenabled()
    with pytest.raises(RuntimeError), cyclic_gc.paused():
        raise RuntimeError("the work failed")
    assert gc.isenabled()


def test_a_collector_the_caller_switched_off_stays_off(store: Store) -> None:
    (store.root / "a.py").write_text("print(1)\n")
    gc.disable()
    try:
        checkpoints.create(store)
        assert not gc.isenabled()
    finally:
        gc.enable()
    checkpoints.create(store)
    assert gc.isenabled()


def _cyclic_garbage(work: Callable[[], object]) -> list[object]:
    """What `work` left that only the cyclic collector could free."""
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)  # the collector keeps what it would free, to look at
    try:
        work()
        gc.collect()
        return list(gc.garbage)
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()


def test_checkpoints_and_rollback_plans_leave_nothing_for_the_collector(store: Store) -> None:
    """With the collector paused, whatever they leave in a reference cycle stays in memory
    until it runs: the recursive helpers of the scan, the capture and the comparison held
    every file and listing they read that way."""
    for index in range(12):
        path = store.root / f"pkg{index % 3}" / f"mod{index % 2}" / f"file{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"v0 {index}\n")
    first: dict[str, Any] = {}
    left = _cyclic_garbage(lambda: first.update(checkpoints.create(store)))  # a full scan
    assert [type(o).__name__ for o in left] == []
    (store.root / "pkg1" / "mod0" / "file4.py").write_text("v1\n")
    (store.root / "pkg2" / "new.py").write_text("new\n")
    left = _cyclic_garbage(lambda: checkpoints.create(store))
    assert [type(o).__name__ for o in left] == []
    (store.root / "pkg0" / "mod1" / "file3.py").write_text("v2\n")

    def rollback() -> None:
        plan = checkpoints.plan_rollback(store, first["id"])
        undo = checkpoints.prepare_undo(store, plan)
        checkpoints.apply_plan(store, plan, undo_checkpoint=undo["id"])

    left = _cyclic_garbage(rollback)
    assert [type(o).__name__ for o in left] == []
    assert (store.root / "pkg1" / "mod0" / "file4.py").read_text() == "v0 4\n"
