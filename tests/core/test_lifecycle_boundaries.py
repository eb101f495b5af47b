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


# -- what a deletion takes, says and gives back ------------------------------------------------


def _three_related(store: Store) -> tuple[str, str, str]:
    a, b, c = (
        memory.add(store, f"note {n}", type="learning", tags=[f"t{n}"], now=NOW)["id"]
        for n in "abc"
    )
    memory.relate(store, a, "led_to", b, now=NOW)
    memory.relate(store, c, "influenced", b, now=NOW)
    return a, b, c


def test_deleting_two_related_memories_takes_every_relation_that_names_them(
    store: Store,
) -> None:
    a, b, c = _three_related(store)
    record = lifecycle.delete(store, memory_ids=[a, b], now=NOW)
    assert record["what"] == f"memories {a}, {b}"
    assert record["counts"] == {"memories": 2, "memory_tags": 2, "memory_relations": 2}
    assert _live(store) == {c}
    back = lifecycle.undelete(store, record["id"], now=NOW + 1)
    assert back["restored"] == {"memories": 2, "memory_tags": 2, "memory_relations": 2}
    assert back["skipped"] == 0
    assert len(store.query("SELECT 1 FROM memory_relations")) == 2


def test_one_memory_is_described_in_the_singular(store: Store) -> None:
    (entry,) = _memories_at(store, 0)
    assert lifecycle.delete(store, memory_ids=[entry], now=NOW)["what"] == f"memory {entry}"


def test_relations_to_memories_deleted_since_are_skipped_and_counted(store: Store) -> None:
    a, b, c = _three_related(store)
    memory.relate(store, b, "resolves", a, now=NOW)
    first = lifecycle.delete(store, memory_ids=[b], now=NOW)  # takes 3 relations
    lifecycle.delete(store, memory_ids=[a, c], now=NOW)
    back = lifecycle.undelete(store, first["id"], now=NOW + 1)
    assert back["restored"] == {"memories": 1, "memory_tags": 1}
    assert back["skipped"] == 3


def _session_with_memory(store: Store, sid: str) -> str:
    sessions.start(store, session_id=sid, agent="claude-code", now=NOW)
    sessions.record_turn(
        store, sid, user_message="q", assistant_response="a", started_at=NOW, ended_at=NOW + 1
    )
    first = memory.add(store, "from the session", type="learning", session_id=sid, now=NOW)
    other = memory.add(store, "also", type="learning", now=NOW)
    memory.relate(store, first["id"], "led_to", other["id"], now=NOW)
    return str(first["id"])


def test_a_session_deleted_without_its_memories_keeps_them(store: Store) -> None:
    kept = _session_with_memory(store, "S-keep")
    record = lifecycle.delete(store, session_id="S-keep", include_memories=False, now=NOW)
    assert "memories" not in record["counts"] and record["counts"]["sessions"] == 1
    assert kept in _live(store)
    back = lifecycle.undelete(store, "S-keep", now=NOW + 1)
    assert back["sessions"] == ["S-keep"]


def test_a_session_deleted_with_its_memories_counts_each_row_once(store: Store) -> None:
    taken = _session_with_memory(store, "S-all")
    record = lifecycle.delete(store, session_id="S-all", now=NOW)
    assert record["counts"]["memories"] == 1 and record["counts"]["memory_relations"] == 1
    assert taken not in _live(store)
    rows = store.query("SELECT COUNT(*) FROM deleted_rows WHERE deletion_id = ?", (record["id"],))
    assert rows[0][0] == sum(record["counts"].values())


def test_deletions_can_be_listed_by_state(store: Store) -> None:
    first, second = _memories_at(store, 0, 1)
    kept = lifecycle.delete(store, memory_ids=[first], now=NOW)
    restored = lifecycle.delete(store, memory_ids=[second], now=NOW + 1)
    lifecycle.undelete(store, restored["id"], now=NOW + 2)
    assert [d["id"] for d in lifecycle.deletions(store, state="deleted")] == [kept["id"]]
    assert [d["id"] for d in lifecycle.deletions(store, state="restored")] == [restored["id"]]
    assert [d["id"] for d in lifecycle.deletions(store)] == [restored["id"], kept["id"]]


