"""`textDocument/codeLens`: lenses from every provider (file activity, ...)."""

from __future__ import annotations

import logging

from lsprotocol import types

from lsp_server.server import EngramServer

logger = logging.getLogger("engram.lsp")


# A module-level handler (not a closure in `register`), so mutation testing reaches it.
def code_lens(ls: EngramServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
    uri = params.text_document.uri
    state = ls.state_for_uri(uri)
    if state is None:
        return None
    document = ls.workspace.get_text_document(uri)
    lenses: list[types.CodeLens] = []
    for provider in ls.code_lens_providers:
        try:
            lenses.extend(provider(ls, state, document))
        except Exception:
            logger.exception("code lens provider %s failed for %s", provider, uri)
    return lenses or None


def register(server: EngramServer) -> None:
    server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))(
        code_lens
    )
