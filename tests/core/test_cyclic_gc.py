"""The collector pause around checkpoints, rollback plans and ingest chunks never leaves the
collector off: a long-running language server would then keep every reference cycle it makes."""

from __future__ import annotations

import gc

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
