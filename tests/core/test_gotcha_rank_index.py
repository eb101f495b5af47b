"""The gotchas' ranking index (`gotchas.rank_index`, migration 0017): a prompt, a session start
or a file about to change reads only the gotchas sharing something with it, and the ranking is
the one computed from every gotcha's text, gotcha for gotcha and score for score, whatever
changed the gotchas, whoever wrote them, and when the index cannot be written."""

from __future__ import annotations

import sqlite3

import pytest

from memory_core.gotchas import rank_index, records
from memory_core.gotchas.context import rank_for_task
from memory_core.gotchas.records import Anchor, add
from memory_core.log import log_path
from memory_core.store import Store
from tests.core.test_gotcha_context_ranking import _ranked_as_listed

# Tasks at the edges of each kind of evidence: a task inside a gotcha's error and an error
# inside a task, a two-letter task (inside many errors), a category named or only inferred,
# the word "general" (a category too), verbs only, nothing at all.
TASKS = (
    "",
    "fix",
    "ou",
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "pytest says ConnectionRefusedError: [Errno 111] Connection refused on port 5432",
    "connection refused",
    "the cookie domain in the login view",
    "review the test fixtures",
    "a general question about the cache",
    "xss in the upload form",
    "BrokenPipeError: [Errno 32] Broken pipe while streaming",
)
# Task files: at the root, in folders, with Windows separators and "./", matching literal globs
# at the root or in a folder, wildcard globs, an anchor, or nothing.
FILES: tuple[tuple[str, ...], ...] = (
    (),
    ("settings.py",),
    ("app/settings.py",),
    ("src\\db.py", "./web/views.py"),
    ("b.py",),
    ("docs/guide.md",),
    ("lib//pool.py",),  # a doubled separator: the glob "pool.py" still names it
)


def _fill(store: Store) -> list[str]:
    made = [
        add(store, "Login drops the cookie", description="The cookie domain is unset."),
        add(
            store,
            "Postgres is not running in CI",
            error_pattern="ConnectionRefusedError: [Errno 111] Connection refused",
            related_files=["settings.py", "src/db.py"],
            severity="high",
        ),
        add(
            store,
            "Fixtures share the database",
            category="test",
            related_files=["tests/*"],
            status="candidate",
        ),
        add(store, "Uploads allow script tags", category="security", related_files=["[ab].py"]),
        add(store, "Cache keys collide", workaround="Prefix keys with the tenant."),
        add(store, "Views import settings too early", related_files=["web/*.py", "views.py"]),
        add(
            store,
            "A general rule",
            error_pattern="Timeout: the worker took 30 s",
            severity="low",
        ),
        add(
            store,
            "Guide has a stale example",
            anchors=[Anchor("docs/guide.md", 3, 3, None, "example()")],
        ),
        add(store, "The pool size is read once", related_files=["pool.py"]),
        add(
            store,
            "Streams break on slow clients",
            error_pattern="BrokenPipeError: [Errno 32] Broken pipe",
        ),
        # The same evidence and the same score (a low confirmed, a medium unconfirmed): severity
        # orders them, not their ids, which sort the other way.
        add(store, "Cache warms twice per tenant", severity="low", gotcha_id="G-00000001"),
        add(
            store,
            "Cache tenant prefix is optional",
            status="candidate",
            gotcha_id="G-ffff0001",
        ),
    ]
    return [gotcha.id for gotcha in made]


def _assert_same_ranking(store: Store) -> None:
    for task in TASKS:
        for files in FILES:
            expected = _ranked_as_listed(store, task, files, 100)
            got = rank_for_task(store, task, files, 100)
            assert [(s, g.id) for s, g in got] == [(s, g.id) for s, g in expected], (task, files)
            assert [g for _s, g in got] == [g for _s, g in expected], (task, files)


def test_the_ranking_is_the_full_scans_through_every_kind_of_change(store: Store) -> None:
    ids = _fill(store)
    _assert_same_ranking(store)
    assert rank_for_task(store, "connection refused", (), 1)[0][1].id == ids[1]
    records.update(store, ids[0], title="Login drops the session", workaround="Set the domain.")
    records.update(store, ids[4], related_files=["cache/*.py", "settings.py"], category="build")
    records.resolve(store, ids[5])
    records.snooze(store, ids[3], 2)
    records.delete(store, ids[6])
    from memory_core.gotchas.track import track_error

    for _ in range(3):  # learned from a repeated error: a new gotcha with its error pattern
        track_error(store, "ConnectionResetError: [Errno 104] Connection reset by peer")
    records.sync_annotations(
        store,
        "web/views.py",
        [records.Gotcha(id="G-00000abc", title="The upload view ignores the size limit",
                        source_type="annotation", anchors=[Anchor("web/views.py", 1, 1, None, "x")])],
    )  # fmt: skip
    _assert_same_ranking(store)
    assert store.query("SELECT * FROM gotcha_rank_stale") == []


def test_a_store_indexed_before_this_version_or_never_ranks_the_same(store: Store) -> None:
    _fill(store)
    with store.transaction() as db:  # a store as migration 0017 leaves it, or an older index
        db.execute("DELETE FROM gotcha_words")
        db.execute("DELETE FROM gotcha_triggers")
        db.execute("UPDATE store_meta SET value = '0' WHERE key = ?", (rank_index.VERSION_KEY,))
    _assert_same_ranking(store)
    version = store.query_one(
        "SELECT value FROM store_meta WHERE key = ?", (rank_index.VERSION_KEY,)
    )
    assert version is not None and version["value"] == rank_index.VERSION
    assert store.query_one("SELECT count(*) AS n FROM gotcha_words")["n"] > 20  # type: ignore[index]


