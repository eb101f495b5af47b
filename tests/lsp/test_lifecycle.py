"""The server's frame: folders and stores, settings, dynamic watching, errors that never crash it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.conftest import run_cli
from tests.lsp.conftest import (
    CLIENTS,
    attach_handlers,
    execute,
    initialize_params,
    make_project,
    wait_for,
)

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "lsp_server"])


@pytest.mark.parametrize("editor", CLIENTS)
async def test_a_folder_that_is_no_project_gets_no_store_and_the_user_is_told(
    tmp_path: Path, editor: str
) -> None:
    plain = (tmp_path / "downloads").resolve()
    plain.mkdir()
    client = await SERVER.start()
    attach_handlers(client)
    try:
        await client.initialize_session(initialize_params(client_capabilities(editor), [plain]))
        told = await wait_for(
            lambda: [m for m in client.messages if "engram is off in" in m.message]
        )
        assert told[0].type == types.MessageType.Info and "engram init" in told[0].message
        assert not (plain / ".engram").exists()
        # Once initialised it is a workspace like any other.
        assert run_cli("init", cwd=plain).code == 0
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_each_folder_gets_its_own_store(client: LanguageClient) -> None:
    status = await execute(client, "engram.status")
    assert status["root"] == str(client.folder)
    assert (client.folder / ".engram" / "engram.db").is_file()


async def test_unknown_command_is_an_error_response_and_the_server_keeps_serving(
    client: LanguageClient,
) -> None:
    with pytest.raises(JsonRpcException, match="not defined"):
        await execute(client, "engram.no.such.command")
    with pytest.raises(JsonRpcException, match="one JSON object"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="engram.status", arguments=["not an object"])
        )
    status = await execute(client, "engram.status")
    assert status["schema_version"] >= 1


async def test_watched_files_are_registered_dynamically_when_the_client_allows(
    client: LanguageClient,
) -> None:
    caps = client.capabilities
    allows = bool(
        caps
        and caps.workspace
        and caps.workspace.did_change_watched_files
        and caps.workspace.did_change_watched_files.dynamic_registration
    )
    if allows:
        registrations = await wait_for(lambda: client.registrations)
        assert [r.method for r in registrations] == ["workspace/didChangeWatchedFiles"]
    else:
        await execute(client, "engram.status")
        assert client.registrations == []


@pytest.mark.parametrize("editor", CLIENTS)
async def test_two_workspace_folders_get_two_stores(tmp_path: Path, editor: str) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    make_project(first)
    make_project(second)
    client = await SERVER.start()
    attach_handlers(client)
    try:
        await client.initialize_session(
            initialize_params(client_capabilities(editor), [first, second])
        )
        one = await execute(client, "engram.status", {"workspace": first.as_uri()})
        two = await execute(client, "engram.status", {"workspace": str(second)})
        assert (one["store"], two["store"]) == (str(first / ".engram"), str(second / ".engram"))
        assert (first / ".engram" / "engram.db").is_file() and (
            second / ".engram" / "engram.db"
        ).is_file()
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.parametrize("editor", CLIENTS)
async def test_a_setting_of_the_wrong_type_is_reported_and_its_default_used(
    tmp_path: Path, editor: str
) -> None:
    client = await SERVER.start()
    attach_handlers(client)
    client.set_configuration(
        {"gotchas": {"threshold": "three"}, "drift": {"window_minutes": 10}}, section="engram"
    )
    try:
        await client.initialize_session(
            initialize_params(client_capabilities(editor), [make_project(tmp_path / "ws")])
        )
        warning = await wait_for(
            lambda: [m for m in client.messages if "gotchas.threshold" in m.message]
        )
        assert warning[0].type == types.MessageType.Warning
        assert "default 3" in warning[0].message
        status = await execute(client, "engram.status")
        assert any("gotchas.threshold" in p for p in status["settings_problems"])
    finally:
        await client.shutdown_session()
        await client.stop()
