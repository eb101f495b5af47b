"""Seed 001 (AIOS) through the command line and the hooks: a snapshot records the working
directory, and `onTaskComplete` keeps a task history that moves the workflow."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.agents_fixtures import hook_payload

SESSION = "a105a105-aaaa-bbbb-cccc-123456789abc"


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(workspace)], check=True)
    (workspace / "services" / "api").mkdir(parents=True)
    (workspace / "services" / "api" / "app.py").write_text("APP = 1\n")
    return workspace


def test_a_snapshot_records_the_working_directory(cli, repo: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("init", cwd=repo).code == 0
    api = repo / "services" / "api"
    there = cli("snapshot", "capture", "--note", "api work", "--json", cwd=api)
    assert there.code == 0, there.stderr
    assert there.json()["working_directory"] == "services/api"
    here = cli("snapshot", "capture", "--json", cwd=repo).json()
    assert here["working_directory"] == "."  # the control: the root itself
    listed = cli("snapshot", "list", cwd=repo).stdout
    assert "in services/api" in listed
    restored = cli("snapshot", "restore", there.json()["id"], cwd=repo)
    assert "working directory: services/api" in restored.stdout
    assert "is gone" not in restored.stdout
    shutil.rmtree(api)
    gone = cli("snapshot", "restore", there.json()["id"], "--json", cwd=repo).json()
    assert "the working directory services/api is gone" in gone["warnings"]


def test_a_snapshot_outside_a_shell_takes_the_agents_working_directory(
    cli, repo: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    api = repo / "services" / "api"
    start = cli(
        "hook",
        "claude-code",
        "SessionStart",
        cwd=api,
        stdin=hook_payload("SessionStart", SESSION, api, source="startup"),
    )
    assert start.code == 0, start.stderr
    # From elsewhere (as the editor or a script would): the active agent session's directory.
    snap = cli("--workspace", str(repo), "snapshot", "capture", "--json", cwd=tmp_path).json()
    assert snap["session_id"] == SESSION and snap["working_directory"] == "services/api"


def test_finished_tasks_are_kept_and_move_the_workflow(cli, repo: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("session", "start", "story-work", "--agent", "dev", cwd=repo).code == 0
    empty = cli("session", "state", "story-work", "--json", cwd=repo).json()
    assert empty["task_history"] == [] and empty["active_workflow"] is None
    done = cli(
        "session",
        "state",
        "story-work",
        "--task-done",
        "validate-next-story",
        "--result",
        "story MIS-3 is ready",
        "--json",
        cwd=repo,
    ).json()
    assert [(t["task"], t["result"]) for t in done["task_history"]] == [
        ("validate-next-story", "story MIS-3 is ready")
    ]
    assert (done["active_workflow"], done["workflow_state"]) == ("story_development", "validated")
    for i in range(22):
        cli("session", "state", "story-work", "--task-done", f"chore-{i}", cwd=repo)
    kept = cli("session", "state", "story-work", "--json", cwd=repo).json()["task_history"]
    assert len(kept) == 20 and kept[-1]["task"] == "chore-21" and kept[0]["task"] == "chore-2"
    human = cli("session", "state", "story-work", cwd=repo).stdout
    assert "done:     chore-17 (done), chore-18 (done)" in human
    # The next agent session is told what was finished last.
    nxt = cli(
        "hook",
        "claude-code",
        "SessionStart",
        cwd=repo,
        stdin=hook_payload("SessionStart", SESSION, repo, source="startup"),
    )
    context = json.loads(nxt.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "last task done: chore-21 (done)" in context
