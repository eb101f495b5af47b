"""Each MCP tool's fields, filters and order, through the SDK's client connected in-process
(issue 31). The stdio tests (test_agents_mcp.py) prove the server runs as agents start it;
these check, tool by tool, what an agent reads back, fast enough to run on every change."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memory_core import mcp_server, memory, sessions
from memory_core.store import Store

T0 = 1_772_440_000.0


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def _error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


def _start(store: Store, sid: str, at: float) -> None:
    sessions.start(store, session_id=sid, agent="claude-code", now=at)


@pytest.fixture
def sessions_of_every_kind(store: Store) -> Path:
    """Newest first: overview only, open items only, decisions only, nothing, nothing."""
    _start(store, "S-none-old", T0)
    _start(store, "S-none", T0 + 10)
    _start(store, "S-decisions", T0 + 20)
    sessions.set_summary(store, "S-decisions", decisions=["keep SQLite"])
    _start(store, "S-open", T0 + 30)
    sessions.set_summary(store, "S-open", open_items=["write the migration"])
    _start(store, "S-overview", T0 + 40)
    sessions.set_summary(store, "S-overview", overview="Login fixed")
    return store.root


_SERVERS: dict[Path, Any] = {}


async def _call(root: Path, tool: str, args: dict[str, Any]) -> Any:
    # One server per workspace, as an agent keeps one for its session (building it costs more
    # than the calls).
    server = _SERVERS.setdefault(root, mcp_server.build(root))
    async with Client(server) as client:
        return await client.call_tool(tool, args)


async def test_session_list_filters_on_any_written_summary_part(
    sessions_of_every_kind: Path,
) -> None:
    written = _data(await _call(sessions_of_every_kind, "session_list", {"has_summary": True}))
    assert [s["id"] for s in written["sessions"]] == ["S-overview", "S-open", "S-decisions"]
    bare = _data(await _call(sessions_of_every_kind, "session_list", {"has_summary": False}))
    assert [s["id"] for s in bare["sessions"]] == ["S-none", "S-none-old"]


async def test_session_list_limits_after_filtering(sessions_of_every_kind: Path) -> None:
    bare = _data(
        await _call(sessions_of_every_kind, "session_list", {"has_summary": False, "limit": 1})
    )
    assert [s["id"] for s in bare["sessions"]] == ["S-none"]
    every = _data(await _call(sessions_of_every_kind, "session_list", {"limit": 2}))
    assert [s["id"] for s in every["sessions"]] == ["S-overview", "S-open"]
    at_least_one = _data(await _call(sessions_of_every_kind, "session_list", {"limit": 0}))
    assert [s["id"] for s in at_least_one["sessions"]] == ["S-overview"]


async def test_projecthub_list_says_which_sessions_have_a_summary(
    sessions_of_every_kind: Path,
) -> None:
    root = sessions_of_every_kind
    bare = _data(await _call(root, "projecthub_session_list", {"hasSummary": False}))
    assert [s["session_id"] for s in bare["sessions"]] == ["S-none", "S-none-old"]
    assert all(s["summary"] is None and s["hasSummary"] is False for s in bare["sessions"])
    written = _data(await _call(root, "projecthub_session_list", {"hasSummary": True, "limit": 2}))
    assert [s["session_id"] for s in written["sessions"]] == ["S-overview", "S-open"]
    open_only = written["sessions"][1]
    assert open_only["summary"] == {
        "overview": "",
        "decisions": [],
        "outcomes": [],
        "openItems": ["write the migration"],
        "tags": [],
    }
    assert open_only["project_dir"] == str(root)


async def test_session_update_summary_files_each_list_where_it_belongs_and_merges(
    store: Store,
) -> None:
    _start(store, "S1", T0)
    first = _data(
        await _call(
            store.root,
            "session_update_summary",
            {
                "session_id": "S1",
                "overview": "Parser rewritten",
                "decisions": ["use a Pratt parser"],
                "outcomes": ["all tests pass"],
                "open_items": ["benchmark it"],
                "tags": ["parser"],
            },
        )
    )
    assert first["id"] == "S1"
    again = _data(
        await _call(
            store.root,
            "session_update_summary",
            {"session_id": "S1", "open_items": ["benchmark it", "document it"]},
        )
    )
    summary = again["summary"]
    assert summary["overview"] == "Parser rewritten"
    assert summary["decisions"] == ["use a Pratt parser"]
    assert summary["outcomes"] == ["all tests pass"]
    assert summary["open_items"] == ["benchmark it", "document it"]
    assert summary["tags"] == ["parser"]


async def test_session_update_summary_without_an_id_writes_the_latest_session(
    store: Store,
) -> None:
    _start(store, "S-old", T0)
    _start(store, "S-latest", T0 + 100)
    done = _data(await _call(store.root, "session_update_summary", {"overview": "mine"}))
    assert done["id"] == "S-latest"
    assert sessions.get(store, "S-old")["summary"]["overview"] in (None, "")


async def test_projecthub_update_takes_the_arguments_before_the_summary_object(
    store: Store,
) -> None:
    _start(store, "S1", T0)
    shown = _data(
        await _call(
            store.root,
            "projecthub_session_update_summary",
            {
                "sessionId": "S1",
                "overview": "given directly",
                "outcomes": ["shipped"],
                "summary": {
                    "overview": "inside summary",
                    "openItems": ["follow up"],
                    "outcomes": ["not this one"],
                },
            },
        )
    )
    assert shown["summary"]["overview"] == "given directly"
    assert shown["summary"]["outcomes"] == ["shipped"]
    assert shown["summary"]["openItems"] == ["follow up"]
    assert shown["hasSummary"] is True


async def test_projecthub_update_refuses_a_malformed_summary_object(store: Store) -> None:
    _start(store, "S1", T0)
    message = _error(
        await _call(
            store.root,
            "projecthub_session_update_summary",
            {"sessionId": "S1", "summary": {"openitems": ["x"]}},
        )
    )
    assert "unknown SessionSummary field openitems" in message
    message = _error(
        await _call(
            store.root,
            "projecthub_session_update_summary",
            {"sessionId": "S1", "summary": {"tags": "one"}},
        )
    )
    assert "SessionSummary tags must be a list of strings" in message
    assert sessions.get(store, "S1")["summary"]["tags"] == []


async def test_transcript_turns_come_in_the_order_they_happened(store: Store) -> None:
    _start(store, "S1", T0)
    for n in (1, 2, 3):
        sessions.record_turn(
            store,
            "S1",
            user_message=f"request {n}",
            assistant_response=f"answer {n}",
            started_at=T0 + n,
            ended_at=T0 + n + 0.5,
        )
    full = _data(await _call(store.root, "session_transcript", {"session_id": "S1"}))
    assert [t["user_message"] for t in full["turns"]] == ["request 1", "request 2", "request 3"]
    assert [t["assistant_response"] for t in full["turns"]][-1] == "answer 3"
    hub = _data(await _call(store.root, "projecthub_session_transcript", {"sessionId": "S1"}))
    assert hub["session"]["session_id"] == "S1" and hub["session"]["turn_count"] == 3
    assert [t["user_message"] for t in hub["turns"]] == ["request 1", "request 2", "request 3"]


async def test_memory_search_pages_with_offset(store: Store) -> None:
    for topic in ("lexer", "grammar", "recovery"):
        memory.add(store, f"The parser {topic} needs care", type="learning")
    whole = _data(await _call(store.root, "memory_search", {"query": "parser", "limit": 3}))
    ids = [r["id"] for r in whole["results"]]
    assert len(ids) == 3
    paged = [
        _data(
            await _call(
                store.root, "memory_search", {"query": "parser", "limit": 1, "offset": offset}
            )
        )["results"][0]["id"]
        for offset in range(3)
    ]
    assert paged == ids


async def test_memory_add_returns_the_entry_the_search_then_finds(store: Store) -> None:
    added = _data(
        await _call(
            store.root,
            "memory_add",
            {"content": "Staging is read-only on Fridays", "type": "finding", "impact": "high"},
        )
    )
    assert (added["type"], added["impact"]) == ("finding", "high")
    found = _data(await _call(store.root, "memory_search", {"query": "staging Fridays"}))
    assert [r["id"] for r in found["results"]] == [added["id"]]


async def test_an_unknown_parameter_is_refused_with_the_known_ones(store: Store) -> None:
    message = _error(await _call(store.root, "session_list", {"hasSummary": True}))
    assert "unknown parameter hasSummary for session_list" in message
    assert "has_summary" in message


async def test_an_agents_turns_come_in_order_with_their_tool_calls_and_tokens(
    store: Store,
) -> None:
    """Turns the hooks recorded (agent_turns), as Claude Code sessions have them."""
    _start(store, "S-hooks", T0)
    with store.transaction() as db:
        for n in (3, 1, 2):  # stored out of order
            db.execute(
                "INSERT INTO agent_turns (uuid, session_id, started_at, ended_at, user_message,"
                " assistant_response, tool_calls, input_tokens, output_tokens, recorded)"
                " VALUES (?, 'S-hooks', ?, ?, ?, ?, ?, ?, ?, 1)",
                (
                    f"turn-{n}",
                    T0 + n,
                    T0 + n + 0.5 if n < 3 else None,
                    f"ask {n}",
                    f"reply {n}",
                    json.dumps([{"tool": "Bash", "command": f"ls {n}"}]),
                    10 * n,
                    20 * n,
                ),
            )
    full = _data(await _call(store.root, "session_transcript", {"session_id": "S-hooks"}))
    turns = full["turns"]
    assert [t["id"] for t in turns] == ["turn-1", "turn-2", "turn-3"]
    assert [t["user_message"] for t in turns] == ["ask 1", "ask 2", "ask 3"]
    assert turns[0]["tool_calls"] == [{"tool": "Bash", "command": "ls 1"}]
    assert (turns[1]["input_tokens"], turns[1]["output_tokens"]) == (20, 40)
    assert turns[2]["ended_at"] is None and turns[0]["ended_at"] is not None
    first_two = _data(
        await _call(store.root, "session_transcript", {"session_id": "S-hooks", "limit": 2})
    )
    assert [t["id"] for t in first_two["turns"]] == ["turn-1", "turn-2"]


async def test_every_tool_says_it_takes_no_other_parameters(store: Store) -> None:
    server = _SERVERS.setdefault(store.root, mcp_server.build(store.root))
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    assert len(tools) >= 11
    assert all(tool.input_schema.get("additionalProperties") is False for tool in tools)
    message = _error(await _call(store.root, "session_list", {"hasSummary": True}))
    assert "; it takes has_summary, limit [" in message


async def test_projecthub_decisions_are_the_summarys_and_the_users(
    sessions_of_every_kind: Path,
) -> None:
    listed = _data(
        await _call(sessions_of_every_kind, "projecthub_session_list", {"hasSummary": True})
    )
    decided = next(s for s in listed["sessions"] if s["session_id"] == "S-decisions")
    assert decided["decisions"] == ["keep SQLite"]
    assert decided["summary"]["decisions"] == ["keep SQLite"]
    assert decided["started_at"] and decided["status"]


def _folders_of_the_log() -> set[object]:
    return {t for t in threading.enumerate() if t.name == "engram-log-folder"}


async def test_a_client_that_leaves_has_the_store_closed_and_the_next_one_opens_it(
    workspace: Path,
) -> None:
    # An agent's session ends: its server must not keep the database open (nor the thread that
    # folds its log) after the connection is gone; a new session gets the store back.
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    server = mcp_server.build(workspace)
    before = _folders_of_the_log()
    async with Client(server) as client:
        added = _data(await client.call_tool("memory_add", {"content": "Deploys freeze at 17:00"}))
        assert len(_folders_of_the_log() - before) == 1  # the store is open, folding its log
    assert _folders_of_the_log() - before == set()
    assert not (workspace / ".engram" / "engram.db-wal").exists()  # the last close folded it
    async with Client(server) as client:
        found = _data(await client.call_tool("memory_search", {"query": "deploys freeze"}))
    assert [r["id"] for r in found["results"]] == [added["id"]]
    assert _folders_of_the_log() - before == set()
