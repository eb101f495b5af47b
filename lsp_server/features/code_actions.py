"""`textDocument/codeAction`: quick fixes and source actions from every provider."""

from __future__ import annotations

import logging

from lsprotocol import types

from lsp_server.server import EngramServer

logger = logging.getLogger("engram.lsp")

OPTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Source],
    resolve_provider=False,
)


# A module-level handler (not a closure in `register`), so mutation testing reaches it.
def code_action(ls: EngramServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    state = ls.state_for_uri(uri)
    if state is None:
        return None
    document = ls.workspace.get_text_document(uri)
    actions: list[types.CodeAction] = []
    for provider in ls.code_action_providers:
        try:
            actions.extend(provider(ls, state, document, params))
        except Exception:
            logger.exception("code action provider %s failed for %s", provider, uri)
    wanted = params.context.only
    if wanted:
        actions = [a for a in actions if a.kind and any(a.kind.startswith(k) for k in wanted)]
    return actions or None


def register(server: EngramServer) -> None:
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, OPTIONS)(code_action)
