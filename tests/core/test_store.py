"""The store: modes, WAL, transactions, migrations, and a newer schema refused."""

from __future__ import annotations

import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest

from memory_core import events
from memory_core.errors import StoreError
from memory_core.events import Event
from memory_core.store import Store, latest_schema_version, migrations, write_private_file


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_init_creates_a_private_store_in_wal_mode(workspace: Path) -> None:
    with Store.init(workspace) as store:
        events.append(store, Event("test.write"))
        assert store.query_one("PRAGMA journal_mode")[0] == "wal"  # type: ignore[index]
        assert mode(store.dir) == 0o700
        assert mode(store.dir / "exports") == 0o700
        assert mode(store.db_path) == 0o600
        assert mode(store.dir / ".gitignore") == 0o600
        # SQLite gives the WAL the database file's mode.
        assert mode(store.dir / "engram.db-wal") == 0o600


def test_gitignore_keeps_everything_but_team_out_of_git(workspace: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    with Store.init(workspace) as store:
        (store.dir / "team").mkdir()
        (store.dir / "team" / "gotchas.toml").write_text("# shared\n")
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert ".engram/team/gotchas.toml" in listed
    assert ".engram/.gitignore" in listed
    assert not [p for p in listed if "engram.db" in p]


def test_a_failed_transaction_leaves_nothing_behind(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction() as db:
        events.append(store, Event("half.done"), db=db)
        raise RuntimeError("crash in the middle")
    assert events.recent(store, kind="half.done") == []


def test_events_are_append_only(store: Store) -> None:
    event_id = events.append(
        store, Event("file.changed", actor="editor", path="a.py", data={"lines": [1, 2]})
    )
    with pytest.raises(sqlite3.IntegrityError, match="append-only"), store.transaction() as db:
        db.execute("UPDATE events SET kind = 'rewritten' WHERE id = ?", (event_id,))
    (stored,) = events.recent(store)
    assert (stored.kind, stored.actor, stored.path, stored.data) == (
        "file.changed",
        "editor",
        "a.py",
        {"lines": [1, 2]},
    )


def test_event_text_is_redacted_before_it_is_stored(store: Store) -> None:
    secret = "ghp_" + "a1B2" * 10
    events.append(
        store,
        Event("command.failed", data={"command": f"git push https://bob:{secret}@github.com/x"}),
    )
    store.close()
    raw = b"".join(p.read_bytes() for p in store.dir.glob("engram.db*"))
    assert secret.encode() not in raw


def test_a_store_from_a_newer_engram_is_refused_and_left_untouched(workspace: Path) -> None:
    Store.init(workspace).close()
    db_path = workspace / ".engram" / "engram.db"
    with sqlite3.connect(db_path) as raw:
        raw.execute(f"PRAGMA user_version = {latest_schema_version() + 7}")
    before = db_path.read_bytes()
    with pytest.raises(StoreError, match="newer than this engram knows") as raised:
        Store.open(workspace)
    assert raised.value.one_line() == (
        f"the store {db_path} has schema version {latest_schema_version() + 7}, newer than "
        f"this engram knows ({latest_schema_version()}) "
        "(upgrade engram; the store was left untouched)"
    )
    assert db_path.read_bytes() == before


def test_opening_migrates_an_older_store_forward(workspace: Path) -> None:
    # A store as the first engram wrote it: only migration 0001 applied.
    (workspace / ".engram").mkdir()
    db_path = workspace / ".engram" / "engram.db"
    first_version, first_script = migrations()[0]
    with sqlite3.connect(db_path) as raw:
        raw.executescript(first_script.read_text())
        raw.execute(f"PRAGMA user_version = {first_version}")
        raw.execute("INSERT INTO events (ts, kind, data) VALUES (1.0, 'old.event', '{}')")
    with Store.open(workspace) as store:
        assert store.schema_version == latest_schema_version()
        assert [e.kind for e in events.recent(store)] == ["old.event"]


def test_a_file_that_is_not_a_database_is_a_clear_error(workspace: Path) -> None:
    (workspace / ".engram").mkdir()
    (workspace / ".engram" / "engram.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="damaged or not an engram store"):
        Store.open(workspace)


def test_open_without_a_store_says_how_to_make_one(workspace: Path) -> None:
    with pytest.raises(StoreError) as raised:
        Store.open(workspace)
    assert raised.value.one_line().startswith(
        f"no engram store here (run engram init): looked in {workspace} and above"
    )


def test_private_files_are_written_whole(tmp_path: Path) -> None:
    target = tmp_path / "exports" / "gotchas.md"
    write_private_file(target, "first")
    write_private_file(target, "second")
    assert target.read_text() == "second"
    assert mode(target) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["gotchas.md"]


def test_a_nested_transaction_rolls_back_alone_and_commits_with_the_outer_one(store: Store) -> None:
    with store.transaction() as db:
        events.append(store, Event("outer.before"), db=db)
        with pytest.raises(RuntimeError), store.transaction() as inner:
            events.append(store, Event("inner.failed"), db=inner)
            raise RuntimeError("one library call fails")
        with store.transaction() as inner:
            events.append(store, Event("inner.kept"), db=inner)
    assert sorted(e.kind for e in events.recent(store)) == ["inner.kept", "outer.before"]

    with pytest.raises(RuntimeError), store.transaction() as db:
        with store.transaction() as inner:
            events.append(store, Event("inner.of.failed.outer"), db=inner)
        raise RuntimeError("the outer block fails after the inner one finished")
    assert events.recent(store, kind="inner.of.failed.outer") == []


def _write_pages(store: Store, rows: int) -> None:
    with store.transaction() as db:
        db.execute("CREATE TABLE IF NOT EXISTS fold_probe (data BLOB)")
        db.executemany("INSERT INTO fold_probe VALUES (?)", [(bytes(3000),)] * rows)


def test_a_long_lived_store_folds_its_log_once_quiet_and_not_inside_a_commit(
    store: Store,
) -> None:
    """The language server's store: the write-ahead log reaches the database file on the
    folder's own thread after a quiet spell, never inside the commit a request waits for."""
    store.fold_log_when_idle(quiet=0.3)
    _write_pages(store, 1)
    store.query("PRAGMA wal_checkpoint(TRUNCATE)")  # start from a folded, empty log
    before = store.db_path.stat().st_size

    _write_pages(store, 200)  # ~150 pages: below the 1000 at which SQLite would fold itself
    assert store.db_path.stat().st_size == before, "the commit folded the log itself"

    deadline = time.monotonic() + 10
    while store.db_path.stat().st_size == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.db_path.stat().st_size > before + 150 * 3000, "the log was never folded"
    assert store.query_one("SELECT COUNT(*) FROM fold_probe")[0] == 201


def test_a_store_that_does_not_fold_when_idle_leaves_the_log_to_sqlite(store: Store) -> None:
    """The negative control: a CLI or hook process's store keeps SQLite's own folding, so the
    database file does not change after a small commit however long it waits."""
    _write_pages(store, 1)
    store.query("PRAGMA wal_checkpoint(TRUNCATE)")
    before = store.db_path.stat().st_size
    _write_pages(store, 200)
    time.sleep(0.8)
    assert store.db_path.stat().st_size == before


def _log_folders() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "engram-log-folder"}


def test_closing_a_store_stops_its_log_folder(store: Store) -> None:
    # This store's own folder thread (a store another test left open has its own).
    before = _log_folders()
    store.fold_log_when_idle(quiet=0.05)
    mine = _log_folders() - before
    assert mine and all(t.is_alive() for t in mine)
    _write_pages(store, 3)
    store.close()
    assert not [t for t in mine if t.is_alive()]


def test_a_deferred_close_closes_for_its_users_at_once_and_folds_the_log_later(
    workspace: Path,
) -> None:
    """The resident server's child (docs/resident.md) answers before its stores' connections
    close: `Store.close` then leaves the connection to `close_deferred`, which folds the log."""
    from memory_core import store as store_module

    wal = workspace / ".engram" / "engram.db-wal"
    store_module.defer_closing()
    try:
        store = Store.init(workspace)
        with store.transaction() as db:
            db.execute("INSERT INTO store_meta (key, value) VALUES ('k', 'v')")
        store.close()
        store.close()  # twice, as a connection may be
        with pytest.raises(sqlite3.ProgrammingError):
            store.query("SELECT 1")
        assert wal.exists()  # not folded yet: the connection is still open
    finally:
        store_module.close_deferred()
    assert not wal.exists()  # the last connection closed: the log folded into the database
    with Store.open(workspace) as reopened:
        assert reopened.query_one("SELECT value FROM store_meta WHERE key = 'k'")[0] == "v"
    store_module.close_deferred()  # nothing pending: no error
