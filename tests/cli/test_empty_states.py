"""Commands whose history is kept only while the server or the hooks run say so when empty."""

from __future__ import annotations

from pathlib import Path


def test_empty_histories_say_what_fills_them(cli, workspace: Path) -> None:
    assert cli("init", cwd=workspace).code == 0
    for command in (("evolution",), ("timeline",), ("drift",)):
        done = cli(*command, cwd=workspace)
        assert done.code == 0, done.stderr
        assert "language server" in done.stdout and "hooks install" in done.stdout, command


def test_drift_without_a_snapshot_does_not_claim_to_compare_with_one(cli, workspace: Path) -> None:
    assert cli("init", cwd=workspace).code == 0
    done = cli("drift", cwd=workspace)
    assert "since the last snapshot" not in done.stdout
    assert "no snapshot" in done.stdout
    assert cli("snapshot", "capture", cwd=workspace).code == 0
    after = cli("drift", cwd=workspace)
    assert "no snapshot" not in after.stdout


def test_empty_lists_of_agent_sessions_and_gotchas_say_how_they_fill(cli, workspace: Path) -> None:
    assert cli("init", cwd=workspace).code == 0
    sessions = cli("session", "list", cwd=workspace)
    assert "hooks install" in sessions.stdout and "ingest claude-code" in sessions.stdout
    gotchas = cli("gotcha", "list", cwd=workspace)
    assert "3 times" in gotchas.stdout and "gotcha add" in gotchas.stdout
