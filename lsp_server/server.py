"""The server class: per-folder state and the registries features plug into.

One `FolderState` per workspace folder (one store each, docs/design.md section 2). Features do not
register LSP methods for shared surfaces themselves; they add providers here (diagnostics,
hover, code actions, code lenses) and listeners (document changes, watched files), and the
modules in `features/` fan each LSP method out to them.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from lsp_server import jsonrpc
from lsp_server.jsonrpc import EngramProtocol
from lsp_server.stdio import Handover
from memory_core import __version__, config
from memory_core.store import Store
from memory_core.workspace import find_root, has_store, is_git_repository

logger = logging.getLogger("engram.lsp")
T = TypeVar("T")


@dataclass
class FolderState:
    """Everything the server keeps for one workspace folder."""

    root: Path
    store: Store
    settings: config.Settings = field(default_factory=config.Settings)
    # Features keep their own per-folder state here, keyed by feature name.
    extras: dict[str, Any] = field(default_factory=dict)


DiagnosticProvider = Callable[["EngramServer", FolderState, TextDocument], list[types.Diagnostic]]
HoverProvider = Callable[["EngramServer", FolderState, TextDocument, types.Position], str | None]
CodeActionProvider = Callable[
    ["EngramServer", FolderState, TextDocument, types.CodeActionParams], list[types.CodeAction]
]
CodeLensProvider = Callable[["EngramServer", FolderState, TextDocument], list[types.CodeLens]]


class DocumentListener:
    """Base for features that follow open documents; override what you need."""

    def did_open(
        self, server: EngramServer, state: FolderState, document: TextDocument
    ) -> None: ...

    def did_change(
        self,
        server: EngramServer,
        state: FolderState,
        document: TextDocument,
        changes: list[types.TextDocumentContentChangeEvent],
    ) -> None: ...

    def did_save(
        self, server: EngramServer, state: FolderState, document: TextDocument
    ) -> None: ...

    def did_close(self, server: EngramServer, state: FolderState, uri: str) -> None: ...


WatchedFilesListener = Callable[["EngramServer", FolderState, list[types.FileEvent]], None]


class EngramServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("engram", __version__, protocol_cls=EngramProtocol)
        self.folders: dict[Path, FolderState] = {}
        # Each folder the client opened, and the project root serving it: two folders of one
        # project (a repository and a subfolder of it) share one store, closed with the last.
        self._opened: dict[Path, Path] = {}
        self.diagnostic_providers: list[DiagnosticProvider] = []
        self.hover_providers: list[HoverProvider] = []
        self.code_action_providers: list[CodeActionProvider] = []
        self.code_lens_providers: list[CodeLensProvider] = []
        self.document_listeners: list[DocumentListener] = []
        self.watched_files_listeners: list[WatchedFilesListener] = []
        # Called with (server, state) once a folder's store and settings are ready.
        self.folder_ready_listeners: list[Callable[[EngramServer, FolderState], None]] = []
        # Called during `initialize`, before the server's capabilities are computed.
        self.initialize_listeners: list[Callable[[EngramServer, types.InitializeParams], None]] = []
        # Awaited once after `initialized` (dynamic registrations and the like).
        self.initialized_listeners: list[Callable[[EngramServer], Awaitable[None]]] = []
        # Set by the watching feature: True when the client watches files for us.
        self.client_watches_files = False
        # Set by the diagnostics feature: how diagnostics reach the client.
        self.refresh_diagnostics: Callable[[], None] = lambda: None
        # Gotcha indexes the stdio front built while the server loaded (lsp_server/early.py):
        # root -> (key, index, built at), taken by the gotcha feature if still current.
        self.early_gotcha_indexes: dict[Path, tuple[object, Any, float]] = {}

    # -- transport: engram's JSON-RPC reader instead of pygls' (see lsp_server/jsonrpc.py) ---

    def start_io(
        self,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        *,
        handover: Handover | None = None,
    ) -> None:
        """Serve on stdio; `handover` carries what the stdio front (lsp_server/front.py)
        already read and answered, else stdin is read from its start."""
        if handover is None:
            handover = Handover.plain((stdin or sys.stdin.buffer).fileno())
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        if handover.answered is not None:
            self._protocol.answered_early(*handover.answered)
        for msg_id, result in handover.pulls_answered.items():
            self._protocol.pull_answered_early(msg_id, result)
        self.early_gotcha_indexes = dict(handover.gotcha_indexes)

        async def main() -> None:
            read_chunk = handover.reader(asyncio.get_running_loop())
            await jsonrpc.serve(read_chunk, self._protocol, self._stopping)

        try:
            asyncio.run(main())
        except BrokenPipeError:
            logger.error("the client closed the connection; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]

    def start_tcp(self, host: str, port: int) -> None:
        self._stop_event = stop_event = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)

            async def read_chunk() -> bytes:
                return await reader.read(jsonrpc.CHUNK_BYTES)

            await jsonrpc.serve(read_chunk, self._protocol, self._stopping)
            self.shutdown()  # type: ignore[no-untyped-call]

        async def listen() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            logger.info("serving on %s:%s", host, port)
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(listen())
        except asyncio.CancelledError:
            pass
        finally:
            stop_event.set()

    @property
    def _protocol(self) -> EngramProtocol:
        assert isinstance(self.protocol, EngramProtocol)
        return self.protocol

    def _stopping(self) -> bool:
        return self._stop_event is not None and self._stop_event.is_set()

    # -- folders -------------------------------------------------------------------------

    def add_folder(self, path: Path) -> FolderState | None:
        """Open (or create) the store for a workspace folder; None if it cannot have one."""
        try:
            root = find_root(path)
        except Exception as exc:
            self.show_message(f"engram: {getattr(exc, 'message', exc)}", types.MessageType.Warning)
            return None
        if root in self.folders:
            self._opened[path] = root
            return self.folders[root]
        if not has_store(root) and not is_git_repository(root):
            # A store is made only in a project (a git repository) or where `.engram/` already
            # is (`engram init`, or settings written there first): an editor opening a downloads
            # folder must not leave `.engram/` in it.
            self.show_message(
                f"engram is off in {root}: it is neither a git repository nor initialised "
                "(run `engram init` there to use engram)",
                types.MessageType.Info,
            )
            return None
        try:
            store = Store.open_or_init(root)
        except Exception as exc:
            self.show_message(
                f"engram: cannot open the store in {root}: {getattr(exc, 'message', exc)}",
                types.MessageType.Error,
            )
            logger.exception("cannot open the store in %s", root)
            return None
        self._tell_store_notices(store)
        # A server lives long and answers while the user waits: SQLite's write-ahead log is
        # folded into the database when the folder is quiet, not inside a request.
        store.fold_log_when_idle()
        state = FolderState(root=root, store=store, settings=config.load(root))
        self.folders[root] = state
        self._opened[path] = root
        return state

    def _tell_store_notices(self, store: Store) -> None:
        """Show the store's notices (recreated after a deletion, ...) as window/showMessage.

        Store work runs on worker threads; the message is sent from the event loop's thread.
        """
        loop: asyncio.AbstractEventLoop | None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None

        def tell(text: str) -> None:
            logger.warning("%s", text)
            message = f"engram: {text}"
            if loop is not None and loop.is_running():
                loop.call_soon_threadsafe(self.show_message, message, types.MessageType.Warning)
            else:
                self.show_message(message, types.MessageType.Warning)

        for notice in store.notices:
            tell(notice)
        store.notice_listeners.append(tell)

    def remove_folder(self, path: Path) -> None:
        """Close the stores the client's folder `path` used, those no other open folder uses
        (removing a nested project must not turn engram off in the one around it)."""
        served = self._opened.pop(path, None)
        if served is None:
            # A folder never opened as such: every project at or inside it goes.
            inside = [r for r in self.folders if r == path or path in r.parents]
            self._opened = {p: r for p, r in self._opened.items() if r not in inside}
        for root in [served] if served else inside:
            if root in self.folders and root not in self._opened.values():
                self.folders.pop(root).store.close()

    def state_for_path(self, path: Path) -> FolderState | None:
        """The folder holding `path` (the innermost one when folders nest)."""
        best: FolderState | None = None
        for root, state in self.folders.items():
            if (path == root or root in path.parents) and (
                best is None or len(root.parts) > len(best.root.parts)
            ):
                best = state
        return best

    def state_for_uri(self, uri: str) -> FolderState | None:
        fs_path = to_fs_path(uri)
        return self.state_for_path(Path(fs_path)) if fs_path else None

    def state_for_command(self, args: dict[str, Any]) -> FolderState:
        """The folder a command acts on: `workspace` or `uri` in its arguments, else the first."""
        from memory_core.errors import UsageError

        for key in ("workspace", "uri"):
            value = args.get(key)
            if isinstance(value, str) and value:
                path = Path(to_fs_path(value) or value) if "://" in value else Path(value)
                state = self.state_for_path(path.resolve())
                if state is None:
                    raise UsageError(f"{value!r} is not in any workspace folder engram serves")
                return state
        if not self.folders:
            raise UsageError(
                "no workspace folder is open", hint="open a folder, then run the command"
            )
        return next(iter(self.folders.values()))

    # -- helpers for features ------------------------------------------------------------

    def show_message(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    async def run_blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run store work on a thread, so hover and didChange never wait behind it."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.thread_pool, partial(fn, *args, **kwargs))

    def client_supports(self, *path: str) -> bool:
        """Whether the client capability at `path` (snake_case attributes) is set and truthy."""
        value: Any = self.client_capabilities
        for part in path:
            value = getattr(value, part, None)
            if value is None:
                return False
        return bool(value)

    def close_all(self) -> None:
        for state in self.folders.values():
            state.store.close()
        self.folders.clear()
        self._opened.clear()
