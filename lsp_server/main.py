"""Start the language server on stdio (the default) or on a loopback TCP port.

On stdio the front (lsp_server/front.py) answers `initialize` while pygls and the features
load behind it; nothing heavier than the standard library is imported before that answer.
"""

from __future__ import annotations

import contextlib
import logging
import sys


def run(*, tcp: bool = False, host: str = "127.0.0.1", port: int = 2087) -> None:
    # pygls logs every message it sends at INFO: far too much for an editor's output panel.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not tcp:
        from lsp_server.front import serve_stdio

        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C in a terminal while it loads
            serve_stdio()
        return
    import gc
    import ipaddress

    from lsp_server.setup import create_server
    from memory_core.errors import UsageError

    # docs/design.md section 8: no network listener unless asked, and then loopback only.
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(
            f"refusing to listen on {host!r}", hint="engram lsp --tcp listens on loopback only"
        )
    server = create_server()
    # As lsp_server/front.py does once the server is built: what was imported lives as long
    # as the process, out of the cyclic collector's reach.
    gc.freeze()
    server.start_tcp(host, port)
