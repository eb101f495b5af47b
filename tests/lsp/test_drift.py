"""Drift in the editor: overlapping editor and disk edits, the unsaved-buffer warning and its diff."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import diagnostics_for, execute, make_project, open_document, wait_for
from tests.lsp.test_evolution import TEXT, edit_line, wait_for_rows, watching, write_on_disk


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "ws")
    (root / "a.py").write_text(TEXT)
    return root


async def drift_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [
        d for d in await diagnostics_for(client, uri) if d.code == "drift" and d.source == "engram"
    ]


async def saved_edit(client: LanguageClient, folder: Path, mode: str, line: int) -> tuple[str, str]:
    """The user changes `line` (0-based) and saves; returns (uri, saved text)."""
    uri = open_document(client, folder / "a.py")
    edit_line(client, uri, 2, line, f"line {line + 1}, by the user\n")
    saved = TEXT.replace(f"line {line + 1}\n", f"line {line + 1}, by the user\n", 1)
    (folder / "a.py").write_text(saved)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await write_on_disk(client, folder / "a.py", saved, mode)
    await wait_for_rows(client, folder / "a.py", 1)
    return uri, saved


async def test_overlapping_editor_and_disk_edits_are_a_drift_diagnostic(
    client: LanguageClient,
) -> None:
    mode = await watching(client)
    folder: Path = client.folder  # type: ignore[attr-defined]
    uri, saved = await saved_edit(client, folder, mode, 4)
    await write_on_disk(
        client,
        folder / "a.py",
        saved.replace("line 5, by the user\n", "line 5, by an agent\n"),
        mode,
    )
    rows = await wait_for_rows(client, folder / "a.py", 2)
    assert [r["actor"] for r in rows] == ["external", "editor"]

    async def found() -> list[types.Diagnostic]:
        return await drift_diagnostics(client, uri)

    diagnostics: list[types.Diagnostic] = []
    for _ in range(40):
        diagnostics = await found()
        if diagnostics:
            break
        await asyncio.sleep(0.1)
    assert len(diagnostics) == 1, diagnostics
    (diagnostic,) = diagnostics
    assert diagnostic.range.start.line == 4 and diagnostic.range.end.line == 4
    assert (
        diagnostic.severity == types.DiagnosticSeverity.Information
    )  # one line, seconds apart: medium
    assert "you (in the editor)" in diagnostic.message and "another program" in diagnostic.message

    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=4, character=2),
        )
    )
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    assert (
        "engram drift" in text
        and "| editor" in text
        and "| external" in text
        and "just now" in text
    )

    report = await execute(client, "engram.drift")
    assert [(d["kind"], d["lines"]) for d in report["drift"] if d["kind"] == "overlap"] == [
        ("overlap", [5, 5])
    ]


async def test_non_overlapping_editor_and_disk_edits_are_no_drift(client: LanguageClient) -> None:
    mode = await watching(client)
    folder: Path = client.folder  # type: ignore[attr-defined]
    uri, saved = await saved_edit(client, folder, mode, 4)
    await write_on_disk(
        client, folder / "a.py", saved.replace("line 20\n", "line 20, by an agent\n"), mode
    )
    rows = await wait_for_rows(client, folder / "a.py", 2)
    assert rows[0]["actor"] == "external" and rows[0]["lines"] == [[20, 20]]
    await asyncio.sleep(0.3)
    assert await drift_diagnostics(client, uri) == []


async def test_a_buffer_with_unsaved_edits_changed_on_disk_is_warned_with_a_diff_action(
    client: LanguageClient,
) -> None:
    mode = await watching(client)
    folder: Path = client.folder  # type: ignore[attr-defined]
    uri = open_document(client, folder / "a.py")
    edit_line(client, uri, 2, 1, "line 2, unsaved\n")
    await write_on_disk(
        client, folder / "a.py", TEXT.replace("line 25\n", "line 25 from disk\n"), mode
    )

    diagnostics: list[types.Diagnostic] = []
    for _ in range(60):
        diagnostics = [
            d
            for d in await drift_diagnostics(client, uri)
            if isinstance(d.data, dict) and d.data.get("kind") == "unsaved"
        ]
        if diagnostics:
            break
        await asyncio.sleep(0.1)
    assert len(diagnostics) == 1
    warning = diagnostics[0]
    assert warning.range.start.line == 0
    assert warning.severity == types.DiagnosticSeverity.Information
    assert "changed on disk while this buffer has unsaved changes" in warning.message

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=warning.range,
            context=types.CodeActionContext(diagnostics=[warning]),
        )
    )
    # pygls' client may structure a CodeAction literal as a Command (same `title`/`command` keys),
    # leaving the nested command as text: match on the title and the command name either way.
    fix = [a for a in actions or [] if a.title == "Show the difference with the file on disk"]
    assert len(fix) == 1 and "engram.drift.diff" in str(fix[0].command)
    result: dict[str, Any] = await execute(client, "engram.drift.diff", {"uri": uri})
    assert "-line 2\n+line 2, unsaved" in result["diff"]
    assert "-line 25 from disk\n+line 25" in result["diff"]
    shown = await wait_for(lambda: [d for d in client.shown_documents if d.uri.endswith(".diff")])
    assert shown[0].uri == result["view"]

    # Saving over it is the user's decision; afterwards the warning is gone.
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await execute(client, "engram.evolution.flush")
    for _ in range(40):
        if not [
            d
            for d in await drift_diagnostics(client, uri)
            if d.range.start.line == 0 and d.data.get("kind") == "unsaved"
        ]:  # type: ignore[union-attr]
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the unsaved-buffer warning stayed after saving")


async def test_a_clean_buffer_reloaded_from_disk_is_neither_an_edit_nor_a_conflict(
    client: LanguageClient,
) -> None:
    mode = await watching(client)
    folder: Path = client.folder  # type: ignore[attr-defined]
    uri = open_document(client, folder / "a.py")
    first = TEXT.replace("line 10\n", "line 10 by an agent\n")
    await write_on_disk(client, folder / "a.py", first, mode)
    await wait_for_rows(client, folder / "a.py", 1)
    # The editor reloads the unmodified buffer from disk, as VS Code and Neovim (autoread) do.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=first)],
        )
    )
    await write_on_disk(
        client, folder / "a.py", first.replace("line 11\n", "line 11 by an agent\n"), mode
    )
    rows = await wait_for_rows(client, folder / "a.py", 2)
    assert [r["actor"] for r in rows] == ["external", "external"]
    await asyncio.sleep(0.3)
    assert await drift_diagnostics(client, uri) == []
