"""Sessions from the editor, on the server the real `engram lsp` builds, in this process: list,
save under a name (asking before taking another session's), restore reopening its files, delete
with a question, summary, history and metrics, the crash prompt at start and the autosave loop
(test_sessions.py drives the same over stdio with real clients).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lsp_server.features import checkpoints as lsp_checkpoints
from lsp_server.features import sessions as lsp_sessions
from lsp_server.server import EngramServer, FolderState
from memory_core import config, sessions
from tests.lsp.in_process import Client, client, run


@pytest.fixture
def seen(server: EngramServer, state: FolderState) -> Client:
    return client(server)


def record(state: FolderState, sid: str = "agent-1", files: int = 1) -> None:
    """What the agent hooks would have recorded."""
    (state.root / "src").mkdir(exist_ok=True)
    sessions.start(state.store, session_id=sid, agent="claude-code")
    sessions.record_turn(
        state.store,
        sid,
        user_message="add logging",
        assistant_response="done",
        tool_calls=[{"tool": "Edit", "ok": True}],
        input_tokens=100,
        output_tokens=50,
    )
    sessions.record_turn(state.store, sid, user_message="run tests", input_tokens=40)
    for n in range(files):
        rel = f"src/m{n}.py"
        (state.root / rel).write_text("x\n")
        sessions.record_file_modified(state.store, sid, rel)


async def test_sessions_are_listed_with_their_history_and_metrics(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    record(state)
    listed = await run(server, "engram.session.list")
    assert [s["id"] for s in listed["sessions"]] == ["agent-1"]
    assert "agent-1" in listed["markdown"]
    last = await run(server, "engram.session.history", {"last": 1})
    assert last["id"] == "agent-1"
    assert [t["user_message"] for t in last["turns"]] == ["run tests"]
    assert "run tests" in last["markdown"]
    every = await run(server, "engram.session.history", {"id": "agent-1", "last": 0})
    assert len(every["turns"]) in (0, 2)  # `last: 0` is a whole number: accepted
    metrics = await run(server, "engram.session.metrics", {"id": "agent-1"})
    assert (metrics["turns"], metrics["total_tokens"], metrics["files_modified"]) == (2, 190, 1)
    assert metrics["markdown"]
    latest = await run(server, "engram.session.metrics")  # the latest by default
    assert latest["turns"] == 2


WRONG_SESSION_ARGUMENTS = [
    ("engram.session.history", {"last": -1}, "`last` must be"),
    ("engram.session.save", {"name": "  "}, "`name` must be non-empty text"),
    ("engram.session.delete", {}, "engram.session.delete needs `id`"),
    ("engram.session.metrics", {"id": "nope"}, "no session 'nope'"),
]


async def test_wrong_arguments_and_unknown_sessions_are_clear_errors(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    for command, args, message in WRONG_SESSION_ARGUMENTS:
        record(state)
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await run(server, command, args)
        assert message in raised.value.message, args


async def test_no_session_yet_is_an_empty_state(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await run(server, "engram.session.history")
    assert "no session recorded in this workspace yet" in raised.value.message
    assert raised.value.data == {"code": "MEM_E005", "empty": True}


async def test_saving_under_a_taken_name_asks_before_overwriting(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    record(state, "first")
    record(state, "second")
    saved = await run(server, "engram.session.save", {"id": "first", "name": "release"})
    assert saved["name"] == "release" and Path(saved["export_path"]).is_file()
    assert "quota_warning" not in saved and seen.messages == []
    seen.answer = None
    refused = await run(server, "engram.session.save", {"id": "second", "name": "release"})
    assert refused == {"done": False, "reason": "cancelled"}
    [question] = seen.questions
    assert question.message == (
        "The session name 'release' belongs to session first. Overwrite it?"
    )
    assert [a.title for a in question.actions] == ["Overwrite", "Cancel"]
    seen.answer = "Overwrite"
    taken = await run(server, "engram.session.save", {"id": "second", "name": "release"})
    assert (taken["id"], taken["name"]) == ("second", "release")
    # `overwrite: true` does not ask.
    again = await run(
        server, "engram.session.save", {"id": "first", "name": "release", "overwrite": True}
    )
    assert again["id"] == "first" and len(seen.questions) == 2


async def test_a_save_past_the_quota_warns_in_a_message_and_in_the_answer(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    record(state)
    state.settings = config.load(state.root, overrides={"sessions.quota_bytes": 1000})
    saved = await run(server, "engram.session.save", {"id": "agent-1"})
    warning = saved["quota_warning"]
    assert warning
    assert [(m.type, m.message) for m in seen.messages] == [(types.MessageType.Warning, warning)]


async def test_restore_reopens_the_sessions_files_without_taking_focus(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    record(state, files=12)
    # Gone since: not reopened (one of the two is among the first ten, in either order).
    (state.root / "src" / "m0.py").unlink()
    (state.root / "src" / "m11.py").unlink()
    sessions.close(state.store, "agent-1")
    restored = await run(server, "engram.session.restore", {"id": "agent-1"})
    assert restored["session"]["status"] == "active"
    assert len(restored["files"]) == 12
    # At most ten of them, and only those still there.
    gone = {"src/m0.py", "src/m11.py"}
    assert restored["opened"] == [f for f in restored["files"][:10] if f not in gone]
    assert len(seen.shown) == 9 and not any(s.take_focus for s in seen.shown)
    shown = restored["markdown"]
    assert shown.startswith("# Session agent-1")
    # Where the session stood and what changed since, then its turns.
    assert "## Turns" in shown and "**You:** add logging" in shown
    assert shown.index("## Since the session") < shown.index("## Turns")


async def test_restore_takes_the_session_named_not_the_latest(
    server: EngramServer, state: FolderState
) -> None:
    seen = client(server, progress=True)
    record(state, "older")
    record(state, "newer")
    latest = await run(server, "engram.session.restore")
    assert latest["session"]["id"] == "newer"
    assert ("begin", seen.progress[0][1], "engram: restoring the session") in seen.progress
    restored = await run(server, "engram.session.restore", {"id": "older"})
    assert restored["session"]["id"] == "older"


async def test_restore_in_an_editor_that_cannot_open_documents_opens_none(
    server: EngramServer, state: FolderState
) -> None:
    seen = client(server, show_document=False)
    record(state)
    restored = await run(server, "engram.session.restore", {"id": "agent-1"})
    assert restored["opened"] == [] and seen.shown == []
    assert restored["files"] == ["src/m0.py"]


async def test_a_document_the_editor_refuses_or_fails_to_open_is_not_said_opened(
    server: EngramServer, state: FolderState, seen: Client, caplog: pytest.LogCaptureFixture
) -> None:
    record(state)
    seen.shows = False
    assert (await run(server, "engram.session.restore", {"id": "agent-1"}))["opened"] == []

    async def failing(params: types.ShowDocumentParams) -> None:
        raise RuntimeError("the client went away")

    server.window_show_document_async = failing  # type: ignore[method-assign]
    assert (await run(server, "engram.session.restore", {"id": "agent-1"}))["opened"] == []
    assert f"window/showDocument failed for {state.root / 'src' / 'm0.py'}" in caplog.messages


async def test_delete_asks_unless_confirmed(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    record(state)
    seen.answer = "Cancel"
    cancelled = await run(server, "engram.session.delete", {"id": "agent-1"})
    assert cancelled == {"done": False, "reason": "cancelled", "id": "agent-1"}
    [question] = seen.questions
    assert question.message == ("Delete session agent-1 (2 turns) and its saved copies?")
    assert [a.title for a in question.actions] == ["Delete", "Cancel"]
    assert len((await run(server, "engram.session.list"))["sessions"]) == 1
    seen.answer = "Delete"
    deleted = await run(server, "engram.session.delete", {"id": "agent-1"})
    assert deleted["done"] is True
    assert (await run(server, "engram.session.list"))["sessions"] == []
    record(state, "again")
    direct = await run(server, "engram.session.delete", {"id": "again", "confirm": True})
    assert direct["done"] is True and len(seen.questions) == 2


async def test_the_summary_is_written_and_shown_unless_the_client_renders_it(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    record(state)
    result = await run(server, "engram.session.summary")
    assert result["id"] == "agent-1" and "## Overview" in result["markdown"]
    assert Path(result["path"]).read_text().startswith('---\nsession_id: "agent-1"')
    assert result["shown"] is True
    [shown] = seen.shown
    assert shown.uri.endswith(".md") and shown.take_focus is True
    quiet = await run(server, "engram.session.summary", {"id": "agent-1", "show": False})
    assert quiet["shown"] is False and len(seen.shown) == 1


# at start: a session that stopped without ending, and the autosave


def crashed(state: FolderState, sid: str = "stopped") -> None:
    an_hour_ago = time.time() - 3600
    sessions.start(state.store, session_id=sid, agent="claude-code", now=an_hour_ago)
    sessions.record_turn(state.store, sid, user_message="half done", started_at=an_hour_ago)


async def start(server: EngramServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `initialized` runs, with the autosave loop left out (tested on its own)."""

    async def no_autosave(ls: EngramServer) -> None:
        return None

    monkeypatch.setattr(lsp_sessions, "_autosave_loop", no_autosave)
    await lsp_sessions.started(server)
    while lsp_checkpoints._BACKGROUND:
        await asyncio.gather(*list(lsp_checkpoints._BACKGROUND))


