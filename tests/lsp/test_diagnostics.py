"""How diagnostics reach each client: pulled only by clients that can be told to pull again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from tests.conftest import run_cli
from tests.lsp.conftest import attach_handlers, initialize_params, open_document, wait_for

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "lsp_server"])

PULL_ONLY = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        diagnostic=types.DiagnosticClientCapabilities()
    )
)
PULL_AND_REFRESH = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        diagnostic=types.DiagnosticClientCapabilities()
    ),
    workspace=types.WorkspaceClientCapabilities(
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    ),
)


@pytest.mark.parametrize(
    ("capabilities", "pulled"),
    [(PULL_ONLY, False), (PULL_AND_REFRESH, True)],
    ids=["pull-only", "pull+refresh"],
)
async def test_pull_is_advertised_only_with_refresh_support(
    tmp_path: Path, capabilities: types.ClientCapabilities, pulled: bool
) -> None:
    assert run_cli("gotcha", "add", "Naive utcnow", "--pattern", "utcnow()", cwd=tmp_path).code == 0
    (tmp_path / "a.py").write_text("now = datetime.utcnow()\n")
    client = await SERVER.start()
    attach_handlers(client)
    client.diagnostic_refresh_count = 0
    try:
        result = await client.initialize_session(initialize_params(capabilities, [tmp_path]))
        assert (result.capabilities.diagnostic_provider is not None) is pulled
        uri = open_document(client, tmp_path / "a.py")
        if pulled:
            report = await client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            items = report.items
            if not items:  # the gotcha index may still be loading: the server asks for a pull
                await wait_for(lambda: client.diagnostic_refresh_count > 0)
                report = await client.text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(
                        text_document=types.TextDocumentIdentifier(uri=uri)
                    )
                )
                items = report.items
        else:
            items = await wait_for(lambda: client.diagnostics.get(uri))
        assert [d.message.startswith("Naive utcnow") for d in items] == [True]
    finally:
        await client.shutdown_session()
        await client.stop()
