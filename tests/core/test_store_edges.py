"""The store at its edges, as a user meets them: a store folder or one of its files linked
elsewhere (the message names the link, where it points and what to do), the wait for another
process's lock as the caller set it, a disk at its limit named as such whatever SQLite calls
the failure, a store closed with a transaction open, and a store that never keeps its process
alive at exit."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core import store as store_module
from memory_core.errors import StoreError
from memory_core.store import Store, StoreFaultError, store_fault

HINT = (
    "engram keeps its store inside the project: replace the link with a real folder or file "
    "(move what it points to there), or remove it"
)


def _refusal(workspace: Path) -> str:
    with pytest.raises(StoreError) as raised:
        Store.open(workspace)
    return raised.value.one_line()


def test_a_linked_store_folder_is_refused_naming_the_link_and_where_it_points(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "shared-store"
    outside.mkdir()
    (workspace / ".engram").symlink_to(outside)
    link = workspace / ".engram"
    assert _refusal(workspace) == (
        f"refusing to use the store: {link} is a symbolic link (to {outside}) ({HINT})"
    )
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("name", ["engram.db-wal", "engram.db-shm", ".gitignore", "exports"])
def test_a_linked_file_inside_a_real_store_folder_is_refused(
    workspace: Path, tmp_path: Path, name: str
) -> None:
    Store.init(workspace).close()
    inside = workspace / ".engram" / name
    if inside.is_dir():
        inside.rmdir()
    else:
        inside.unlink(missing_ok=True)
    target = tmp_path / "elsewhere" / name  # dangling: the target does not exist
    inside.symlink_to(target)
    assert _refusal(workspace) == (
        f"refusing to use the store: {inside} is a symbolic link (to {target}) ({HINT})"
    )
    with pytest.raises(StoreError, match="is a symbolic link"):
        Store.init(workspace)
    assert not target.parent.exists()  # nothing created where the link points


def test_a_store_without_links_opens(workspace: Path, tmp_path: Path) -> None:
    """The negative control: a link elsewhere in the project is none of the store's business."""
    Store.init(workspace).close()
    (workspace / "docs").symlink_to(tmp_path)
    with Store.open(workspace) as opened:
        assert opened.schema_version > 0


@pytest.fixture
def locked(workspace: Path) -> Iterator[threading.Event]:
    """Another process's write lock on the store, let go when the test sets the event or after
    a second, whichever comes first."""
    Store.init(workspace).close()
    holder = sqlite3.connect(
        workspace / ".engram" / "engram.db", isolation_level=None, check_same_thread=False
    )
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Event()

    def hold() -> None:
        release.wait(1.0)
        holder.execute("ROLLBACK")
        holder.close()

    thread = threading.Thread(target=hold)
    thread.start()
    yield release
    release.set()
    thread.join()


OPENERS = {"open": Store.open, "init": Store.init, "open_or_init": Store.open_or_init}


@pytest.mark.parametrize("how", list(OPENERS))
def test_a_write_gives_up_on_a_locked_store_after_the_wait_the_caller_set(
    workspace: Path, locked: threading.Event, how: str
) -> None:
    """A hook opens the store with a short wait (it must never hold the agent up): with no
    wait at all its write is refused at once, even though the lock is let go a second later."""
    opened: Store | None = None
    try:
        with pytest.raises(StoreFaultError) as raised:
            opened = OPENERS[how](workspace, busy_timeout=0)
            with opened.transaction() as db:
                db.execute("INSERT INTO store_meta (key, value) VALUES ('k', 'v')")
        assert raised.value.cause == "busy"
        assert "retry when the other engram command has finished" in raised.value.one_line()
    finally:
        locked.set()
        if opened is not None:
            opened.close()


def _nearly_full(monkeypatch: pytest.MonkeyPatch, free_bytes: int) -> None:
    """The file system reports `free_bytes` left. A really full disk cannot be made here
    without mount privileges; SQLite's failure itself is real (or SQLite's own text)."""
    real = os.statvfs

    class Report:
        def __init__(self, path: Any) -> None:
            found = real(path)
            self.f_frsize = found.f_frsize
            self.f_bavail = free_bytes // found.f_frsize

    monkeypatch.setattr(os, "statvfs", Report)


