"""Memories in the editor, on the server the real `engram lsp` builds, in this process:
`engram.memory.add|list|search` with each of their options, the session quota, and memories in
`workspace/symbol` (test_memory*.py drive the same over stdio with real clients).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lsp_server.features import memory as lsp_memory
from lsp_server.server import EngramServer, FolderState
from memory_core import config, memory
from tests.lsp.in_process import Client, client, handler, run, uri_of

SESSION = "S-editor01"
NOTE = "the staging database is reset every night at 02:00 UTC; " * 45  # ~2.6 KB


@pytest.fixture
def seen(server: EngramServer, state: FolderState) -> Client:
    return client(server)


async def symbols(server: EngramServer, query: str) -> list[types.SymbolInformation]:
    found = await handler(server, types.WORKSPACE_SYMBOL)(types.WorkspaceSymbolParams(query=query))  # type: ignore[arg-type]
    return list(found)


async def test_a_memory_is_added_with_what_the_editor_gives(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "app.py").write_text("import os\n\nTIMEOUT = 30\n")
    added = await run(
        server,
        "engram.memory.add",
        {
            "content": "The TIMEOUT must stay above the proxy's 25 s limit",
            "type": "decision",
            "tags": "proxy",
            "pinned": True,
            "explicit": True,
            "impact": "high",
            "file": uri_of(state.root / "app.py"),
            "line": 3,
        },
    )
    stored = memory.get(state.store, added["id"])
    assert stored["type"] == "decision" and stored["tags"] == ["proxy"]
    assert stored["pinned"] is True and stored["explicit"] is True
    assert stored["impact"] == "high"
    assert (stored["file"], stored["line"]) == ("app.py", 3)
    assert stored["agent"] == "editor"
    assert stored["provenance"]["recorded_by"] == "editor"
    plain = await run(server, "engram.memory.add", {"text": "also as `text`", "tags": ["a", "b"]})
    stored = memory.get(state.store, plain["id"])
    assert stored["type"] == "learning" and stored["tags"] == ["a", "b"]
    assert stored["pinned"] is False and stored["explicit"] is False
    assert stored["file"] is None and stored["session_id"] is None
    by_path = await run(server, "engram.memory.add", {"content": "by path", "file": "app.py"})
    assert memory.get(state.store, by_path["id"])["file"] == "app.py"
    assert seen.messages == []


WRONG_MEMORIES = [
    ({}, "engram.memory.add needs `content` (text)"),
    ({"content": "x", "impact": 3}, "impact must be one of critical, high, medium, low"),
    ({"content": "x", "impact": "severe"}, "impact"),
    ({"content": "x", "type": "rumour"}, "unknown type"),
]


async def test_a_memory_without_what_it_needs_is_refused_and_nothing_stored(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    for args, message in WRONG_MEMORIES:
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await run(server, "engram.memory.add", args)
        assert message in raised.value.message, args
        assert memory.list_memories(state.store) == []


async def test_a_session_near_its_quota_warns_and_one_past_it_refuses(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    state.settings = config.load(state.root, overrides={"sessions.quota_bytes": 3200})
    first = await run(
        server, "engram.memory.add", {"content": NOTE, "session_id": SESSION, "type": "project"}
    )
    warning = first["quota_warning"]
    assert "of its quota" in warning
    assert [(m.type, m.message) for m in seen.messages] == [(types.MessageType.Warning, warning)]
    with pytest.raises(JsonRpcInvalidParams, match=r"has no room for this record \(MEM_E001\)"):
        await run(server, "engram.memory.add", {"content": NOTE, "session_id": SESSION})
    assert [m["id"] for m in memory.list_memories(state.store)] == [first["id"]]
    # Without a session there is no session quota.
    free = await run(server, "engram.memory.add", {"content": NOTE})
    assert "quota_warning" not in free and len(seen.messages) == 1


async def test_the_newest_memories_are_listed_up_to_the_limit(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    ids = [memory.add(state.store, f"note {n}")["id"] for n in range(3)]
    listed = await run(server, "engram.memory.list")
    assert [m["id"] for m in listed["memories"]] == ids[::-1]
    two = await run(server, "engram.memory.list", {"limit": 1})
    assert [m["id"] for m in two["memories"]] == [ids[-1]]
    with pytest.raises(JsonRpcInvalidParams, match="limit must be a positive number"):
        await run(server, "engram.memory.list", {"limit": 0})


async def test_search_with_each_option(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    critical = memory.add(
        state.store, "The upload path bypasses the virus scanner", type="finding", impact="critical"
    )
    notes = [
        memory.add(state.store, f"upload limit note {n}", type="action", tags=["limits"])["id"]
        for n in range(3)
    ]
    everything = await run(server, "engram.memory.search", {"query": "upload", "limit": 10})
    assert everything["query"] == "upload" and len(everything["results"]) == 4
    assert "upload" in everything["markdown"]
    high = await run(server, "engram.memory.search", {"query": "upload", "minPriority": 0.85})
    assert [r["id"] for r in high["results"]] == [critical["id"]]
    same = await run(server, "engram.memory.search", {"query": "upload", "min_priority": 0.85})
    assert [r["id"] for r in same["results"]] == [critical["id"]]
    first = await run(server, "engram.memory.search", {"query": "upload", "limit": 2})
    second = await run(server, "engram.memory.search", {"query": "upload", "limit": 2, "offset": 2})
    assert len(first["results"]) == 2
    paged = [r["id"] for r in first["results"] + second["results"]]
    assert sorted(paged) == sorted([critical["id"], *notes])
    by_type = await run(server, "engram.memory.search", {"query": "upload", "type": "finding"})
    assert [r["id"] for r in by_type["results"]] == [critical["id"]]
    by_tag = await run(server, "engram.memory.search", {"query": "upload", "tags": "limits"})
    assert sorted(r["id"] for r in by_tag["results"]) == sorted(notes)
    by_tags = await run(server, "engram.memory.search", {"query": "upload", "tags": ["limits"]})
    assert sorted(r["id"] for r in by_tags["results"]) == sorted(notes)
    default = await run(server, "engram.memory.search", {"query": "note"})
    assert len(default["results"]) == 3  # at most ten by default
    memories_only = await run(
        server, "engram.memory.search", {"query": "upload", "kinds": ["memory"]}
    )
    assert len(memories_only["results"]) == 4


async def test_a_decayed_memory_is_found_only_when_asked_for(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    old = memory.add(state.store, "the legacy importer needs a restart", base_priority=0.1)
    assert (await run(server, "engram.memory.search", {"query": "importer"}))["results"] == []
    for spelling in ("include_decayed", "includeDecayed"):
        found = await run(server, "engram.memory.search", {"query": "importer", spelling: True})
        assert [r["id"] for r in found["results"]] == [old["id"]]


WRONG_SEARCH_OPTIONS = [
    ({}, "engram.memory.search needs `query` (text)"),
    ({"query": "x", "limit": 0}, "limit must be a positive number"),
    ({"query": "x", "min_priority": 2}, "min_priority must be a number between 0 and 1"),
    ({"query": "x", "min_priority": -0.1}, "min_priority must be a number between 0 and 1"),
    ({"query": "x", "minPriority": True}, "min_priority must be a number between 0 and 1"),
    ({"query": "x", "minPriority": "high"}, "min_priority must be a number between 0 and 1"),
    ({"query": "x", "include_decayed": "yes"}, "include_decayed must be true or false"),
    ({"query": "x", "offset": -1}, "offset must be a whole number, 0 or more"),
    ({"query": "x", "offset": True}, "offset must be a whole number, 0 or more"),
    ({"query": "x", "offset": 1.5}, "offset must be a whole number, 0 or more"),
]


async def test_search_options_out_of_range_are_clear_errors(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    for args, message in WRONG_SEARCH_OPTIONS:
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await run(server, "engram.memory.search", args)
        assert message in raised.value.message, args


def test_the_query_options_at_their_edges() -> None:
    assert lsp_memory.query_options({}) == {
        "min_priority": None,
        "include_decayed": False,
        "offset": 0,
    }
    assert lsp_memory.query_options({"min_priority": 0, "offset": 0}) == {
        "min_priority": 0.0,
        "include_decayed": False,
        "offset": 0,
    }
    assert (
        lsp_memory.query_options({"minPriority": 1, "includeDecayed": False, "offset": 3})[
            "min_priority"
        ]
        == 1.0
    )
    # The seed's spelling and engram's: the first given wins.
    assert (
        lsp_memory.query_options({"min_priority": 0.5, "minPriority": 0.9})["min_priority"] == 0.5
    )


# workspace/symbol


async def test_a_memory_is_a_symbol_found_by_a_word_or_a_prefix(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    added = memory.add(
        state.store, "Deployments go through the blue-green switch on Fridays", type="decision"
    )
    memory.add(state.store, "Prefer httpx over requests in new code", type="preference")
    [symbol] = await symbols(server, "switch")
    assert symbol.name == added["label"]
    assert symbol.kind == types.SymbolKind.String
    assert symbol.container_name == f"engram decision {added['id']}"
    export = state.root / ".engram" / "exports" / "memories.md"
    assert symbol.location.uri == export.as_uri()
    lines = export.read_text().splitlines()
    assert lines[symbol.location.range.start.line].startswith(f"## {added['id']}")
    assert symbol.location.range.start == symbol.location.range.end
    assert [s.name for s in await symbols(server, "deploym")] == [symbol.name]
    assert await symbols(server, "kubernetes") == []
    # An empty query lists the newest memories.
    assert len(await symbols(server, "")) == 2
    assert len(await symbols(server, "   ")) == 2


async def test_a_memory_citing_code_is_at_the_cited_lines(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    source = state.root / "app.py"
    source.write_text("import os\n\nTIMEOUT = 30\nRETRIES = 3\n")
    memory.add(state.store, "TIMEOUT above the proxy limit", file="app.py", line=3, end_line=4)
    memory.add(state.store, "the proxy import", file="app.py", line=1)
    found = {s.name: s for s in await symbols(server, "proxy")}
    timeout = found["TIMEOUT above the proxy limit"]
    assert timeout.location.uri == source.as_uri()
    assert (timeout.location.range.start.line, timeout.location.range.end.line) == (2, 3)
    first = found["the proxy import"]
    assert (first.location.range.start.line, first.location.range.end.line) == (0, 0)


async def test_the_export_is_rewritten_only_when_the_memories_changed(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    memory.add(state.store, "first note about caching")
    await symbols(server, "caching")
    export = state.root / ".engram" / "exports" / "memories.md"
    export.write_text("stale by hand\n")
    await symbols(server, "caching")
    assert export.read_text() == "stale by hand\n"  # nothing changed: not written again
    added = memory.add(state.store, "second note about caching")
    [_, second] = sorted(await symbols(server, "caching"), key=lambda s: s.name)
    assert f"## {added['id']}" in export.read_text()
    assert second.location.range.start.line > 0
    export.unlink()  # deleted by hand: written again
    await symbols(server, "caching")
    assert export.exists()


async def test_symbols_of_every_folder_and_a_broken_one_does_not_hide_the_others(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    other_root = tmp_path / "other"
    (other_root / ".git").mkdir(parents=True)
    other = server.add_folder(other_root)
    assert other is not None
    memory.add(state.store, "alpha note")
    memory.add(other.store, "alpha other note")
    assert len(await symbols(server, "alpha")) == 2
    real = lsp_memory._symbols

    def broken(folder: FolderState, query: str) -> list[types.SymbolInformation]:
        if folder is state:
            raise RuntimeError("database disk image is malformed")
        return real(folder, query)

    monkeypatch.setattr(lsp_memory, "_symbols", broken)
    assert [s.name for s in await symbols(server, "alpha")] == ["alpha other note"]
    assert "workspace/symbol failed in" in caplog.text


async def test_at_most_a_hundred_symbols(
    server: EngramServer, state: FolderState, seen: Client, tmp_path: Path
) -> None:
    other_root = tmp_path / "other"
    (other_root / ".git").mkdir(parents=True)
    other = server.add_folder(other_root)
    assert other is not None
    for store in (state.store, other.store):
        for n in range(60):
            memory.add(store, f"bulk note {n}")
    assert len(await symbols(server, "bulk")) == lsp_memory.SYMBOL_LIMIT == 100


async def test_a_symbol_lookup_is_not_an_access_of_the_memory(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    """Typing in a symbol picker must not make a memory look used (its priority decays by
    how recently people and agents used it)."""
    added = memory.add(state.store, "the cache key includes the tenant")

    def accesses() -> int:
        row = state.store.query_one(
            "SELECT access_count FROM memories WHERE id = ?", (added["id"],)
        )
        assert row is not None
        return int(row[0])

    before = accesses()
    assert len(await symbols(server, "tenant")) == 1
    assert accesses() == before
    await run(server, "engram.memory.search", {"query": "tenant"})  # a search is a use
    assert accesses() == before + 1


async def test_a_memory_can_cite_the_document_by_its_uri(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "app.py").write_text("x = 1\n")
    added = await run(
        server,
        "engram.memory.add",
        {"content": "x is one", "uri": uri_of(state.root / "app.py"), "line": 1},
    )
    assert memory.get(state.store, added["id"])["file"] == "app.py"


async def test_search_of_other_kinds_leaves_memories_out(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    memory.add(state.store, "upload retries")
    found = await run(server, "engram.memory.search", {"query": "upload", "kinds": ["gotcha"]})
    assert found["results"] == []


async def test_a_session_already_full_is_said_full_before_anything_is_tried(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    await run(server, "engram.memory.add", {"content": NOTE, "session_id": SESSION})
    state.settings = config.load(state.root, overrides={"sessions.quota_bytes": 1000})
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await run(server, "engram.memory.add", {"content": "tiny", "session_id": SESSION})
    assert f"session {SESSION} is full (MEM_E001)" in raised.value.message
