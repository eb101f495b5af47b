"""engram.checkpoint.*: create and list, and rollback through the editor with confirmation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.lsp.conftest import execute, open_document


def _edits_for(client: LanguageClient, uri: str) -> list[str]:
    """New texts the server sent for `uri` through workspace/applyEdit."""
    texts = []
    for params in client.applied_edits:  # type: ignore[attr-defined]
        edit = params.edit
        for change in edit.document_changes or []:
            if (
                getattr(change, "text_document", None) is not None
                and change.text_document.uri == uri
            ):
                texts += [e.new_text for e in change.edits]
        for changed_uri, edits in (edit.changes or {}).items():
            if changed_uri == uri:
                texts += [e.new_text for e in edits]
    return texts


async def test_create_and_list_checkpoints(client: LanguageClient) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "app.py").write_text("print('hi')\n")
    made = await execute(
        client, "engram.checkpoint.create", {"name": "first", "description": "safe"}
    )
    assert made["files"] == 1 and made["name"] == "first"
    listed = await execute(client, "engram.checkpoint.list")
    assert [c["id"] for c in listed["checkpoints"]] == [made["id"]]
    assert listed["checkpoints"][0]["label"] == "first"
    assert listed["checkpoints"][0]["created_at"].endswith("Z")


async def test_rollback_writes_every_file_to_disk_and_names_the_open_buffers_to_reload(
    client: LanguageClient,
) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "open.py").write_text("value = 1\n")
    (folder / "closed.py").write_text("other = 1\n")
    made = await execute(client, "engram.checkpoint.create")

    (folder / "open.py").write_text("value = 2  # agent edit\n")
    (folder / "closed.py").write_text("other = 2\n")
    (folder / "created.py").write_text("new\n")
    uri = open_document(client, folder / "open.py")

    result = await execute(
        client, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True}
    )
    assert result["done"] is True
    # One meaning in every client: the disk equals the checkpoint, open buffers are reloaded.
    assert result["reload"] == [uri]
    assert _edits_for(client, uri) == []
    assert (folder / "open.py").read_text() == "value = 1\n"
    assert (folder / "closed.py").read_text() == "other = 1\n"
    assert not (folder / "created.py").exists()
    assert client.message_requests == []  # type: ignore[attr-defined]
    # The rollback itself can be undone: its pre-rollback checkpoint is listed.
    listed = await execute(client, "engram.checkpoint.list")
    assert result["undo_checkpoint"] in [c["id"] for c in listed["checkpoints"]]


async def test_rollback_asks_first_and_does_nothing_unless_confirmed(
    client: LanguageClient,
) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "app.py").write_text("good\n")
    made = await execute(client, "engram.checkpoint.create")
    (folder / "app.py").write_text("bad\n")
    (folder / "junk.txt").write_text("created after\n")

    client.message_request_answer = "Cancel"  # type: ignore[attr-defined]
    cancelled = await execute(client, "engram.checkpoint.rollback", {"id": made["id"]})
    assert cancelled["done"] is False and cancelled["reason"] == "cancelled"
    (request,) = client.message_requests  # type: ignore[attr-defined]
    # The question names what it restores and what it removes.
    assert "Restore 1 file: app.py." in request.message
    assert "Remove 1 file created after it: junk.txt." in request.message
    assert [a.title for a in request.actions] == ["Roll back", "Cancel"]
    assert (folder / "app.py").read_text() == "bad\n" and (folder / "junk.txt").exists()

    client.message_request_answer = "Roll back"  # type: ignore[attr-defined]
    done = await execute(client, "engram.checkpoint.rollback", {"id": made["id"]})
    assert done["done"] is True
    assert (folder / "app.py").read_text() == "good\n" and not (folder / "junk.txt").exists()


async def test_rollback_to_an_unknown_checkpoint_is_a_clear_error(client: LanguageClient) -> None:
    with pytest.raises(JsonRpcException, match="no checkpoint 'C-nope'"):
        await execute(client, "engram.checkpoint.rollback", {"id": "C-nope", "confirm": True})
    with pytest.raises(JsonRpcException, match="needs `id`"):
        await execute(client, "engram.checkpoint.rollback", {})
    assert "checkpoints" in await execute(client, "engram.checkpoint.list")


async def test_a_burst_of_file_changes_makes_an_automatic_checkpoint(
    client: LanguageClient,
) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    changes = []
    for index in range(10):  # checkpoints.burst_files defaults to 10
        path = folder / f"gen_{index}.py"
        path.write_text(f"N = {index}\n")
        changes.append(types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Created))
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=changes))

    async def burst() -> list[dict[str, object]]:
        listed = await execute(client, "engram.checkpoint.list")
        return [c for c in listed["checkpoints"] if c["reason"] == "burst"]

    deadline = asyncio.get_running_loop().time() + 10
    found: list[dict[str, object]] = []
    while not found and asyncio.get_running_loop().time() < deadline:
        found = await burst()
        await asyncio.sleep(0.1)
    assert found and found[0]["files"] == 10


async def _burst_checkpoints(client: LanguageClient) -> list[dict[str, object]]:
    listed = await execute(client, "engram.checkpoint.list")
    return [c for c in listed["checkpoints"] if c["reason"] == "burst"]


def _report(client: LanguageClient, paths: list[Path]) -> None:
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=p.as_uri(), type=types.FileChangeType.Changed) for p in paths
            ]
        )
    )


async def _wait_for_burst(client: LanguageClient, count: int, seconds: float) -> int:
    deadline = asyncio.get_running_loop().time() + seconds
    found = await _burst_checkpoints(client)
    while len(found) < count and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.1)
        found = await _burst_checkpoints(client)
    return len(found)


async def test_engrams_own_writes_editor_files_and_a_rollback_make_no_burst(
    client: LanguageClient,
) -> None:
    """Only the person's or the agent's work makes an automatic checkpoint: not engram's store
    (a CLI command writing .engram/), not an editor's swap or auto-save files, not the files a
    rollback wrote when the client reports them back. Real work still does (the control)."""
    folder = client.folder  # type: ignore[attr-defined]
    store_files = [folder / ".engram" / "exports" / f"view_{i}.md" for i in range(12)]
    editor_files = [folder / f".mod_{i}.py.swp" for i in range(6)] + [
        folder / f"#mod_{i}.py#" for i in range(6)
    ]
    for path in [*store_files, *editor_files]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("not anyone's work\n")
    _report(client, store_files)
    _report(client, editor_files)
    assert await _wait_for_burst(client, 1, 1.5) == 0

    sources = [folder / f"mod_{i}.py" for i in range(10)]
    for path in sources:
        path.write_text("N = 1\n")
    made = await execute(client, "engram.checkpoint.create", {"name": "base"})
    for path in sources:
        path.write_text("N = 2  # the agent\n")
    await execute(client, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True})
    assert all(p.read_text() == "N = 1\n" for p in sources)
    _report(client, sources)  # the client sees the rollback's writes
    assert await _wait_for_burst(client, 1, 1.5) == 0

    for path in sources:  # the person's (or an agent's) own edits after the rollback
        path.write_text("N = 3\n")
    _report(client, sources)
    assert await _wait_for_burst(client, 1, 10) == 1


async def test_a_new_folder_of_files_reported_as_one_event_makes_a_burst(
    client: LanguageClient,
) -> None:
    """VS Code reports a folder created with files in it as the folder alone: its files count."""
    folder = client.folder  # type: ignore[attr-defined]
    (folder / ".gitignore").write_text("generated/cache/\n")
    created = folder / "generated"
    (created / "cache").mkdir(parents=True)
    for i in range(12):
        (created / "cache" / f"c_{i}.bin").write_text("ignored\n")
    _report(client, [created])
    assert await _wait_for_burst(client, 1, 1.5) == 0  # only ignored files in it so far

    for i in range(10):
        (created / f"gen_{i}.py").write_text(f"N = {i}\n")
    _report(client, [created])
    assert await _wait_for_burst(client, 1, 10) == 1


async def test_a_folder_a_rollback_brings_back_reported_as_one_event_makes_no_burst(
    client: LanguageClient,
) -> None:
    """Undoing a rollback that removed a folder of new files brings the folder back; VS Code
    reports it alone. Its files are the rollback's writes, not work: no burst. Real work in the
    same folder afterwards still makes one (the control)."""
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "keep.py").write_text("N = 1\n")
    base = await execute(client, "engram.checkpoint.create", {"name": "base"})
    created = folder / "generated"
    created.mkdir()
    for i in range(12):
        (created / f"gen_{i}.py").write_text(f"N = {i}\n")
    with_folder = await execute(client, "engram.checkpoint.create", {"name": "with folder"})
    await execute(client, "engram.checkpoint.rollback", {"id": base["id"], "confirm": True})
    assert not created.exists()
    _report(client, [created])  # the client reports the removed folder
    await execute(client, "engram.checkpoint.rollback", {"id": with_folder["id"], "confirm": True})
    assert len(list(created.iterdir())) == 12
    _report(client, [created])  # ... and the folder the second rollback brought back, alone
    assert await _wait_for_burst(client, 1, 1.5) == 0

    for i in range(12):  # the agent's own edits in that folder
        (created / f"gen_{i}.py").write_text(f"N = {i + 100}\n")
    _report(client, [created])
    assert await _wait_for_burst(client, 1, 10) == 1


def _type(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def test_rollback_also_reverts_unsaved_edits_in_open_buffers(client: LanguageClient) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "typed.py").write_text("answer = 42\n")
    made = await execute(client, "engram.checkpoint.create")
    uri = open_document(client, folder / "typed.py")
    _type(client, uri, 2, "answer = 0  # unsaved\n")
    result = await execute(
        client, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True}
    )
    assert result["done"] is True and result["reload"] == [uri]
    assert result["restored"] == ["typed.py"]
    assert (folder / "typed.py").read_text() == "answer = 42\n"
    # The timeline says what the editor said: 1 file restored (the buffer's), not 0.
    found = await execute(client, "engram.timeline", {"limit": 20})
    assert "1 file restored, 0 removed" in found["markdown"]


async def test_the_rollback_question_names_buffers_with_unsaved_changes(
    client: LanguageClient,
) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "typed.py").write_text("answer = 42\n")
    (folder / "other.py").write_text("saved = True\n")
    made = await execute(client, "engram.checkpoint.create")
    (folder / "other.py").write_text("saved = False\n")  # changed on disk, its buffer saved
    open_document(client, folder / "other.py")
    uri = open_document(client, folder / "typed.py")
    _type(client, uri, 2, "answer = 0  # unsaved\n")
    preview = await execute(
        client, "engram.checkpoint.rollback", {"id": made["id"], "preview": True}
    )
    assert preview["restore"] == ["other.py", "typed.py"]
    assert preview["unsaved"] == ["typed.py"]
    assert "Restore 2 files: other.py, typed.py." in preview["message"]
    assert "Unsaved changes in typed.py are replaced too" in preview["message"]


async def test_undoing_a_rollback_gives_unsaved_buffers_their_text_back(
    client: LanguageClient,
) -> None:
    """The safety checkpoint holds the disk; the unsaved text the rollback replaced is kept
    with it, and undoing the rollback puts that text back into the buffers (unsaved)."""
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "typed.py").write_text("answer = 42\n")
    (folder / "other.py").write_text("saved = True\n")
    made = await execute(client, "engram.checkpoint.create", {"name": "base"})
    (folder / "other.py").write_text("saved = False\n")  # the agent's write, on disk
    typed = open_document(client, folder / "typed.py")
    other = open_document(client, folder / "other.py")
    _type(client, typed, 2, "answer = 0  # typed, not saved\n")
    _type(client, other, 2, "saved = False  # and typed here too\n")

    rolled = await execute(
        client, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True}
    )
    assert rolled["restored"] == ["other.py", "typed.py"]
    assert sorted(rolled["reload"]) == sorted([typed, other])
    # The client reloads both buffers from disk, as VS Code, Neovim and engram.el do.
    _type(client, typed, 3, (folder / "typed.py").read_text())
    _type(client, other, 3, (folder / "other.py").read_text())
    assert client.applied_edits == []  # type: ignore[attr-defined]

    preview = await execute(
        client, "engram.checkpoint.rollback", {"id": rolled["undo_checkpoint"], "preview": True}
    )
    assert preview["unsaved_given_back"] == ["other.py", "typed.py"]
    assert "The unsaved changes of other.py, typed.py come back too." in preview["message"]
    undone = await execute(
        client, "engram.checkpoint.rollback", {"id": rolled["undo_checkpoint"], "confirm": True}
    )

    assert undone["unsaved_given_back"] == ["other.py", "typed.py"]
    assert undone["reload"] == []  # their text comes with the edit, not from the disk
    assert (folder / "other.py").read_text() == "saved = False\n"  # the disk as it was
    given = {
        uri: edits[0].new_text
        for applied in client.applied_edits  # type: ignore[attr-defined]
        for uri, edits in (applied.edit.changes or {}).items()
    }
    assert given == {
        typed: "answer = 0  # typed, not saved\n",
        other: "saved = False  # and typed here too\n",
    }


async def test_rollback_preview_lists_the_files_and_changes_nothing(
    client: LanguageClient,
) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "app.py").write_text("good\n")
    made = await execute(client, "engram.checkpoint.create", {"name": "before the agent"})
    (folder / "app.py").write_text("bad\n")
    (folder / "junk.txt").write_text("created after\n")
    preview = await execute(
        client, "engram.checkpoint.rollback", {"id": made["id"], "preview": True}
    )
    assert preview["restore"] == ["app.py"] and preview["remove"] == ["junk.txt"]
    assert preview["message"].startswith("Roll back to checkpoint before the agent?")
    assert (folder / "app.py").read_text() == "bad\n" and (folder / "junk.txt").exists()
    assert client.message_requests == []  # type: ignore[attr-defined]


async def test_commands_whose_parameters_are_optional_accept_an_empty_list(
    client: LanguageClient,
) -> None:
    """Neovim encodes an empty Lua table as `[]`: `engram.checkpoint.list [[]]` must work."""
    listed = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="engram.checkpoint.list", arguments=[[]])
    )
    assert listed["checkpoints"] == []
    bare = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="engram.checkpoint.list")
    )
    assert bare["checkpoints"] == []
    with pytest.raises(JsonRpcException, match="one JSON object"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="engram.checkpoint.list", arguments=[[1]])
        )


async def test_a_files_content_in_a_checkpoint_for_a_diff_view(client: LanguageClient) -> None:
    folder = client.folder  # type: ignore[attr-defined]
    (folder / "pkg").mkdir()
    (folder / "pkg" / "mod.py").write_text("before = 1\n")
    made = await execute(client, "engram.checkpoint.create", {"name": "base"})
    (folder / "pkg" / "mod.py").write_text("after = 2\n")
    got = await execute(client, "engram.checkpoint.file", {"id": "base", "path": "pkg/mod.py"})
    assert got == {"id": "base", "path": "pkg/mod.py", "exists": True, "content": "before = 1\n"}
    by_uri = await execute(
        client,
        "engram.checkpoint.file",
        {"id": made["id"], "path": (folder / "pkg" / "mod.py").as_uri()},
    )
    assert by_uri["content"] == "before = 1\n"
    missing = await execute(client, "engram.checkpoint.file", {"id": "base", "path": "nope.py"})
    assert missing["exists"] is False


async def test_memories_are_listed_newest_first_for_the_memory_view(
    client: LanguageClient,
) -> None:
    await execute(client, "engram.memory.add", {"content": "ZIP codes are text"})
    await execute(client, "engram.memory.add", {"content": "deploys run in UTC"})
    listed = await execute(client, "engram.memory.list")
    assert [m["content"] for m in listed["memories"]] == [
        "deploys run in UTC",
        "ZIP codes are text",
    ]
