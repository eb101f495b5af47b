"""Times as people read them: `... ago` in listings, ISO-8601 in exports and `--since`."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from memory_core import clock

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0, "just now"),
        (59.9, "just now"),
        (60, "1 min ago"),
        (119, "1 min ago"),
        (3599, "59 min ago"),
        (3600, "1 h ago"),
        (86399, "23 h ago"),
        (86400, "1 d ago"),
        (3 * 86400 + 5, "3 d ago"),
    ],
)
def test_ago_on_both_sides_of_each_unit(seconds: float, said: str) -> None:
    assert clock.ago(NOW - seconds, now_ts=NOW) == said


def test_a_time_in_the_future_is_just_now_not_a_negative_duration() -> None:
    assert clock.ago(NOW + 7200, now_ts=NOW) == "just now"


def test_ago_without_a_given_now_reads_the_clock() -> None:
    assert clock.ago(time.time() - 7200) == "2 h ago"
    assert abs(clock.now() - time.time()) < 5


def test_iso_is_utc_with_a_trailing_z() -> None:
    assert clock.iso(0) == "1970-01-01T00:00:00Z"
    assert clock.iso(NOW) == "2027-01-15T08:00:00Z"


@pytest.mark.parametrize(
    "text",
    [
        "2027-01-15T08:00:00Z",
        "2027-01-15T08:00:00",
        "2027-01-15T09:00:00+01:00",
        " 2027-01-15T08:00:00Z ",
    ],
)
def test_parse_iso_reads_z_naive_and_offset_times_as_the_same_instant(text: str) -> None:
    assert clock.parse_iso(text) == NOW


def test_parse_iso_reads_a_date_as_its_midnight_utc() -> None:
    assert clock.parse_iso("2027-01-15") == NOW - 8 * 3600


def test_parse_iso_round_trips_iso() -> None:
    assert clock.parse_iso(clock.iso(NOW + 42)) == NOW + 42


def test_parse_iso_refuses_what_is_not_a_date() -> None:
    with pytest.raises(ValueError):
        clock.parse_iso("yesterday")


@pytest.fixture
def _another_time_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # A machine five hours behind UTC (a POSIX zone string: no time-zone database needed).
    monkeypatch.setenv("TZ", "XST+5")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("_another_time_zone")
def test_times_are_utc_whatever_the_machines_time_zone() -> None:
    assert time.localtime(0).tm_hour == 19  # the zone is in effect
    assert clock.iso(0) == "1970-01-01T00:00:00Z"
    assert clock.parse_iso("2027-01-15T08:00:00") == NOW  # a naive time is UTC
    assert clock.parse_iso("2027-01-15") == NOW - 8 * 3600
