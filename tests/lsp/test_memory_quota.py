"""The session quota in the editor: `engram.memory.add` into a session near its quota shows a
window message (80 % / 95 %), and a full session's write is refused with MEM_E001."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.lsp.conftest import execute, wait_for

SESSION = "S-editor01"
NOTE = "the staging database is reset every night at 02:00 UTC; " * 45  # ~2.6 KB


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    (root / ".engram").mkdir(parents=True)
    (root / ".engram" / "config.toml").write_text("[sessions]\nquota_bytes = 3200\n")
    return root


def _warnings(client: LanguageClient) -> list[str]:
    return [
        m.message
        for m in client.messages
        if m.type == types.MessageType.Warning and "of its quota" in m.message
    ]


async def test_the_editor_shows_the_quota_warning_and_refuses_a_full_session(
    client: LanguageClient,
) -> None:
    first = await execute(
        client, "engram.memory.add", {"content": NOTE, "session_id": SESSION, "type": "project"}
    )
    assert "reached 8" in first["quota_warning"] or "reached 9" in first["quota_warning"]
    shown = await wait_for(lambda: _warnings(client))
    assert shown[0] == first["quota_warning"]

    # Under the quota before the write, over it after: the write happens, then a 95 % warning.
    second = await execute(
        client, "engram.memory.add", {"content": NOTE, "session_id": SESSION, "type": "project"}
    )
    assert "MEM_E001" in second["quota_warning"]
    await wait_for(lambda: len(_warnings(client)) == 2)

    with pytest.raises(JsonRpcException, match=r"is full \(MEM_E001\)"):
        await execute(client, "engram.memory.add", {"content": "one more", "session_id": SESSION})
    found = await execute(
        client, "engram.memory.search", {"query": "staging database", "limit": 10}
    )
    # Nothing already stored was lost.
    assert {r["id"] for r in found["results"]} == {first["id"], second["id"]}


async def test_no_warning_without_a_session(client: LanguageClient) -> None:
    added = await execute(client, "engram.memory.add", {"content": NOTE})
    assert "quota_warning" not in added
    assert _warnings(client) == []
