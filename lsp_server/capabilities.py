"""The `initialize` result pygls gives for engram's features, computed from the raw JSON.

The stdio front (lsp_server/front.py) answers `initialize` with this before pygls and
lsprotocol are imported (a third of a second and more of lsprotocol's classes alone), then
hands the stream to pygls, which handles the same request again and whose own answer is
compared with this one and dropped. So this module must say exactly what pygls would: the
features engram registers (lsp_server/features/), and what pygls' `ServerCapabilitiesBuilder`
and engram's `initialize` listeners derive from the client's capabilities:

- the position encoding: the client's first of utf-8, utf-16 and utf-32, else utf-16;
- `willSave`/`willSaveWaitUntil`: engram registers neither, so pygls echoes a client's `false`
  (or its absence) and turns `true` into `false`;
- the pull diagnostics provider only for clients that can also be asked to pull again
  (lsp_server/features/diagnostics.py `pulls`);
- file operations (rename, delete) only where the client says it sends them.

tests/lsp/test_fast_initialize.py compares this answer with pygls' own for every recorded real
client and each variation above: a feature, command or option added to the server without
adding it here fails that test. When the params hold anything this module cannot judge as
pygls would (a value of an unexpected type where the answer depends on it, a malformed
top-level field), `initialize_result` returns None and the front leaves the request to pygls.
"""

from __future__ import annotations

from typing import Any

from memory_core import __version__

SERVER_NAME = "engram"

# Every `workspace/executeCommand` name, in the order the features register them
# (lsp_server/setup.py FEATURES, then each module's order).
COMMANDS = (
    "engram.status",
    "engram.checkpoint.create",
    "engram.checkpoint.list",
    "engram.checkpoint.diff",
    "engram.checkpoint.rollback",
    "engram.checkpoint.file",
    "engram.session.list",
    "engram.session.save",
    "engram.session.restore",
    "engram.session.delete",
    "engram.session.summary",
    "engram.session.history",
    "engram.session.metrics",
    "engram.gotcha.add",
    "engram.gotcha.resolve",
    "engram.gotcha.confirm",
    "engram.gotcha.snooze",
    "engram.gotcha.promote",
    "engram.gotcha.list",
    "engram.gotcha.show",
    "engram.gotcha.context",
    "engram.gotcha.showAll",
    "engram.error.track",
    "engram.evolution.history",
    "engram.evolution.active",
    "engram.evolution.status",
    "engram.evolution.flush",
    "engram.drift.diff",
    "engram.drift",
    "engram.memory.recite",
    "engram.memory.forget",
    "engram.snapshot.capture",
    "engram.snapshot.list",
    "engram.snapshot.restore",
    "engram.timeline",
    "engram.memory.add",
    "engram.memory.list",
    "engram.memory.search",
)

_ENCODINGS = ("utf-8", "utf-16", "utf-32")
# lsp_server/features/evolution.py: renames and deletions of any file.
_ALL_FILES = {"filters": [{"pattern": {"glob": "**/*"}}]}
_FILE_OPERATIONS = (("didRename", _ALL_FILES), ("didDelete", _ALL_FILES))
_TRACE_VALUES = ("off", "messages", "verbose")


class _Unsure(Exception):
    """The params hold something pygls may judge differently: leave the request to pygls."""


def _is_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def is_initialize_request(message: Any) -> bool:
    """Whether `message` (decoded JSON) is an `initialize` request the front may answer."""
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == "initialize"
        and _is_id(message.get("id"))
        and isinstance(message.get("params"), dict)
    )


def initialize_result(params: dict[str, Any]) -> dict[str, Any] | None:
    """The `result` of pygls' answer to `initialize` with these params, as JSON; None when
    this module cannot be sure of it."""
    try:
        _check_top_level(params)
        client = params["capabilities"]
        return {
            "capabilities": _server_capabilities(client),
            "serverInfo": {"name": SERVER_NAME, "version": __version__},
        }
    except _Unsure:
        return None


def _check_top_level(params: dict[str, Any]) -> None:
    """The fields lsprotocol structures strictly at the top: a wrong type there makes pygls
    answer with an error, which only pygls should do."""
    if not isinstance(params.get("capabilities"), dict):
        raise _Unsure
    process_id = params.get("processId")
    if process_id is not None and not (
        isinstance(process_id, int) and not isinstance(process_id, bool)
    ):
        raise _Unsure
    for key in ("rootUri", "rootPath", "locale"):
        if params.get(key) is not None and not isinstance(params[key], str):
            raise _Unsure
    token = params.get("workDoneToken")
    if token is not None and not _is_id(token):
        raise _Unsure
    trace = params.get("trace")
    if trace is not None and trace not in _TRACE_VALUES:
        raise _Unsure
    client_info = params.get("clientInfo")
    if client_info is not None and not (
        isinstance(client_info, dict)
        and isinstance(client_info.get("name"), str)
        and isinstance(client_info.get("version", ""), str | None)
    ):
        raise _Unsure
    folders = params.get("workspaceFolders")
    if folders is not None and not (
        isinstance(folders, list)
        and all(
            isinstance(folder, dict)
            and isinstance(folder.get("uri"), str)
            and isinstance(folder.get("name"), str)
            for folder in folders
        )
    ):
        raise _Unsure


def _get(capabilities: dict[str, Any], *path: str) -> Any:
    """The value at `path`, None where a level is missing or null; unsure where a level
    that must be an object is something else."""
    value: Any = capabilities
    for key in path:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise _Unsure
        value = value.get(key)
    return value


def _flag(capabilities: dict[str, Any], *path: str) -> bool | None:
    value = _get(capabilities, *path)
    if value is not None and not isinstance(value, bool):
        raise _Unsure
    return value


def _position_encoding(client: dict[str, Any]) -> str:
    offered = _get(client, "general", "positionEncodings")
    if offered is None:
        return "utf-16"
    if not isinstance(offered, list) or not all(isinstance(kind, str) for kind in offered):
        raise _Unsure
    return next((kind for kind in offered if kind in _ENCODINGS), "utf-16")


def _server_capabilities(client: dict[str, Any]) -> dict[str, Any]:
    sync: dict[str, Any] = {"openClose": True, "change": 2}  # incremental
    for key in ("willSave", "willSaveWaitUntil"):
        offered = _flag(client, "textDocument", "synchronization", key)
        if offered is not None:
            sync[key] = False  # the client's false, or true turned down
    sync["save"] = True
    capabilities: dict[str, Any] = {
        "positionEncoding": _position_encoding(client),
        "textDocumentSync": sync,
        "hoverProvider": True,
        "codeActionProvider": {"codeActionKinds": ["quickfix", "source"], "resolveProvider": False},
        "codeLensProvider": {"resolveProvider": False},
        "workspaceSymbolProvider": {"resolveProvider": False},
        "executeCommandProvider": {"commands": list(COMMANDS)},
    }
    diagnostic = _get(client, "textDocument", "diagnostic")
    if diagnostic is not None and not isinstance(diagnostic, dict):
        raise _Unsure
    if diagnostic is not None and _flag(client, "workspace", "diagnostics", "refreshSupport"):
        capabilities["diagnosticProvider"] = {
            "interFileDependencies": True,
            "workspaceDiagnostics": False,
            "identifier": "engram",
        }
    file_operations = {
        name: options
        for name, options in _FILE_OPERATIONS
        if _flag(client, "workspace", "fileOperations", name)
    }
    capabilities["workspace"] = {
        "workspaceFolders": {"supported": True, "changeNotifications": True},
        "fileOperations": file_operations,
    }
    return capabilities
