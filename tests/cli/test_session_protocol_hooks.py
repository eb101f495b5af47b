"""Seed 002 on the agent side, through the `engram` command: the transcript backup at SessionEnd (redacted,
compressed, within the quota), the start-of-session reminder of unsummarised sessions, and the
`/session-summarize` command `engram hooks install claude-code` adds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memory_core import session_vault
from memory_core.agents import commands
from tests.agents_fixtures import SECRETS, hook_payload, realistic_session

SESSION = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def _run_session(cli, repo: Path, transcript: Path) -> None:  # type: ignore[no-untyped-def]
    for event, extra in (
        ("SessionStart", {"source": "startup"}),
        ("SessionEnd", {"reason": "prompt_input_exit"}),
    ):
        result = cli(
            "hook",
            "claude-code",
            event,
            cwd=repo,
            stdin=hook_payload(event, SESSION, repo, transcript, **extra),
        )
        assert result.code == 0, result.stderr


def test_session_end_backs_up_the_transcript_redacted_and_compressed(
    cli, repo: Path, tmp_path: Path
) -> None:
    transcript, _ = realistic_session(repo, SESSION)
    path = transcript.save(tmp_path / "projects" / f"{SESSION}.jsonl")
    assert any(secret.encode() in path.read_bytes() for secret in SECRETS)  # the control
    _run_session(cli, repo, path)
    backup = repo / ".engram" / "exports" / ".projecthub" / "transcripts" / f"{SESSION}.jsonl.zst"
    assert backup.is_file()
    assert backup.stat().st_size < path.stat().st_size
    restored = session_vault.read_backup(backup)
    for secret in SECRETS:
        assert secret.encode() not in restored
    lines = restored.decode().splitlines()
    assert len(lines) == len(path.read_text().splitlines())
    for line in lines:
        json.loads(line)  # every line still JSON after redaction
    # Deleting the session deletes its backup too.
    assert cli("session", "delete", SESSION, "--yes", cwd=repo).code == 0
    assert not backup.exists()


def test_no_backup_past_the_quota(cli, repo: Path, tmp_path: Path) -> None:
    assert cli("config", "set", "sessions.quota_bytes", "100", cwd=repo).code == 0
    transcript, _ = realistic_session(repo, SESSION)
    path = transcript.save(tmp_path / "projects" / f"{SESSION}.jsonl")
    _run_session(cli, repo, path)
    assert not list((repo / ".engram").rglob("*.jsonl.zst"))
    # Said in the log: either the backup was skipped for the quota, or the session's writes were
    # already refused by the quota before the backup (the quota is enforced on every write).
    log_text = (repo / ".engram" / "engram.log").read_text()
    assert "would take the session past its quota" in log_text or "of its quota" in log_text


def test_session_start_reminds_of_unsummarised_sessions(cli, repo: Path, tmp_path: Path) -> None:
    transcript, _ = realistic_session(repo, SESSION)
    path = transcript.save(tmp_path / "projects" / f"{SESSION}.jsonl")
    _run_session(cli, repo, path)
    start = cli(
        "hook",
        "claude-code",
        "SessionStart",
        cwd=repo,
        stdin=hook_payload("SessionStart", "next-session", repo, source="startup"),
    )
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "1 earlier session has no summary yet" in context and SESSION in context
    assert "/session-summarize" in context

    # Once summarised, the reminder is gone (the negative control).
    from memory_core import sessions
    from memory_core.store import Store

    store = Store.open(repo)
    try:
        sessions.set_summary(store, SESSION, overview="Fixed the login test.")
    finally:
        store.close()
    again = cli(
        "hook",
        "claude-code",
        "SessionStart",
        cwd=repo,
        stdin=hook_payload("SessionStart", "third-session", repo, source="startup"),
    )
    assert "no summary yet" not in again.stdout


def test_hooks_install_adds_the_session_summarize_command(cli, repo: Path) -> None:
    result = cli("hooks", "install", "claude-code", cwd=repo)
    assert result.code == 0, result.stderr
    command = repo / ".claude" / "commands" / "session-summarize.md"
    assert command.read_text() == commands.shipped()["session-summarize.md"]
    assert "Added the /session-summarize command" in result.stdout
    text = command.read_text()
    front = text.split("---\n")[1]
    assert "description:" in front and "mcp__engram__projecthub_session_list" in front
    assert '{"hasSummary": false}' in text and '"openItems"' in text

    # A person's edits survive a reinstall; uninstall leaves an edited file alone.
    command.write_text(text + "\nAlso tag every summary with the sprint.\n")
    assert cli("hooks", "install", "claude-code", cwd=repo).code == 0
    assert command.read_text().endswith("with the sprint.\n")
    assert cli("hooks", "uninstall", "claude-code", cwd=repo).code == 0
    assert command.exists()
    command.unlink()
    assert cli("hooks", "install", "claude-code", cwd=repo).code == 0
    assert cli("hooks", "uninstall", "claude-code", cwd=repo).code == 0
    assert not command.exists()


def test_session_capture_backs_up_on_request(cli, repo: Path, tmp_path: Path) -> None:
    transcript, _ = realistic_session(repo, SESSION)
    path = transcript.save(tmp_path / "projects" / f"{SESSION}.jsonl")
    assert cli("config", "set", "sessions.backup_transcripts", "false", cwd=repo).code == 0
    _run_session(cli, repo, path)  # the automatic backup is off
    assert not list((repo / ".engram").rglob("*.jsonl.zst"))
    refused = cli("session", "capture", SESSION, cwd=repo)
    assert refused.code == 1 and "sessions.backup_transcripts is off" in refused.stderr
    assert cli("config", "set", "sessions.backup_transcripts", "true", cwd=repo).code == 0
    done = cli("session", "capture", SESSION, "--json", cwd=repo)
    assert done.code == 0, done.stderr
    backup = Path(done.json()["path"])
    assert backup.name == f"{SESSION}.jsonl.zst" and backup.is_file()
    missing = cli(
        "session", "capture", SESSION, "--transcript", str(tmp_path / "nope.jsonl"), cwd=repo
    )
    assert missing.code == 2 and "no transcript file" in missing.stderr
