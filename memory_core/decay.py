"""Priority decay: how much a remembered thing still matters, computed when it is read.

    priority = base x e^(-rate x days since access) x e^(-0.01 x days since creation)
               + min(0.2, boost x accesses),  clamped to [0, 1]

Each kind of entry has its own base priority, rate and boost (seed 003, "Decay Rules by
Memory Type"), and some entries have a floor they never decay below:

- pinned: never decays (stays at its base);
- an open critical finding: 0.8; an open decision of high (or critical) impact: 0.9;
- any other open (unresolved) decision: 0.5, so it never turns cold;
- an explicit preference: 0.6; an inferred one (not stated by the user): 0.3.

A resolved finding decays 1.5 times faster. Nothing runs in the background: the priority is a
pure function of the entry and the time of the query.
"""

from __future__ import annotations

import math

DAY = 86400.0
AGE_RATE = 0.01
MAX_ACCESS_BONUS = 0.2
EXPLICIT_PREFERENCE_FLOOR = 0.6
INFERRED_PREFERENCE_FLOOR = 0.3
CRITICAL_FINDING_FLOOR = 0.8
HIGH_IMPACT_DECISION_FLOOR = 0.9
OPEN_DECISION_FLOOR = 0.5
RESOLVED_FACTOR = 1.5

# How much an entry matters when it is new (seed 003: decisions 0.95, findings 0.90,
# preferences 0.85, agent state 0.80, conversation turns 1.0). engram's memory types map onto
# the seed's as its decay rates do: a project fact is kept like a decision, a learning is a
# finding, an action (what an agent did, its working memory) is agent state.
BASE_PRIORITIES: dict[str, float] = {
    "decision": 0.95,
    "project": 0.95,
    "finding": 0.90,
    "learning": 0.90,
    "gotcha": 0.90,
    "preference": 0.85,
    "agent_state": 0.80,
    "action": 0.80,
    "digest": 0.80,
    "turn": 1.0,
    "session": 1.0,
}
# Impact levels (a finding's severity, a decision's implementation impact).
IMPACTS = ("critical", "high", "medium", "low")


def base_priority(kind: str) -> float:
    """The priority a new entry of `kind` starts with."""
    return BASE_PRIORITIES.get(kind, 1.0)


def floor(kind: str, *, explicit: bool, resolved: bool, impact: str | None) -> float:
    """The lowest priority an unpinned entry can decay to (0 for most)."""
    if kind == "preference":
        return EXPLICIT_PREFERENCE_FLOOR if explicit else INFERRED_PREFERENCE_FLOOR
    if resolved:
        # A fixed critical finding or a closed decision no longer needs to stay in front.
        return 0.0
    if kind == "decision":
        return HIGH_IMPACT_DECISION_FLOOR if impact in ("high", "critical") else OPEN_DECISION_FLOOR
    if kind == "finding" and impact == "critical":
        return CRITICAL_FINDING_FLOOR
    return 0.0


HOT = 0.7
COLD = 0.3


class Rate:
    """How fast a kind of entry decays, and how much each access lifts it back. (A plain
    class: every hook reaches this module, and `dataclasses` costs more than Python's start.)"""

    __slots__ = ("boost", "rate")

    def __init__(self, rate: float, boost: float) -> None:
        self.rate = rate
        self.boost = boost

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rate):
            return NotImplemented
        return (self.rate, self.boost) == (other.rate, other.boost)

    def __hash__(self) -> int:
        return hash((self.rate, self.boost))

    def __repr__(self) -> str:
        return f"Rate(rate={self.rate!r}, boost={self.boost!r})"


# The issue names rates for decisions, findings, preferences, turns and agent state. The other
# memory types borrow the closest one: a project fact is as durable as a decision, a learning
# is a finding, an action is as short-lived as a turn. Gotchas decay like findings, session
# summaries like turns, digests like agent state.
RATES: dict[str, Rate] = {
    "decision": Rate(0.03, 0.02),
    "finding": Rate(0.04, 0.015),
    "preference": Rate(0.02, 0.03),
    "turn": Rate(0.05, 0.01),
    "agent_state": Rate(0.06, 0.01),
    "project": Rate(0.03, 0.02),
    "learning": Rate(0.04, 0.015),
    "action": Rate(0.05, 0.01),
    "gotcha": Rate(0.04, 0.015),
    "session": Rate(0.05, 0.01),
    "digest": Rate(0.06, 0.01),
}
DEFAULT_RATE = RATES["finding"]

