"""A subagent finishing (SubagentStop) is not the end of the parent's turn: the agent goes on
answering the same request with what the subagent found, and that answer belongs to the turn.

Run through `hooks.handle`, the entry point `engram hook` uses, with real transcript files: the
parent's `<session>.jsonl` and the subagent's `<session>/subagents/agent-<id>.jsonl`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memory_core import sessions
from memory_core.agents import hooks
from memory_core.store import Store
from tests.agents_fixtures import Transcript, hook_payload, text, tool_use

SID = "7e6d5c4b-aaaa-4bbb-8ccc-0123456789ab"
AGENT_ID = "a3c1f0e9d8b7a6c5"
T0 = 1_800_000_000.0


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def fire(repo: Path, event: str, at: float, transcript: Path, **extra: object) -> None:
    payload = hook_payload(event, SID, repo, transcript, **extra)
    code, _out = hooks.handle("claude-code", event, payload, now=at)
    assert code == 0


def test_the_answer_after_a_subagent_finishes_stays_in_the_same_turn(
    repo: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "claude" / "projects" / "p"
    main = Transcript(SID, repo)
    main.prompt("Which modules read the session cookie?")
    main.response([tool_use("toolu_task", "Task", prompt="find cookie readers")])
    main_path = main.save(folder / f"{SID}.jsonl")
    fire(repo, "UserPromptSubmit", T0, main_path, prompt="Which modules read the session cookie?")

    sub = Transcript(SID, repo)
    sub._clock = main._clock  # the subagent works while the parent waits
    first = sub.envelope("user", sidechain=True, agent_id=AGENT_ID, parent=None)
    first["message"] = {"role": "user", "content": "find cookie readers"}
    sub.write(first)
    sub.response(
        [tool_use("toolu_grep", "Grep", pattern="COOKIE")],
        sidechain=True,
        agent_id=AGENT_ID,
        message_id="msg_sub_1",
    )
    sub.tool_result("toolu_grep", "src/session.py", sidechain=True, agent_id=AGENT_ID)
    sub.response(
        [text("src/session.py reads it.")],
        sidechain=True,
        agent_id=AGENT_ID,
        message_id="msg_sub_2",
    )
    sub_path = sub.save(folder / SID / "subagents" / f"agent-{AGENT_ID}.jsonl")
    fire(repo, "SubagentStop", T0 + 5, main_path, agent_transcript_path=str(sub_path))

    # The parent reads the subagent's report and answers: still the same request.
    main._clock = sub._clock
    main.tool_result("toolu_task", "src/session.py reads it.")
    main.response([text("Only src/session.py reads the cookie.")])
    main.save(main_path)
    fire(repo, "Stop", T0 + 9, main_path, last_assistant_message="Only src/session.py reads it.")

    with Store.open(repo) as store:
        turns = sessions.history(store, SID)
        assert [(t["user_message"], t["assistant_response"]) for t in turns] == [
            (
                "Which modules read the session cookie?",
                "Only src/session.py reads the cookie.",
            )
        ]
        # The delegation is the turn's one call (the subagent's Grep is its own work).
        assert [call["tool"] for call in turns[0]["tool_calls"]] == ["Task"]
