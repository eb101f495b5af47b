"""Checkpoints are complete whatever the client's watcher sees.

The pytest-lsp client registers for `workspace/didChangeWatchedFiles` (VS Code's capabilities) or
not at all (Neovim's) but never reports a file event, like an editor that watches only folders
that existed when it started: a file an agent creates in a new folder must still be in the next
checkpoint (the server's own watcher saw it), and a rollback must only remove files that were
really absent from the checkpoint.
"""

from __future__ import annotations

import asyncio

from pytest_lsp import LanguageClient

from tests.lsp.conftest import execute, wait_for


async def _server_watcher_ready(client: LanguageClient) -> None:
    async def ready() -> bool:
        status = await execute(client, "engram.evolution.status")
        return bool(status["server_watcher"] and status["journal_epoch"])

    deadline = asyncio.get_running_loop().time() + 10
    while not await ready():
        assert asyncio.get_running_loop().time() < deadline, "the server's watcher never started"
        await asyncio.sleep(0.1)


async def test_a_file_in_a_folder_the_client_never_reported_is_in_the_checkpoint(
    client: LanguageClient,
) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "app.py").write_text("value = 1\n")
    await _server_watcher_ready(client)
    first = await execute(client, "engram.checkpoint.create", {"name": "before"})

    await asyncio.sleep(1.2)  # past the journal's slack around the first checkpoint
    (folder / "generated" / "deep").mkdir(parents=True)
    (folder / "generated" / "deep" / "new.py").write_text("made by an agent\n")
    (folder / "app.py").write_text("value = 2\n")
    await asyncio.sleep(0.5)  # the server's watcher batches events for up to 300 ms
    second = await execute(client, "engram.checkpoint.create", {"name": "after"})
    assert second["source"] == "watcher", second
    assert second["files"] == 2 and second["changed"] == 2

    diff = await execute(
        client, "engram.checkpoint.diff", {"id": first["id"], "against": second["id"]}
    )
    assert diff["added"] == ["generated/deep/new.py"]

    # Rolling back to the checkpoint that holds the file keeps it (negative control: a
    # checkpoint that missed it would delete it as "created after").
    (folder / "app.py").write_text("value = 3\n")
    kept = await execute(
        client, "engram.checkpoint.rollback", {"id": second["id"], "confirm": True}
    )
    assert kept["removed"] == []
    assert (folder / "generated" / "deep" / "new.py").read_text() == "made by an agent\n"
    await wait_for(lambda: (folder / "app.py").read_text() == "value = 2\n")

    # Rolling back to the one before it removes it: it really was absent then.
    back = await execute(client, "engram.checkpoint.rollback", {"id": first["id"], "confirm": True})
    assert back["removed"] == ["generated/deep/new.py"]
    assert not (folder / "generated").exists()
