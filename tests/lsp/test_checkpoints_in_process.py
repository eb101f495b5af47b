"""Checkpoints from the editor, on the server the real `engram lsp` builds, in this process:
create, list, diff and a file's content; rollback with its question, its preview, open buffers
with unsaved text and undoing it; automatic checkpoints on a burst of file changes, at the edges
of their count and window (test_checkpoints.py drives the same over stdio with real clients).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lsp_server.features import checkpoints as lsp_checkpoints
from lsp_server.features import evolution as lsp_evolution
from lsp_server.server import EngramServer, FolderState
from memory_core import clock, config, evolution, sessions
from tests.lsp.in_process import (
    Client,
    client,
    handler,
    open_document,
    replace_all,
    run,
    save,
    uri_of,
)


@pytest.fixture
async def seen(server: EngramServer, state: FolderState) -> Client:
    recorded = client(server)
    lsp_evolution.get_feature(server).folder_ready(server, state)
    return recorded


def write(state: FolderState, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = state.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def read(state: FolderState, rel: str) -> str | None:
    path = state.root / rel
    return path.read_text(encoding="utf-8") if path.exists() else None


async def background() -> None:
    """Wait for the automatic checkpoints the server started."""
    while lsp_checkpoints._BACKGROUND:
        await asyncio.gather(*list(lsp_checkpoints._BACKGROUND))


async def bursts(server: EngramServer) -> list[dict[str, Any]]:
    await background()
    listed = await run(server, "engram.checkpoint.list")
    return [c for c in listed["checkpoints"] if c["reason"] == "burst"]


def report(server: EngramServer, state: FolderState, rels: list[str]) -> None:
    """The client reports files changed on disk."""
    handler(server, types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=uri_of(state.root / rel), type=types.FileChangeType.Changed)
                for rel in rels
            ]
        )
    )


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """The clock, moved by hand: `now(seconds)` moves it forward."""
    at = [clock.now()]
    monkeypatch.setattr(clock, "now", lambda: at[0])

    def forward(seconds: float) -> None:
        at[0] += seconds

    return forward


# create, list, diff, a file's content


async def test_a_checkpoint_is_made_listed_and_compared_with_the_workspace(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"app.py": "one\n", "lib/util.py": "u\n"})
    made = await run(server, "engram.checkpoint.create", {"name": "first", "description": "safe"})
    assert (made["name"], made["files"], made["reason"]) == ("first", 2, "manual")
    listed = await run(server, "engram.checkpoint.list")
    assert [c["id"] for c in listed["checkpoints"]] == [made["id"]]
    assert "first" in listed["markdown"]
    write(state, {"app.py": "two\n", "new.py": "n\n"})
    diff = await run(server, "engram.checkpoint.diff", {"id": made["id"]})
    assert (diff["against"], diff["added"], diff["modified"]) == (
        "workspace",
        ["new.py"],
        ["app.py"],
    )
    second = await run(server, "engram.checkpoint.create")
    between = await run(
        server, "engram.checkpoint.diff", {"id": made["id"], "against": second["id"]}
    )
    assert between["against"] == second["id"] and between["added"] == ["new.py"]
    assert seen.progress == []  # this client shows no progress


async def test_a_files_content_in_a_checkpoint_by_path_or_uri(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"lib/util.py": "before ü\n"})
    made = await run(server, "engram.checkpoint.create")
    write(state, {"lib/util.py": "after\n"})
    by_path = await run(server, "engram.checkpoint.file", {"id": made["id"], "path": "lib/util.py"})
    assert by_path == {
        "id": made["id"],
        "path": "lib/util.py",
        "exists": True,
        "content": "before ü\n",
    }
    by_uri = await run(
        server,
        "engram.checkpoint.file",
        {"id": made["id"], "path": uri_of(state.root / "lib/util.py")},
    )
    assert by_uri["path"] == "lib/util.py" and by_uri["content"] == "before ü\n"
    missing = await run(server, "engram.checkpoint.file", {"id": made["id"], "path": "nope.py"})
    assert missing == {"id": made["id"], "path": "nope.py", "exists": False, "content": ""}


WITHOUT_A_CHECKPOINT = [
    ("engram.checkpoint.diff", {}, "engram.checkpoint.diff needs `id`"),
    ("engram.checkpoint.diff", {"id": ""}, "engram.checkpoint.diff needs `id`"),
    ("engram.checkpoint.file", {"path": "a.py"}, "needs `id` and `path`"),
    ("engram.checkpoint.file", {"id": "C-1"}, "needs `id` and `path`"),
    ("engram.checkpoint.file", {"id": "C-1", "path": ""}, "needs `id` and `path`"),
    ("engram.checkpoint.rollback", {}, "needs `id`: the checkpoint to roll back to"),
    ("engram.checkpoint.rollback", {"id": ""}, "needs `id`: the checkpoint to roll back to"),
]


async def test_a_command_missing_its_checkpoint_says_what_it_needs(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    for command, args, message in WITHOUT_A_CHECKPOINT:
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await run(server, command, args)
        assert message in raised.value.message, args


async def test_a_client_showing_progress_sees_it_begin_and_end(
    server: EngramServer, state: FolderState
) -> None:
    seen = client(server, progress=True)
    write(state, {"a.py": "a\n"})
    made = await run(server, "engram.checkpoint.create")
    [created, begun, ended] = seen.progress
    assert created[0] == "create" and created[1].startswith("engram-")
    assert begun == ("begin", created[1], "engram: creating a checkpoint")
    assert ended == ("end", created[1], None)
    write(state, {"a.py": "b\n"})
    await run(server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True})
    assert seen.progress[-2][2] == f"engram: rolling back to {made['label']}"


async def test_a_client_refusing_progress_still_gets_its_checkpoint(
    server: EngramServer, state: FolderState
) -> None:
    seen = client(server, progress=True, refuse_progress=True)
    write(state, {"a.py": "a\n"})
    made = await run(server, "engram.checkpoint.create")
    assert made["files"] == 1
    assert [step for step, _, _ in seen.progress] == ["create"]  # no begin, no end


# rollback


async def test_rollback_asks_first_naming_what_it_restores_and_removes(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"app.py": "good\n"})
    made = await run(server, "engram.checkpoint.create", {"name": "base"})
    write(state, {"app.py": "bad\n", "junk.txt": "created after\n"})
    seen.answer = "Cancel"
    cancelled = await run(server, "engram.checkpoint.rollback", {"id": made["id"]})
    assert (cancelled["done"], cancelled["reason"], cancelled["restore"]) == (
        False,
        "cancelled",
        ["app.py"],
    )
    [question] = seen.questions
    assert question.type == types.MessageType.Warning
    assert question.message == (
        "Roll back to checkpoint base? Restore 1 file: app.py. Remove 1 file created after it: "
        "junk.txt. A checkpoint of the files on disk is made first, so this can be undone."
    )
    assert [a.title for a in question.actions] == ["Roll back", "Cancel"]
    assert read(state, "app.py") == "bad\n" and read(state, "junk.txt") is not None
    seen.answer = None  # the question dismissed: nothing either
    assert (await run(server, "engram.checkpoint.rollback", {"id": made["id"]}))["done"] is False
    seen.answer = "Roll back"
    done = await run(server, "engram.checkpoint.rollback", {"id": made["id"]})
    assert done["done"] is True and done["label"] == "base"
    assert read(state, "app.py") == "good\n" and read(state, "junk.txt") is None
    assert (done["restored"], done["removed"]) == (["app.py"], ["junk.txt"])
    # The rollback's writes are its own in the file evolution.
    [row] = evolution.history(state.store, "app.py")
    assert row["actor"] == "external" and row["data"] == {"rollback": made["id"]}
    # And it can be undone: the safety checkpoint holds the disk as it was.
    listed = await run(server, "engram.checkpoint.list")
    assert done["undo_checkpoint"] in [c["id"] for c in listed["checkpoints"]]


async def test_a_client_that_cannot_answer_is_taken_as_no(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"app.py": "good\n"})
    made = await run(server, "engram.checkpoint.create")
    write(state, {"app.py": "bad\n"})

    async def broken(params: types.ShowMessageRequestParams) -> None:
        raise RuntimeError("the client went away")

    server.window_show_message_request_async = broken  # type: ignore[method-assign]
    result = await run(server, "engram.checkpoint.rollback", {"id": made["id"]})
    assert result["done"] is False and read(state, "app.py") == "bad\n"


async def test_a_rollback_with_nothing_to_change_asks_nothing(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"app.py": "same\n"})
    made = await run(server, "engram.checkpoint.create")
    result = await run(server, "engram.checkpoint.rollback", {"id": made["id"]})
    assert result == {
        "done": True,
        "checkpoint": made["id"],
        "restored": [],
        "removed": [],
        "via_editor": [],
        "reload": [],
        "unchanged": result["unchanged"],
    }
    assert result["unchanged"] >= 1 and seen.questions == []


async def test_a_confirmed_rollback_names_the_open_buffers_to_reload(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"open.py": "value = 1\n", "closed.py": "other = 1\n"})
    made = await run(server, "engram.checkpoint.create")
    write(state, {"open.py": "value = 2\n", "closed.py": "other = 2\n", "created.py": "new\n"})
    uri = open_document(server, state.root / "open.py")
    created = open_document(server, state.root / "created.py")
    result = await run(server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True})
    assert seen.questions == [] and seen.edits == []
    assert sorted(result["reload"]) == sorted([uri, created])
    assert (read(state, "open.py"), read(state, "closed.py")) == ("value = 1\n", "other = 1\n")


async def test_a_preview_lists_the_files_and_the_unsaved_buffers_and_changes_nothing(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"typed.py": "answer = 42\n", "other.py": "saved = True\n"})
    made = await run(server, "engram.checkpoint.create", {"name": "before"})
    write(state, {"other.py": "saved = False\n", "junk.txt": "x\n"})
    open_document(server, state.root / "other.py")
    typed = open_document(server, state.root / "typed.py")
    replace_all(server, typed, "answer = 0  # unsaved\n")
    preview = await run(server, "engram.checkpoint.rollback", {"id": made["id"], "preview": True})
    assert (preview["done"], preview["reason"], preview["label"]) == (False, "preview", "before")
    assert preview["restore"] == ["other.py", "typed.py"]
    assert preview["remove"] == ["junk.txt"]
    assert preview["unsaved"] == ["typed.py"] and preview["unsaved_given_back"] == []
    assert preview["message"] == (
        "Roll back to checkpoint before? Restore 2 files: other.py, typed.py. Remove 1 file "
        "created after it: junk.txt. A checkpoint of the files on disk is made first, so this "
        "can be undone. Unsaved changes in typed.py are replaced too; they are kept with that "
        "checkpoint, so undoing the rollback brings them back."
    )
    assert read(state, "other.py") == "saved = False\n" and read(state, "junk.txt") == "x\n"
    assert seen.questions == []


async def test_undoing_a_rollback_gives_the_unsaved_text_back_to_the_buffers(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"typed.py": "answer = 42\n", "other.py": "saved = True\n"})
    made = await run(server, "engram.checkpoint.create", {"name": "base"})
    write(state, {"other.py": "saved = False\n"})
    typed = open_document(server, state.root / "typed.py")
    other = open_document(server, state.root / "other.py")
    replace_all(server, typed, "answer = 0  # typed, not saved\n")
    replace_all(server, other, "🚀 = 1\nno newline at the end")
    rolled = await run(server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True})
    assert rolled["restored"] == ["other.py", "typed.py"]
    assert sorted(rolled["reload"]) == sorted([typed, other])
    assert read(state, "typed.py") == "answer = 42\n"
    # The client reloads both buffers from the disk.
    replace_all(server, typed, "answer = 42\n")
    replace_all(server, other, "saved = True\n")

    undone = await run(
        server, "engram.checkpoint.rollback", {"id": rolled["undo_checkpoint"], "confirm": True}
    )
    assert undone["unsaved_given_back"] == ["other.py", "typed.py"]
    assert undone["reload"] == []  # their text comes with the edit, not from the disk
    assert read(state, "other.py") == "saved = False\n"
    given = {
        uri: (edits[0].range, edits[0].new_text)
        for applied in seen.edits
        for uri, edits in (applied.edit.changes or {}).items()
    }
    whole = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=1, character=0)
    )
    assert given == {
        typed: (whole, "answer = 0  # typed, not saved\n"),
        other: (whole, "🚀 = 1\nno newline at the end"),
    }
    assert {a.label for a in seen.edits} == {"engram: unsaved text given back"}


async def test_the_whole_buffer_is_replaced_whatever_its_last_line(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    """The edit giving unsaved text back ends where the buffer ends: after a final newline, or
    at the end of a last line without one, counted in UTF-16 units as the client counts."""
    write(state, {"a.py": "a\n", "b.py": "b\n"})
    made = await run(server, "engram.checkpoint.create")
    a_uri = open_document(server, state.root / "a.py")
    b_uri = open_document(server, state.root / "b.py")
    replace_all(server, a_uri, "unsaved a\n")
    replace_all(server, b_uri, "unsaved b\n")
    rolled = await run(server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True})
    replace_all(server, a_uri, "x\n🚀 y")  # the buffers as the user has them now
    replace_all(server, b_uri, "")
    seen.applies = False  # the client refuses b's edit...
    undone = await run(
        server, "engram.checkpoint.rollback", {"id": rolled["undo_checkpoint"], "confirm": True}
    )
    assert undone["unsaved_given_back"] == []  # ...and a's: neither is said given back
    ends = {
        uri: edits[0].range.end
        for applied in seen.edits
        for uri, edits in (applied.edit.changes or {}).items()
    }
    assert ends == {
        a_uri: types.Position(line=1, character=4),  # "🚀 y": two units for the rocket
        b_uri: types.Position(line=0, character=0),
    }


async def test_a_failing_apply_edit_skips_that_buffer_only(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"a.py": "a\n", "b.py": "b\n"})
    made = await run(server, "engram.checkpoint.create")
    a_uri = open_document(server, state.root / "a.py")
    b_uri = open_document(server, state.root / "b.py")
    replace_all(server, a_uri, "unsaved a\n")
    replace_all(server, b_uri, "unsaved b\n")
    rolled = await run(server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True})
    replace_all(server, a_uri, "a\n")
    replace_all(server, b_uri, "b\n")
    calls: list[str] = []

    async def apply_edit(params: types.ApplyWorkspaceEditParams) -> Any:
        [uri] = list(params.edit.changes or {})
        calls.append(uri)
        if uri == a_uri:
            raise RuntimeError("the client failed")
        return types.ApplyWorkspaceEditResult(applied=True)

    server.workspace_apply_edit_async = apply_edit  # type: ignore[method-assign]
    undone = await run(
        server, "engram.checkpoint.rollback", {"id": rolled["undo_checkpoint"], "confirm": True}
    )
    assert calls == [a_uri, b_uri]
    assert undone["unsaved_given_back"] == ["b.py"]


async def test_a_buffer_equal_to_the_checkpoint_is_not_restored(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"a.py": "kept\n"})
    made = await run(server, "engram.checkpoint.create")
    uri = open_document(server, state.root / "a.py")
    replace_all(server, uri, "edited\n")
    replace_all(server, uri, "kept\n")  # typed back to what the checkpoint holds
    result = await run(server, "engram.checkpoint.rollback", {"id": made["id"], "preview": True})
    assert result["restore"] == [] and result["unsaved"] == []


async def test_rewinding_a_checkpoint_taken_outside_a_session_is_refused(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"a.py": "a\n"})
    made = await run(server, "engram.checkpoint.create")
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await run(server, "engram.checkpoint.rollback", {"id": made["id"], "rewind": True})
    assert f"checkpoint {made['id']} was not taken during a session" in raised.value.message


async def test_a_rollback_during_a_session_is_in_its_tool_calls_and_can_rewind_it(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    session = sessions.start(state.store, agent="claude-code")
    sessions.record_turn(state.store, session["id"], user_message="make it so")
    write(state, {"a.py": "a\n"})
    made = await run(server, "engram.checkpoint.create")
    assert made["session_id"] == session["id"]
    unchanged = await run(
        server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True, "rewind": True}
    )
    assert "rewound" in unchanged  # nothing on disk to change, the conversation still rewinds
    write(state, {"a.py": "b\n"})
    result = await run(
        server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True, "rewind": True}
    )
    assert "rewound" in result and read(state, "a.py") == "a\n"
    rows = state.store.query(
        "SELECT tool, ok, summary FROM session_tool_calls WHERE session_id = ?", (session["id"],)
    )
    assert [(r["tool"], r["ok"]) for r in rows] == [("rollback", 1)]
    assert rows[0]["summary"] == (
        f"to {made['id']}: restored 1, removed 0; undo with {result['undo_checkpoint']}"
    )


async def test_a_closed_session_gets_no_checkpoint_nor_tool_call(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    session = sessions.start(state.store, agent="claude-code")
    sessions.end(state.store, session["id"])
    write(state, {"a.py": "a\n"})
    made = await run(server, "engram.checkpoint.create")
    assert made["session_id"] is None


def test_the_question_counts_files_and_cuts_long_lists() -> None:
    target = {"label": "L"}
    many = [f"f{n}.py" for n in range(14)]
    message = lsp_checkpoints.confirmation_message(target, many, ["gone.py"])
    assert (
        "Restore 14 files: f0.py, f1.py, f2.py, f3.py, f4.py, f5.py, f6.py, f7.py, f8.py, "
        "f9.py, f10.py, f11.py and 2 more." in message
    )
    assert "Remove 1 file created after it: gone.py." in message
    twelve = lsp_checkpoints.confirmation_message(target, many[:12], [])
    assert twelve.startswith("Roll back to checkpoint L? Restore 12 files: f0.py,")
    assert "f11.py." in twelve and "more" not in twelve and "Remove" not in twelve
    only_removes = lsp_checkpoints.confirmation_message(target, [], ["x.py", "y.py"], (), ["z.py"])
    assert only_removes == (
        "Roll back to checkpoint L? Remove 2 files created after it: x.py, y.py. A checkpoint "
        "of the files on disk is made first, so this can be undone. The unsaved changes of "
        "z.py come back too."
    )


# automatic checkpoints on a burst of file changes


async def test_ten_changed_files_within_five_seconds_make_one_automatic_checkpoint(
    server: EngramServer, state: FolderState, seen: Client, now: Callable[[float], None]
) -> None:
    files = [f"gen_{n}.py" for n in range(10)]
    write(state, {rel: "1\n" for rel in files})
    report(server, state, files[:9])
    assert await bursts(server) == []  # nine: not yet
    now(5.0)  # the tenth exactly five seconds later: still the same burst
    report(server, state, files[9:])
    [burst] = await bursts(server)
    assert burst["files"] == 10 and burst["description"] == "automatic: burst of file changes"
    # The count starts again after a burst.
    report(server, state, files[:9])
    assert len(await bursts(server)) == 1


async def test_changes_further_apart_than_the_window_make_no_burst(
    server: EngramServer, state: FolderState, seen: Client, now: Callable[[float], None]
) -> None:
    files = [f"gen_{n}.py" for n in range(10)]
    write(state, {rel: "1\n" for rel in files})
    report(server, state, files[:9])
    now(5.01)
    report(server, state, files[9:])
    assert await bursts(server) == []


async def test_the_burst_settings_are_the_folders(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {f"m{n}.py": "1\n" for n in range(3)})
    state.settings = config.load(state.root, overrides={"checkpoints.burst_files": 3})
    report(server, state, ["m0.py", "m1.py"])
    assert await bursts(server) == []
    report(server, state, ["m2.py"])
    assert len(await bursts(server)) == 1
    state.settings = config.load(state.root, overrides={"checkpoints.burst_files": 0})
    report(server, state, [f"m{n}.py" for n in range(3)] * 5)
    assert len(await bursts(server)) == 1  # 0: off


async def test_a_save_counts_toward_a_burst(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {f"m{n}.py": "1\n" for n in range(3)})
    state.settings = config.load(state.root, overrides={"checkpoints.burst_files": 3})
    for n in range(3):
        uri = open_document(server, state.root / f"m{n}.py")
        save(server, uri)
    assert len(await bursts(server)) == 1


async def test_only_someones_work_counts_toward_a_burst(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    """Not engram's store, not git's folder, not an editor's swap file nor an ignored one."""
    (state.root / ".gitignore").write_text("build/\n")
    noise = [
        *(f".engram/exports/v{n}.md" for n in range(4)),
        *(f".git/objects/o{n}" for n in range(4)),
        *(f".m{n}.py.swp" for n in range(4)),
        *(f"build/b{n}.py" for n in range(4)),
    ]
    write(state, {rel: "x\n" for rel in noise})
    report(server, state, noise)
    assert await bursts(server) == []
    work = [f"w{n}.py" for n in range(10)]
    write(state, {rel: "x\n" for rel in work})
    report(server, state, work)
    assert len(await bursts(server)) == 1  # the control: real work does


