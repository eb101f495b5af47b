"""Diagnostics from every provider (gotchas, drift, ...), pulled or pushed.

Clients that support `textDocument/diagnostic` (VS Code, Neovim 0.10+) pull; when something
changes outside the document (a gotcha added from the CLI, a file written by an agent) the
server asks them to pull again with `workspace/diagnostic/refresh`. Other clients (Neovim up
to 0.9) get `textDocument/publishDiagnostics`, debounced per document so a burst of keystrokes
costs one computation.
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_server.server import DocumentListener, EngramServer, FolderState

logger = logging.getLogger("engram.lsp")

PUSH_DEBOUNCE_SECONDS = 0.15


def collect(
    server: EngramServer, state: FolderState, document: TextDocument
) -> list[types.Diagnostic]:
    diagnostics: list[types.Diagnostic] = []
    for provider in server.diagnostic_providers:
        try:
            diagnostics.extend(provider(server, state, document))
        except Exception:
            logger.exception("diagnostic provider %s failed for %s", provider, document.uri)
    return diagnostics


class _PushScheduler(DocumentListener):
    """Debounced push of diagnostics for clients that cannot pull."""

    def __init__(self) -> None:
        self.pending: dict[str, asyncio.TimerHandle] = {}

    def schedule(
        self, server: EngramServer, uri: str, delay: float = PUSH_DEBOUNCE_SECONDS
    ) -> None:
        if handle := self.pending.pop(uri, None):
            handle.cancel()
        loop = asyncio.get_running_loop()
        self.pending[uri] = loop.call_later(delay, self.publish, server, uri)

    def publish(self, server: EngramServer, uri: str) -> None:
        self.pending.pop(uri, None)
        state = server.state_for_uri(uri)
        document = server.workspace.text_documents.get(uri)
        if state is None or document is None:
            return
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, version=document.version, diagnostics=collect(server, state, document)
            )
        )

    def did_open(self, server: EngramServer, state: FolderState, document: TextDocument) -> None:
        self.schedule(server, document.uri, 0)

    def did_change(
        self,
        server: EngramServer,
        state: FolderState,
        document: TextDocument,
        changes: list[types.TextDocumentContentChangeEvent],
    ) -> None:
        self.schedule(server, document.uri)

    def did_save(self, server: EngramServer, state: FolderState, document: TextDocument) -> None:
        self.schedule(server, document.uri)

    def did_close(self, server: EngramServer, state: FolderState, uri: str) -> None:
        if handle := self.pending.pop(uri, None):
            handle.cancel()
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )


def pulls(server: EngramServer) -> bool:
    """Whether this client pulls diagnostics and can be told to pull again.

    A client that pulls but cannot be asked to refresh (Neovim 0.10 and 0.11) would keep a stale
    answer until the next edit when a gotcha is added from a terminal or a hook; such clients
    get diagnostics pushed instead, and the pull capability is not advertised to them.
    """
    return server.client_supports("text_document", "diagnostic") and server.client_supports(
        "workspace", "diagnostics", "refresh_support"
    )


def register(server: EngramServer) -> None:
    pusher = _PushScheduler()

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier="engram", inter_file_dependencies=True, workspace_diagnostics=False
        ),
    )
    def pull(
        ls: EngramServer, params: types.DocumentDiagnosticParams
    ) -> types.DocumentDiagnosticReport:
        uri = params.text_document.uri
        state = ls.state_for_uri(uri)
        items: list[types.Diagnostic] = []
        if state is not None:
            items = collect(ls, state, ls.workspace.get_text_document(uri))
        return types.RelatedFullDocumentDiagnosticReport(items=items)

    def advertise_pull_only_when_refreshable(
        ls: EngramServer, params: types.InitializeParams
    ) -> None:
        # pygls derives the capabilities from the registered features after `initialize`
        # handlers ran: unregistering here keeps `diagnosticProvider` out of the answer.
        if not pulls(ls):
            ls.protocol.fm.features.pop(types.TEXT_DOCUMENT_DIAGNOSTIC, None)

    server.initialize_listeners.append(advertise_pull_only_when_refreshable)

    async def choose_mode(ls: EngramServer) -> None:
        if pulls(ls):

            def refresh_pull() -> None:
                ls.workspace_diagnostic_refresh(None)

            ls.refresh_diagnostics = refresh_pull
            return
        ls.document_listeners.append(pusher)

        def refresh_push() -> None:
            for uri in list(ls.workspace.text_documents):
                pusher.schedule(ls, uri, 0)

        ls.refresh_diagnostics = refresh_push
        # A document opened while `initialized` was still running missed its did_open push.
        refresh_push()

    server.initialized_listeners.insert(0, choose_mode)
