"""The `engram.gotcha.*` and `engram.error.track` commands, hovers and in-code annotations,
run in this process through the command table the server answers `workspace/executeCommand`
from (test_gotchas.py drives the same commands over stdio)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import from_fs_path

from lsp_server.features import gotchas as lsp_gotchas
from lsp_server.server import EngramServer, FolderState
from memory_core import gotchas
from memory_core.gotchas import team
from memory_core.gotchas.records import Gotcha
from memory_core.gotchas.scan import Hit


def _open(server: EngramServer, state: FolderState, rel: str, source: str) -> str:
    path = state.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    uri = from_fs_path(str(path))
    assert uri is not None
    server.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=source)
    )
    return uri


async def run(server: EngramServer, name: str, args: Any) -> Any:
    return await server.protocol.fm.commands[name](args)


def _range(sl: int, sc: int, el: int, ec: int) -> dict[str, Any]:
    return {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}


def _diagnostics(server: EngramServer, state: FolderState, uri: str) -> list[types.Diagnostic]:
    return lsp_gotchas.diagnostics(server, state, server.workspace.get_text_document(uri))


async def test_a_gotcha_from_a_selection_after_an_emoji_takes_exactly_the_selected_text(
    server: EngramServer, state: FolderState
) -> None:
    uri = _open(server, state, "src/app.py", 'label = "🚀"; legacy_call(x)\n')
    # 'legacy_call' spans UTF-16 columns 14..25 (the rocket takes two units, one character).
    result = await run(server, "engram.gotcha.add", {"uri": uri, "range": _range(0, 14, 0, 25)})
    gotcha = result["gotcha"]
    assert (gotcha["title"], gotcha["code_pattern"], gotcha["pattern_kind"]) == (
        "Careful with `legacy_call`",
        "legacy_call",
        "literal",
    )
    assert gotcha["related_files"] == ["*.py"]
    assert gotcha["status"] == "confirmed" and gotcha["severity"] == "medium"
    [diagnostic] = _diagnostics(server, state, uri)
    assert (diagnostic.range.start.character, diagnostic.range.end.character) == (14, 25)
    assert diagnostic.code == result["id"]


async def test_a_selection_over_several_lines_takes_the_rest_of_the_first_line(
    server: EngramServer, state: FolderState
) -> None:
    uri = _open(server, state, "notes.md", "intro\n   \n  retry_forever()  \nend\n")
    result = await run(
        server,
        "engram.gotcha.add",
        {"uri": uri, "range": _range(1, 0, 3, 0), "title": "No endless retries"},
    )
    assert result["gotcha"]["code_pattern"] == "retry_forever()"
    assert result["gotcha"]["title"] == "No endless retries"
    assert result["gotcha"]["related_files"] == ["*.md"]
    long_uri = _open(server, state, "x.py", "a" * 80 + "\n")
    titled = await run(server, "engram.gotcha.add", {"uri": long_uri, "range": _range(0, 0, 0, 80)})
    assert titled["gotcha"]["title"] == "Careful with `" + "a" * 59 + "…`"


@pytest.mark.parametrize(
    ("args", "with_uri", "message"),
    [
        ({"range": _range(0, 0, 0, 1)}, False, "a selection needs `uri` and `range`"),
        ({"range": "line 1"}, True, "`range` must be an object"),
        ({"range": {"start": 3}}, True, "`range` is not an LSP range"),
        ({"range": _range(9, 0, 9, 1)}, True, "the selection is outside the document"),
        # The document has three lines (the last one empty): line 3 is the first past its end.
        ({"range": _range(3, 0, 3, 1)}, True, "the selection is outside the document"),
        ({"range": _range(1, 0, 1, 3)}, True, "the selection is empty"),
        ({}, False, "engram.gotcha.add needs a `title`"),
        ({"title": "   "}, False, "engram.gotcha.add needs a `title`"),
    ],
)
async def test_a_bad_add_is_a_clear_error_and_adds_nothing(
    server: EngramServer, state: FolderState, args: dict[str, Any], with_uri: bool, message: str
) -> None:
    uri = _open(server, state, "a.py", "x = 1\n   \n")
    payload = {**args, **({"uri": uri} if with_uri else {})}
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await run(server, "engram.gotcha.add", payload)
    assert message in str(raised.value)
    assert gotchas.list_gotchas(state.store) == []


async def test_a_selection_of_blank_lines_takes_nothing_from_the_lines_after_it(
    server: EngramServer, state: FolderState
) -> None:
    uri = _open(server, state, "a.py", "   \n\nretry_forever()\n")
    with pytest.raises(JsonRpcInvalidParams, match="the selection is empty"):
        await run(server, "engram.gotcha.add", {"uri": uri, "range": _range(0, 0, 1, 0)})
    assert gotchas.list_gotchas(state.store) == []


async def test_add_with_every_field_and_a_regex(server: EngramServer, state: FolderState) -> None:
    result = await run(
        server,
        "engram.gotcha.add",
        {
            "title": "Naive datetimes",
            "description": "utcnow is naive",
            "workaround": "datetime.now(UTC)",
            "category": "runtime",
            "severity": "high",
            "files": ["src/*.py"],
            "pattern": r"utcnow\(\)",
            "error_pattern": "can't compare offset-naive",
        },
    )
    gotcha = gotchas.get(state.store, result["id"])
    assert (gotcha.description, gotcha.workaround, gotcha.category, gotcha.severity) == (
        "utcnow is naive",
        "datetime.now(UTC)",
        "runtime",
        "high",
    )
    assert gotcha.related_files == ["src/*.py"]
    assert (gotcha.code_pattern, gotcha.pattern_kind) == (r"utcnow\(\)", "regex")
    assert gotcha.error_pattern == "can't compare offset-naive"
    literal = await run(
        server, "engram.gotcha.add", {"title": "dots", "pattern": "a.b", "literal": True}
    )
    assert literal["gotcha"]["pattern_kind"] == "literal"
    named = await run(
        server, "engram.gotcha.add", {"title": "dots", "pattern": "a.c", "pattern_kind": "literal"}
    )
    assert named["gotcha"]["pattern_kind"] == "literal"
    # The new gotcha shows at once in an open document.
    uri = _open(server, state, "src/t.py", "t = datetime.utcnow()\n")
    assert [d.code for d in _diagnostics(server, state, uri)] == [result["id"]]


async def test_resolve_confirm_snooze_and_promote_change_what_the_editor_shows(
    server: EngramServer, state: FolderState
) -> None:
    for _ in range(3):
        learned = gotchas.track_error(state.store, "TimeoutError: the pool is exhausted")
    gotcha_id = learned.gotcha_id
    gotchas.update(state.store, gotcha_id, code_pattern="pool.get(", pattern_kind="literal")
    lsp_gotchas.folder_of(state).rebuild()
    uri = _open(server, state, "db.py", "c = pool.get()\n")
    assert [d.data["status"] for d in _diagnostics(server, state, uri)] == ["candidate"]

    confirmed = await run(server, "engram.gotcha.confirm", {"id": gotcha_id})
    assert confirmed == {"id": gotcha_id, "gotcha": gotchas.get(state.store, gotcha_id).to_dict()}
    assert [d.data["status"] for d in _diagnostics(server, state, uri)] == ["confirmed"]

    with pytest.raises(JsonRpcInvalidParams, match="`days` must be a number"):
        await run(server, "engram.gotcha.snooze", {"id": gotcha_id, "days": "soon"})
    with pytest.raises(JsonRpcInvalidParams, match="`days` must be a number"):
        await run(server, "engram.gotcha.snooze", {"id": gotcha_id, "days": True})
    snoozed = await run(server, "engram.gotcha.snooze", {"id": gotcha_id})
    assert snoozed["gotcha"]["snoozed_until"] is not None
    # `days: null` is `days` left out (as for every command's arguments): the default week,
    # not an error nor no time at all.
    a_day = await run(server, "engram.gotcha.snooze", {"id": gotcha_id, "days": 1})
    week = await run(server, "engram.gotcha.snooze", {"id": gotcha_id, "days": None})
    assert week["gotcha"]["snoozed_until"] > a_day["gotcha"]["snoozed_until"]
    assert _diagnostics(server, state, uri) == []

    promoted = await run(server, "engram.gotcha.promote", {"id": gotcha_id})
    assert promoted["team_file"] == str(team.team_path(state.root))
    assert gotcha_id in team.team_path(state.root).read_text()

    resolved = await run(server, "engram.gotcha.resolve", {"id": gotcha_id})
    assert resolved["gotcha"]["status"] == "resolved"
    with pytest.raises(JsonRpcInvalidParams, match="needs the gotcha `id`"):
        await run(server, "engram.gotcha.resolve", {"id": ""})


async def test_list_show_and_context(server: EngramServer, state: FolderState) -> None:
    kept = gotchas.add(state.store, "Migrations need a lock", error_pattern="database is locked")
    gone = gotchas.add(state.store, "Old flake")
    gotchas.resolve(state.store, gone.id)
    listed = await run(server, "engram.gotcha.list", {})
    assert [g["id"] for g in listed["gotchas"]] == [kept.id]
    everything = await run(server, "engram.gotcha.list", {"all": True})
    assert {g["id"] for g in everything["gotchas"]} == {kept.id, gone.id}
    shown = await run(server, "engram.gotcha.show", {"id": kept.id})
    assert shown["title"] == "Migrations need a lock"
    context = await run(
        server, "engram.gotcha.context", {"task": "the migrations fail: database is locked"}
    )
    assert [g["id"] for g in context["gotchas"]] == [kept.id]
    assert context["gotchas"][0]["score"] > 0
    assert "Migrations need a lock" in context["markdown"]
    limited = await run(server, "engram.gotcha.context", {"task": "migrations", "limit": 1})
    assert len(limited["gotchas"]) <= 1


async def test_show_all_writes_the_exports_and_tells_the_user_where(
    server: EngramServer, state: FolderState, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []
    monkeypatch.setattr(server, "show_message", lambda text, *a, **k: said.append(text))
    server.protocol.client_capabilities = types.ClientCapabilities()
    gotchas.add(state.store, "One open gotcha")
    result = await run(server, "engram.gotcha.showAll", {})
    md = state.root / ".engram" / "exports" / "gotchas.md"
    assert result["uri"] == from_fs_path(str(md)) and result["shown"] is False
    assert "One open gotcha" in md.read_text()
    assert said == [f"engram: 1 open gotchas; see {md}"]


async def test_error_track_learns_a_gotcha_on_the_third_occurrence(
    server: EngramServer, state: FolderState
) -> None:
    (state.root / "src").mkdir()
    (state.root / "src" / "m.py").write_text("import os\nos.environ['TOKEN']\n")
    file_uri = from_fs_path(str(state.root / "src" / "m.py"))
    results = [
        await run(
            server,
            "engram.error.track",
            {
                "message": "KeyError: 'TOKEN'",
                "file": file_uri,
                "line": 2,
                "command": "python m.py",
                "at": f"2026-11-01T1{n}:00:00Z",
            },
        )
        for n in range(3)
    ]
    assert [r["occurrences"] for r in results] == [1, 2, 3]
    assert [r["created"] for r in results] == [False, False, True]
    learned = gotchas.get(state.store, results[2]["gotcha_id"])
    assert learned.samples[-1]["file"] == "src/m.py" and learned.samples[-1]["line"] == 2
    assert learned.samples[-1]["command"] == "python m.py"
    assert learned.samples[-1]["tool"] == "editor"
    assert learned.samples[0]["ts"].startswith("2026-11-01T10:00:00")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "needs the error `message`"),
        ({"message": "  "}, "needs the error `message`"),
        ({"message": "boom", "line": "3"}, "`line` must be a whole number"),
        ({"message": "boom", "line": True}, "`line` must be a whole number"),
        ({"message": "boom", "at": "yesterday"}, "`at` must be an ISO-8601 time"),
    ],
)
async def test_a_bad_error_track_is_a_clear_error(
    server: EngramServer, state: FolderState, args: dict[str, Any], message: str
) -> None:
    with pytest.raises(JsonRpcInvalidParams, match=message):
        await run(server, "engram.error.track", args)
    assert state.store.query_one("SELECT COUNT(*) FROM error_occurrences")[0] == 0  # type: ignore[index]


def test_the_hover_tells_the_whole_story_of_a_gotcha() -> None:
    gotcha = Gotcha(
        id="G-0000abcd",
        title="Pool exhausted",
        description="Connections leak when a request fails.",
        category="runtime",
        severity="high",
        workaround="release in finally",
        status="candidate",
        occurrences=4,
        first_seen=1_800_000_000.0,
        last_seen=1_800_003_600.0,
        source_type="auto_detected",
        provenance={
            "command": "pytest",
            "tool": "Bash",
            "session_id": "S1",
            "file": "db/pool.py",
            "line": 7,
        },
        related_files=["db/*.py", "tests/db/*.py"],
        code_pattern="pool.get(",
        pattern_kind="literal",
    )
    text = lsp_gotchas.hover_markdown(gotcha)
    assert text.splitlines()[:3] == [
        "engram gotcha `G-0000abcd` · severity **high** · category **runtime** · candidate (learned, not yet confirmed)",
        "",
        "Learned from 4 repeated errors: confirm it (quick fix) if it is real.",
    ]
    assert "\n\nConnections leak when a request fails.\n" in text
    assert "\n\n**Workaround:** release in finally\n" in text
    assert "occurrences: 4 · first seen 2027-01-15T08:00:00" in text
    assert " · last seen 2027-01-15T09:00:00" in text
    assert text.splitlines()[-1] == (
        "source: auto_detected · command: `pytest` · tool: `Bash` · session_id: `S1` · "
        "file: `db/pool.py` · line: `7` · files: `db/*.py`, `tests/db/*.py` · "
        "pattern (literal): `pool.get(`"
    )
    anchored = Hit(0, 0, 4, "G-0000abcd", "anchor", stale=True)
    stale_text = lsp_gotchas.hover_markdown(gotcha, anchored)
    assert stale_text.startswith(text + "\n\n")
    assert stale_text.endswith("⚠ **The code changed since this was recorded.**")
    fresh = Hit(0, 0, 4, "G-0000abcd", "anchor", stale=False)
    assert lsp_gotchas.hover_markdown(gotcha, fresh).endswith(
        "The cited code is unchanged since it was recorded."
    )
    done = Gotcha(id="G-2", title="T", status="resolved")
    assert lsp_gotchas.hover_markdown(done).splitlines()[0].endswith("· resolved")
    plain = Gotcha(id="G-1", title="T", description="T", status="confirmed")
    # A description equal to the title is not repeated; facts that are unknown are left out.
    assert lsp_gotchas.hover_markdown(plain) == (
        "engram gotcha `G-1` · severity **medium** · category **general** · confirmed"
        "\n\nsource: manual"
    )


async def test_a_gotcha_comment_becomes_a_gotcha_when_the_file_is_opened_and_saved(
    server: EngramServer, state: FolderState
) -> None:
    sync = next(
        listener
        for listener in server.document_listeners
        if isinstance(listener, lsp_gotchas.AnnotationSync)
    )
    uri = _open(server, state, "svc.py", "x = 1\n# gotcha: the cache is per process\n")
    document = server.workspace.get_text_document(uri)
    sync.did_open(server, state, document)
    await asyncio.gather(*sync.pending)
    [annotation] = gotchas.list_gotchas(state.store)
    assert annotation.title == "the cache is per process"
    assert annotation.source_type == "annotation"
    [diagnostic] = _diagnostics(server, state, uri)
    assert diagnostic.range.start.line == 1
    # Removing the comment and saving removes the gotcha.
    server.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="python", version=2, text="x = 1\n")
    )
    sync.did_save(server, state, server.workspace.get_text_document(uri))
    await asyncio.gather(*sync.pending)
    assert gotchas.list_gotchas(state.store) == []
    sync.did_close(server, state, uri)
    assert uri not in lsp_gotchas.folder_of(state).scans
    # Comments inside the store's own files are never gotchas.
    store_uri = _open(server, state, ".engram/exports/notes.py", "# gotcha: not mine\n")
    sync.did_open(server, state, server.workspace.get_text_document(store_uri))
    await asyncio.gather(*sync.pending)
    assert gotchas.list_gotchas(state.store) == []


async def test_a_gotcha_added_by_another_process_shows_after_the_index_notices(
    server: EngramServer, state: FolderState
) -> None:
    uri = _open(server, state, "a.py", "eval(code)\n")
    folder = lsp_gotchas.folder_of(state)
    assert _diagnostics(server, state, uri) == [] and not folder.stale()
    gotchas.add(state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    assert folder.stale()
    await lsp_gotchas.refresh(server, state)
    assert not folder.stale()
    assert [d.message for d in _diagnostics(server, state, uri)] == ["eval is unsafe"]


def test_a_broken_team_file_is_marked_where_it_breaks(
    server: EngramServer, state: FolderState
) -> None:
    team_file = team.team_path(state.root)
    team_file.parent.mkdir(parents=True, exist_ok=True)
    source = '[[gotcha]]\ntitle = "ok"\n\n[[gotcha]]\ntitle = \n'
    team_file.write_text(source)
    uri = from_fs_path(str(team_file))
    assert uri is not None
    server.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="toml", version=1, text=source)
    )
    found = lsp_gotchas.diagnostics(server, state, server.workspace.get_text_document(uri))
    assert found and all(d.code == "team-gotchas" and d.source == "engram" for d in found)
    assert all(d.range.start.character == 0 and d.range.end.character == 0 for d in found)
    assert all(d.severity == types.DiagnosticSeverity.Error for d in found)
    assert all(d.range.end.line == d.range.start.line + 1 for d in found)


async def test_a_candidates_quick_fixes_put_confirm_first_and_snooze_for_a_week(
    server: EngramServer, state: FolderState
) -> None:
    for _ in range(3):
        learned = gotchas.track_error(state.store, "TimeoutError: the pool is exhausted")
    gotchas.update(state.store, learned.gotcha_id, code_pattern="pool.get(", pattern_kind="literal")
    lsp_gotchas.folder_of(state).rebuild()
    uri = _open(server, state, "db.py", "c = pool.get()\n")
    [diagnostic] = _diagnostics(server, state, uri)
    document = server.workspace.get_text_document(uri)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic]),
    )
    actions = lsp_gotchas.code_actions(server, state, document, params)
    assert actions[0].title.startswith("Confirm gotcha") and actions[0].is_preferred is True
    assert all(a.is_preferred is None for a in actions[1:])
    [snooze] = [a for a in actions if a.command and a.command.command == "engram.gotcha.snooze"]
    assert snooze.command is not None
    assert snooze.command.arguments == [{"id": learned.gotcha_id, "uri": uri, "days": 7}]


def test_an_unknown_severity_is_shown_as_information() -> None:
    odd = Gotcha(id="G-2", title="t", severity="catastrophic", status="confirmed")
    assert lsp_gotchas.diagnostic_severity(odd) == types.DiagnosticSeverity.Information


async def test_add_gotcha_from_selection_adds_exactly_the_selected_text(
    server: EngramServer, state: FolderState
) -> None:
    uri = _open(server, state, "svc.py", "resp = session.get(url)\n")
    document = server.workspace.get_text_document(uri)
    # The user selects `session.get` (columns 7..18) and picks the source action.
    selected = types.Range(
        start=types.Position(line=0, character=7), end=types.Position(line=0, character=18)
    )
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=selected,
        context=types.CodeActionContext(diagnostics=[]),
    )
    [action] = lsp_gotchas.code_actions(server, state, document, params)
    assert action.title == "Add gotcha from selection"
    assert action.command is not None and action.command.title == "Add gotcha from selection"
    assert action.kind == types.CodeActionKind.Source
    assert action.command is not None and action.command.arguments is not None
    # The editor runs the action's command with exactly the arguments it carries.
    result = await run(server, action.command.command, action.command.arguments[0])
    assert result["gotcha"]["code_pattern"] == "session.get"
    assert result["gotcha"]["title"] == "Careful with `session.get`"
    # A cursor without a selection offers nothing to add.
    params.range = types.Range(start=selected.start, end=selected.start)
    assert lsp_gotchas.code_actions(server, state, document, params) == []


TEAM_GOTCHA = (
    "[[gotchas]]\n"
    'id = "G-0000abcd"\n'
    'title = "Never call os.system"\n'
    'severity = "high"\n'
    'pattern = "os.system("\n'
    'pattern_kind = "literal"\n'
)


async def test_an_edited_team_file_is_noticed_and_its_gotchas_shown(
    server: EngramServer, state: FolderState
) -> None:
    uri = _open(server, state, "run.py", "import os\nos.system('ls')\n")
    folder = lsp_gotchas.folder_of(state)
    assert _diagnostics(server, state, uri) == [] and not folder.stale()
    # A `git pull` brings the team's file: nothing in the store changed, only the file.
    team_file = team.team_path(state.root)
    team_file.parent.mkdir(parents=True, exist_ok=True)
    team_file.write_text(TEAM_GOTCHA, encoding="utf-8")
    assert folder.stale()
    await lsp_gotchas.refresh(server, state)
    assert not folder.stale()
    [shown] = _diagnostics(server, state, uri)
    assert (shown.code, shown.message) == ("G-0000abcd", "Never call os.system")
    # A team gotcha is the team's already: no quick fix promotes it.
    titles = [
        a.title
        for a in lsp_gotchas.code_actions(
            server,
            state,
            server.workspace.get_text_document(uri),
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=shown.range,
                context=types.CodeActionContext(diagnostics=[shown]),
            ),
        )
    ]
    assert titles and not any(t.startswith("Promote") for t in titles)
    # Edited again (same store revision): noticed again.
    team_file.write_text(TEAM_GOTCHA.replace('"high"', '"critical"'), encoding="utf-8")
    assert folder.stale()
    await lsp_gotchas.refresh(server, state)
    [louder] = _diagnostics(server, state, uri)
    assert louder.severity == types.DiagnosticSeverity.Error


def test_a_pattern_too_slow_for_a_file_is_reported_at_the_top_of_it(
    server: EngramServer, state: FolderState
) -> None:
    # Catastrophic on runs of 'x', which the write-time probes do not try: only the scan-time
    # budget stops it, and the user is told which gotcha to fix.
    slow = gotchas.add(state.store, "x runs", pattern=r"(x|xx)+\d", pattern_kind="regex")
    state.settings.values["gotchas.regex_timeout_ms"] = 30
    lsp_gotchas.folder_of(state).rebuild()
    uri = _open(server, state, "big.txt", ("x" * 40 + " y\n") * 50)
    found = _diagnostics(server, state, uri)
    [warning] = [d for d in found if d.code == "slow-pattern"]
    assert warning.source == "engram"
    assert warning.severity == types.DiagnosticSeverity.Warning
    span = warning.range
    assert (span.start.line, span.start.character, span.end.line, span.end.character) == (
        0,
        0,
        0,
        0,
    )
    assert slow.id in warning.message and "took longer than 30 ms" in warning.message
    assert "gotchas.regex_timeout_ms" in warning.message


async def test_a_folder_whose_gotchas_cannot_load_is_named_in_the_log(
    server: EngramServer, state: FolderState, caplog: pytest.LogCaptureFixture
) -> None:
    folder = lsp_gotchas.folder_of(state)
    folder.index = None
    state.store.close()  # every read of the store now fails
    with caplog.at_level("ERROR", logger="engram.lsp"):
        assert folder.index_or_build(server) is None
        assert folder.building is not None
        await folder.building
    assert folder.building is None  # the next document may try again
    assert f"cannot load the gotchas of {state.root}" in caplog.messages


async def test_a_failed_refresh_is_named_in_the_log_and_the_watch_goes_on(
    server: EngramServer, state: FolderState, caplog: pytest.LogCaptureFixture
) -> None:
    _open(server, state, "a.py", "x = 1\n")
    state.store.close()  # the staleness check reads the store's revision: it now fails
    with caplog.at_level("ERROR", logger="engram.lsp"):
        watch = asyncio.ensure_future(lsp_gotchas._watch(server))
        deadline = asyncio.get_running_loop().time() + 10
        while not caplog.messages:
            assert asyncio.get_running_loop().time() < deadline, "nothing was logged"
            await asyncio.sleep(0.05)
        assert not watch.done()  # one folder failing does not stop the watch
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
    assert caplog.messages[0] == f"cannot refresh the gotchas of {state.root}"


async def test_annotations_that_cannot_be_synced_are_named_in_the_log(
    server: EngramServer, state: FolderState, caplog: pytest.LogCaptureFixture
) -> None:
    uri = _open(server, state, "src/db.py", "# gotcha: the pool leaks on retry\nx = 1\n")
    sync = lsp_gotchas.AnnotationSync()
    state.store.close()
    with caplog.at_level("ERROR", logger="engram.lsp"):
        sync.did_save(server, state, server.workspace.get_text_document(uri))
        await asyncio.gather(*sync.pending)
    assert caplog.messages == ["cannot sync the gotcha annotations of src/db.py"]


def _refreshes(server: EngramServer) -> list[int]:
    """Counts the server's requests to refresh every open document's diagnostics."""
    calls: list[int] = []
    server.refresh_diagnostics = lambda: calls.append(1)
    return calls


def _quick_fixes(
    server: EngramServer, state: FolderState, uri: str, diagnostics: list[types.Diagnostic]
) -> list[types.CodeAction]:
    document = server.workspace.get_text_document(uri)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=diagnostics),
    )
    return lsp_gotchas.code_actions(server, state, document, params)


def test_quick_fixes_for_every_engram_squiggle_under_the_cursor_and_none_for_others(
    server: EngramServer, state: FolderState
) -> None:
    fifty = "Never call eval on anything a user typed, ever!!!!"
    assert len(fifty) == 50
    eval_gotcha = gotchas.add(state.store, fifty, pattern="eval(", pattern_kind="literal")
    longer = "Input from the network must be validated before use"
    input_gotcha = gotchas.add(state.store, longer, pattern="input(", pattern_kind="literal")
    lsp_gotchas.folder_of(state).rebuild()
    uri = _open(server, state, "a.py", "eval(input())\neval(y)\n")
    ours = _diagnostics(server, state, uri)
    by_id = {d.code: d for d in ours if d.range.start.line == 0}
    second_eval = next(d for d in ours if d.range.start.line == 1)
    foreign = types.Diagnostic(
        range=second_eval.range, message="undefined name 'y'", source="pyflakes", code="F821"
    )
    # Another tool's diagnostic first, the same gotcha twice, then another gotcha.
    actions = _quick_fixes(
        server, state, uri, [foreign, by_id[eval_gotcha.id], second_eval, by_id[input_gotcha.id]]
    )
    titles = [a.title for a in actions]
    assert titles == [
        f"Resolve gotcha for the whole project: {fifty}",
        "Snooze gotcha for 7 days",
        "Promote gotcha to team (team/gotchas.toml)",
        "Show all gotchas",
        f"Resolve gotcha for the whole project: {longer[:49]}…",
        "Snooze gotcha for 7 days",
        "Promote gotcha to team (team/gotchas.toml)",
        "Show all gotchas",
    ]
    assert all(a.kind == types.CodeActionKind.QuickFix for a in actions)
    assert all(a.command is not None and a.command.title == a.title for a in actions)
    assert [a.command.command for a in actions[:4] if a.command is not None] == [
        "engram.gotcha.resolve",
        "engram.gotcha.snooze",
        "engram.gotcha.promote",
        "engram.gotcha.showAll",
    ]


async def test_team_and_comment_gotchas_are_not_offered_for_promotion(
    server: EngramServer, state: FolderState
) -> None:
    team_file = team.team_path(state.root)
    team_file.parent.mkdir(parents=True, exist_ok=True)
    team_file.write_text(TEAM_GOTCHA, encoding="utf-8")
    lsp_gotchas.folder_of(state).rebuild()
    uri = _open(server, state, "run.py", "os.system('ls')\n")
    [diagnostic] = _diagnostics(server, state, uri)
    titles = [a.title for a in _quick_fixes(server, state, uri, [diagnostic])]
    assert titles == [
        "Resolve gotcha for the whole project: Never call os.system",
        "Snooze gotcha for 7 days",
        "Show all gotchas",
    ]
    # A `gotcha:` comment lives in the code already: nothing to promote either.
    comment_uri = _open(server, state, "svc.py", "# gotcha: retries double-charge the card\n")
    sync = lsp_gotchas.AnnotationSync()
    sync.did_save(server, state, server.workspace.get_text_document(comment_uri))
    await asyncio.gather(*sync.pending)
    lsp_gotchas.folder_of(state).rebuild()
    [comment] = _diagnostics(server, state, comment_uri)
    titles = [a.title for a in _quick_fixes(server, state, comment_uri, [comment])]
    assert titles == [
        "Resolve gotcha for the whole project: retries double-charge the card",
        "Snooze gotcha for 7 days",
        "Show all gotchas",
    ]


async def test_saving_a_new_gotcha_comment_refreshes_the_open_documents(
    server: EngramServer, state: FolderState
) -> None:
    calls = _refreshes(server)
    folder = lsp_gotchas.folder_of(state)
    uri = _open(server, state, "svc.py", "x = 1\n# gotcha: retries double-charge the card\n")
    sync = lsp_gotchas.AnnotationSync()
    sync.did_save(server, state, server.workspace.get_text_document(uri))
    await asyncio.gather(*sync.pending)
    [annotation] = gotchas.list_gotchas(state.store)
    # The index knows the new gotcha and every open document was asked to refresh.
    assert folder.index is not None and folder.index.get(annotation.id) is not None
    assert not folder.stale()
    assert calls == [1]


async def test_a_gotcha_added_elsewhere_reaches_open_documents_through_the_watch(
    server: EngramServer, state: FolderState
) -> None:
    calls = _refreshes(server)
    uri = _open(server, state, "a.py", "eval(code)\n")
    folder = lsp_gotchas.folder_of(state)
    watch = asyncio.ensure_future(lsp_gotchas._watch(server))
    try:
        added = gotchas.add(state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
        deadline = asyncio.get_running_loop().time() + 10
        while not calls:
            assert asyncio.get_running_loop().time() < deadline, "the watch never refreshed"
            await asyncio.sleep(0.05)
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
    assert not folder.stale()
    assert [d.code for d in _diagnostics(server, state, uri)] == [added.id]


async def test_the_first_index_is_built_off_the_event_loop_then_documents_refresh(
    server: EngramServer, state: FolderState
) -> None:
    calls = _refreshes(server)
    gotchas.add(state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    folder = lsp_gotchas.folder_of(state)
    folder.index = None
    uri = _open(server, state, "a.py", "eval(code)\n")
    # While it is being built the document has no gotcha squiggles yet (typing never waits).
    assert _diagnostics(server, state, uri) == []
    assert folder.building is not None
    await folder.building
    assert calls == [1]
    assert [d.message for d in _diagnostics(server, state, uri)] == ["eval is unsafe"]


async def test_the_server_registers_the_gotcha_providers_and_starts_the_watch(
    server: EngramServer, state: FolderState
) -> None:
    assert lsp_gotchas.diagnostics in server.diagnostic_providers
    assert lsp_gotchas.hover in server.hover_providers
    assert lsp_gotchas.code_actions in server.code_action_providers
    calls = _refreshes(server)
    _open(server, state, "a.py", "x = 1\n")
    [start_watch] = [
        listener
        for listener in server.initialized_listeners
        if listener.__module__ == lsp_gotchas.__name__
    ]
    await start_watch(server)
    watch = server.extras_gotcha_watch  # type: ignore[attr-defined]
    try:
        assert isinstance(watch, asyncio.Future) and not watch.done()
        assert calls  # a document opened during `initialized` gets its gotchas now
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
