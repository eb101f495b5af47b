"""Finished turns reaching their sessions (memory_core/agents/record.py), on the edges a user
notices: the automatic checkpoint every N turns only for a turn that ended within the last half
hour (a transcript of last week read today takes none), once per batch; a turn's calls shown
only once their outcome is known, the ones a hook recorded first not counted twice; a turn
closed once whoever closes it again; tokens of subagents not charged to the turn."""

from __future__ import annotations

import pytest

from memory_core import checkpoints, config, sessions
from memory_core.agents import record
from memory_core.store import Store

NOW = 1_900_000_000.0
MINUTE = 60.0


def _settings(store: Store, every: int) -> config.Settings:
    return config.load(store.root, overrides={"checkpoints.every_n_turns": every})


def _turn(sid: str, n: int, ended_at: float | None, **extra: object) -> record.FinishedTurn:
    fields: dict[str, object] = {
        "session_id": sid,
        "user_message": f"request {n}",
        "assistant_response": f"answer {n}",
        "tool_calls": [],
        "input_tokens": 10,
        "output_tokens": 5,
        "started_at": (ended_at or NOW) - 30,
        "ended_at": ended_at,
    }
    fields.update(extra)
    return record.FinishedTurn(**fields)  # type: ignore[arg-type]


def _project(store: Store) -> Store:
    (store.root / "app.py").write_text("x = 1\n")
    return store


@pytest.mark.parametrize(("ended_minutes_ago", "taken"), [(29, True), (30, True), (31, False)])
def test_the_turn_checkpoint_is_taken_only_for_a_turn_that_ended_in_the_last_half_hour(
    store: Store, ended_minutes_ago: int, taken: bool
) -> None:
    _project(store)
    sessions.start(store, session_id="S", agent="claude-code", now=NOW - 3600)
    turns = [_turn("S", n, NOW - ended_minutes_ago * MINUTE) for n in (1, 2)]
    record.apply_turns(store, turns, _settings(store, 2), now=NOW)
    made = checkpoints.list_checkpoints(store)
    assert [c["reason"] for c in made] == (["turns"] if taken else [])
    assert len(sessions.history(store, "S")) == 2  # the turns themselves are recorded either way


def test_a_turn_without_an_end_counts_from_its_start(store: Store) -> None:
    _project(store)
    sessions.start(store, session_id="S", agent="claude-code", now=NOW - 3600)
    stale = _turn("S", 1, None, started_at=NOW - 31 * MINUTE)
    record.apply_turns(store, [stale], _settings(store, 1), now=NOW)
    assert checkpoints.list_checkpoints(store) == []
    fresh = _turn("S", 2, None, started_at=NOW - 29 * MINUTE)
    record.apply_turns(store, [fresh], _settings(store, 1), now=NOW)
    assert len(checkpoints.list_checkpoints(store)) == 1


def test_a_long_batch_takes_one_checkpoint_per_session_for_its_last_due_turn(
    store: Store,
) -> None:
    _project(store)
    for sid in ("A", "B"):
        sessions.start(store, session_id=sid, agent="claude-code", now=NOW - 3600)
    batch = [_turn("A", n, NOW - 60 + n) for n in range(1, 8)] + [_turn("B", 1, NOW - 10)]
    record.apply_turns(store, batch, _settings(store, 3), now=NOW)
    made = checkpoints.list_checkpoints(store)
    # A's turns 3 and 6 were due: one checkpoint, for turn 6; B's one turn was not due.
    assert [(c["session_id"], c["description"]) for c in made] == [("A", "automatic: turn 6")]


def test_no_checkpoint_when_turn_checkpoints_are_off(store: Store) -> None:
    _project(store)
    sessions.start(store, session_id="S", agent="claude-code", now=NOW - 3600)
    record.apply_turns(store, [_turn("S", 1, NOW)], _settings(store, 0), now=NOW)
    assert checkpoints.list_checkpoints(store) == []


def test_a_turn_shows_the_calls_with_an_outcome_and_counts_only_those_it_claimed(
    store: Store,
) -> None:
    sessions.start(store, session_id="S", agent="claude-code", now=NOW - 3600)
    calls = [
        {"tool": "Bash", "ok": False, "summary": "make", "claimed": True},  # this ingest's own
        {"tool": "Edit", "ok": True, "summary": "a.py"},  # a hook recorded it first
        {"tool": "Read", "summary": "b.py"},  # no result yet: not shown
        {"tool": "Grep", "summary": "TODO", "claimed": True},  # claimed without "ok": a success
    ]
    record.apply_turns(store, [_turn("S", 1, NOW, tool_calls=calls)], _settings(store, 0), now=NOW)
    [turn] = sessions.history(store, "S")
    shown = [(c["tool"], c["ok"]) for c in turn["tool_calls"]]
    assert shown == [("Bash", False), ("Edit", True), ("Grep", True)]
    metrics = sessions.metrics(store, "S")
    assert (metrics["tool_calls"], metrics["tool_calls_failed"]) == (2, 1)


