"""A memory whose cited lines changed gets a diagnostic on those lines in the editor, with quick
fixes to update the memory to the code as it is now or to forget it; after either, it is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import diagnostics_for, execute, make_project, open_document
from tests.lsp.test_evolution import edit_line

DECISION = "The retry limit is 3: the payment provider bans clients that retry more"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "ws")
    (root / "limits.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 3\n")
    return root


async def stale(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [
        d
        for d in await diagnostics_for(client, uri)
        if d.code == "drift" and isinstance(d.data, dict) and d.data.get("kind") == "stale-citation"
    ]


async def actions_for(
    client: LanguageClient, uri: str, diagnostic: types.Diagnostic
) -> dict[str, Any]:
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    return {a.title: a for a in actions or []}


async def test_a_stale_memory_citation_is_shown_and_fixed_from_the_editor(
    client: LanguageClient,
) -> None:
    folder: Path = client.folder  # type: ignore[attr-defined]
    entry = await execute(
        client,
        "engram.memory.add",
        {"content": DECISION, "type": "decision", "file": "limits.py", "line": 2},
    )
    uri = open_document(client, folder / "limits.py")
    assert await stale(client, uri) == []  # the code is as the memory cites it

    edit_line(client, uri, 2, 1, "RETRY_LIMIT = 5\n")
    await asyncio.sleep(0.05)
    found = await stale(client, uri)
    assert len(found) == 1
    diagnostic = found[0]
    assert diagnostic.range.start.line == 1 and diagnostic.source == "engram"
    assert entry["id"] in diagnostic.message and "changed since" in diagnostic.message
    actions = await actions_for(client, uri, diagnostic)
    assert "engram.memory.recite" in str(actions["Update the memory to the code as it is now"])
    assert "engram.memory.forget" in str(actions["Forget this memory"])

    # Updating takes the code as it is in the file now: save the buffer first, as a person would.
    (folder / "limits.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 5\n")
    await execute(client, "engram.memory.recite", {"id": entry["id"]})
    assert await stale(client, uri) == []

    edit_line(client, uri, 3, 1, "RETRY_LIMIT = 7\n")
    await asyncio.sleep(0.05)
    found = await stale(client, uri)
    assert len(found) == 1
    await execute(client, "engram.memory.forget", {"id": entry["id"]})
    assert await stale(client, uri) == []