def test_an_io_error_on_a_full_disk_is_named_as_a_full_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite reports a WAL that could not grow as an I/O error at times: with the disk full,
    the user is told to free space, not to check the disk."""
    db_path = tmp_path / "engram.db"
    _nearly_full(monkeypatch, 4096)
    fault = store_fault(sqlite3.OperationalError("disk I/O error"), db_path)
    assert fault.cause == "disk-full"
    assert fault.one_line() == (
        f"cannot write to the store {db_path}: the disk is full (disk I/O error) "
        "(free some disk space and retry; the store itself is fine, leave it where it is)"
    )
    unknown = sqlite3.OperationalError("some failure SQLite does not explain")
    assert store_fault(unknown, db_path, only_known=True) is not None  # a full disk is known


def test_other_faults_on_a_full_disk_keep_their_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path = tmp_path / "engram.db"
    _nearly_full(monkeypatch, 4096)
    for message, cause in (
        ("attempt to write a readonly database", "read-only"),
        ("database is locked", "busy"),
        ("database disk image is malformed", "corrupt"),
    ):
        assert store_fault(sqlite3.OperationalError(message), db_path).cause == cause


def test_an_io_error_with_room_on_the_disk_stays_an_io_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The boundary: 64 KiB free is enough room; just under it is a full disk."""
    db_path = tmp_path / "engram.db"
    _nearly_full(monkeypatch, 64 * 1024)
    assert store_fault(sqlite3.OperationalError("disk I/O error"), db_path).cause == "io"
    _nearly_full(monkeypatch, 60 * 1024)
    assert store_fault(sqlite3.OperationalError("disk I/O error"), db_path).cause == "disk-full"


@pytest.mark.parametrize(
    ("code", "cause"),
    [
        ("SQLITE_CANTOPEN_ISDIR", "read-only"),
        ("SQLITE_CANTOPEN_NOTEMPDIR", "read-only"),
        ("SQLITE_BUSY_TIMEOUT", "busy"),
        ("SQLITE_IOERR_SHORT_READ", "io"),
    ],
)
def test_an_extended_code_is_named_by_its_primary_code(
    tmp_path: Path, code: str, cause: str
) -> None:
    """SQLite's extended codes (`SQLITE_CANTOPEN_ISDIR`) carry a text that names no cause
    ("unable to open database file"): the primary code decides."""
    exc = sqlite3.OperationalError("unable to open database file")
    exc.sqlite_errorname = code  # type: ignore[attr-defined]
    assert store_fault(exc, tmp_path / "engram.db").cause == cause


def test_a_store_closed_with_its_transaction_open_lets_go_of_the_lock_at_once(
    workspace: Path,
) -> None:
    """Even while closes wait for the end of a command (the resident server's child), a store
    closed inside its transaction rolls back now: another process can write at once."""
    store_module.defer_closing()
    try:
        first = Store.init(workspace)
        block = first.transaction()
        db = block.__enter__()
        db.execute("INSERT INTO store_meta (key, value) VALUES ('lost', 'v')")
        first.close()
        with pytest.raises(StoreFaultError):  # its commit says the write did not happen
            block.__exit__(None, None, None)
        with Store.open(workspace, busy_timeout=0) as other:
            with other.transaction() as db2:
                db2.execute("INSERT INTO store_meta (key, value) VALUES ('next', 'v')")
            found = other.query("SELECT key FROM store_meta WHERE key IN ('lost', 'next')")
            assert [row[0] for row in found] == ["next"]
    finally:
        store_module.close_deferred()


def test_a_store_folding_its_log_never_keeps_the_process_alive(store: Store) -> None:
    """The language server's store folds its log on a thread of its own: a process that exits
    without closing the store (a crash, an editor killing it) must still exit, so the thread
    is one Python does not wait for."""
    before = set(threading.enumerate())
    store.fold_log_when_idle(quiet=0.05)
    started = set(threading.enumerate()) - before
    assert started
    assert [t.name for t in started if not t.daemon] == []


def _busy_timeout_ms(store: Store) -> int:
    row = store.query_one("PRAGMA busy_timeout")
    assert row is not None
    return int(row[0])


def test_how_long_a_write_waits_for_another_process_is_what_the_caller_set(
    workspace: Path,
) -> None:
    # A new store and an existing one both take the wait the caller asked for...
    with Store.open_or_init(workspace, busy_timeout=2.5) as created:
        assert _busy_timeout_ms(created) == 2500
    with Store.open_or_init(workspace, busy_timeout=0.25) as opened:
        assert _busy_timeout_ms(opened) == 250
        # ...and a command that must not wait long changes it later (`wait_when_busy`).
        opened.wait_when_busy(1.5)
        assert _busy_timeout_ms(opened) == 1500
