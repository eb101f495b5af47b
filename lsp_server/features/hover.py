"""`textDocument/hover`: what every hover provider says about a position, as Markdown."""

from __future__ import annotations

import logging
import re

from lsprotocol import types

from lsp_server.server import EngramServer

logger = logging.getLogger("engram.lsp")


# A module-level handler (not a closure in `register`), so mutation testing reaches it.
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
    text = "\n\n---\n\n".join(parts)
    if not _accepts_markdown(ls):
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.PlainText, value=markdown_to_plaintext(text)
            )
        )
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


def register(server: EngramServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)


def _accepts_markdown(ls: EngramServer) -> bool:
    """Whether the client renders Markdown hovers: its `hover.contentFormat`, in order of
    preference; a client that says nothing gets Markdown (what every editor renders)."""
    hover = getattr(getattr(ls.client_capabilities, "text_document", None), "hover", None)
    formats = getattr(hover, "content_format", None)
    if not formats:
        return True
    return types.MarkupKind.Markdown in formats


# `__` is left alone: it is in too many identifiers (`__init__`) to be taken for emphasis.
_EMPHASIS = re.compile(r"(\*\*|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])|`)")
_HEADING = re.compile(r"^#{1,6}\s+", re.MULTILINE)
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_RULE = re.compile(r"^-{3,}$", re.MULTILINE)


def markdown_to_plaintext(text: str) -> str:
    """The hover's Markdown as a client showing plain text should get it: no `**`, no
    backticks, headings and rules as plain lines, links as `text (url)`."""
    text = _LINK.sub(r"\1 (\2)", text)
    text = _HEADING.sub("", text)
    text = _RULE.sub("-" * 20, text)
    return _EMPHASIS.sub("", text)
