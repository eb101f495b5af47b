"""Retention: one mechanism that caps rows by count and age for every registered table."""

from __future__ import annotations

import subprocess
import sys
import time

from memory_core import config, events, limits
from memory_core.events import Event
from memory_core.store import Store


def test_events_are_capped_by_count_and_age(store: Store) -> None:
    now = 1_000_000_000.0
    day = 86400.0
    old = [Event("e", ts=now - 100 * day, data={"n": i}) for i in range(3)]
    fresh = [Event("e", ts=now - i, data={"n": i}) for i in range(10)]
    events.append_many(store, old + fresh)
    settings = config.Settings()
    settings.values["timeline.max_entries"] = 6
    removed = limits.enforce(store, settings, now=now)
    assert removed == {"events": 7}
    kept = events.recent(store, limit=100)
    # The newest six survive: n = 0..5 (n is seconds before now).
    assert sorted(e.data["n"] for e in kept) == [0, 1, 2, 3, 4, 5]


# Each edge on both sides (issue 31): a row exactly at the age limit is kept, one a second older
# goes; exactly max_entries rows are all kept; pinned rows and stripped ledgers.

DAY = 86400.0
NOW = 1_000_000_000.0


def _settings(**values: object) -> config.Settings:
    settings = config.Settings()
    settings.values.update(values)
    return settings


def test_an_event_exactly_at_the_age_limit_is_kept_and_one_older_goes(store: Store) -> None:
    events.append_many(
        store,
        [
            Event("e", ts=NOW - 10 * DAY, data={"n": "at"}),
            Event("e", ts=NOW - 10 * DAY - 1, data={"n": "past"}),
        ],
    )
    removed = limits.enforce(
        store, _settings(**{"timeline.max_age_days": 10.0, "timeline.max_entries": 100}), now=NOW
    )
    assert removed == {"events": 1}
    assert [e.data["n"] for e in events.recent(store)] == ["at"]


def test_exactly_max_entries_are_all_kept(store: Store) -> None:
    events.append_many(store, [Event("e", ts=NOW - i) for i in range(5)])
    settings = _settings(**{"timeline.max_entries": 5})
    assert limits.enforce(store, settings, now=NOW) == {}
    assert len(events.recent(store)) == 5
    events.append(store, Event("e", ts=NOW + 1))
    assert limits.enforce(store, settings, now=NOW + 2) == {"events": 1}
    assert min(e.ts or 0 for e in events.recent(store)) == NOW - 3  # the oldest went


def test_rows_of_the_same_time_are_cut_oldest_written_first(store: Store) -> None:
    events.append_many(store, [Event("e", ts=NOW, data={"n": i}) for i in range(4)])
    limits.enforce(store, _settings(**{"timeline.max_entries": 2}), now=NOW)
    assert sorted(e.data["n"] for e in events.recent(store)) == [2, 3]


def test_without_its_setting_a_limit_is_not_applied(store: Store) -> None:
    table = "limits_probe"
    with store.transaction() as db:
        db.execute(f"CREATE TABLE {table} (ts REAL, pinned INTEGER, detail TEXT)")
        db.executemany(
            f"INSERT INTO {table} VALUES (?, ?, ?)",
            [(NOW - 50 * DAY, 0, "old"), (NOW - 50 * DAY, 1, "old pinned"), (NOW, 0, "new")],
        )
    rule = limits.Retention(table, "ts", None, "timeline.max_age_days", keep_condition="pinned = 1")
    assert repr(rule) == f"Retention('{table}', 'ts')"
    limits.register(rule)
    try:
        removed = limits.enforce(
            store, _settings(**{"timeline.max_age_days": 30.0, "timeline.max_entries": 1}), now=NOW
        )
    finally:
        limits._RULES.pop(table)
    assert removed.get(table) == 1
    kept = [row[0] for row in store.query(f"SELECT detail FROM {table} ORDER BY detail")]
    assert kept == ["new", "old pinned"]


def test_a_ledger_is_stripped_of_its_detail_not_deleted(store: Store) -> None:
    table = "limits_ledger"
    with store.transaction() as db:
        db.execute(f"CREATE TABLE {table} (key TEXT, ts REAL, detail TEXT)")
        db.executemany(
            f"INSERT INTO {table} VALUES (?, ?, ?)",
            [("a", NOW - 50 * DAY, "long text"), ("b", NOW, "recent text")],
        )
    rule = limits.Retention(
        table, "ts", None, "timeline.max_age_days", strip="detail = NULL", stripped="detail IS NULL"
    )
    limits.register(rule)
    try:
        settings = _settings(**{"timeline.max_age_days": 30.0})
        assert limits.enforce(store, settings, now=NOW).get(table) == 1
        # already stripped: not counted again
        assert table not in limits.enforce(store, settings, now=NOW)
    finally:
        limits._RULES.pop(table)
    rows = store.query(f"SELECT key, detail FROM {table} ORDER BY key")
    assert [tuple(r) for r in rows] == [("a", None), ("b", "recent text")]


def test_a_rule_for_a_table_this_store_lacks_is_skipped(store: Store) -> None:
    limits.register(limits.Retention("no_such_table", "ts", "timeline.max_entries"))
    try:
        assert "no_such_table" not in limits.enforce(store, _settings(), now=NOW)
    finally:
        limits._RULES.pop("no_such_table")


def test_enforce_without_a_time_uses_now(store: Store) -> None:
    events.append(store, Event("e", ts=time.time() - 400 * DAY))
    events.append(store, Event("e", ts=time.time()))
    assert limits.enforce(store, _settings(**{"timeline.max_age_days": 90.0})) == {"events": 1}


def test_a_rule_after_one_for_a_missing_table_is_still_applied(store: Store) -> None:
    with store.transaction() as db:
        db.execute("CREATE TABLE limits_after (ts REAL)")
        db.executemany("INSERT INTO limits_after VALUES (?)", [(NOW - i,) for i in range(4)])
    limits.register(limits.Retention("limits_missing", "ts", "timeline.max_entries"))
    limits.register(limits.Retention("limits_after", "ts", "timeline.max_entries"))
    try:
        removed = limits.enforce(store, _settings(**{"timeline.max_entries": 3}), now=NOW)
    finally:
        limits._RULES.pop("limits_missing")
        limits._RULES.pop("limits_after")
    assert removed["limits_after"] == 1
    kept = [row[0] for row in store.query("SELECT ts FROM limits_after ORDER BY ts")]
    assert kept == [NOW - 2, NOW - 1, NOW]


def test_a_process_that_loaded_only_the_retention_module_bounds_every_table(
    store: Store,
) -> None:
    """A hook at session end or a resident server's child must prune the same rows: each rule
    used to be registered by the module owning its table, so a cold process that had not
    imported evolution, snapshots or checkpoints kept rows a process that had would remove."""
    cold = subprocess.run(
        [
            sys.executable,
            "-c",
            "from memory_core import limits; print(' '.join(r.table for r in limits.rules()))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    bounded = {
        "events", "deleted_rows", "file_changes", "snapshots", "checkpoints", "digests",
        "agent_tool_uses", "agent_prompts", "agent_compactions", "agent_turns",
    }  # fmt: skip
    assert set(cold) == bounded
    assert bounded <= set(store.tables())
