"""The one line a user reads when SQLite fails on the store, for real SQLite failures: what
happened, and what to do (or not to do) about it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_core.store import Store, StoreFaultError, store_fault


def _failure(sql_setup: list[str], sql: str, db: Path, uri: str | None = None) -> sqlite3.Error:
    conn = sqlite3.connect(uri or db, uri=uri is not None, timeout=0, isolation_level=None)
    try:
        for statement in sql_setup:
            conn.execute(statement)
        with pytest.raises(sqlite3.Error) as raised:
            conn.execute(sql)
        return raised.value
    finally:
        conn.close()


def test_a_full_disk_is_named_and_the_store_left_alone(store: Store) -> None:
    exc = _failure(
        ["PRAGMA max_page_count = 1"],
        "CREATE TABLE filler AS SELECT zeroblob(100000) AS x",
        store.db_path,
    )
    fault = store_fault(exc, store.db_path)
    assert fault.cause == "disk-full"
    assert fault.one_line().startswith(
        f"cannot write to the store {store.db_path}: the disk is full"
    )
    assert "free some disk space and retry; the store itself is fine" in fault.one_line()


def test_a_read_only_store_is_named_with_how_to_fix_it(store: Store) -> None:
    exc = _failure(
        [],
        "INSERT INTO store_meta VALUES ('k', 'v')",
        store.db_path,
        f"file:{store.db_path}?mode=ro",
    )
    fault = store_fault(exc, store.db_path, opening=True)
    assert fault.cause == "read-only"
    assert fault.one_line().startswith(f"cannot open the store {store.db_path}: it is read-only")
    assert "make .engram/ and its files writable by you" in fault.one_line()
    assert "nothing was changed" in fault.one_line()


def test_a_store_locked_by_another_process_says_to_retry(store: Store) -> None:
    holder = sqlite3.connect(store.db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        exc = _failure([], "BEGIN IMMEDIATE", store.db_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    fault = store_fault(exc, store.db_path)
    assert fault.cause == "busy"
    assert fault.one_line() == (
        f"the store {store.db_path} is locked by another process ({exc}) "
        "(retry when the other engram command has finished)"
    )


def test_a_damaged_file_is_named_and_the_way_out_given(tmp_path: Path) -> None:
    garbage = tmp_path / "engram.db"
    garbage.write_bytes(b"definitely not sqlite" * 200)
    exc = _failure([], "SELECT * FROM sqlite_master", garbage)
    fault = store_fault(exc, garbage, opening=True)
    assert fault.cause == "corrupt"
    assert fault.one_line() == (
        f"the store {garbage} is damaged or not an engram store ({exc}) "
        "(restore .engram/engram.db from a backup, or move it aside and run engram init)"
    )


def test_an_unknown_failure_is_reported_only_when_asked(store: Store) -> None:
    exc = _failure([], "SELEC nothing", store.db_path)
    assert store_fault(exc, store.db_path, only_known=True) is None
    fault = store_fault(exc, store.db_path)
    assert fault.cause == "unreadable"
    assert fault.one_line() == (
        f"cannot write to the store {store.db_path}: {exc} "
        "(see .engram/engram.log; leave the store where it is)"
    )


def test_a_store_file_sqlite_cannot_open_is_reported_when_opening(workspace: Path) -> None:
    # SQLITE_CANTOPEN ("unable to open database file") says nothing the text check knows: only
    # the error's code names the cause. (A folder in the file's place makes it happen as root.)
    (workspace / ".engram" / "engram.db").mkdir(parents=True)
    db_path = workspace / ".engram" / "engram.db"
    with pytest.raises(StoreFaultError) as raised:
        Store.open(workspace)
    assert raised.value.cause == "read-only"
    assert raised.value.one_line().startswith(
        f"cannot open the store {db_path}: it is read-only (unable to open database file)"
    )
    assert db_path.is_dir()  # nothing replaced or created in its place


# SQLite's own messages, carried by an error without its code (raised again by another layer,
# or by an sqlite3 module that does not attach one): the text alone names the cause.
@pytest.mark.parametrize(
    ("message", "cause", "advice"),
    [
        ("database or disk is full", "disk-full", "free some disk space"),
        ("database disk image is malformed", "corrupt", "restore .engram/engram.db"),
        ("file is not a database", "corrupt", "restore .engram/engram.db"),
        ("attempt to write a readonly database", "read-only", "make .engram/ and its files"),
        ("read-only file system", "read-only", "make .engram/ and its files"),
        ("database is locked", "busy", "retry when the other engram command"),
        ("disk I/O error", "io", "check the disk and the file system"),
        ("no such table: memories", "unreadable", "see .engram/engram.log"),
    ],
)
def test_an_error_without_its_code_is_named_by_its_message(
    tmp_path: Path, message: str, cause: str, advice: str
) -> None:
    exc = sqlite3.OperationalError(message)
    assert getattr(exc, "sqlite_errorname", None) is None
    fault = store_fault(exc, tmp_path / "engram.db")
    assert fault.cause == cause
    assert fault.hint.startswith(advice)
    known = store_fault(exc, tmp_path / "engram.db", only_known=True)
    assert (known is None) == (cause == "unreadable")


def test_an_io_error_is_named_with_advice_to_check_the_disk(tmp_path: Path) -> None:
    db_path = tmp_path / "engram.db"
    fault = store_fault(sqlite3.OperationalError("disk I/O error"), db_path, opening=True)
    assert fault.one_line() == (
        f"cannot open the store {db_path}: the disk reported an I/O error (disk I/O error) "
        "(check the disk and the file system (dmesg); leave the store where it is)"
    )
