"""Memories at their edges (issue 31): each limit on both sides, each filter alone, relations
in both directions and to a depth, citations, the Markdown export."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import memory
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store

T0 = 1_790_000_000.0
DAY = 86400.0


def test_content_at_its_limit_is_kept_and_one_more_character_refused(store: Store) -> None:
    limit = memory.MAX_CONTENT_CHARS
    assert len(memory.add(store, "x" * limit, now=T0)["content"]) == limit
    with pytest.raises(UsageError) as caught:
        memory.add(store, "x" * (limit + 1), now=T0)
    assert caught.value.message == f"a memory is at most {limit} characters, got {limit + 1}"
    assert caught.value.hint == "store a summary and cite the file"


@pytest.mark.parametrize("content", ["", "   \n"])
def test_a_memory_needs_some_text(store: Store, content: str) -> None:
    with pytest.raises(UsageError, match="a memory needs some text") as caught:
        memory.add(store, content)
    assert caught.value.hint == 'e.g. engram memory add "we use uv, not pip"'


def test_content_is_trimmed_and_redacted(store: Store) -> None:
    entry = memory.add(store, "  key AKIAIOSFODNN7EXAMPLE \n", now=T0)
    assert entry["content"] == "key [REDACTED:aws-access-key]"


@pytest.mark.parametrize("priority", [0.0, 1.0])
def test_a_base_priority_at_either_end_is_taken(store: Store, priority: float) -> None:
    assert memory.add(store, "x", base_priority=priority, now=T0)["base_priority"] == priority


@pytest.mark.parametrize("priority", [-0.01, 1.01])
def test_a_base_priority_outside_zero_to_one_is_refused(store: Store, priority: float) -> None:
    with pytest.raises(UsageError, match="base priority must be between 0 and 1"):
        memory.add(store, "x", base_priority=priority)


@pytest.mark.parametrize(
    ("field", "value", "message", "hint"),
    [
        ("type", "idea", "unknown type 'idea'", "one of " + ", ".join(memory.TYPES)),
        ("status", "done", "unknown status 'done'", "one of open, resolved, archived"),
        ("impact", "huge", "unknown impact 'huge'", "one of critical, high, medium, low"),
    ],
)
def test_an_unknown_choice_names_the_choices(
    store: Store, field: str, value: str, message: str, hint: str
) -> None:
    with pytest.raises(UsageError) as caught:
        memory.add(store, "x", **{field: value})  # type: ignore[arg-type]
    assert (caught.value.message, caught.value.hint) == (message, hint)


def test_an_entry_keeps_what_it_was_given(store: Store) -> None:
    entry = memory.add(
        store,
        "use uv",
        type="decision",
        tags=["Tooling", "tooling", "py"],
        pinned=True,
        session_id="s1",
        agent="claude-code",
        explicit=True,
        impact="high",
        provenance={"source": "chat"},
        now=T0,
    )
    assert entry["id"].startswith("M-") and len(entry["id"]) == 10
    assert (entry["type"], entry["tags"], entry["pinned"], entry["explicit"]) == (
        "decision",
        ["tooling", "py"],
        True,
        True,
    )
    assert (entry["impact"], entry["status"], entry["agent"], entry["session_id"]) == (
        "high",
        "open",
        "claude-code",
        "s1",
    )
    assert entry["provenance"] == {"source": "chat", "session_id": "s1"}
    assert entry["access_count"] == 0 and entry["created_at"] == "2026-09-21T14:13:20Z"
    assert entry["kind"] == "memory" and entry["project"] == str(store.root)


def test_reading_an_entry_counts_as_an_access_unless_told(store: Store) -> None:
    mid = memory.add(store, "x", now=T0)["id"]
    assert memory.get(store, mid, now=T0 + 10)["access_count"] == 1
    assert memory.get(store, mid, record_access=False, now=T0 + 20)["access_count"] == 1
    entry = memory.get(store, mid, now=T0 + 30)
    assert entry["access_count"] == 2 and entry["last_accessed"] == "2026-09-21T14:13:50Z"
    with pytest.raises(NotFoundError, match="no memory 'M-none'") as caught:
        memory.get(store, "M-none")
    assert caught.value.hint.startswith("see `engram memory list`")
    with pytest.raises(NotFoundError):
        memory.get(store, "M-none", record_access=False)


def _three(store: Store) -> list[str]:
    a = memory.add(store, "a", type="decision", tags=["x"], agent="claude", session_id="s1", now=T0)
    b = memory.add(store, "b", tags=["x", "y"], agent="gemini", now=T0 + DAY)
    c = memory.add(store, "c", type="finding", tags=["y"], now=T0 + 2 * DAY)
    return [a["id"], b["id"], c["id"]]


def test_list_filters_each_alone_newest_first(store: Store) -> None:
    a, b, c = _three(store)
    ids = lambda **kw: [m["id"] for m in memory.list_memories(store, now=T0 + 3 * DAY, **kw)]  # noqa: E731
    assert ids() == [c, b, a]
    assert ids(type="decision") == [a]
    assert ids(tag="x") == [b, a]
    assert ids(tags=["x", "y"]) == [b]
    assert ids(agent="gemini") == [b]
    assert ids(session_id="s1") == [a]
    assert ids(since=T0 + DAY) == [c, b]  # from that time on
    assert ids(until=T0 + DAY) == [a]  # before that time
    assert ids(limit=2) == [c, b]
    assert ids(limit=0) == [c]  # at least one
    assert ids(offset=1, limit=1) == [b]


def test_archived_entries_are_listed_only_when_asked(store: Store) -> None:
    a, _b, _c = _three(store)
    memory.update(store, a, status="archived")
    assert a not in [m["id"] for m in memory.list_memories(store)]
    assert a in [m["id"] for m in memory.list_memories(store, include_archived=True)]


def test_list_refuses_a_negative_offset_and_a_priority_outside_zero_to_one(store: Store) -> None:
    with pytest.raises(UsageError, match="offset must be 0 or more, got -1"):
        memory.list_memories(store, offset=-1)
    with pytest.raises(UsageError, match="minimum priority must be between 0 and 1"):
        memory.list_memories(store, min_priority=1.5)
    assert memory.list_memories(store, offset=0) == []


def test_priority_filters_leave_out_decayed_entries(store: Store) -> None:
    old = memory.add(store, "old", type="action", now=T0)["id"]
    new = memory.add(store, "new", type="action", now=T0 + 400 * DAY)["id"]
    now = T0 + 400 * DAY
    listed = {m["id"]: m["priority"] for m in memory.list_memories(store, now=now)}
    assert listed[old] < 0.3 <= listed[new]
    kept = [m["id"] for m in memory.list_memories(store, include_decayed=False, now=now)]
    assert kept == [new]
    assert [m["id"] for m in memory.list_memories(store, min_priority=1.0, now=now)] == []
    assert len(memory.list_memories(store, min_priority=0.0, now=now)) == 2


def test_update_pins_resolves_retags_and_sets_impact(store: Store) -> None:
    mid = memory.add(store, "x", tags=["a"], now=T0)["id"]
    entry = memory.update(store, mid, pinned=True, status="resolved", tags=["B c"], impact="low")
    assert (entry["pinned"], entry["status"], entry["tags"], entry["impact"]) == (
        True,
        "resolved",
        ["b-c"],
        "low",
    )
    assert [m["id"] for m in memory.list_memories(store, tag="b-c")] == [mid]
    assert memory.list_memories(store, tag="a") == []
    assert memory.update(store, mid, pinned=False)["pinned"] is False
    assert memory.update(store, mid)["id"] == mid  # nothing to change, still found
    for bad in ({"status": "x"}, {"impact": "x"}):
        with pytest.raises(UsageError):
            memory.update(store, mid, **bad)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        memory.update(store, "M-none", pinned=True)
    with pytest.raises(NotFoundError):
        memory.update(store, "M-none")


def test_relations_go_both_ways_and_to_a_depth(store: Store) -> None:
    a = memory.add(store, "a", now=T0)["id"]
    b = memory.add(store, "b", now=T0)["id"]
    c = memory.add(store, "c", now=T0)["id"]
    d = memory.add(store, "d", relations=[("resolves", a)], now=T0)["id"]
    memory.relate(store, a, "led_to", b)
    memory.relate(store, b, "influenced", c)
    memory.relate(store, a, "led_to", b)  # twice: kept once
    assert memory.relations_of(store, a) == [
        {"kind": "led_to", "direction": "out", "id": b},
        {"kind": "resolves", "direction": "in", "id": d},
    ]
    found = memory.find_related(store, a, now=T0)
    assert [(m["id"], m["distance"], m["via"]) for m in found] == [
        (b, 1, ["led_to"]),
        (d, 1, ["resolves by"]),
        (c, 2, ["led_to", "influenced"]),
    ]
    assert [m["id"] for m in memory.find_related(store, a, depth=1, now=T0)] == [b, d]
    assert [m["id"] for m in memory.find_related(store, a, depth=0, now=T0)] == [b, d]
    with pytest.raises(NotFoundError):
        memory.find_related(store, "M-none")


def test_a_relation_to_itself_or_to_nothing_is_refused(store: Store) -> None:
    a = memory.add(store, "a", now=T0)["id"]
    with pytest.raises(UsageError, match=f"cannot relate to itself \\({a}\\)"):
        memory.relate(store, a, "led_to", a)
    with pytest.raises(NotFoundError, match="M-none"):
        memory.relate(store, a, "led_to", "M-none")
    with pytest.raises(NotFoundError, match="M-none"):
        memory.relate(store, "M-none", "led_to", a)
    with pytest.raises(UsageError, match="unknown relation 'causes'"):
        memory.relate(store, a, "causes", a)


def test_a_citation_hashes_the_cited_lines(store: Store, workspace: Path) -> None:
    (workspace / "app.py").write_text("one\ntwo\nthree\n")
    entry = memory.add(store, "x", file=str(workspace / "app.py"), line=2, now=T0)
    assert (entry["file"], entry["line"], entry["end_line"]) == ("app.py", 2, 2)
    wide = memory.add(store, "y", file="app.py", line=2, end_line=1, now=T0)
    assert wide["end_line"] == 2  # an end before the start is the start
    only_file = memory.add(store, "z", file="app.py", now=T0)
    assert (only_file["file"], only_file["line"]) == ("app.py", None)
    with pytest.raises(UsageError, match="line numbers start at 1, got 0"):
        memory.add(store, "x", file="app.py", line=0)
    gone = memory.add(store, "g", file="missing.py", line=3, end_line=4, now=T0)
    assert (gone["line"], gone["end_line"]) == (3, 4)


def test_recite_points_the_citation_at_the_code_now(store: Store, workspace: Path) -> None:
    (workspace / "app.py").write_text("one\ntwo\nthree\nfour\n")
    mid = memory.add(store, "x", file="app.py", line=2, end_line=3, now=T0)["id"]
    anchor = lambda: store.query_one("SELECT anchor FROM memories WHERE id = ?", (mid,))[0]  # noqa: E731
    before = anchor()
    (workspace / "app.py").write_text("zero\none\ntwo\nthree\nfour\n")
    entry = memory.recite(store, mid, line=3)
    assert (entry["line"], entry["end_line"]) == (3, 4)  # the span kept
    assert anchor() == before  # the same lines, moved down one
    assert memory.recite(store, mid, line=1, end_line=1)["end_line"] == 1
    assert memory.recite(store, mid)["line"] == 1
    with pytest.raises(UsageError, match=r"app\.py has no line 9"):
        memory.recite(store, mid, line=9)
    (workspace / "app.py").unlink()
    with pytest.raises(UsageError, match=r"app\.py no longer exists"):
        memory.recite(store, mid)


def test_recite_needs_a_memory_that_cites_code(store: Store) -> None:
    plain = memory.add(store, "x", now=T0)["id"]
    with pytest.raises(UsageError, match=f"memory {plain} cites no lines of code"):
        memory.recite(store, plain)
    with pytest.raises(NotFoundError):
        memory.recite(store, "M-none")


def test_the_export_lists_live_memories_newest_first_with_their_lines(store: Store) -> None:
    a = memory.add(store, "first\nsecond line", tags=["t1", "t2"], now=T0)["id"]
    b = memory.add(store, "other", type="decision", now=T0 + 10)["id"]
    archived = memory.add(store, "gone", now=T0 + 20)["id"]
    memory.update(store, archived, status="archived")
    path, positions = memory.write_export(store, now=T0 + 30)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert path == store.dir / "exports" / "memories.md"
    assert lines[:4] == [
        "# engram memories",
        "",
        "Written 2026-09-21T14:13:50Z. Edit with `engram memory ...`.",
        "",
    ]
    assert positions == {b: 4, a: 8}
    assert lines[4].startswith(f"## {b} (decision, ")
    assert lines[8].startswith(f"## {a} (learning, ") and lines[8].endswith(" [t1, t2]")
    assert lines[10:12] == ["first", "second line"]
    assert archived not in positions


def test_what_the_mutation_run_of_memory_showed(store: Store, workspace: Path) -> None:
    # the missing id named on both not-found paths
    with pytest.raises(NotFoundError, match="no memory 'M-gone'"):
        memory.get(store, "M-gone", record_access=False)
    # an unknown relation kind named as a relation
    target = memory.add(store, "t", now=T0)["id"]
    with pytest.raises(UsageError, match="unknown relation 'causes'"):
        memory.add(store, "x", relations=[("causes", target)])
    # provenance stored with sorted keys
    mid = memory.add(store, "p", provenance={"b": 1, "a": 2}, now=T0)["id"]
    raw = store.query_one("SELECT provenance FROM memories WHERE id = ?", (mid,))
    assert raw is not None and raw[0] == '{"a": 2, "b": 1}'
    # a file-only citation recited at a line cites that line alone
    (workspace / "app.py").write_text("one\ntwo\n")
    cited = memory.add(store, "c", file="app.py", now=T0)["id"]
    entry = memory.recite(store, cited, line=2)
    assert (entry["line"], entry["end_line"]) == (2, 2)
    # an entry without tags has no tag list in the export
    path, positions = memory.write_export(store, now=T0 + 1)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[positions[mid]].endswith(")")
