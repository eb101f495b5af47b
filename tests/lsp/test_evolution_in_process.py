"""File evolution as the server the real `engram lsp` builds records it, in this process: typed
edits with the lines they touched, disk changes reported by the client, renames and deletes made
in the editor, unsaved buffers whose file changed on disk, the activity code lens and the
`engram.evolution.*` commands (test_evolution.py drives the same over stdio with real clients).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lsp_server.features import evolution as lsp_evolution
from lsp_server.features import snapshots as lsp_snapshots
from lsp_server.server import EngramServer, FolderState
from memory_core import evolution
from tests.conftest import git
from tests.lsp.in_process import (
    Client,
    client,
    close,
    edit,
    handler,
    open_document,
    replace_all,
    run,
    save,
    span,
    uri_of,
)

TEXT = "".join(f"line {n}\n" for n in range(1, 31))


@pytest.fixture
async def seen(server: EngramServer, state: FolderState) -> Client:
    """A client, and the folder ready as after `initialized` (the feature knows the loop)."""
    recorded = client(server)
    lsp_evolution.get_feature(server).folder_ready(server, state)
    return recorded


@pytest.fixture
def a_py(state: FolderState) -> Path:
    path = state.root / "a.py"
    path.write_text(TEXT, encoding="utf-8")
    return path


async def history(server: EngramServer, path: Path) -> list[dict[str, Any]]:
    await run(server, "engram.evolution.flush")
    result = await run(server, "engram.evolution.history", {"uri": uri_of(path), "show": False})
    return list(result["history"])


async def settled() -> None:
    """Let what the writer thread handed back to the event loop run."""
    for _ in range(3):
        await asyncio.sleep(0)


def on_disk(server: EngramServer, path: Path, text: str | None, kind: types.FileChangeType) -> None:
    """Another program writes (or deletes) the file; the client reports it."""
    if text is None:
        path.unlink()
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    handler(server, types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=uri_of(path), type=kind)])
    )


def lens_title(server: EngramServer, uri: str) -> str | None:
    lenses = handler(server, types.TEXT_DOCUMENT_CODE_LENS)(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    titles = [
        lens.command.title
        for lens in lenses or []
        if lens.command.command == "engram.evolution.history"
    ]
    assert len(titles) <= 1
    return titles[0] if titles else None


# typed edits


async def test_typed_edits_are_recorded_as_the_editors_with_the_lines_they_touched(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    uri = open_document(server, a_py)
    assert lens_title(server, uri) is None  # nothing recorded yet: no lens
    edit(server, uri, span(4, 0, 5, 0), "changed five\n")  # line 5 replaced
    edit(server, uri, span(9, 0, 9, 0), "new line\n")  # a line inserted before line 10
    assert await run(server, "engram.evolution.flush") == {"flushed": 1}
    await settled()
    [row] = await history(server, a_py)
    assert (row["actor"], row["path"], row["lines"]) == ("editor", "a.py", [[5, 5], [10, 10]])
    assert seen.refreshes == 1  # the client is asked to pull diagnostics again
    assert lens_title(server, uri) == "1 edit today · last by you just now"
    # Nothing pending: a second flush records nothing.
    assert await run(server, "engram.evolution.flush") == {"flushed": 0}
    edit(server, uri, span(0, 0, 0, 0), "# top\n")
    assert await run(server, "engram.evolution.flush") == {"flushed": 1}
    assert lens_title(server, uri) == "2 edits today · last by you just now"
    status = await run(server, "engram.evolution.status")
    assert status["recorded"]["editor"] == 2


async def test_a_code_lens_refresh_is_sent_to_a_client_that_supports_it(
    server: EngramServer, state: FolderState, a_py: Path
) -> None:
    seen = client(server, lens_refresh=True)
    uri = open_document(server, a_py)
    edit(server, uri, span(0, 0, 0, 0), "x")
    await run(server, "engram.evolution.flush")
    await settled()
    assert (seen.refreshes, seen.lens_refreshes) == (1, 1)


async def test_lines_added_at_the_end_of_a_file_without_a_final_newline_stay_within_it(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    path = state.root / "short.py"
    path.write_text("a\nb", encoding="utf-8")
    uri = open_document(server, path)
    edit(server, uri, span(1, 1, 1, 1), "\n\n")  # two new lines after the last one
    [row] = await history(server, path)
    assert row["lines"] == [[2, 3]]  # "a\nb\n\n" has three lines, not four


async def test_a_client_sending_whole_texts_gets_the_lines_that_differ(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    uri = open_document(server, a_py)
    replace_all(server, uri, TEXT.replace("line 3\n", "line three\n"))
    [row] = await history(server, a_py)
    assert row["lines"] == [[3, 3]]


async def test_typing_is_recorded_a_second_after_the_last_key_and_at_most_five_after_the_first(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    uri = open_document(server, a_py)
    edit(server, uri, span(0, 0, 0, 0), "x")
    doc = lsp_evolution.get_feature(server).docs[uri]
    loop = asyncio.get_running_loop()
    assert doc.timer is not None
    assert 0.9 < doc.timer.when() - loop.time() <= lsp_evolution.EDIT_DEBOUNCE_SECONDS
    first = doc.timer
    # Typing on: the wait starts again...
    edit(server, uri, span(0, 1, 0, 1), "y")
    assert first.cancelled() and doc.timer is not first
    # ...but not past five seconds after the first key of the burst.
    assert doc.first_change is not None
    doc.first_change -= lsp_evolution.EDIT_MAX_DELAY_SECONDS
    edit(server, uri, span(0, 2, 0, 2), "z")
    assert doc.timer.when() - loop.time() <= 0.01
    doc.first_change += 0.1  # just under five seconds: still debounced
    edit(server, uri, span(0, 3, 0, 3), "w")
    assert doc.timer.when() - loop.time() > 0.9


async def test_the_cursor_is_where_the_last_edit_left_it_and_a_code_action_request_moves_it(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    uri = open_document(server, a_py)

    def where() -> tuple[dict[str, int], dict[str, Any]]:
        [document] = lsp_snapshots.open_documents(server, state, None)
        assert document["path"] == "a.py"
        return document["cursor"], document["selection"]

    edit(server, uri, span(2, 4, 2, 4), "abc")
    assert where()[0] == {"line": 2, "character": 7}
    edit(server, uri, span(5, 3, 5, 3), "one\ntwo")
    cursor, selection = where()
    assert cursor == {"line": 6, "character": 3}
    assert selection == {"start": cursor, "end": cursor}  # no selection: the cursor alone
    handler(server, types.TEXT_DOCUMENT_CODE_ACTION)(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=span(7, 1, 9, 4),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    cursor, selection = where()
    assert cursor == {"line": 9, "character": 4}
    assert selection == {"start": {"line": 7, "character": 1}, "end": {"line": 9, "character": 4}}


async def test_saving_records_the_edits_and_closing_forgets_the_document(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    uri = open_document(server, a_py)
    edit(server, uri, span(0, 0, 0, 0), "saved ")
    save(server, uri)  # recorded at once, not after the debounce
    await run(server, "engram.evolution.flush")
    [row] = evolution.history(state.store, "a.py")
    assert row["hash_after"] == evolution.content_hash("saved " + TEXT)
    [document] = lsp_snapshots.open_documents(server, state, None)
    assert document["dirty"] is False
    edit(server, uri, span(1, 0, 1, 0), "closed ")
    close(server, uri)  # pending edits recorded, the document forgotten
    await run(server, "engram.evolution.flush")
    assert len(evolution.history(state.store, "a.py")) == 2
    assert lsp_snapshots.open_documents(server, state, None) == []


async def test_files_outside_every_folder_and_in_the_store_are_not_followed(
    server: EngramServer, state: FolderState, seen: Client, tmp_path: Path
) -> None:
    stray = tmp_path / "elsewhere.py"
    stray.write_text("x\n")
    inside_store = state.root / ".engram" / "notes.py"
    inside_store.write_text("x\n")
    for path in (stray, inside_store):
        uri = open_document(server, path)
        edit(server, uri, span(0, 0, 0, 0), "y")
    assert await run(server, "engram.evolution.flush") == {"flushed": 0}
    assert lsp_evolution.get_feature(server).docs == {}


# disk changes the client reports


async def test_disk_changes_the_client_reports_are_recorded_as_another_programs(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    server.client_watches_files = True
    (state.root / ".gitignore").write_text("build/\n")
    on_disk(server, a_py, TEXT.replace("line 7\n", "line seven\n"), types.FileChangeType.Changed)
    new = state.root / "src" / "new.py"
    on_disk(server, new, "fresh\n", types.FileChangeType.Created)
    on_disk(server, state.root / "build" / "out.py", "generated\n", types.FileChangeType.Created)
    on_disk(server, state.root / ".engram" / "x.md", "engram's own\n", types.FileChangeType.Created)
    feature = lsp_evolution.get_feature(server)
    # Collected for a moment, then recorded as one batch.
    timer = feature.disk_timers[state.root]
    delay = timer.when() - asyncio.get_running_loop().time()
    assert 0.2 < delay <= lsp_evolution.DISK_DEBOUNCE_SECONDS
    await run(server, "engram.evolution.flush")
    assert [(r["path"], r["actor"], r["change"]) for r in await history(server, new)] == [
        ("src/new.py", "external", "created")
    ]
    # The first change of a file never seen before has no lines; the next one has them.
    [first] = await history(server, a_py)
    assert first["actor"] == "external"
    seven = a_py.read_text()
    on_disk(server, a_py, seven.replace("line 9\n", "line nine\n"), types.FileChangeType.Changed)
    newest = (await history(server, a_py))[0]
    assert newest["lines"] == [[9, 9]]
    on_disk(server, new, None, types.FileChangeType.Deleted)
    assert (await history(server, new))[0]["change"] == "deleted"
    recorded = {row["path"] for row in evolution.most_active(state.store)}
    assert recorded == {"a.py", "src/new.py"}  # not the ignored build/ nor .engram/
    status = await run(server, "engram.evolution.status")
    assert status["watching"] == "client" and status["ready"] is True
    assert status["recorded"]["external"] == 4
    assert status["recorded"]["batches"] == 3


async def test_a_file_the_editor_has_open_gives_the_lines_of_a_disk_change(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    server.client_watches_files = True
    uri = open_document(server, a_py)
    on_disk(server, a_py, TEXT.replace("line 4\n", "line four\n"), types.FileChangeType.Changed)
    [row] = await history(server, a_py)
    assert (row["actor"], row["lines"]) == ("external", [[4, 4]])
    # The buffer had no unsaved edits: it follows the disk (the editor reloads it), no drift.
    report = await run(server, "engram.drift")
    assert [item for item in report["drift"] if item["kind"] == "unsaved"] == []
    assert lsp_evolution.get_feature(server).docs[uri].disk_text == a_py.read_text()


async def test_an_unsaved_buffer_whose_file_changed_on_disk_is_drift_until_saved(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    server.client_watches_files = True
    uri = open_document(server, a_py)
    edit(server, uri, span(1, 0, 2, 0), "my unsaved line 2\n")
    on_disk(server, a_py, TEXT.replace("line 20\n", "theirs\n"), types.FileChangeType.Changed)
    await history(server, a_py)
    await settled()
    [item] = [i for i in (await run(server, "engram.drift"))["drift"] if i["kind"] == "unsaved"]
    assert item["path"] == "a.py"
    refreshes = seen.refreshes
    save(server, uri)  # saving over it settles the conflict
    assert [i for i in (await run(server, "engram.drift"))["drift"] if i["kind"] == "unsaved"] == []
    assert seen.refreshes == refreshes + 1  # the diagnostic goes away at once


async def test_a_disk_change_equal_to_the_unsaved_buffer_is_no_conflict(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    server.client_watches_files = True
    uri = open_document(server, a_py)
    edit(server, uri, span(0, 0, 1, 0), "same\n")
    # Another program wrote exactly what the buffer holds (a formatter, a sync tool).
    on_disk(server, a_py, "same\n" + TEXT.split("\n", 1)[1], types.FileChangeType.Changed)
    await history(server, a_py)
    await settled()
    assert [i for i in (await run(server, "engram.drift"))["drift"] if i["kind"] == "unsaved"] == []


async def test_a_moved_git_head_is_one_git_event_and_gits_other_files_are_not_recorded(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    feature = lsp_evolution.get_feature(server)
    feature.loop()
    root = state.root
    feature.enqueue_disk(
        state,
        [
            (str(root / ".git" / "index"), 2),
            (str(root / ".git" / "objects" / "ab" / "cdef"), 1),
        ],
    )
    assert root not in feature.pending_disk or feature.pending_disk[root] == {}
    assert root not in feature.disk_timers  # nothing to record: no timer
    feature.enqueue_disk(state, [(str(root / ".git" / "refs" / "heads" / "main"), 2)])
    assert feature.pending_disk[root] == {".git/HEAD": 2}
    for rel in (".git/HEAD", ".git/packed-refs", ".git/refs/heads/x", ".git/refs/tags/v1"):
        assert lsp_evolution.git_signal(rel)
    for rel in (".git/index", ".git/config", ".git/objects/ab/cd", "src/.git/HEAD"):
        assert not lsp_evolution.git_signal(rel)


async def test_a_changed_gitignore_is_read_again_for_the_next_changes(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    server.client_watches_files = True
    gitignore = state.root / ".gitignore"
    gitignore.write_text("")
    on_disk(server, state.root / "gen.py", "1\n", types.FileChangeType.Created)
    await run(server, "engram.evolution.flush")
    on_disk(server, gitignore, "gen.py\n", types.FileChangeType.Changed)
    on_disk(server, state.root / "gen.py", "2\n", types.FileChangeType.Changed)
    await run(server, "engram.evolution.flush")
    assert len(evolution.history(state.store, "gen.py")) == 1  # the second write is ignored


# renames and deletes made in the editor


async def test_renames_and_deletes_made_in_the_editor_are_recorded(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path, tmp_path: Path
) -> None:
    (state.root / "b.py").write_text("b\n")
    a_py.rename(state.root / "c.py")
    (state.root / "folder").mkdir()
    handler(server, types.WORKSPACE_DID_RENAME_FILES)(
        types.RenameFilesParams(
            files=[
                # Into git's folder: not anyone's file (and the others are still recorded).
                types.FileRename(
                    old_uri=uri_of(state.root / "x.py"), new_uri=uri_of(state.root / ".git/x.py")
                ),
                types.FileRename(old_uri=uri_of(a_py), new_uri=uri_of(state.root / "c.py")),
                # From outside every folder: a new file, not a rename.
                types.FileRename(
                    old_uri=uri_of(tmp_path / "x.py"), new_uri=uri_of(state.root / "d.py")
                ),
                # A folder renamed: its files are reported on their own.
                types.FileRename(
                    old_uri=uri_of(state.root / "old"), new_uri=uri_of(state.root / "folder")
                ),
                # Out of every folder: nothing to record.
                types.FileRename(old_uri=uri_of(a_py), new_uri=uri_of(tmp_path / "gone.py")),
            ]
        )
    )
    (state.root / "b.py").unlink()
    handler(server, types.WORKSPACE_DID_DELETE_FILES)(
        types.DeleteFilesParams(
            files=[
                types.FileDelete(uri=uri_of(tmp_path / "outside.py")),
                types.FileDelete(uri=uri_of(state.root / "b.py")),
            ]
        )
    )
    await run(server, "engram.evolution.flush")
    await settled()
    rows = {r["path"]: r for r in evolution.history(state.store, "c.py")}
    assert (rows["c.py"]["change"], rows["c.py"]["old_path"]) == ("renamed", "a.py")
    [d_row] = evolution.history(state.store, "d.py")
    assert d_row["old_path"] is None and d_row["change"] != "renamed"
    assert evolution.history(state.store, "folder") == []
    [b_row] = evolution.history(state.store, "b.py")
    assert (b_row["change"], b_row["actor"]) == ("deleted", "editor")
    assert seen.refreshes >= 1
    assert {r["path"] for r in evolution.most_active(state.store)} == {"c.py", "d.py", "b.py"}


async def test_a_renamed_file_keeps_its_content_for_the_next_disk_change(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    server.client_watches_files = True
    open_document(server, a_py)  # its content is known from here
    close(server, uri_of(a_py))
    moved = state.root / "moved.py"
    a_py.rename(moved)
    handler(server, types.WORKSPACE_DID_RENAME_FILES)(
        types.RenameFilesParams(
            files=[types.FileRename(old_uri=uri_of(a_py), new_uri=uri_of(moved))]
        )
    )
    await run(server, "engram.evolution.flush")
    on_disk(server, moved, TEXT.replace("line 12\n", "twelve\n"), types.FileChangeType.Changed)
    newest = (await history(server, moved))[0]
    assert newest["lines"] == [[12, 12]]


# the code lens and the commands


async def test_the_lens_names_the_last_actor_in_words(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    uri = open_document(server, a_py)
    evolution.record_change(state.store, "a.py", actor="agent", after="x\n", now=time.time() - 600)
    assert lens_title(server, uri) == "1 edit today · last by the agent 10 min ago"
    evolution.record_change(state.store, "a.py", actor="external", after="y\n")
    assert lens_title(server, uri) == "2 edits today · last by another program just now"
    [lens] = handler(server, types.TEXT_DOCUMENT_CODE_LENS)(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert lens.range == span(0, 0, 0, 0)
    assert lens.command.arguments == [{"uri": uri}]


async def test_the_history_command_writes_the_history_and_shows_it(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    evolution.record_change(state.store, "a.py", actor="editor", after="one\n")
    evolution.record_change(state.store, "a.py", actor="agent", after="one\ntwo\n")
    result = await run(server, "engram.evolution.history", {"path": "a.py"})
    assert result["path"] == "a.py"
    assert [r["actor"] for r in result["history"]] == ["agent", "editor"]
    view = state.root / ".engram" / "exports" / "views" / "history-a.py.md"
    assert result["view"] == uri_of(view)
    assert view.read_text().startswith("# History of a.py\n\n2 recorded change(s), newest first.")
    [shown] = seen.shown
    assert (shown.uri, shown.take_focus) == (uri_of(view), True)
    limited = await run(server, "engram.evolution.history", {"path": "a.py", "limit": 1})
    assert [r["actor"] for r in limited["history"]] == ["agent"]
    by_absolute = await run(server, "engram.evolution.history", {"path": str(a_py), "show": False})
    assert len(by_absolute["history"]) == 2 and by_absolute["view"] is None
    assert len(seen.shown) == 2


async def test_a_client_that_cannot_show_documents_still_gets_the_history_file(
    server: EngramServer, state: FolderState, a_py: Path
) -> None:
    seen = client(server, show_document=False)
    result = await run(server, "engram.evolution.history", {"path": "a.py"})
    assert result["view"] is not None and seen.shown == []


WRONG_HISTORY_ARGUMENTS = [
    ({}, "give the file as `uri` or `path`"),
    ({"path": ""}, "give the file as `uri` or `path`"),
    ({"path": "a.py", "limit": 0}, "limit must be a whole number of at least 1, got 0"),
    ({"path": "/elsewhere/x.py"}, "'/elsewhere/x.py' is not in any workspace folder"),
]


async def test_the_history_command_says_what_is_wrong_with_its_arguments(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    for args, message in WRONG_HISTORY_ARGUMENTS:
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await run(server, "engram.evolution.history", args)
        assert raised.value.message.startswith("engram.evolution.history: ")
        assert message in raised.value.message, args


def test_the_history_table_shows_spans_moves_sessions_and_cuts_long_span_lists() -> None:
    rows = [
        {
            "actor": "agent",
            "session_id": "s-1",
            "lines": [[n, n + (n % 2)] for n in range(1, 20, 2)],
            "old_path": "old.py",
            "timestamp": "2026-11-27 10:00",
            "ts": time.time() - 120,
            "change": "renamed",
            "hash_after": "0123456789abcdef",
        },
        {
            "actor": "editor",
            "session_id": None,
            "lines": None,
            "old_path": None,
            "timestamp": "2026-11-27 09:00",
            "ts": time.time(),
            "change": "deleted",
            "hash_after": None,
        },
    ]
    text = lsp_evolution.history_markdown("new.py", rows)
    lines = text.split("\n")
    assert lines[:5] == [
        "# History of new.py",
        "",
        "2 recorded change(s), newest first.",
        "",
        "| when | change | by | lines | hash after |",
    ]
    assert lines[6] == (
        "| 2026-11-27 10:00 (2 min ago) | renamed from old.py | agent (s-1) | "
        "1-2, 3-4, 5-6, 7-8, 9-10, 11-12, 13-14, 15-16 | 0123456789ab |"
    )
    assert lines[7] == "| 2026-11-27 09:00 (just now) | deleted | editor | - | - |"
    assert text.endswith("|\n")


async def test_the_most_active_files_come_first(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    for _ in range(3):
        evolution.record_change(state.store, "busy.py", actor="editor", after=str(time.time()))
    evolution.record_change(state.store, "quiet.py", actor="agent", after="q")
    result = await run(server, "engram.evolution.active")
    assert [f["path"] for f in result["files"]] == ["busy.py", "quiet.py"]


# the server's own watcher and its content cache


async def test_the_watcher_reports_disk_changes_only_when_the_client_does_not(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    feature = lsp_evolution.get_feature(server)
    feature.loop()
    stopped: list[bool] = []

    class Watcher:
        def stop(self) -> None:
            stopped.append(True)

    path = state.root / "w.py"
    path.write_text("w\n")
    server.client_watches_files = True
    feature.watcher_events(state, Watcher(), [(str(path), 1)])  # type: ignore[arg-type]
    await settled()
    assert feature.pending_disk == {} and stopped == []
    server.client_watches_files = False
    feature.watcher_events(state, Watcher(), [(str(path), 1)])  # type: ignore[arg-type]
    await settled()
    assert feature.pending_disk == {state.root: {"w.py": 1}}
    # The folder closed: its watcher is stopped, nothing more is recorded.
    feature.pending_disk.clear()
    server.folders.pop(state.root)
    feature.watcher_events(state, Watcher(), [(str(path), 1)])  # type: ignore[arg-type]
    await settled()
    assert stopped == [True] and feature.pending_disk == {}
    server.folders[state.root] = state


async def test_a_watcher_that_stops_says_so_to_the_user(
    server: EngramServer, state: FolderState, seen: Client, caplog: pytest.LogCaptureFixture
) -> None:
    feature = lsp_evolution.get_feature(server)
    feature.loop()
    feature.watcher_failed(state, "inotify watch limit reached")
    await settled()
    [message] = seen.messages
    assert f"the file watcher for {state.root} stopped: inotify watch limit reached" in (
        caplog.messages
    )
    assert message.type == types.MessageType.Warning
    assert message.message == (
        f"engram: cannot watch {state.root} for changes on disk (inotify watch limit reached); "
        "edits made outside the editor are not recorded"
    )
    status = await run(server, "engram.evolution.status")
    assert (status["watching"], status["ready"], status["server_watcher"]) == ("off", False, False)


def test_the_content_cache_keeps_recent_files_within_its_limits(
    server: EngramServer, state: FolderState
) -> None:
    feature = lsp_evolution.get_feature(server)
    root = state.root
    big = "x" * (lsp_evolution.CACHE_MAX_BYTES + 1)
    feature.remember(root, "big.py", big)
    assert feature.recalled(root, "big.py") is None  # too big to keep
    exact = "y" * lsp_evolution.CACHE_MAX_BYTES
    feature.remember(root, "exact.py", exact)
    assert feature.recalled(root, "exact.py") == exact
    feature.remember(root, "exact.py", None)  # deleted: forgotten
    assert feature.recalled(root, "exact.py") is None and feature.cache_bytes == 0
    for n in range(lsp_evolution.CACHE_FILES + 1):
        feature.remember(root, f"f{n}.py", f"{n}\n")
    assert feature.recalled(root, "f0.py") is None  # the oldest made room
    assert feature.recalled(root, "f1.py") == "1\n"
    assert len(feature.cache) == lsp_evolution.CACHE_FILES
    assert feature.cache_bytes == sum(len(text) for text in feature.cache.values())


async def test_a_file_the_editor_deleted_is_recorded_deleted_even_if_already_back(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    """The editor says it deleted the file; a tool wrote it again before the record was made:
    the deletion is still recorded as one (the new file is a change of its own)."""
    path = state.root / "regenerated.py"
    path.write_text("v1\n")
    evolution.record_change(state.store, "regenerated.py", actor="agent", after="v1\n")
    path.write_text("v2\n")
    handler(server, types.WORKSPACE_DID_DELETE_FILES)(
        types.DeleteFilesParams(files=[types.FileDelete(uri=uri_of(path))])
    )
    await run(server, "engram.evolution.flush")
    assert evolution.history(state.store, "regenerated.py")[0]["change"] == "deleted"


async def test_a_disk_change_on_the_lines_of_unsaved_edits_is_the_more_severe_drift(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    server.client_watches_files = True
    uri = open_document(server, a_py)
    on_disk(server, a_py, TEXT, types.FileChangeType.Changed)  # its content known from here
    await history(server, a_py)
    edit(server, uri, span(2, 0, 3, 0), "my line 3\n")  # unsaved, on line 3
    theirs = TEXT.replace("line 2\n", "two\n").replace("line 3\n", "three\n")
    on_disk(server, a_py, theirs.replace("line 4\n", "four\n"), types.FileChangeType.Changed)
    await history(server, a_py)
    await settled()
    [item] = [i for i in (await run(server, "engram.drift"))["drift"] if i["kind"] == "unsaved"]
    assert item["severity"] == "high"
    assert item["summary"].endswith("to the same lines")


async def test_the_editors_own_save_reported_back_is_no_conflict(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    server.client_watches_files = True
    uri = open_document(server, a_py)
    edit(server, uri, span(0, 0, 0, 0), "saved ")
    save(server, uri)
    # The client (or the watcher) reports the write the save made.
    on_disk(server, a_py, a_py.read_text(), types.FileChangeType.Changed)
    await history(server, a_py)
    await settled()
    assert [i for i in (await run(server, "engram.drift"))["drift"] if i["kind"] == "unsaved"] == []
    [document] = lsp_snapshots.open_documents(server, state, None)
    assert document["dirty"] is False


async def test_disk_changes_are_recorded_by_themselves_after_a_quarter_second(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    server.client_watches_files = True
    on_disk(server, a_py, "changed\n", types.FileChangeType.Changed)
    await asyncio.sleep(lsp_evolution.DISK_DEBOUNCE_SECONDS + 0.1)
    lsp_evolution.get_feature(server).writer.submit(lambda: None).result(timeout=10)
    assert [r["actor"] for r in evolution.history(state.store, "a.py")] == ["external"]


async def test_a_failing_record_is_logged_by_name_and_the_next_one_still_made(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    a_py: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    uri = open_document(server, a_py)
    real = evolution.record_change

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise OSError("database is locked")

    monkeypatch.setattr(lsp_evolution.evolution, "record_change", failing)
    edit(server, uri, span(0, 0, 0, 0), "x")
    await run(server, "engram.evolution.flush")
    assert "evolution: record_edits failed" in caplog.messages
    monkeypatch.setattr(lsp_evolution.evolution, "record_change", real)
    edit(server, uri, span(1, 0, 1, 0), "y")
    await run(server, "engram.evolution.flush")
    assert len(evolution.history(state.store, "a.py")) == 1


async def test_the_servers_own_watcher_records_disk_changes_when_the_client_does_not(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    feature = lsp_evolution.get_feature(server)
    await feature.after_initialized(server)
    try:
        watcher = feature.watches[state.root]
        assert feature.start_watcher(state) is watcher  # one per folder
        for _ in range(200):
            status = await run(server, "engram.evolution.status")
            if status["ready"]:
                break
            await asyncio.sleep(0.05)
        assert (status["watching"], status["server_watcher"]) == ("server", True)
        assert status["journal_epoch"] is not None
        assert feature.journal_for(state) is watcher.journal
        path = state.root / "w.py"
        path.write_text("written by another program\n")
        for _ in range(200):
            await run(server, "engram.evolution.flush")
            if evolution.history(state.store, "w.py"):
                break
            await asyncio.sleep(0.05)
        assert [r["actor"] for r in evolution.history(state.store, "w.py")] == ["external"]
    finally:
        feature.stop_watchers()


def test_edited_ranges_past_the_limit_are_joined_by_the_smallest_gaps_of_all_edits() -> None:
    """Edits are joined into fewer ranges only when read (or past twice the limit): joining
    as they come would join a gap that later edits show is not among the smallest."""
    ranges = lsp_evolution.LineRanges()
    lines = [0]
    for gap in [10] * 61 + [5, 10, 6]:  # 65 one-line ranges: gaps of 10, one 5, one 6
        lines.append(lines[-1] + gap)
    for line in lines:
        ranges.edit(line, line, 1, "x")
    ranges.edit(lines[-2] + 3, lines[-2] + 3, 1, "x")  # splits the gap of 6 into 3 and 3
    kept = ranges.one_based()
    assert len(kept) == lsp_evolution.MAX_RANGES
    # The two gaps of 3 are joined (one range of 7 lines); the gap of 5 is not.
    assert kept[-1] == (lines[-2] + 1, lines[-1] + 1)
    five = lines.index(lines[-4])
    assert (lines[five] + 1, lines[five] + 1) in kept


async def test_an_external_change_after_a_save_and_close_is_compared_with_what_was_saved(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    server.client_watches_files = True
    uri = open_document(server, a_py)
    edit(server, uri, span(0, 0, 1, 0), "saved line 1\n")
    save(server, uri)
    close(server, uri)
    on_disk(
        server,
        a_py,
        a_py.read_text().replace("line 5\n", "five\n"),
        types.FileChangeType.Changed,
    )
    newest = (await history(server, a_py))[0]
    assert (newest["actor"], newest["lines"]) == ("external", [[5, 5]])


async def test_closing_a_document_that_is_not_followed_is_no_error(
    server: EngramServer, state: FolderState, seen: Client, caplog: pytest.LogCaptureFixture
) -> None:
    inside_store = state.root / ".engram" / "notes.md"
    inside_store.write_text("engram's own\n")
    close(server, open_document(server, inside_store))
    assert [r for r in caplog.records if r.levelname == "ERROR"] == []


async def test_a_lens_for_a_file_the_editor_never_opened_still_counts_its_edits(
    server: EngramServer, state: FolderState, seen: Client, a_py: Path
) -> None:
    evolution.record_change(state.store, "a.py", actor="agent", after="x\n")
    uri = uri_of(a_py)
    server.workspace.put_text_document(  # known to the workspace, never announced as opened
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=TEXT)
    )
    assert lens_title(server, uri) == "1 edit today · last by the agent just now"


async def test_a_file_that_is_not_utf8_is_still_recorded(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    server.client_watches_files = True
    path = state.root / "latin1.txt"
    path.write_bytes("café\n".encode("latin-1"))
    handler(server, types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=uri_of(path), type=types.FileChangeType.Created)]
        )
    )
    assert [r["actor"] for r in await history(server, path)] == ["external"]


async def test_two_gitignores_changed_in_one_batch_lose_nothing(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    server.client_watches_files = True
    (state.root / "sub").mkdir()
    changed = {".gitignore": "*.log\n", "sub/.gitignore": "*.tmp\n", "kept.py": "k\n"}
    for rel, text in changed.items():
        (state.root / rel).write_text(text)
    handler(server, types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=uri_of(state.root / rel), type=types.FileChangeType.Changed)
                for rel in changed
            ]
        )
    )
    await run(server, "engram.evolution.flush")
    recorded = {row["path"] for row in evolution.most_active(state.store)}
    assert recorded == set(changed)


async def test_edits_are_recorded_at_the_time_they_were_typed(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    a_py: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uri = open_document(server, a_py)
    typed_at = time.time() - 120
    monkeypatch.setattr(lsp_evolution.time, "time", lambda: typed_at)
    edit(server, uri, span(0, 0, 0, 0), "x")
    monkeypatch.undo()
    [row] = await history(server, a_py)
    assert row["ts"] == pytest.approx(typed_at, abs=1)


async def test_a_branch_switched_while_no_engram_ran_is_recorded_when_the_folder_opens(
    server: EngramServer, state: FolderState
) -> None:
    client(server)
    root = state.root
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    evolution.observe_git(state.store)  # what the last engram process saw
    git(root, "checkout", "-q", "-b", "feature")
    feature = lsp_evolution.get_feature(server)
    feature.folder_ready(server, state)
    feature.writer.submit(lambda: None).result(timeout=30)
    assert feature.counters["git"] == 1
    found = await run(server, "engram.timeline", {"source": "evolution"})
    assert "git checkout main -> feature" in found["markdown"]


def test_a_line_inserted_above_an_edited_line_keeps_both_edited() -> None:
    ranges = lsp_evolution.LineRanges()
    ranges.edit(5, 5, 3, "abc")  # typed on line 6
    ranges.edit(5, 5, 0, "a new line\n")  # a line inserted above it, at column 0
    assert ranges.one_based() == [(6, 7)]  # the new line 6 and the typed line, now line 7
    ranges.edit(9, 9, 0, "x")  # typed at the start of line 10: that line is touched
    assert ranges.one_based() == [(6, 7), (10, 10)]
    ranges.edit(0, 0, 0, "\n")  # an empty line at the very top moves both down
    assert ranges.one_based() == [(1, 1), (7, 8), (11, 11)]


async def test_five_seconds_after_the_first_key_typing_is_recorded_at_once(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    a_py: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uri = open_document(server, a_py)
    started = time.time()
    now = [started]
    monkeypatch.setattr(lsp_evolution.time, "time", lambda: now[0])
    edit(server, uri, span(0, 0, 0, 0), "x")
    now[0] = started + lsp_evolution.EDIT_MAX_DELAY_SECONDS  # exactly five seconds on
    edit(server, uri, span(0, 1, 0, 1), "y")
    doc = lsp_evolution.get_feature(server).docs[uri]
    loop = asyncio.get_running_loop()
    assert doc.timer is not None and doc.timer.when() - loop.time() <= 0.01


def test_lines_replaced_by_more_lines_and_edits_next_to_each_other_are_one_range() -> None:
    ranges = lsp_evolution.LineRanges()
    ranges.edit(4, 5, 0, "a\nb\n")  # line 5 replaced by two lines: 5 and 6
    assert ranges.one_based() == [(5, 6)]
    ranges.edit(6, 6, 1, "x")  # typed on line 7, right below them
    assert ranges.one_based() == [(5, 7)]
    apart = lsp_evolution.LineRanges()
    apart.edit(3, 3, 1, "x")
    apart.edit(4, 4, 1, "y")  # the next line: one range, not two
    assert apart.one_based() == [(4, 5)]
