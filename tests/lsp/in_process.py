"""Driving the server `create_server()` builds in this process, as a client would: documents
opened and edited the way pygls and engram's handlers see them, commands run through the table
`workspace/executeCommand` answers from, and what the server sends the client recorded.

Used with the `server` and `state` fixtures of tests/lsp/conftest.py; the stdio tests
(test_checkpoints.py, test_evolution.py, ...) drive the same features through a real client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_server.server import EngramServer


def uri_of(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


def handler(server: EngramServer, method: str) -> Any:
    return server.protocol.fm.features[method]


async def run(server: EngramServer, command: str, args: Any = None) -> Any:
    """`workspace/executeCommand` as the server answers it (errors raised as the client gets them)."""
    return await server.protocol.fm.commands[command](args if args is not None else {})


def open_document(server: EngramServer, path: Path, text: str | None = None) -> str:
    """Open `path` in the editor: with `text`, a buffer differing from the disk."""
    uri = uri_of(path)
    item = types.TextDocumentItem(
        uri=uri,
        language_id="python",
        version=1,
        text=path.read_text(encoding="utf-8") if text is None else text,
    )
    server.workspace.put_text_document(item)
    handler(server, types.TEXT_DOCUMENT_DID_OPEN)(types.DidOpenTextDocumentParams(item))
    return uri


def span(start: int, start_character: int, end: int, end_character: int) -> types.Range:
    return types.Range(
        start=types.Position(line=start, character=start_character),
        end=types.Position(line=end, character=end_character),
    )


def edit(server: EngramServer, uri: str, at: types.Range, text: str) -> None:
    """The user types: one incremental change."""
    document = server.workspace.get_text_document(uri)
    params = types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(
            uri=uri, version=(document.version or 0) + 1
        ),
        content_changes=[types.TextDocumentContentChangePartial(range=at, text=text)],
    )
    server.workspace.update_text_document(params.text_document, params.content_changes[0])
    handler(server, types.TEXT_DOCUMENT_DID_CHANGE)(params)


def replace_all(server: EngramServer, uri: str, text: str) -> None:
    """A client that sends the whole text on every change."""
    document = server.workspace.get_text_document(uri)
    params = types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(
            uri=uri, version=(document.version or 0) + 1
        ),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    )
    server.workspace.update_text_document(params.text_document, params.content_changes[0])
    handler(server, types.TEXT_DOCUMENT_DID_CHANGE)(params)


def save(server: EngramServer, uri: str) -> None:
    path = server.workspace.get_text_document(uri).path
    Path(path).write_text(server.workspace.get_text_document(uri).source, encoding="utf-8")
    handler(server, types.TEXT_DOCUMENT_DID_SAVE)(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


def close(server: EngramServer, uri: str) -> None:
    handler(server, types.TEXT_DOCUMENT_DID_CLOSE)(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    server.workspace.remove_text_document(uri)


@dataclass
class Client:
    """What the server sent the client, and how the client answers its requests."""

    messages: list[types.ShowMessageParams] = field(default_factory=list)
    shown: list[types.ShowDocumentParams] = field(default_factory=list)
    questions: list[types.ShowMessageRequestParams] = field(default_factory=list)
    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    refreshes: int = 0
    lens_refreshes: int = 0
    # Work-done progress: ("create" | "begin" | "end", token, title or None), in order.
    progress: list[tuple[str, str, str | None]] = field(default_factory=list)
    # The button pressed when asked (None: the question dismissed).
    answer: str | None = None
    # Whether `window/showDocument` and `workspace/applyEdit` succeed.
    shows: bool = True
    applies: bool = True

    def said(self) -> list[str]:
        return [m.message for m in self.messages]


class _Progress:
    """The client's side of work-done progress (pygls' `server.work_done_progress`)."""

    def __init__(self, seen: Client, refuse: bool) -> None:
        self.seen, self.refuse = seen, refuse

    async def create_async(self, token: str) -> None:
        self.seen.progress.append(("create", token, None))
        if self.refuse:
            raise RuntimeError("the client refused the progress token")

    def begin(self, token: str, value: types.WorkDoneProgressBegin) -> None:
        self.seen.progress.append(("begin", token, value.title))

    def end(self, token: str, value: types.WorkDoneProgressEnd) -> None:
        self.seen.progress.append(("end", token, None))


def client(
    server: EngramServer,
    *,
    show_document: bool = True,
    lens_refresh: bool = False,
    progress: bool = False,
    refuse_progress: bool = False,
) -> Client:
    """A client with (or without) `window/showDocument` support, code lens refreshes and
    work-done progress, recording what it is sent."""
    seen = Client()
    server.protocol.client_capabilities = types.ClientCapabilities(
        window=types.WindowClientCapabilities(
            show_document=types.ShowDocumentClientCapabilities(support=show_document),
            work_done_progress=progress,
        ),
        workspace=types.WorkspaceClientCapabilities(
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=lens_refresh)
        ),
    )

    def show_message(params: types.ShowMessageParams) -> None:
        seen.messages.append(params)

    async def show_document_async(params: types.ShowDocumentParams) -> types.ShowDocumentResult:
        seen.shown.append(params)
        return types.ShowDocumentResult(success=seen.shows)

    def show_document(params: types.ShowDocumentParams, callback: Any = None) -> None:
        seen.shown.append(params)

    async def ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        seen.questions.append(params)
        return types.MessageActionItem(title=seen.answer) if seen.answer else None

    async def apply_edit(
        params: types.ApplyWorkspaceEditParams,
    ) -> types.ApplyWorkspaceEditResult:
        seen.edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=seen.applies)

    def refresh() -> None:
        seen.refreshes += 1

    def lens_refresh_sent(params: None, callback: Any = None) -> None:
        seen.lens_refreshes += 1

    server.window_show_message = show_message  # type: ignore[method-assign]
    server.window_show_document_async = show_document_async  # type: ignore[method-assign]
    server.window_show_document = show_document  # type: ignore[method-assign]
    server.window_show_message_request_async = ask  # type: ignore[method-assign]
    server.workspace_apply_edit_async = apply_edit  # type: ignore[method-assign]
    server.workspace_code_lens_refresh = lens_refresh_sent  # type: ignore[method-assign]
    server.refresh_diagnostics = refresh
    server.protocol.progress = _Progress(seen, refuse_progress)  # type: ignore[assignment]
    return seen
