"""`workspace/didChangeWatchedFiles`, registered dynamically when the client allows it.

When the client cannot watch for us, `server.client_watches_files` stays False and the
evolution feature runs its own watcher instead.
"""

from __future__ import annotations

import logging

from lsprotocol import types

from lsp_server.server import EngramServer

logger = logging.getLogger("engram.lsp")

REGISTRATION_ID = "engram-watched-files"


# Module-level handlers (not closures in `register`), so mutation testing reaches them.
async def register_watcher(ls: EngramServer) -> None:
    if not ls.client_supports("workspace", "did_change_watched_files", "dynamic_registration"):
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
    )
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id=REGISTRATION_ID,
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=ls.protocol._converter.unstructure(options),
                    )
                ]
            )
        )
        ls.client_watches_files = True
    except Exception:
        logger.exception("the client refused the file watcher registration")


def did_change_watched_files(ls: EngramServer, params: types.DidChangeWatchedFilesParams) -> None:
    by_folder: dict[object, list[types.FileEvent]] = {}
    for change in params.changes:
        state = ls.state_for_uri(change.uri)
        if state is not None:
            by_folder.setdefault(state.root, []).append(change)
    for root, changes in by_folder.items():
        state = ls.folders[root]  # type: ignore[index]
        for listener in ls.watched_files_listeners:
            try:
                listener(ls, state, changes)
            except Exception:
                logger.exception("watched-files listener failed for %s", root)


def register(server: EngramServer) -> None:
    server.initialized_listeners.append(register_watcher)
    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
