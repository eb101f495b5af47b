"""Lifecycle on its edges (issue 31): session ages a second either side of 24 h, 7 and 30 days,
`--after` and `--before` of a date-range delete at the exact moment, the recovery deadline."""

from __future__ import annotations

import pytest

from memory_core import lifecycle, memory, sessions
from memory_core.errors import NotFoundError
from memory_core.lifecycle import session_age_state
from memory_core.store import Store

DAY = 86400.0
NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("silent", "state"),
    [
        (0.0, "active"),
        (DAY - 1, "active"),
        (DAY, "idle"),
        (7 * DAY - 1, "idle"),
        (7 * DAY, "decaying"),
        (30 * DAY - 1, "decaying"),
        (30 * DAY, "archived"),
    ],
)
def test_session_ages_turn_at_exactly_one_seven_and_thirty_days(silent: float, state: str) -> None:
    assert session_age_state(NOW - silent, status="active", now=NOW) == state


@pytest.mark.parametrize("status", ["active", "compacted", "closed"])
def test_a_recent_session_keeps_its_own_status(status: str) -> None:
    assert session_age_state(NOW - 3600, status=status, now=NOW) == status
    assert session_age_state(NOW - 2 * DAY, status=status, now=NOW) == "idle"


def test_an_unknown_status_reads_as_active_and_a_future_time_as_now() -> None:
    assert session_age_state(NOW - 60, status=None, now=NOW) == "active"
    assert session_age_state(NOW + 3600, status="closed", now=NOW) == "closed"


def _memories_at(store: Store, *offsets: float) -> list[str]:
    return [
        memory.add(store, f"note made at {offset}", type="learning", now=NOW + offset)["id"]
        for offset in offsets
    ]


def _live(store: Store) -> set[str]:
    return {row["id"] for row in store.query("SELECT id FROM memories")}


def test_after_takes_what_was_made_at_that_moment_and_later(store: Store) -> None:
    earlier, at, later = _memories_at(store, -1, 0, 1)
    record = lifecycle.delete(store, after=NOW, now=NOW + 10)
    assert _live(store) == {earlier}
    assert sorted(record["counts"].items()) == [("memories", 2)]
    assert {at, later}.isdisjoint(_live(store))


def test_before_leaves_what_was_made_at_that_moment(store: Store) -> None:
    _earlier, at, later = _memories_at(store, -1, 0, 1)
    lifecycle.delete(store, before=NOW, now=NOW + 10)
    assert _live(store) == {at, later}


def test_a_date_range_takes_only_the_sessions_started_inside_it(store: Store) -> None:
    for sid, offset in (("S-before", -2 * DAY), ("S-inside", 0.0), ("S-after", 2 * DAY)):
        sessions.start(store, session_id=sid, agent="claude-code", now=NOW + offset)
    lifecycle.delete(store, after=NOW - DAY, before=NOW + DAY, now=NOW + 3 * DAY)
    left = {row["id"] for row in store.query("SELECT id FROM sessions")}
    assert left == {"S-before", "S-after"}


def test_after_alone_takes_the_newer_sessions_only(store: Store) -> None:
    sessions.start(store, session_id="S-old", agent="claude-code", now=NOW - DAY)
    sessions.start(store, session_id="S-new", agent="claude-code", now=NOW)
    record = lifecycle.delete(store, after=NOW, now=NOW + 10)
    assert {row["id"] for row in store.query("SELECT id FROM sessions")} == {"S-old"}
    assert "from " in record["what"]


def test_an_empty_date_range_deletes_nothing_and_says_so(store: Store) -> None:
    _memories_at(store, 0)
    with pytest.raises(NotFoundError):
        lifecycle.delete(store, after=NOW + 1, now=NOW + 10)
    assert len(_live(store)) == 1


@pytest.mark.parametrize(("late", "restored"), [(-1.0, True), (0.0, False)])
def test_undelete_works_until_the_second_before_the_deadline(
    store: Store, late: float, restored: bool
) -> None:
    (entry,) = _memories_at(store, 0)
    record = lifecycle.delete(store, memory_ids=[entry], now=NOW)
    deadline = NOW + lifecycle.DEFAULT_RECOVERY_DAYS * DAY
    if restored:
        lifecycle.undelete(store, record["id"], now=deadline + late)
        assert _live(store) == {entry}
    else:
        with pytest.raises(NotFoundError, match="recovery period ended"):
            lifecycle.undelete(store, record["id"], now=deadline + late)
        assert _live(store) == set()


@pytest.mark.parametrize(("late", "purged"), [(-1.0, False), (0.0, True)])
def test_purge_takes_a_deletion_from_its_deadline_on(
    store: Store, late: float, purged: bool
) -> None:
    (entry,) = _memories_at(store, 0)
    record = lifecycle.delete(store, memory_ids=[entry], now=NOW)
    deadline = NOW + lifecycle.DEFAULT_RECOVERY_DAYS * DAY
    result = lifecycle.purge(store, now=deadline + late)
    assert (record["id"] in result["purged"]) is purged


def test_a_session_brought_back_from_the_archive_counts_as_used(store: Store) -> None:
    sessions.start(store, session_id="S-arch", agent="claude-code", now=NOW - 40 * DAY)
    sessions.record_turn(
        store,
        "S-arch",
        user_message="old question",
        assistant_response="old answer",
        started_at=NOW - 40 * DAY,
        ended_at=NOW - 40 * DAY + 5,
    )
    assert lifecycle.archive_sessions(store, now=NOW)["sessions"] == ["S-arch"]
    lifecycle.unarchive_session(store, "S-arch", now=NOW + 60)
    (age,) = [s for s in lifecycle.session_ages(store, now=NOW + 120) if s["id"] == "S-arch"]
    assert age["age_state"] != "archived"
    assert lifecycle.archive_sessions(store, now=NOW + 120)["sessions"] == []
