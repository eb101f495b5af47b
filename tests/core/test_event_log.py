"""The event log as `engram timeline` and the editor read it (issue 31): what is stored, how a
filter selects, newest first."""

from __future__ import annotations

import json
import time

from memory_core import events
from memory_core.events import Event
from memory_core.store import Store

T0 = 1_790_000_000.0


def test_an_event_is_stored_with_every_field_and_its_data_redacted(store: Store) -> None:
    event_id = events.append(
        store,
        Event(
            "gotcha.error",
            actor="agent:s1",
            session_id="s1",
            path="src/app.py",
            data={"output": "key AKIAIOSFODNN7EXAMPLE", "n": 2},
            ts=T0,
        ),
    )
    assert event_id > 0
    (found,) = events.recent(store)
    assert found == Event(
        "gotcha.error",
        actor="agent:s1",
        session_id="s1",
        path="src/app.py",
        data={"output": "key [REDACTED:aws-access-key]", "n": 2},
        ts=T0,
        id=event_id,
    )


def test_plain_data_is_stored_as_given(store: Store) -> None:
    events.append(
        store, Event("checkpoint.created", data={"id": "AKIAIOSFODNN7EXAMPLE"}, ts=T0), plain=True
    )
    assert events.recent(store)[0].data == {"id": "AKIAIOSFODNN7EXAMPLE"}


def test_an_event_without_a_time_takes_now(store: Store) -> None:
    events.append(store, Event("x"))
    assert abs(float(events.recent(store)[0].ts or 0) - time.time()) < 60


def test_an_event_joins_a_transaction_it_is_given(store: Store) -> None:
    with store.transaction() as db:
        first = events.append(store, Event("a", ts=T0), db=db)
        db.execute("INSERT INTO events (ts, kind, data) VALUES (?, 'b', '{}')", (T0 + 1,))
    assert [e.kind for e in events.recent(store)] == ["b", "a"]
    assert events.recent(store, kind="a")[0].id == first > 0


def test_a_burst_is_stored_at_once_and_counted(store: Store) -> None:
    count = events.append_many(
        store,
        (
            Event("file.changed", path=f"f{n}.py", data={"k": "ghp_" + "a" * 36}, ts=T0 + n)
            for n in range(3)
        ),
    )
    assert count == 3
    found = events.recent(store)
    assert [e.path for e in found] == ["f2.py", "f1.py", "f0.py"]
    assert all(e.data == {"k": "[REDACTED:github-token]"} for e in found)
    assert events.append_many(store, []) == 0


def test_a_file_name_that_is_not_utf8_round_trips(store: Store) -> None:
    events.append(store, Event("file.changed", data={"path": "caf\udce9.txt"}, ts=T0), plain=True)
    (raw,) = store.query("SELECT data FROM events")
    assert "\\udce9" in raw[0]
    assert events.recent(store)[0].data == {"path": "caf\udce9.txt"}


def test_text_that_is_not_ascii_is_stored_readable(store: Store) -> None:
    events.append(store, Event("note", data={"t": "café"}, ts=T0), plain=True)
    (raw,) = store.query("SELECT data FROM events")
    assert json.loads(raw[0]) == {"t": "café"} and "café" in raw[0] and " " not in raw[0]


def _some(store: Store) -> None:
    events.append_many(
        store,
        [
            Event("file.changed", path="a.py", ts=T0),
            Event("file.created", path="b.py", ts=T0 + 10),
            Event("gotcha.error", path="a.py", ts=T0 + 20),
            Event("file", path="c.py", ts=T0 + 30),
            Event("file.changed", path="a.py", ts=T0 + 30),
        ],
    )


def test_recent_is_newest_first_with_ties_by_order_written(store: Store) -> None:
    _some(store)
    assert [(e.kind, e.ts) for e in events.recent(store)][:2] == [
        ("file.changed", T0 + 30),
        ("file", T0 + 30),
    ]


def test_recent_filters_by_exact_kind_or_kind_prefix(store: Store) -> None:
    _some(store)
    assert [e.path for e in events.recent(store, kind="file.changed")] == ["a.py", "a.py"]
    assert [e.kind for e in events.recent(store, kind="file.*")] == [
        "file.changed",
        "file.created",
        "file.changed",
    ]
    assert len(events.recent(store, kind="file*")) == 4
    assert [e.path for e in events.recent(store, kind="file")] == ["c.py"]  # exactly that kind


def test_recent_filters_by_path_and_from_a_time_on_and_limits(store: Store) -> None:
    _some(store)
    assert [e.kind for e in events.recent(store, path="a.py")] == [
        "file.changed",
        "gotcha.error",
        "file.changed",
    ]
    assert [e.ts for e in events.recent(store, since=T0 + 20)] == [T0 + 30, T0 + 30, T0 + 20]
    assert len(events.recent(store, limit=2)) == 2
    assert [e.kind for e in events.recent(store, kind="file.*", path="a.py", since=T0 + 1)] == [
        "file.changed"
    ]


def test_plain_data_joining_a_transaction_is_stored_as_given(store: Store) -> None:
    with store.transaction() as db:
        events.append(
            store, Event("x", data={"id": "AKIAIOSFODNN7EXAMPLE"}, ts=T0), db=db, plain=True
        )
    assert events.recent(store)[0].data == {"id": "AKIAIOSFODNN7EXAMPLE"}


def test_a_name_that_is_not_utf8_is_stored_as_compact_as_any_other(store: Store) -> None:
    events.append(store, Event("f", data={"path": "caf\udce9.txt", "n": 1}, ts=T0), plain=True)
    (raw,) = store.query("SELECT data FROM events")
    assert raw[0] == '{"path":"caf\\udce9.txt","n":1}'
