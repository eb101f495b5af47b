"""What every hook runs (the session's quota measure) and what every session end runs (the
retention sweeps) reads through an index: a statement that scans a whole table makes each hook
slower with every session the store keeps (issue 32, migration 0016)."""

from __future__ import annotations

import sqlite3

from memory_core import config, limits, quota
from memory_core.store import Store


def _statements(store: Store, run: object) -> list[str]:
    """The SQL `run()` sent to the store, parameters filled in."""
    sent: list[str] = []
    connection: sqlite3.Connection = store._db
    connection.set_trace_callback(sent.append)
    try:
        run()  # type: ignore[operator]
    finally:
        connection.set_trace_callback(None)
    return sent


def _table_scans(store: Store, statement: str) -> list[str]:
    """The plan's steps that read a whole table (not through an index)."""
    plan = store.query(f"EXPLAIN QUERY PLAN {statement}")
    return [
        row["detail"]
        for row in plan
        if row["detail"].startswith("SCAN ")
        and " USING " not in row["detail"]
        and row["detail"] != "SCAN CONSTANT ROW"
    ]


def test_every_retention_sweep_reads_only_the_rows_it_may_remove(store: Store) -> None:
    sent = _statements(store, lambda: limits.enforce(store, config.Settings(), now=1e9))
    sweeps = [s for s in sent if s.lstrip().upper().startswith(("UPDATE", "DELETE"))]
    swept = {rule.table for rule in limits.rules()}
    assert {"events", "digests", "agent_tool_uses", "agent_prompts", "agent_turns"} <= swept
    assert len(sweeps) >= len(swept)
    assert {s: _table_scans(store, s) for s in sweeps if _table_scans(store, s)} == {}


def test_measuring_a_session_against_its_quota_reads_only_its_rows(store: Store) -> None:
    sent = _statements(store, lambda: quota.session_usage(store, "S-1"))
    measures = [s for s in sent if "total(" in s]
    assert len(measures) == 1
    assert "agent_compactions" in measures[0]
    assert _table_scans(store, measures[0]) == []


def test_the_count_sweep_walks_a_table_only_when_it_may_hold_more_than_its_limit(
    store: Store,
) -> None:
    from memory_core import events
    from memory_core.events import Event

    events.append_many(store, [Event("e", ts=1e9 - i, data={"n": i}) for i in range(8)])
    settings = config.Settings()
    settings.values["timeline.max_entries"] = 8
    sent = _statements(store, lambda: limits.enforce(store, settings, now=1e9))
    assert not [s for s in sent if "OFFSET" in s and '"events"' in s]  # 8 rowids: nothing to walk
    # The span is read at the ends of the b-tree, not by walking the table or an index.
    spans = [s for s in sent if "max(rowid)" in s]
    assert spans
    for span in spans:
        plan = [row["detail"] for row in store.query(f"EXPLAIN QUERY PLAN {span}")]
        assert [step for step in plan if step.startswith("SCAN ") and "CONSTANT" not in step] == []
    settings.values["timeline.max_entries"] = 5
    assert limits.enforce(store, settings, now=1e9) == {"events": 3}
    # Rows removed from the middle leave a span wider than the rows: the sweep runs, and keeps
    # every row while there are no more of them than the limit.
    with store.transaction() as db:
        db.execute("DELETE FROM events WHERE id = (SELECT min(id) + 1 FROM events)")
    settings.values["timeline.max_entries"] = 4
    sent = _statements(store, lambda: limits.enforce(store, settings, now=1e9))
    assert [s for s in sent if "OFFSET" in s and '"events"' in s]
    assert len(events.recent(store, limit=100)) == 4
