"""The one line a user reads when SQLite fails on the store, for real SQLite failures: what
happened, and what to do (or not to do) about it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_core.store import Store, store_fault


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
    assert fault.one_line().startswith(f"the store {garbage} is damaged or not an engram store")
    assert "restore .engram/engram.db from a backup, or move it aside and run engram init" in (
        fault.one_line()
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
