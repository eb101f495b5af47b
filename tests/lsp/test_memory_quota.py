"""The session quota in the editor: `engram.memory.add` into a session near its quota shows a
window message (80 % / 95 %), and a write that would take the session past its quota is
refused with MEM_E001 before anything is stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from memory_core import quota
from memory_core.store import Store
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


async def test_the_editor_shows_the_quota_warning_and_refuses_a_write_past_the_quota(
    client: LanguageClient, folder: Path
) -> None:
    first = await execute(
        client, "engram.memory.add", {"content": NOTE, "session_id": SESSION, "type": "project"}
    )
    assert "reached 8" in first["quota_warning"] or "reached 9" in first["quota_warning"]
    shown = await wait_for(lambda: _warnings(client))
    assert shown[0] == first["quota_warning"]

    # A second note would take the session past its quota: refused before it is stored
    # (the quota is a hard limit, not one the crossing write may overshoot).
    with pytest.raises(JsonRpcException, match=r"has no room for this record \(MEM_E001\)"):
        await execute(
            client,
            "engram.memory.add",
            {"content": NOTE, "session_id": SESSION, "type": "project"},
        )
    # A short one still fits, and the editor warns again.
    small = await execute(
        client, "engram.memory.add", {"content": "reset at 02:00 UTC", "session_id": SESSION}
    )
    assert "of its quota" in small["quota_warning"]
    await wait_for(lambda: len(_warnings(client)) == 2)
    found = await execute(
        client, "engram.memory.search", {"query": "staging database", "limit": 10}
    )
    # Nothing already stored was lost, nothing refused was kept.
    assert {r["id"] for r in found["results"]} == {first["id"]}
    store = Store.open(folder)
    try:
        assert quota.session_usage(store, SESSION) <= 3200
    finally:
        store.close()


async def test_no_warning_without_a_session(client: LanguageClient) -> None:
    added = await execute(client, "engram.memory.add", {"content": NOTE})
    assert "quota_warning" not in added
    assert _warnings(client) == []
