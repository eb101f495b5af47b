"""Seed 003's lifecycle, as a user meets it: a session idle for 30 days is archived (its turns
packed away by `engram purge`), and asking for it brings the turns back, from the command line
and from the MCP server over stdio alike."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.agents_fixtures import realistic_session

SESSION = "0ld5e551-aaaa-bbbb-cccc-123456789abc"


def _shift(path: Path, days: float) -> None:
    """Move every timestamp of a Claude Code transcript `days` into the past."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if "timestamp" in data:
            moment = datetime.strptime(data["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                tzinfo=UTC
            ) - timedelta(days=days)
            data["timestamp"] = moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        lines.append(json.dumps(data))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _rows(root: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(root / ".engram" / "engram.db") as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture
def archived(cli, workspace: Path, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """A workspace whose one session (3 turns, 45 days old) `engram purge` has archived."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    transcript, expected = realistic_session(workspace, SESSION)
    path = transcript.save(tmp_path / "projects" / f"{SESSION}.jsonl")
    _shift(path, 44)
    assert cli("init", cwd=workspace).code == 0
    assert cli("ingest", "claude-code", str(path), cwd=workspace).code == 0
    purged = cli("purge", "--json", cwd=workspace)
    assert purged.code == 0, purged.stderr
    assert purged.json()["archived_sessions"] == [SESSION]
    # The turns really are packed away (what the rest of each test undoes).
    assert _rows(workspace, f"SELECT count(*) FROM session_turns WHERE session_id = '{SESSION}'")[
        0
    ] == (0,)
    assert _rows(workspace, "SELECT count(*) FROM archived_rows")[0] == (1,)
    assert expected.turns == 3
    return workspace


def test_resume_prints_the_turns_of_an_archived_session(cli, archived: Path) -> None:  # type: ignore[no-untyped-def]
    resumed = cli("session", "resume", SESSION, cwd=archived)
    assert resumed.code == 0, resumed.stderr
    assert "3 turns" in resumed.stdout
    assert resumed.stdout.count("--- turn ") == 3
    assert "user: The login test fails, please fix it" in resumed.stdout
    assert _rows(archived, "SELECT count(*) FROM archived_rows")[0] == (0,)
    # Resumed, the session is fresh again: the next purge leaves its turns alone.
    again = cli("purge", "--json", cwd=archived)
    assert again.json()["archived_sessions"] == []
    history = cli("session", "history", SESSION, "--json", cwd=archived).json()
    assert len(history["turns"]) == 3


def test_export_and_history_of_an_archived_session_have_every_turn(cli, archived: Path) -> None:  # type: ignore[no-untyped-def]
    exported = cli("session", "export", SESSION, "--format", "beans", cwd=archived)
    assert exported.code == 0, exported.stderr
    turns = json.loads(exported.stdout)["turns"]
    assert [t["userMessage"][:24] for t in turns] == [
        "The login test fails, pl",
        "No, don't touch auth.py:",
        "Deploy to staging with k",
    ]
    history = cli("session", "history", SESSION, "--json", cwd=archived)
    assert history.code == 0, history.stderr
    assert len(history.json()["turns"]) == 3
    # A read is an access: the restored session is not packed away again by the next purge.
    assert cli("purge", "--json", cwd=archived).json()["archived_sessions"] == []
    listed = cli("session", "list", "--json", cwd=archived).json()
    assert [s["age_state"] for s in listed["sessions"]] == ["fresh"]


async def test_the_mcp_transcript_of_an_archived_session_has_its_turns(archived: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_core", "--workspace", str(archived), "mcp"],
        cwd=str(archived),
    )
    async with Client(server) as client:
        for tool, args in (
            ("projecthub_session_transcript", {"sessionId": SESSION}),
            ("session_transcript", {"session_id": SESSION}),
        ):
            result = await client.call_tool(tool, args)
            assert not result.is_error, result.content
            data = result.structured_content or json.loads(result.content[0].text)
            assert len(data["turns"]) == 3, tool
            assert data["turns"][0]["user_message"].startswith("The login test fails")


def test_a_conversation_resumed_after_archiving_gets_its_records_back_once(
    cli, archived: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Claude Code resumes the old conversation: its SessionStart brings the archived records
    back (nobody had to ask for them first), and the transcript read again (here, copied to
    another file) adds no turn twice."""
    from tests.agents_fixtures import hook_payload

    original = tmp_path / "projects" / f"{SESSION}.jsonl"
    start = cli(
        "hook",
        "claude-code",
        "SessionStart",
        cwd=archived,
        stdin=hook_payload("SessionStart", SESSION, archived, original, source="resume"),
    )
    assert start.code == 0 and start.stderr == ""
    assert _rows(archived, "SELECT count(*) FROM archived_rows")[0] == (0,)
    copy = tmp_path / "elsewhere" / "copy.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(original.read_bytes())
    assert cli("ingest", "claude-code", str(copy), cwd=archived).code == 0
    history = cli("session", "history", SESSION, "--json", cwd=archived).json()
    assert len(history["turns"]) == 3
    assert _rows(archived, f"SELECT count(*) FROM agent_turns WHERE session_id = '{SESSION}'")[
        0
    ] == (3,)


def test_the_privacy_export_of_an_archived_session_holds_its_turns(cli, archived: Path) -> None:  # type: ignore[no-untyped-def]
    exported = cli("export", "--session", SESSION, "--format", "json", cwd=archived)
    assert exported.code == 0, exported.stderr
    tables = json.loads(exported.stdout)["tables"]
    assert len(tables["session_turns"]) == 3
    assert "archived_rows" not in tables or tables["archived_rows"] == []
