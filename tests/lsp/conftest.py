"""A real client for `engram lsp` (pytest-lsp over stdio), with VS Code's and Neovim's capabilities.

pytest-lsp fails a test when the server sends a request the client has no handler for, so the
client here answers every request engram may send, and records them for assertions:
`client.registrations`, `client.applied_edits`, `client.message_requests` (answered with
`client.message_request_answer`, a button title or None) and pytest-lsp's own
`client.shown_documents`, `client.messages`, `client.diagnostics`.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import Workspace
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_server.features import gotchas as lsp_gotchas
from lsp_server.server import EngramServer, FolderState
from lsp_server.setup import create_server
from tests.conftest import put_initialised_store

SERVER_COMMAND = [sys.executable, "-m", "lsp_server"]
CLIENTS = ["visual-studio-code", "neovim"]


def attach_handlers(client: LanguageClient) -> None:
    client.registrations = []  # type: ignore[attr-defined]
    client.applied_edits = []  # type: ignore[attr-defined]
    client.message_requests = []  # type: ignore[attr-defined]
    client.message_request_answer = None  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_UNREGISTER_CAPABILITY)
    def unregister_capability(params: types.UnregistrationParams) -> None:
        return None

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        client.applied_edits.append(params)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def show_message_request(
        params: types.ShowMessageRequestParams,
    ) -> types.MessageActionItem | None:
        client.message_requests.append(params)  # type: ignore[attr-defined]
        answer = client.message_request_answer  # type: ignore[attr-defined]
        return types.MessageActionItem(title=answer) if answer else None

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params: None) -> None:
        return None

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_hint_refresh(params: None) -> None:
        return None


def initialize_params(
    capabilities: types.ClientCapabilities, folders: list[Path]
) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=capabilities,
        root_uri=folders[0].as_uri() if folders else None,
        workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
    )


def make_project(root: Path) -> Path:
    """A project folder: a git repository (the language server makes a store only in one, or
    where `engram init` made it)."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root.resolve()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return make_project(tmp_path / "ws")


@pytest_lsp.fixture(params=CLIENTS, config=ClientServerConfig(server_command=SERVER_COMMAND))
async def client(request: pytest.FixtureRequest, lsp_client: LanguageClient, folder: Path) -> Any:
    """A client initialized on one workspace folder, with the named editor's capabilities."""
    attach_handlers(lsp_client)
    lsp_client.editor = request.param  # type: ignore[attr-defined]
    lsp_client.folder = folder  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        initialize_params(client_capabilities(request.param), [folder])
    )
    yield
    await lsp_client.shutdown_session()


async def wait_for(
    predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05
) -> Any:
    """Poll until `predicate()` is truthy and return it; fail the test on timeout."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
        await asyncio.sleep(interval)


async def execute(client: LanguageClient, command: str, args: dict[str, Any] | None = None) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=[args or {}])
    )


def open_document(
    client: LanguageClient, path: Path, text: str | None = None, language: str = "python"
) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id=language,
                version=1,
                text=text if text is not None else path.read_text(),
            )
        )
    )
    return uri


async def diagnostics_for(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    """The document's diagnostics the way this client gets them: pulled, or the last pushed."""
    caps = client.capabilities
    pulls = bool(
        caps
        and caps.text_document
        and caps.text_document.diagnostic
        and caps.workspace
        and caps.workspace.diagnostics
        and caps.workspace.diagnostics.refresh_support
    )
    if pulls:
        report = await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        return list(report.items)
    await asyncio.sleep(0.4)  # past the push debounce
    return list(client.diagnostics.get(uri, []))


# In process: the server object without a client, for tests that call a feature directly (they
# can catch what a test over stdio cannot, mutants among them).


@pytest.fixture
def server() -> Iterator[EngramServer]:
    made = create_server()
    yield made
    made.close_all()


@pytest.fixture
def state(server: EngramServer, workspace: Path, initialised_store: Path) -> FolderState:
    """The workspace (a git repository) as one of the server's folders, as `initialize` sets it
    (its new store copied from one made once, rather than migrated again for every test)."""
    (workspace / ".git").mkdir()
    put_initialised_store(initialised_store, workspace)
    server.protocol._workspace = Workspace(
        from_fs_path(str(workspace)),
        types.TextDocumentSyncKind.Incremental,
        [],
        types.PositionEncodingKind.Utf16,
    )
    folder = server.add_folder(workspace)
    assert folder is not None
    lsp_gotchas.folder_of(folder).rebuild()
    return folder
