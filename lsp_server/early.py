"""The first gotcha squiggles, computed by the stdio front while the server still loads.

After answering `initialize` (lsp_server/front.py), the front goes on reading the frames the
client sends while pygls, lsprotocol and the features load (half a second and more). For each
`textDocument/didOpen` in a folder that has a store, it opens the store, builds the folder's
gotcha index with memory_core only, scans the document and:

- push clients: sends `textDocument/publishDiagnostics` with the document's version; the
  server's own push for the same URI replaces it once it is up;
- pull clients (those the front announced `diagnosticProvider` to: they pull and can be told
  to pull again): answers their `textDocument/diagnostic` for that document. The server still
  handles the same request once loaded, but its answer to that id is not sent
  (lsp_server/jsonrpc.py); when it differs from the early one (drift, settings the client gave
  since), the server sends `workspace/diagnostic/refresh` and the client pulls the complete
  set.

Same diagnostics as the server: both build them with lsp_server/gotcha_format.py, in the
position encoding the front negotiated. Settings are the ones known without a round trip: the
workspace's files (.engram/config.toml, pyproject.toml) and the defaults, which is what the
server itself uses until the client answers `workspace/configuration`; the server does not read
`initializationOptions`, so neither does this. If the client's settings change the index
(`gotchas.candidate_decay_days`, `regex_timeout_ms`, `max_file_bytes`), the server rebuilds it
and its push or refresh corrects what was shown early.

The store is opened, read and closed here, before the server opens its own (SQLite WAL, one
process, one after the other); the index built is handed to the server, which takes it if the
gotcha revision, team file and settings are unchanged (no second build, and no empty push in
between that would make the squiggle blink). A change or a close before the server is up
drops the early answer for that document (a closed one gets its squiggles cleared). Any
failure is logged and turns the early path off: the server does everything as before. Only
memory_core and the standard library are imported here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsp_server.frames import valid_id

logger = logging.getLogger("engram.lsp")

# Set to 0 to leave every diagnostic to the server (a diagnosis knob, and the tests' control).
ENABLE_ENV = "ENGRAM_LSP_EARLY_DIAGNOSTICS"
# A store busy with a write waits this long at most: the early path must never stall.
BUSY_TIMEOUT_SECONDS = 0.2


def fs_path(uri: Any) -> Path | None:
    """The local path of a plain `file:` URI; None for anything else (left to the server)."""
    if not isinstance(uri, str):
        return None
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc or not parsed.path:
        return None
    return Path(unquote(parsed.path))


def _folder_paths(params: dict[str, Any]) -> list[Path]:
    """The workspace folders of `initialize` params, as the server reads them
    (lsp_server/features/lifecycle.py)."""
    folders = params.get("workspaceFolders")
    if folders:
        return [path for f in folders if (path := fs_path(f.get("uri"))) is not None]
    if params.get("rootUri"):
        path = fs_path(params["rootUri"])
        return [path] if path is not None else []
    if params.get("rootPath"):
        return [Path(params["rootPath"])]
    return []


class _Folder:
    """One workspace folder's gotcha index, built from its store (opened and closed here)."""

    def __init__(self, root: Path) -> None:
        from lsp_server import gotcha_format
        from memory_core import clock, config
        from memory_core.store import Store

        self.root = root
        self.settings = config.load(root)
        self.built_at = clock.now()
        store = Store.open(root, busy_timeout=BUSY_TIMEOUT_SECONDS)
        try:
            self.key = gotcha_format.index_key(store, root, self.settings)
            self.index = gotcha_format.build_folder_index(
                store, self.settings, self.key, self.built_at
            )
        finally:
            store.close()


