"""Start the language server on stdio (the default) or on a loopback TCP port."""

from __future__ import annotations

import gc
import ipaddress
import logging
import sys

from memory_core.errors import UsageError


def run(*, tcp: bool = False, host: str = "127.0.0.1", port: int = 2087) -> None:
    from lsp_server.setup import create_server

    # pygls logs every message it sends at INFO: far too much for an editor's output panel.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    server = create_server()
    # Everything imported so far (pygls, lsprotocol's 300 classes, cattrs' generated code,
    # every feature) lives as long as the process: out of the cyclic collector's reach. Its
    # full collections otherwise walked them all, 50 ms at a time, now and then in the middle
    # of a burst of edits a hover waited behind.
    gc.freeze()
    if not tcp:
        server.start_io()
        return
    # docs/design.md section 8: no network listener unless asked, and then loopback only.
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(
            f"refusing to listen on {host!r}", hint="engram lsp --tcp listens on loopback only"
        )
    server.start_tcp(host, port)