@pytest.mark.parametrize("choice", ["Continue", "Discard"])
async def test_a_crashed_session_is_offered_the_four_resume_choices(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    monkeypatch: pytest.MonkeyPatch,
    choice: str,
) -> None:
    crashed(state)
    seen.answer = choice
    await start(server, monkeypatch)
    [question] = seen.questions
    assert question.type == types.MessageType.Warning
    assert question.message.startswith(
        "engram: session stopped (claude-code) stopped without ending at "
    )
    assert question.message.endswith(". What should happen to it?")
    assert [a.title for a in question.actions] == ["Continue", "Review", "Restart", "Discard"]
    session = sessions.get(state.store, "stopped")
    if choice == "Discard":
        assert session["end_reason"] == "discarded"
    else:
        assert session["status"] == "active" and session["end_reason"] != "discarded"
    assert seen.shown == [] and seen.messages == []


async def test_review_shows_the_sessions_summary_and_restart_says_which_session_carries_on(
    server: EngramServer, state: FolderState, seen: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashed(state)
    seen.answer = "Review"
    await start(server, monkeypatch)
    [shown] = seen.shown
    assert "stopped" in shown.uri and shown.take_focus is True
    seen.answer = "Restart"
    await start(server, monkeypatch)
    [message] = seen.messages
    assert message.message.startswith("engram: started session ")
    assert sessions.get(state.store, "stopped")["status"] == "closed"


async def test_a_dismissed_prompt_leaves_the_session_as_it_was(
    server: EngramServer, state: FolderState, seen: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashed(state)
    seen.answer = None
    await start(server, monkeypatch)
    assert len(seen.questions) == 1
    assert [s["id"] for s in sessions.crashed(state.store)] == ["stopped"]


async def test_no_prompt_without_a_crashed_session_and_a_broken_store_is_skipped(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    record(state)  # active and recent: not a crash
    await start(server, monkeypatch)
    assert seen.questions == []

    def broken(store: Any) -> Any:
        raise RuntimeError("database disk image is malformed")

    monkeypatch.setattr(lsp_sessions.sessions, "crashed", broken)
    await start(server, monkeypatch)
    assert seen.questions == [] and "crash detection failed" in caplog.text


async def test_the_autosave_loop_saves_each_folder_and_survives_a_failure(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    saved: list[tuple[Path, float, int]] = []
    rounds = asyncio.Event()
    loop = asyncio.get_running_loop()

    def autosave(store: Any, *, interval_minutes: float, quota_bytes: int) -> list[str]:
        saved.append((store.root, interval_minutes, quota_bytes))
        if len(saved) == 1:
            raise RuntimeError("disk full")
        return []

    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await real_sleep(0)

    folded: list[Path] = []

    def fold_spool(store: Any) -> None:
        # Runs on the server's worker thread, after each round's autosave: the second round is
        # over when its fold is (an event set by the autosave let the test look before it).
        folded.append(store.root)
        if len(folded) == 2:
            loop.call_soon_threadsafe(rounds.set)

    monkeypatch.setattr("memory_core.agents.hooks.fold_spool", fold_spool)
    monkeypatch.setattr(lsp_sessions.sessions, "autosave", autosave)
    monkeypatch.setattr(lsp_sessions.asyncio, "sleep", sleep)
    task = asyncio.ensure_future(lsp_sessions._autosave_loop(server))
    try:
        await asyncio.wait_for(rounds.wait(), 10)
    finally:
        task.cancel()
    assert slept[0] == lsp_sessions.AUTOSAVE_CHECK_SECONDS == 60.0
    assert saved[0] == (
        state.root,
        float(state.settings["sessions.autosave_minutes"]),
        int(state.settings["sessions.quota_bytes"]),
    )
    assert "autosave failed in" in caplog.text
    # Hook events spooled while the store was busy are recorded too, even after a failure.
    assert folded[:2] == [state.root, state.root]
