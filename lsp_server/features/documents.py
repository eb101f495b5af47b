"""Document sync (incremental): pygls keeps the text; this fans each event out to listeners."""

from __future__ import annotations

import logging

from lsprotocol import types

from lsp_server.server import EngramServer

logger = logging.getLogger("engram.lsp")


def register(server: EngramServer) -> None:
    def each_listener(ls: EngramServer, uri: str, call: str, *args: object) -> None:
        state = ls.state_for_uri(uri)
        if state is None:
            return
        for listener in ls.document_listeners:
            try:
                getattr(listener, call)(ls, state, *args)
            except Exception:
                # One feature's bug must not stop the others, nor the client's typing.
                logger.exception("%s.%s failed for %s", type(listener).__name__, call, uri)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: EngramServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        each_listener(ls, uri, "did_open", ls.workspace.get_text_document(uri))

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: EngramServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        each_listener(
            ls, uri, "did_change", ls.workspace.get_text_document(uri), list(params.content_changes)
        )

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: EngramServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        each_listener(ls, uri, "did_save", ls.workspace.get_text_document(uri))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: EngramServer, params: types.DidCloseTextDocumentParams) -> None:
        each_listener(ls, params.text_document.uri, "did_close", params.text_document.uri)
