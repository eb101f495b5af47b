"""The projecthub session protocol (seed 002) through the real `engram mcp` over stdio.

Its three tools under their own names, its camelCase parameters, its SessionSummary round-tripped,
the vault note rewritten as soon as the summary changes, and unknown parameters refused.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory_core import session_vault, sessions
from memory_core.store import Store

T0 = 1_772_440_000.0
# The seed's SessionSummary, every field filled.
SEED_SUMMARY = {
    "overview": "Fixed the login redirect loop. The session cookie now survives the redirect.",
    "decisions": ["Keep the cookie SameSite=Lax"],
    "outcomes": ["Login works in Safari"],
    "openItems": ["Add a regression test for the redirect"],
    "tags": ["auth", "cookies"],
}


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


@pytest.fixture
def seeded(store: Store) -> Path:
    sessions.start(store, session_id="S-done", agent="claude-code", now=T0)
    sessions.record_turn(
        store,
        "S-done",
        user_message="fix the login redirect",
        assistant_response="fixed",
        started_at=T0 + 1,
        ended_at=T0 + 2,
    )
    sessions.set_summary(store, "S-done", overview="Done already", outcomes=["redirect fixed"])
    sessions.start(store, session_id="S-open", agent="claude-code", now=T0 + 100)
    sessions.record_turn(
        store,
        "S-open",
        user_message="why does Safari loop on login?",
        assistant_response="the cookie is dropped on redirect",
        started_at=T0 + 101,
        ended_at=T0 + 102,
    )
    sessions.record_search(store, "S-open", "SameSite cookie redirect", ts=T0 + 103)
    sessions.close(store, "S-open", now=T0 + 110)
    return store.root


def _server(root: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_core", "--workspace", str(root), "mcp"],
        cwd=str(root),
    )


async def test_the_seed_workflow_over_stdio(seeded: Path) -> None:
    async with Client(_server(seeded)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {
            "projecthub_session_list",
            "projecthub_session_transcript",
            "projecthub_session_update_summary",
        } <= set(tools)
        assert "hasSummary" in tools["projecthub_session_list"].input_schema["properties"]

        # 1. find the unsummarised sessions
        unsummarised = _data(
            await client.call_tool("projecthub_session_list", {"hasSummary": False})
        )
        assert [s["session_id"] for s in unsummarised["sessions"]] == ["S-open"]
        first = unsummarised["sessions"][0]
        assert first["summary"] is None and first["turn_count"] == 1
        assert first["status"] == "closed" and first["project_dir"] == str(seeded)
        assert first["search_footprint"] == ["SameSite cookie redirect"]
        done = _data(await client.call_tool("projecthub_session_list", {"hasSummary": True}))
        assert [s["session_id"] for s in done["sessions"]] == ["S-done"]

        # 2. read the transcript
        transcript = _data(
            await client.call_tool("projecthub_session_transcript", {"sessionId": "S-open"})
        )
        assert [t["user_message"] for t in transcript["turns"]] == [
            "why does Safari loop on login?"
        ]

        # 4. persist the summary (the seed's SessionSummary, camelCase)
        sent = time.time()
        updated = _data(
            await client.call_tool(
                "projecthub_session_update_summary", {"sessionId": "S-open", **SEED_SUMMARY}
            )
        )
        assert updated["summary"] == SEED_SUMMARY
        listed = _data(await client.call_tool("projecthub_session_list", {"hasSummary": True}))
        by_id = {s["session_id"]: s for s in listed["sessions"]}
        assert by_id["S-open"]["summary"] == SEED_SUMMARY  # the round trip

        # openItems reached the summary and the vault note within the same second.
        store = Store.open(seeded)
        try:
            assert "Add a regression test for the redirect" in sessions.summary_markdown(
                store, "S-open"
            )
            note = sessions.export_path(store, sessions.get(store, "S-open"))
            text = note.read_text()
            assert note.stat().st_mtime - sent < 1.0
        finally:
            store.close()
        assert "### Open Items\n\n- Add a regression test for the redirect" in text

        # The same summary nested in `summary` is accepted too.
        nested = _data(
            await client.call_tool(
                "projecthub_session_update_summary",
                {"sessionId": "S-done", "summary": {"openItems": ["ship it"]}},
            )
        )
        assert nested["summary"]["openItems"] == ["ship it"]


async def test_unknown_parameters_are_refused_not_ignored(seeded: Path) -> None:
    async with Client(_server(seeded)) as client:
        # Negative control first: the right name is accepted.
        ok = await client.call_tool(
            "projecthub_session_update_summary", {"sessionId": "S-open", "openItems": ["a"]}
        )
        assert not ok.is_error
        wrong = await client.call_tool(
            "projecthub_session_update_summary", {"sessionId": "S-open", "open_itemz": ["b"]}
        )
        assert wrong.is_error
        message = wrong.content[0].text
        assert "unknown parameter open_itemz" in message and "openItems" in message
        # engram's own tools are as strict.
        snake = await client.call_tool("session_list", {"hasSummary": False})
        assert snake.is_error and "unknown parameter hasSummary" in snake.content[0].text
        nested = await client.call_tool(
            "projecthub_session_update_summary",
            {"sessionId": "S-open", "summary": {"open_items": ["c"]}},
        )
        assert nested.is_error and "unknown SessionSummary field open_items" in (
            nested.content[0].text
        )
    store = Store.open(seeded)
    try:
        # Nothing of the refused calls was written; what was accepted is there.
        assert sessions.get(store, "S-open")["summary"]["open_items"] == ["a"]
    finally:
        store.close()


def test_vault_note_has_every_seed_section_and_follows_changes(store: Store) -> None:
    sessions.start(store, session_id="S-1", agent="claude-code", now=T0)
    sessions.record_search(store, "S-1", "redirect loop", ts=T0 + 1)
    sessions.append_rolling_summary(store, "S-1", "Looked at the cookie.", now=T0 + 2)
    note = sessions.export_path(store, sessions.get(store, "S-1"))
    assert note == store.dir / "exports" / "sessions" / "2026-03-02_S-1.md"
    text = note.read_text()
    assert "## Summary" not in text  # no summary written yet
    assert "## Rolling Summary\n\nLooked at the cookie." in text
    assert "## Search Footprint\n\n- `redirect loop`" in text
    assert 'status: "active"' in text

    sessions.set_summary(store, "S-1", overview="Cookie fixed.", decisions=["SameSite=Lax"])
    text = note.read_text()
    for heading in (
        "## Summary",
        "### Overview",
        "### Key Decisions",
        "### Outcomes",
        "### Open Items",
        "### Tags",
        "## Rolling Summary",
        "## Decisions",
        "## Search Footprint",
    ):
        assert f"\n{heading}\n" in text, heading
    # The rolling summary stays once an overview exists.
    assert "Looked at the cookie." in text and "Cookie fixed." in text
    assert "## Decisions\n\n- SameSite=Lax" in text

    sessions.close(store, "S-1", now=T0 + 50)
    assert 'status: "closed"' in note.read_text()
    # Compaction rewrites it too.
    long_text = " ".join(f"Sentence number {i} about the cookie." for i in range(200))
    result = sessions.append_rolling_summary(store, "S-1", long_text, threshold=1000, now=T0 + 60)
    assert result["compacted"]
    assert "Sentence number 199 about the cookie." in note.read_text()
    assert "Sentence number 3 about" not in note.read_text()


def test_vault_folder_is_a_setting_and_file_names_are_safe(store: Store, tmp_path: Path) -> None:
    from memory_core import config

    vault = tmp_path / "Obsidian" / "Work"
    config.set_value(store.root, "sessions.vault_dir", str(vault))
    sessions.start(store, session_id="../../evil/id", agent="claude-code", now=T0)
    sessions.set_summary(store, "../../evil/id", overview="x")
    (note,) = vault.rglob("*.md")
    assert note.parent == vault / "sessions"
    assert note.name.startswith("2026-03-02_") and "evil_id" in note.name
    assert not (store.dir / "exports" / "sessions").exists()
    # A relative folder is the workspace's.
    config.set_value(store.root, "sessions.vault_dir", "notes/vault")
    sessions.set_summary(store, "../../evil/id", overview="y")
    assert (store.root / "notes" / "vault" / "sessions" / note.name).is_file()
    # A relative folder that climbs out of the workspace is not followed.
    config.set_value(store.root, "sessions.vault_dir", "../outside")
    sessions.set_summary(store, "../../evil/id", overview="z")
    assert not (store.root.parent / "outside").exists()
    assert (store.dir / "exports" / "sessions" / note.name).is_file()


def test_the_reminder_names_recent_unsummarised_sessions_only(store: Store) -> None:
    now = T0 + 100 * 86400
    for sid, age_days in (("S-old", 40), ("S-recent", 1)):
        at = now - age_days * 86400
        sessions.start(store, session_id=sid, agent="claude-code", now=at)
        sessions.record_turn(store, sid, user_message="work", started_at=at, ended_at=at)
    text = session_vault.reminder(store, current="S-now", now=now)
    assert text.startswith("1 earlier session has no summary yet (S-recent)")
    assert "S-old" not in text
    sessions.set_summary(store, "S-recent", overview="Done.")
    assert session_vault.reminder(store, current="S-now", now=now) == ""