@pytest.fixture
def writer_holding_the_store(store: Store):  # type: ignore[no-untyped-def]
    """Another process's connection holding the store's write lock; the store waits for no one."""
    other = sqlite3.connect(store.db_path, isolation_level=None)
    store.wait_when_busy(0)
    yield other
    if other.in_transaction:
        other.execute("ROLLBACK")
    other.close()


def test_a_ranking_that_cannot_index_scores_the_changed_gotchas_from_their_text(
    store: Store, writer_holding_the_store: sqlite3.Connection
) -> None:
    ids = _fill(store)
    other = writer_holding_the_store
    # Changed by a writer that does not index (an older engram, a hand-made fix): the
    # store's triggers mark them; their rows in the index still say what they said before.
    other.execute("UPDATE gotchas SET title = 'Xss filter misses uploads' WHERE id = ?", (ids[4],))
    other.execute("UPDATE gotchas SET related_files = '[\"views.py\"]' WHERE id = ?", (ids[1],))
    other.execute("UPDATE gotchas SET error_pattern = 'OSError: disk full' WHERE id = ?", (ids[6],))
    other.execute("BEGIN IMMEDIATE")
    assert rank_index.untrusted(store) == {ids[1], ids[4], ids[6]}
    assert "cannot index the gotchas for ranking" in log_path(store.root).read_text()
    _assert_same_ranking(store)
    assert any(g.id == ids[4] for _s, g in rank_for_task(store, "the xss filter"))
    assert all(g.id != ids[1] for _s, g in rank_for_task(store, "rename", ("settings.py",)))
    # A severity written by hand that engram does not know ranks below low, on every path.
    other.execute("UPDATE gotchas SET severity = 'urgent' WHERE id = ?", (ids[0],))
    # Rows of another version that cannot be rebuilt now: every gotcha scored from its text.
    other.execute("UPDATE store_meta SET value = '0' WHERE key = ?", (rank_index.VERSION_KEY,))
    other.execute("COMMIT")
    other.execute("BEGIN IMMEDIATE")
    assert rank_index.untrusted(store) is None
    _assert_same_ranking(store)
    other.execute("ROLLBACK")
    assert rank_index.untrusted(store) == set()  # indexed again once it can write
    _assert_same_ranking(store)


def _whole_table_reads(store: Store, run: object) -> list[str]:
    sent: list[str] = []
    store._db.set_trace_callback(sent.append)
    try:
        run()  # type: ignore[operator]
    finally:
        store._db.set_trace_callback(None)
    tables = set(store.tables())
    scans = []
    for statement in sent:
        if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
            continue
        for row in store.query(f"EXPLAIN QUERY PLAN {statement}"):
            detail = str(row["detail"])
            # A whole stored table; not its index, nor a query's own rows (a WITH's results).
            if (
                detail.startswith("SCAN ")
                and detail.split()[1] in tables
                and " USING " not in detail
            ):
                scans.append(detail)
    return scans


def test_ranking_reads_no_whole_table_but_the_errors_quoted(store: Store) -> None:
    """Words, categories, files and anchors are found by key; only a task's quoted error is
    compared with every gotcha's error (in SQL: a substring either way has no index; with no
    error in the task, the comparison's constant condition skips the table)."""
    _fill(store)
    rank_for_task(store, "warm up")
    # The stale list is asked whether it holds a row (EXISTS: it stops at the first).
    expected = ["SCAN gotcha_rank_stale", "SCAN gotcha_triggers"]
    assert _whole_table_reads(store, lambda: rank_for_task(store, "", ("app/settings.py",))) == (
        expected
    )
    assert _whole_table_reads(store, lambda: rank_for_task(store, "the cookie test")) == expected


def test_every_gotcha_write_indexes_what_it_changed_in_its_own_transaction(
    store: Store, writer_holding_the_store: sqlite3.Connection
) -> None:
    """A prompt right after a gotcha change trusts the index even while another process holds
    the store: the change indexed itself (no ranking had to)."""
    ids = _fill(store)
    records.update(store, ids[2], title="Fixtures leak the tenant", related_files=["conftest.py"])
    from memory_core.gotchas.track import track_error

    for _ in range(3):
        track_error(store, "PermissionError: [Errno 13] Permission denied: '/var/run/app.sock'")
    writer_holding_the_store.execute("BEGIN IMMEDIATE")
    assert rank_index.untrusted(store) == set()
    # Nothing to index, so nothing was tried: no warning in the log for a store another holds.
    assert (
        not log_path(store.root).exists() or "cannot index" not in log_path(store.root).read_text()
    )
    ranked = rank_for_task(store, "the tenant leak", ("conftest.py",))
    assert [g.title for _s, g in ranked][:1] == ["Fixtures leak the tenant"]
    learned = rank_for_task(store, "PermissionError: [Errno 13] Permission denied: '/tmp/x'")
    assert [g.source_type for _s, g in learned][:1] == ["auto_detected"]
