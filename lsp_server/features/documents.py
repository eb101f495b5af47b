"""Document sync (incremental): pygls keeps the text; this fans each event out to listeners."""

from __future__ import annotations

import logging

from lsprotocol import types

from lsp_server.server import EngramServer

logger = logging.getLogger("engram.lsp")


# Module-level handlers (not closures in `register`), so mutation testing reaches them.
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


def did_open(ls: EngramServer, params: types.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    each_listener(ls, uri, "did_open", ls.workspace.get_text_document(uri))


def did_change(ls: EngramServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    each_listener(
        ls, uri, "did_change", ls.workspace.get_text_document(uri), list(params.content_changes)
    )


def did_save(ls: EngramServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    each_listener(ls, uri, "did_save", ls.workspace.get_text_document(uri))


def did_close(ls: EngramServer, params: types.DidCloseTextDocumentParams) -> None:
    each_listener(ls, params.text_document.uri, "did_close", params.text_document.uri)


def register(server: EngramServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE)(did_save)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
