"""`engram evolution | drift | timeline | snapshot` as a user runs them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git


@pytest.fixture
def repo(workspace: Path) -> Path:
    git(workspace, "init", "-q", "-b", "main")
    for n in range(20):
        (workspace / f"m{n}.py").write_text(f"main {n}\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "main")
    git(workspace, "checkout", "-q", "-b", "feature")
    for n in range(20):
        (workspace / f"m{n}.py").write_text(f"feature {n}\n")
    git(workspace, "commit", "-q", "-am", "feature")
    git(workspace, "checkout", "-q", "main")
    return workspace


def test_snapshot_capture_list_restore_and_drift_after_a_checkout(cli: Any, repo: Path) -> None:
    captured = cli("snapshot", "capture", "--note", "before the switch", "--json", cwd=repo)
    assert captured.code == 0, captured.stderr
    snap = captured.json()
    assert (snap["branch"], snap["is_repo"], snap["note"], snap["dirty_files"]) == (
        "main",
        True,
        "before the switch",
        [],
    )
    listed = cli("snapshot", "list", "--json", cwd=repo).json()
    assert [s["id"] for s in listed["snapshots"]] == [snap["id"]]

    git(repo, "checkout", "-q", "feature")
    timeline = cli("timeline", "--json", cwd=repo).json()["entries"]
    git_events = [e for e in timeline if e["source"] == "evolution"]
    assert [e["event_type"] for e in git_events] == ["git.checkout"]
    assert git_events[0]["summary"] == "git checkout main -> feature"

    restored = cli("snapshot", "restore", snap["id"], cwd=repo)
    assert restored.code == 0
    assert "branch differs" in restored.stdout and "does not check out" in restored.stdout
    drift = cli("drift", "--json", cwd=repo).json()["drift"]
    assert (
        drift[0]["severity"] == "high"
        and "branch switched from main to feature" in drift[0]["summary"]
    )
    human = cli("drift", cwd=repo)
    assert human.stdout.startswith("high")


def test_evolution_shows_history_and_most_active_files(cli: Any, workspace: Path) -> None:
    from memory_core import evolution
    from memory_core.store import Store

    with Store.init(workspace) as store:
        (workspace / "a.py").write_text("one\n")
        evolution.record_change(store, "a.py", actor="external")
        (workspace / "a.py").write_text("one\ntwo\n")
        evolution.record_change(store, "a.py", actor="agent", session_id="s-1", before="one\n")
    history = cli("evolution", "a.py", "--json", cwd=workspace).json()
    assert history["path"] == "a.py"
    assert [(h["actor"], h["lines"]) for h in history["history"]] == [
        ("agent", [[2, 2]]),
        ("external", None),
    ]
    human = cli("evolution", "a.py", cwd=workspace).stdout
    assert "by agent (s-1)" in human and "lines 2" in human
    active = cli("evolution", "--json", cwd=workspace).json()["files"]
    assert active[0]["path"] == "a.py" and active[0]["changes"] == 2


def test_user_mistakes_are_one_line_errors(cli: Any, workspace: Path) -> None:
    assert cli("init", cwd=workspace).code == 0  # read-only commands need a store to read
    for args, code, needle in [
        (("timeline", "--since", "yesterday-ish"), 2, "cannot read"),
        (("timeline", "--limit", "0"), 2, "at least 1"),
        (("snapshot", "restore", "S-nothere"), 1, "no snapshot"),
        (("evolution", "/etc/hosts"), 2, "outside the workspace"),
        (("timeline", "--source", "nope"), 2, "invalid choice"),
    ]:
        result = cli(*args, cwd=workspace)
        assert result.code == code, (args, result.stderr)
        assert needle in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
