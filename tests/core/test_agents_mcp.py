"""`engram mcp` through the MCP SDK's own client, over stdio, as an agent would use it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory_core import sessions
from memory_core.store import Store

EXPECTED_TOOLS = {
    "session_list",
    "session_transcript",
    "session_update_summary",
    "memory_search",
    "memory_add",
    "gotchas_for_task",
    "checkpoint_create",
    "checkpoint_list",
}


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


@pytest.fixture
def seeded(store: Store) -> Path:
    sessions.start(store, session_id="S-with-summary", agent="claude-code", now=1_772_440_000.0)
    sessions.record_turn(
        store,
        "S-with-summary",
        user_message="fix the login test",
        assistant_response="done",
        input_tokens=10,
        output_tokens=20,
        started_at=1_772_440_001.0,
        ended_at=1_772_440_002.0,
    )
    sessions.set_summary(
        store, "S-with-summary", overview="Login fixed", decisions=["cookie is secure"]
    )
    sessions.start(store, session_id="S-bare", agent="claude-code", now=1_772_440_100.0)
    (store.root / "app.py").write_text("print('hi')\n")
    from memory_core import gotchas

    gotchas.add(
        store,
        "pytest needs --no-cov in CI",
        workaround="pass --no-cov",
        related_files=["tests/*.py"],
    )
    return store.root


async def test_mcp_tools_over_stdio(seeded: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_core", "--workspace", str(seeded), "mcp"],
        cwd=str(seeded),
    )
    async with Client(server) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools >= EXPECTED_TOOLS

        listed = _data(await client.call_tool("session_list", {"has_summary": True}))
        assert [s["id"] for s in listed["sessions"]] == ["S-with-summary"]
        bare = _data(await client.call_tool("session_list", {"has_summary": False}))
        assert [s["id"] for s in bare["sessions"]] == ["S-bare"]

        transcript = _data(
            await client.call_tool("session_transcript", {"session_id": "S-with-summary"})
        )
        assert [t["user_message"] for t in transcript["turns"]] == ["fix the login test"]

        updated = _data(
            await client.call_tool(
                "session_update_summary",
                {
                    "session_id": "S-with-summary",
                    "decisions": ["cookie is secure", "keep --no-cov"],
                    "open_items": ["add a regression test"],
                },
            )
        )
        assert updated["summary"]["decisions"] == ["cookie is secure", "keep --no-cov"]
        assert updated["summary"]["open_items"] == ["add a regression test"]

        added = _data(
            await client.call_tool(
                "memory_add",
                {
                    "content": "The staging DB is read-only on Fridays",
                    "type": "finding",
                    "tags": ["staging"],
                },
            )
        )
        assert added["id"]
        found = _data(await client.call_tool("memory_search", {"query": "staging read-only"}))
        assert [r["id"] for r in found["results"]][:1] == [added["id"]]

        gotchas = _data(
            await client.call_tool(
                "gotchas_for_task", {"task": "run pytest in CI", "files": ["tests/test_app.py"]}
            )
        )
        assert "pytest needs --no-cov in CI" in gotchas["context"]

        created = _data(await client.call_tool("checkpoint_create", {"name": "before-refactor"}))
        listed_cp = _data(await client.call_tool("checkpoint_list", {}))
        assert [c["id"] for c in listed_cp["checkpoints"]] == [created["id"]]

        # Without an id: the most recently active session (an agent rarely knows its own).
        latest = _data(
            await client.call_tool(
                "session_update_summary", {"outcomes": ["bare session summarised"]}
            )
        )
        assert latest["id"] == "S-bare" and latest["summary"]["outcomes"] == [
            "bare session summarised"
        ]

        missing = await client.call_tool("session_transcript", {"session_id": "S-nope"})
        assert missing.is_error
        assert "no session 'S-nope'" in missing.content[0].text

    # What the agent wrote is what `engram session summary` shows.
    store = Store.open(seeded)
    try:
        summary = sessions.summary_markdown(store, "S-with-summary")
        assert "keep --no-cov" in summary and "add a regression test" in summary
    finally:
        store.close()
