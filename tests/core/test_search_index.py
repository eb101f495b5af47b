"""The shared full-text index of gotchas, sessions and digests (issue 31): what is indexed,
when a sync re-reads a table, and what a re-read keeps."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

import pytest

from memory_core import search_index, sessions
from memory_core.store import Store

T0 = 1_790_000_000.0


def _docs(store: Store, kind: str) -> dict[str, dict[str, Any]]:
    return {
        row["ref_id"]: dict(row)
        for row in store.query("SELECT * FROM search_docs WHERE kind = ?", (kind,))
    }


def _gotcha(store: Store, gid: str, title: str, *, status: str = "active", ts: float = T0) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO gotchas (id, title, description, workaround, category, status,"
            " first_seen, last_seen, created_at, updated_at, samples)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                gid,
                title,
                "the build fails",
                "pin the version",
                "build",
                status,
                ts,
                ts,
                ts,
                ts,
                json.dumps([{"cmd": "make", "out": "linker error"}]),
            ),
        )


def test_upsert_indexes_a_record_redacted_and_a_second_upsert_updates_it(store: Store) -> None:
    with store.transaction() as db:
        search_index.upsert(
            db,
            "gotcha",
            "g1",
            title="token AKIAIOSFODNN7EXAMPLE leaked",
            body="body",
            tags=["ci", "aws"],
            session_id="s1",
            agent="claude-code",
            created_at=T0,
            resolved=True,
        )
    (doc,) = _docs(store, "gotcha").values()
    assert doc["title"] == "token [REDACTED:aws-access-key] leaked"
    assert (doc["tags"], doc["session_id"], doc["agent"], doc["resolved"]) == (
        "ci aws",
        "s1",
        "claude-code",
        1,
    )
    assert doc["created_at"] == doc["last_accessed"] == T0
    with store.transaction() as db:
        search_index.upsert(db, "gotcha", "g1", title="renamed", created_at=T0 + 50)
    (doc,) = _docs(store, "gotcha").values()
    assert (doc["title"], doc["body"], doc["tags"], doc["resolved"]) == ("renamed", "", "", 0)
    assert doc["created_at"] == T0  # the first time it was indexed
    with store.transaction() as db:
        search_index.remove(db, "gotcha", "g1")
        search_index.remove(db, "gotcha", "never-there")
    assert _docs(store, "gotcha") == {}


def test_upsert_without_a_time_takes_now(store: Store) -> None:
    with store.transaction() as db:
        search_index.upsert(db, "digest", "d1", body="x")
    (doc,) = _docs(store, "digest").values()
    assert abs(doc["created_at"] - time.time()) < 60


def test_sync_reads_sessions_with_a_summary_and_skips_empty_ones(store: Store) -> None:
    sessions.start(store, session_id="s-full", name="cache work", now=T0)
    sessions.set_summary(store, "s-full", overview="moved the cache", decisions=["use LRU"])
    sessions.start(store, session_id="s-empty", now=T0 + 1)
    counts = search_index.sync(store, now=T0 + 10)
    assert counts["session"] == 1
    docs = _docs(store, "session")
    assert set(docs) == {"s-full"}
    assert docs["s-full"]["title"] == "cache work"
    assert "moved the cache" in docs["s-full"]["body"]
    assert "use LRU" in docs["s-full"]["body"] and "[" not in docs["s-full"]["body"]


def test_sync_reads_gotchas_with_every_text_and_the_resolved_flag(store: Store) -> None:
    _gotcha(store, "g-open", "linker fails")
    _gotcha(store, "g-done", "old flake", status="resolved")
    assert search_index.sync(store, now=T0 + 10)["gotcha"] == 2
    docs = _docs(store, "gotcha")
    assert docs["g-open"]["title"] == "linker fails"
    for text in ("the build fails", "pin the version", "build"):
        assert text in docs["g-open"]["body"]
    assert (docs["g-open"]["resolved"], docs["g-done"]["resolved"]) == (0, 1)
    assert docs["g-open"]["created_at"] == T0


def test_a_second_sync_with_nothing_changed_reads_nothing(store: Store) -> None:
    _gotcha(store, "g1", "one")
    assert search_index.sync(store, now=T0)["gotcha"] == 1
    assert search_index.sync(store, now=T0 + 1) == {}


def test_rows_added_later_are_read_alone_and_the_old_ones_kept(store: Store) -> None:
    _gotcha(store, "g1", "one", ts=T0)
    _gotcha(store, "g2", "two", ts=T0 + 10)
    search_index.sync(store, now=T0 + 20)
    _gotcha(store, "g3", "three", ts=T0 + 30)
    # only the rows from the last newest time on are read again: g2 and g3
    assert search_index.sync(store, now=T0 + 40) == {"gotcha": 2}
    assert set(_docs(store, "gotcha")) == {"g1", "g2", "g3"}


def test_a_deleted_row_leaves_the_index_on_the_next_sync(store: Store) -> None:
    _gotcha(store, "g1", "one", ts=T0)
    _gotcha(store, "g2", "two", ts=T0 + 10)
    search_index.sync(store, now=T0 + 20)
    with store.transaction() as db:
        db.execute("DELETE FROM gotchas WHERE id = 'g1'")
    assert search_index.sync(store, now=T0 + 30) == {"gotcha": 1}
    assert set(_docs(store, "gotcha")) == {"g2"}


def test_a_row_deleted_while_another_is_added_is_still_noticed(store: Store) -> None:
    _gotcha(store, "g1", "one", ts=T0)
    _gotcha(store, "g2", "two", ts=T0 + 10)
    search_index.sync(store, now=T0 + 20)
    with store.transaction() as db:
        db.execute("DELETE FROM gotchas WHERE id = 'g1'")
    _gotcha(store, "g3", "three", ts=T0 + 30)  # same count, newer time: looks like an addition
    search_index.sync(store, now=T0 + 40)
    assert set(_docs(store, "gotcha")) == {"g2", "g3"}


def test_a_re_read_keeps_each_docs_access_history(store: Store) -> None:
    _gotcha(store, "g1", "one", ts=T0)
    search_index.sync(store, now=T0)
    with store.transaction() as db:
        db.execute("UPDATE search_docs SET last_accessed = ?, access_count = 7", (T0 + 99,))
        db.execute(
            "UPDATE gotchas SET title = 'renamed', updated_at = ? WHERE id = 'g1'", (T0 + 5,)
        )
    with store.transaction() as db:
        db.execute("DELETE FROM search_sources")  # forget the signature: a whole re-read
    search_index.sync(store, now=T0 + 200)
    (doc,) = _docs(store, "gotcha").values()
    assert (doc["title"], doc["last_accessed"], doc["access_count"]) == ("renamed", T0 + 99, 7)


def test_a_damaged_signature_means_a_whole_re_read(store: Store) -> None:
    _gotcha(store, "g1", "one")
    search_index.sync(store, now=T0)
    with store.transaction() as db:
        db.execute("UPDATE search_sources SET signature = 'not json' WHERE kind = 'gotcha'")
    assert search_index.sync(store, now=T0 + 1) == {"gotcha": 1}
    with store.transaction() as db:
        db.execute("UPDATE search_sources SET signature = '[1]' WHERE kind = 'gotcha'")
    assert search_index.sync(store, now=T0 + 2) == {"gotcha": 1}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (42, "42"),
        ("plain words", "plain words"),
        ('  ["a", {"b": "c", "d": null}, [1]]', "a c 1"),
        ("[not json", "[not json"),
        ('{"k": "v"}', "v"),
    ],
)
def test_stored_json_is_indexed_by_its_words(value: object, text: str) -> None:
    assert search_index._text(value) == text


@pytest.mark.parametrize(
    ("value", "ts"),
    [(T0, T0), (7, 7.0), ("2026-09-21T14:13:20Z", T0), ("", None), ("soon", None), (None, None)],
)
def test_a_records_time_is_read_as_seconds_or_iso(value: object, ts: float | None) -> None:
    assert search_index._as_ts(value) == ts


def test_another_area_can_register_its_own_table(store: Store) -> None:
    with store.transaction() as db:
        db.execute(
            "CREATE TABLE notes (id TEXT PRIMARY KEY, title TEXT, body TEXT, ts TEXT) WITHOUT ROWID"
        )
        db.execute("INSERT INTO notes VALUES ('n1', 'a note', 'its text', '2026-09-21T14:13:20Z')")
        db.execute("INSERT INTO notes VALUES ('n2', 'no time', 'more', 'whenever')")
    reader = search_index._generic_reader(("id",), ("title",), ("body",), ("ts",))
    before = list(search_index.SOURCES)
    try:
        search_index.register_source(search_index.Source("note", "notes", reader))
        search_index.register_source(search_index.Source("note", "notes", reader))
        assert [s.kind for s in search_index.SOURCES].count("note") == 1
        assert search_index.sync(store, now=T0 + 500)["note"] == 2
    finally:
        search_index.SOURCES[:] = before
    docs = _docs(store, "note")
    assert docs["n1"]["created_at"] == T0
    assert docs["n2"]["created_at"] == T0 + 500  # an unreadable time: when it was indexed


def test_a_table_without_an_id_column_gives_no_docs(store: Store) -> None:
    with store.transaction() as db:
        db.execute("CREATE TABLE odd (name TEXT)")
        db.execute("INSERT INTO odd VALUES ('x')")
    reader = search_index._generic_reader(("id",), ("name",), ("name",), ())
    columns = {"name": "TEXT", search_index._TABLE_KEY: "odd"}
    conn: sqlite3.Connection
    with store.transaction() as conn:
        assert reader(conn, columns, "1", ()) == []


def test_a_reader_built_for_a_table_fills_every_field_of_its_docs(store: Store) -> None:
    with store.transaction() as db:
        db.execute(
            "CREATE TABLE cards (id INTEGER PRIMARY KEY, heading TEXT, text TEXT, notes TEXT,"
            " tags TEXT, session_id TEXT, agent TEXT, status TEXT, made REAL)"
        )
        db.execute(
            "INSERT INTO cards VALUES (7, 'the heading', 'first part', '[\"a\", \"b\"]',"
            " 'x y', 's1', 'claude', 'resolved', ?)",
            (T0,),
        )
        db.execute("INSERT INTO cards VALUES (8, NULL, NULL, '  ', NULL, NULL, NULL, 'open', NULL)")
    reader = search_index._generic_reader(("id",), ("heading",), ("text", "notes"), ("made",))
    columns = {**search_index._columns(store, "cards"), search_index._TABLE_KEY: "cards"}
    with store.transaction() as db:
        docs = reader(db, columns, "1", ())
    assert docs == [
        search_index.Doc(
            ref_id="7",
            title="the heading",
            body="first part\na b",
            tags=["x", "y"],
            session_id="s1",
            agent="claude",
            created_at=T0,
            resolved=True,
        ),
        search_index.Doc(ref_id="8", body="  "),
    ]
    skipping = search_index._generic_reader(
        ("id",), ("heading",), ("text", "notes"), ("made",), skip_empty_body=True
    )
    with store.transaction() as db:
        assert [d.ref_id for d in skipping(db, columns, "id = ?", (8,))] == []
        assert [d.ref_id for d in skipping(db, columns, "id = ?", (7,))] == ["7"]
    bare = search_index._generic_reader(("id",), ("nope",), ("text",), ("nope",))
    with store.transaction() as db:
        (first, _second) = bare(db, columns, "1", ())
    assert (first.title, first.created_at, first.tags) == ("", None, ["x", "y"])


def test_a_source_table_without_any_time_column_is_still_indexed(store: Store) -> None:
    with store.transaction() as db:
        db.execute("CREATE TABLE plain_notes (id TEXT, title TEXT, body TEXT)")
        db.execute("INSERT INTO plain_notes VALUES ('p1', 'a title', 'a body')")
    reader = search_index._generic_reader(("id",), ("title",), ("body",), ())
    before = list(search_index.SOURCES)
    try:
        search_index.register_source(search_index.Source("plain", "plain_notes", reader))
        assert search_index.sync(store, now=T0)["plain"] == 1
        assert "plain" not in search_index.sync(store, now=T0 + 1)
    finally:
        search_index.SOURCES[:] = before
    assert _docs(store, "plain")["p1"]["created_at"] == T0


def test_a_touched_row_is_read_again_alone_when_the_count_is_unchanged(store: Store) -> None:
    _gotcha(store, "g1", "one", ts=T0)
    _gotcha(store, "g2", "two", ts=T0 + 5)
    _gotcha(store, "g3", "three", ts=T0 + 10)
    search_index.sync(store, now=T0 + 15)
    with store.transaction() as db:
        db.execute(
            "UPDATE gotchas SET title = 'one again', updated_at = ? WHERE id = 'g1'", (T0 + 20,)
        )
    # from the previous newest time on: g3 (unchanged, at it) and g1 (touched after it)
    assert search_index.sync(store, now=T0 + 25) == {"gotcha": 2}
    assert _docs(store, "gotcha")["g1"]["title"] == "one again"
