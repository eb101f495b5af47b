"""Memories in the editor: engram.memory.add/search and workspace/symbol (Ctrl+T, symbol pickers)."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.lsp.conftest import execute


async def _symbols(client: LanguageClient, query: str) -> list[types.SymbolInformation]:
    result = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query))
    return list(result or [])


async def test_workspace_symbol_finds_a_memory_by_a_word_of_its_content(
    client: LanguageClient,
) -> None:
    added = await execute(
        client,
        "engram.memory.add",
        {
            "content": "Deployments go through the blue-green switch on Fridays",
            "type": "decision",
            "tags": ["deploy"],
        },
    )
    await execute(
        client,
        "engram.memory.add",
        {"content": "Prefer httpx over requests in new code", "type": "preference"},
    )

    symbols = await _symbols(client, "switch")
    assert [s.name for s in symbols] == ["Deployments go through the blue-green switch on Fridays"]
    symbol = symbols[0]
    assert symbol.kind == types.SymbolKind.String
    assert added["id"] in (symbol.container_name or "")
    # No cited code: the location is the memory's entry in the store's readable export.
    export = client.folder / ".engram" / "exports" / "memories.md"
    assert symbol.location.uri == export.as_uri()
    lines = export.read_text().splitlines()
    assert lines[symbol.location.range.start.line].startswith(f"## {added['id']}")

    # Typing a prefix finds it too, and a word in no memory finds nothing.
    assert [s.name for s in await _symbols(client, "deploym")] == [symbol.name]
    assert await _symbols(client, "kubernetes") == []


async def test_a_memory_citing_code_is_located_at_the_cited_lines(client: LanguageClient) -> None:
    source = client.folder / "app.py"
    source.write_text("import os\n\nTIMEOUT = 30  # seconds\n")
    await execute(
        client,
        "engram.memory.add",
        {
            "content": "The TIMEOUT must stay above the proxy's 25 s limit",
            "file": source.as_uri(),
            "line": 3,
        },
    )
    symbols = await _symbols(client, "proxy")
    assert len(symbols) == 1
    assert symbols[0].location.uri == source.as_uri()
    assert symbols[0].location.range.start.line == 2


async def test_memory_search_command_ranks_and_returns_results(client: LanguageClient) -> None:
    for text in (
        "Flaky test: test_upload times out on CI when the S3 mock starts late",
        "We format with ruff, line length 100",
        "The upload endpoint streams files larger than 5 MB",
    ):
        await execute(client, "engram.memory.add", {"content": text})
    result = await execute(client, "engram.memory.search", {"query": "upload flaky", "limit": 5})
    labels = [r["label"] for r in result["results"]]
    assert labels[0].startswith("Flaky test: test_upload")
    assert "We format with ruff, line length 100" not in labels
    assert all(r["id"].startswith("M-") and r["created_at"] for r in result["results"])


async def test_bad_arguments_are_clear_errors_and_the_server_keeps_serving(
    client: LanguageClient,
) -> None:
    with pytest.raises(JsonRpcException, match="needs `content`"):
        await execute(client, "engram.memory.add", {"text_missing": True})
    with pytest.raises(JsonRpcException, match="unknown type"):
        await execute(client, "engram.memory.add", {"content": "x", "type": "rumour"})
    with pytest.raises(JsonRpcException, match="needs `query`"):
        await execute(client, "engram.memory.search", {})
    result = await execute(client, "engram.memory.search", {"query": "anything"})
    assert result["query"] == "anything" and result["results"] == []


async def test_memory_search_shows_a_gotcha_by_its_title_and_workaround(
    client: LanguageClient,
) -> None:
    """The search view every client renders: a gotcha hit reads as the gotcha, not as its
    indexed body with a type of None."""
    gotcha = await execute(
        client,
        "engram.gotcha.add",
        {
            "title": "use now(timezone.utc)",
            "workaround": "datetime.now(timezone.utc), never utcnow()",
        },
    )
    await execute(
        client,
        "engram.memory.add",
        {"content": "All timestamps are timezone.utc", "type": "decision"},
    )

    found = await execute(client, "engram.memory.search", {"query": "timezone"})
    lines = found["markdown"].splitlines()
    gotcha_id = (gotcha.get("gotcha") or gotcha)["id"]
    (hit,) = [i for i, line in enumerate(lines) if "use now(timezone.utc)" in line]
    assert lines[hit].startswith(f"- **use now(timezone.utc)** (gotcha `{gotcha_id}`, ")
    assert lines[hit + 1].strip().startswith("datetime.now(timezone.utc), never utcnow()")
    assert any(
        line.startswith("- **All timestamps are timezone.utc** (decision, ") for line in lines
    )
    assert "None" not in found["markdown"]
