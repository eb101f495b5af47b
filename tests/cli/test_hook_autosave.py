"""beans' auto-save (seed 004 FR3) for a session recorded by an agent's hooks alone, with no
editor running: saved at the end of a turn once `sessions.autosave_minutes` have passed since
the last save, and at the end of the session; never while the setting is 0."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from memory_core import sessions
from memory_core.agents import hooks
from tests.agents_fixtures import hook_payload

SESSION = "a11ce5e5-aaaa-bbbb-cccc-123456789abc"


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def _hook(repo: Path, event: str, at: float, **extra: object) -> None:
    """The hook handler `engram hook claude-code EVENT` runs, at a chosen time."""
    code, _ = hooks.handle(
        "claude-code",
        event,
        hook_payload(event, SESSION, repo, **extra),
        workspace=str(repo),
        now=at,
    )
    assert code == 0


def _turn(repo: Path, prompt: str, at: float) -> None:
    _hook(repo, "UserPromptSubmit", at, prompt=prompt)
    _hook(repo, "Stop", at + 5, stop_hook_active=False, last_assistant_message=f"Done: {prompt}")


def _saves(repo: Path) -> list[float]:
    with sqlite3.connect(repo / ".engram" / "engram.db") as conn:
        rows = conn.execute(
            "SELECT saved_at FROM saved_sessions WHERE session_id = ? ORDER BY saved_at", (SESSION,)
        ).fetchall()
    return [row[0] for row in rows]


def test_a_hook_only_session_is_auto_saved_on_the_interval(cli, repo: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("config", "set", "sessions.autosave_minutes", "5", cwd=repo).code == 0
    t0 = time.time() - 3600
    _hook(repo, "SessionStart", t0, source="startup")
    _turn(repo, "add a health check endpoint", t0 + 60)
    assert _saves(repo) == []  # a minute in: not due
    _turn(repo, "now document it in the README", t0 + 6 * 60)
    assert _saves(repo) == [t0 + 6 * 60 + 5]  # five minutes since the start had passed
    _turn(repo, "and add a test for it", t0 + 8 * 60)
    assert len(_saves(repo)) == 1  # two minutes since the last save: not due
    _turn(repo, "run the linter", t0 + 12 * 60)
    assert len(_saves(repo)) == 2


def test_the_end_of_a_hook_only_session_saves_it(cli, repo: Path) -> None:  # type: ignore[no-untyped-def]
    for event, extra in (
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "add a health check endpoint"}),
        ("Stop", {"stop_hook_active": False, "last_assistant_message": "Added /healthz."}),
        ("SessionEnd", {"reason": "prompt_input_exit"}),
    ):
        result = cli(
            "hook",
            "claude-code",
            event,
            cwd=repo,
            stdin=hook_payload(event, SESSION, repo, **extra),
        )
        assert result.code == 0 and result.stderr == ""
    assert len(_saves(repo)) == 1
    listed = cli("session", "list", "--json", cwd=repo).json()["sessions"]
    (mine,) = [s for s in listed if s["id"] == SESSION]
    assert mine["saved_at"] is not None
    # The saved copy holds the session as it ended.
    with sqlite3.connect(repo / ".engram" / "engram.db") as conn:
        (payload,) = conn.execute(
            "SELECT payload FROM saved_sessions WHERE session_id = ?", (SESSION,)
        ).fetchone()
    saved = sessions.parse_document(sessions.unpack_document(payload))
    assert [t["user_message"] for t in saved["turns"]] == ["add a health check endpoint"]
    assert saved["session"]["status"] == "closed"


def test_no_auto_save_when_it_is_off(cli, repo: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("config", "set", "sessions.autosave_minutes", "0", cwd=repo).code == 0
    start = hook_payload("SessionStart", SESSION, repo, source="startup")
    assert cli("hook", "claude-code", "SessionStart", cwd=repo, stdin=start).code == 0
    t0 = time.time() - 3600
    _turn(repo, "add a health check endpoint", t0 + 60)
    _turn(repo, "document it", t0 + 20 * 60)
    end = hook_payload("SessionEnd", SESSION, repo, reason="prompt_input_exit")
    assert cli("hook", "claude-code", "SessionEnd", cwd=repo, stdin=end).code == 0
    assert _saves(repo) == []
