"""Priority decay: the issue's formula, per-type rates and boosts, pins, floors, tiers."""

from __future__ import annotations

import math

import pytest

from memory_core import decay, memory
from memory_core.store import Store

DAY = 86400.0
NOW = 1_800_000_000.0


def _p(
    kind: str, *, age: float, idle: float, accesses: int = 0, base: float = 1.0, **flags: bool
) -> float:
    return decay.priority(
        kind=kind,
        base=base,
        created_at=NOW - age * DAY,
        last_accessed=NOW - idle * DAY,
        access_count=accesses,
        now=NOW,
        **flags,
    )


@pytest.mark.parametrize(
    ("kind", "rate", "boost"),
    [
        ("decision", 0.03, 0.02),
        ("finding", 0.04, 0.015),
        ("preference", 0.02, 0.03),
        ("turn", 0.05, 0.01),
        ("agent_state", 0.06, 0.01),
    ],
)
def test_the_formula_with_each_types_rate_and_boost(kind: str, rate: float, boost: float) -> None:
    expected = 0.8 * math.exp(-rate * 10) * math.exp(-0.01 * 40) + min(0.2, boost * 3)
    # A closed decision: an open one would be held at its floor (0.5).
    flags = {"resolved": True} if kind == "decision" else {}
    assert _p(kind, age=40, idle=10, accesses=3, base=0.8, **flags) == pytest.approx(expected)


def test_access_bonus_is_capped_at_0_2_and_the_result_clamped_to_1() -> None:
    old = _p("decision", age=400, idle=400, accesses=1000, resolved=True)
    assert old == pytest.approx(1.0 * math.exp(-0.03 * 400) * math.exp(-0.01 * 400) + 0.2)
    assert _p("preference", age=0, idle=0, accesses=50) == 1.0


def test_pinned_never_decays_and_preferences_keep_their_floors() -> None:
    assert _p("finding", age=900, idle=900, pinned=True, base=0.9) == 0.9
    assert _p("preference", age=900, idle=900, explicit=True) == pytest.approx(0.6)
    # Seed 003: "inferred preferences can decay to 0.3" (and no further).
    assert _p("preference", age=900, idle=900) == pytest.approx(0.3)
    assert _p("preference", age=0, idle=1) > 0.9


def test_resolved_findings_decay_one_and_a_half_times_faster() -> None:
    open_ = _p("finding", age=0, idle=20)
    resolved = _p("finding", age=0, idle=20, resolved=True)
    assert open_ == pytest.approx(math.exp(-0.04 * 20))
    assert resolved == pytest.approx(math.exp(-0.06 * 20))
    # A resolved decision is not a finding: no extra decay.
    assert _p("decision", age=0, idle=20, resolved=True) == _p("decision", age=0, idle=20)


def test_tiers() -> None:
    assert decay.tier(0.71) == "hot"
    assert decay.tier(0.7) == "warm"
    assert decay.tier(0.3) == "warm"
    assert decay.tier(0.29) == "cold"


def test_sql_formula_matches_python_for_every_type_and_flag(store: Store) -> None:
    cases = []
    for index, kind in enumerate(memory.TYPES):
        for pinned, explicit, status in (
            (0, 0, "open"),
            (1, 0, "open"),
            (0, 1, "open"),
            (0, 0, "resolved"),
        ):
            created = NOW - (10 + index * 7) * DAY
            accessed = created + 3 * DAY
            entry = memory.add(
                store,
                f"{kind} entry {pinned}{explicit}{status}",
                type=kind,
                pinned=bool(pinned),
                explicit=bool(explicit),
                status=status,
                base_priority=0.9,
                now=created,
            )
            with store.transaction() as db:
                db.execute(
                    "UPDATE memories SET last_accessed = ?, access_count = ? WHERE id = ?",
                    (accessed, index, entry["id"]),
                )
            cases.append(entry["id"])
    rows = store.query(
        f"SELECT m.*, {decay.sql_priority('m', 'clock.now')} AS p FROM memories m JOIN (SELECT ? AS now) clock",
        (NOW,),
    )
    assert len(rows) == len(cases)
    for row in rows:
        assert row["p"] == pytest.approx(memory.current_priority(row, NOW)), row["type"]


def test_priority_is_computed_at_read_time(store: Store) -> None:
    entry = memory.add(
        store, "the CI cache key includes the lockfile hash", type="finding", now=NOW
    )
    # A finding starts at seed 003's base priority for findings.
    assert entry["priority"] == 0.9 and entry["tier"] == "hot"
    later = memory.get(store, entry["id"], record_access=False, now=NOW + 60 * DAY)
    assert later["priority"] == pytest.approx(
        0.9 * math.exp(-0.04 * 60) * math.exp(-0.01 * 60), abs=1e-4
    )
    assert later["tier"] == "cold"