def test_a_turn_is_closed_once_and_its_subagents_tokens_are_not_its_own(store: Store) -> None:
    turn = record.Turn(uuid="u-1", session_id="S", started_at=NOW - 30, user_message="go")
    turn.assistant_parts = ["first part", "", "second part"]
    with store.transaction() as db:
        for message, sidechain, tokens in (("m1", 0, 100), ("m2", 1, 7000), ("m3", 0, 20)):
            db.execute(
                "INSERT INTO agent_messages (message_key, session_id, turn_uuid, ts, sidechain,"
                " input_tokens, output_tokens) VALUES (?, 'S', 'u-1', 0, ?, ?, ?)",
                (message, sidechain, tokens, tokens // 10),
            )
        done = record.close_turn(db, turn, NOW)
        again = record.close_turn(db, turn, NOW + 5)
    assert done is not None and again is None
    assert (done.input_tokens, done.output_tokens) == (120, 12)
    assert done.assistant_response == "first part\n\nsecond part"
    assert done.ended_at == NOW
    with store.transaction() as db:
        assert record.load_open_turn(db, "S") is None


def test_an_open_turn_is_carried_over_with_its_answer_so_far(store: Store) -> None:
    turn = record.Turn(
        uuid="u-2", session_id="S", started_at=NOW, user_message="build it", ended_at=NOW + 9
    )
    turn.assistant_parts = ["working on it"]
    turn.tool_calls = [{"tool": "Bash", "summary": "make"}]
    with store.transaction() as db:
        record.save_open_turn(db, turn)
        later = record.Turn(uuid="u-3", session_id="S", started_at=NOW - 100, user_message="old")
        record.save_open_turn(db, later)
        loaded = record.load_open_turn(db, "S")
    assert loaded == record.Turn(
        uuid="u-2",
        session_id="S",
        started_at=NOW,
        user_message="build it",
        ended_at=NOW + 9,
        assistant_parts=["working on it"],
        tool_calls=[{"tool": "Bash", "summary": "make"}],
    )


def test_a_file_edit_keeps_the_text_before_it_only_when_the_result_gives_it_as_text(
    store: Store,
) -> None:
    from memory_core import evolution

    (store.root / "a.py").write_text("x = 2\n")
    (store.root / "b.py").write_text("y = 2\n")
    for name, structured in (
        ("a.py", {"originalFileContents": "x = 1\n"}),
        ("b.py", {"originalFile": ["not", "text"]}),
    ):
        call = record.ToolCall(f"t-{name}", "S", "Edit", {"file_path": str(store.root / name)}, NOW)
        outcome = record.ToolOutcome(True, structured=structured)
        record.apply_outcome(store, call, outcome)
    [a] = evolution.history(store, "a.py")
    [b] = evolution.history(store, "b.py")
    # The text before the edit, given as text, says which lines changed and what it was.
    assert (a["session_id"], a["lines"], a["line_count"]) == ("S", [[1, 1]], 1)
    assert a["hash_before"] == evolution.content_hash("x = 1\n")
    # A result that gives something else is no text before: the change is kept without it.
    assert (b["session_id"], b["lines"], b["hash_before"]) == ("S", None, None)


def test_the_files_a_codex_patch_changed_reach_file_evolution_as_the_sessions(
    store: Store,
) -> None:
    from memory_core import evolution

    (store.root / "shop").mkdir()
    (store.root / "shop" / "cart.py").write_text("total = 2\n")
    (store.root / "shop" / "new.py").write_text("x = 1\n")
    patch = (
        "*** Begin Patch\n*** Update File: shop/cart.py\n@@\n-total = 1\n+total = 2\n"
        "*** Add File: shop/new.py\n+x = 1\n*** End Patch\n"
    )
    call = record.ToolCall("call_1", "S", "apply_patch", {"input": patch}, NOW)
    record.apply_outcome(store, call, record.ToolOutcome(True, exit_code=0), cwd=str(store.root))
    for name in ("shop/cart.py", "shop/new.py"):
        [change] = evolution.history(store, name)
        assert (change["actor"], change["session_id"], change["ts"]) == ("agent", "S", NOW)
    # A patch that failed changed nothing.
    failed = record.ToolCall("call_2", "S", "apply_patch", {"input": patch}, NOW + 1)
    record.apply_outcome(store, failed, record.ToolOutcome(False, error="patch rejected"))
    assert len(evolution.history(store, "shop/cart.py")) == 1
