"""Drift in the editor, on the server the real `engram lsp` builds, in this process: lines two
hands changed, a buffer with unsaved edits whose file changed on disk, a memory whose cited code
changed or moved; as diagnostics, hovers and quick fixes, and the `engram.drift*` commands
(test_drift.py and test_stale_memory_citations.py drive the same over stdio).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lsp_server.features import diagnostics as lsp_diagnostics
from lsp_server.features import drift as lsp_drift
from lsp_server.features import evolution as lsp_evolution
from lsp_server.server import EngramServer, FolderState
from memory_core import drift, evolution, memory
from tests.lsp.in_process import (
    Client,
    client,
    edit,
    handler,
    open_document,
    replace_all,
    run,
    span,
    uri_of,
)

TEXT = "".join(f"line {n}\n" for n in range(1, 21))


@pytest.fixture
async def seen(server: EngramServer, state: FolderState) -> Client:
    recorded = client(server)
    lsp_evolution.get_feature(server).folder_ready(server, state)
    return recorded


def drift_diagnostics(server: EngramServer, state: FolderState, uri: str) -> list[types.Diagnostic]:
    document = server.workspace.get_text_document(uri)
    return [d for d in lsp_diagnostics.collect(server, state, document) if d.code == "drift"]


def hover_text(server: EngramServer, uri: str, line: int) -> str | None:
    found = handler(server, types.TEXT_DOCUMENT_HOVER)(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=0),
        )
    )
    if found is None:
        return None
    assert isinstance(found.contents, types.MarkupContent)
    return found.contents.value


def actions(
    server: EngramServer, uri: str, diagnostics: list[types.Diagnostic]
) -> list[types.CodeAction]:
    found = handler(server, types.TEXT_DOCUMENT_CODE_ACTION)(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=span(0, 0, 0, 0),
            context=types.CodeActionContext(diagnostics=diagnostics),
        )
    )
    return [a for a in found or [] if isinstance(a, types.CodeAction)]


def two_hands(
    state: FolderState, rel: str, lines: tuple[int, int], gap_seconds: float, now: float
) -> None:
    """The agent and then the user changed `lines` of `rel`, `gap_seconds` apart."""
    evolution.record_change(
        state.store,
        rel,
        actor="agent",
        session_id="s-1",
        before="a",
        after="b",
        lines=[lines],
        now=now - gap_seconds,
    )
    evolution.record_change(
        state.store, rel, actor="editor", before="b", after="c", lines=[lines], now=now
    )


# lines changed by two hands


@pytest.mark.parametrize(
    ("lines", "gap", "severity"),
    [
        ((2, 11), 0.0, types.DiagnosticSeverity.Error),  # 10 lines at once: critical
        ((2, 4), 60.0, types.DiagnosticSeverity.Warning),  # 3 lines within a minute: high
        ((2, 2), 60.0, types.DiagnosticSeverity.Information),  # 1 line: medium
        ((2, 2), 600.0, types.DiagnosticSeverity.Hint),  # 1 line, ten minutes apart: low
    ],
)
async def test_lines_two_hands_changed_are_a_diagnostic_of_the_right_severity(
    server: EngramServer,
    state: FolderState,
    seen: Client,
    lines: tuple[int, int],
    gap: float,
    severity: types.DiagnosticSeverity,
) -> None:
    (state.root / "a.py").write_text(TEXT)
    two_hands(state, "a.py", lines, gap, time.time())
    uri = open_document(server, state.root / "a.py")
    [diagnostic] = drift_diagnostics(server, state, uri)
    assert diagnostic.severity == severity
    last = f"line {lines[1]}"
    assert diagnostic.range == span(lines[0] - 1, 0, lines[1] - 1, len(last))
    assert diagnostic.source == "engram"
    assert isinstance(diagnostic.data, dict)
    assert diagnostic.data["kind"] == "overlap" and diagnostic.data["uri"] == uri
    window = float(state.settings["drift.window_minutes"])
    [item] = drift.overlaps(state.store, "a.py", window_minutes=window)
    assert diagnostic.data["id"] == item.id  # the id `engram.drift` reports it under
    assert "memory" not in diagnostic.data
    assert drift.SEVERITIES.index(diagnostic.data["severity"]) == 4 - severity


async def test_an_overlap_hover_says_who_changed_the_lines_and_the_quick_fix_shows_the_history(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "a.py").write_text(TEXT)
    two_hands(state, "a.py", (3, 5), 60.0, time.time())
    uri = open_document(server, state.root / "a.py")
    text = hover_text(server, uri, 2)
    assert text is not None
    head, table = text.split("\n\n", 1)
    assert head == "**engram drift** (high): lines 3-5 were changed by two hands."
    rows = table.split("\n")
    assert rows[:2] == ["| who | when | at |", "| --- | --- | --- |"]
    assert rows[2].startswith("| agent s-1 | 1 min ago | ")
    assert rows[3].startswith("| editor | just now | ")
    assert hover_text(server, uri, 4) is not None
    assert hover_text(server, uri, 1) is None and hover_text(server, uri, 5) is None
    [action] = actions(server, uri, drift_diagnostics(server, state, uri))
    assert action.title == "Show who changed this file"
    assert action.kind == types.CodeActionKind.QuickFix
    assert action.command is not None
    assert (action.command.title, action.command.command, action.command.arguments) == (
        "Show who changed this file",
        "engram.evolution.history",
        [{"uri": uri}],
    )


async def test_lines_past_the_end_of_the_buffer_are_put_on_its_last_line(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "a.py").write_text("one\ntwo\n")
    two_hands(state, "a.py", (5, 9), 0.0, time.time())
    uri = open_document(server, state.root / "a.py")
    [diagnostic] = drift_diagnostics(server, state, uri)
    assert diagnostic.range == span(1, 0, 1, 3)
    empty = state.root / "empty.py"
    empty.write_text("")
    two_hands(state, "empty.py", (1, 2), 0.0, time.time())
    [on_empty] = drift_diagnostics(server, state, open_document(server, empty))
    assert on_empty.range == span(0, 0, 0, 0)


async def test_overlaps_are_read_again_when_something_was_recorded(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "a.py").write_text(TEXT)
    uri = open_document(server, state.root / "a.py")
    assert drift_diagnostics(server, state, uri) == []
    two_hands(state, "a.py", (2, 2), 0.0, time.time())
    # Until the evolution feature says something was recorded, the last answer stands...
    assert drift_diagnostics(server, state, uri) == []
    lsp_evolution.get_feature(server).changed()
    # ...and then it is read again.
    assert len(drift_diagnostics(server, state, uri)) == 1


async def test_overlaps_age_out_of_the_window_without_anything_recorded(
    server: EngramServer, state: FolderState, seen: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    (state.root / "a.py").write_text(TEXT)
    started = time.time()
    two_hands(state, "a.py", (2, 2), 0.0, started)
    uri = open_document(server, state.root / "a.py")
    assert len(drift_diagnostics(server, state, uri)) == 1
    window = float(state.settings["drift.window_minutes"]) * 60
    later = [started + window + 1]
    monkeypatch.setattr(lsp_drift.time, "time", lambda: later[0])
    # Within RECOMPUTE_SECONDS of the last look... no: the window ended, but the answer is
    # kept for at most RECOMPUTE_SECONDS after it was computed, and it was computed long ago.
    assert drift_diagnostics(server, state, uri) == []


async def test_a_recent_answer_is_kept_for_the_recompute_interval(
    server: EngramServer, state: FolderState, seen: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    (state.root / "a.py").write_text(TEXT)
    uri = open_document(server, state.root / "a.py")
    now = [time.time()]
    monkeypatch.setattr(lsp_drift.time, "time", lambda: now[0])
    assert drift_diagnostics(server, state, uri) == []
    two_hands(state, "a.py", (2, 2), 0.0, now[0])
    now[0] += lsp_drift.RECOMPUTE_SECONDS - 0.5
    assert drift_diagnostics(server, state, uri) == []
    now[0] += 0.5
    assert len(drift_diagnostics(server, state, uri)) == 1


# a buffer with unsaved edits whose file changed on disk


async def conflict(server: EngramServer, state: FolderState) -> str:
    server.client_watches_files = True
    path = state.root / "a.py"
    path.write_text(TEXT)
    uri = open_document(server, path)
    edit(server, uri, span(0, 0, 1, 0), "mine\n")
    path.write_text(TEXT.replace("line 2\n", "theirs\n"))
    handler(server, types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]
        )
    )
    await run(server, "engram.evolution.flush")
    for _ in range(3):
        await __import__("asyncio").sleep(0)
    return uri


async def test_an_unsaved_buffer_changed_on_disk_has_a_diagnostic_hover_and_diff(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    uri = await conflict(server, state)
    [diagnostic] = drift_diagnostics(server, state, uri)
    assert diagnostic.range == span(0, 0, 0, len("mine"))
    assert diagnostic.severity == types.DiagnosticSeverity.Information  # not the same lines
    assert isinstance(diagnostic.data, dict) and diagnostic.data["kind"] == "unsaved"
    text = hover_text(server, uri, 0)
    assert text == (
        "**engram drift** (medium): a.py changed on disk while this buffer has unsaved "
        "changes.\n\nUse the quick fix *Show the difference with the file on disk* before "
        "saving over it."
    )
    [action] = actions(server, uri, [diagnostic])
    assert action.title == lsp_drift.DIFF_TITLE and action.diagnostics == [diagnostic]
    assert action.kind == types.CodeActionKind.QuickFix
    assert action.command is not None
    assert action.command.command == "engram.drift.diff"
    assert action.command.arguments is not None
    result = await run(server, action.command.command, action.command.arguments[0])
    assert result["path"] == "a.py"
    assert result["diff"].startswith("--- a.py (on disk)\n+++ a.py (unsaved buffer)\n")
    assert "-line 1\n" in result["diff"] and "+mine\n" in result["diff"]
    assert "-theirs\n" in result["diff"] and "+line 2\n" in result["diff"]
    view = state.root / ".engram" / "exports" / "views" / "diff-a.py.diff"
    assert result["view"] == uri_of(view) and view.read_text() == result["diff"]
    assert [s.uri for s in seen.shown] == [uri_of(view)]
    # The report names it too, first: the most severe.
    report = await run(server, "engram.drift")
    assert report["drift"][0]["kind"] == "unsaved"
    assert "a.py" in report["markdown"]


async def test_the_diff_of_a_buffer_whose_file_is_gone_or_unchanged(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    path = state.root / "b.py"
    path.write_text("same\n")
    uri = open_document(server, path)
    unchanged = await run(server, "engram.drift.diff", {"uri": uri})
    assert unchanged["diff"] == ""
    view = state.root / ".engram" / "exports" / "views" / "diff-b.py.diff"
    assert view.read_text() == "no difference\n"
    path.unlink()
    gone = await run(server, "engram.drift.diff", {"uri": uri})
    assert gone["diff"].endswith("@@ -0,0 +1 @@\n+same\n")


async def test_a_lone_surrogate_in_the_buffer_is_shown_as_a_replacement_character(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    path = state.root / "c.py"
    path.write_text("x\n")
    uri = open_document(server, path)
    replace_all(server, uri, "x\ud800\n")
    result = await run(server, "engram.drift.diff", {"uri": uri})
    assert "+x\ufffd\n" in result["diff"]


NOT_OPEN = [
    ({}, "give the document as `uri`"),
    ({"uri": ""}, "give the document as `uri`"),
    ({"uri": "file:///nowhere/x.py"}, "file:///nowhere/x.py is not open in the editor"),
]


async def test_a_diff_of_a_document_not_open_is_refused(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    for args, message in NOT_OPEN:
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await run(server, "engram.drift.diff", args)
        assert message in raised.value.message, args


async def test_a_document_known_to_the_editor_but_not_followed_has_no_diff(
    server: EngramServer, state: FolderState, seen: Client, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x\n")
    uri = open_document(server, outside)
    with pytest.raises(JsonRpcInvalidParams, match="is not open in the editor"):
        await run(server, "engram.drift.diff", {"uri": uri})


# a memory whose cited code changed


DECISION = "The retry limit is 3: the payment provider bans clients that retry more"


async def cited(server: EngramServer, state: FolderState) -> tuple[str, str]:
    (state.root / "limits.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 3\n")
    entry = await run(
        server,
        "engram.memory.add",
        {"content": DECISION, "type": "decision", "file": "limits.py", "line": 2},
    )
    return str(entry["id"]), open_document(server, state.root / "limits.py")


def stale(server: EngramServer, state: FolderState, uri: str) -> list[types.Diagnostic]:
    return [
        d
        for d in drift_diagnostics(server, state, uri)
        if isinstance(d.data, dict) and d.data["kind"] == "stale-citation"
    ]


async def test_a_memory_whose_cited_line_changed_offers_to_update_or_forget_it(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    memory_id, uri = await cited(server, state)
    assert stale(server, state, uri) == []
    edit(server, uri, span(1, 0, 2, 0), "RETRY_LIMIT = 5\n")  # unsaved: the buffer counts
    [diagnostic] = stale(server, state, uri)
    assert diagnostic.range == span(1, 0, 1, len("RETRY_LIMIT = 5"))
    assert diagnostic.severity == types.DiagnosticSeverity.Information
    assert isinstance(diagnostic.data, dict)
    assert diagnostic.data["memory"] == memory_id and "moved_to" not in diagnostic.data
    assert "gone" not in diagnostic.data
    text = hover_text(server, uri, 1)
    assert text is not None and text.startswith(f"**engram**: {memory_id}")
    assert "the next agent is told it marked *needs checking*" in text
    recite, forget = actions(server, uri, [diagnostic])
    assert (recite.title, recite.is_preferred) == (lsp_drift.RECITE_TITLE, False)
    assert recite.command is not None and recite.command.arguments == [
        {"id": memory_id, "uri": uri}
    ]
    assert (forget.title, forget.kind) == (lsp_drift.FORGET_TITLE, types.CodeActionKind.QuickFix)
    assert forget.diagnostics == [diagnostic] and recite.diagnostics == [diagnostic]
    assert forget.command is not None
    assert forget.command.command == "engram.memory.forget"
    assert forget.command.arguments == [{"id": memory_id, "uri": uri}]
    # Updating the memory to the code as it is: the diagnostic goes, at once.
    refreshes = seen.refreshes
    (state.root / "limits.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 5\n")
    await run(server, "engram.memory.recite", recite.command.arguments[0])
    assert seen.refreshes == refreshes + 1
    assert stale(server, state, uri) == []


async def test_code_that_moved_offers_to_follow_it_first(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    memory_id, uri = await cited(server, state)
    edit(server, uri, span(0, 0, 0, 0), "# a header\n\n")
    [diagnostic] = stale(server, state, uri)
    assert diagnostic.range == span(3, 0, 3, len("RETRY_LIMIT = 3"))
    assert diagnostic.severity == types.DiagnosticSeverity.Hint
    assert isinstance(diagnostic.data, dict) and diagnostic.data["moved_to"] == 4
    recite, _ = actions(server, uri, [diagnostic])
    assert recite.is_preferred is True
    assert recite.command is not None
    assert recite.command.arguments == [{"id": memory_id, "uri": uri, "line": 4}]
    # Following the code: the memory now cites line 4, and the diagnostic goes.
    (state.root / "limits.py").write_text(server.workspace.get_text_document(uri).source)
    await run(server, "engram.memory.recite", recite.command.arguments[0])
    assert memory.get(state.store, memory_id)["line"] == 4
    assert stale(server, state, uri) == []


async def test_forgetting_the_memory_takes_its_diagnostic_away(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    memory_id, uri = await cited(server, state)
    edit(server, uri, span(1, 0, 2, 0), "RETRY_LIMIT = 5\n")
    assert len(stale(server, state, uri)) == 1
    refreshes = seen.refreshes
    deleted = await run(server, "engram.memory.forget", {"id": memory_id, "uri": uri})
    # Recoverable, and the deletion says why.
    assert (deleted["selector"], deleted["reason"]) == (
        {"memory_ids": [memory_id]},
        "stale citation",
    )
    assert seen.refreshes == refreshes + 1
    assert stale(server, state, uri) == []
    assert memory_id not in [m["id"] for m in memory.list_memories(state.store)]


async def test_a_memory_whose_code_is_gone_can_only_be_forgotten(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "x.py").write_text("x\n")
    uri = open_document(server, state.root / "x.py")
    diagnostic = types.Diagnostic(
        range=span(0, 0, 0, 0),
        message="gone",
        code="drift",
        source="engram",
        data={"kind": "stale-citation", "memory": "M-1", "gone": True},
    )
    [only] = actions(server, uri, [diagnostic])
    assert only.title == lsp_drift.FORGET_TITLE
    # Diagnostics of another kind or source, or without a memory, offer nothing here.
    others = [
        types.Diagnostic(
            range=span(0, 0, 0, 0),
            message="m",
            code="drift",
            source="pyright",
            data={"kind": "unsaved"},
        ),
        types.Diagnostic(range=span(0, 0, 0, 0), message="m", code="G-1", source="engram", data={}),
        types.Diagnostic(
            range=span(0, 0, 0, 0),
            message="m",
            code="drift",
            source="engram",
            data={"kind": "stale-citation", "memory": 7},
        ),
        types.Diagnostic(
            range=span(0, 0, 0, 0), message="m", code="drift", source="engram", data="overlap"
        ),
    ]
    assert [a.title for a in actions(server, uri, others)] == []
    # None of them keeps a real one after them from its quick fix.
    assert [a.title for a in actions(server, uri, [*others, diagnostic])] == [
        lsp_drift.FORGET_TITLE
    ]


async def test_citations_are_read_again_after_their_time_or_at_once_after_a_command(
    server: EngramServer, state: FolderState, seen: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    (state.root / "limits.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 3\n")
    uri = open_document(server, state.root / "limits.py")
    clock = [time.monotonic()]
    monkeypatch.setattr(lsp_drift.time, "monotonic", lambda: clock[0])
    edit(server, uri, span(1, 0, 2, 0), "RETRY_LIMIT = 5\n")
    assert stale(server, state, uri) == []  # no memory yet: read now, kept a while
    memory.add(state.store, DECISION, file="limits.py", line=2, type="decision")  # by the CLI
    clock[0] += lsp_drift.CITATIONS_SECONDS
    assert stale(server, state, uri) == []  # still within the time
    clock[0] += 0.01
    assert len(stale(server, state, uri)) == 1


async def test_the_report_lists_every_kind_most_severe_first(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    uri = await conflict(server, state)
    (state.root / "limits.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 3\n")
    memory.add(state.store, DECISION, file="limits.py", line=2, type="decision")
    (state.root / "limits.py").unlink()  # the cited file is gone: critical
    report = await run(server, "engram.drift")
    kinds = [(item["kind"], item["severity"]) for item in report["drift"]]
    assert kinds[0] == ("stale-citation", "critical")
    assert ("unsaved", "medium") in kinds
    ranks = [drift.severity_rank(severity) for _, severity in kinds]
    assert ranks == sorted(ranks, reverse=True)
    assert uri


WITHOUT_A_MEMORY = [
    ("engram.memory.recite", {}, "give the memory as `id`"),
    ("engram.memory.recite", {"id": ""}, "give the memory as `id`"),
    ("engram.memory.forget", {}, "give the memory as `id`"),
]


async def test_the_quick_fix_commands_need_the_memory(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    for command, args, message in WITHOUT_A_MEMORY:
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await run(server, command, args)
        assert message in raised.value.message, args
        assert seen.refreshes == 0


async def test_quick_fixes_and_hovers_are_found_whatever_comes_before_them(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    (state.root / "a.py").write_text(TEXT)
    now = time.time()
    two_hands(state, "a.py", (3, 5), 0.0, now)
    two_hands(state, "a.py", (12, 12), 0.0, now)
    uri = open_document(server, state.root / "a.py")
    # Line 12 is after the first overlap (lines 3-5), which says nothing about it.
    text = hover_text(server, uri, 11)
    assert text is not None and "line" in text and "12-12" in text
    other = types.Diagnostic(range=span(0, 0, 0, 1), message="x", code="E1", source="pyright")
    [first, *_] = drift_diagnostics(server, state, uri)
    titles = [a.title for a in actions(server, uri, [other, first])]
    assert titles == ["Show who changed this file"]


async def test_two_memories_citing_the_same_line_are_both_in_its_hover(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    first, uri = await cited(server, state)
    second = memory.add(state.store, "RETRY_LIMIT is read at start", file="limits.py", line=2)
    state.extras.pop("drift.citations", None)
    edit(server, uri, span(1, 0, 2, 0), "RETRY_LIMIT = 5\n")
    text = hover_text(server, uri, 1)
    assert text is not None
    assert f"**engram**: {first}" in text and f"**engram**: {second['id']}" in text


async def test_the_report_since_a_snapshot_names_what_moved_since_that_one(
    server: EngramServer, state: FolderState, seen: Client
) -> None:
    from tests.conftest import git

    root = state.root
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    on_main = await run(server, "engram.snapshot.capture")
    git(root, "checkout", "-q", "-b", "feature")
    await run(server, "engram.snapshot.capture")  # the latest: on the branch as it is now
    since_main = await run(server, "engram.drift", {"snapshot": on_main["id"]})
    assert any(item["kind"] == "workspace" for item in since_main["drift"])
    since_latest = await run(server, "engram.drift")
    assert not any(item["kind"] == "workspace" for item in since_latest["drift"])
