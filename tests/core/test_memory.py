"""Memory entries and search: what a user asks of long-term memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import gotchas, memory, search, sessions
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store

DAY = 86400.0
NOW = 1_800_000_000.0

FILLER = [
    "The build uses setuptools with a src layout",
    "Prefer pathlib over os.path in new modules",
    "Logging goes through the engram.log file, never stdout",
    "Integration tests need docker compose running",
    "The API returns ISO timestamps in UTC",
    "Feature flags live in config/flags.toml",
]


def _ids(results: list[dict]) -> list[str]:
    return [r["id"] for r in results]


def test_add_stores_every_field_and_get_reads_it_back(store: Store, workspace: Path) -> None:
    entry = memory.add(
        store,
        "  Use uv, not pip, to install dependencies  ",
        type="decision",
        tags=["Tooling", "python deps", "tooling"],
        pinned=True,
        session_id="s-1",
        agent="claude-code",
        provenance={"turn": 4, "tool": "Bash"},
        now=NOW,
    )
    assert entry["id"].startswith("M-") and len(entry["id"]) == 10
    got = memory.get(store, entry["id"], record_access=False, now=NOW)
    assert got["content"] == "Use uv, not pip, to install dependencies"
    assert got["type"] == "decision"
    assert got["tags"] == ["tooling", "python-deps"]
    assert got["pinned"] is True
    assert got["agent"] == "claude-code" and got["session_id"] == "s-1"
    assert got["provenance"] == {"turn": 4, "tool": "Bash", "session_id": "s-1"}
    assert got["project"] == str(workspace)
    assert got["created_at"] == "2027-01-15T08:00:00Z"
    assert got["relations"] == []


def test_bad_input_is_refused_clearly_and_nothing_is_stored(store: Store) -> None:
    with pytest.raises(UsageError, match="unknown type 'rumour'"):
        memory.add(store, "x", type="rumour")
    with pytest.raises(UsageError, match="needs some text"):
        memory.add(store, "   ")
    with pytest.raises(UsageError, match="at most"):
        memory.add(store, "x" * (memory.MAX_CONTENT_CHARS + 1))
    with pytest.raises(UsageError, match="outside the workspace"):
        memory.add(store, "x", file="/etc/passwd", line=1)
    with pytest.raises(NotFoundError):
        memory.add(store, "y", relations=[("resolves", "M-00000000")])
    assert memory.list_memories(store) == []
    with pytest.raises(NotFoundError, match="no memory"):
        memory.get(store, "M-deadbeef")


def test_relations_and_find_related_walk_both_directions(store: Store) -> None:
    bug = memory.add(store, "Login fails when the session cookie is not Secure", type="finding")
    fix = memory.add(
        store,
        "Set SESSION_COOKIE_SECURE in production",
        type="action",
        relations=[("resolves", bug["id"])],
    )
    policy = memory.add(store, "All cookies must be Secure and HttpOnly", type="decision")
    memory.relate(store, bug["id"], "led_to", policy["id"])
    memory.relate(store, bug["id"], "led_to", policy["id"])  # idempotent

    assert memory.get(store, fix["id"])["relations"] == [
        {"kind": "resolves", "direction": "out", "id": bug["id"]}
    ]
    related = memory.find_related(store, fix["id"], depth=2)
    assert [(r["id"], r["distance"], r["via"]) for r in related] == [
        (bug["id"], 1, ["resolves"]),
        (policy["id"], 2, ["resolves", "led_to"]),
    ]
    assert [r["id"] for r in memory.find_related(store, fix["id"], depth=1)] == [bug["id"]]
    with pytest.raises(UsageError, match="itself"):
        memory.relate(store, bug["id"], "influenced", bug["id"])
    with pytest.raises(UsageError, match="unknown relation"):
        memory.relate(store, bug["id"], "caused", fix["id"])


def test_list_filters_by_type_tag_agent_session_and_time(store: Store) -> None:
    a = memory.add(
        store,
        "a decision",
        type="decision",
        tags=["db"],
        agent="claude-code",
        session_id="s1",
        now=NOW - 10 * DAY,
    )
    b = memory.add(
        store,
        "a finding",
        type="finding",
        tags=["db", "perf"],
        agent="gemini",
        session_id="s2",
        now=NOW - 2 * DAY,
    )
    c = memory.add(store, "a learning", type="learning", agent="claude-code", now=NOW)
    assert _ids(memory.list_memories(store, now=NOW)) == [c["id"], b["id"], a["id"]]
    assert _ids(memory.list_memories(store, type="finding")) == [b["id"]]
    assert _ids(memory.list_memories(store, tag="DB")) == [b["id"], a["id"]]
    assert _ids(memory.list_memories(store, agent="claude-code")) == [c["id"], a["id"]]
    assert _ids(memory.list_memories(store, session_id="s1")) == [a["id"]]
    assert _ids(memory.list_memories(store, since=NOW - 5 * DAY, until=NOW - DAY)) == [b["id"]]


def test_search_ranks_the_relevant_entry_first(store: Store) -> None:
    for text in FILLER:
        memory.add(store, text, now=NOW)
    target = memory.add(
        store,
        "pytest fails with ImportError when conftest.py is missing in a subfolder",
        type="finding",
        now=NOW,
    )
    memory.add(
        store, "An ImportError in the CLI came from a circular import", type="finding", now=NOW
    )
    results = search.search(store, "ImportError conftest", now=NOW, record_access=False)
    assert results[0]["id"] == target["id"]
    assert results[0]["kind"] == "memory" and results[0]["score"] > results[1]["score"] > 0
    assert search.search(store, "kubernetes", now=NOW) == []
    assert search.search(store, "  ...  ", now=NOW) == []


def test_a_decayed_entry_ranks_below_a_fresh_one_of_equal_relevance(store: Store) -> None:
    for text in FILLER:
        memory.add(store, text, now=NOW)
    old = memory.add(
        store, "Run migrations before seeding the database", type="action", now=NOW - 120 * DAY
    )
    fresh = memory.add(
        store, "Run migrations before seeding the database", type="action", now=NOW - DAY
    )
    results = search.search(store, "migrations seeding", now=NOW, record_access=False)
    assert _ids(results) == [fresh["id"], old["id"]]
    assert results[0]["relevance"] == results[1]["relevance"]
    assert results[0]["priority"] > results[1]["priority"]


def test_an_access_raises_priority_and_changes_the_order(store: Store) -> None:
    for text in FILLER:
        memory.add(store, text, now=NOW)
    first = memory.add(
        store, "Cache the wheel directory between CI runs", type="learning", now=NOW - 30 * DAY
    )
    second = memory.add(
        store, "Cache the wheel directory between CI runs", type="learning", now=NOW - 30 * DAY + 1
    )
    before = search.search(store, "wheel cache", now=NOW, record_access=False)
    assert _ids(before) == [second["id"], first["id"]]  # equal: the newer row first

    accessed = memory.get(store, first["id"], now=NOW)  # reading it is an access
    assert accessed["access_count"] == 1 and accessed["last_accessed"] == "2027-01-15T08:00:00Z"
    after = search.search(store, "wheel cache", now=NOW + 60)
    assert _ids(after) == [first["id"], second["id"]]
    # The search itself was recorded as an access of what it returned.
    assert memory.get(store, second["id"], record_access=False)["access_count"] == 1


def test_search_filters(store: Store) -> None:
    a = memory.add(
        store,
        "retry the flaky upload test",
        type="finding",
        tags=["ci"],
        agent="claude-code",
        session_id="s1",
        now=NOW - 3 * DAY,
    )
    b = memory.add(
        store,
        "retry budget is three attempts",
        type="decision",
        tags=["ci", "policy"],
        agent="gemini",
        session_id="s2",
        now=NOW,
    )
    common = {"now": NOW, "record_access": False}
    assert set(_ids(search.search(store, "retry", **common))) == {a["id"], b["id"]}
    assert _ids(search.search(store, "retry", type="decision", **common)) == [b["id"]]
    assert _ids(search.search(store, "retry", tags=["policy"], **common)) == [b["id"]]
    assert _ids(search.search(store, "retry", agent="claude-code", **common)) == [a["id"]]
    assert _ids(search.search(store, "retry", session_id="s2", **common)) == [b["id"]]
    assert _ids(search.search(store, "retry", since=NOW - DAY, **common)) == [b["id"]]
    assert _ids(search.search(store, "retry", until=NOW - DAY, **common)) == [a["id"]]
    with pytest.raises(UsageError, match="unknown kind"):
        search.search(store, "retry", kinds=["rumours"])


def test_search_covers_gotchas_and_session_summaries(store: Store) -> None:
    memory.add(store, "The staging database is reset every night", now=NOW)
    gotcha = gotchas.add(
        store,
        "Alembic autogenerate misses enum changes",
        description="edit the migration by hand",
        now=NOW,
    )
    session = sessions.start(store, session_id="sess-1", agent="claude-code", now=NOW)
    sessions.set_summary(
        store,
        session["id"],
        overview="Moved the enum migration to a manual script",
        decisions=["no autogenerate for enums"],
    )

    results = search.search(store, "enum autogenerate", now=NOW)
    kinds = {r["kind"]: r for r in results}
    assert kinds["gotcha"]["id"] == gotcha.id
    assert kinds["session"]["id"] == "sess-1"
    assert "memory" not in kinds
    # Only memories when asked (and the index follows later changes).
    assert search.search(store, "enum", kinds=["memory"], now=NOW) == []
    gotchas.add(store, "Enum values are case sensitive in Postgres", now=NOW)
    assert len([r for r in search.search(store, "enum", kinds=["gotcha"], now=NOW)]) == 2


def test_update_pins_resolves_and_retags(store: Store) -> None:
    entry = memory.add(store, "Findings about the parser", type="finding", tags=["parser"])
    updated = memory.update(store, entry["id"], pinned=True, status="resolved", tags=["lexer"])
    assert (updated["pinned"], updated["status"], updated["tags"]) == (True, "resolved", ["lexer"])
    assert _ids(memory.list_memories(store, tag="lexer")) == [entry["id"]]
    assert memory.list_memories(store, tag="parser") == []
    assert search.search(store, "lexer", record_access=False)[0]["id"] == entry["id"]


def test_a_memory_citing_code_reports_drift_when_the_lines_change(
    store: Store, workspace: Path
) -> None:
    from memory_core import drift

    source = workspace / "settings.py"
    source.write_text("DEBUG = False\nTIMEOUT = 30\nRETRIES = 3\n")
    entry = memory.add(store, "TIMEOUT must stay above the proxy limit", file=str(source), line=2)
    assert (entry["file"], entry["line"], entry["end_line"]) == ("settings.py", 2, 2)
    [citation] = drift.memory_citations(store)
    assert citation.owner == entry["id"]
    assert drift.check_citation(workspace, citation) is None
    source.write_text("DEBUG = False\nTIMEOUT = 5\nRETRIES = 3\n")
    item = drift.check_citation(workspace, citation)
    assert item is not None and item.kind == "stale-citation"


def test_cli_memory_commands_print_json_with_ids(cli, workspace: Path) -> None:
    added = cli(
        "memory",
        "add",
        "Prefer small pull requests",
        "--type",
        "preference",
        "--tag",
        "process",
        "--explicit",
        "--json",
        cwd=workspace,
    )
    assert added.code == 0, added.stderr
    entry = added.json()
    assert entry["type"] == "preference" and entry["explicit"] is True
    found = cli("memory", "search", "pull requests", "--json", cwd=workspace).json()
    assert [r["id"] for r in found["results"]] == [entry["id"]]
    listed = cli("memory", "list", "--json", "--type", "preference", cwd=workspace).json()
    assert [m["id"] for m in listed["memories"]] == [entry["id"]]
    human = cli("memory", "list", cwd=workspace)
    assert entry["id"] in human.stdout and "Prefer small pull requests" in human.stdout
    bad = cli("memory", "add", "x", "--type", "rumour", cwd=workspace)
    assert bad.code == 2 and "Traceback" not in bad.stderr
    missing = cli("memory", "show", "M-00000000", cwd=workspace)
    assert missing.code == 1 and "no memory 'M-00000000'" in missing.stderr
    json.loads(cli("memory", "status", "--json", cwd=workspace).stdout)


def test_the_search_index_follows_added_changed_and_deleted_gotchas(store: Store) -> None:
    first = gotchas.add(store, "Docker layer cache breaks on COPY . .", now=NOW)
    assert [r["id"] for r in search.search(store, "docker", kinds=["gotcha"], now=NOW)] == [
        first.id
    ]
    second = gotchas.add(store, "Docker desktop needs 8 GB of memory", now=NOW + 10)
    assert {r["id"] for r in search.search(store, "docker", kinds=["gotcha"], now=NOW)} == {
        first.id,
        second.id,
    }
    with store.transaction() as db:  # changed in place by its owner: title and timestamp
        db.execute(
            "UPDATE gotchas SET title = 'Podman rootless needs subuid', updated_at = ? WHERE id = ?",
            (NOW + 20, second.id),
        )
    assert [r["id"] for r in search.search(store, "docker", kinds=["gotcha"], now=NOW)] == [
        first.id
    ]
    assert [r["id"] for r in search.search(store, "podman", kinds=["gotcha"], now=NOW)] == [
        second.id
    ]
    with store.transaction() as db:
        db.execute("DELETE FROM gotchas WHERE id = ?", (first.id,))
    assert search.search(store, "docker", kinds=["gotcha"], now=NOW) == []


def test_cli_relations_pins_and_kinds(cli, workspace: Path) -> None:
    bug = cli(
        "memory",
        "add",
        "Builds fail on Python 3.13 because of distutils",
        "--type",
        "finding",
        "--json",
        cwd=workspace,
    ).json()
    fix = cli(
        "memory",
        "add",
        "-",
        "--type",
        "action",
        "--resolves",
        bug["id"],
        "--json",
        cwd=workspace,
        stdin="Pin setuptools in the build requirements",
    ).json()
    assert fix["content"] == "Pin setuptools in the build requirements"
    related = cli("memory", "related", fix["id"], "--json", cwd=workspace).json()
    assert [(r["id"], r["via"]) for r in related["related"]] == [(bug["id"], ["resolves"])]
    assert f"resolves: {bug['id']}" in cli("memory", "related", fix["id"], cwd=workspace).stdout
    assert cli("memory", "pin", bug["id"], cwd=workspace).code == 0
    assert (
        cli("memory", "resolve", bug["id"], "--json", cwd=workspace).json()["status"] == "resolved"
    )
    shown = cli("memory", "show", bug["id"], "--json", cwd=workspace).json()
    assert shown["pinned"] is True and shown["relations"] == [
        {"kind": "resolves", "direction": "in", "id": fix["id"]}
    ]
    assert cli("memory", "relate", bug["id"], "led_to", "M-00000000", cwd=workspace).code == 1
    gotcha = cli("gotcha", "add", "distutils is gone in Python 3.12+", "--json", cwd=workspace)
    assert gotcha.code == 0, gotcha.stderr
    only_gotchas = cli(
        "memory", "search", "distutils", "--kind", "gotcha", "--json", cwd=workspace
    ).json()
    assert [r["kind"] for r in only_gotchas["results"]] == ["gotcha"]
    everything = cli("memory", "search", "distutils", "--json", cwd=workspace).json()
    assert {r["kind"] for r in everything["results"]} == {"gotcha", "memory"}


def test_several_processes_adding_and_searching_at_once_lose_nothing(workspace: Path) -> None:
    import subprocess
    import sys

    Store.init(workspace).close()
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from memory_core import memory, search\n"
        "from memory_core.store import Store\n"
        "store = Store.open(Path(sys.argv[1]))\n"
        "for i in range(25):\n"
        "    memory.add(store, f'writer {sys.argv[2]} note {i} about concurrency', tags=[f'w{sys.argv[2]}'])\n"
        "    search.search(store, 'concurrency note', limit=5)\n"
        "store.close()\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(workspace), str(n)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with Store.open(workspace) as store:
        assert len(memory.list_memories(store, limit=1000)) == 100
        for n in range(4):
            assert len(memory.list_memories(store, tag=f"w{n}", limit=1000)) == 25
        assert len(search.search(store, "concurrency", limit=200, record_access=False)) == 100
