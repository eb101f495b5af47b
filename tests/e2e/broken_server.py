"""engram's real language server with one feature broken on purpose: the negative controls.

An end-to-end test that cannot fail proves nothing, so each editor suite runs its scenario a
second time against this launcher and asserts that the scenario fails. Usage:

    python tests/e2e/broken_server.py no-diagnostics          # no diagnostic provider at all
    python tests/e2e/broken_server.py no-command NAME         # the server lacks command NAME
"""

from __future__ import annotations

import logging
import sys


def main(argv: list[str]) -> int:
    from lsp_server.setup import create_server

    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    server = create_server()
    if argv[:1] == ["no-diagnostics"]:
        server.diagnostic_providers.clear()
    elif argv[:1] == ["no-command"] and len(argv) == 2:
        # Removed before `initialize`, so the server does not even advertise it.
        server.protocol.fm.commands.pop(argv[1], None)
    else:
        print(f"usage: {sys.argv[0]} no-diagnostics | no-command NAME", file=sys.stderr)
        return 2
    server.start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
