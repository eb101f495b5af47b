"""The session's life as the server the real `engram lsp` builds handles it, in this process:
which folders `initialize` opens, the editor's settings fetched at `initialized` and on a change,
folders added and removed, `shutdown`, and every document event fanned out to the features
(test_lifecycle.py drives the same over stdio with real clients).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import Workspace

from lsp_server.features import documents, lifecycle
from lsp_server.server import DocumentListener, EngramServer, FolderState
from lsp_server.setup import create_server

# The features are reached through the server; the names keep their imports used.
FEATURES = (documents, lifecycle)


@pytest.fixture
def server() -> Iterator[EngramServer]:
    made = create_server()
    made.protocol.client_capabilities = types.ClientCapabilities()
    yield made
    made.close_all()


@pytest.fixture(autouse=True)
def log_level_restored() -> Iterator[None]:
    """The editor's `log.level` sets the level of engram's logger: put it back after."""
    engram = logging.getLogger("engram")
    before = engram.level
    yield
    engram.setLevel(before)


def _project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / ".git").mkdir()
    return root.resolve()


def _uri(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


def _handler(server: EngramServer, method: str) -> Any:
    return server.protocol.fm.features[method]


def _shown(server: EngramServer) -> list[types.ShowMessageParams]:
    sent: list[types.ShowMessageParams] = []
    server.window_show_message = sent.append  # type: ignore[method-assign]
    return sent


def _configuration(server: EngramServer, answer: Any) -> list[types.ConfigurationParams]:
    """A client that supports `workspace/configuration` and answers `answer` (raised if an
    exception)."""
    server.protocol.client_capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=True)
    )
    asked: list[types.ConfigurationParams] = []

    async def configuration(params: types.ConfigurationParams) -> Any:
        asked.append(params)
        if isinstance(answer, Exception):
            raise answer
        return answer

    server.workspace_configuration_async = configuration  # type: ignore[method-assign]
    return asked


def _initialize(server: EngramServer, **params: Any) -> None:
    # What pygls' own `initialize` does before engram's handler: the workspace is made.
    server.protocol._workspace = Workspace(
        None, types.TextDocumentSyncKind.Incremental, [], types.PositionEncodingKind.Utf16
    )
    _handler(server, types.INITIALIZE)(
        types.InitializeParams(capabilities=server.protocol.client_capabilities, **params)
    )


@pytest.mark.parametrize("given", ["folders", "root_uri", "root_path"])
def test_initialize_opens_the_folders_the_client_names_in_the_order_it_prefers(
    server: EngramServer, tmp_path: Path, given: str
) -> None:
    first, second, third = (_project(tmp_path / name) for name in ("one", "two", "three"))
    folders = [types.WorkspaceFolder(uri=_uri(p), name=p.name) for p in (first, second)]
    heard: list[types.InitializeParams] = []
    server.initialize_listeners.append(lambda ls, params: heard.append(params))
    # A client may send every form: the folders win over rootUri, rootUri over rootPath.
    params: dict[str, Any] = {
        "folders": {"workspace_folders": folders, "root_uri": _uri(third), "root_path": "/x"},
        "root_uri": {"root_uri": _uri(third), "root_path": str(first)},
        "root_path": {"root_path": str(second)},
    }[given]
    _initialize(server, **params)
    expected = {"folders": [first, second], "root_uri": [third], "root_path": [second]}[given]
    assert list(server.folders) == expected
    assert len(heard) == 1 and heard[0].root_uri == params.get("root_uri")


def test_initialize_without_any_folder_opens_none(server: EngramServer) -> None:
    _initialize(server)
    assert server.folders == {}


async def test_initialized_layers_the_editors_settings_and_shows_what_is_wrong(
    server: EngramServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _project(tmp_path / "ws")
    asked = _configuration(server, [{"log": {"level": "warning"}, "gotchas": {"nonsense": 1}}])
    shown = _shown(server)
    _initialize(server, root_uri=_uri(root))
    ready: list[Path] = []
    server.folder_ready_listeners.append(lambda ls, state: ready.append(state.root))
    await _handler(server, types.INITIALIZED)(types.InitializedParams())
    [params] = asked
    assert [(i.scope_uri, i.section) for i in params.items] == [(_uri(root), "engram")]
    state = server.folders[root]
    assert state.settings["log.level"] == "warning"
    assert logging.getLogger("engram").level == logging.WARNING
    assert [(m.type, m.message) for m in shown] == [
        (
            types.MessageType.Warning,
            "engram: editor settings: unknown setting 'gotchas.nonsense' ignored",
        )
    ]
    assert ready == [root]
    # The log (what a bug report carries) says it too.
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "editor settings: unknown setting 'gotchas.nonsense' ignored"
    ]


@pytest.mark.parametrize(
    "answer",
    [RuntimeError("client went away"), [None], [], None, ["level=debug"]],
    ids=["error", "null", "empty", "none", "not-a-table"],
)
async def test_a_client_without_usable_settings_gets_the_files_settings(
    server: EngramServer, tmp_path: Path, answer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    root = _project(tmp_path / "ws")
    (root / ".engram").mkdir(exist_ok=True)
    (root / ".engram" / "config.toml").write_text('[log]\nlevel = "error"\n')
    _configuration(server, answer)
    _initialize(server, root_uri=_uri(root))
    await _handler(server, types.INITIALIZED)(types.InitializedParams())
    assert server.folders[root].settings["log.level"] == "error"
    failures = [r.getMessage() for r in caplog.records if r.exc_info and r.module == "lifecycle"]
    if isinstance(answer, Exception):
        assert failures == [f"workspace/configuration failed for {root}"]
    else:
        assert failures == []


async def test_a_client_that_cannot_answer_settings_is_not_asked(
    server: EngramServer, tmp_path: Path
) -> None:
    root = _project(tmp_path / "ws")
    asked = _configuration(server, [{"log": {"level": "debug"}}])
    server.protocol.client_capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=False)
    )
    _initialize(server, root_uri=_uri(root))
    await _handler(server, types.INITIALIZED)(types.InitializedParams())
    assert asked == []
    assert server.folders[root].settings["log.level"] == "info"


async def test_a_failing_listener_never_stops_the_others_at_initialized(
    server: EngramServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = _project(tmp_path / "ws")
    _initialize(server, root_uri=_uri(root))
    called: list[str] = []

    def broken_ready(ls: EngramServer, state: FolderState) -> None:
        raise RuntimeError("ready bug")

    async def broken_initialized(ls: EngramServer) -> None:
        raise RuntimeError("initialized bug")

    async def recording(ls: EngramServer) -> None:
        called.append("initialized")

    def broken_retention(*_args: object) -> None:
        raise RuntimeError("retention bug")

    monkeypatch.setattr(lifecycle.limits, "enforce", broken_retention)
    server.folder_ready_listeners[:0] = [broken_ready]
    server.folder_ready_listeners.append(lambda ls, state: called.append("ready"))
    server.initialized_listeners[:] = [broken_initialized, recording]
    await _handler(server, types.INITIALIZED)(types.InitializedParams())
    assert called == ["ready", "initialized"]
    failures = [r.getMessage() for r in caplog.records if r.exc_info and r.module == "lifecycle"]
    assert failures == [
        f"retention failed for {root}",
        f"folder-ready listener failed for {root}",
        f"initialized listener {broken_initialized} failed",
    ]


async def test_a_settings_change_reloads_every_folder_and_refreshes_the_squiggles(
    server: EngramServer, tmp_path: Path
) -> None:
    roots = [_project(tmp_path / name) for name in ("a", "b")]
    answers = iter([[{"log": {"level": "debug"}}], [{"log": {"level": "error"}}]])
    server.protocol.client_capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=True)
    )

    async def configuration(params: types.ConfigurationParams) -> Any:
        return next(answers)

    server.workspace_configuration_async = configuration  # type: ignore[method-assign]
    refreshed: list[bool] = []
    server.refresh_diagnostics = lambda: refreshed.append(True)  # type: ignore[method-assign]
    _initialize(
        server, workspace_folders=[types.WorkspaceFolder(uri=_uri(r), name="") for r in roots]
    )
    await _handler(server, types.WORKSPACE_DID_CHANGE_CONFIGURATION)(
        types.DidChangeConfigurationParams(settings=None)
    )
    assert [server.folders[r].settings["log.level"] for r in roots] == ["debug", "error"]
    assert refreshed == [True]


async def test_folders_added_and_removed_while_running(
    server: EngramServer, tmp_path: Path
) -> None:
    old, new = _project(tmp_path / "old"), _project(tmp_path / "new")
    plain = tmp_path / "downloads"
    plain.mkdir()
    _configuration(server, [{"log": {"level": "debug"}}])
    _initialize(server, root_uri=_uri(old))
    ready: list[Path] = []
    server.folder_ready_listeners.append(lambda ls, state: ready.append(state.root))
    await _handler(server, types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[
                    types.WorkspaceFolder(uri=_uri(new), name="new"),
                    types.WorkspaceFolder(uri=_uri(plain.resolve()), name="plain"),
                ],
                removed=[types.WorkspaceFolder(uri=_uri(old), name="old")],
            )
        )
    )
    # A folder that is no project gets no store, and nothing is made ready for it.
    assert list(server.folders) == [new]
    assert server.folders[new].settings["log.level"] == "debug"
    assert ready == [new]
    assert not (plain / ".engram").exists()


def test_shutdown_closes_every_store(server: EngramServer, tmp_path: Path) -> None:
    root = _project(tmp_path / "ws")
    _initialize(server, root_uri=_uri(root))
    store = server.folders[root].store
    _handler(server, types.SHUTDOWN)(None)
    assert server.folders == {}
    with pytest.raises(Exception):  # noqa: B017 - any error: the store is closed
        store.query_one("SELECT 1")


# document events


class Recording(DocumentListener):
    def __init__(self) -> None:
        self.heard: list[tuple[Any, ...]] = []

    def did_open(self, server: EngramServer, state: FolderState, document: Any) -> None:
        assert isinstance(server, EngramServer)  # features reach the client through it
        self.heard.append(("open", state.root, document.uri, document.source))

    def did_change(
        self, server: EngramServer, state: FolderState, document: Any, changes: list[Any]
    ) -> None:
        assert isinstance(server, EngramServer)
        self.heard.append(("change", state.root, document.source, len(changes)))

    def did_save(self, server: EngramServer, state: FolderState, document: Any) -> None:
        assert isinstance(server, EngramServer)
        self.heard.append(("save", state.root, document.uri))

    def did_close(self, server: EngramServer, state: FolderState, uri: str) -> None:
        assert isinstance(server, EngramServer)
        self.heard.append(("close", state.root, uri))


class Broken(DocumentListener):
    def did_open(self, *args: Any) -> None:
        raise RuntimeError("listener bug")

    did_change = did_save = did_close = did_open


def test_every_document_event_reaches_every_listener_even_after_a_failing_one(
    server: EngramServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _project(tmp_path / "ws")
    _initialize(server, root_uri=_uri(root))
    recording = Recording()
    server.document_listeners[:] = [Broken(), recording]
    uri = _uri(root / "a.py")
    item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text="x = 1\n")
    # pygls keeps the text (its own handlers run first), then engram's handlers fan out.
    server.workspace.put_text_document(item)
    _handler(server, types.TEXT_DOCUMENT_DID_OPEN)(types.DidOpenTextDocumentParams(item))
    change = types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text="x = 2\n")],
    )
    server.workspace.update_text_document(change.text_document, change.content_changes[0])
    _handler(server, types.TEXT_DOCUMENT_DID_CHANGE)(change)
    identifier = types.TextDocumentIdentifier(uri=uri)
    _handler(server, types.TEXT_DOCUMENT_DID_SAVE)(types.DidSaveTextDocumentParams(identifier))
    _handler(server, types.TEXT_DOCUMENT_DID_CLOSE)(types.DidCloseTextDocumentParams(identifier))
    assert recording.heard == [
        ("open", root, uri, "x = 1\n"),
        ("change", root, "x = 2\n", 1),
        ("save", root, uri),
        ("close", root, uri),
    ]
    failures = [r.getMessage() for r in caplog.records if r.exc_info and r.module == "documents"]
    assert failures == [
        f"Broken.{event} failed for {uri}"
        for event in ("did_open", "did_change", "did_save", "did_close")
    ]


def test_a_document_outside_every_folder_reaches_no_listener(
    server: EngramServer, tmp_path: Path
) -> None:
    root = _project(tmp_path / "ws")
    _initialize(server, root_uri=_uri(root))
    recording = Recording()
    server.document_listeners[:] = [recording]
    uri = _uri(tmp_path / "elsewhere.py")
    item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text="x = 1\n")
    server.workspace.put_text_document(item)
    _handler(server, types.TEXT_DOCUMENT_DID_OPEN)(types.DidOpenTextDocumentParams(item))
    _handler(server, types.TEXT_DOCUMENT_DID_CLOSE)(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
    )
    assert recording.heard == []
