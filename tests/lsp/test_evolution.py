"""File evolution over the protocol: editor edits and disk writes recorded with the right actors,
renames, the activity code lens, and a git checkout recorded as one git event.

Disk writes reach the server the way the editor makes them reach it: VS Code watches files for
the server (the test sends `workspace/didChangeWatchedFiles` as VS Code would), Neovim does not
(the server's own watcher sees the write).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import git
from tests.lsp.conftest import execute, make_project, open_document, wait_for

TEXT = "".join(f"line {n}\n" for n in range(1, 31))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "ws")
    (root / "a.py").write_text(TEXT)
    (root / "b.py").write_text(TEXT)
    (root / ".gitignore").write_text("build/\n")
    return root


async def watching(client: LanguageClient) -> str:
    """Wait until disk changes reach the server; returns "client" or "server"."""

    async def ready() -> dict[str, Any] | None:
        status = await execute(client, "engram.evolution.status")
        return status if status["ready"] else None

    for _ in range(200):
        status = await ready()
        if status:
            return str(status["watching"])
        await __import__("asyncio").sleep(0.05)
    raise AssertionError("the server never started watching files")


async def write_on_disk(client: LanguageClient, path: Path, text: str | None, mode: str) -> None:
    """Change a file on disk as another process would, and let the server hear of it."""
    existed = path.exists()
    if text is None:
        path.unlink()
        kind = types.FileChangeType.Deleted
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        kind = types.FileChangeType.Changed if existed else types.FileChangeType.Created
    if mode == "client":
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=path.as_uri(), type=kind)]
            )
        )


async def history(client: LanguageClient, path: Path) -> list[dict[str, Any]]:
    await execute(client, "engram.evolution.flush")
    result = await execute(
        client, "engram.evolution.history", {"uri": path.as_uri(), "show": False}
    )
    return list(result["history"])


def edit_line(client: LanguageClient, uri: str, version: int, line: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=line, character=0),
                        end=types.Position(line=line + 1, character=0),
                    ),
                    text=text,
                )
            ],
        )
    )


async def test_editor_edits_and_disk_writes_are_recorded_with_their_actors(
    client: LanguageClient,
) -> None:
    mode = await watching(client)
    assert mode == ("client" if client.editor == "visual-studio-code" else "server")  # type: ignore[attr-defined]
    folder: Path = client.folder  # type: ignore[attr-defined]
    uri = open_document(client, folder / "a.py")
    edit_line(client, uri, 2, 4, "line five, typed\n")
    edit_line(client, uri, 3, 6, "line seven, typed\n")
    rows = await history(client, folder / "a.py")
    assert [(r["actor"], r["lines"]) for r in rows] == [("editor", [[5, 5], [7, 7]])]

    await write_on_disk(
        client, folder / "b.py", TEXT.replace("line 12\n", "agent was here\n"), mode
    )
    rows = await wait_for_rows(client, folder / "b.py", 1)
    assert rows[0]["actor"] == "external" and rows[0]["change"] == "modified"

    # Ignored by .gitignore, and engram's own store: never recorded.
    await write_on_disk(client, folder / "build" / "out.txt", "artifact\n", mode)
    await write_on_disk(client, folder / "b.py", TEXT, mode)
    await wait_for_rows(client, folder / "b.py", 2)
    assert await history(client, folder / "build" / "out.txt") == []
    active = (await execute(client, "engram.evolution.active"))["files"]
    assert {f["path"] for f in active} == {"a.py", "b.py"}  # nothing of .engram/, .git/ or build/
    status = await execute(client, "engram.status")
    assert status["root"] == str(folder)


async def wait_for_rows(client: LanguageClient, path: Path, count: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    async def enough() -> bool:
        nonlocal found
        found = await history(client, path)
        return len(found) >= count

    import asyncio

    for _ in range(200):
        if await enough():
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path.name}: expected {count} recorded changes, got {found}")


async def test_a_save_seen_on_disk_is_the_editor_not_an_external_change(
    client: LanguageClient,
) -> None:
    mode = await watching(client)
    folder: Path = client.folder  # type: ignore[attr-defined]
    uri = open_document(client, folder / "a.py")
    edit_line(client, uri, 2, 0, "first line, typed\n")
    saved = TEXT.replace("line 1\n", "first line, typed\n", 1)
    (folder / "a.py").write_text(saved)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await write_on_disk(client, folder / "a.py", saved, mode)  # the watcher's view of the save
    import asyncio

    await asyncio.sleep(0.8)
    rows = await history(client, folder / "a.py")
    assert [r["actor"] for r in rows] == ["editor"]


async def test_renames_and_deletes_made_in_the_editor(client: LanguageClient) -> None:
    folder: Path = client.folder  # type: ignore[attr-defined]
    await watching(client)
    (folder / "a.py").rename(folder / "c.py")
    client.workspace_did_rename_files(
        types.RenameFilesParams(
            files=[
                types.FileRename(
                    old_uri=(folder / "a.py").as_uri(), new_uri=(folder / "c.py").as_uri()
                )
            ]
        )
    )
    rows = await wait_for_rows(client, folder / "c.py", 1)
    assert (rows[0]["change"], rows[0]["old_path"], rows[0]["actor"]) == (
        "renamed",
        "a.py",
        "editor",
    )
    (folder / "b.py").unlink()
    client.workspace_did_delete_files(
        types.DeleteFilesParams(files=[types.FileDelete(uri=(folder / "b.py").as_uri())])
    )
    rows = await wait_for_rows(client, folder / "b.py", 1)
    assert (rows[0]["change"], rows[0]["actor"]) == ("deleted", "editor")


async def test_the_code_lens_counts_todays_edits_and_opens_the_history(
    client: LanguageClient,
) -> None:
    folder: Path = client.folder  # type: ignore[attr-defined]
    uri = open_document(client, folder / "a.py")
    edit_line(client, uri, 2, 3, "changed\n")
    await history(client, folder / "a.py")
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    ours = [
        lens
        for lens in lenses or []
        if lens.command and lens.command.command == "engram.evolution.history"
    ]
    assert len(ours) == 1 and ours[0].range.start.line == 0
    assert ours[0].command.title == "1 edit today · last by you just now"  # type: ignore[union-attr]
    result = await execute(client, ours[0].command.command, ours[0].command.arguments[0])  # type: ignore[union-attr,index]
    assert result["history"][0]["actor"] == "editor"
    shown = await wait_for(lambda: [d for d in client.shown_documents if d.uri.endswith(".md")])
    assert "history-a.py.md" in shown[0].uri
    view = Path(result["view"].removeprefix("file://"))
    assert "| editor |" in view.read_text()


async def test_a_git_checkout_is_one_git_event(client: LanguageClient) -> None:
    folder: Path = client.folder  # type: ignore[attr-defined]
    mode = await watching(client)
    names = [f"m{n}.py" for n in range(30)]
    git(folder, "checkout", "-q", "-b", "main")  # the folder is a fresh repository already
    for name in names:
        (folder / name).write_text(f"main {name}\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "main")
    git(folder, "checkout", "-q", "-b", "feature")
    for name in names:
        (folder / name).write_text(f"feature {name}\n")
    git(folder, "commit", "-q", "-am", "feature")
    git(folder, "checkout", "-q", "main")
    import asyncio

    await asyncio.sleep(1.0)  # let the watcher's view of the setup settle
    await execute(client, "engram.timeline")  # a baseline look at HEAD
    before = {e["id"] for e in (await execute(client, "engram.timeline"))["entries"]}
    git(folder, "checkout", "-q", "feature")
    if mode == "client":
        changes = [
            types.FileEvent(uri=(folder / n).as_uri(), type=types.FileChangeType.Changed)
            for n in names
        ]
        changes.append(
            types.FileEvent(
                uri=(folder / ".git" / "HEAD").as_uri(), type=types.FileChangeType.Changed
            )
        )
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(changes=changes)
        )

    async def new_entries() -> list[dict[str, Any]]:
        await execute(client, "engram.evolution.flush")
        entries = (await execute(client, "engram.timeline", {"source": "evolution"}))["entries"]
        return [e for e in entries if e["id"] not in before]

    for _ in range(100):
        found = await new_entries()
        if any(e["event_type"] == "git.checkout" for e in found):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # stragglers of the same checkout must not show up as file events
    found = await new_entries()
    assert [e["event_type"] for e in found] == ["git.checkout"], found
    assert found[0]["summary"] == "git checkout main -> feature"


def test_line_ranges_follow_edits_in_current_coordinates() -> None:
    from lsp_server.features.evolution import LineRanges

    ranges = LineRanges()
    ranges.edit(4, 5, 0, "line five\n")  # replace line 4 (0-based) with one line
    ranges.edit(6, 7, 0, "line seven\n")
    assert ranges.one_based() == [(5, 5), (7, 7)]
    ranges.edit(0, 0, 0, "new first line\n")  # an insertion above shifts both down
    assert ranges.one_based() == [(1, 1), (6, 6), (8, 8)]
    ranges.edit(5, 6, 0, "")  # deleting line 5 joins it to its neighbour
    assert ranges.one_based() == [(1, 1), (6, 7)]
    for line in range(0, 400, 4):
        ranges.edit(line, line, 2, "x")
    assert len(ranges.one_based()) <= 64  # bounded, whatever the number of edits


def test_line_ranges_past_their_limit_still_cover_every_line_edited() -> None:
    """Scattered typing past the limit joins the closest ranges: fewer, wider ranges, and no
    edited line left out."""
    import itertools
    import random

    from lsp_server.features.evolution import MAX_RANGES, LineRanges

    rng = random.Random(7)
    ranges = LineRanges()
    edited: set[int] = set()
    for count in range(1, 1000):
        line = rng.randrange(5000)
        ranges.edit(line, line, 0, "x")
        edited.add(line)
        if count % 97 == 0 or count == 999:
            kept = ranges.one_based()
            assert len(kept) <= MAX_RANGES
            # sorted and apart
            assert all(a <= b < c for (a, b), (c, _) in itertools.pairwise(kept))
            assert all(any(a <= line + 1 <= b for a, b in kept) for line in edited)
