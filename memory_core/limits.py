"""Bounded size: one retention mechanism every feature plugs its tables into.

A `Retention` names a table, its timestamp column, and the settings that cap its row count and
age. `enforce` applies every registered rule in one transaction. It runs when a front end
opens the store for writing (the CLI, the server at start and after bursts, hooks at session
end), never on a timer that keeps a process alive.
"""

from __future__ import annotations

import sqlite3

from memory_core import clock
from memory_core.config import Settings
from memory_core.store import Store


class Retention:
    """How long a table's rows are kept. (Plain: hooks load this module, and `dataclasses`
    costs a cold process more than Python's own start.)"""

    __slots__ = (
        "age_setting",
        "count_setting",
        "keep_condition",
        "strip",
        "stripped",
        "table",
        "ts_column",
    )

    def __init__(
        self,
        table: str,
        ts_column: str,
        count_setting: str | None = None,
        age_setting: str | None = None,
        keep_condition: str | None = None,
        strip: str | None = None,
        stripped: str | None = None,
    ) -> None:
        self.table = table
        self.ts_column = ts_column
        self.count_setting = count_setting
        self.age_setting = age_setting
        # Rows this SQL condition selects are never removed by retention (pinned, team, ...).
        self.keep_condition = keep_condition
        # Instead of removing an old row, retention empties its detail with this SET clause
        # (and `stripped`, the condition that says it was done): for ledgers whose keys must
        # outlive their detail, because they are what keeps the same thing from being counted
        # twice.
        self.strip = strip
        self.stripped = stripped

    def __repr__(self) -> str:
        return f"Retention({self.table!r}, {self.ts_column!r})"


_RULES: dict[str, Retention] = {}


def register(rule: Retention) -> None:
    _RULES[rule.table] = rule


def rules() -> list[Retention]:
    return list(_RULES.values())


# Every table engram bounds, declared here and nowhere else: a rule registered by the module
# that owns the table applied only in processes that had imported that module, so a resident
# server's child (which imports everything) pruned rows a cold hook or command kept.
register(Retention("events", "ts", "timeline.max_entries", "timeline.max_age_days"))
# Deleted items (memory_core.lifecycle) keep their content for the recovery period, then go.
register(Retention("deleted_rows", "deleted_at", None, "memory.recovery_days"))
# Line-level history of each file (memory_core.evolution).
register(Retention("file_changes", "ts", "timeline.max_entries", "timeline.max_age_days"))
register(Retention("snapshots", "created_at", "snapshots.max_count", "snapshots.max_age_days"))
# Checkpoint rows only: their listings and contents are collected by
# `checkpoints.retention.gc`, which notices rows removed here (its removal count is not kept).
register(
    Retention("checkpoints", "created_at", "checkpoints.max_count", "checkpoints.max_age_days")
)
# What agents did (tool calls, usage, prompts, compactions, digests, finished turns) is kept as
# long as the timeline is. The ledgers that make a message, a prompt, a tool call or a
# compaction count once keep their keys past that age (their text goes): without them, the same
# transcript read again from another path, or a resumed session replaying its parent's lines,
# would count everything a second time. agent_messages holds numbers only (the usage ledger):
# its rows are its keys, kept.
register(Retention("digests", "ts", None, "timeline.max_age_days"))
for _table, _strip, _stripped in (
    (
        "agent_tool_uses",
        "path = NULL, command = NULL, error = NULL",
        "path IS NULL AND command IS NULL AND error IS NULL",
    ),
    ("agent_prompts", "text = ''", "text = ''"),
    ("agent_compactions", "summary = NULL", "summary IS NULL"),
):
    register(
        Retention(_table, "ts", None, "timeline.max_age_days", strip=_strip, stripped=_stripped)
    )
# A turn still open (recorded = 0) is carried by the next ingest run: never dropped by age alone.
register(Retention("agent_turns", "started_at", None, "timeline.max_age_days", "recorded = 0"))


def enforce(store: Store, settings: Settings, *, now: float | None = None) -> dict[str, int]:
    """Apply every retention rule; returns the rows removed per table."""
    now = clock.now() if now is None else now
    existing = set(store.tables())
    removed: dict[str, int] = {}
    with store.transaction() as db:
        for rule in rules():
            if rule.table not in existing:
                continue
            keep = f"NOT ({rule.keep_condition}) AND " if rule.keep_condition else ""
            count = 0
            if rule.age_setting:
                cutoff = now - float(settings[rule.age_setting]) * 86400
                if rule.strip:
                    cursor = db.execute(
                        f'UPDATE "{rule.table}" SET {rule.strip} WHERE {keep}'
                        f'NOT ({rule.stripped}) AND "{rule.ts_column}" < ?',
                        (cutoff,),
                    )
                else:
                    cursor = db.execute(
                        f'DELETE FROM "{rule.table}" WHERE {keep}"{rule.ts_column}" < ?',
                        (cutoff,),
                    )
                count += cursor.rowcount
            if rule.count_setting and _may_hold_more_than(
                db, rule.table, limit := int(settings[rule.count_setting])
            ):
                cursor = db.execute(
                    f'DELETE FROM "{rule.table}" WHERE {keep}rowid IN ('
                    f'SELECT rowid FROM "{rule.table}" ORDER BY "{rule.ts_column}" DESC, rowid DESC '
                    f"LIMIT -1 OFFSET ?)",
                    (limit,),
                )
                count += cursor.rowcount
            if count:
                removed[rule.table] = count
    return removed


def _may_hold_more_than(db: sqlite3.Connection, table: str, limit: int) -> bool:
    """False when `table` cannot hold more than `limit` rows: its rowids span no more than
    `limit` values (two reads at the ends of its b-tree). The count sweep walks the newest
    `limit` rows to find older ones; with a limit raised far above the default, that walk was
    the whole table at every session's end."""
    # Two subqueries: SQLite reads max() or min() at the b-tree's end only when a query asks
    # for one of them alone; `max(rowid) - min(rowid)` in one query scans the table.
    span = db.execute(
        f'SELECT (SELECT max(rowid) FROM "{table}") - (SELECT min(rowid) FROM "{table}") + 1'
    ).fetchone()[0]
    return span is not None and span > limit
