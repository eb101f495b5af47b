"""A store whose file is deleted or replaced under it, and faults named by their cause."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import memory
from memory_core.store import GITIGNORE, Store, StoreFaultError, store_fault


def _contents(root: Path) -> list[str]:
    """What a fresh process finds in the store: proof the writes reached the file on disk."""
    code = (
        "import sys; from memory_core.store import Store; from memory_core import memory\n"
        "s = Store.open(__import__('pathlib').Path(sys.argv[1]))\n"
        "print('\\n'.join(sorted(m['content'] for m in memory.list_memories(s))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_a_deleted_store_is_recreated_with_every_acknowledged_write(workspace: Path) -> None:
    store = Store.init(workspace)
    told: list[str] = []
    store.notice_listeners.append(told.append)
    memory.add(store, "first")
    for name in os.listdir(store.dir):
        if name.startswith("engram.db"):
            os.unlink(store.dir / name)
    memory.add(store, "second")
    # The recreated file is the one in use from now on: later writes are not "recovered" again.
    memory.add(store, "third")
    store.close()
    assert told == [
        f"{store.db_path} was deleted while engram had it open; "
        "recreated it with every record written so far"
    ]
    assert store.notices == told  # kept for front ends that show notices later
    assert _contents(workspace) == ["first", "second", "third"]


def test_a_failing_notice_listener_never_costs_the_write(workspace: Path) -> None:
    store = Store.init(workspace)

    def broken_listener(text: str) -> None:
        raise RuntimeError("the editor went away")

    told: list[str] = []
    store.notice_listeners += [broken_listener, told.append]
    memory.add(store, "first")
    os.unlink(store.db_path)
    memory.add(store, "second")
    store.close()
    assert len(told) == 1 and "was deleted" in told[0]  # the next listener is still told
    assert _contents(workspace) == ["first", "second"]


def test_a_store_deleted_with_its_folder_is_recreated(workspace: Path) -> None:
    store = Store.init(workspace)
    memory.add(store, "first")
    shutil.rmtree(store.dir)
    memory.add(store, "second")
    store.close()
    assert _contents(workspace) == ["first", "second"]
    assert os.stat(workspace / ".engram").st_mode & 0o777 == 0o700
    # The folder's .gitignore comes back too, so the new store is not committed by mistake.
    assert (workspace / ".engram" / ".gitignore").read_text() == GITIGNORE


def test_a_store_folder_left_without_its_database_is_reported_when_recreated(
    workspace: Path,
) -> None:
    # A fresh store, and an existing one opened again: nothing to report.
    with Store.init(workspace) as fresh:
        assert fresh.notices == []
    with Store.init(workspace) as again:
        assert again.notices == []
    # The database deleted by hand (or by a clean-up tool) while nothing had it open.
    for name in os.listdir(workspace / ".engram"):
        if name.startswith("engram.db"):
            os.unlink(workspace / ".engram" / name)
    db_path = workspace / ".engram" / "engram.db"
    with Store.init(workspace) as recreated:
        assert recreated.notices == [
            f"{db_path} was missing: started a new, empty store "
            "(restore the old engram.db from a backup to get its records back)"
        ]
    # A `.engram/` holding only what a person put there (no exports/) was never a store.
    other = workspace / "nested"
    (other / ".engram").mkdir(parents=True)
    with Store.init(other) as made:
        assert made.notices == []


def test_a_replaced_store_is_used_and_the_old_records_are_kept(
    workspace: Path, tmp_path: Path
) -> None:
    other_root = tmp_path / "other"
    other_root.mkdir()
    with Store.init(other_root) as other:
        memory.add(other, "from-the-backup")
    store = Store.init(workspace)
    told: list[str] = []
    store.notice_listeners.append(told.append)
    memory.add(store, "written-before")
    # A restore from a backup: another file moved over the open one.
    shutil.copy(other_root / ".engram" / "engram.db", workspace / ".engram" / "restored.db")
    os.replace(workspace / ".engram" / "restored.db", workspace / ".engram" / "engram.db")
    memory.add(store, "written-after")
    store.close()
    assert told and "was replaced" in told[0]
    assert _contents(workspace) == ["from-the-backup", "written-after"]
    kept = [n for n in os.listdir(workspace / ".engram") if n.startswith("engram.db.recovered-")]
    # Named by the time it was set aside, so several recoveries never overwrite each other.
    [kept_name] = kept
    assert re.fullmatch(r"engram\.db\.recovered-\d{8}T\d{6}", kept_name)
    assert told[0].endswith(f"the records written to the old one are kept in {kept_name}")
    with Store.open(tmp_path / "other") as check:  # the kept copy is a whole store
        assert check.schema_version > 0
    old = sqlite3.connect(workspace / ".engram" / kept[0])
    assert [r[0] for r in old.execute("SELECT content FROM memories")] == ["written-before"]
    old.close()


def test_an_untouched_store_is_not_reopened(workspace: Path) -> None:
    store = Store.init(workspace)
    told: list[str] = []
    store.notice_listeners.append(told.append)
    for n in range(5):
        memory.add(store, f"m{n}")
    store.close()
    assert told == []


def test_the_cli_says_so_when_the_database_was_deleted(cli: object, workspace: Path) -> None:
    from tests.conftest import run_cli

    assert run_cli("init", cwd=workspace).code == 0
    assert run_cli("memory", "add", "kept?", cwd=workspace).code == 0
    os.unlink(workspace / ".engram" / "engram.db")
    result = run_cli("memory", "add", "again", cwd=workspace)
    assert result.code == 0
    assert "engram.db was missing: started a new, empty store" in result.stderr


# -- causes ----------------------------------------------------------------------------------


def _real_error(tmp_path: Path, kind: str) -> sqlite3.Error:
    path = tmp_path / f"{kind}.db"
    setup = sqlite3.connect(path)
    setup.execute("CREATE TABLE t (x TEXT)")
    setup.commit()
    setup.close()
    try:
        if kind == "read-only":
            ro = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            ro.execute("INSERT INTO t VALUES ('x')")
        elif kind == "disk-full":
            full = sqlite3.connect(path)
            full.execute("PRAGMA max_page_count = 2")
            full.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
        else:
            path.write_bytes(b"this is not a database at all" * 200)
            sqlite3.connect(path).execute("SELECT * FROM t")
    except sqlite3.Error as exc:
        return exc
    raise AssertionError(f"no error for {kind}")


@pytest.mark.parametrize("kind", ["read-only", "disk-full", "corrupt"])
def test_each_fault_is_named_with_safe_advice(tmp_path: Path, kind: str) -> None:
    fault = store_fault(_real_error(tmp_path, kind), tmp_path / "engram.db")
    assert fault.cause == kind
    text = fault.one_line()
    if kind == "disk-full":
        assert "disk is full" in text and "free some disk space" in text
        assert "move" not in text.replace("leave it where it is", "") and "backup" not in text
    elif kind == "read-only":
        assert "read-only" in text and "writable" in text and "backup" not in text
    else:
        assert "damaged" in text and "backup" in text


def test_a_full_disk_during_a_write_is_reported_as_such(workspace: Path) -> None:
    store = Store.init(workspace)
    memory.add(store, "fits")
    with store.transaction() as db:  # a tiny cap, as a full disk would be
        pages = db.execute("PRAGMA page_count").fetchone()[0]
    store.query(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreFaultError) as raised:
        for n in range(200):  # distinct texts, so nothing is deduplicated
            memory.add(store, f"{n} " + "y" * 60_000)
    assert raised.value.cause == "disk-full"
    store.close()
    assert _contents(workspace) == ["fits"]


def test_a_corrupt_store_is_reported_by_the_cli_and_left_in_place(workspace: Path) -> None:
    from tests.conftest import run_cli

    (workspace / ".engram").mkdir()
    garbage = b"not sqlite" * 500
    (workspace / ".engram" / "engram.db").write_bytes(garbage)
    result = run_cli("gotcha", "list", cwd=workspace)
    assert result.code == 1
    assert "damaged or not an engram store" in result.stderr
    assert "Traceback" not in result.stderr
    assert (workspace / ".engram" / "engram.db").read_bytes() == garbage
