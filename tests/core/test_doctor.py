"""`engram doctor`: integrity, full-text indexes, orphaned rows and blobs, stray files, size."""

from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path

from memory_core import checkpoints, config, doctor, lifecycle, memory, search, sessions
from memory_core.store import Store
from tests.conftest import run_cli


def _fill(store: Store) -> dict[str, str]:
    sessions.start(store, session_id="S-doc", agent="claude-code")
    sessions.record_turn(
        store, "S-doc", user_message="why is the build slow", assistant_response="cold cache"
    )
    kept = memory.add(store, "the build cache lives in ~/.cache/build", tags=["build"])
    other = memory.add(store, "ruff formats with line length 100", type="preference")
    return {"kept": kept["id"], "other": other["id"]}


def test_a_healthy_store_is_healthy_and_its_size_is_broken_down_by_area(store: Store) -> None:
    _fill(store)
    report = doctor.run(store)
    assert report["healthy"] and report["problems"] == []
    assert report["integrity"] == {"ok": True, "messages": []}
    assert set(report["indexes"]) >= {"memories_fts", "search_docs_fts"}
    assert all(state == "ok" for state in report["indexes"].values())
    areas = report["size"]["areas"]
    assert areas["memory"] > 0 and areas["sessions"] > 0
    assert report["size"]["files"]["engram.db"] == (store.dir / "engram.db").stat().st_size
    assert report["size"]["total_bytes"] >= report["size"]["files"]["engram.db"]


def test_an_out_of_sync_full_text_index_is_found_and_rebuilt(store: Store) -> None:
    ids = _fill(store)
    row = store.query_one("SELECT seq, content, tags FROM memories WHERE id = ?", (ids["kept"],))
    with store.transaction() as db:  # what a crash in an old version could leave behind
        db.execute(
            "INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', ?, ?, ?)",
            (row["seq"], row["content"], row["tags"]),
        )
    assert search.search(store, "build cache", record_access=False) == []
    report = doctor.run(store)
    assert not report["healthy"]
    assert report["indexes"]["memories_fts"].startswith("does not match memories")
    assert any("memories_fts" in problem for problem in report["problems"])
    repaired = doctor.run(store, repair=True)
    assert repaired["healthy"], repaired["problems"]
    assert repaired["indexes"]["memories_fts"] == "rebuilt"
    found = search.search(store, "build cache", record_access=False)
    assert [entry["id"] for entry in found] == [ids["kept"]]
    assert doctor.run(store)["indexes"]["memories_fts"] == "ok"


def test_orphaned_rows_are_moved_aside_recoverably(store: Store, workspace: Path) -> None:
    ids = _fill(store)
    raw = sqlite3.connect(workspace / ".engram" / "engram.db")
    raw.execute("PRAGMA foreign_keys = OFF")
    raw.execute("INSERT INTO memory_tags (tag, memory_id) VALUES ('ghost', 'M-gone0000')")
    raw.commit()
    raw.close()
    report = doctor.run(store)
    assert report["orphaned_rows"] == {"rows": 1, "by_table": {"memory_tags": 1}, "moved_to": None}
    repaired = doctor.run(store, repair=True)
    deletion_id = repaired["orphaned_rows"]["moved_to"]
    assert deletion_id and repaired["healthy"]
    assert store.query_one("SELECT count(*) FROM memory_tags WHERE tag = 'ghost'")[0] == 0
    record = lifecycle.deletion(store, deletion_id)
    assert record["counts"] == {"memory_tags": 1} and record["state"] == "deleted"
    # The good rows were not touched.
    assert memory.get(store, ids["kept"], record_access=False)["tags"] == ["build"]


def test_unreferenced_checkpoint_content_is_found_and_deleted(
    store: Store, workspace: Path
) -> None:
    (workspace / "app.py").write_text("print('hello')\n")
    checkpoints.create(store, name="first", settings=config.load(workspace))
    with store.transaction() as db:
        db.execute(
            "INSERT INTO checkpoint_blobs (hash, size, stored_size, data) VALUES (?, 5, 5, ?)",
            ("f" * 64, b"xxxxx"),
        )
    report = doctor.run(store)
    assert report["checkpoint_content"]["orphaned"] == 1
    assert not report["healthy"]
    repaired = doctor.run(store, repair=True)
    assert repaired["checkpoint_content"]["freed_bytes"] >= 5
    assert (
        store.query_one("SELECT count(*) FROM checkpoint_blobs WHERE hash = ?", ("f" * 64,))[0] == 0
    )
    # The real checkpoint still rolls back: its content is intact.
    assert checkpoints.manifest(store, "first")[0]["path"] == "app.py"