# Types a "resolved" status makes decay faster: findings and what behaves like one.
_FINDING_LIKE = frozenset({"finding", "learning", "gotcha"})


def priority(
    *,
    kind: str,
    base: float,
    created_at: float,
    last_accessed: float,
    access_count: int,
    now: float,
    pinned: bool = False,
    explicit: bool = False,
    resolved: bool = False,
    impact: str | None = None,
) -> float:
    """The current priority in [0, 1] of an entry of `kind` at time `now` (Unix seconds)."""
    if pinned:
        return _clamp(base)
    spec = RATES.get(kind, DEFAULT_RATE)
    rate = spec.rate * (RESOLVED_FACTOR if resolved and kind in _FINDING_LIKE else 1.0)
    days_since_access = max(0.0, now - last_accessed) / DAY
    days_since_creation = max(0.0, now - created_at) / DAY
    value = base * math.exp(-rate * days_since_access) * math.exp(-AGE_RATE * days_since_creation)
    value += min(MAX_ACCESS_BONUS, spec.boost * max(0, access_count))
    return max(_clamp(value), floor(kind, explicit=explicit, resolved=resolved, impact=impact))


def tier(value: float) -> str:
    """hot (> 0.7), warm (0.3 to 0.7) or cold (< 0.3)."""
    if value > HOT:
        return "hot"
    if value < COLD:
        return "cold"
    return "warm"


def _clamp(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


def sql_priority(alias: str, now_sql: str) -> str:
    """`priority()` as an SQL expression over a `memories` row, for ranking inside SQLite.

    `now_sql` is the SQL that gives the time (a column of a one-row subquery, so the
    statement text stays the same and SQLite's statement cache keeps it prepared).
    Generated from RATES so Python and SQL can never disagree on the formula.
    """
    a = alias
    rate_cases = " ".join(f"WHEN '{kind}' THEN {spec.rate!r}" for kind, spec in RATES.items())
    boost_cases = " ".join(f"WHEN '{kind}' THEN {spec.boost!r}" for kind, spec in RATES.items())
    finding_like = ", ".join(f"'{kind}'" for kind in sorted(_FINDING_LIKE))
    rate = (
        f"(CASE {a}.type {rate_cases} ELSE {DEFAULT_RATE.rate!r} END"
        f" * CASE WHEN {a}.status = 'resolved' AND {a}.type IN ({finding_like})"
        f" THEN {RESOLVED_FACTOR!r} ELSE 1.0 END)"
    )
    boost = f"(CASE {a}.type {boost_cases} ELSE {DEFAULT_RATE.boost!r} END)"
    decayed = (
        f"{a}.base_priority * exp(-{rate} * max(0.0, ({now_sql} - {a}.last_accessed) / {DAY!r}))"
        f" * exp(-{AGE_RATE!r} * max(0.0, ({now_sql} - {a}.created_at) / {DAY!r}))"
        f" + min({MAX_ACCESS_BONUS!r}, {boost} * max(0, {a}.access_count))"
    )
    clamped = f"min(1.0, max(0.0, {decayed}))"
    # `floor()` in SQL ("resolved" is the status; archived entries keep their floors, as in
    # Python, where only status = 'resolved' counts as resolved).
    least = (
        f"CASE WHEN {a}.type = 'preference' THEN"
        f" CASE WHEN {a}.explicit THEN {EXPLICIT_PREFERENCE_FLOOR!r} ELSE {INFERRED_PREFERENCE_FLOOR!r} END"
        f" WHEN {a}.status = 'resolved' THEN 0.0"
        f" WHEN {a}.type = 'decision' THEN"
        f" CASE WHEN {a}.impact IN ('high', 'critical') THEN {HIGH_IMPACT_DECISION_FLOOR!r}"
        f" ELSE {OPEN_DECISION_FLOOR!r} END"
        f" WHEN {a}.type = 'finding' AND {a}.impact = 'critical' THEN {CRITICAL_FINDING_FLOOR!r}"
        f" ELSE 0.0 END"
    )
    return f"(CASE WHEN {a}.pinned THEN min(1.0, max(0.0, {a}.base_priority)) ELSE max({least}, {clamped}) END)"