async def test_a_new_folder_reported_alone_counts_its_files(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / ".gitignore").write_text("generated/cache/\n")
    write(state, {f"generated/cache/c{n}.bin": "x\n" for n in range(12)})
    report(server, state, ["generated"])
    assert await bursts(server) == []  # only ignored files in it
    write(state, {f"generated/g{n}.py": "x\n" for n in range(10)})
    report(server, state, ["generated"])
    [burst] = await bursts(server)
    assert burst["files"] == 11  # the ten new files and .gitignore


def test_a_huge_folder_is_counted_only_up_to_what_a_burst_needs(
    server: EngramServer, state: FolderState
) -> None:
    write(state, {f"big/f{n}.py": "x\n" for n in range(lsp_checkpoints.BURST_FOLDER_FILES + 5)})
    ignore = lsp_evolution.get_feature(server).ignore_for(state)
    found = lsp_checkpoints._files_in(state.root, "big", ignore, lsp_checkpoints.BURST_FOLDER_FILES)
    assert len(found) == lsp_checkpoints.BURST_FOLDER_FILES
    assert all(rel.startswith("big/f") for rel in found)


async def test_the_files_a_rollback_wrote_reported_back_make_no_burst_but_later_work_does(
    server: EngramServer, state: FolderState, seen: Client, now: Callable[[float], None]
) -> None:
    files = [f"mod_{n}.py" for n in range(10)]
    write(state, {rel: "N = 1\n" for rel in files})
    made = await run(server, "engram.checkpoint.create", {"name": "base"})
    write(state, {rel: "N = 2\n" for rel in files})
    await run(server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True})
    report(server, state, files)  # the client sees the rollback's writes
    assert await bursts(server) == []
    now(lsp_checkpoints.ROLLBACK_ECHO_SECONDS + 1)
    report(server, state, files)  # a minute later, the same files as they were: not ours
    assert len(await bursts(server)) == 1


