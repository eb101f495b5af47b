"""Search at its edges (issue 31): the query's terms, paging on both sides, each filter over
memories and the other kinds, what a search counts as an access."""

from __future__ import annotations

import pytest

from memory_core import memory, search, sessions
from memory_core.errors import UsageError
from memory_core.store import Store

T0 = 1_790_000_000.0
DAY = 86400.0


def test_terms_are_quoted_lowercase_unique_and_at_most_sixteen() -> None:
    assert search.fts_terms('Cache "OR" cache-key') == ['"cache"', '"key"']
    words = " ".join(f"w{n}" for n in range(20))
    assert len(search.fts_terms(words)) == 16
    assert search.fts_terms("auth", prefix=True) == ['"auth"*']
    assert search.fts_terms("", prefix=True) == []
    assert search.fts_terms("the auth flow", prefix=True) == ['"auth"', '"flow"*']


def _memories(store: Store) -> dict[str, str]:
    ids = {}
    ids["old"] = memory.add(
        store, "cache eviction old", tags=["perf"], agent="claude", session_id="s1", now=T0
    )["id"]
    ids["mid"] = memory.add(store, "cache eviction policy", type="decision", now=T0 + DAY)["id"]
    ids["new"] = memory.add(store, "cache warmup", tags=["perf"], now=T0 + 2 * DAY)["id"]
    return ids


def _ids(store: Store, query: str = "cache", **kw: object) -> list[str]:
    return [r["id"] for r in search.search(store, query, now=T0 + 3 * DAY, **kw)]  # type: ignore[arg-type]


def test_each_memory_filter_alone(store: Store) -> None:
    ids = _memories(store)
    assert set(_ids(store)) == set(ids.values())
    assert _ids(store, type="decision") == [ids["mid"]]
    assert _ids(store, types=["decision"]) == [ids["mid"]]
    assert set(_ids(store, tag="perf")) == {ids["old"], ids["new"]}
    assert _ids(store, agent="claude") == [ids["old"]]
    assert _ids(store, session_id="s1") == [ids["old"]]
    assert set(_ids(store, since=T0 + DAY)) == {ids["mid"], ids["new"]}
    assert _ids(store, until=T0 + DAY) == [ids["old"]]


def test_paging_gives_each_result_once(store: Store) -> None:
    _memories(store)
    everything = _ids(store, limit=10)
    assert len(everything) == 3
    assert _ids(store, limit=1) == everything[:1]
    assert _ids(store, limit=1, offset=1) == everything[1:2]
    assert _ids(store, limit=2, offset=2) == everything[2:]
    assert _ids(store, offset=3) == []
    assert _ids(store, limit=0) == everything[:1]  # at least one


def test_bad_paging_and_priority_are_refused(store: Store) -> None:
    with pytest.raises(UsageError, match="offset must be 0 or more, got -1"):
        search.search(store, "x", offset=-1)
    for bad in (-0.1, 1.1):
        with pytest.raises(UsageError, match="minimum priority must be between 0 and 1"):
            search.search(store, "x", min_priority=bad)
    with pytest.raises(UsageError, match="unknown kind 'note'") as caught:
        search.search(store, "x", kinds=["note"])
    assert caught.value.hint == "one of memory, gotcha, session, digest"


def test_a_query_of_no_words_finds_nothing(store: Store) -> None:
    _memories(store)
    assert search.search(store, "  !? ") == []


def test_decayed_entries_are_left_out_only_when_asked(store: Store) -> None:
    old = memory.add(store, "cache rule", type="action", now=T0)["id"]
    now = T0 + 400 * DAY
    assert [r["id"] for r in search.search(store, "cache", now=now)] == [old]
    assert search.search(store, "cache", include_decayed=False, now=now) == []
    assert search.search(store, "cache", min_priority=0.9, now=now) == []
    assert len(search.search(store, "cache", min_priority=0.0, now=now)) == 1


def test_a_search_counts_as_an_access_unless_told(store: Store) -> None:
    mid = memory.add(store, "cache rule", now=T0)["id"]
    search.search(store, "cache", record_access=False, now=T0 + 1)
    assert memory.get(store, mid, record_access=False)["access_count"] == 0
    search.search(store, "cache", now=T0 + 2)
    assert memory.get(store, mid, record_access=False)["access_count"] == 1


def _gotcha(store: Store, gid: str, title: str, ts: float, status: str = "active") -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO gotchas (id, title, description, status, first_seen, last_seen,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (gid, title, "lock it", status, ts, ts, ts, ts),
        )


def _docs(store: Store) -> None:
    # The other kinds are read from their own tables by the index's sync before each search.
    _gotcha(store, "g1", "cache stampede", T0)
    sessions.start(store, session_id="s2", name="cache work", agent="gemini", now=T0 + 2 * DAY)
    sessions.set_summary(store, "s2", overview="warm the cache")
    with store.transaction() as db:
        db.execute(
            "INSERT INTO digests (id, session_id, ts, trigger, schema_version, path, content)"
            " VALUES (41, 's9', ?, 'manual', '1', 'x', 'cache digest body text')",
            (T0 + DAY,),
        )


def test_other_kinds_are_found_and_filtered(store: Store) -> None:
    _docs(store)
    found = search.search(store, "cache", kinds=["gotcha", "session", "digest"], now=T0 + 3 * DAY)
    assert {(r["kind"], r["id"]) for r in found} == {
        ("gotcha", "g1"),
        ("session", "s2"),
        ("digest", "41"),
    }
    digest = next(r for r in found if r["kind"] == "digest")
    assert digest["label"] == "s9"  # a digest is titled by its session
    gotcha = next(r for r in found if r["kind"] == "gotcha")
    assert gotcha["label"] == "cache stampede" and gotcha["content"].startswith("lock it\n")
    assert gotcha["relevance"] > 0 and gotcha["score"] > 0
    kinds = ["gotcha", "session", "digest"]
    assert _ids(store, kinds=kinds, agent="gemini") == ["s2"]
    assert _ids(store, kinds=kinds, session_id="s9") == ["41"]
    assert set(_ids(store, kinds=kinds, since=T0 + DAY)) == {"s2", "41"}
    assert _ids(store, kinds=kinds, until=T0 + DAY) == ["g1"]
    assert _ids(store, kinds=["session"]) == ["s2"]
    assert _ids(store, kinds=kinds, type="decision") == []  # a memory type: memories only


def test_a_search_counts_an_access_of_a_document_too(store: Store) -> None:
    _docs(store)
    search.search(store, "stampede", kinds=["gotcha"], now=T0 + 5)
    row = store.query_one("SELECT access_count, last_accessed FROM search_docs WHERE ref_id = 'g1'")
    assert row is not None and (row[0], row[1]) == (1, T0 + 5)


def test_a_resolved_document_ranks_below_an_open_one(store: Store) -> None:
    _gotcha(store, "open", "flaky build", T0)
    _gotcha(store, "done", "flaky build", T0, status="resolved")
    found = search.search(store, "flaky build", kinds=["gotcha"], now=T0 + DAY)
    assert [r["id"] for r in found] == ["open", "done"]
    assert found[0]["score"] > found[1]["score"]
