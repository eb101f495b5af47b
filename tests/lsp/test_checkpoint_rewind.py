"""engram.checkpoint.rollback {rewind: true} over the real server: the files and the conversation
go back to the checkpoint's turn."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from memory_core import sessions
from memory_core.store import Store
from tests.lsp.conftest import execute


async def test_rollback_with_rewind_takes_the_session_back_to_the_checkpoints_turn(
    client: LanguageClient,
) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "app.py").write_text("VERSION = 2\n")
    store = Store.open_or_init(folder)
    try:
        sessions.start(store, session_id="S-editor", agent="claude-code")
        for number in (1, 2):
            sessions.record_turn(store, "S-editor", user_message=f"step {number}")
    finally:
        store.close()
    made = await execute(client, "engram.checkpoint.create", {"name": "at two"})
    assert made["turn_number"] == 2 and made["session_id"] == "S-editor"

    store = Store.open(folder)
    try:
        sessions.record_turn(store, "S-editor", user_message="step 3")
        sessions.set_summary(store, "S-editor", open_items=["after the checkpoint"])
    finally:
        store.close()
    (folder / "app.py").write_text("VERSION = 3\n")

    result = await execute(
        client, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True, "rewind": True}
    )
    assert result["done"] and result["rewound"]["turn"] == 2
    assert (folder / "app.py").read_text() == "VERSION = 2\n"
    store = Store.open(folder)
    try:
        session = sessions.get(store, "S-editor")
        assert session["turns"] == 2 and session["summary"]["open_items"] == []
    finally:
        store.close()


async def test_rewind_of_a_checkpoint_without_a_session_is_refused(
    client: LanguageClient,
) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "app.py").write_text("x = 1\n")
    made = await execute(client, "engram.checkpoint.create")
    assert made["turn_number"] is None
    (folder / "app.py").write_text("x = 2\n")
    with pytest.raises(JsonRpcException, match="no conversation to rewind"):
        await execute(
            client,
            "engram.checkpoint.rollback",
            {"id": made["id"], "confirm": True, "rewind": True},
        )
    assert (folder / "app.py").read_text() == "x = 2\n"  # nothing written