def test_purge_reports_the_sizes(store: Store) -> None:
    (entry,) = _memories_at(store, 0)
    lifecycle.delete(store, memory_ids=[entry], now=NOW)
    result = lifecycle.purge(store, everything=True, now=NOW + 1)
    assert set(result) == {"purged", "size_before", "size_after", "reclaimed_bytes"}
    assert result["reclaimed_bytes"] == max(0, result["size_before"] - result["size_after"])


# -- archiving -----------------------------------------------------------------------------------


def test_archiving_adds_up_every_sessions_rows(store: Store) -> None:
    for sid in ("S-a", "S-b"):
        sessions.start(store, session_id=sid, agent="claude-code", now=NOW - 40 * DAY)
        for n in range(2):
            sessions.record_turn(
                store,
                sid,
                user_message=f"q{n}",
                assistant_response=f"a{n}",
                started_at=NOW - 40 * DAY + n,
                ended_at=NOW - 40 * DAY + n + 0.5,
            )
    one = lifecycle.archive_session(store, "S-a", now=NOW)
    assert one["rows"] >= 2 and one["bytes_after"] > 0
    both = lifecycle.archive_sessions(store, now=NOW)
    assert both["sessions"] == ["S-b"] and both["rows"] == one["rows"]
    empty = lifecycle.archive_session(store, "S-a", now=NOW)
    assert empty == {"session_id": "S-a", "rows": 0, "bytes_before": 0, "bytes_after": 0}


def test_restore_if_archived_brings_back_only_what_was_archived(store: Store) -> None:
    sessions.start(store, session_id="S-r", agent="claude-code", now=NOW - 40 * DAY)
    sessions.record_turn(
        store, "S-r", user_message="q", assistant_response="a", started_at=NOW - 40 * DAY
    )
    assert lifecycle.restore_if_archived(store, "S-r", now=NOW) is False
    lifecycle.archive_session(store, "S-r", now=NOW)
    assert lifecycle.restore_if_archived(store, "S-r", now=NOW + 1) is True
    assert lifecycle.restore_if_archived(store, "S-r", now=NOW + 2) is False


@pytest.mark.parametrize(
    ("data", "when"),
    [
        (None, None),
        (5, None),
        ("{}", None),
        ("not json unarchived_at", None),
        ('{"unarchived_at": 12.5}', 12.5),
        ('{"unarchived_at": "soon"}', None),
    ],
)
def test_unarchived_at_reads_only_a_number(data: object, when: float | None) -> None:
    assert lifecycle.unarchived_at(data) == when


def test_tables_in_the_order_their_foreign_keys_need(store: Store) -> None:
    with store.transaction() as db:
        assert lifecycle.parents_first(db, ["memory_relations", "memory_tags", "memories"]) == [
            "memories",
            "memory_relations",
            "memory_tags",
        ]
        assert lifecycle.primary_key(db, "memories") == ["seq"]
        assert lifecycle.primary_key(db, "memory_tags") == ["tag", "memory_id"]  # key order


def test_archiving_several_sessions_adds_up_their_rows(store: Store) -> None:
    for sid in ("S-x", "S-y"):
        sessions.start(store, session_id=sid, agent="claude-code", now=NOW - 40 * DAY)
        sessions.record_turn(
            store, sid, user_message="q", assistant_response="a", started_at=NOW - 40 * DAY
        )
    rows = {
        sid: store.query_one("SELECT COUNT(*) FROM session_turns WHERE session_id = ?", (sid,))[0]
        for sid in ("S-x", "S-y")
    }
    result = lifecycle.archive_sessions(store, now=NOW)
    assert sorted(result["sessions"]) == ["S-x", "S-y"]
    assert result["rows"] >= sum(rows.values()) >= 2
    assert result["rows"] > max(
        lifecycle.archive_session(store, "S-x", now=NOW)["rows"], 1
    )  # nothing left to archive now, and the sum is more than one session's
