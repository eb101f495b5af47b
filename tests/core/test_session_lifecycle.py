"""A session's life as the hooks and the user drive it: started (its type, its name, its
timeline event), recorded, paused and closed, found by id, name or prefix, recovered after a
crash, kept under its quota and saved on a timer."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import events, log, session_state, sessions
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z
TOKEN = "ghp_" + "Q1w2E3r4T5" * 3 + "yuiop6"


def _bytes_used(store: Store, sid: str) -> int:
    row = store.query_one("SELECT bytes_used FROM sessions WHERE id = ?", (sid,))
    assert row is not None
    return int(row[0])


def test_a_started_session_is_on_the_timeline_with_its_agent_and_type(store: Store) -> None:
    sessions.start(store, session_id="S-a", agent="claude-code", session_type="new", now=T0)
    [started] = events.recent(store, kind="session.started")
    assert (started.actor, started.session_id, started.data, started.ts) == (
        "claude-code",
        "S-a",
        {"type": "new"},
        T0,
    )


def test_the_session_type_follows_the_silence_before_it(store: Store) -> None:
    assert sessions.start(store, session_id="S-1", now=T0)["session_type"] == "new"
    assert sessions.start(store, session_id="S-2", now=T0 + 600)["session_type"] == "existing"
    assert sessions.start(store, session_id="S-3", now=T0 + 600 + 2 * 3600)["session_type"] == "new"


def test_a_workflow_session_carries_on_the_workflow_and_task_of_the_last_one(store: Store) -> None:
    sessions.start(store, session_id="S-dev", now=T0)
    session_state.update(
        store,
        "S-dev",
        workflow="story",
        workflow_state="in_progress",
        story="1.2",
        subtask="tests",
        now=T0 + 1,
    )
    sessions.start(store, session_id="S-next", session_type="workflow", now=T0 + 60)
    carried = store.query_one(
        "SELECT active_workflow, workflow_state, active_story, active_subtask FROM sessions WHERE id = 'S-next'"
    )
    assert carried is not None and tuple(carried) == ("story", "in_progress", "1.2", "tests")


def test_a_name_is_redacted_and_cannot_be_taken_twice(store: Store) -> None:
    sessions.start(store, session_id="S-a", name=f"deploy {TOKEN}", now=T0)
    assert sessions.get(store, "S-a")["name"] == "deploy [REDACTED:github-token]"
    sessions.start(store, session_id="S-b", name="login", now=T0)
    with pytest.raises(sessions.NameTakenError) as taken:
        sessions.start(store, session_id="S-c", name="login", now=T0)
    assert taken.value.holder == "S-b"
    with pytest.raises(NotFoundError):
        sessions.get(store, "S-c")


def test_starting_a_closed_session_again_reopens_it(store: Store) -> None:
    sessions.start(store, session_id="S-a", now=T0)
    sessions.close(store, "S-a", reason="abort", now=T0 + 10)
    reopened = sessions.start(store, session_id="S-a", now=T0 + 100)
    assert (reopened["status"], reopened["ended_at"], reopened["end_reason"]) == (
        "active",
        None,
        None,
    )
    assert (reopened["last_action"], reopened["last_activity_at"]) == (
        "resume",
        "2023-11-14T22:15:00Z",
    )
    # Starting an active session again changes nothing.
    again = sessions.start(store, session_id="S-a", now=T0 + 200)
    assert again["last_activity_at"] == "2023-11-14T22:15:00Z"


def test_activity_for_a_session_no_hook_started_creates_it(store: Store) -> None:
    seq = sessions.record_turn(
        store,
        "S-late",
        user_message="hi",
        tool_calls=[{"name": "Grep", "success": False}, {"summary": "x"}],
        started_at=T0 + 5,
    )
    assert seq == 1
    session = sessions.get(store, "S-late")
    assert (session["agent"], session["started_at"], session["last_activity_at"]) == (
        "editor",
        "2023-11-14T22:13:25Z",
        "2023-11-14T22:13:25Z",
    )
    [turn] = sessions.history(store, "S-late")
    assert turn["tool_calls"] == [
        {"tool": "Grep", "ok": False},
        {"tool": "unknown", "ok": True, "summary": "x"},
    ]
    sessions.record_tool_call(store, "S-tool", tool="Read", ok=True, ts=T0 + 7)
    assert sessions.get(store, "S-tool")["started_at"] == "2023-11-14T22:13:27Z"


def test_a_turns_time_is_its_end_else_its_start(store: Store) -> None:
    sessions.start(store, session_id="S-t", now=T0)
    sessions.record_turn(store, "S-t", user_message="only a start", started_at=T0 + 30)
    [turn] = sessions.history(store, "S-t")
    assert (turn["started_at"], turn["ended_at"]) == (
        "2023-11-14T22:13:50Z",
        "2023-11-14T22:13:50Z",
    )
    assert sessions.get(store, "S-t")["last_activity_at"] == "2023-11-14T22:13:50Z"


def test_what_a_session_records_counts_against_its_quota(store: Store) -> None:
    sessions.start(store, session_id="S-q", now=T0)
    sessions.record_turn(
        store, "S-q", user_message="12345", assistant_response="123", started_at=T0
    )
    assert _bytes_used(store, "S-q") == 8
    sessions.record_tool_call(store, "S-q", tool="Bash", ok=True, summary="ls -la", ts=T0 + 1)
    assert _bytes_used(store, "S-q") == 14
    sessions.record_command(store, "S-q", "make test", exit_code=0, ts=T0 + 2)
    assert _bytes_used(store, "S-q") == 23


def test_a_file_outside_the_project_is_listed_apart_and_redacted(store: Store) -> None:
    sessions.start(store, session_id="S-o", now=T0)
    sessions.record_file_modified(
        store, "S-o", "/home/u/.claude/plans/a.md", ts=T0 + 1, outside=True
    )
    sessions.record_file_modified(store, "S-o", f"/tmp/{TOKEN}.txt", ts=T0 + 2, outside=True)
    sessions.record_file_modified(store, "S-o", "src/in.py", ts=T0 + 3)
    assert sessions.files_modified(store, "S-o") == ["src/in.py"]
    assert sessions.files_outside(store, "S-o") == [
        "/tmp/[REDACTED:github-token].txt",
        "/home/u/.claude/plans/a.md",
    ]
    numbers = sessions.metrics(store, "S-o")
    assert (numbers["files_modified"], numbers["files_outside_project"]) == (1, 2)


def test_a_commands_failure_flag_wins_over_its_exit_code(store: Store) -> None:
    sessions.start(store, session_id="S-c", now=T0)
    sessions.record_command(store, "S-c", "blocked by a hook", failed=True, ts=T0 + 1)
    sessions.record_command(
        store, "S-c", "grep finds nothing", exit_code=1, failed=False, ts=T0 + 2
    )
    sessions.record_command(store, "S-c", "no code reported", ts=T0 + 3)
    sessions.record_command(store, "S-c", "exit 3", exit_code=3, ts=T0 + 4)
    failed = sessions.failed_commands(store, "S-c")
    assert failed == [
        {"command": "blocked by a hook", "exit_code": None, "at": "2023-11-14T22:13:21Z"},
        {"command": "exit 3", "exit_code": 3, "at": "2023-11-14T22:13:24Z"},
    ]
    assert sessions.metrics(store, "S-c")["commands_failed"] == 2


def test_a_command_that_succeeded_later_is_no_longer_open(store: Store) -> None:
    sessions.start(store, session_id="S-f", now=T0)
    sessions.record_command(store, "S-f", "pytest -q", exit_code=1, ts=T0 + 1)
    sessions.record_command(store, "S-f", "ruff check .", exit_code=1, ts=T0 + 2)
    sessions.record_command(store, "S-f", "pytest -q", exit_code=0, ts=T0 + 3)
    assert [c["command"] for c in sessions.open_failures(store, "S-f")] == ["ruff check ."]


def test_transcript_times_widen_the_sessions_span(store: Store) -> None:
    sessions.start(store, session_id="S-w", now=T0 + 100)
    sessions.observe_times(store, "S-w", first_ts=T0 + 50, last_ts=T0 + 80)
    session = sessions.get(store, "S-w")
    assert (session["started_at"], session["last_activity_at"]) == (
        "2023-11-14T22:14:10Z",
        "2023-11-14T22:15:00Z",
    )
    sessions.observe_times(store, "S-w", first_ts=T0 + 120, last_ts=T0 + 400)
    session = sessions.get(store, "S-w")
    assert (session["started_at"], session["last_activity_at"]) == (
        "2023-11-14T22:14:10Z",
        "2023-11-14T22:20:00Z",
    )


def test_closing_records_why_and_reports_the_metrics(store: Store) -> None:
    sessions.start(store, session_id="S-x", now=T0)
    sessions.record_turn(
        store, "S-x", user_message="q", input_tokens=4, output_tokens=2, started_at=T0 + 5
    )
    closed = sessions.close(store, "S-x", reason="superseded", now=T0 + 30)
    assert (closed["turns"], closed["total_tokens"], closed["duration_seconds"]) == (1, 6, 30.0)
    session = sessions.get(store, "S-x")
    # An end reason that is not a quiet action still counts as a completion for crash detection.
    assert (session["end_reason"], session["last_action"]) == ("superseded", "completion")
    assert session["ended_at"] == "2023-11-14T22:13:50Z"
    [event] = events.recent(store, kind="session.closed")
    assert (event.session_id, event.data, event.ts) == ("S-x", {"reason": "superseded"}, T0 + 30)
    # Activity after the end (a late hook) does not stretch the duration.
    sessions.record_tool_call(store, "S-x", tool="Read", ok=True, ts=T0 + 500)
    assert sessions.metrics(store, "S-x")["duration_seconds"] == 30.0


def test_a_closed_session_gets_its_note_and_a_failing_note_never_fails_the_close(
    store: Store,
) -> None:
    sessions.start(store, session_id="S-n", now=T0)
    sessions.close(store, "S-n", now=T0 + 5)
    note = store.dir / "exports" / "sessions" / "2023-11-14_S-n.md"
    assert 'status: "closed"' in note.read_text()
    note.unlink()
    # The notes folder replaced by a file: no note can be written.
    folder = store.dir / "exports" / "sessions"
    folder.rmdir()
    folder.write_text("not a folder")
    sessions.start(store, session_id="S-m", now=T0)
    closed = sessions.close(store, "S-m", now=T0 + 5)
    assert closed["id"] == "S-m"
    assert sessions.get(store, "S-m")["status"] == "closed"
    assert "session note for S-m not written" in log.log_path(store.root).read_text()


def test_pausing_needs_a_known_session_and_keeps_it_from_counting_as_crashed(store: Store) -> None:
    with pytest.raises(NotFoundError):
        sessions.pause(store, "S-none")
    sessions.start(store, session_id="S-p", now=T0)
    sessions.pause(store, "S-p", now=T0 + 5)
    session = sessions.get(store, "S-p")
    assert (session["last_action"], session["last_activity_at"]) == (
        "pause",
        "2023-11-14T22:13:25Z",
    )
    assert sessions.crashed(store, now=T0 + 86400) == []


def test_the_agents_summary_keeps_distinct_non_empty_redacted_items(store: Store) -> None:
    summary = sessions.set_summary(
        store,
        "S-new",
        overview="First overview.",
        decisions=["  use make  ", "", "   ", "use make", f"rotate {TOKEN}"],
        source="user",
    )
    assert summary["decisions"] == ["use make", "rotate [REDACTED:github-token]"]
    assert summary["source"] == "user"
    # No overview given: the previous one stays.
    assert sessions.set_summary(store, "S-new", outcomes=["done"])["overview"] == "First overview."


def test_the_rolling_summary_marks_activity_at_the_time_given(store: Store) -> None:
    sessions.start(store, session_id="S-r", now=T0)
    sessions.append_rolling_summary(store, "S-r", "Did a thing.", now=T0 + 70)
    session = sessions.get(store, "S-r")
    assert (session["last_action"], session["last_activity_at"]) == (
        "summary",
        "2023-11-14T22:14:30Z",
    )


def test_a_session_is_found_by_a_unique_prefix_of_its_id(store: Store) -> None:
    for sid in ("S-abc123", "S-abd999", "a_b-1", "axb-2", "50%-x", "50ab-y"):
        sessions.start(store, session_id=sid, now=T0)
    assert sessions.get(store, "S-abc")["id"] == "S-abc123"
    with pytest.raises(UsageError, match="names more than one session"):
        sessions.get(store, "S-ab")
    with pytest.raises(NotFoundError):
        sessions.get(store, "S-a")  # three characters are too few to guess from
    # `_` and `%` in a prefix are themselves, not wildcards.
    assert sessions.get(store, "a_b-")["id"] == "a_b-1"
    assert sessions.get(store, "50%-")["id"] == "50%-x"
    assert sessions.metrics(store, "S-abd")["id"] == "S-abd999"


def test_the_latest_session_is_the_one_active_last(store: Store) -> None:
    assert sessions.latest(store) is None
    sessions.start(store, session_id="S-1", now=T0)
    sessions.start(store, session_id="S-2", now=T0)
    sessions.start(store, session_id="S-3", now=T0 - 10)
    latest = sessions.latest(store, now=T0 + 2 * 86400)
    assert latest is not None and (latest["id"], latest["age_state"]) == ("S-2", "idle")
    assert [s["id"] for s in sessions.list_sessions(store)] == ["S-2", "S-1", "S-3"]
    sessions.record_command(store, "S-1", "ls", ts=T0 + 5)
    assert [s["id"] for s in sessions.list_sessions(store, limit=None)] == ["S-1", "S-2", "S-3"]


def test_figures_of_a_session_with_no_turns_or_tools(store: Store) -> None:
    sessions.start(store, session_id="S-e", now=T0)
    numbers = sessions.metrics(store, "S-e")
    assert (numbers["avg_tokens_per_turn"], numbers["success_rate"]) == (0.0, None)
    with pytest.raises(NotFoundError, match="no session 'S-none'"):
        sessions.metrics(store, "S-none")
    with pytest.raises(NotFoundError):
        sessions.history(store, "S-none")
    assert sessions.get(store, "S-e")["input_tokens"] == 0


def test_crashed_sessions_come_newest_first_with_their_choices(store: Store) -> None:
    sessions.start(store, session_id="S-old", now=T0)
    sessions.start(store, session_id="S-new", now=T0 + 100)
    sessions.append_rolling_summary(store, "S-new", "x" * 50, threshold=10, now=T0 + 110)
    found = sessions.crashed(store, now=T0 + 3600)
    assert [s["id"] for s in found] == ["S-new", "S-old"]
    assert found[0]["status"] == "compacted"  # compacted is not ended
    assert found[0]["resume_choices"] == ["continue", "review", "restart", "discard"]
    # Exactly 30 minutes of silence is not yet a crash.
    assert [s["id"] for s in sessions.crashed(store, now=T0 + 100 + 30 * 60)] == ["S-old"]


def test_continuing_a_crashed_session_makes_it_active_now(store: Store) -> None:
    sessions.start(store, session_id="S-c", now=T0)
    sessions.close(store, "S-c", now=T0 + 5)
    result = sessions.resolve_crash(store, "S-c", "continue", now=T0 + 3600)
    session = result["session"]
    assert (session["status"], session["ended_at"], session["last_activity_at"]) == (
        "active",
        None,
        "2023-11-14T23:13:20Z",
    )


def test_restarting_a_crashed_session_ends_it_and_starts_another(store: Store) -> None:
    sessions.start(store, session_id="S-c", agent="gemini", now=T0)
    result = sessions.resolve_crash(store, "S-c", "restart", now=T0 + 3600)
    old = result["session"]
    assert (old["status"], old["end_reason"], old["last_action"], old["ended_at"]) == (
        "closed",
        "restarted",
        "abort",
        "2023-11-14T23:13:20Z",
    )
    new = result["new_session"]
    assert (new["agent"], new["session_type"], new["started_at"]) == (
        "gemini",
        "existing",
        "2023-11-14T23:13:20Z",
    )
    assert new["id"] != "S-c"
    assert "new_session" not in sessions.resolve_crash(store, new["id"], "discard", now=T0 + 3700)


def test_quota_between_80_and_95_percent_compacts_only_the_rolling_summary(store: Store) -> None:
    sessions.start(store, session_id="S-q", now=T0)
    long_turn = "A long turn. " * 60
    sessions.record_turn(store, "S-q", user_message=long_turn, started_at=T0 + 1)
    sessions.append_rolling_summary(store, "S-q", "One. " * 200, threshold=100_000, now=T0 + 2)
    used = _bytes_used(store, "S-q")
    result = sessions.enforce_quota(store, "S-q", quota_bytes=int(used / 0.85))
    assert result == {"compacted": True, "bytes_used": used}
    session = sessions.get(store, "S-q")
    assert session["status"] == "compacted"
    assert len(session["rolling_summary"]) <= 500
    assert sessions.history(store, "S-q")[0]["user_message"] == long_turn
    # Under 80 %: nothing to do.
    assert sessions.enforce_quota(store, "S-q", quota_bytes=used * 2) == {
        "compacted": False,
        "bytes_used": used,
    }
    assert sessions.enforce_quota(store, "S-none", quota_bytes=10) == {"compacted": False}
    assert sessions.enforce_quota(store, "S-q", quota_bytes=0) == {"compacted": False}


def test_over_95_percent_the_oldest_turns_are_compacted_until_under_80(store: Store) -> None:
    sessions.start(store, session_id="S-q", now=T0)
    long_turn = "This turn says a lot. " * 50  # 1,100 characters
    for n in range(10):
        sessions.record_turn(
            store, "S-q", user_message=long_turn, assistant_response="ok", started_at=T0 + n
        )
    used = _bytes_used(store, "S-q")
    quota = int(used / 0.96)
    result = sessions.enforce_quota(store, "S-q", quota_bytes=quota)
    turns = sessions.history(store, "S-q")
    compacted = [t for t in turns if len(t["user_message"]) <= 500]
    # The oldest first, and only as many as needed to get under 80 %.
    assert 0 < len(compacted) < 10
    assert [t["seq"] for t in compacted] == list(range(1, len(compacted) + 1))
    assert all(t["assistant_response"] == "ok" for t in turns)
    assert result["bytes_used"] <= 0.8 * quota
    assert result["bytes_used"] > 0.8 * quota - 1100
    assert _bytes_used(store, "S-q") == result["bytes_used"]


def test_autosave_compacts_only_sessions_at_80_percent_of_their_quota(store: Store) -> None:
    sessions.start(store, session_id="S-big", now=T0)
    sessions.start(store, session_id="S-small", now=T0)
    sessions.record_turn(store, "S-big", user_message="w" * 800, started_at=T0)
    sessions.record_turn(store, "S-small", user_message="w" * 799, started_at=T0)
    sessions.autosave(store, interval_minutes=0, quota_bytes=1000, now=T0 + 1)
    assert sessions.get(store, "S-big")["status"] == "compacted"
    assert sessions.get(store, "S-small")["status"] == "active"


def test_autosave_leaves_closed_sessions_alone(store: Store) -> None:
    sessions.start(store, session_id="S-open", now=T0)
    sessions.start(store, session_id="S-done", now=T0)
    sessions.record_turn(store, "S-open", user_message="q", started_at=T0 + 1)
    sessions.record_turn(store, "S-done", user_message="q", started_at=T0 + 1)
    sessions.close(store, "S-done", now=T0 + 2)
    # One minute after the start exactly: not yet.
    assert sessions.autosave(store, interval_minutes=1, now=T0 + 60) == []
    assert sessions.autosave(store, interval_minutes=1, now=T0 + 61) == ["S-open"]


def test_deleting_a_session_can_be_undone_and_names_the_deletion(store: Store) -> None:
    sessions.start(store, session_id="S-d", name="gone soon", now=T0)
    path = sessions.write_export(store, "S-d")
    deleted = sessions.delete(store, "gone soon", reason="cleanup")
    assert (deleted["id"], deleted["name"], deleted["deleted"]) == ("S-d", "gone soon", True)
    assert deleted["recover_until"]
    assert not Path(path).exists()
    [event] = events.recent(store, kind="session.deleted")
    assert event.data == {"session": "S-d", "deletion": deleted["deletion"]}
    row = store.query_one("SELECT reason FROM deletions WHERE id = ?", (deleted["deletion"],))
    assert row is not None and row[0] == "cleanup"


def test_no_secret_of_a_turn_is_stored(store: Store) -> None:
    sessions.start(store, session_id="S-s", now=T0)
    sessions.record_turn(
        store,
        "S-s",
        user_message=f"push with {TOKEN}",
        assistant_response=f"pushed using {TOKEN}",
        tool_calls=[{"tool": "Bash", "ok": True, "summary": f"git push {TOKEN}"}],
        started_at=T0 + 1,
    )
    [turn] = sessions.history(store, "S-s")
    assert turn["user_message"] == "push with [REDACTED:github-token]"
    assert turn["assistant_response"] == "pushed using [REDACTED:github-token]"
    assert turn["tool_calls"][0]["summary"] == "git push [REDACTED:github-token]"
    raw = store.query("SELECT summary FROM session_tool_calls WHERE session_id = 'S-s'")
    assert [r[0] for r in raw] == ["git push [REDACTED:github-token]"]


def test_an_unknown_type_status_or_choice_says_which_ones_exist(store: Store) -> None:
    with pytest.raises(UsageError) as bad_type:
        sessions.start(store, session_type="weird")
    assert bad_type.value.one_line() == (
        "unknown session type 'weird' (use one of new, existing, workflow)"
    )
    sessions.start(store, session_id="S-x", now=T0)
    with pytest.raises(UsageError) as bad_status:
        sessions.close(store, "S-x", status="finished")
    assert bad_status.value.one_line() == (
        "unknown session status 'finished' (use one of active, compacted, closed)"
    )
    with pytest.raises(UsageError) as bad_choice:
        sessions.resolve_crash(store, "S-x", "explode")
    assert bad_choice.value.one_line() == (
        "unknown resume choice 'explode' (use one of continue, review, restart, discard)"
    )
    with pytest.raises(UsageError) as ambiguous:
        sessions.start(store, session_id="S-xyz1", now=T0)
        sessions.start(store, session_id="S-xyz2", now=T0)
        sessions.get(store, "S-xyz")
    assert ambiguous.value.one_line() == (
        "'S-xyz' names more than one session (give more of the id)"
    )


def test_a_turn_for_an_unknown_session_with_only_an_end_starts_it_then(store: Store) -> None:
    sessions.record_turn(store, "S-end", user_message="q", ended_at=T0 + 9)
    session = sessions.get(store, "S-end")
    assert (session["started_at"], session["last_activity_at"]) == (
        "2023-11-14T22:13:29Z",
        "2023-11-14T22:13:29Z",
    )


def test_a_file_change_is_activity_of_the_session(store: Store) -> None:
    sessions.start(store, session_id="S-file", now=T0)
    sessions.record_file_modified(store, "S-file", "a.py", ts=T0 + 40)
    session = sessions.get(store, "S-file")
    assert (session["last_action"], session["last_activity_at"]) == ("file", "2023-11-14T22:14:00Z")


def test_what_start_returns_is_aged_at_the_time_given(store: Store) -> None:
    assert sessions.start(store, session_id="S-1", now=T0)["age_state"] == "fresh"
    sessions.close(store, "S-1", now=T0 + 1)
    assert sessions.start(store, session_id="S-1", now=T0 + 2)["age_state"] == "fresh"


def test_without_a_time_the_clock_of_the_machine_is_used(store: Store) -> None:
    from memory_core import clock

    hour_ago = clock.now() - 3600
    sessions.start(store, session_id="S-clock", now=hour_ago)
    assert [s["id"] for s in sessions.crashed(store)] == ["S-clock"]
    sessions.record_search(store, "S-clock", "where is the bug")
    session = sessions.get(store, "S-clock")
    assert session["last_action"] == "search"
    assert clock.parse_iso(session["last_activity_at"]) >= hour_ago + 3000
    assert sessions.crashed(store) == []


def test_a_taken_name_says_who_holds_it(store: Store) -> None:
    sessions.start(store, session_id="S-b", name="login", now=T0)
    with pytest.raises(sessions.NameTakenError) as taken:
        sessions.start(store, session_id="S-c", name="login", now=T0)
    assert taken.value.one_line() == (
        "the name 'login' is already used by session S-b "
        "(choose another name or overwrite it (--yes))"
    )
    assert taken.value.name == "login"
    with pytest.raises(NotFoundError) as missing:
        sessions.get(store, "S-nobody")
    assert missing.value.one_line() == "no session 'S-nobody' (see `engram session list`)"


def test_deleting_keeps_the_memories_the_session_produced(store: Store) -> None:
    from memory_core import memory

    sessions.start(store, session_id="S-mem", now=T0)
    kept = memory.add(store, "Use the cookie, not the header.", session_id="S-mem", now=T0 + 1)
    deleted = sessions.delete(store, "S-mem", actor="cli")
    assert memory.get(store, kept["id"])["content"] == "Use the cookie, not the header."
    row = store.query_one(
        "SELECT reason, actor FROM deletions WHERE id = ?", (deleted["deletion"],)
    )
    assert row is not None and tuple(row) == ("engram session delete", "cli")


def test_average_tokens_per_turn_keep_one_decimal(store: Store) -> None:
    sessions.start(store, session_id="S-avg", now=T0)
    for n in range(3):
        sessions.record_turn(
            store, "S-avg", input_tokens=3, output_tokens=1 if n else 0, started_at=T0 + n
        )
    assert sessions.metrics(store, "S-avg")["avg_tokens_per_turn"] == 3.7
    with pytest.raises(NotFoundError) as missing:
        sessions.metrics(store, "S-none")
    assert missing.value.one_line() == "no session 'S-none' (see `engram session list`)"


def test_a_turn_for_an_unknown_session_starts_it_when_the_turn_started(store: Store) -> None:
    sessions.record_turn(store, "S-span", user_message="q", started_at=T0 + 5, ended_at=T0 + 9)
    session = sessions.get(store, "S-span")
    assert (session["started_at"], session["last_activity_at"]) == (
        "2023-11-14T22:13:25Z",
        "2023-11-14T22:13:29Z",
    )


def test_a_search_for_a_session_no_hook_started_creates_it(store: Store) -> None:
    sessions.record_search(store, "S-seek", "cookie", ts=T0)
    session = sessions.get(store, "S-seek")
    assert (session["search_footprint"], session["started_at"]) == (
        ["cookie"],
        "2023-11-14T22:13:20Z",
    )


def test_the_summary_is_the_agents_unless_said_otherwise(store: Store) -> None:
    assert sessions.set_summary(store, "S-sum", overview="o")["source"] == "agent"


def test_a_deleted_session_can_be_recovered_for_30_days_from_its_deletion(store: Store) -> None:
    sessions.start(store, session_id="S-del", now=T0)
    deleted = sessions.delete(store, "S-del", now=T0 + 10)
    assert deleted["recover_until"] == "2023-12-14T22:13:30Z"
    # A shorter recovery period in the settings is followed.
    from memory_core import config

    settings = config.Settings()
    settings.values["memory.recovery_days"] = 7
    sessions.start(store, session_id="S-week", now=T0)
    deleted = sessions.delete(store, "S-week", settings=settings, now=T0 + 10)
    assert deleted["recover_until"] == "2023-11-21T22:13:30Z"


def test_a_turn_with_only_an_end_started_then_too(store: Store) -> None:
    sessions.start(store, session_id="S-e", now=T0)
    sessions.record_turn(store, "S-e", user_message="q", ended_at=T0 + 9)
    [turn] = sessions.history(store, "S-e")
    assert turn["started_at"] == turn["ended_at"] == "2023-11-14T22:13:29Z"


def test_a_backslash_in_a_prefix_is_itself(store: Store) -> None:
    sessions.start(store, session_id="a\\b-1", now=T0)
    sessions.start(store, session_id="ab-22", now=T0)
    assert sessions.get(store, "a\\b-")["id"] == "a\\b-1"


def test_a_command_is_the_sessions_last_action(store: Store) -> None:
    sessions.start(store, session_id="S-cmd", now=T0)
    sessions.record_command(store, "S-cmd", "make", exit_code=0, ts=T0 + 3)
    session = sessions.get(store, "S-cmd")
    assert (session["last_action"], session["last_activity_at"]) == (
        "command",
        "2023-11-14T22:13:23Z",
    )


def test_a_deletion_is_the_users_unless_said_otherwise(store: Store) -> None:
    sessions.start(store, session_id="S-u", now=T0)
    deleted = sessions.delete(store, "S-u")
    row = store.query_one("SELECT actor FROM deletions WHERE id = ?", (deleted["deletion"],))
    assert row is not None and row[0] == "user"


def test_durations_keep_milliseconds(store: Store) -> None:
    sessions.start(store, session_id="S-ms", now=T0)
    assert sessions.close(store, "S-ms", now=T0 + 1.23456)["duration_seconds"] == 1.235
    assert sessions.get(store, "S-ms")["output_tokens"] == 0


def test_resume_shows_the_last_20_turns_aged_at_the_time_given(store: Store) -> None:
    sessions.start(store, session_id="S-r", now=T0)
    for n in range(22):
        sessions.record_turn(store, "S-r", user_message=f"ask {n}", started_at=T0 + n)
    resumed = sessions.resume(store, "S-r", now=T0 + 100)
    assert [t["seq"] for t in resumed["turns"]] == list(range(3, 23))
    assert resumed["session"]["age_state"] == "fresh"


def test_over_95_percent_a_short_turn_is_never_rewritten(store: Store) -> None:
    sessions.start(store, session_id="S-q", now=T0)
    short = "Line one.\n\nLine two."
    sessions.record_turn(store, "S-q", user_message=short, started_at=T0)
    for n in range(5):
        sessions.record_turn(store, "S-q", user_message="Words. " * 200, started_at=T0 + 1 + n)
    used = _bytes_used(store, "S-q")
    sessions.enforce_quota(store, "S-q", quota_bytes=int(used / 0.96))
    turns = sessions.history(store, "S-q")
    assert turns[0]["user_message"] == short
    assert len(turns[1]["user_message"]) <= 500


def test_an_empty_overview_keeps_the_one_there(store: Store) -> None:
    """An agent that sends its decisions with an empty overview field (`""`, as a JSON form
    gives) does not wipe the overview it wrote before."""
    sessions.set_summary(store, "S-sum", overview="Moved the retry logic into the client.")
    summary = sessions.set_summary(store, "S-sum", overview="", decisions=["keep 3 retries"])
    assert summary["overview"] == "Moved the retry logic into the client."
    assert summary["decisions"] == ["keep 3 retries"]


def test_resume_without_a_time_makes_the_session_active_now(store: Store) -> None:
    from memory_core import clock

    sessions.start(store, session_id="S-r", now=T0)
    sessions.close(store, "S-r", now=T0 + 60)
    before = clock.now()
    resumed = sessions.resume(store)  # the latest, at the machine's time
    session = resumed["session"]
    assert (session["id"], session["status"], session["ended_at"]) == ("S-r", "active", None)
    assert clock.parse_iso(session["last_activity_at"]) >= int(before)
    assert session["age_state"] == "fresh"


def test_reviewing_a_crash_shows_the_session_as_it_was_at_the_time_given(store: Store) -> None:
    """`review` changes nothing and shows the session aged at the review's time: one silent
    for 40 minutes is fresh then, whatever the machine's clock says now."""
    sessions.start(store, session_id="S-crash", agent="gemini", now=T0)
    review = sessions.resolve_crash(store, "S-crash", "review", now=T0 + 40 * 60)
    assert (review["session"]["id"], review["session"]["status"]) == ("S-crash", "active")
    assert review["session"]["age_state"] == "fresh"
    assert review["summary"].startswith("# Session ")
    assert [s["id"] for s in sessions.crashed(store, now=T0 + 40 * 60)] == ["S-crash"]
    # A day and more of silence ages it to idle.
    later = sessions.resolve_crash(store, "S-crash", "review", now=T0 + 25 * 3600)
    assert later["session"]["age_state"] == "idle"


