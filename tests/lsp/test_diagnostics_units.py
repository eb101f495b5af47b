"""How diagnostics reach a client, checked in this process on the server the real `engram lsp`
builds (test_diagnostics.py checks the same over stdio with real clients' capabilities).

The messages the server would send are captured at its last step, `text_document_publish_diagnostics`,
so what is asserted is exactly what a client would receive.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import TextDocument

from lsp_server.features import diagnostics
from lsp_server.features import gotchas as lsp_gotchas
from lsp_server.server import EngramServer, FolderState
from memory_core import gotchas

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
HOVER_AND_REFRESH = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(hover=types.HoverClientCapabilities()),
    workspace=types.WorkspaceClientCapabilities(
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    ),
)
PULL_WITHOUT_REFRESH = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        diagnostic=types.DiagnosticClientCapabilities()
    ),
    workspace=types.WorkspaceClientCapabilities(
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=False)
    ),
)
REFRESH_WITHOUT_PULL = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    ),
)


@pytest.fixture
def state(state: FolderState) -> FolderState:
    """The folder with one pattern gotcha to squiggle."""
    gotchas.add(state.store, "Naive utcnow", pattern="utcnow()", pattern_kind="literal")
    lsp_gotchas.folder_of(state).rebuild()
    return state


def _open(server: EngramServer, state: FolderState, rel: str, source: str) -> TextDocument:
    path = state.root / rel
    path.write_text(source, encoding="utf-8")
    uri = from_fs_path(str(path))
    assert uri is not None
    server.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="python", version=3, text=source)
    )
    return server.workspace.get_text_document(uri)


async def _settle(sent: list[Any], seconds: float = 0.0) -> None:
    """Let the event loop run the pushes due: wait for the first one (up to 10 s on a loaded
    machine), then `seconds` more for any that would follow."""
    for _ in range(200):
        if sent:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(seconds)


def _published(server: EngramServer, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    sent: list[types.PublishDiagnosticsParams] = []
    monkeypatch.setattr(server, "text_document_publish_diagnostics", sent.append)
    return sent


@pytest.mark.parametrize(
    ("capabilities", "pulls"),
    [
        (types.ClientCapabilities(), False),
        (PULL_ONLY, False),
        (REFRESH_WITHOUT_PULL, False),
        (HOVER_AND_REFRESH, False),
        (PULL_WITHOUT_REFRESH, False),
        (PULL_AND_REFRESH, True),
    ],
    ids=["nothing", "pull-only", "refresh-only", "hover+refresh", "refresh-false", "pull+refresh"],
)
def test_only_a_client_that_can_be_told_to_pull_again_pulls(
    server: EngramServer, capabilities: types.ClientCapabilities, pulls: bool
) -> None:
    server.protocol.client_capabilities = capabilities
    assert diagnostics.pulls(server) is pulls
    # The pull capability is advertised (kept as a feature) exactly then.
    for listener in server.initialize_listeners:
        listener(server, types.InitializeParams(capabilities=capabilities))
    features = server.protocol.fm.features
    assert (types.TEXT_DOCUMENT_DIAGNOSTIC in features) is pulls


def test_a_failing_provider_never_hides_the_others(
    server: EngramServer, state: FolderState, caplog: pytest.LogCaptureFixture
) -> None:
    document = _open(server, state, "a.py", "now = datetime.utcnow()\n")

    def broken(*_args: object) -> list[types.Diagnostic]:
        raise RuntimeError("provider bug")

    called_with: list[object] = []

    def recording(*args: object) -> list[types.Diagnostic]:
        called_with.append(args)
        return []

    server.diagnostic_providers[:0] = [broken, recording]
    found = diagnostics.collect(server, state, document)
    assert [d.message for d in found] == ["Naive utcnow"]
    # Every provider gets the server, the folder and the document.
    assert called_with == [(server, state, document)]
    # The log names the provider and the document, for whoever reads it.
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.getMessage() == f"diagnostic provider {broken} failed for {document.uri}"
    assert "provider bug" in caplog.text


def test_a_pull_returns_the_documents_diagnostics(server: EngramServer, state: FolderState) -> None:
    document = _open(server, state, "a.py", "x = 1\nnow = datetime.utcnow()\n")
    pull = server.protocol.fm.features[types.TEXT_DOCUMENT_DIAGNOSTIC]
    report = pull(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=document.uri)
        ),
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert [(d.range.start.line, d.message) for d in report.items] == [(1, "Naive utcnow")]


def test_a_pull_for_a_file_outside_every_folder_is_empty(
    server: EngramServer, state: FolderState, tmp_path: Path
) -> None:
    stray = tmp_path / "elsewhere.py"
    stray.write_text("datetime.utcnow()\n")
    uri = from_fs_path(str(stray))
    assert uri is not None
    server.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text="datetime.utcnow()\n")
    )
    pull = server.protocol.fm.features[types.TEXT_DOCUMENT_DIAGNOSTIC]
    report = pull(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert report.items == []


async def test_a_client_that_cannot_pull_gets_one_debounced_push_per_burst(
    server: EngramServer, state: FolderState, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _published(server, monkeypatch)
    server.protocol.client_capabilities = types.ClientCapabilities()
    document = _open(server, state, "a.py", "now = datetime.utcnow()\n")
    for listener in server.initialized_listeners:
        await listener(server)
    # Choosing push mode pushes the documents already open, at once.
    await _settle(sent, 0.1)
    assert sent and {(p.uri, p.version, len(p.diagnostics)) for p in sent} == {(document.uri, 3, 1)}
    sent.clear()
    pusher = next(
        listener for listener in server.document_listeners if hasattr(listener, "schedule")
    )
    # A burst of keystrokes: one push, after the debounce, with the last version.
    for _ in range(5):
        pusher.did_change(server, state, document, [])
    assert sent == []
    await _settle(sent, diagnostics.PUSH_DEBOUNCE_SECONDS + 0.1)
    assert [(p.uri, len(p.diagnostics)) for p in sent] == [(document.uri, 1)]
    # Closing the document clears its squiggles in the client.
    sent.clear()
    pusher.did_close(server, state, document.uri)
    assert [(p.uri, p.diagnostics) for p in sent] == [(document.uri, [])]
    # A refresh (a gotcha added from a terminal) pushes every open document again.
    sent.clear()
    server.refresh_diagnostics()
    await _settle(sent, 0.1)
    assert [p.uri for p in sent] == [document.uri]


async def test_a_document_closed_before_its_push_is_not_pushed(
    server: EngramServer, state: FolderState, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _published(server, monkeypatch)
    server.protocol.client_capabilities = types.ClientCapabilities()
    document = _open(server, state, "a.py", "now = datetime.utcnow()\n")
    for listener in server.initialized_listeners:
        await listener(server)
    await _settle(sent, 0.1)
    sent.clear()
    pusher = next(
        listener for listener in server.document_listeners if hasattr(listener, "schedule")
    )
    pusher.did_save(server, state, document)
    pusher.did_close(server, state, document.uri)
    await asyncio.sleep(diagnostics.PUSH_DEBOUNCE_SECONDS + 0.2)
    assert [(p.uri, p.diagnostics) for p in sent] == [(document.uri, [])]


async def test_a_pulling_client_is_asked_to_pull_again_instead_of_pushed(
    server: EngramServer, state: FolderState, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _published(server, monkeypatch)
    refreshes: list[object] = []
    monkeypatch.setattr(server, "workspace_diagnostic_refresh", refreshes.append)
    server.protocol.client_capabilities = PULL_AND_REFRESH
    _open(server, state, "a.py", "now = datetime.utcnow()\n")
    for listener in server.initialized_listeners:
        await listener(server)
    await asyncio.sleep(0.05)
    refreshes.clear()
    server.refresh_diagnostics()
    await asyncio.sleep(0.05)
    assert refreshes == [None] and sent == []
    assert not any(hasattr(listener, "schedule") for listener in server.document_listeners)


async def test_an_opened_or_saved_document_is_pushed(
    server: EngramServer, state: FolderState, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _published(server, monkeypatch)
    server.protocol.client_capabilities = types.ClientCapabilities()
    for listener in server.initialized_listeners:
        await listener(server)
    await asyncio.sleep(0.1)  # no document is open yet: nothing to push
    pusher = next(
        listener for listener in server.document_listeners if hasattr(listener, "schedule")
    )
    document = _open(server, state, "b.py", "stamp = datetime.utcnow()\n")
    pusher.did_open(server, state, document)
    await _settle(sent)  # opened: pushed at once, without the debounce
    assert [(p.uri, len(p.diagnostics)) for p in sent] == [(document.uri, 1)]
    sent.clear()
    pusher.did_save(server, state, document)
    assert sent == []  # debounced
    await _settle(sent, 0.1)
    assert [(p.uri, p.version, len(p.diagnostics)) for p in sent] == [(document.uri, 3, 1)]


def test_a_push_for_a_document_no_longer_open_sends_nothing(
    server: EngramServer, state: FolderState, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _published(server, monkeypatch)
    pusher = diagnostics._PushScheduler()
    gone = from_fs_path(str(state.root / "closed.py"))
    assert gone is not None
    pusher.publish(server, gone)
    assert sent == []
