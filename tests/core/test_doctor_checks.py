"""Each of `engram doctor`'s checks at its edges (issue 31): a damaged file left untouched, the
full-text indexes it knows, orphans of several tables recorded recoverably, checkpoint content
counted to the byte that repair frees, stray files by name and age, gotcha comments whose file
changed or went, values of the wrong type, and the size by area and file."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from memory_core import checkpoints, clock, config, doctor, lifecycle, memory, sessions
from memory_core.store import Store

NOW = 1_800_000_000.0
DAY = 86400.0
# What `engram doctor --json` says of checkpoint content when there is none to speak of.
NO_CHECKPOINT_CONTENT = {
    "orphaned": 0,
    "orphaned_bytes": 0,
    "awaiting_collection": {"items": 0, "bytes": 0, "collected_after_removals": None},
    "freed_bytes": 0,
}


def _raw(store: Store) -> sqlite3.Connection:
    """The database as another program (or an older engram) sees it: no foreign keys."""
    raw = sqlite3.connect(store.dir / "engram.db", isolation_level=None)
    raw.execute("PRAGMA foreign_keys = OFF")
    return raw


def test_a_damaged_file_is_reported_and_not_written_even_when_repair_is_asked(
    workspace: Path,
) -> None:
    with Store.init(workspace) as store:
        memory.add(store, "the build cache lives in ~/.cache/build", now=NOW)
    path = workspace / ".engram" / "engram.db"
    data = bytearray(path.read_bytes())
    middle = (len(data) // 4096 // 2) * 4096
    data[middle : middle + 4096] = b"\xff" * 4096
    path.write_bytes(bytes(data))
    with Store.open(workspace) as damaged:
        report = doctor.run(damaged, repair=True, now=NOW)
    assert path.read_bytes() == bytes(data)  # writing could spread the damage
    assert report["repair"] is False and report["repaired"] == []
    assert report["integrity"]["ok"] is False and report["integrity"]["messages"]
    assert report["indexes"] == {}
    assert report["orphaned_rows"] == {"rows": 0, "by_table": {}, "moved_to": None}
    assert report["checkpoint_content"] == NO_CHECKPOINT_CONTENT
    assert report["files"] == {"orphaned_exports": [], "stale_temp_files": [], "removed": []}
    assert report["annotations"] == {"stale": [], "resynced": []}
    assert report["wrong_types"] == {}
    assert len(report["problems"]) == 1 and not report["healthy"]


def test_every_full_text_index_is_listed_with_the_table_it_indexes(store: Store) -> None:
    with store.transaction() as db:
        db.execute("CREATE VIRTUAL TABLE notes_fts USING fts5(body)")
        db.execute("CREATE VIRTUAL TABLE bare_fts USING fts5(body, content='')")
    found = dict(doctor.fts_indexes(store))
    assert found["memories_fts"] == "memories"
    assert found["notes_fts"] is None  # holds its own text
    assert found["bare_fts"] is None  # contentless
    report = doctor.run(store, now=NOW)
    assert report["indexes"]["notes_fts"] == "ok" and report["indexes"]["bare_fts"] == "ok"
    assert report["healthy"]


def test_a_repair_rebuilds_only_what_was_broken_and_says_so(store: Store) -> None:
    entry = memory.add(store, "deploys go out on tuesdays", now=NOW)
    row = store.query_one("SELECT seq, content, tags FROM memories WHERE id = ?", (entry["id"],))
    with store.transaction() as db:
        db.execute(
            "INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', ?, ?, ?)",
            (row["seq"], row["content"], row["tags"]),
        )
    repaired = doctor.run(store, repair=True, now=NOW)
    assert repaired["indexes"]["memories_fts"] == "rebuilt"
    assert {name for name, state in repaired["indexes"].items() if state == "rebuilt"} == {
        "memories_fts"
    }
    assert repaired["repaired"] == ["rebuilt the full-text index memories_fts"]
    assert doctor.run(store, repair=True, now=NOW)["repaired"] == []  # nothing left to do


def test_orphans_of_several_tables_are_counted_and_kept_for_thirty_days(store: Store) -> None:
    kept = memory.add(store, "stream uploads in chunks", now=NOW)
    sessions.start(store, session_id="S-live", agent="claude-code", now=NOW)
    raw = _raw(store)
    raw.execute(
        "INSERT INTO memory_relations (source_id, target_id, kind, created_at)"
        " VALUES (?, 'M-gone1', 'resolves', ?)",
        (kept["id"], NOW),
    )
    raw.execute(
        "INSERT INTO memory_relations (source_id, target_id, kind, created_at)"
        " VALUES ('M-gone2', ?, 'resolves', ?)",
        (kept["id"], NOW),
    )
    raw.execute(
        "INSERT INTO session_turns (session_id, seq, started_at, user_message)"
        " VALUES ('S-gone', 1, ?, 'lost prompt')",
        (NOW,),
    )
    raw.close()
    found = doctor.run(store, now=NOW)["orphaned_rows"]
    assert found == {
        "rows": 3,
        "by_table": {"memory_relations": 2, "session_turns": 1},
        "moved_to": None,
    }
    assert "3 orphaned row(s): " in doctor.run(store, now=NOW)["problems"][0]

    later = NOW + 60
    repaired = doctor.run(store, repair=True, now=later)
    deletion_id = repaired["orphaned_rows"]["moved_to"]
    assert repaired["repaired"] == [f"moved 3 orphaned row(s) aside ({deletion_id})"]
    record = lifecycle.deletion(store, deletion_id)
    assert record["what"] == "orphaned rows" and record["actor"] == "doctor"
    assert record["counts"] == {"memory_relations": 2, "session_turns": 1}
    assert record["created_at"] == clock.iso(later)
    assert record["recover_until"] == clock.iso(later + 30 * DAY)
    assert "parent row is gone" in record["reason"]
    trash = store.query(
        "SELECT seq, table_name, row, deleted_at FROM deleted_rows WHERE deletion_id = ?"
        " ORDER BY seq",
        (deletion_id,),
    )
    assert [r["seq"] for r in trash] == [0, 1, 2]
    assert sorted((r["table_name"], r["deleted_at"]) for r in trash) == [
        ("memory_relations", later),
        ("memory_relations", later),
        ("session_turns", later),
    ]
    (turn,) = [json.loads(r["row"]) for r in trash if r["table_name"] == "session_turns"]
    assert turn["user_message"] == "lost prompt" and turn["session_id"] == "S-gone"
    # Only the orphans went: the live session and memory are untouched.
    assert memory.get(store, kept["id"], record_access=False)["content"] == (
        "stream uploads in chunks"
    )
    assert sessions.get(store, "S-live")["id"] == "S-live"
    assert doctor.run(store, now=later)["orphaned_rows"]["rows"] == 0


def test_checkpoint_content_awaiting_clean_up_is_counted_to_the_byte_repair_frees(
    store: Store, workspace: Path
) -> None:
    settings = config.load(workspace)
    (workspace / "a.txt").write_text("small v1\n")  # packed with others
    (workspace / "big.bin").write_bytes(os.urandom(300_000))  # stored on its own
    first = checkpoints.create(store, name="one", settings=settings)
    (workspace / "a.txt").write_text("small v2\n")
    (workspace / "big.bin").write_bytes(os.urandom(300_000))
    checkpoints.create(store, name="two", settings=settings)
    with store.transaction() as db:
        db.execute("DELETE FROM checkpoints WHERE id = ?", (first["id"],))

    waiting = doctor.run(store, now=NOW)["checkpoint_content"]["awaiting_collection"]
    # The first checkpoint's two file versions and its listing.
    assert waiting["items"] == 3 and waiting["bytes"] > 300_000
    repaired = doctor.run(store, repair=True, now=NOW)
    assert repaired["checkpoint_content"]["freed_bytes"] == waiting["bytes"]
    assert repaired["repaired"] == [
        f"deleted 3 unreferenced checkpoint blob(s)/tree(s), {waiting['bytes']:,} bytes"
    ]
    for entry in checkpoints.manifest(store, "two"):
        assert (
            checkpoints.read_blob(store, entry["hash"]) == (workspace / entry["path"]).read_bytes()
        )


def test_a_store_without_checkpoint_tables_has_no_checkpoint_content(store: Store) -> None:
    with store.transaction() as db:
        db.execute("DROP TABLE checkpoint_trees")
    assert doctor.run(store, now=NOW)["checkpoint_content"] == NO_CHECKPOINT_CONTENT


def test_a_store_with_checkpoints_and_nothing_left_over_reports_no_content(
    store: Store, workspace: Path
) -> None:
    (workspace / "app.py").write_text("print('hello')\n")
    checkpoints.create(store, name="first", settings=config.load(workspace))
    assert doctor.run(store, now=NOW)["checkpoint_content"] == NO_CHECKPOINT_CONTENT


def _age(path: Path, seconds: float) -> None:
    os.utime(path, (NOW - seconds, NOW - seconds))


def test_stray_files_by_name_and_age(store: Store) -> None:
    sessions.start(store, session_id="S-kept", agent="claude-code", now=NOW)
    exports = store.dir / "exports" / "sessions"
    exports.mkdir(parents=True, exist_ok=True)
    (exports / "2026-01-01_S-kept.md").write_text("kept\n")
    (exports / "S-kept.md").write_text("kept, named without a date\n")
    (exports / "S-gone.md").write_text("gone, named without a date\n")
    (exports / "2026-01-01_S-kept_draft.md").write_text("an id with an underscore\n")
    (exports / "notes.txt").write_text("not an export\n")
    temps = {
        "old": store.dir / ".engram.db.1.tmp",
        "edge": store.dir / ".exactly-an-hour.tmp",
        "new": store.dir / ".fresh.tmp",
        "visible": store.dir / "visible.tmp",
        "other": store.dir / ".hidden.partial",
    }
    (store.dir / "nested").mkdir()
    temps["nested"] = store.dir / "nested" / ".deep.tmp"
    for name, path in temps.items():
        path.write_text(name)
        _age(path, {"edge": 3600.0, "new": 10.0}.get(name, 7200.0))

    files = doctor.run(store, now=NOW)["files"]
    assert files["orphaned_exports"] == [
        ".engram/exports/sessions/2026-01-01_S-kept_draft.md",
        ".engram/exports/sessions/S-gone.md",
    ]
    assert sorted(files["stale_temp_files"]) == [
        ".engram/.engram.db.1.tmp",
        ".engram/nested/.deep.tmp",
    ]
    repaired = doctor.run(store, repair=True, now=NOW)
    assert sorted(repaired["files"]["removed"]) == sorted(
        files["orphaned_exports"] + files["stale_temp_files"]
    )
    assert repaired["repaired"] == ["removed 4 stray file(s) from .engram"]
    assert (exports / "2026-01-01_S-kept.md").exists() and (exports / "S-kept.md").exists()
    assert temps["edge"].exists() and temps["new"].exists() and temps["visible"].exists()
    assert doctor.run(store, repair=True, now=NOW)["repaired"] == []


def test_gotcha_comments_of_a_changed_file_are_stale_and_of_a_gone_file_are_not(
    store: Store, workspace: Path
) -> None:
    from memory_core.gotchas import records
    from memory_core.gotchas.scan import annotation_gotcha, find_annotations

    def annotate(name: str, source: str) -> None:
        (workspace / name).write_text(source)
        found = [
            annotation_gotcha(name, a, NOW) for a in find_annotations(name, source.splitlines())
        ]
        records.sync_annotations(store, name, found, now=NOW)

    annotate("cache.py", "import os\nCACHE = {}  # gotcha: shared between threads\n")
    annotate("gone.py", "X = 1  # gotcha: global state\n")
    annotate("short.py", "\n\n\nY = 2  # gotcha: set at import\n")
    annotate("binary.py", "Z = 3  # gotcha: read once\n")
    assert doctor.run(store, now=NOW)["annotations"] == {"stale": [], "resynced": []}

    (workspace / "gone.py").unlink()  # drift reports a file that went; doctor does not
    (workspace / "short.py").write_text("Y = 2\n")  # the commented line is past the end
    (workspace / "binary.py").write_bytes(b"\xff\xfe not text")
    (workspace / "cache.py").write_text("import os\nCACHE = {}  # gotcha: guard it with a lock\n")
    report = doctor.run(store, now=NOW)
    assert report["annotations"]["stale"] == ["cache.py", "short.py"]
    assert "2 file(s) whose gotcha comments" in " ".join(report["problems"])
    repaired = doctor.run(store, repair=True, now=NOW)
    assert repaired["annotations"]["resynced"] == ["cache.py", "short.py"]
    assert repaired["repaired"] == ["re-read the gotcha comments of 2 file(s)"]
    titles = {row["title"] for row in store.query("SELECT title FROM gotchas")}
    assert "guard it with a lock" in " ".join(titles)
    assert doctor.run(store, now=NOW)["annotations"]["stale"] == []


def test_values_of_the_wrong_type_are_counted_by_column(store: Store) -> None:
    memory.add(store, "one", now=NOW)
    memory.add(store, "two", now=NOW)
    raw = _raw(store)
    raw.execute("UPDATE memories SET last_accessed = 'yesterday', access_count = x'01'")
    raw.execute("UPDATE memories SET base_priority = 'high' WHERE content = 'one'")
    raw.close()
    assert doctor.run(store, now=NOW)["wrong_types"] == {
        "memories.last_accessed": 2,
        "memories.access_count": 2,
        "memories.base_priority": 1,
    }


def test_the_size_is_broken_down_by_area_and_by_file(store: Store) -> None:
    for index in range(60):
        # Words of their own: the full-text index is among the largest tables, and the memories
        # outweigh the pages every other area's empty tables and indexes take.
        words = " ".join(f"word{index}x{n}" for n in range(120))
        memory.add(store, f"note {index}: {words}", now=NOW)
    team = store.dir / "team"
    team.mkdir(exist_ok=True)
    (team / "gotchas.json").write_bytes(b"x" * 1000)
    (team / "sub").mkdir()
    (team / "sub" / "more.json").write_bytes(b"y" * 500)
    (store.dir / "engram.log").write_bytes(b"z" * 300)
    size = doctor.size_breakdown(store)
    files = size["files"]
    assert files["team/"] == 1500 and files["engram.log"] == 300
    assert files["engram.db"] == (store.dir / "engram.db").stat().st_size
    assert size["total_bytes"] == sum(files.values())
    # The full-text index and its shadow tables count as the memories' own.
    tables = [entry["table"] for entry in size["largest_tables"]]
    assert "memories_fts" in tables and not any(t.startswith("memories_fts_") for t in tables)
    assert len(tables) == 8
    sizes = [entry["bytes"] for entry in size["largest_tables"]]
    assert sizes == sorted(sizes, reverse=True)
    areas = list(size["areas"].items())
    assert areas[0][0] == "memory", areas  # the largest area first
    assert [b for _, b in areas] == sorted((b for _, b in areas), reverse=True)
    assert "other" not in size["areas"] or size["areas"]["other"] < size["areas"]["memory"]


def test_files_that_are_not_there_are_not_listed(store: Store) -> None:
    files = doctor.size_breakdown(store)["files"]
    assert "engram.log" not in files and "team/" not in files
    assert set(files) <= {"engram.db", "engram.db-wal", "exports/"}