class EarlyDiagnostics:
    """Follows the frames the client sends while the server loads; see the module's doc."""

    def __init__(
        self,
        params: dict[str, Any],
        result: dict[str, Any],
        send: Callable[[dict[str, Any]], None],
    ) -> None:
        capabilities = result["capabilities"]
        self.encoding = str(capabilities.get("positionEncoding", "utf-16"))
        self.pulls = "diagnosticProvider" in capabilities
        self.send = send
        self.folder_paths = _folder_paths(params)
        self.roots: list[Path] | None = None  # found when the first document opens
        self.folders: dict[Path, _Folder | None] = {}
        self.ready: dict[str, dict[str, Any]] = {}  # uri -> early pull result
        self.published: set[str] = set()
        self.pulls_answered: dict[int | str, Any] = {}
        self.active = True

    # -- what the server gets -----------------------------------------------------------

    def gotcha_indexes(self) -> dict[Path, tuple[object, Any, float]]:
        return {
            root: (folder.key, folder.index, folder.built_at)
            for root, folder in self.folders.items()
            if folder is not None
        }

    # -- frames ---------------------------------------------------------------------------

    def handle(self, body: bytes | None) -> None:
        """One frame the client sent while the server loads. Never raises: a failure turns
        the early path off and leaves everything to the server."""
        if not self.active or body is None:
            return
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return  # the server answers it as the invalid JSON it is
        try:
            if isinstance(message, dict):
                self._handle(message)
        except Exception:
            logger.exception("early diagnostics failed; the server will send them")
            self.active = False

    def _handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params")
        if method in ("shutdown", "exit"):
            self.active = False
            return
        if not isinstance(params, dict):
            return
        document = params.get("textDocument")
        uri = document.get("uri") if isinstance(document, dict) else None
        if not isinstance(uri, str) or not isinstance(document, dict):
            return
        if method == "textDocument/didOpen":
            self._opened(uri, document)
        elif method == "textDocument/didChange":
            self.ready.pop(uri, None)  # the early answer is for an older text
        elif method == "textDocument/didClose":
            self.ready.pop(uri, None)
            if uri in self.published:
                self.published.discard(uri)
                self.send(self._publish(uri, None, []))
        elif method == "textDocument/diagnostic" and valid_id(message.get("id")):
            result = self.ready.get(uri)
            if result is not None and self.pulls:
                self.send({"id": message["id"], "jsonrpc": "2.0", "result": result})
                self.pulls_answered[message["id"]] = result

    def _publish(self, uri: str, version: Any, diagnostics: list[Any]) -> dict[str, Any]:
        params: dict[str, Any] = {"uri": uri}
        if version is not None:
            params["version"] = version
        params["diagnostics"] = diagnostics
        return {"params": params, "method": "textDocument/publishDiagnostics", "jsonrpc": "2.0"}

    def _opened(self, uri: str, document: dict[str, Any]) -> None:
        self.ready.pop(uri, None)
        text, version = document.get("text"), document.get("version")
        path = fs_path(uri)
        if not isinstance(text, str) or path is None:
            return
        if not isinstance(version, int) or isinstance(version, bool):
            return  # the server refuses such a didOpen; nothing to show early
        folder = self._folder_of(path.resolve())
        if folder is None:
            return
        relative = path.resolve().relative_to(folder.root).as_posix()
        if relative.startswith((".git/", ".engram/")):
            return  # the store's files, and the team file (its own problems are the server's)
        from lsp_server import gotcha_format

        diagnostics = gotcha_format.document_diagnostics(
            folder.index,
            relative,
            gotcha_format.split_lines(text),
            self.encoding,
            folder.settings["gotchas.regex_timeout_ms"],
        )
        if not diagnostics:
            return  # nothing to show: the server's own answer comes soon enough
        if self.pulls:
            self.ready[uri] = {"kind": "full", "items": diagnostics}
        else:
            self.send(self._publish(uri, version, diagnostics))
            self.published.add(uri)

    def _folder_of(self, path: Path) -> _Folder | None:
        """The innermost workspace folder holding `path`, its index built on first use."""
        if self.roots is None:
            from memory_core.workspace import find_root

            self.roots = []
            for folder_path in self.folder_paths:
                try:
                    self.roots.append(find_root(folder_path))
                except Exception:
                    logger.debug("no workspace root for %s", folder_path)
        best: Path | None = None
        for root in self.roots:
            if (path == root or root in path.parents) and (
                best is None or len(root.parts) > len(best.parts)
            ):
                best = root
        if best is None:
            return None
        if best not in self.folders:
            from memory_core.store import DB_NAME
            from memory_core.workspace import STORE_DIRNAME

            # No database yet (a new project, or `.engram/` holding only settings): the server
            # creates it, or leaves the folder alone; there are no gotchas to show.
            exists = (best / STORE_DIRNAME / DB_NAME).is_file()
            self.folders[best] = _Folder(best) if exists else None
        return self.folders[best]
