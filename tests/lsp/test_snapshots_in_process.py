"""Snapshots and the timeline from the editor, on the server the real `engram lsp` builds, in
this process: what a snapshot holds of the open documents, restore reopening them at their
selection (kept inside a file that shrank since) with its warnings, and `engram.timeline`'s
filters (test_snapshots.py drives the same over stdio with real clients).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lsp_server.features import evolution as lsp_evolution
from lsp_server.features import snapshots as lsp_snapshots
from lsp_server.server import EngramServer, FolderState
from memory_core import snapshots
from tests.conftest import git
from tests.lsp.in_process import Client, client, edit, handler, open_document, run, span, uri_of


@pytest.fixture
async def seen(server: EngramServer, state: FolderState) -> Client:
    recorded = client(server)
    lsp_evolution.get_feature(server).folder_ready(server, state)
    return recorded


def cursor_at(server: EngramServer, uri: str, at: types.Range) -> None:
    """The editor asks for code actions where the cursor is: how the server knows it."""
    handler(server, types.TEXT_DOCUMENT_CODE_ACTION)(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=at,
            context=types.CodeActionContext(diagnostics=[]),
        )
    )


def position(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


async def test_a_snapshot_holds_the_open_documents_of_its_folder_with_cursor_and_selection(
    server: EngramServer, state: FolderState, seen: Client, tmp_path: Path
) -> None:
    (state.root / "a.py").write_text("def a():\n    return 1\n")
    (state.root / "b.py").write_text("def b():\n    return 2\n")
    a = open_document(server, state.root / "a.py")
    b = open_document(server, state.root / "b.py")
    stray = tmp_path / "elsewhere.py"
    stray.write_text("x\n")
    open_document(server, stray)  # not in the folder: not in its snapshot
    cursor_at(server, a, span(1, 4, 1, 10))
    edit(server, b, span(1, 11, 1, 12), "3")  # typed: the cursor after it, the buffer dirty
    snap = await run(
        server,
        "engram.snapshot.capture",
        {"note": "before lunch", "story": "ST-12", "subtask": "retry"},
    )
    assert (snap["note"], snap["story_id"], snap["subtask"]) == ("before lunch", "ST-12", "retry")
    documents = {d["path"]: d for d in snap["open_documents"]}
    assert set(documents) == {"a.py", "b.py"}
    assert documents["a.py"]["selection"] == {"start": position(1, 4), "end": position(1, 10)}
    assert documents["a.py"]["cursor"] == position(1, 10)
    assert documents["a.py"]["dirty"] is False
    assert documents["b.py"]["cursor"] == position(1, 12)
    assert documents["b.py"]["selection"] == {"start": position(1, 12), "end": position(1, 12)}
    assert documents["b.py"]["dirty"] is True
    listed = await run(server, "engram.snapshot.list")
    assert [s["id"] for s in listed["snapshots"]] == [snap["id"]]


async def test_the_documents_the_client_names_are_taken_as_given(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "a.py").write_text("a\n")
    (state.root / "b.py").write_text("b\n")
    open_document(server, state.root / "a.py")  # the client's list wins over what is open
    selection = {"start": position(0, 0), "end": position(0, 1)}
    snap = await run(
        server,
        "engram.snapshot.capture",
        {
            "documents": [
                {"uri": uri_of(state.root / "b.py"), "selection": selection, "dirty": True},
                {"path": "a.py", "cursor": position(0, 1)},
                {"path": "a.py"},
            ]
        },
    )
    [b, a, odd] = snap["open_documents"]
    assert (b["path"], b["selection"], b["cursor"], b["dirty"]) == (
        "b.py",
        selection,
        position(0, 1),  # a selection's end is the cursor
        True,
    )
    assert (a["path"], a["cursor"], a["dirty"]) == ("a.py", position(0, 1), False)
    assert odd["cursor"] == position(0, 0)  # none given: the top of the file


WRONG_CAPTURES = [
    ({"documents": [5]}, "each document needs a uri, got 5"),
    ({"documents": [{"selection": {}}]}, "each document needs a uri, got {'selection': {}}"),
    ({"documents": [{"uri": 3}]}, "each document needs a uri"),
    ({"story": 7}, "story must be text"),
    ({"subtask": ["a"]}, "subtask must be text"),
]


async def test_a_capture_with_wrong_arguments_says_which(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    for args, message in WRONG_CAPTURES:
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await run(server, "engram.snapshot.capture", args)
        assert message in raised.value.message, args
        assert snapshots.list_snapshots(state.store) == []


async def test_restore_reopens_each_document_at_its_selection_the_last_one_focused(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "a.py").write_text("def a():\n    return 1\n")
    (state.root / "b.py").write_text("def b():\n    return 2\n")
    a = open_document(server, state.root / "a.py")
    b = open_document(server, state.root / "b.py")
    cursor_at(server, a, span(1, 4, 1, 10))
    cursor_at(server, b, span(0, 4, 0, 5))
    snap = await run(server, "engram.snapshot.capture")
    restored = await run(server, "engram.snapshot.restore", {"id": snap["id"]})
    assert sorted(restored["reopened"]) == ["a.py", "b.py"]
    by_uri = {s.uri: s for s in seen.shown}
    assert by_uri[a].selection == span(1, 4, 1, 10)
    assert by_uri[b].selection == span(0, 4, 0, 5)
    assert [s.take_focus for s in seen.shown] == [False, True]
    assert restored["warnings"] == [] and seen.messages == []


async def test_restore_keeps_the_cursor_inside_a_file_that_shrank(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    path = state.root / "long.py"
    path.write_text("".join(f"line_{i} = {i}\n" for i in range(12)))
    uri = open_document(server, path)
    cursor_at(server, uri, span(10, 3, 10, 9))
    snap = await run(server, "engram.snapshot.capture")
    handler(server, types.TEXT_DOCUMENT_DID_CLOSE)(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    server.workspace.remove_text_document(uri)
    path.write_text("x = 1\n")  # one line now, ending in a newline
    await run(server, "engram.snapshot.restore", {"id": snap["id"]})
    assert seen.shown[-1].selection == span(0, 5, 0, 5)
    path.write_text("x = 1\nlong_enough_line_here\nshort")  # line 10 gone, line 2 is short
    await run(server, "engram.snapshot.restore", {"id": snap["id"]})
    assert seen.shown[-1].selection == span(2, 5, 2, 5)


async def test_restore_clamps_to_the_line_and_counts_as_the_editor_does(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    path = state.root / "wide.py"
    path.write_text("🚀🚀\r\nsecond line is long\n")
    uri = open_document(server, path)
    cursor_at(server, uri, span(0, 1, 0, 9))  # past the end of the first line
    snap = await run(server, "engram.snapshot.capture")
    await run(server, "engram.snapshot.restore", {"id": snap["id"]})
    # Two rockets are four UTF-16 units; the \r is not part of the line.
    assert seen.shown[-1].selection == span(0, 1, 0, 4)


async def test_restore_uses_the_open_buffer_not_the_disk(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    path = state.root / "c.py"
    path.write_text("one\ntwo\nthree\n")
    uri = open_document(server, path)
    cursor_at(server, uri, span(2, 0, 2, 5))
    snap = await run(server, "engram.snapshot.capture")
    path.write_text("")  # emptied on disk, the buffer still has three lines
    await run(server, "engram.snapshot.restore", {"id": snap["id"]})
    assert seen.shown[-1].selection == span(2, 0, 2, 5)


async def test_restore_says_what_it_could_not_do(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "a.py").write_text("a\n")
    (state.root / "gone.py").write_text("g\n")
    snap = await run(
        server,
        "engram.snapshot.capture",
        {"documents": [{"path": "a.py"}, {"path": "gone.py"}]},
    )
    (state.root / "gone.py").unlink()
    seen.shows = False  # the editor does not reopen it
    restored = await run(server, "engram.snapshot.restore", {"id": snap["id"]})
    assert restored["reopened"] == []
    assert "gone.py is gone" in restored["warnings"]
    assert "the editor did not reopen a.py" in restored["warnings"]
    assert [s.uri for s in seen.shown] == [uri_of(state.root / "a.py")]
    assert [(m.type, m.message) for m in seen.messages] == [
        (types.MessageType.Warning, f"engram: snapshot {snap['id']}: {warning}")
        for warning in restored["warnings"]
    ]


async def test_an_editor_that_cannot_open_documents_is_told_so(
    server: EngramServer, state: FolderState
) -> None:
    seen = client(server, show_document=False)
    (state.root / "a.py").write_text("a\n")
    snap = await run(server, "engram.snapshot.capture", {"documents": [{"path": "a.py"}]})
    restored = await run(server, "engram.snapshot.restore", {"id": snap["id"]})
    assert restored["reopened"] == [] and seen.shown == []
    assert restored["warnings"] == [
        "this editor cannot be asked to open documents (window/showDocument)"
    ]
    nothing = await run(server, "engram.snapshot.capture", {"documents": []})
    assert (await run(server, "engram.snapshot.restore", {"id": nothing["id"]}))["warnings"] == []


@pytest.mark.parametrize("args", [{}, {"id": ""}])
async def test_restore_needs_the_snapshot(
    server: EngramServer, state: FolderState, seen: Client, args: dict[str, Any]
) -> None:
    with pytest.raises(JsonRpcInvalidParams, match="give the snapshot as `id`"):
        await run(server, "engram.snapshot.restore", args)


async def test_a_snapshot_sees_where_git_stands_and_restore_never_moves_it(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    root = state.root
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    snap = await run(server, "engram.snapshot.capture")
    assert (snap["is_repo"], snap["branch"]) == (True, "main")
    git(root, "checkout", "-q", "-b", "elsewhere")
    restored = await run(server, "engram.snapshot.restore", {"id": snap["id"]})
    assert any("branch differs" in w for w in restored["warnings"])
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "elsewhere"


# the timeline


async def test_the_timeline_filters_by_time_source_and_file(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "a.py").write_text("a\n")
    # Ten minutes ago (by the core: the command takes a snapshot now).
    first = snapshots.capture(state.store, note="the first one", now=time.time() - 600)
    snap = await run(server, "engram.snapshot.capture", {"documents": [{"path": "a.py"}]})
    everything = await run(server, "engram.timeline")
    ids = [e["id"] for e in everything["entries"]]
    assert f"snapshot:{snap['id']}" in ids and f"snapshot:{first['id']}" in ids
    assert "the first one" in everything["markdown"]
    by_source = await run(server, "engram.timeline", {"source": "snapshot"})
    assert [e["id"] for e in by_source["entries"]] == [
        f"snapshot:{snap['id']}",
        f"snapshot:{first['id']}",
    ]
    as_list = await run(server, "engram.timeline", {"source": ["snapshot"]})
    assert as_list["entries"] == by_source["entries"]
    assert (await run(server, "engram.timeline", {"source": "session"}))["entries"] == []
    recent = await run(server, "engram.timeline", {"since": "1h", "source": "snapshot"})
    assert len(recent["entries"]) == 2
    hour_ago = time.time() - 3600
    assert len((await run(server, "engram.timeline", {"since": hour_ago}))["entries"]) >= 1
    before = await run(server, "engram.timeline", {"until": hour_ago, "source": "snapshot"})
    assert before["entries"] == []
    later = await run(server, "engram.timeline", {"since": time.time() + 60})
    assert later["entries"] == []
    limited = await run(server, "engram.timeline", {"limit": 1, "source": "snapshot"})
    assert [e["id"] for e in limited["entries"]] == [f"snapshot:{snap['id']}"]  # the newest


async def test_the_timeline_of_one_file_by_path_or_uri(
    server: EngramServer, state: FolderState, seen: Client, tmp_path: Path
) -> None:
    from memory_core import evolution

    (state.root / "a.py").write_text("a\n")
    (state.root / "b.py").write_text("b\n")
    evolution.record_change(state.store, "a.py", actor="editor", after="a2\n")
    evolution.record_change(state.store, "b.py", actor="editor", after="b2\n")
    by_path = await run(server, "engram.timeline", {"file": "a.py"})
    assert by_path["entries"] and all("a.py" in str(e) for e in by_path["entries"])
    assert not any("b.py" in str(e) for e in by_path["entries"])
    by_uri = await run(server, "engram.timeline", {"file": uri_of(state.root / "a.py")})
    assert by_uri["entries"] == by_path["entries"]
    with pytest.raises(JsonRpcInvalidParams):
        await run(server, "engram.timeline", {"file": uri_of(tmp_path / "elsewhere.py")})


def test_a_position_is_given_as_the_client_sends_it() -> None:
    assert lsp_snapshots._position(types.Position(line=3, character=4)) == position(3, 4)
    assert lsp_snapshots._position(position(1, 2)) == position(1, 2)
