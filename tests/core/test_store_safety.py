"""The store keeps what it promised: upgrades that fail change nothing, private files stay
private and durable, related records go together, and `engram status` counts what is there.

Real SQLite files throughout; a broken migration is a real SQL file in a copy of the migrations
folder.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from memory_core import events, sessions
from memory_core import store as store_module
from memory_core.errors import StoreError
from memory_core.events import Event
from memory_core.store import Store, latest_schema_version, write_private_file


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _migrations_with(tmp_path: Path, extra: dict[str, str]) -> Path:
    """A copy of the real migrations folder plus `extra` files (name -> SQL)."""
    folder = tmp_path / "migrations"
    shutil.copytree(store_module.MIGRATIONS_DIR, folder)
    for name, sql in extra.items():
        (folder / name).write_text(sql, encoding="utf-8")
    return folder


BROKEN_MIGRATION = """
CREATE TABLE half_done (x INTEGER);
INSERT INTO half_done VALUES (1);
INSERT INTO store_meta (key, value) VALUES ('half.migrated', '1');
INSERT INTO a_table_that_does_not_exist VALUES (1);
"""


def test_a_failed_migration_leaves_the_store_as_it_was_and_writable(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.init(workspace) as store:
        events.append(store, Event("kept.event"))
    version = latest_schema_version()
    db_path = workspace / ".engram" / "engram.db"
    broken = _migrations_with(tmp_path, {f"{version + 1:04d}_broken.sql": BROKEN_MIGRATION})
    monkeypatch.setattr(store_module, "MIGRATIONS_DIR", broken)

    # Reported as a store error naming the cause (never a raw sqlite traceback).
    with pytest.raises(StoreError, match="a_table_that_does_not_exist") as raised:
        Store.open(workspace)
    assert raised.value.one_line().startswith(f"cannot open the store {db_path}: ")

    raw = sqlite3.connect(db_path, timeout=0.5)
    try:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == version
        tables = {row[0] for row in raw.execute("SELECT name FROM sqlite_master")}
        assert "half_done" not in tables
        assert raw.execute("SELECT kind FROM events").fetchall() == [("kept.event",)]
        assert raw.execute("SELECT * FROM store_meta WHERE key = 'half.migrated'").fetchall() == []
        # Nothing holds the write lock: the next writer goes ahead at once.
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("ROLLBACK")
    finally:
        raw.close()

    monkeypatch.undo()
    with Store.open(workspace) as again:
        assert again.schema_version == version
        assert [e.kind for e in events.recent(again)] == ["kept.event"]


def test_migrations_apply_in_number_order_and_triggers_survive_the_statement_split(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = latest_schema_version()
    later = f"{version + 20:04d}_audit.sql"
    earlier = f"{version + 10:04d}_notes.sql"
    folder = _migrations_with(
        tmp_path,
        {
            # Written first in the folder listing order would be wrong: 'audit' needs 'notes'.
            later: (
                "-- an audit trail of notes\n"
                "CREATE TABLE note_audit (note_id INTEGER, text TEXT);\n"
                "CREATE TRIGGER note_audit_insert AFTER INSERT ON notes BEGIN\n"
                "    INSERT INTO note_audit VALUES (new.id, new.text);\n"
                "    UPDATE notes SET seen = 1 WHERE id = new.id;\n"
                "END;\n"
                "INSERT INTO notes (text) VALUES ('from the migration')\n"
            ),
            earlier: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT, seen INTEGER DEFAULT 0);\n",
            "README.txt": "not a migration",
            f"{version + 30:04d}-Bad Name.sql": "THIS IS NOT SQL;",
        },
    )
    monkeypatch.setattr(store_module, "MIGRATIONS_DIR", folder)
    with Store.init(workspace) as store:
        assert store.schema_version == version + 20
        with store.transaction() as db:
            db.execute("INSERT INTO notes (text) VALUES ('by a user')")
        assert [tuple(r) for r in store.query("SELECT text FROM note_audit ORDER BY rowid")] == [
            ("from the migration",),
            ("by a user",),
        ]
        assert [r[0] for r in store.query("SELECT seen FROM notes")] == [1, 1]


def test_foreign_keys_are_enforced_so_a_deleted_session_takes_its_turns_along(
    store: Store,
) -> None:
    assert store.query_one("PRAGMA foreign_keys")[0] == 1  # type: ignore[index]
    sessions.start(store, session_id="S-fk", now=1.0)
    sessions.record_turn(store, "S-fk", user_message="hello", assistant_response="hi")
    assert store.query_one("SELECT COUNT(*) FROM session_turns")[0] == 1  # type: ignore[index]
    with store.transaction() as db:
        db.execute("DELETE FROM sessions WHERE id = 'S-fk'")
    assert store.query_one("SELECT COUNT(*) FROM session_turns")[0] == 0  # type: ignore[index]
    with pytest.raises(sqlite3.IntegrityError), store.transaction() as db:
        db.execute(
            "INSERT INTO session_turns (session_id, seq, started_at) VALUES ('no-such', 1, 0)"
        )


def test_commits_are_synced_in_wal_mode_and_a_busy_store_makes_writers_wait(
    store: Store,
) -> None:
    # synchronous=NORMAL in WAL mode: a committed write survives a killed process (OFF would not).
    assert store.query_one("PRAGMA synchronous")[0] == 1  # type: ignore[index]
    assert store.query_one("PRAGMA journal_mode")[0] == "wal"  # type: ignore[index]
    # Another process holds the write lock for a moment: our write waits for it, not fails.
    other = sqlite3.connect(store.db_path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    released = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    released.start()
    try:
        started = time.monotonic()
        events.append(store, Event("waited.write"))
        assert time.monotonic() - started >= 0.3
    finally:
        released.join()
        other.close()
    assert [e.kind for e in events.recent(store)] == ["waited.write"]


def test_an_existing_store_folder_is_made_private_again(workspace: Path) -> None:
    # A folder another tool (or a copy) left readable by everyone.
    (workspace / ".engram" / "exports").mkdir(parents=True, mode=0o755)
    os.chmod(workspace / ".engram", 0o755)
    os.chmod(workspace / ".engram" / "exports", 0o755)
    with Store.init(workspace) as store:
        assert mode(store.dir) == 0o700
        assert mode(store.dir / "exports") == 0o700
        assert mode(store.db_path) == 0o600


def test_writing_a_file_into_a_users_own_folder_leaves_that_folder_as_it_was(
    tmp_path: Path,
) -> None:
    # `engram export --out ~/shared/gotchas.json`: the user's folder stays readable by others.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    write_private_file(shared / "gotchas.json", "{}")
    assert mode(shared) == 0o755
    assert mode(shared / "gotchas.json") == 0o600
    # A folder engram has to create for it is private, like every folder it makes.
    write_private_file(tmp_path / "new" / "gotchas.json", "{}")
    assert mode(tmp_path / "new") == 0o700


def test_private_files_reach_the_disk_before_they_replace_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    target = tmp_path / "deep" / "exports" / "gotchas.json"
    write_private_file(target, b"{}")
    # The data was synced while it was still the temporary file (before the rename).
    assert len(synced) == 1
    assert synced[0].startswith(str(target.parent) + "/.gotchas.json.")
    assert target.read_bytes() == b"{}"
    assert mode(target) == 0o600 and mode(target.parent) == 0o700


def test_a_private_file_write_that_fails_leaves_the_old_file_and_no_debris(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "exports"
    target = folder / "sessions"
    target.mkdir(parents=True)
    (target / "old.md").write_text("old")
    # Replacing a non-empty folder with a file fails: nothing may be half-written.
    with pytest.raises(OSError):
        write_private_file(target, "new")
    assert sorted(p.name for p in folder.iterdir()) == ["sessions"]
    assert (target / "old.md").read_text() == "old"


def test_a_store_is_found_from_a_subfolder_and_only_created_when_asked(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    deep = workspace / "src" / "pkg"
    deep.mkdir(parents=True)
    with pytest.raises(StoreError, match="no engram store"):
        Store.for_path(deep)
    assert not (workspace / ".engram").exists()
    with Store.for_path(deep, create=True) as created:
        assert created.root == workspace
        events.append(created, Event("found.it"))
    with Store.for_path(deep) as found:
        assert [e.kind for e in events.recent(found)] == ["found.it"]
    # open_or_init opens the existing store, keeping what it holds.
    with Store.open_or_init(workspace) as again:
        assert [e.kind for e in events.recent(again)] == ["found.it"]


def test_a_front_end_creates_a_store_only_in_a_git_repository(
    workspace: Path, tmp_path: Path
) -> None:
    # A plain folder (`/etc`, a downloads folder): refused, naming the folder, nothing created.
    with pytest.raises(StoreError) as raised:
        Store.open_or_init_in_git(workspace)
    assert raised.value.one_line().startswith(
        f"no engram store here (run engram init): looked in {workspace} and above"
    )
    assert not (workspace / ".engram").exists()
    # The same folder once `engram init` made its store: opened, with what it holds.
    with Store.init(workspace) as made:
        events.append(made, Event("kept.event"))
    with Store.open_or_init_in_git(workspace) as opened:
        assert opened.root == workspace
        assert [e.kind for e in events.recent(opened)] == ["kept.event"]
    # A git repository's top level gets a new store.
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with Store.open_or_init_in_git(repo) as created:
        assert created.db_path == repo / ".engram" / "engram.db"
        assert created.schema_version == latest_schema_version()


def test_status_counts_every_table_and_the_space_the_store_takes(store: Store) -> None:
    empty = store.counts()
    assert "events" in empty and "gotchas" in empty and "sessions" in empty
    assert not [t for t in empty if t.startswith("sqlite_") or "_fts" in t]
    assert store.tables() == sorted(empty)
    size_before = store.size_bytes()
    for n in range(3):
        events.append(store, Event("counted", data={"n": n, "pad": "x" * 5000}))
    after = store.counts()
    assert after["events"] == empty["events"] + 3
    assert {t: c for t, c in after.items() if t != "events"} == {
        t: c for t, c in empty.items() if t != "events"
    }
    assert store.size_bytes() > size_before > 0


def test_a_store_opened_in_two_threads_serialises_its_transactions(store: Store) -> None:
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        try:
            for n in range(50):
                with store.transaction() as db:
                    events.append(store, Event(f"thread.{tag}", data={"n": n}), db=db)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.query_one("SELECT COUNT(*) FROM events")[0] == 100  # type: ignore[index]


def test_every_store_error_says_what_to_do(workspace: Path) -> None:
    with pytest.raises(StoreError) as missing:
        Store.open(workspace)
    assert "(run engram init)" in missing.value.one_line()
    (workspace / ".engram").mkdir()
    (workspace / ".engram" / "engram.db").write_bytes(b"garbage" * 500)
    with pytest.raises(StoreError) as corrupt:
        Store.open(workspace)
    assert "restore .engram/engram.db from a backup, or move it aside and run engram init" in (
        corrupt.value.one_line()
    )
    (workspace / ".engram" / "engram.db").unlink()
    Store.init(workspace).close()
    with sqlite3.connect(workspace / ".engram" / "engram.db") as raw:
        raw.execute(f"PRAGMA user_version = {latest_schema_version() + 1}")
    with pytest.raises(StoreError) as newer:
        Store.open(workspace)
    assert "upgrade engram; the store was left untouched" in newer.value.one_line()


def test_a_store_being_upgraded_by_another_process_is_not_upgraded_twice(
    workspace: Path,
) -> None:
    # A store as the first engram wrote it, opened by two engram processes at once: the other
    # one gets the write lock first and applies every migration but the last.
    (workspace / ".engram").mkdir()
    db_path = workspace / ".engram" / "engram.db"
    known = store_module.migrations()
    with sqlite3.connect(db_path) as raw:
        raw.executescript(known[0][1].read_text())
        raw.execute(f"PRAGMA user_version = {known[0][0]}")
    other = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    other.execute("PRAGMA journal_mode = WAL")
    other.execute("BEGIN IMMEDIATE")
    opened: list[Store] = []
    failed: list[BaseException] = []

    def open_store() -> None:
        try:
            opened.append(Store.open(workspace))
        except BaseException as exc:  # pragma: no cover - reported below
            failed.append(exc)

    thread = threading.Thread(target=open_store)
    thread.start()
    time.sleep(1.0)  # our open now waits for the write lock
    for _version, path in known[1:-1]:
        for statement in store_module._split_sql(path.read_text()):
            other.execute(statement)
    other.execute(f"PRAGMA user_version = {known[-2][0]}")
    other.execute("COMMIT")
    other.close()
    thread.join(timeout=60)
    assert failed == []
    [store] = opened
    try:
        assert store.schema_version == known[-1][0]
        events.append(store, Event("after.upgrade"))
        assert [e.kind for e in events.recent(store)] == ["after.upgrade"]
    finally:
        store.close()


def test_the_reported_store_size_is_the_size_of_its_files(store: Store) -> None:
    events.append(store, Event("sized", data={"pad": "y" * 20_000}))
    expected = sum(
        (Path(dirpath) / name).lstat().st_size
        for dirpath, _dirs, names in os.walk(store.dir)
        for name in names
    )
    assert store.size_bytes() == expected


def test_a_private_file_whose_name_is_too_long_fails_cleanly(tmp_path: Path) -> None:
    # The temporary name adds the process and thread ids: it is over the file system's limit
    # although the final name is not. The error is the file system's, and nothing is left.
    target = tmp_path / "exports" / ("s" * 240)
    with pytest.raises(OSError):
        write_private_file(target, "x")
    assert list((tmp_path / "exports").iterdir()) == []
