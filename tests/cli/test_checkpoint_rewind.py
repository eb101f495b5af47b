"""A checkpoint knows the conversation (beans' Checkpoint.turnNumber), and a rollback can rewind
it: the next agent starts from the session as it stood at the checkpoint's turn."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from memory_core import checkpoints, config, conversation, sessions
from memory_core.agents import hooks
from memory_core.agents.context import session_start_text
from memory_core.errors import UsageError
from memory_core.store import Store
from tests.agents_fixtures import hook_payload

SESSION = "b7d1c0de-0000-4000-8000-000000000012"
# Recent times: retention would prune checkpoints months old before the rollback runs.
T0 = time.time() - 7200


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "app.py").write_text("VERSION = 0\n")
    return workspace


def _hook(repo: Path, event: str, now: float, **extra: object) -> str:
    code, out = hooks.handle(
        "claude-code", event, hook_payload(event, SESSION, repo, **extra), now=now
    )
    assert code == 0
    return out


def _turn(repo: Path, number: int, prompt: str) -> None:
    at = T0 + number * 60
    _hook(repo, "UserPromptSubmit", at, prompt=prompt)
    (repo / "app.py").write_text(f"VERSION = {number}\n")
    _hook(repo, "Stop", at + 30, last_assistant_message=f"Finished step {number}.")


def _open_items(store: Store) -> list[str]:
    return list(sessions.get(store, SESSION)["summary"]["open_items"])


def test_rollback_to_the_turn_12_checkpoint_gives_the_next_agent_turn_12(repo: Path, cli) -> None:  # type: ignore[no-untyped-def]
    config.set_value(repo, "checkpoints.every_n_turns", 12)
    _hook(repo, "SessionStart", T0, source="startup")
    for number in range(1, 13):
        _turn(repo, number, f"do step {number}")
    store = Store.open(repo)
    try:
        sessions.set_summary(store, SESSION, open_items=["wire the cache"])
        made = [c for c in checkpoints.list_checkpoints(store) if c["reason"] == "turns"]
        assert len(made) == 1 and made[0]["turn_number"] == 12
        assert made[0]["session_id"] == SESSION
        at_twelve = made[0]["id"]
    finally:
        store.close()
    # The session goes on past the checkpoint: a correction, a rule, more open items.
    for number in range(13, 16):
        _turn(repo, number, f"no, never use the legacy API in step {number}")
    store = Store.open(repo)
    try:
        sessions.set_summary(store, SESSION, open_items=["drop the legacy API"])
        assert sessions.get(store, SESSION)["turns"] == 15
        before = session_start_text(store, current_session="next-agent", now=T0 + 2000)
    finally:
        store.close()
    # Negative control: without the rewind, the next agent sees what came after turn 12.
    assert "drop the legacy API" in before and "never use the legacy API" in before

    listed = cli("checkpoint", "list", cwd=repo).stdout
    assert f"{at_twelve}" in listed and "turn 12" in listed
    rolled = cli("rollback", at_twelve, "--yes", "--rewind", "--json", cwd=repo)
    assert rolled.code == 0, rolled.stderr
    result = rolled.json()
    assert result["rewound"]["turn"] == 12 and result["rewound"]["turns_removed"] == 3
    assert (repo / "app.py").read_text() == "VERSION = 12\n"

    store = Store.open(repo)
    try:
        session = sessions.get(store, SESSION)
        assert session["turns"] == 12
        assert [t["user_message"] for t in sessions.history(store, SESSION)][-1] == "do step 12"
        assert _open_items(store) == []  # the open item written after the checkpoint is gone
        after = session_start_text(store, current_session="next-agent", now=T0 + 3000)
        # The session as it stood at turn 12: its last requests end with step 12, it ended on
        # turn 12's closing message, and nothing from turns 13 to 15 is there.
        assert "do step 12" in after and "Finished step 12." in after
        assert "step 13" not in after and "Finished step 13." not in after
        assert "drop the legacy API" not in after
        assert "never use the legacy API" not in after
        # Nothing lost: the whole session was saved before the rewind.
        saved = store.query("SELECT payload FROM saved_sessions WHERE session_id = ?", (SESSION,))
        turns = [
            len(sessions.parse_document(sessions.unpack_document(r["payload"]))["turns"])
            for r in saved
        ]
        assert 15 in turns
        # The undo checkpoint (taken at turn 15) brings the conversation back too.
        undo = result["undo_checkpoint"]
        assert checkpoints.get(store, undo)["turn_number"] == 15
        conversation.rewind(store, undo)
        assert sessions.get(store, SESSION)["turns"] == 15
        assert _open_items(store) == ["wire the cache", "drop the legacy API"]
    finally:
        store.close()


def test_rewind_needs_a_checkpoint_taken_in_a_session(repo: Path, cli) -> None:  # type: ignore[no-untyped-def]
    store = Store.init(repo)
    try:
        plain = checkpoints.create(store, "by-hand")
        assert plain["turn_number"] is None
        with pytest.raises(UsageError, match="not taken during a session"):
            conversation.rewind(store, plain["id"])
    finally:
        store.close()
    (repo / "app.py").write_text("VERSION = 99\n")
    refused = cli("rollback", "by-hand", "--yes", "--rewind", cwd=repo)
    assert refused.code == 2 and "no conversation to rewind" in refused.stderr
    assert (repo / "app.py").read_text() == "VERSION = 99\n"  # nothing written
    assert json.loads(cli("checkpoint", "list", "--json", cwd=repo).stdout)["checkpoints"]
