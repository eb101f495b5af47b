"""How a rollback compares a checkpoint's listings with the workspace's: as sets of rows, every
row still checked, a name listed twice read as before, the listings read a folder level per
query and the restored contents in one query, anything missing or damaged still reported
with the folder or file it belongs to.

Watchman is turned off (and the folder is not a git repository), as in test_rollback_plans.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from memory_core import checkpoints, config, sessions
from memory_core.checkpoints.storage import (
    Writer,
    load_listings,
    load_tree,
    read_blobs,
    stat_cache_of,
)
from memory_core.checkpoints.trees import (
    CorruptCheckpointError,
    compress,
    decode_tree,
    listing_rows,
    sha,
    tree_rows,
)
from memory_core.store import Store
from tests.conftest import write_file as _write


@pytest.fixture
def project(store: Store) -> Store:
    config.set_value(store.root, "checkpoints.watchman", False)
    _write(store.root, "README.md", "# demo\n")
    _write(store.root, "src/app.py", "def main():\n    return 1\n")
    _write(store.root, "src/lib/util.py", "X = 1\n")
    return store


def _forge_src(store: Store, checkpoint_id: str, rows: list[list[object]]) -> None:
    """Give the checkpoint a listing of src/ with these rows, stored under its own hash (as a
    forged store has it), and the root listing above it."""
    raw = json.dumps(rows, separators=(",", ":")).encode()
    row = store.query_one("SELECT root_tree FROM checkpoints WHERE id = ?", (checkpoint_id,))
    assert row is not None
    root = load_tree(store, row[0])
    root.entries["src"] = root.entries["src"]._replace(hash=sha(raw))
    writer = Writer(store)
    writer.trees[sha(raw)] = compress(raw)
    new_root = writer.tree(root)
    with store.transaction() as db:
        writer.flush(db)
        db.execute("UPDATE checkpoints SET root_tree = ? WHERE id = ?", (new_root, checkpoint_id))


def _src_rows(store: Store, checkpoint_id: str) -> list[list[object]]:
    row = store.query_one("SELECT root_tree FROM checkpoints WHERE id = ?", (checkpoint_id,))
    assert row is not None
    src = load_tree(store, row[0]).entries["src"]
    return [entry.as_list(name) for name, entry in load_tree(store, src.hash).entries.items()]


def test_a_damaged_row_the_workspace_shares_with_the_checkpoint_is_still_refused(
    project: Store,
) -> None:
    # The forged checkpoint is the latest one, so the capture of the workspace edits its
    # listing of src/ and keeps the damaged row: both sides of the comparison hold it.
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    checkpoint = checkpoints.create(project, journal=journal)
    rows = _src_rows(project, checkpoint["id"])
    _forge_src(project, checkpoint["id"], [*rows, ["zz", "q", 420, "00", 1, 1]])
    _write(project.root, "src/app.py", "edited after\n")
    journal.mark(["src/app.py"])
    with pytest.raises(CorruptCheckpointError, match="is corrupt at src/"):
        checkpoints.plan_rollback(project, checkpoint["id"], journal=journal)
    assert (project.root / "src" / "app.py").read_text() == "edited after\n"


@pytest.mark.parametrize("last", ["first", "second"])
def test_a_listing_naming_a_file_twice_restores_the_content_of_its_last_row(
    project: Store, last: str
) -> None:
    checkpoint = checkpoints.create(project)
    writer = Writer(project)
    contents = {"first": b"first content\n", "second": b"second content\n"}
    digests = {key: writer.blob(data) for key, data in contents.items()}
    with project.transaction() as db:
        writer.flush(db)
    rows = [row for row in _src_rows(project, checkpoint["id"]) if row[0] != "app.py"]
    other = "first" if last == "second" else "second"
    twice = [["app.py", "f", 0o644, digests[key], len(contents[key]), 1] for key in (other, last)]
    _forge_src(project, checkpoint["id"], [*twice, *rows])
    _write(project.root, "src/app.py", "edited after\n")
    result = checkpoints.rollback(project, checkpoint["id"])
    assert result["restored"] == ["src/app.py"]
    assert (project.root / "src" / "app.py").read_bytes() == contents[last]


def test_listing_rows_are_the_rows_decode_tree_reads() -> None:
    rows = [["a.py", "f", 420, "00", 3, 1], ["lib", "d", 0, "11", 9, 2]]
    data = json.dumps(rows, separators=(",", ":")).encode()
    assert listing_rows(data, "src/") == tree_rows(decode_tree(data, "src/"))
    assert listing_rows(data, "src/") == {tuple(row) for row in rows}
    assert listing_rows(b"[]", "src/") == frozenset()
    twice = json.dumps([rows[0], [*rows[0][:4], 4, 1]], separators=(",", ":")).encode()
    assert listing_rows(twice, "src/") == {("a.py", "f", 420, "00", 4, 1)}
    for bad in (b'[["a.py","f",true,"00",3,1]]', b'[["..","f",420,"00",3,1]]', b"{}"):
        with pytest.raises(CorruptCheckpointError, match="src/"):
            listing_rows(bad, "src/")


def test_contents_and_listings_are_read_many_at_once_and_only_intact_ones_returned(
    store: Store,
) -> None:
    writer = Writer(store)
    blobs = {
        writer.blob(f"file {index}\n".encode()): f"file {index}\n".encode() for index in range(501)
    }
    large = b"x" * (64 * 1024)  # stored alone, not in a pack
    blobs[writer.blob(large)] = large
    listings = {}
    for index in range(501):
        raw = json.dumps([[f"f{index}", "f", 420, "00", 1, 1]], separators=(",", ":")).encode()
        listings[sha(raw)] = raw
        writer.trees[sha(raw)] = compress(raw)
    with store.transaction() as db:
        writer.flush(db)
    assert read_blobs(store, [*blobs, *blobs]) == blobs
    assert load_listings(store, listings) == listings
    damaged_listing, missing = next(iter(listings)), sha(b"never stored")
    with store.transaction() as db:
        db.execute(
            "UPDATE checkpoint_trees SET data = ? WHERE hash = ?", (b"junk", damaged_listing)
        )
        db.execute(
            "UPDATE checkpoint_objects SET data = ? WHERE hash = ?",
            (compress(b"tampered"), bytes.fromhex(sha(large))),
        )
    assert load_listings(store, [damaged_listing, missing]) == {}
    assert sha(large) not in read_blobs(store, [sha(large), missing, "not hex"])
    assert len(read_blobs(store, list(blobs))) == 501


def _statements_on(store: Store, table: str, run: object) -> list[str]:
    sent: list[str] = []
    connection: sqlite3.Connection = store._db
    connection.set_trace_callback(sent.append)
    try:
        run()  # type: ignore[operator]
    finally:
        connection.set_trace_callback(None)
    return [statement for statement in sent if table in statement and "SELECT" in statement]


def test_a_rollback_reads_its_listings_a_folder_level_per_query_and_its_contents_in_one(
    project: Store,
) -> None:
    for package in ("a", "b", "c"):
        for module in ("x", "y"):
            _write(project.root, f"src/{package}/{module}/file.py", f"{package}{module}\n")
    checkpoint = checkpoints.create(project)
    checkpoints.create(project)  # the latest checkpoint is not the one rolled back to
    changed = ["src/a/x/file.py", "src/b/y/file.py", "src/c/x/file.py"]
    for rel in changed:
        _write(project.root, rel, "edited after\n")
    checkpoints.create(project)
    plans = []
    listing_reads = _statements_on(
        project,
        "checkpoint_trees",
        lambda: plans.append(checkpoints.plan_rollback(project, checkpoint["id"])),
    )
    # root, src/, src/a|b|c/, src/a/x|b/y|c/x/: four levels, each read in one query
    assert len(listing_reads) == 4
    assert sorted(w.path for w in plans[0].writes) == changed
    content_reads = _statements_on(
        project,
        "checkpoint_objects",
        lambda: checkpoints.plan_rollback(project, checkpoint["id"]),
    )
    assert len(content_reads) == 1


def test_a_blob_only_the_old_table_holds_is_still_restored(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    app = next(
        f for f in checkpoints.manifest(project, checkpoint["id"]) if f["path"] == "src/app.py"
    )
    original = (project.root / "src" / "app.py").read_bytes()
    with project.transaction() as db:
        db.execute(
            "INSERT INTO checkpoint_blobs (hash, size, stored_size, data) VALUES (?, ?, ?, ?)",
            (app["hash"], len(original), len(compress(original)), compress(original)),
        )
        db.execute("DELETE FROM checkpoint_objects WHERE hash = ?", (bytes.fromhex(app["hash"]),))
    _write(project.root, "src/app.py", "edited after\n")
    assert checkpoints.rollback(project, checkpoint["id"])["restored"] == ["src/app.py"]
    assert (project.root / "src" / "app.py").read_bytes() == original


def test_a_folder_moved_away_while_a_file_is_removed_is_reported_with_the_file_and_why(
    project: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.root
    checkpoint = checkpoints.create(project)
    _write(root, "src/made-after.txt", "made after the checkpoint\n")
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    assert plan.removes == ["src/made-after.txt"] and plan.writes == []
    undo = checkpoints.prepare_undo(project, plan)
    moved = tmp_path / "elsewhere"
    real_unlink = os.unlink

    def moving_unlink(*args: object, **kwargs: object) -> None:
        if not moved.exists():
            os.rename(root / "src", moved)
        real_unlink(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", moving_unlink)
    result = checkpoints.apply_plan(project, plan, undo_checkpoint=undo["id"])
    monkeypatch.undo()
    assert [failure["path"] for failure in result["failed"]] == ["src/made-after.txt"]
    assert "was replaced or moved" in result["failed"][0]["error"]
    assert (moved / "made-after.txt").exists()


def test_the_stat_cache_of_more_paths_than_one_query_takes_is_read_whole(store: Store) -> None:
    writer = Writer(store)
    paths = [f"pkg/file{index:04d}.py" for index in range(1_200)]
    for index, path in enumerate(paths):
        writer.index[path] = (1_000 + index, 10, index, 0o100644, sha(path.encode()), 5)
    with store.transaction() as db:
        writer.flush(db)
    found = stat_cache_of(store, paths)
    assert sorted(found) == paths
    assert found[paths[-1]] == (2_199, 10, 1_199, 0o100644, sha(paths[-1].encode()), 5)


def test_a_checkpoint_taken_in_a_session_says_at_which_turn(project: Store) -> None:
    # (What `engram checkpoint list` shows as "turn N", and what `rollback --rewind` needs.)
    sessions.start(project, session_id="s-1", agent="claude-code")
    sessions.record_turn(project, "s-1", user_message="step", assistant_response="done")
    made = checkpoints.create(project, session_id="s-1")
    assert made["turn_number"] == 1
    assert [c["turn_number"] for c in checkpoints.list_checkpoints(project)] == [1]
    assert checkpoints.create(project)["turn_number"] is None


def test_a_path_unreadable_last_time_stays_reported_until_a_checkpoint_looks_at_it_again(
    project: Store,
) -> None:
    # (Made unreadable by forging the latest checkpoint's record: the tests run as root, which
    # reads every file; test_checkpoint_hostile_fs does it for real as another user.)
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    first = checkpoints.create(project, journal=journal)
    row = project.query_one("SELECT journal FROM checkpoints WHERE id = ?", (first["id"],))
    assert row is not None
    token = {**json.loads(row[0]), "unreadable": ["src/lib/util.py", "README.md"]}
    with project.transaction() as db:
        db.execute(
            "UPDATE checkpoints SET journal = ? WHERE id = ?", (json.dumps(token), first["id"])
        )
    _write(project.root, "README.md", "# read again\n")
    journal.mark(["README.md"])
    second = checkpoints.create(project, journal=journal)
    assert second["source"] == "watcher"
    assert second["unreadable"] == ["src/lib/util.py"]
