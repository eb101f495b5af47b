"""Seed 003's memory rules: base priorities per type, floors, 48 h protection, query options."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memory_core import clock, config, decay, memory, quota, search, sessions
from memory_core.errors import UsageError
from memory_core.store import Store

DAY = 86400.0
NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("kind", "base"),
    [
        ("decision", 0.95),
        ("project", 0.95),
        ("finding", 0.90),
        ("learning", 0.90),
        ("preference", 0.85),
        ("action", 0.80),
    ],
)
def test_a_new_entry_starts_at_its_types_base_priority(
    store: Store, kind: str, base: float
) -> None:
    entry = memory.add(store, f"a fresh {kind} about the build cache", type=kind, now=NOW)
    assert entry["base_priority"] == base
    assert entry["priority"] == pytest.approx(base)
    # An explicit base still wins.
    chosen = memory.add(store, f"another {kind}", type=kind, base_priority=0.6, now=NOW)
    assert chosen["priority"] == pytest.approx(0.6)


def _aged(store: Store, entry_id: str, days: float) -> dict[str, object]:
    return memory.get(store, entry_id, record_access=False, now=NOW + days * DAY)


def test_an_open_critical_finding_never_falls_below_0_8_until_it_is_resolved(
    store: Store,
) -> None:
    critical = memory.add(
        store, "no MFA requirement for admins", type="finding", impact="critical", now=NOW
    )
    minor = memory.add(store, "password rules are vague", type="finding", impact="low", now=NOW)
    assert _aged(store, critical["id"], 365)["priority"] == pytest.approx(0.8)
    assert _aged(store, minor["id"], 365)["priority"] < 0.05
    memory.update(store, critical["id"], status="resolved")
    assert _aged(store, critical["id"], 365)["priority"] < 0.05


def test_decisions_high_impact_stay_above_0_9_and_open_ones_stay_warm(store: Store) -> None:
    high = memory.add(store, "OAuth 2.0 with JWT", type="decision", impact="high", now=NOW)
    plain = memory.add(store, "review auth with two agents", type="decision", now=NOW)
    assert _aged(store, high["id"], 400)["priority"] == pytest.approx(0.9)
    aged = _aged(store, plain["id"], 400)
    assert aged["priority"] == pytest.approx(0.5) and aged["tier"] == "warm"
    memory.update(store, plain["id"], status="resolved")
    assert _aged(store, plain["id"], 400)["tier"] == "cold"


def test_inferred_preferences_floor_at_0_3_explicit_ones_at_0_6(store: Store) -> None:
    inferred = memory.add(store, "prefers deep verification", type="preference", now=NOW)
    stated = memory.add(store, "MFA for admins only", type="preference", explicit=True, now=NOW)
    assert _aged(store, inferred["id"], 900)["priority"] == pytest.approx(0.3)
    assert _aged(store, stated["id"], 900)["priority"] == pytest.approx(0.6)


def test_an_unknown_impact_is_refused(store: Store) -> None:
    with pytest.raises(UsageError, match="impact"):
        memory.add(store, "x", type="finding", impact="severe")


def test_sql_and_python_agree_on_every_floor(store: Store) -> None:
    for kind in memory.TYPES:
        for impact in (None, *decay.IMPACTS):
            for status in ("open", "resolved"):
                for explicit in (False, True):
                    memory.add(
                        store,
                        f"{kind} {impact} {status} {explicit}",
                        type=kind,
                        impact=impact,
                        status=status,
                        explicit=explicit,
                        now=NOW - 300 * DAY,
                    )
    rows = store.query(
        f"SELECT m.*, {decay.sql_priority('m', 'clock.now')} AS p FROM memories m"
        " JOIN (SELECT ? AS now) clock",
        (NOW,),
    )
    assert len(rows) == len(memory.TYPES) * 5 * 2 * 2
    floors = set()
    for row in rows:
        python = memory.current_priority(row, NOW)
        assert row["p"] == pytest.approx(python), (row["type"], row["impact"], row["status"])
        floors.add(round(python, 2))
    assert {0.9, 0.8, 0.6, 0.5, 0.3} <= floors


def test_compaction_keeps_what_was_used_in_the_last_48_hours(store: Store, workspace: Path) -> None:
    sid = "S-recent"
    sessions.start(store, session_id=sid, agent="claude-code", now=NOW - 200 * DAY)
    big = " with a long explanation" * 200
    used_36h_ago = memory.add(
        store, "old learning read yesterday" + big, session_id=sid, now=NOW - 200 * DAY
    )
    used_60h_ago = memory.add(
        store, "old learning read three days ago" + big, session_id=sid, now=NOW - 200 * DAY
    )
    with store.transaction() as db:
        db.execute(
            "UPDATE memories SET last_accessed = ? WHERE id = ?",
            (NOW - 36 * 3600, used_36h_ago["id"]),
        )
        db.execute(
            "UPDATE memories SET last_accessed = ? WHERE id = ?",
            (NOW - 60 * 3600, used_60h_ago["id"]),
        )
    # Both are cold by priority (0.9 x e^(-0.04 x 1.5) x e^(-2) is about 0.11).
    for entry in (used_36h_ago, used_60h_ago):
        assert memory.get(store, entry["id"], record_access=False, now=NOW)["tier"] == "cold"
    settings = config.load(workspace, overrides={"sessions": {"quota_bytes": 4096}})
    result = quota.enforce(store, sid, settings, now=NOW)
    assert result is not None
    dropped = result["steps"][0]["memories"]
    assert dropped == [used_60h_ago["id"]]


def test_search_query_options_min_priority_decayed_and_offset(store: Store) -> None:
    fresh = [
        memory.add(store, f"flaky login test number {i}", type="finding", now=NOW - i)
        for i in range(5)
    ]
    old = memory.add(store, "flaky login test from last year", type="finding", now=NOW - 200 * DAY)
    found = search.search(store, "flaky login", limit=10, record_access=False, now=NOW)
    assert old["id"] in {e["id"] for e in found}  # the library default: everything
    hidden = search.search(
        store, "flaky login", limit=10, include_decayed=False, record_access=False, now=NOW
    )
    assert {e["id"] for e in hidden} == {e["id"] for e in fresh}
    high = search.search(
        store, "flaky login", limit=10, min_priority=0.95, record_access=False, now=NOW
    )
    assert high == []  # findings start at 0.90
    page1 = search.search(store, "flaky login", limit=2, record_access=False, now=NOW)
    page2 = search.search(store, "flaky login", limit=2, offset=2, record_access=False, now=NOW)
    everything = search.search(store, "flaky login", limit=6, record_access=False, now=NOW)
    assert [e["id"] for e in page1 + page2] == [e["id"] for e in everything[:4]]
    with pytest.raises(UsageError):
        search.search(store, "flaky", offset=-1)
    with pytest.raises(UsageError):
        search.search(store, "flaky", min_priority=1.5)


def test_list_query_options(store: Store) -> None:
    for i in range(4):
        memory.add(store, f"note {i}", type="learning", now=NOW - i)
    memory.add(store, "ancient note", type="learning", now=NOW - 300 * DAY)
    listed = memory.list_memories(store, include_decayed=False, now=NOW)
    assert [e["content"] for e in listed] == ["note 0", "note 1", "note 2", "note 3"]
    paged = memory.list_memories(store, limit=2, offset=3, now=NOW)
    assert [e["content"] for e in paged] == ["note 3", "ancient note"]
    assert math.isclose(
        memory.list_memories(store, min_priority=0.85, now=NOW)[0]["priority"], 0.9, abs_tol=1e-3
    )


def test_cli_query_options(workspace: Path) -> None:
    from tests.conftest import run_cli

    store = Store.init(workspace)
    fresh = memory.add(store, "the flaky login test needs a fixed seed", type="finding")
    old = memory.add(
        store,
        "the flaky login test used to need a sleep",
        type="finding",
        now=clock.now() - 300 * DAY,
    )
    store.close()

    def ids(*args: str) -> list[str]:
        result = run_cli("memory", *args, "--json", cwd=workspace)
        assert result.code == 0, result.stderr
        body = result.json()
        return [e["id"] for e in body.get("results", body.get("memories", []))]

    assert ids("search", "flaky login") == [fresh["id"]]  # decayed left out
    assert set(ids("search", "flaky login", "--include-decayed")) == {fresh["id"], old["id"]}
    assert ids("search", "flaky login", "--min-priority", "0.95") == []
    assert ids("search", "flaky login", "--include-decayed", "--offset", "1") == [old["id"]]
    assert ids("list") == [fresh["id"], old["id"]]  # the inspection view shows everything
    assert ids("list", "--min-priority", "0.5") == [fresh["id"]]
    bad = run_cli("memory", "search", "flaky", "--min-priority", "2", cwd=workspace)
    assert bad.code == 2 and bad.stderr.startswith("engram: error: minimum priority")
