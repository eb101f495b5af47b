"""engram.snapshot.capture over the real server carries the task in progress (AIOS storyId and
subtask): the session's by default, or what the editor passes."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from memory_core import session_state, sessions
from memory_core.store import Store
from tests.lsp.conftest import execute


async def test_snapshots_carry_the_sessions_task_or_the_given_one(client: LanguageClient) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    plain = await execute(client, "engram.snapshot.capture", {"note": "no session yet"})
    assert (plain["story_id"], plain["subtask"]) == (None, None)  # the control
    store = Store.open_or_init(folder)
    try:
        sessions.start(store, session_id="S-task", agent="claude-code")
        session_state.update(store, "S-task", story="MIS-3", subtask="runner")
    finally:
        store.close()
    snap = await execute(client, "engram.snapshot.capture", {"note": "mid story"})
    assert (snap["story_id"], snap["subtask"]) == ("MIS-3", "runner")
    given = await execute(client, "engram.snapshot.capture", {"story": "MIS-7", "subtask": "1"})
    assert (given["story_id"], given["subtask"]) == ("MIS-7", "1")
    listed = await execute(client, "engram.snapshot.list")
    assert [s["story_id"] for s in listed["snapshots"]][:2] == ["MIS-7", "MIS-3"]
    with pytest.raises(JsonRpcException, match="story must be text"):
        await execute(client, "engram.snapshot.capture", {"story": 3})
