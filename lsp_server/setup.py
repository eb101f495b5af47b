"""The one place that builds the server and wires every feature (esbonio's shape).

Order matters only where noted: `lifecycle` first (it opens the stores the others use).
"""

from __future__ import annotations

import importlib

from lsp_server.server import EngramServer

FEATURES = (
    "lsp_server.features.lifecycle",
    "lsp_server.features.documents",
    "lsp_server.features.watching",
    "lsp_server.features.diagnostics",
    "lsp_server.features.hover",
    "lsp_server.features.code_actions",
    "lsp_server.features.code_lens",
    "lsp_server.features.commands",
    "lsp_server.features.checkpoints",
    "lsp_server.features.sessions",
    "lsp_server.features.gotchas",
    "lsp_server.features.evolution",
    "lsp_server.features.drift",
    "lsp_server.features.snapshots",
    "lsp_server.features.fast_documents",
    "lsp_server.features.memory",
)


def create_server() -> EngramServer:
    server = EngramServer()
    for name in FEATURES:
        importlib.import_module(name).register(server)
    return server
