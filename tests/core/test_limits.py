"""Retention: one mechanism that caps rows by count and age for every registered table."""

from __future__ import annotations

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
