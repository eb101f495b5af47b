"""initialize / initialized / shutdown, workspace folders and settings.

At `initialize` each workspace folder gets its store. At `initialized` the server asks the
client for the `engram` settings of each folder (`workspace/configuration`) and layers them
over the files' (docs/design.md section 2); a bad setting is shown with `window/showMessage` and its
default used. `workspace/didChangeConfiguration` asks again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from lsp_server.server import EngramServer, FolderState
from memory_core import config, limits

logger = logging.getLogger("engram.lsp")


def _folder_paths(params: types.InitializeParams) -> list[Path]:
    if params.workspace_folders:
        return [Path(to_fs_path(f.uri) or f.uri) for f in params.workspace_folders]
    if params.root_uri:
        return [Path(to_fs_path(params.root_uri) or params.root_uri)]
    if params.root_path:
        return [Path(params.root_path)]
    return []


async def refresh_settings(server: EngramServer, state: FolderState) -> None:
    editor: dict[str, Any] | None = None
    if server.client_supports("workspace", "configuration"):
        try:
            result = await server.workspace_configuration_async(
                types.ConfigurationParams(
                    items=[
                        types.ConfigurationItem(
                            scope_uri=from_fs_path(str(state.root)), section="engram"
                        )
                    ]
                )
            )
            if result and isinstance(result[0], dict):
                editor = result[0]
        except Exception:
            logger.exception("workspace/configuration failed for %s", state.root)
    state.settings = config.load(state.root, editor=editor)
    # One process serves every folder: the most recently (re)loaded folder's level applies.
    logging.getLogger("engram").setLevel(str(state.settings["log.level"]).upper())
    for problem in state.settings.problems:
        logger.warning("%s", problem)
        server.show_message(f"engram: {problem}", types.MessageType.Warning)


def _folder_ready(server: EngramServer, state: FolderState) -> None:
    try:
        limits.enforce(state.store, state.settings)
    except Exception:
        logger.exception("retention failed for %s", state.root)
    for listener in server.folder_ready_listeners:
        try:
            listener(server, state)
        except Exception:
            logger.exception("folder-ready listener failed for %s", state.root)


# Module-level handlers (not closures in `register`), so mutation testing reaches them.
def initialize(ls: EngramServer, params: types.InitializeParams) -> None:
    for path in _folder_paths(params):
        ls.add_folder(path)
    for listener in ls.initialize_listeners:
        listener(ls, params)


async def initialized(ls: EngramServer, params: types.InitializedParams) -> None:
    for state in list(ls.folders.values()):
        await refresh_settings(ls, state)
        _folder_ready(ls, state)
    for listener in ls.initialized_listeners:
        try:
            await listener(ls)
        except Exception:
            logger.exception("initialized listener %s failed", listener)


async def did_change_configuration(
    ls: EngramServer, params: types.DidChangeConfigurationParams
) -> None:
    for state in list(ls.folders.values()):
        await refresh_settings(ls, state)
    ls.refresh_diagnostics()


async def did_change_folders(
    ls: EngramServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    for removed in params.event.removed:
        ls.remove_folder(Path(to_fs_path(removed.uri) or removed.uri))
    for added in params.event.added:
        state = ls.add_folder(Path(to_fs_path(added.uri) or added.uri))
        if state is not None:
            await refresh_settings(ls, state)
            _folder_ready(ls, state)


def shutdown(ls: EngramServer, params: None) -> None:
    ls.close_all()


def register(server: EngramServer) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_folders)
    server.feature(types.SHUTDOWN)(shutdown)
