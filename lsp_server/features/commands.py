"""`workspace/executeCommand` glue: one JSON object in, one JSON object out.

`engram_command` wraps a feature's handler so that a missing or malformed argument, or an
`EngramError` from memory_core, becomes a clear error response instead of a crash, and a bug
becomes an internal-error response and a log line. Handlers may be sync (run on a thread, so
the event loop keeps serving typing and hovers) or async (for those that talk to the client).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from lsp_server.server import EngramServer
from memory_core.errors import EngramError, NothingYetError

logger = logging.getLogger("engram.lsp")

CommandHandler = Callable[
    [EngramServer, dict[str, Any]], dict[str, Any] | Awaitable[dict[str, Any]]
]


# The type every command's argument of a given name has: one name, one meaning, in every
# command. Checked before a handler runs, so `{"limit": "5"}` is an invalid-params error, not
# an internal error halfway through the handler. Names not listed are the handler's to check.
_TEXT = (str,)
_WHOLE = "a whole number"
_ARGUMENT_KINDS: dict[str, Any] = {
    **dict.fromkeys(
        (
            "id",
            "name",
            "description",
            "note",
            "query",
            "task",
            "message",
            "title",
            "workspace",
            "uri",
            "path",
            "file",
            "pattern",
            "pattern_kind",
            "category",
            "severity",
            "workaround",
            "error_pattern",
            "snapshot",
            "against",
            "type",
            "session_id",
            "command",
            "tool",
            "content",
            "text",
        ),
        "text",
    ),
    **dict.fromkeys(("limit", "last", "line"), _WHOLE),
    **dict.fromkeys(("days",), "a number"),
    **dict.fromkeys(
        (
            "confirm",
            "preview",
            "rewind",
            "all",
            "overwrite",
            "literal",
            "pinned",
            "explicit",
            "show",
        ),
        "true or false",
    ),
    **dict.fromkeys(("files", "related_files", "kinds"), "a list of text"),
    **dict.fromkeys(("tags", "source"), "text or a list of text"),
    **dict.fromkeys(("since", "until", "at"), "a time"),
    **dict.fromkeys(("range",), "an object"),
    **dict.fromkeys(("documents",), "a list"),
}


def _fits(kind: str, value: Any) -> bool:
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "text":
        return isinstance(value, str)
    if kind == _WHOLE:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind == "a number":
        return is_number and value == value and value >= 0  # NaN is not a number of days
    if kind == "true or false":
        return isinstance(value, bool)
    if kind == "a list of text":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if kind == "text or a list of text":
        return isinstance(value, str) or _fits("a list of text", value)
    if kind == "a time":
        return isinstance(value, str) or is_number
    if kind == "an object":
        return isinstance(value, dict)
    if kind == "a list":
        return isinstance(value, list)
    return True


def argument_problem(args: dict[str, Any]) -> str | None:
    """What is wrong with a command's arguments by the shared table, or None."""
    for key, value in args.items():
        kind = _ARGUMENT_KINDS.get(key)
        if kind is None or value is None or _fits(kind, value):
            continue
        shown = json.dumps(value, default=str)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return f"`{key}` must be {kind}, got {shown}"
    return None


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
                    message=f"{name} takes one JSON object as its argument, got {list(arguments)!r}"[
                        :300
                    ]
                )
            problem = argument_problem(payload)
            if problem:
                raise JsonRpcInvalidParams(message=f"{name}: {problem}")
            try:
                if inspect.iscoroutinefunction(handler):
                    return await handler(ls, payload)
                return await ls.run_blocking(handler, ls, payload)
            except EngramError as exc:
                # `data` lets a client tell an empty state from a failure (an information
                # message, not a red error) and read the stable code (docs/errors.md).
                raise JsonRpcInvalidParams(
                    message=f"{name}: {exc.one_line()}",
                    data={"code": exc.code, "empty": isinstance(exc, NothingYetError)},
                ) from None
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
    from memory_core.status import status_facts

    @engram_command(server, "engram.status")
    def status(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
        state = ls.state_for_command(args)
        facts = status_facts(state.store, state.settings)
        return {**facts, "markdown": views.status(facts)}
