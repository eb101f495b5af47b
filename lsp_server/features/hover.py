"""`textDocument/hover`: what every hover provider says about a position, as Markdown."""

from __future__ import annotations

import logging

from lsprotocol import types

from lsp_server.server import EngramServer

logger = logging.getLogger("engram.lsp")


def register(server: EngramServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: EngramServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        state = ls.state_for_uri(uri)
        if state is None:
            return None
        document = ls.workspace.get_text_document(uri)
        parts: list[str] = []
        for provider in ls.hover_providers:
            try:
                text = provider(ls, state, document, params.position)
            except Exception:
                logger.exception("hover provider %s failed for %s", provider, uri)
                continue
            if text:
                parts.append(text)
        if not parts:
            return None
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)
            )
        )
