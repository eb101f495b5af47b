"""engram.session.*: list, save (unique names), restore, delete with confirmation, summary, history, metrics."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from memory_core import sessions
from memory_core.store import Store
from tests.lsp.conftest import (
    CLIENTS,
    SERVER_COMMAND,
    attach_handlers,
    execute,
    initialize_params,
    wait_for,
)


def _record(folder: Path, sid: str = "agent-1") -> None:
    """What the agent hooks would have recorded, written by another process's connection."""
    (folder / "src").mkdir(exist_ok=True)
    (folder / "src" / "main.py").write_text("print('x')\n")
    with Store.open_or_init(folder) as store:
        sessions.start(store, session_id=sid, agent="claude-code")
        sessions.record_turn(
            store,
            sid,
            user_message="add logging",
            assistant_response="done",
            tool_calls=[{"tool": "Edit", "ok": True}],
            input_tokens=100,
            output_tokens=50,
        )
        sessions.record_turn(
            store, sid, user_message="run tests", input_tokens=40, output_tokens=10
        )
        sessions.record_file_modified(store, sid, "src/main.py")
        sessions.record_command(store, sid, "pytest", exit_code=1)


def _supports_show_document(client: LanguageClient) -> bool:
    caps = client.capabilities
    return bool(
        caps and caps.window and caps.window.show_document and caps.window.show_document.support
    )


async def test_list_history_and_metrics(client: LanguageClient) -> None:
    _record(client.folder)  # type: ignore[attr-defined]
    listed = await execute(client, "engram.session.list")
    assert [s["id"] for s in listed["sessions"]] == ["agent-1"]
    history = await execute(client, "engram.session.history", {"last": 1})
    assert history["id"] == "agent-1" and [t["user_message"] for t in history["turns"]] == [
        "run tests"
    ]
    metrics = await execute(client, "engram.session.metrics", {"id": "agent-1"})
    assert metrics["turns"] == 2 and metrics["total_tokens"] == 200
    assert metrics["files_modified"] == 1 and metrics["commands_failed"] == 1
    assert metrics["success_rate"] == 1.0


async def test_save_with_a_taken_name_asks_before_overwriting(client: LanguageClient) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    _record(folder, "first")
    _record(folder, "second")
    saved = await execute(client, "engram.session.save", {"id": "first", "name": "release"})
    assert saved["name"] == "release" and Path(saved["export_path"]).is_file()

    client.message_request_answer = None  # type: ignore[attr-defined]
    refused = await execute(client, "engram.session.save", {"id": "second", "name": "release"})
    assert refused == {"done": False, "reason": "cancelled"}
    assert "release" in client.message_requests[0].message  # type: ignore[attr-defined]

    client.message_request_answer = "Overwrite"  # type: ignore[attr-defined]
    taken = await execute(client, "engram.session.save", {"id": "second", "name": "release"})
    assert taken["id"] == "second" and taken["name"] == "release"


async def test_restore_reopens_the_session_documents(client: LanguageClient) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    _record(folder)
    with Store.open(folder) as store:
        sessions.close(store, "agent-1")
    restored = await execute(client, "engram.session.restore", {"id": "agent-1"})
    assert restored["session"]["status"] == "active"
    assert restored["files"] == ["src/main.py"]
    if _supports_show_document(client):
        assert restored["opened"] == ["src/main.py"]
        assert any(d.uri.endswith("/src/main.py") for d in client.shown_documents)
    else:
        assert restored["opened"] == []
    # What the person reads: where the session stood and what changed since, not only turns.
    shown = restored["markdown"]
    assert shown.startswith("# Session agent-1")
    assert "claude-code session, active, 2 turns" in shown
    assert "## Since the session" in shown
    assert "## Turns" in shown and "**You:** add logging" in shown
    assert shown.index("## Since the session") < shown.index("## Turns")


