"""AIOS session state at its edges (issue 31): the TTL on both sides of one hour, each bound
at its limit, every workflow command, and the line the next session is told."""

from __future__ import annotations

import pytest

from memory_core import session_state, sessions
from memory_core.errors import NotFoundError
from memory_core.store import Store

T0 = 1_772_440_000.0


def test_a_session_silent_exactly_one_hour_is_still_existing_a_second_more_is_new(
    store: Store,
) -> None:
    sessions.start(store, session_id="a", now=T0)
    assert session_state.detect_type(store, now=T0 + 3600) == "existing"
    assert session_state.detect_type(store, now=T0 + 3601) == "new"
    assert not session_state.state(store, "a", now=T0 + 3600)["expired"]
    assert session_state.state(store, "a", now=T0 + 3601)["expired"]


def test_the_session_asking_is_left_out_of_its_own_detection(store: Store) -> None:
    sessions.start(store, session_id="a", now=T0)
    assert session_state.detect_type(store, now=T0 + 10, exclude="a") == "new"
    assert session_state.context_message(store, now=T0 + 10, exclude="a") == ""


@pytest.mark.parametrize(("command", "workflow"), sorted(session_state.WORKFLOW_COMMANDS.items()))
def test_each_aios_workflow_command_moves_the_workflow(
    command: str, workflow: tuple[str, str]
) -> None:
    assert session_state.infer_workflow(f"*{command} MIS-1") == workflow
    assert session_state.infer_workflow(f"/{command.upper()}") == workflow
    assert session_state.infer_workflow(f"  {command}  ") == workflow


@pytest.mark.parametrize("command", ["", "   ", "*unknown-task", "develop-stories", "*"])
def test_other_commands_move_no_workflow(command: str) -> None:
    assert session_state.infer_workflow(command) is None


def test_exactly_ten_commands_are_all_kept_and_an_eleventh_drops_the_oldest(store: Store) -> None:
    sessions.start(store, session_id="a", now=T0)
    for index in range(10):
        session_state.update(store, "a", command=f"*t{index}", now=T0 + index)
    assert session_state.state(store, "a", now=T0 + 20)["last_commands"][0] == "*t0"
    session_state.update(store, "a", command="*t10", now=T0 + 30)
    commands = session_state.state(store, "a", now=T0 + 30)["last_commands"]
    assert (len(commands), commands[0], commands[-1]) == (10, "*t1", "*t10")


def test_a_command_is_stored_trimmed_redacted_and_cut_to_200_characters(store: Store) -> None:
    sessions.start(store, session_id="a", now=T0)
    session_state.update(store, "a", command="  deploy --key AKIAIOSFODNN7EXAMPLE  ", now=T0)
    session_state.update(store, "a", command="x" * 250, now=T0 + 1)
    commands = session_state.state(store, "a", now=T0 + 2)["last_commands"]
    assert commands == ["deploy --key [REDACTED:aws-access-key]", "x" * 200]


def test_exactly_twenty_tasks_are_kept_then_the_oldest_goes(store: Store) -> None:
    sessions.start(store, session_id="a", now=T0)
    for index in range(20):
        session_state.update(store, "a", task_done=f"task {index}", now=T0 + index)
    history = session_state.state(store, "a", now=T0 + 30)["task_history"]
    assert len(history) == 20 and history[0]["task"] == "task 0"
    session_state.update(store, "a", task_done="task 20", task_result=" failed ", now=T0 + 40)
    history = session_state.state(store, "a", now=T0 + 40)["task_history"]
    assert (len(history), history[0]["task"]) == (20, "task 1")
    assert history[-1] == {"task": "task 20", "result": "failed", "at": "2026-03-02T08:27:20Z"}


def test_a_finished_workflow_task_moves_the_workflow(store: Store) -> None:
    sessions.start(store, session_id="a", now=T0)
    found = session_state.update(store, "a", task_done="qa-gate", now=T0 + 1)
    assert (found["active_workflow"], found["workflow_state"]) == ("story_development", "qa_gate")
    found = session_state.update(store, "a", task_done="write notes", now=T0 + 2)
    assert found["workflow_state"] == "qa_gate"  # not a workflow task: left as it was