def test_a_turn_is_the_sessions_last_action_and_no_pause(store: Store) -> None:
    sessions.start(store, session_id="S-turn", now=T0)
    sessions.record_turn(store, "S-turn", user_message="go on", started_at=T0 + 10)
    assert sessions.get(store, "S-turn", now=T0 + 20)["last_action"] == "turn"
    # A session whose last action was a turn and that went silent has crashed.
    assert [s["id"] for s in sessions.crashed(store, now=T0 + 10 + 31 * 60)] == ["S-turn"]


def test_an_archived_session_read_again_ages_from_the_reading(store: Store) -> None:
    """Seed 003 archives after 30 days without an access: a session whose detail was brought
    back is fresh from then on, not archived again at once."""
    from memory_core import lifecycle

    day = 86400
    sessions.start(store, session_id="S-old", now=T0)
    sessions.record_turn(store, "S-old", user_message="old work", started_at=T0 + 10)
    lifecycle.archive_session(store, "S-old", now=T0 + 31 * day)
    assert sessions.get(store, "S-old", now=T0 + 31 * day)["age_state"] == "archived"
    lifecycle.unarchive_session(store, "S-old", now=T0 + 40 * day)
    assert sessions.get(store, "S-old", now=T0 + 40 * day + 60)["age_state"] == "fresh"
    assert sessions.get(store, "S-old", now=T0 + 41 * day)["age_state"] == "idle"
    listed = sessions.list_sessions(store, now=T0 + 40 * day + 60)
    assert [(s["id"], s["age_state"]) for s in listed] == [("S-old", "fresh")]
