"""Search in a store of hundreds of entries (issue 31): a word in more than 500 of them is
"common" (ranked by priority alone, relevance 1.0) and in at most 500 "rare" (ranked by BM25),
each side of that edge; the newest matches first, and every match once the filters leave too
few; archived entries only when asked; the other kinds' tag filter, label and priority edge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core import gotchas, memory, search, sessions
from memory_core.store import Store

T0 = 1_790_000_000.0
MINUTE = 60.0
COUNT = 520  # more than CANDIDATE_CAP (500)
LATER = T0 + (COUNT + 40) * MINUTE


def _content(index: int) -> str:
    words = ["deploy", "service", f"note{index}"]
    if index >= COUNT - 501:
        words.append("widely")  # in exactly 501 entries: common
    if index >= COUNT - 500:
        words.append("often")  # in exactly 500: still rare
    if index in (7, 300, 450):
        words.append("rollback")
    return " ".join(words)


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """520 memories, one a minute, all of them about deploying the service (`M-00000` the
    oldest is a decision, `M-00100` is pinned, the rest are findings), then 1,600 others."""
    root: Path = tmp_path_factory.mktemp("crowded")
    store = Store.init(root)
    rows = [
        (
            f"M-{index:05d}",
            "decision" if index == 0 else "finding",
            _content(index),
            T0 + index * MINUTE,
            T0 + index * MINUTE,
            int(index == 100),
        )
        for index in range(COUNT)
    ]
    # Then 1,600 pages of notes, each holding one of four rare words (400 entries each), so a
    # query of the four matches more than SCORED_CAP (1,500); the oldest is a decision.
    start = T0 + COUNT * MINUTE
    rows += [
        (
            f"P-{index:05d}",
            "decision" if index == 0 else "finding",
            f"pager rota{index % 4} entry{index}",
            start + index,
            start + index,
            0,
        )
        for index in range(1600)
    ]
    with store.transaction() as db:  # one transaction: 2,120 `memory.add` calls take seconds
        db.executemany(
            "INSERT INTO memories (id, type, content, created_at, last_accessed, pinned)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
    yield store
    store.close()


def _found(store: Store, query: str, **options: object) -> list[dict[str, object]]:
    return search.search(store, query, record_access=False, now=LATER, **options)  # type: ignore[arg-type]


def test_a_query_of_common_words_is_ranked_by_priority(crowded: Store) -> None:
    found = _found(crowded, "deploy service", limit=3)
    # The pinned entry first, though 419 are newer; then the newest.
    assert [r["id"] for r in found] == ["M-00100", "M-00519", "M-00518"]
    assert {r["relevance"] for r in found} == {1.0}  # the words cannot tell them apart
    assert found[0]["score"] > found[1]["score"] > found[2]["score"]


def test_a_filter_reaches_past_the_newest_matches_of_common_words(crowded: Store) -> None:
    # The only decision is the oldest entry, outside the newest 500 matches.
    assert [r["id"] for r in _found(crowded, "deploy service", type="decision")] == ["M-00000"]
    assert _found(crowded, "deploy service", type="decision", until=T0) == []


def test_a_rare_word_with_common_ones_finds_only_what_holds_it(crowded: Store) -> None:
    found = _found(crowded, "deploy service rollback")
    assert sorted(r["id"] for r in found) == ["M-00007", "M-00300", "M-00450"]
    assert all(0.0 < r["relevance"] != 1.0 for r in found)
    # A filter applies to the rare word's matches.
    assert [r["id"] for r in _found(crowded, "rollback", since=T0 + 400 * MINUTE)] == ["M-00450"]


def test_a_word_in_500_entries_is_weighed_and_in_501_is_not(crowded: Store) -> None:
    rare = _found(crowded, "often", limit=5)
    common = _found(crowded, "widely", limit=5)
    assert len(rare) == len(common) == 5
    assert all(r["relevance"] != 1.0 for r in rare)
    assert {r["relevance"] for r in common} == {1.0}


def test_archived_memories_are_found_only_when_asked(store: Store) -> None:
    kept = memory.add(store, "flaky integration test on CI", type="finding", now=T0)
    memory.update(store, kept["id"], status="archived", now=T0)
    assert search.search(store, "flaky", now=T0) == []
    found = search.search(store, "flaky", include_archived=True, now=T0)
    assert [r["id"] for r in found] == [kept["id"]]


def test_a_minimum_priority_keeps_entries_exactly_at_it(store: Store) -> None:
    # Just created, each is at its starting priority: 0.95 for a decision, 1.0 for a gotcha.
    entry = memory.add(store, "rotate the signing key yearly", type="decision", now=T0)
    gotcha = gotchas.add(store, "signing key cached by the worker", now=T0)

    def ids(minimum: float, now: float = T0) -> set[str]:
        found = search.search(store, "signing", min_priority=minimum, now=now, record_access=False)
        return {str(r["id"]) for r in found}

    assert ids(0.95) == {entry["id"], gotcha.id}
    assert ids(0.951) == ids(1.0) == {gotcha.id}
    assert ids(1.0, now=T0 + 86400) == set()


def test_sessions_are_filtered_by_their_tags(store: Store) -> None:
    for session_id, tags in (("s-pay", ["payments", "billing"]), ("s-ui", ["frontend"])):
        sessions.start(store, session_id=session_id, agent="claude-code", now=T0)
        sessions.set_summary(store, session_id, overview="retry logic reviewed", tags=tags)
    found = search.search(store, "retry", kinds=["session"], tag="billing", now=T0)
    assert [r["id"] for r in found] == ["s-pay"]
    assert found[0]["tags"] == ["payments", "billing"]
    assert search.search(store, "retry", kinds=["session"], tag="bill", now=T0) == []
    both = search.search(store, "retry", kinds=["session"], now=T0)
    assert {r["id"] for r in both} == {"s-pay", "s-ui"}


def test_an_entry_without_a_title_is_labelled_by_its_first_80_characters(store: Store) -> None:
    overview = "Moved the nightly export to a queue " + "x" * 100
    sessions.start(store, session_id="s-untitled", agent="gemini", now=T0)
    sessions.set_summary(store, "s-untitled", overview=overview)
    (found,) = search.search(store, "nightly", kinds=["session"], now=T0)
    assert found["label"] == overview[:80]
    assert found["content"].startswith(overview)
    assert found["tags"] == []


def test_a_filter_reaches_past_the_newest_1500_matches_of_rare_words(crowded: Store) -> None:
    query = "rota0 rota1 rota2 rota3"  # four rare words, 1,600 entries between them
    assert [r["id"] for r in _found(crowded, query, type="decision")] == ["P-00000"]
    assert len(_found(crowded, query, limit=20)) == 20
