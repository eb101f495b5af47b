"""Snapshots from the editor: git state and open documents captured, restore reopening them."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import execute, open_document, wait_for
from tests.lsp.test_evolution import git


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("def a():\n    return 1\n")
    (root / "b.py").write_text("def b():\n    return 2\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    (root / "b.py").write_text("def b():\n    return 3\n")  # dirty
    return root


async def test_a_snapshot_holds_git_state_and_open_documents_and_restore_reopens_them(
    client: LanguageClient,
) -> None:
    folder: Path = client.folder  # type: ignore[attr-defined]
    head = git(folder, "rev-parse", "HEAD").strip()
    uri_a = open_document(client, folder / "a.py")
    uri_b = open_document(client, folder / "b.py")
    # The editor asks for code actions where the cursor is: that is how the server knows it.
    selection = types.Range(
        start=types.Position(line=1, character=4), end=types.Position(line=1, character=10)
    )
    await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri_a),
            range=selection,
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    snap = await execute(client, "engram.snapshot.capture", {"note": "before lunch"})
    assert (snap["is_repo"], snap["branch"], snap["head"], snap["note"]) == (
        True,
        "main",
        head,
        "before lunch",
    )
    assert snap["dirty_files"] == ["b.py"]
    documents = {d["path"]: d for d in snap["open_documents"]}
    assert set(documents) == {"a.py", "b.py"}
    assert documents["a.py"]["selection"] == {
        "start": {"line": 1, "character": 4},
        "end": {"line": 1, "character": 10},
    }
    listed = await execute(client, "engram.snapshot.list")
    assert [s["id"] for s in listed["snapshots"]] == [snap["id"]]

    git(folder, "checkout", "-q", "-b", "elsewhere")
    restored = await execute(client, "engram.snapshot.restore", {"id": snap["id"]})
    assert sorted(restored["reopened"]) == ["a.py", "b.py"]
    assert any("branch differs" in w for w in restored["warnings"])
    shown = await wait_for(lambda: len(client.shown_documents) >= 2 and client.shown_documents)
    by_uri = {d.uri: d for d in shown}
    assert set(by_uri) == {uri_a, uri_b}
    assert by_uri[uri_a].selection == selection
    warned = await wait_for(lambda: [m for m in client.messages if "branch differs" in m.message])
    assert warned[0].type == types.MessageType.Warning
    # Restore never checks out or stashes.
    assert git(folder, "rev-parse", "--abbrev-ref", "HEAD").strip() == "elsewhere"
    assert (folder / "b.py").read_text() == "def b():\n    return 3\n"

    drift = await execute(client, "engram.drift")
    assert any(d["kind"] == "workspace" and d["severity"] == "high" for d in drift["drift"])
    timeline = await execute(client, "engram.timeline", {"source": "snapshot"})
    assert [e["id"] for e in timeline["entries"]] == [f"snapshot:{snap['id']}"]


async def test_restore_puts_the_cursor_inside_a_file_that_shrank_since(
    client: LanguageClient,
) -> None:
    """A snapshot's cursor past the end of the file as it is now is moved to its end: an editor
    cannot place a cursor outside the buffer (Neovim 0.11 fails the whole restore on it)."""
    folder: Path = client.folder  # type: ignore[attr-defined]
    (folder / "long.py").write_text("".join(f"line_{i} = {i}\n" for i in range(12)))
    uri = open_document(client, folder / "long.py")
    cursor = types.Range(
        start=types.Position(line=10, character=3), end=types.Position(line=10, character=9)
    )
    await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=cursor,
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    snap = await execute(client, "engram.snapshot.capture", {})
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    (folder / "long.py").write_text("x = 1\n")  # one line now

    await execute(client, "engram.snapshot.restore", {"id": snap["id"]})
    shown = await wait_for(
        lambda: [d for d in client.shown_documents if d.uri == uri] or None  # type: ignore[attr-defined]
    )
    assert shown[-1].selection == types.Range(
        start=types.Position(line=0, character=5), end=types.Position(line=0, character=5)
    )


async def test_bad_arguments_are_clear_errors(client: LanguageClient) -> None:
    from pygls.exceptions import JsonRpcException

    with pytest.raises(JsonRpcException, match="no snapshot"):
        await execute(client, "engram.snapshot.restore", {"id": "SN-00000000"})
    with pytest.raises(JsonRpcException, match="give the snapshot"):
        await execute(client, "engram.snapshot.restore", {})
    with pytest.raises(JsonRpcException, match="cannot read"):
        await execute(client, "engram.timeline", {"since": "last tuesday"})
    assert (await execute(client, "engram.timeline", {"limit": 5}))["entries"] is not None
