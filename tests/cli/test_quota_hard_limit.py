"""Seed 003's hard limit, through the real entry points: the write that would take a session
past its quota is refused before it is stored (`engram memory add`, and the hooks Claude Code
runs), so a session's use never exceeds its quota, whatever the size of the quota."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memory_core import quota
from memory_core.store import Store
from tests.agents_fixtures import hook_payload, realistic_session

SESSION = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"
NOTE = "the integration tests need the local S3 stub on port 4566 before they start; " * 30


def _used(root: Path, session_id: str) -> int:
    store = Store.open(root)
    try:
        return quota.session_usage(store, session_id)
    finally:
        store.close()


def test_memory_add_that_would_cross_the_quota_is_refused(cli, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("init", cwd=workspace).code == 0
    first = cli("memory", "add", NOTE, "--session", "S-q", "--json", cwd=workspace)
    assert first.code == 0, first.stderr
    used = _used(workspace, "S-q")
    # Room for less than another note of the same size: the second one would cross.
    limit = used + len(NOTE) // 2
    assert cli("config", "set", "sessions.quota_bytes", str(limit), cwd=workspace).code == 0
    refused = cli("memory", "add", NOTE, "--session", "S-q", cwd=workspace)
    assert refused.code == 1
    assert refused.stderr.startswith(
        "engram: error: session S-q has no room for this record (MEM_E001): it would take it to "
    )
    assert _used(workspace, "S-q") == used  # nothing of it was stored
    listed = cli("memory", "list", "--json", cwd=workspace).json()
    assert [m["id"] for m in listed["memories"]] == [first.json()["id"]]
    # A note that fits is still taken (the control): the limit is the quota, not "near it".
    small = cli("memory", "add", "port 4566", "--session", "S-q", cwd=workspace)
    assert small.code == 0, small.stderr
    assert used < _used(workspace, "S-q") <= limit


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def test_a_hook_recorded_session_never_passes_its_quota(cli, repo: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    transcript, _ = realistic_session(repo, SESSION)
    path = transcript.save(tmp_path / "projects" / f"{SESSION}.jsonl")

    def hook(event: str, **extra: object) -> str:
        result = cli(
            "hook",
            "claude-code",
            event,
            cwd=repo,
            stdin=hook_payload(event, SESSION, repo, path, **extra),
        )
        assert result.code == 0 and result.stderr == ""
        return result.stdout

    hook("SessionStart", source="startup")
    start = _used(repo, SESSION)
    # A small quota: room for a few more tool calls of about 4 KB each.
    limit = start + 12_000
    assert cli("config", "set", "sessions.quota_bytes", str(limit), cwd=repo).code == 0
    outcomes = []
    for i in range(8):
        out = hook(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": f"python scripts/load_fixtures.py --batch {i} " + "x" * 1500},
            tool_use_id=f"toolu_quota_{i}",
            tool_response={"stdout": "loaded " * 400, "stderr": "", "interrupted": False},
        )
        used = _used(repo, SESSION)
        assert used <= limit, f"hook {i} took the session to {used} of {limit} bytes"
        outcomes.append("refused" if "MEM_E001" in out and "no room" in out else "recorded")
    # Some fitted, then each one that would cross was refused, and said so to the agent.
    assert outcomes[0] == "recorded" and "refused" in outcomes
    first_refusal = outcomes.index("refused")
    assert set(outcomes[first_refusal:]) == {"refused"}
    with Store.open(repo) as store:
        recorded = {
            row[0]
            for row in store.query(
                "SELECT tool_use_id FROM agent_tool_uses WHERE tool_use_id LIKE 'toolu_quota_%'"
            )
        }
    assert recorded == {f"toolu_quota_{i}" for i in range(first_refusal)}
    # The turn's end and the session's end do not push it over either.
    hook("Stop", last_assistant_message="Loaded every batch. " * 60)
    hook("SessionEnd", reason="prompt_input_exit")
    assert _used(repo, SESSION) <= limit
    # A refused hook leaves no digest file behind whose record it rolled back.
    files = sorted(p.name for p in (repo / ".engram" / "exports" / "digests").glob("*.yaml"))
    with Store.open(repo) as store:
        recorded = sorted(
            Path(row[0]).name
            for row in store.query("SELECT path FROM digests WHERE session_id = ?", (SESSION,))
        )
    assert files == recorded
    log = (repo / ".engram" / "engram.log").read_text(encoding="utf-8")
    assert "no room for this record (MEM_E001)" in log
    status = cli("memory", "status", "--json", cwd=repo).json()
    (mine,) = [s for s in status["sessions"] if s["session_id"] == SESSION]
    assert mine["percent"] <= 100.0
    assert json.dumps(status)  # one JSON value