def test_an_empty_value_clears_a_field_and_none_leaves_it(store: Store) -> None:
    sessions.start(store, session_id="a", now=T0)
    session_state.update(store, "a", story="MIS-1", subtask="3", workflow="w", now=T0)
    found = session_state.update(store, "a", subtask="", now=T0 + 1)
    assert (found["active_story"], found["active_subtask"], found["active_workflow"]) == (
        "MIS-1",
        None,
        "w",
    )


def test_an_update_never_moves_the_last_activity_back(store: Store) -> None:
    sessions.start(store, session_id="a", now=T0 + 100)
    found = session_state.update(store, "a", agent="@dev", now=T0)
    assert found["last_activity_at"] == "2026-03-02T08:28:20Z"  # T0 + 100


def test_an_unknown_session_is_a_clear_error(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no session 'nope'"):
        session_state.update(store, "nope", agent="@dev")
    with pytest.raises(NotFoundError, match="no session 'nope'"):
        session_state.state(store, "nope")


def test_a_session_with_one_agent_has_no_previous_agent(store: Store) -> None:
    sessions.start(store, session_id="a", agent="claude-code", now=T0)
    found = session_state.state(store, "a", now=T0)
    assert found["previous_agent"] is None and found["current_agent"] == "claude-code"
    found = session_state.update(store, "a", agent="@dev", now=T0 + 1)
    assert found["current_agent"] == "@dev"


def test_the_next_session_is_told_where_the_last_one_stood(store: Store) -> None:
    sessions.start(store, session_id="a", agent="claude-code", now=T0)
    session_state.update(store, "a", agent="@dev", story="MIS-3", subtask="2", now=T0 + 1)
    for command in ("*draft", "*develop-story", "npm test", "*review"):
        session_state.update(store, "a", command=command, now=T0 + 2)
    session_state.update(store, "a", task_done="lint", task_result="passed", now=T0 + 3)
    assert session_state.context_message(store, now=T0 + 60) == (
        "Continuing (workflow session) from @dev; working on story MIS-3, subtask 2; "
        "workflow story_development (in_review); last commands: *develop-story, npm test, "
        "*review; last task done: lint (passed)."
    )


def test_a_plain_previous_session_is_told_in_one_short_line(store: Store) -> None:
    sessions.start(store, session_id="a", agent="gemini", now=T0)
    session_state.update(store, "a", story="MIS-9", workflow="custom", now=T0 + 1)
    assert session_state.context_message(store, now=T0 + 60) == (
        "Continuing (workflow session) from gemini; working on story MIS-9; "
        "workflow custom (started)."
    )
    session_state.update(store, "a", workflow="", story="", now=T0 + 2)
    assert session_state.context_message(store, now=T0 + 60) == (
        "Continuing (existing session) from gemini."
    )


def test_an_unknown_session_says_where_to_look(store: Store) -> None:
    for call in (
        lambda: session_state.update(store, "nope", agent="@dev"),
        lambda: session_state.state(store, "nope"),
    ):
        with pytest.raises(NotFoundError) as caught:
            call()
        assert caught.value.hint == "see `engram session list`"


def test_the_state_returned_by_an_update_is_as_of_the_updates_time(store: Store) -> None:
    sessions.start(store, session_id="a", now=T0)
    found = session_state.update(store, "a", agent="@dev", now=T0 + 10)
    assert found["id"] == "a" and found["expired"] is False


def test_a_word_that_only_ends_like_a_workflow_command_is_not_one() -> None:
    assert session_state.infer_workflow("Xdevelop") is None
    assert session_state.infer_workflow("XX*draft") is None


def test_a_tasks_result_is_cut_to_200_characters(store: Store) -> None:
    sessions.start(store, session_id="a", now=T0)
    found = session_state.update(store, "a", task_done="t" * 250, task_result="r" * 250, now=T0)
    assert found["task_history"][-1]["task"] == "t" * 200
    assert found["task_history"][-1]["result"] == "r" * 200