async def test_files_changed_again_after_a_rollback_are_work(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    files = [f"mod_{n}.py" for n in range(10)]
    write(state, {rel: "N = 1\n" for rel in files})
    made = await run(server, "engram.checkpoint.create")
    write(state, {rel: "N = 2\n" for rel in files})
    await run(server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True})
    write(state, {rel: "N = 3, the agent again\n" for rel in files})
    report(server, state, files)
    assert len(await bursts(server)) == 1


async def test_a_failing_automatic_checkpoint_lets_the_next_burst_try_again(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    files = [f"g{n}.py" for n in range(10)]
    write(state, {rel: "x\n" for rel in files})
    real = lsp_checkpoints.checkpoints.create

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(lsp_checkpoints.checkpoints, "create", failing)
    report(server, state, files)
    await background()
    assert "automatic checkpoint failed" in caplog.text
    monkeypatch.setattr(lsp_checkpoints.checkpoints, "create", real)
    report(server, state, files)
    assert len(await bursts(server)) == 1


async def test_file_events_outside_the_folder_are_left_out(
    server: EngramServer, state: FolderState, seen: Client, tmp_path: Path
) -> None:
    state.settings = config.load(state.root, overrides={"checkpoints.burst_files": 1})
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x\n")
    handler(server, types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=uri_of(outside), type=types.FileChangeType.Changed)]
        )
    )
    assert await bursts(server) == []


