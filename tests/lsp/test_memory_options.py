"""Seed 003's memory options in the editor: impact on add; min_priority, include_decayed and
offset on search (snake_case or the seed's camelCase); bad values are clear errors."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.lsp.conftest import execute


async def test_impact_and_query_options(client: LanguageClient) -> None:
    critical = await execute(
        client,
        "engram.memory.add",
        {
            "content": "The upload path bypasses the virus scanner",
            "type": "finding",
            "impact": "critical",
        },
    )
    assert critical["impact"] == "critical" and critical["priority"] == 0.9
    ids = []
    for index in range(3):
        added = await execute(
            client, "engram.memory.add", {"content": f"upload limit note {index}", "type": "action"}
        )
        ids.append(added["id"])

    everything = await execute(client, "engram.memory.search", {"query": "upload", "limit": 10})
    assert len(everything["results"]) == 4
    high = await execute(client, "engram.memory.search", {"query": "upload", "minPriority": 0.85})
    assert [r["id"] for r in high["results"]] == [critical["id"]]  # actions start at 0.80
    first = await execute(client, "engram.memory.search", {"query": "upload", "limit": 2})
    second = await execute(
        client, "engram.memory.search", {"query": "upload", "limit": 2, "offset": 2}
    )
    paged = [r["id"] for r in first["results"] + second["results"]]
    assert sorted(paged) == sorted([critical["id"], *ids])

    for bad in ({"min_priority": 2}, {"offset": -1}, {"include_decayed": "yes"}):
        with pytest.raises(JsonRpcException):
            await execute(client, "engram.memory.search", {"query": "upload", **bad})
    with pytest.raises(JsonRpcException, match="impact"):
        await execute(client, "engram.memory.add", {"content": "x", "impact": "severe"})
