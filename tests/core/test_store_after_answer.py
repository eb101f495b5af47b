"""Work a resident child leaves for after its answer (memory_core/store.py `after_answer`,
`later`, `close_deferred`), in-process: it runs in order once the answer is out, a failure in
it is logged and never stops the rest, and until it is done every other opening of the store
waits on the after-answer lock (real files, real `flock`: two descriptions of one file conflict
even in one process, so no second process is needed). tests/cli/test_resident.py drives the
same through a resident server."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core import log
from memory_core import store as store_module
from memory_core.store import AFTER_ANSWER_LOCK, Store
from memory_core.workspace import STORE_DIRNAME
from tests.conftest import put_initialised_store


@pytest.fixture
def root(workspace: Path, initialised_store: Path) -> Path:
    put_initialised_store(initialised_store, workspace)
    return workspace


@pytest.fixture
def answering_first() -> Iterator[None]:
    """This process answers first (as a resident child), and is back to cold after."""
    store_module.defer_closing()
    try:
        yield
    finally:
        store_module.close_deferred()
    assert not store_module.answers_first()


def _lock_file(root: Path) -> Path:
    return root / STORE_DIRNAME / AFTER_ANSWER_LOCK


def _held_by_someone(root: Path) -> bool:
    """Whether the after-answer lock is held (tried through a description of our own)."""
    fd = os.open(_lock_file(root), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _hold(root: Path) -> int:
    """Hold the lock as another process's work after its answer would."""
    fd = os.open(_lock_file(root), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _log(root: Path) -> str:
    path = log.log_path(root)
    return path.read_text() if path.exists() else ""


def _count(store: Store) -> int:
    row = store.query_one("SELECT COUNT(*) FROM sqlite_master")
    assert row is not None
    return int(row[0])


def test_a_cold_process_does_the_work_at_once_on_the_same_store(root: Path) -> None:
    assert not store_module.answers_first()
    seen: list[Store] = []
    with Store.open(root) as opened:
        store_module.after_answer(opened, seen.append)
        assert seen == [opened]
    done: list[str] = []
    store_module.later(root, lambda: done.append("recorded"))
    assert done == ["recorded"]
    assert not _lock_file(root).exists()  # no lock made where nothing is left for later


def test_work_after_the_answer_runs_at_close_in_order_then_releases_the_lock(
    root: Path,
) -> None:
    store_module.defer_closing()
    assert store_module.answers_first()
    done: list[str] = []
    held_during: list[bool] = []

    def recorded(name: str) -> None:
        held_during.append(_held_by_someone(root))
        done.append(name)

    def after(name: str) -> object:
        def work(store: Store) -> None:
            assert _count(store) > 0  # the store, opened again
            recorded(name)

        return work

    opened = Store.open(root)
    store_module.after_answer(opened, after("notes 1"))  # type: ignore[arg-type]
    store_module.later(root, lambda: recorded("event 1"))
    store_module.after_answer(opened, after("notes 2"))  # type: ignore[arg-type]
    store_module.later(root, lambda: recorded("event 2"))
    opened.close()
    assert done == []  # nothing before the answer
    assert _held_by_someone(root)
    assert stat.S_IMODE(_lock_file(root).stat().st_mode) == 0o600
    store_module.close_deferred()
    # Events recorded first (in the order they came), then the work on the store.
    assert done == ["event 1", "event 2", "notes 1", "notes 2"]
    assert held_during == [True] * 4
    assert not _held_by_someone(root)
    assert not store_module.answers_first()
    with pytest.raises(sqlite3.ProgrammingError):  # its deferred connection is closed
        opened.query("SELECT 1")


def test_a_failure_after_the_answer_is_logged_and_the_rest_still_runs(
    root: Path, answering_first: None
) -> None:
    done: list[str] = []

    def broken_event() -> None:
        raise RuntimeError("event went wrong")

    def broken_work(store: Store) -> None:
        raise ValueError("notes went wrong")

    with Store.open(root) as opened:
        store_module.later(root, broken_event)
        store_module.later(root, lambda: done.append("event"))
        store_module.after_answer(opened, broken_work)
        store_module.after_answer(opened, lambda store: done.append("notes"))
    store_module.close_deferred()  # never raises
    assert done == ["event", "notes"]
    text = _log(root)
    assert "ERROR" in text and "work after the answer failed: event went wrong" in text
    assert "WARNING" in text and "work after the answer failed: notes went wrong" in text
    assert "RuntimeError" in text and "ValueError" in text  # with their tracebacks
    assert not _held_by_someone(root)


def test_work_on_a_store_gone_before_it_ran_is_logged_as_not_done(
    root: Path, answering_first: None
) -> None:
    done: list[str] = []
    opened = Store.open(root)
    store_module.after_answer(opened, lambda store: done.append("first"))
    store_module.after_answer(opened, lambda store: done.append("second"))
    opened.close()
    db = root / STORE_DIRNAME / store_module.DB_NAME
    assert db.exists()
    os.rename(db, db.with_name("moved.db"))
    store_module.close_deferred()
    assert done == []
    text = _log(root)
    assert text.count("WARNING") == 2 and text.count("work after the answer not done") == 2


def test_work_is_done_at_once_while_another_process_holds_the_store(
    root: Path, answering_first: None
) -> None:
    opened = Store.open(root)
    other = _hold(root)
    try:
        assert store_module.hold_until_worked(root, wait=False) is False
        seen: list[str] = []
        store_module.after_answer(opened, lambda store: seen.append("now"))
        assert seen == ["now"]  # not left for later: the other may wait for our transaction
    finally:
        os.close(other)
        opened.close()
    assert store_module.hold_until_worked(root, wait=False) is True
    assert store_module.hold_until_worked(root) is True  # held already: no second wait
    assert _held_by_someone(root)
    store_module.close_deferred()
    assert not _held_by_someone(root)


def test_an_event_is_recorded_at_once_where_no_lock_can_be_made(
    tmp_path: Path, answering_first: None
) -> None:
    # No store folder yet (the event is the one that creates the store): nothing to read.
    done: list[str] = []
    store_module.later(tmp_path, lambda: done.append("recorded"))
    assert done == ["recorded"]
    assert store_module.hold_until_worked(tmp_path, wait=False) is False
    assert not (tmp_path / STORE_DIRNAME).exists()


def test_another_opening_waits_while_the_work_is_held_and_goes_on_after_its_time(
    root: Path,
) -> None:
    folder = root / STORE_DIRNAME
    other = _hold(root)
    try:
        started = time.monotonic()
        store_module.wait_for_work_after_answer(folder, seconds=0.05)
        waited = time.monotonic() - started
    finally:
        os.close(other)
    assert waited >= 0.05  # it did wait for the other's work
    assert waited < 1.0  # and went on at its time
    started = time.monotonic()
    store_module.wait_for_work_after_answer(folder, seconds=5.0)
    assert time.monotonic() - started < 1.0  # released: at once


def test_a_process_never_waits_for_its_own_work(root: Path, answering_first: None) -> None:
    assert store_module.hold_until_worked(root) is True
    started = time.monotonic()
    store_module.wait_for_work_after_answer(root / STORE_DIRNAME, seconds=5.0)
    with Store.open(root) as opened:  # the work's own opening, while holding the lock
        assert _count(opened) > 0
    assert time.monotonic() - started < 1.0


def test_no_lock_file_means_no_wait(root: Path) -> None:
    assert not _lock_file(root).exists()
    store_module.wait_for_work_after_answer(root / STORE_DIRNAME, seconds=5.0)
    assert not _lock_file(root).exists()  # an opening never makes one