async def test_a_rollback_of_unsaved_buffers_only_counts_them_as_restored(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {"typed.py": "answer = 42\n"})
    made = await run(server, "engram.checkpoint.create")
    uri = open_document(server, state.root / "typed.py")
    replace_all(server, uri, "answer = 0  # unsaved\n")
    result = await run(server, "engram.checkpoint.rollback", {"id": made["id"], "confirm": True})
    assert (result["restored"], result["buffers"], result["reload"]) == (
        ["typed.py"],
        ["typed.py"],
        [uri],
    )
    # The timeline says what the editor said: one file restored (the buffer's), not none.
    found = await run(server, "engram.timeline", {"limit": 20})
    assert "1 file restored, 0 removed" in found["markdown"]


async def test_a_new_folder_counts_the_files_of_its_subfolders(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    write(state, {f"pkg/sub/deep/m{n}.py": "x\n" for n in range(10)})
    report(server, state, ["pkg"])
    assert len(await bursts(server)) == 1


async def test_with_the_servers_watcher_a_checkpoint_looks_only_at_what_changed(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    feature = lsp_evolution.get_feature(server)
    write(state, {"app.py": "value = 1\n", "lib.py": "lib\n"})
    await feature.after_initialized(server)
    try:
        for _ in range(200):
            status = await run(server, "engram.evolution.status")
            if status["server_watcher"] and status["journal_epoch"]:
                break
            await asyncio.sleep(0.05)
        first = await run(server, "engram.checkpoint.create", {"name": "before"})
        await asyncio.sleep(1.2)  # past the journal's slack around the first checkpoint
        write(state, {"generated/deep/new.py": "made by an agent\n", "app.py": "value = 2\n"})
        second = await run(server, "engram.checkpoint.create", {"name": "after"})
        # Made from the watcher's journal (waited for until it caught up with the writes).
        assert (second["source"], second["files"], second["changed"]) == ("watcher", 3, 2)
        diff = await run(
            server, "engram.checkpoint.diff", {"id": first["id"], "against": second["id"]}
        )
        assert diff["added"] == ["generated/deep/new.py"] and diff["modified"] == ["app.py"]
    finally:
        feature.stop_watchers()


async def test_the_listings_are_read_ahead_once_after_the_first_checkpoint_without_failing(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    write(state, {"a.py": "a\n", "lib/b.py": "b\n"})
    await run(server, "engram.checkpoint.create")
    warming = lsp_checkpoints._extra(state).warming
    assert warming is not None
    warming.join(10)
    write(state, {"a.py": "changed\n"})
    await run(server, "engram.checkpoint.create")
    assert lsp_checkpoints._extra(state).warming is warming  # once per folder
    assert failures == [] and "reading ahead the listings" not in caplog.text
