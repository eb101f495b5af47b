"""What an editor gets back for hover, code actions, code lenses and watched files, asked of the
server the real `engram lsp` builds, in this process (test_gotchas.py and test_evolution.py ask
the same over stdio). Each request goes through the handler the server registered, so what is
asserted is the answer a client would receive.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import TextDocument

from lsp_server.features import code_actions, code_lens, hover, watching
from lsp_server.features import gotchas as lsp_gotchas
from lsp_server.server import EngramServer, FolderState
from memory_core import evolution, gotchas

# Every test here reaches the features through the server; these names keep the imports used.
FEATURES = (code_actions, code_lens, hover, watching)


@pytest.fixture(autouse=True)
def client_said_nothing(server: EngramServer) -> None:
    """A client that states no capabilities, as `initialize` would leave them."""
    server.protocol.client_capabilities = types.ClientCapabilities()


def _open(server: EngramServer, state: FolderState, rel: str, source: str) -> TextDocument:
    path = state.root / rel
    path.write_text(source, encoding="utf-8")
    uri = from_fs_path(str(path))
    assert uri is not None
    server.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=source)
    )
    return server.workspace.get_text_document(uri)


def _handler(server: EngramServer, method: str) -> Any:
    return server.protocol.fm.features[method]


def _outside(server: EngramServer, tmp_path: Path) -> str:
    stray = tmp_path / "elsewhere.py"
    stray.write_text("eval(x)\n")
    uri = from_fs_path(str(stray))
    assert uri is not None
    server.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text="eval(x)\n")
    )
    return uri


# hover


def _hover(server: EngramServer, uri: str, line: int, character: int) -> types.Hover | None:
    result: types.Hover | None = _handler(server, types.TEXT_DOCUMENT_HOVER)(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
    )
    return result


def _hover_formats(server: EngramServer, formats: list[types.MarkupKind] | None) -> None:
    server.protocol.client_capabilities = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(content_format=formats)
        )
    )


@pytest.fixture
def eval_gotcha(state: FolderState) -> gotchas.Gotcha:
    made = gotchas.add(
        state.store,
        "eval is unsafe",
        pattern="eval(",
        pattern_kind="literal",
        workaround="use `ast.literal_eval`",
    )
    lsp_gotchas.folder_of(state).rebuild()
    return made


def test_a_hover_on_a_gotcha_shows_its_story_as_markdown(
    server: EngramServer, state: FolderState, eval_gotcha: gotchas.Gotcha
) -> None:
    document = _open(server, state, "a.py", "x = 1\ny = eval(s)\n")
    shown = _hover(server, document.uri, 1, 5)
    assert shown is not None
    assert isinstance(shown.contents, types.MarkupContent)
    assert shown.contents.kind == types.MarkupKind.Markdown
    assert f"engram gotcha `{eval_gotcha.id}`" in shown.contents.value
    assert "**Workaround:** use `ast.literal_eval`" in shown.contents.value
    # Nothing to say on a line without a gotcha: no hover at all, not an empty one.
    assert _hover(server, document.uri, 0, 1) is None


def test_a_hover_for_a_file_outside_every_folder_is_none(
    server: EngramServer, state: FolderState, eval_gotcha: gotchas.Gotcha, tmp_path: Path
) -> None:
    assert _hover(server, _outside(server, tmp_path), 0, 2) is None


def test_hovers_of_several_providers_are_joined_by_a_rule_and_a_failing_one_is_skipped(
    server: EngramServer,
    state: FolderState,
    eval_gotcha: gotchas.Gotcha,
    caplog: pytest.LogCaptureFixture,
) -> None:
    document = _open(server, state, "a.py", "y = eval(s)\n")
    called_with: list[tuple[object, ...]] = []

    def broken(*_args: object) -> str:
        raise RuntimeError("provider bug")

    def silent(*args: object) -> str:
        called_with.append(args)
        return ""

    def extra(*_args: object) -> str:
        return "**more** about this line"

    server.hover_providers[:0] = [broken, silent]
    server.hover_providers.append(extra)
    shown = _hover(server, document.uri, 0, 5)
    assert shown is not None
    assert isinstance(shown.contents, types.MarkupContent)
    parts = shown.contents.value.split("\n\n---\n\n")
    # The silent provider adds nothing (no empty section between two rules).
    assert len(parts) == 2
    assert parts[0].startswith(f"engram gotcha `{eval_gotcha.id}`")
    assert parts[1] == "**more** about this line"
    # Every provider is asked with the server, the folder, the document and the position.
    [(ls, folder, asked, position)] = called_with
    assert (ls, folder, asked.uri, position) == (
        server,
        state,
        document.uri,
        types.Position(line=0, character=5),
    )
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.getMessage() == f"hover provider {broken} failed for {document.uri}"
    assert record.levelno == logging.ERROR


@pytest.mark.parametrize(
    ("formats", "markdown"),
    [
        (None, True),
        ([], True),
        ([types.MarkupKind.Markdown, types.MarkupKind.PlainText], True),
        ([types.MarkupKind.PlainText], False),
    ],
    ids=["unsaid", "empty", "markdown-first", "plaintext-only"],
)
def test_a_client_that_shows_only_plain_text_gets_the_hover_without_markup(
    server: EngramServer,
    state: FolderState,
    eval_gotcha: gotchas.Gotcha,
    formats: list[types.MarkupKind] | None,
    markdown: bool,
) -> None:
    _hover_formats(server, formats)
    document = _open(server, state, "a.py", "y = eval(s)\n")
    shown = _hover(server, document.uri, 0, 5)
    assert shown is not None
    assert isinstance(shown.contents, types.MarkupContent)
    text = shown.contents.value
    if markdown:
        assert shown.contents.kind == types.MarkupKind.Markdown
        assert "**Workaround:**" in text
    else:
        assert shown.contents.kind == types.MarkupKind.PlainText
        assert f"engram gotcha {eval_gotcha.id}" in text
        assert "Workaround: use ast.literal_eval" in text
        assert "`" not in text and "**" not in text


def test_markdown_becomes_plain_text_a_reader_can_follow() -> None:
    markdown = (
        "# Title\n"
        "### Sub heading\n"
        "**bold** and *stressed* with `code`\n"
        "---\n"
        "see [the docs](https://example.com/a_b) and [x](y)\n"
        "2 * 3 * 4 stays, __init__ and a_b_c stay, **x*y** loses its bold\n"
        "no#heading here\n"
        "----- "
    )
    assert hover.markdown_to_plaintext(markdown) == (
        "Title\n"
        "Sub heading\n"
        "bold and stressed with code\n" + "-" * 20 + "\n"
        "see the docs (https://example.com/a_b) and x (y)\n"
        "2 * 3 * 4 stays, __init__ and a_b_c stay, x*y loses its bold\n"
        "no#heading here\n"
        "----- "
    )
    # A rule only where a line is nothing but dashes; a heading only with a space after it.
    assert hover.markdown_to_plaintext("--\n-- x\n#tag\n####### seven") == (
        "--\n-- x\n#tag\n####### seven"
    )
    assert hover.markdown_to_plaintext("[not a link] (x) and [](y)") == "[not a link] (x) and [](y)"


# code actions


def _code_actions(
    server: EngramServer,
    document: TextDocument,
    diagnostics: list[types.Diagnostic],
    only: list[str] | None = None,
    selected: tuple[int, int] = (4, 9),
) -> list[types.CodeAction] | None:
    result: list[types.CodeAction] | None = _handler(server, types.TEXT_DOCUMENT_CODE_ACTION)(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=document.uri),
            range=types.Range(
                start=types.Position(line=0, character=selected[0]),
                end=types.Position(line=0, character=selected[1]),
            ),
            context=types.CodeActionContext(diagnostics=diagnostics, only=only),
        )
    )
    return result


def test_code_actions_on_a_gotcha_squiggle_offer_its_quick_fixes(
    server: EngramServer, state: FolderState, eval_gotcha: gotchas.Gotcha
) -> None:
    document = _open(server, state, "a.py", "y = eval(s)\n")
    squiggles = lsp_gotchas.diagnostics(server, state, document)
    actions = _code_actions(server, document, squiggles)
    assert actions is not None
    assert [a.title for a in actions] == [
        "Resolve gotcha for the whole project: eval is unsafe",
        f"Snooze gotcha for {lsp_gotchas.SNOOZE_DAYS} days",
        "Promote gotcha to team (team/gotchas.toml)",
        "Show all gotchas",
        "Add gotcha from selection",
    ]
    assert [a.kind for a in actions] == [types.CodeActionKind.QuickFix] * 4 + [
        types.CodeActionKind.Source
    ]
    resolve = actions[0].command
    assert resolve is not None
    assert resolve.command == "engram.gotcha.resolve"
    assert resolve.arguments == [{"id": eval_gotcha.id, "uri": document.uri}]
    # Nothing to fix where there is no squiggle nor selection: no actions at all (null, not []).
    assert _code_actions(server, document, [], selected=(4, 4)) is None


def test_code_actions_for_a_file_outside_every_folder_are_none(
    server: EngramServer, state: FolderState, tmp_path: Path
) -> None:
    uri = _outside(server, tmp_path)
    assert _code_actions(server, TextDocument(uri, "eval(x)\n"), []) is None


def test_only_the_kinds_the_client_asks_for_are_returned_and_a_failing_provider_is_skipped(
    server: EngramServer,
    state: FolderState,
    eval_gotcha: gotchas.Gotcha,
    caplog: pytest.LogCaptureFixture,
) -> None:
    document = _open(server, state, "a.py", "y = eval(s)\n")
    squiggles = lsp_gotchas.diagnostics(server, state, document)
    organize = types.CodeAction(title="Tidy", kind=types.CodeActionKind.SourceOrganizeImports)
    kindless = types.CodeAction(title="No kind")
    asked: list[tuple[object, ...]] = []

    def broken(*_args: object) -> list[types.CodeAction]:
        raise RuntimeError("provider bug")

    def source_actions(*args: object) -> list[types.CodeAction]:
        asked.append(args)
        return [organize, kindless]

    server.code_action_providers[:0] = [broken, source_actions]
    everything = _code_actions(server, document, squiggles)
    assert everything is not None
    assert [a.title for a in everything][:2] == ["Tidy", "No kind"]
    assert len(everything) == 7
    [(ls, folder, doc, params)] = asked
    assert (ls, folder, doc.uri, params.text_document.uri) == (
        server,
        state,
        document.uri,
        document.uri,
    )
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.getMessage() == f"code action provider {broken} failed for {document.uri}"
    # `source` covers its sub-kinds; a kindless action is in no asked-for kind.
    sources = _code_actions(server, document, squiggles, only=[types.CodeActionKind.Source])
    assert sources is not None
    assert [a.title for a in sources] == ["Tidy", "Add gotcha from selection"]
    fixes = _code_actions(server, document, squiggles, only=[types.CodeActionKind.QuickFix])
    assert fixes is not None and len(fixes) == 4
    assert all(a.kind == types.CodeActionKind.QuickFix for a in fixes)
    assert _code_actions(server, document, squiggles, only=["refactor"]) is None


def test_the_server_advertises_quick_fixes_and_source_actions_without_resolve(
    server: EngramServer,
) -> None:
    options = server.protocol.fm.feature_options[types.TEXT_DOCUMENT_CODE_ACTION]
    assert options == types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Source],
        resolve_provider=False,
    )
    lens = server.protocol.fm.feature_options[types.TEXT_DOCUMENT_CODE_LENS]
    assert lens == types.CodeLensOptions(resolve_provider=False)


# code lenses


def _code_lens(server: EngramServer, uri: str) -> list[types.CodeLens] | None:
    result: list[types.CodeLens] | None = _handler(server, types.TEXT_DOCUMENT_CODE_LENS)(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return result


def test_a_file_edited_today_gets_a_lens_saying_how_often_and_by_whom(
    server: EngramServer, state: FolderState
) -> None:
    document = _open(server, state, "a.py", "x = 1\n")
    # Never edited: no lens (null, not an empty list).
    assert _code_lens(server, document.uri) is None
    evolution.record_change(state.store, "a.py", actor="agent", before="", after="x = 1\n")
    evolution.record_change(state.store, "a.py", actor="editor", before="x = 1\n", after="x = 2\n")
    lenses = _code_lens(server, document.uri)
    assert lenses is not None
    [lens] = lenses
    assert lens.range.start == types.Position(line=0, character=0)
    assert lens.command is not None
    assert lens.command.title.startswith("2 edits today · last by you ")
    assert lens.command.command == "engram.evolution.history"
    assert lens.command.arguments == [{"uri": document.uri}]


def test_lenses_of_every_provider_are_listed_and_a_failing_one_is_skipped(
    server: EngramServer, state: FolderState, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    document = _open(server, state, "a.py", "x = 1\n")
    extra = types.CodeLens(
        range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
        ),
        command=types.Command(title="extra", command="engram.status"),
    )
    asked: list[tuple[object, ...]] = []

    def broken(*_args: object) -> list[types.CodeLens]:
        raise RuntimeError("provider bug")

    def more(*args: object) -> list[types.CodeLens]:
        asked.append(args)
        return [extra]

    server.code_lens_providers[:0] = [broken, more]
    assert _code_lens(server, document.uri) == [extra]
    [(ls, folder, doc)] = asked
    assert (ls, folder, doc.uri) == (server, state, document.uri)
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.getMessage() == f"code lens provider {broken} failed for {document.uri}"
    # A file outside every folder: no provider is asked.
    assert _code_lens(server, _outside(server, tmp_path)) is None
    assert len(asked) == 1


# watched files


def _with_watching(server: EngramServer, dynamic: bool | None) -> list[types.RegistrationParams]:
    server.protocol.client_capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=dynamic
            )
        )
    )
    sent: list[types.RegistrationParams] = []

    async def register(params: types.RegistrationParams) -> None:
        sent.append(params)

    server.client_register_capability_async = register  # type: ignore[method-assign]
    return sent


def _watcher_listener(server: EngramServer) -> Any:
    [listener] = [
        listener
        for listener in server.initialized_listeners
        if listener.__module__ == watching.__name__
    ]
    return listener


def test_a_client_that_can_watch_is_asked_to_watch_every_file(server: EngramServer) -> None:
    sent = _with_watching(server, True)
    asyncio.run(_watcher_listener(server)(server))
    [params] = sent
    [registration] = params.registrations
    assert registration.id == watching.REGISTRATION_ID == "engram-watched-files"
    assert registration.method == "workspace/didChangeWatchedFiles"
    assert registration.register_options == {"watchers": [{"globPattern": "**/*"}]}
    assert server.client_watches_files is True


@pytest.mark.parametrize("dynamic", [None, False])
def test_a_client_that_cannot_watch_is_not_asked(
    server: EngramServer, dynamic: bool | None
) -> None:
    sent = _with_watching(server, dynamic)
    asyncio.run(_watcher_listener(server)(server))
    assert sent == []
    # The evolution feature then runs its own watcher.
    assert server.client_watches_files is False


def test_a_client_refusing_the_registration_leaves_the_server_watching_itself(
    server: EngramServer, caplog: pytest.LogCaptureFixture
) -> None:
    _with_watching(server, True)

    async def refuse(params: types.RegistrationParams) -> None:
        raise RuntimeError("registration refused")

    server.client_register_capability_async = refuse  # type: ignore[method-assign]
    asyncio.run(_watcher_listener(server)(server))
    assert server.client_watches_files is False
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.getMessage() == "the client refused the file watcher registration"


def test_watched_file_events_reach_every_listener_once_per_folder(
    server: EngramServer, state: FolderState, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other_root = tmp_path / "other"
    other_root.mkdir()
    (other_root / ".git").mkdir()
    other = server.add_folder(other_root.resolve())
    assert other is not None
    heard: list[tuple[Path, list[str]]] = []

    def broken(*_args: object) -> None:
        raise RuntimeError("listener bug")

    def recording(ls: EngramServer, folder: FolderState, changes: list[types.FileEvent]) -> None:
        assert ls is server
        heard.append((folder.root, [c.uri for c in changes]))

    server.watched_files_listeners[:] = [broken, recording]

    def event(path: Path) -> types.FileEvent:
        uri = from_fs_path(str(path))
        assert uri is not None
        return types.FileEvent(uri=uri, type=types.FileChangeType.Changed)

    changes = [
        event(state.root / "a.py"),
        event(other.root / "b.py"),
        event(tmp_path / "stray.py"),
        event(state.root / "c.py"),
    ]
    _handler(server, types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(
        types.DidChangeWatchedFilesParams(changes=changes)
    )
    # A file outside every folder reaches no listener; the others arrive grouped by folder.
    assert heard == [
        (state.root, [changes[0].uri, changes[3].uri]),
        (other.root, [changes[1].uri]),
    ]
    messages = [r.getMessage() for r in caplog.records if r.exc_info]
    assert messages == [
        f"watched-files listener failed for {state.root}",
        f"watched-files listener failed for {other.root}",
    ]