async def test_delete_asks_and_does_nothing_unless_confirmed(client: LanguageClient) -> None:
    _record(client.folder)  # type: ignore[attr-defined]
    client.message_request_answer = "Cancel"  # type: ignore[attr-defined]
    cancelled = await execute(client, "engram.session.delete", {"id": "agent-1"})
    assert cancelled["done"] is False and cancelled["reason"] == "cancelled"
    assert len(client.message_requests) == 1  # type: ignore[attr-defined]
    assert len((await execute(client, "engram.session.list"))["sessions"]) == 1

    client.message_request_answer = "Delete"  # type: ignore[attr-defined]
    deleted = await execute(client, "engram.session.delete", {"id": "agent-1"})
    assert deleted["done"] is True
    assert (await execute(client, "engram.session.list"))["sessions"] == []

    _record(client.folder, "again")  # type: ignore[attr-defined]
    direct = await execute(client, "engram.session.delete", {"id": "again", "confirm": True})
    assert direct["done"] is True and len(client.message_requests) == 2  # type: ignore[attr-defined]


async def test_summary_is_written_and_shown(client: LanguageClient) -> None:
    _record(client.folder)  # type: ignore[attr-defined]
    result = await execute(client, "engram.session.summary")
    assert result["id"] == "agent-1"
    assert "## Overview" in result["markdown"] and "`src/main.py`" in result["markdown"]
    assert Path(result["path"]).read_text().startswith('---\nsession_id: "agent-1"')
    assert result["shown"] is _supports_show_document(client)
    if result["shown"]:
        assert any(d.uri.endswith(".md") for d in client.shown_documents)


async def test_unknown_session_and_bad_arguments_are_clear_errors(client: LanguageClient) -> None:
    with pytest.raises(JsonRpcException, match="no session 'nope'"):
        await execute(client, "engram.session.metrics", {"id": "nope"})
    with pytest.raises(JsonRpcException, match="`last` must be"):
        await execute(client, "engram.session.history", {"last": "many"})
    assert "sessions" in await execute(client, "engram.session.list")


@pytest.mark.parametrize("editor", CLIENTS)
async def test_a_crashed_session_is_offered_the_four_resume_choices(
    tmp_path: Path, editor: str
) -> None:
    import time

    folder = tmp_path / "ws"
    folder.mkdir()
    with Store.open_or_init(folder) as store:
        an_hour_ago = time.time() - 3600
        sessions.start(store, session_id="stopped", agent="claude-code", now=an_hour_ago)
        sessions.record_turn(store, "stopped", user_message="half done", started_at=an_hour_ago)
    client = await ClientServerConfig(server_command=SERVER_COMMAND).start()
    attach_handlers(client)
    client.message_request_answer = "Discard"  # type: ignore[attr-defined]
    try:
        await client.initialize_session(initialize_params(client_capabilities(editor), [folder]))
        (request,) = await wait_for(lambda: client.message_requests)  # type: ignore[attr-defined]
        assert "stopped without ending" in request.message
        assert [a.title for a in request.actions] == ["Continue", "Review", "Restart", "Discard"]

        async def discarded() -> bool:
            listed = await execute(client, "engram.session.list")
            return bool(listed["sessions"][0]["end_reason"] == "discarded")

        for _ in range(50):
            if await discarded():
                break
            await asyncio.sleep(0.1)
        assert await discarded()
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_no_session_yet_is_an_empty_state_not_a_failure(client: LanguageClient) -> None:
    """Editors show "no session recorded yet" as information: the error says it is empty."""
    with pytest.raises(JsonRpcException, match="no session recorded in this workspace yet") as got:
        await execute(client, "engram.session.summary", {"show": False})
    assert got.value.data == {"code": "MEM_E005", "empty": True}
    # A failure stays a failure: a session named that does not exist is not an empty state.
    _record(client.folder)  # type: ignore[attr-defined]
    with pytest.raises(JsonRpcException, match="no session 'nope'") as missing:
        await execute(client, "engram.session.summary", {"id": "nope", "show": False})
    assert missing.value.data == {"code": "MEM_E005", "empty": False}