def test_stray_exports_and_stale_temp_files_are_removed(store: Store) -> None:
    _fill(store)
    exports = store.dir / "exports" / "sessions"
    exports.mkdir(parents=True, exist_ok=True)
    orphan = exports / "2026-01-01_S-deleted1.md"
    orphan.write_text("# a session that is gone\n")
    live = exports / "2026-01-01_S-doc.md"
    live.write_text("# S-doc\n")
    temp = store.dir / ".engram.db.123.456.tmp"
    temp.write_bytes(b"half a file")
    hour_ago = time.time() - 7200
    os.utime(temp, (hour_ago, hour_ago))
    report = doctor.run(store)
    assert report["files"]["orphaned_exports"] == [str(orphan.relative_to(store.root))]
    assert report["files"]["stale_temp_files"] == [str(temp.relative_to(store.root))]
    doctor.run(store, repair=True)
    assert not orphan.exists() and not temp.exists() and live.exists()


def test_a_damaged_database_file_is_reported_not_repaired(workspace: Path) -> None:
    store = Store.init(workspace)
    for index in range(400):
        memory.add(store, f"note {index}: " + "padding " * 40)
    store.close()
    path = workspace / ".engram" / "engram.db"
    data = bytearray(path.read_bytes())
    page = 4096
    middle = (len(data) // page // 2) * page
    data[middle : middle + page] = b"\xff" * page  # one whole page, header included
    path.write_bytes(bytes(data))
    damaged = Store.open(workspace)
    try:
        report = doctor.run(damaged, repair=True)
    finally:
        damaged.close()
    assert not report["integrity"]["ok"] and not report["healthy"]
    assert "damaged" in report["problems"][0] and "engram export" in report["problems"][0]


def test_the_command_exits_1_on_problems_and_0_once_repaired(workspace: Path) -> None:
    store = Store.init(workspace)
    _fill(store)
    exports = store.dir / "exports" / "sessions"
    exports.mkdir(parents=True, exist_ok=True)
    (exports / "2026-01-01_S-gone.md").write_text("x\n")
    store.close()
    checked = run_cli("doctor", cwd=workspace)
    assert checked.code == 1
    assert "problem: 1 stray file(s) in .engram" in checked.stdout
    assert "memory" in checked.stdout and re.search(r"^  integrity +ok$", checked.stdout, re.M)
    repaired = run_cli("doctor", "--repair", "--json", cwd=workspace)
    assert repaired.code == 0, repaired.stdout
    assert repaired.json()["healthy"] is True
    assert run_cli("doctor", cwd=workspace).code == 0


def test_doctor_never_creates_a_store(tmp_path: Path) -> None:
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    result = run_cli("doctor", cwd=empty)
    assert result.code == 1 and "no engram store" in result.stderr
    assert not (empty / ".engram").exists()


def test_annotation_gotchas_stored_by_an_older_engram_are_re_read(
    store: Store, workspace: Path
) -> None:
    from memory_core import drift
    from memory_core.gotchas import records
    from memory_core.gotchas.records import Anchor, line_hash
    from memory_core.gotchas.scan import annotation_gotcha, find_annotations

    source = "import os\n\nCACHE = {}  # gotcha: shared between threads, guard it with a lock\n"
    (workspace / "cache.py").write_text(source)
    annotation = find_annotations("cache.py", source.splitlines())[0]
    old = annotation_gotcha("cache.py", annotation, 1_800_000_000.0)
    # What older versions stored: the comment's words as the anchor, not its line.
    old.anchors = [Anchor("cache.py", 2, 2, line_hash(annotation.text), annotation.text)]
    records.sync_annotations(store, "cache.py", [old])
    assert any(drift.check_citation(workspace, c) for c in drift.gotcha_anchor_citations(store))
    report = doctor.run(store)
    assert report["annotations"]["stale"] == ["cache.py"] and not report["healthy"]
    repaired = doctor.run(store, repair=True)
    assert repaired["annotations"]["resynced"] == ["cache.py"] and repaired["healthy"]
    assert not any(drift.check_citation(workspace, c) for c in drift.gotcha_anchor_citations(store))
    assert doctor.run(store)["annotations"]["stale"] == []


def test_content_left_behind_by_a_removed_checkpoint_is_found_and_freed(
    store: Store, workspace: Path
) -> None:
    import random

    rng = random.Random(14)
    settings = config.load(workspace)
    # Random text compresses poorly: each version is a blob of its own (not packed).
    (workspace / "big.txt").write_text("".join(rng.choice("abcdef") for _ in range(50_000)))
    first = checkpoints.create(store, name="first", settings=settings)
    (workspace / "big.txt").write_text("".join(rng.choice("abcdef") for _ in range(50_000)))
    checkpoints.create(store, name="second", settings=settings)
    with store.transaction() as db:  # what retention does before its garbage collection
        db.execute("DELETE FROM checkpoints WHERE id = ?", (first["id"],))
    report = doctor.run(store)
    content = report["checkpoint_content"]
    # The first version's blob and the first checkpoint's listing, which the flag the removal
    # set has the next checkpoint collect: expected, so a note and not a problem.
    assert content["orphaned"] == 0 and report["healthy"]
    assert content["awaiting_collection"] == {
        "items": 2,
        "bytes": content["awaiting_collection"]["bytes"],
        "collected_after_removals": 0,
    }
    assert content["awaiting_collection"]["bytes"] > 15_000
    assert "the next checkpoint collects them" in report["notes"][0]
    repaired = doctor.run(store, repair=True)
    assert repaired["checkpoint_content"]["freed_bytes"] > 15_000 and repaired["healthy"]
    after = doctor.run(store)
    assert after["checkpoint_content"]["awaiting_collection"]["items"] == 0
    assert after["checkpoint_content"]["orphaned"] == 0 and after["notes"] == []
    # What the remaining checkpoint holds is intact and can be read back.
    [entry] = [e for e in checkpoints.manifest(store, "second") if e["path"] == "big.txt"]
    assert checkpoints.read_blob(store, entry["hash"]) == (workspace / "big.txt").read_bytes()


def test_content_retention_left_for_its_scheduled_clean_up_is_no_alarm(
    store: Store, workspace: Path
) -> None:
    """Retention removes checkpoints one by one but collects their content only once an eighth of
    `checkpoints.max_count` went: until then doctor says what waits and when it goes, and the
    store is healthy. Content no clean-up is scheduled for is still a problem."""
    assert run_cli("config", "set", "checkpoints.max_count", "16", cwd=workspace).code == 0
    settings = config.load(workspace)
    assert settings["checkpoints.max_count"] == 16
    for _ in range(17):
        # Incompressible and over the packing size: each version is a blob of its own.
        (workspace / "data.txt").write_text(os.urandom(20_000).hex())
        checkpoints.create(store, settings=settings)
    assert len(checkpoints.list_checkpoints(store)) == 16  # the first one went

    checked = run_cli("doctor", cwd=workspace)
    assert checked.code == 0, checked.stdout
    assert "problem:" not in checked.stdout and checked.stdout.rstrip().endswith("healthy")
    assert re.search(
        r"^note: 2 checkpoint blob\(s\)/tree\(s\), [\d,]+ bytes, wait for the next scheduled"
        r" clean-up: .*1 more checkpoint.*`engram doctor --repair` collects them now",
        checked.stdout,
        re.M,
    ), checked.stdout
    content = run_cli("doctor", "--json", cwd=workspace).json()["checkpoint_content"]
    assert content["orphaned"] == 0
    waiting = content["awaiting_collection"]
    # The removed checkpoint's version of data.txt (compressed hex) and its listing.
    assert waiting["items"] == 2 and waiting["bytes"] > 15_000
    assert waiting["collected_after_removals"] == 1

    (workspace / "data.txt").write_text(os.urandom(20_000).hex())
    checkpoints.create(store, settings=settings)  # the second removal: collected now
    content = run_cli("doctor", "--json", cwd=workspace).json()["checkpoint_content"]
    assert content["orphaned"] == 0 and content["awaiting_collection"]["items"] == 0

    # Content nothing scheduled will collect (left by a crash or a hand edit) is a problem.
    with store.transaction() as db:
        db.execute(
            "INSERT INTO checkpoint_blobs (hash, size, stored_size, data) VALUES (?, 5, 5, ?)",
            ("e" * 64, b"xxxxx"),
        )
    checked = run_cli("doctor", cwd=workspace)
    assert checked.code == 1
    assert re.search(
        r"^problem: 1 checkpoint blob\(s\)/tree\(s\) no checkpoint references and no clean-up"
        r" is scheduled for",
        checked.stdout,
        re.M,
    ), checked.stdout
