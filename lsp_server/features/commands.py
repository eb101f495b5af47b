"""`workspace/executeCommand` glue: one JSON object in, one JSON object out.

`engram_command` wraps a feature's handler so that a missing or malformed argument, or an
`EngramError` from memory_core, becomes a clear error response instead of a crash, and a bug
becomes an internal-error response and a log line. Handlers may be sync (run on a thread, so
the event loop keeps serving typing and hovers) or async (for those that talk to the client).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from lsp_server.server import EngramServer
from memory_core.errors import EngramError

logger = logging.getLogger("engram.lsp")

CommandHandler = Callable[
    [EngramServer, dict[str, Any]], dict[str, Any] | Awaitable[dict[str, Any]]
]


def engram_command(server: EngramServer, name: str) -> Callable[[CommandHandler], CommandHandler]:
    def decorator(handler: CommandHandler) -> CommandHandler:
        async def execute(ls: EngramServer, *arguments: Any) -> Any:
            payload = arguments[0] if arguments else {}
            # An empty list is how some clients encode an empty object (Neovim before
            # vim.empty_dict(), Lua tables in general): every parameter is optional there.
            if payload is None or payload == []:
                payload = {}
            if not isinstance(payload, dict) or len(arguments) > 1:
                raise JsonRpcInvalidParams(
                    message=f"{name} takes one JSON object as its argument, got {list(arguments)!r}"
                )
            try:
                if inspect.iscoroutinefunction(handler):
                    return await handler(ls, payload)
                return await ls.run_blocking(handler, ls, payload)
            except EngramError as exc:
                raise JsonRpcInvalidParams(message=f"{name}: {exc.one_line()}") from None
            except (JsonRpcInvalidParams, JsonRpcInternalError):
                raise
            except Exception as exc:
                logger.exception("command %s failed", name)
                raise JsonRpcInternalError(
                    message=f"{name} failed: {type(exc).__name__}: {exc}"
                ) from None

        server.command(name)(execute)
        return handler

    return decorator


def register(server: EngramServer) -> None:
    from memory_core import views
    from memory_core.cli.basics import status_facts

    @engram_command(server, "engram.status")
    def status(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        state = ls.state_for_command(args)
        facts = status_facts(state.store, state.settings)
        return {**facts, "markdown": views.status(facts)}
