"""A checkpoint taken in a session remembers its turn and state; rewinding and resuming read it
back (issue 31: direct, in-process tests of `session_turns` and `conversation`)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from memory_core import checkpoints, clock, conversation, sessions
from memory_core.errors import NotFoundError, UsageError
from memory_core.session_turns import STATE_FIELDS, record_checkpoint
from memory_core.store import Store

T0 = time.time() - 3600


def _session_with_turns(store: Store, turns: int, sid: str = "s-1") -> str:
    sessions.start(store, session_id=sid, agent="claude-code", now=T0)
    for n in range(1, turns + 1):
        sessions.record_turn(
            store,
            sid,
            user_message=f"step {n}",
            assistant_response=f"done {n}",
            input_tokens=10 * n,
            output_tokens=n,
            started_at=T0 + n * 60,
            ended_at=T0 + n * 60 + 5,
        )
    return sid


def _saved(store: Store, checkpoint_id: str) -> tuple[int | None, dict[str, object] | None]:
    row = store.query_one(
        "SELECT turn_number, session_state FROM checkpoints WHERE id = ?", (checkpoint_id,)
    )
    assert row is not None
    state = json.loads(row["session_state"]) if row["session_state"] else None
    return row["turn_number"], state


def test_a_checkpoint_in_a_session_records_its_turn_and_every_state_field(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 3)
    sessions.set_summary(store, sid, overview="caché rework", open_items=["wire the cache"])
    (workspace / "a.py").write_text("x = 1\n")
    made = checkpoints.create(store, "at three", session_id=sid, now=T0 + 300)
    turn, state = _saved(store, made["id"])
    assert turn == 3
    assert state is not None and set(state) == set(STATE_FIELDS)
    assert state["overview"] == "caché rework"
    raw = store.query_one("SELECT session_state FROM checkpoints WHERE id = ?", (made["id"],))
    assert raw is not None and "caché rework" in raw[0]  # stored readable, not as \u escapes
    assert json.loads(str(state["open_items"])) == ["wire the cache"]
    assert state["status"] == "active"


def test_record_checkpoint_without_a_session_or_for_an_unknown_one_records_nothing(
    store: Store, workspace: Path
) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    plain = checkpoints.create(store, "plain", now=T0)
    assert _saved(store, plain["id"]) == (None, None)
    with store.transaction() as db:
        record_checkpoint(db, plain["id"], "no-such-session")
        record_checkpoint(db, plain["id"], "")
    assert _saved(store, plain["id"]) == (None, None)


def test_rewind_returns_the_session_to_the_checkpoints_turn_and_keeps_what_it_removed(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 2)
    sessions.set_summary(store, sid, open_items=["first item"])
    (workspace / "a.py").write_text("x = 1\n")
    made = checkpoints.create(store, "at two", session_id=sid, now=T0 + 200)
    for n in (3, 4, 5):
        sessions.record_turn(
            store, sid, user_message=f"later {n}", input_tokens=1000, started_at=T0 + n * 60
        )
    sessions.set_summary(store, sid, open_items=["second item"])
    rewound = conversation.rewind(store, made["id"], now=T0 + 900)
    assert rewound["session_id"] == sid
    assert rewound["turn"] == 2
    assert rewound["turns_removed"] == 3
    assert rewound["detached_id"].startswith(f"{sid}@rewound-")
    session = sessions.get(store, sid)
    assert list(session["summary"]["open_items"]) == ["first item"]
    row = store.query_one(
        "SELECT turn_count, input_tokens, output_tokens, status FROM sessions WHERE id = ?",
        (sid,),
    )
    assert row is not None and tuple(row) == (2, 30, 3, "active")  # turns 1 and 2 only
    turns = store.query("SELECT seq FROM session_turns WHERE session_id = ? ORDER BY seq", (sid,))
    assert [t[0] for t in turns] == [1, 2]
    kinds = [r[0] for r in store.query("SELECT kind FROM events WHERE session_id = ?", (sid,))]
    assert "session.rewound" in kinds
    saved = store.query("SELECT saved_at FROM saved_sessions WHERE session_id = ?", (sid,))
    assert len(saved) >= 1  # the session as it was, kept before trimming


def test_rewind_refuses_a_checkpoint_taken_outside_a_session(store: Store, workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    plain = checkpoints.create(store, "plain", now=T0)
    with pytest.raises(UsageError, match="not taken during a session"):
        conversation.rewind(store, plain["id"])


def test_rewind_says_when_the_checkpoints_session_is_gone(store: Store, workspace: Path) -> None:
    sid = _session_with_turns(store, 1)
    (workspace / "a.py").write_text("x = 1\n")
    made = checkpoints.create(store, "one", session_id=sid, now=T0 + 100)
    with store.transaction() as db:
        db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
    with pytest.raises(NotFoundError, match="no longer exists"):
        conversation.rewind(store, made["id"])


def _changes(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "branch": None,
        "added": [],
        "modified": [],
        "deleted": [],
        "checkpoint": None,
    }
    base.update(fields)
    return base


def test_changes_text_says_when_nothing_changed() -> None:
    assert conversation.changes_text(_changes()) == "workspace: unchanged since the session"
    assert (
        conversation.changes_text(_changes(checkpoint="c1"))
        == "workspace: unchanged since the session (against checkpoint c1)"
    )


def test_changes_text_lists_each_kind_and_the_branch_switch() -> None:
    text = conversation.changes_text(
        _changes(
            branch={"then": "main", "now": "feature"},
            added=["new.py"],
            deleted=["old.py"],
            checkpoint="c9",
        )
    )
    assert text == (
        "workspace changes since the session (against checkpoint c9):\n"
        "  branch switched from main to feature\n"
        "  added: new.py\n"
        "  deleted: old.py"
    )


def test_changes_text_shows_eight_paths_then_counts_the_rest() -> None:
    eight = [f"f{n}.py" for n in range(8)]
    assert conversation.changes_text(_changes(modified=eight)).endswith(
        "modified: " + ", ".join(eight)
    )
    nine = [*eight, "f8.py"]
    assert conversation.changes_text(_changes(modified=nine)).endswith(
        "modified: " + ", ".join(eight) + " and 1 more"
    )


def test_workspace_changes_against_the_sessions_newest_checkpoint(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 1)
    (workspace / "kept.py").write_text("a\n")
    (workspace / "edited.py").write_text("a\n")
    (workspace / "gone.py").write_text("a\n")
    made = checkpoints.create(store, "s", session_id=sid, now=T0 + 100)
    (workspace / "edited.py").write_text("b\n")
    (workspace / "gone.py").unlink()
    (workspace / "new.py").write_text("n\n")
    changes = conversation.workspace_changes(store, sid)
    assert changes["checkpoint"] == made["id"]
    assert changes["added"] == ["new.py"]
    assert changes["modified"] == ["edited.py"]
    assert changes["deleted"] == ["gone.py"]
    assert changes["branch"] is None


def test_workspace_changes_without_a_checkpoint_finds_files_written_since(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 1)
    old = workspace / "old.py"
    old.write_text("a\n")
    os.utime(old, (T0 - 100, T0 - 100))  # written before the session's last activity
    (workspace / "fresh.py").write_text("b\n")  # written now, after it
    changes = conversation.workspace_changes(store, sid)
    assert changes["checkpoint"] is None
    assert changes["modified"] == ["fresh.py"]
    assert changes["deleted"] == []


def test_workspace_changes_of_an_unknown_session_is_a_clear_error(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no session"):
        conversation.workspace_changes(store, "nope")


def test_resume_without_a_session_says_there_is_none(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no session to resume"):
        conversation.resume(store)


def test_resume_the_latest_session_carries_its_workspace_changes(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 1)
    (workspace / "fresh.py").write_text("b\n")
    loaded = conversation.resume(store)
    assert loaded["session"]["id"] == sid
    assert loaded["workspace_changes"]["modified"] == ["fresh.py"]
    by_ref = conversation.resume(store, sid)
    assert by_ref["session"]["id"] == sid


def test_rewind_to_a_later_checkpoint_brings_the_removed_turns_back(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 1)
    (workspace / "a.py").write_text("x = 1\n")
    early = checkpoints.create(store, "at one", session_id=sid, now=T0 + 100)
    for n in (2, 3):
        sessions.record_turn(store, sid, user_message=f"step {n}", started_at=T0 + n * 60)
    (workspace / "a.py").write_text("x = 3\n")
    late = checkpoints.create(store, "at three", session_id=sid, now=T0 + 300)
    first = conversation.rewind(store, early["id"], now=T0 + 400)
    assert first["turns_removed"] == 2
    assert first["detached_id"] == f"{sid}@rewound-{clock.iso(T0 + 400)}"
    event = store.query_one(
        "SELECT data FROM events WHERE kind = 'session.rewound' AND session_id = ?", (sid,)
    )
    assert event is not None
    assert json.loads(event[0]) == {"checkpoint": early["id"], "turn": 1, "turns_removed": 2}
    again = conversation.rewind(store, late["id"], now=T0 + 500)
    assert again["turn"] == 3 and again["turns_removed"] == 0
    turns = store.query("SELECT seq FROM session_turns WHERE session_id = ? ORDER BY seq", (sid,))
    assert [t[0] for t in turns] == [1, 2, 3]


def test_rewind_and_resume_say_what_to_do_instead(store: Store, workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    plain = checkpoints.create(store, "plain", now=T0)
    with pytest.raises(UsageError) as caught:
        conversation.rewind(store, plain["id"])
    assert caught.value.hint == "roll back its files without rewinding"
    with pytest.raises(NotFoundError) as missing:
        conversation.resume(store)
    assert missing.value.hint == "start one, or import one"


def _agent_branch(store: Store, sid: str, branch: str) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_sessions (session_id, agent, git_branch, started_at, last_seen)"
            " VALUES (?, 'claude-code', ?, ?, ?)",
            (sid, branch, T0, T0),
        )


def test_workspace_changes_name_a_branch_switched_since_the_session(
    store: Store, workspace: Path
) -> None:
    subprocess.run(["git", "init", "-q", "-b", "feature", str(workspace)], check=True)
    sid = _session_with_turns(store, 1)
    _agent_branch(store, sid, "main")
    changes = conversation.workspace_changes(store, sid)
    assert changes["branch"] == {"then": "main", "now": "feature"}
    assert "branch switched from main to feature" in conversation.changes_text(changes)
    other = _session_with_turns(store, 1, sid="s-2")
    _agent_branch(store, other, "feature")
    assert conversation.workspace_changes(store, other)["branch"] is None


def test_resume_by_id_carries_the_workspace_changes_too(store: Store, workspace: Path) -> None:
    sid = _session_with_turns(store, 1)
    _session_with_turns(store, 1, sid="s-newer")
    (workspace / "fresh.py").write_text("b\n")
    loaded = conversation.resume(store, sid)
    assert loaded["session"]["id"] == sid
    assert loaded["workspace_changes"]["modified"] == ["fresh.py"]


def test_a_rewound_session_is_marked_resumed_with_its_tokens_recounted(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 3)
    (workspace / "a.py").write_text("x = 1\n")
    early = checkpoints.create(store, "at three", session_id=sid, now=T0 + 200)
    sessions.record_turn(
        store, sid, user_message="step 4", input_tokens=999, output_tokens=99, started_at=T0 + 300
    )
    conversation.rewind(store, early["id"], now=T0 + 400)
    row = store.query_one(
        "SELECT last_action, turn_count, input_tokens, output_tokens, last_activity_at"
        " FROM sessions WHERE id = ?",
        (sid,),
    )
    assert row is not None
    # The three turns kept: 10 + 20 + 30 input tokens, 1 + 2 + 3 output tokens.
    assert tuple(row) == ("resume", 3, 60, 6, T0 + 400)


def test_rewind_removes_the_commands_run_after_the_checkpoint(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 1)
    with store.transaction() as db:
        for ts, command in ((T0 + 50, "pytest -q"), (T0 + 250, "make deploy")):
            db.execute(
                "INSERT INTO session_commands (session_id, command, exit_code, ts, failed)"
                " VALUES (?, ?, 1, ?, 1)",
                (sid, command, ts),
            )
    (workspace / "a.py").write_text("x = 1\n")
    early = checkpoints.create(store, "before deploy", session_id=sid, now=T0 + 100)
    conversation.rewind(store, early["id"], now=T0 + 400)
    kept = store.query("SELECT command FROM session_commands WHERE session_id = ?", (sid,))
    assert [r[0] for r in kept] == ["pytest -q"]


def test_rewinding_past_turns_no_saved_version_has_says_nothing_changed(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 3)
    (workspace / "a.py").write_text("x = 1\n")
    late = checkpoints.create(store, "at three", session_id=sid, now=T0 + 300)
    with store.transaction() as db:  # the turns trimmed by hand, and never saved
        db.execute("DELETE FROM session_turns WHERE session_id = ? AND seq > 1", (sid,))
        db.execute("UPDATE sessions SET turn_count = 1 WHERE id = ?", (sid,))
    with pytest.raises(UsageError, match="has fewer than 3 turns") as refused:
        conversation.rewind(store, late["id"], now=T0 + 400)
    assert refused.value.hint == "nothing was changed in the conversation"
    assert store.query_one("SELECT turn_count FROM sessions WHERE id = ?", (sid,))[0] == 1


def test_resume_of_a_session_only_a_saved_copy_has_restores_it_with_its_changes(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 2)
    sessions.save(store, sid, name="before-refactor", now=T0 + 500)
    with store.transaction() as db:  # its live records gone (deleted, or saved elsewhere)
        db.execute("DELETE FROM session_turns WHERE session_id = ?", (sid,))
        db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
    (workspace / "fresh.py").write_text("b\n")
    loaded = conversation.resume(store, "before-refactor")
    assert loaded["session"]["id"] == sid
    assert [t["user_message"] for t in loaded["turns"]] == ["step 1", "step 2"]
    assert loaded["workspace_changes"]["modified"] == ["fresh.py"]


def test_files_written_a_second_after_the_session_count_as_changed(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 1)
    last = store.query_one("SELECT last_activity_at FROM sessions WHERE id = ?", (sid,))[0]
    just_after = workspace / "just_after.py"
    just_after.write_text("a\n")
    os.utime(just_after, (last + 1, last + 1))
    at_the_time = workspace / "at_the_time.py"
    at_the_time.write_text("b\n")
    os.utime(at_the_time, ns=(int(last * 1e9), int(last * 1e9)))
    assert conversation.workspace_changes(store, sid)["modified"] == ["just_after.py"]


def test_workspace_changes_follow_the_settings_given(store: Store, workspace: Path) -> None:
    from memory_core import config

    sid = _session_with_turns(store, 1)
    (workspace / "app.py").write_text("a\n")
    (workspace / "debug.log").write_text("b\n")
    settings = config.load(workspace, overrides={"watch.exclude": ["*.log"]})
    assert conversation.workspace_changes(store, sid, settings=settings)["modified"] == ["app.py"]
    assert conversation.workspace_changes(store, sid)["modified"] == ["app.py", "debug.log"]


def test_rewinding_to_a_checkpoint_of_a_closed_session_opens_it_again(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 2)
    sessions.close(store, sid, now=T0 + 200)
    (workspace / "a.py").write_text("x = 1\n")
    closed = checkpoints.create(store, "after the session", session_id=sid, now=T0 + 300)
    assert _saved(store, closed["id"])[1]["status"] == "closed"  # type: ignore[index]
    conversation.rewind(store, closed["id"], now=T0 + 400)
    row = store.query_one("SELECT status, ended_at FROM sessions WHERE id = ?", (sid,))
    assert tuple(row) == ("active", None)  # work goes on from the checkpoint


def test_the_version_saved_before_a_rewind_is_the_rewound_sessions(
    store: Store, workspace: Path
) -> None:
    sid = _session_with_turns(store, 2)
    (workspace / "a.py").write_text("x = 1\n")
    early = checkpoints.create(store, "at two", session_id=sid, now=T0 + 200)
    # The latest session is another one, active after the checkpoint.
    newer = _session_with_turns(store, 1, sid="s-newer")
    sessions.record_turn(store, newer, user_message="later", started_at=T0 + 350)
    assert sessions.latest(store)["id"] == newer  # type: ignore[index]
    result = conversation.rewind(store, early["id"], now=T0 + 400)
    saved = store.query("SELECT session_id, saved_at FROM saved_sessions")
    assert [(r[0], clock.iso(r[1])) for r in saved] == [(sid, result["saved_before_rewind"])]


def test_what_rewind_and_workspace_changes_say_when_they_cannot(
    store: Store, workspace: Path
) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    plain = checkpoints.create(store, "plain", now=T0)
    with pytest.raises(UsageError) as refused:
        conversation.rewind(store, plain["id"])
    assert refused.value.message == (
        f"checkpoint {plain['id']} was not taken during a session, so there is no conversation"
        " to rewind"
    )
    with pytest.raises(NotFoundError) as unknown:
        conversation.workspace_changes(store, "nope")
    assert unknown.value.hint == "see `engram session list`"


def test_resume_measures_the_changes_with_the_settings_given(store: Store, workspace: Path) -> None:
    from memory_core import config

    sid = _session_with_turns(store, 1)
    (workspace / "app.py").write_text("a\n")
    (workspace / "debug.log").write_text("b\n")
    settings = config.load(workspace, overrides={"watch.exclude": ["*.log"]})
    loaded = conversation.resume(store, sid, settings=settings)
    assert loaded["workspace_changes"]["modified"] == ["app.py"]
