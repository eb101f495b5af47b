"""AIOS session state (seed 001): type detection with the 1-hour TTL, the last agents and
commands, the active workflow and task, and the task carried by snapshots and digests."""

from __future__ import annotations

import json
from pathlib import Path

from memory_core import session_state, sessions, snapshots
from memory_core.agents import digest, hooks
from memory_core.store import Store
from tests.agents_fixtures import hook_payload

T0 = 1_772_440_000.0


def test_session_type_new_existing_workflow_with_the_one_hour_ttl(store: Store) -> None:
    assert session_state.detect_type(store, now=T0) == "new"  # nothing before
    sessions.start(store, session_id="a", now=T0)
    assert session_state.detect_type(store, now=T0 + 59 * 60) == "existing"
    assert session_state.detect_type(store, now=T0 + 61 * 60) == "new"  # the TTL expired
    session_state.update(store, "a", command="*develop-story", now=T0 + 60)
    assert session_state.detect_type(store, now=T0 + 30 * 60) == "workflow"
    assert session_state.detect_type(store, now=T0 + 62 * 60) == "new"
    session_state.update(store, "a", command="*story-done", now=T0 + 120)
    assert session_state.detect_type(store, now=T0 + 10 * 60) == "existing"  # workflow finished


def test_start_detects_the_type_and_a_workflow_session_inherits_the_task(store: Store) -> None:
    first = sessions.start(store, session_id="a", agent="claude-code", now=T0)
    assert first["session_type"] == "new"
    session_state.update(
        store, "a", agent="@dev", command="*develop-story", story="MIS-3", subtask="2", now=T0 + 5
    )
    second = sessions.start(store, session_id="b", agent="claude-code", now=T0 + 600)
    assert second["session_type"] == "workflow"
    inherited = session_state.state(store, "b", now=T0 + 600)
    assert inherited["active_workflow"] == "story_development"
    assert inherited["workflow_state"] == "in_development"
    assert (inherited["active_story"], inherited["active_subtask"]) == ("MIS-3", "2")
    later = sessions.start(store, session_id="c", agent="claude-code", now=T0 + 600 + 3601)
    assert later["session_type"] == "new"
    assert session_state.state(store, "c", now=T0 + 4300)["active_story"] is None


def test_agents_and_commands_are_recorded_bounded_as_aios_does(store: Store) -> None:
    sessions.start(store, session_id="a", agent="claude-code", now=T0)
    for index in range(25):
        session_state.update(store, "a", agent=f"@agent{index}", now=T0 + index)
    session_state.update(store, "a", agent="@agent24", now=T0 + 30)  # the same agent again
    for index in range(12):
        session_state.update(store, "a", command=f"*task-{index}", now=T0 + 40 + index)
    found = session_state.state(store, "a", now=T0 + 60)
    assert len(found["agent_sequence"]) == 20 and found["agent_sequence"][-1] == "@agent24"
    assert found["previous_agent"] == "@agent23" and found["current_agent"] == "@agent24"
    assert found["last_commands"] == [f"*task-{i}" for i in range(2, 12)]
    session_state.update(store, "a", command="*validate-next-story MIS-4", now=T0 + 70)
    found = session_state.state(store, "a", now=T0 + 70)
    assert (found["active_workflow"], found["workflow_state"]) == (
        "story_development",
        "validated",
    )
    assert not found["expired"]
    assert session_state.state(store, "a", now=T0 + 70 + 3601)["expired"]


def test_snapshots_carry_the_task_in_progress(store: Store) -> None:
    sessions.start(store, session_id="a", agent="claude-code")
    session_state.update(store, "a", story="MIS-3", subtask="write the runner")
    snap = snapshots.capture(store, note="before lunch")
    assert (snap["story_id"], snap["subtask"]) == ("MIS-3", "write the runner")
    assert "story MIS-3 / write the runner" in snapshots.describe(snap)
    assert snapshots.get(store, snap["id"])["story_id"] == "MIS-3"
    explicit = snapshots.capture(store, story_id="MIS-9", subtask="1")
    assert (explicit["story_id"], explicit["subtask"]) == ("MIS-9", "1")
    session_state.update(store, "a", story="", subtask="")  # cleared
    assert snapshots.capture(store)["story_id"] is None


def test_the_digest_names_the_active_story(store: Store) -> None:
    sessions.start(store, session_id="a", agent="claude-code", now=T0)
    sessions.observe_times(store, "a", first_ts=T0, last_ts=T0 + 1800)
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_sessions (session_id, agent, started_at, last_seen) VALUES (?, ?, ?, ?)",
            ("a", "claude-code", T0, T0 + 1800),
        )
    session_state.update(store, "a", story="MIS-3", now=T0 + 1800)
    written = digest.write_digest(store, "a", trigger="manual", now=T0 + 1800)
    text = written.path.read_text()
    assert 'agent_context: "@claude-code implementing Story MIS-3"' in text
    assert "**Active Story:** MIS-3" in text
    assert digest.read_digest(written.path).frontmatter["duration_minutes"] == 30


def test_hooks_record_slash_commands_and_the_next_session_is_told_where_work_stood(
    workspace: Path,
) -> None:
    import subprocess
    import time

    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    now = time.time()

    def hook(event: str, session: str, at: float, **extra: object) -> str:
        code, out = hooks.handle(
            "claude-code", event, hook_payload(event, session, workspace, **extra), now=at
        )
        assert code == 0
        return out

    hook("SessionStart", "first", now - 600, source="startup")
    hook("UserPromptSubmit", "first", now - 590, prompt="/develop-story MIS-3")
    store = Store.open(workspace)
    try:
        found = session_state.state(store, "first", now=now - 580)
        assert found["last_commands"] == ["/develop-story"]
        assert found["active_workflow"] == "story_development"
        session_state.update(store, "first", story="MIS-3", now=now - 570)
    finally:
        store.close()
    out = hook("SessionStart", "second", now, source="startup")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "Continuing (workflow session) from claude-code" in context
    assert "working on story MIS-3" in context and "/develop-story" in context
    # An hour and more later, a new session is not told to continue (the negative control).
    late = hook("SessionStart", "third", now + 2 * 3600, source="startup")
    assert "Continuing" not in late


def test_a_snapshot_in_a_repository_without_commits_says_so(store: Store) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(store.root)], check=True)
    snap = snapshots.capture(store)
    assert "@no commits" in snapshots.describe(snap)  # not cut to "no commi"
