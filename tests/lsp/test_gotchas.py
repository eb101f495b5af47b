"""Gotchas in a real client (VS Code's and Neovim's capabilities): diagnostics, hover, code actions,
commands, and changes made by another process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Union

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.conftest import run_cli
from tests.lsp.conftest import diagnostics_for, execute, open_document

SOURCE = "import json\n\n\ndef load(path):\n    return json.loads(open(path).read())['items']\n"


def ours(diagnostics: list[types.Diagnostic], code: str | None = None) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.source == "engram" and (code is None or d.code == code)]


async def wait_diagnostics(
    client: LanguageClient, uri: str, predicate: Any, timeout: float = 10.0
) -> list[types.Diagnostic]:
    """Ask again (pull) or look again (push) until `predicate(diagnostics)` holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await diagnostics_for(client, uri)
        if predicate(found):
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"diagnostics never satisfied the test; last: {found}")
        await asyncio.sleep(0.2)


async def hover_text(client: LanguageClient, uri: str, line: int, character: int) -> str:
    result = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
    )
    assert result is not None
    contents = result.contents
    assert isinstance(contents, types.MarkupContent)
    return contents.value


def parse_code_actions_like_an_editor(client: LanguageClient) -> None:
    """lsprotocol 2025 reads every code action that carries a `command` as a bare Command (its
    hook tests `"command" in obj`); editors look at the type of `command`. Do as editors do."""
    converter = client.protocol._converter

    def structure(obj: Any, _: type) -> Any:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], structure)  # noqa: UP007


async def quick_fixes(
    client: LanguageClient, uri: str, diagnostic: types.Diagnostic
) -> list[types.CodeAction]:
    parse_code_actions_like_an_editor(client)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    return [a for a in actions or [] if isinstance(a, types.CodeAction)]


async def run_action(client: LanguageClient, action: types.CodeAction) -> Any:
    assert action.command is not None
    return await execute(client, action.command.command, action.command.arguments[0])


async def pattern_gotcha(client: LanguageClient, **extra: Any) -> dict[str, Any]:
    args = {
        "title": "json.loads on a whole file",
        "pattern": "json.loads(",
        "pattern_kind": "literal",
        "severity": "high",
        "category": "runtime",
        "description": "Reads the whole file into memory first.",
        "workaround": "Use json.load(fh) on the open file.",
        **extra,
    }
    return (await execute(client, "engram.gotcha.add", args))["gotcha"]


async def test_a_pattern_gotcha_is_a_diagnostic_at_the_exact_range(client: LanguageClient) -> None:
    gotcha = await pattern_gotcha(client)
    path = client.folder / "app.py"
    path.write_text(SOURCE)
    uri = open_document(client, path)
    found = await wait_diagnostics(client, uri, lambda ds: ours(ds, gotcha["id"]))
    [diagnostic] = ours(found, gotcha["id"])
    assert diagnostic.range == types.Range(
        start=types.Position(line=4, character=11), end=types.Position(line=4, character=22)
    )
    assert diagnostic.severity == types.DiagnosticSeverity.Warning  # high
    assert diagnostic.code == gotcha["id"] and gotcha["id"].startswith("G-")
    # The short title; the workaround is the hover's (said once, not twice).
    assert diagnostic.message == "json.loads on a whole file"


async def test_severity_maps_critical_to_error_and_low_to_hint(client: LanguageClient) -> None:
    critical = await execute(
        client,
        "engram.gotcha.add",
        {"title": "eval", "pattern": "eval(", "pattern_kind": "literal", "severity": "critical"},
    )
    low = await execute(
        client, "engram.gotcha.add", {"title": "print", "pattern": r"print\(", "severity": "low"}
    )
    medium = await execute(
        client,
        "engram.gotcha.add",
        {"title": "sleep", "pattern": r"time\.sleep", "severity": "medium"},
    )
    path = client.folder / "m.py"
    path.write_text("eval(x)\nprint(1)\ntime.sleep(2)\n")
    uri = open_document(client, path)
    found = await wait_diagnostics(client, uri, lambda ds: len(ours(ds)) == 3)
    by_code = {d.code: d for d in ours(found)}
    assert by_code[critical["id"]].severity == types.DiagnosticSeverity.Error
    assert by_code[low["id"]].severity == types.DiagnosticSeverity.Hint
    assert by_code[medium["id"]].severity == types.DiagnosticSeverity.Information
    assert by_code[low["id"]].range.start == types.Position(line=1, character=0)


async def test_hover_tells_the_whole_story(client: LanguageClient) -> None:
    gotcha = await pattern_gotcha(client)
    path = client.folder / "app.py"
    path.write_text(SOURCE)
    uri = open_document(client, path)
    await wait_diagnostics(client, uri, lambda ds: ours(ds, gotcha["id"]))
    text = await hover_text(client, uri, 4, 15)
    # The title is the diagnostic's message, shown above the hover: not repeated.
    assert "json.loads on a whole file" not in text
    for expected in (
        gotcha["id"],
        "severity **high**",
        "category **runtime**",
        "Reads the whole file into memory first.",
        "**Workaround:** Use json.load(fh) on the open file.",
        "source: manual",
    ):
        assert expected in text
    nothing = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=2),
        )
    )
    assert nothing is None


async def test_three_errors_make_one_candidate_shown_quietly_with_a_confirm_action(
    client: LanguageClient,
) -> None:
    path = client.folder / "app.py"
    path.write_text(SOURCE)
    uri = open_document(client, path)
    results = []
    for attempt, tmp in (
        (1, "/tmp/pytest-of-ci/pytest-4/a"),
        (27, "/var/tmp/x9"),
        (311, "/home/dev/.cache/y"),
    ):
        message = (
            "Traceback (most recent call last):\n"
            f'  File "{path}", line 5, in load\n'
            f"KeyError: 'items' (after {attempt} retries, cache {tmp}/state.json)"
        )
        results.append(await execute(client, "engram.error.track", {"message": message}))
    assert [r["created"] for r in results] == [False, False, True]
    gotcha_id = results[2]["gotcha_id"]
    listed = await execute(client, "engram.gotcha.list")
    assert [g["id"] for g in listed["gotchas"]] == [gotcha_id]
    assert listed["gotchas"][0]["status"] == "candidate"
    assert listed["gotchas"][0]["title"].startswith("KeyError: 'items'")

    found = await wait_diagnostics(client, uri, lambda ds: ours(ds, gotcha_id))
    [diagnostic] = ours(found, gotcha_id)
    assert diagnostic.range.start.line == 4  # the line the traceback pointed at
    assert diagnostic.severity == types.DiagnosticSeverity.Hint  # a medium candidate
    actions = await quick_fixes(client, uri, diagnostic)
    confirm = next(a for a in actions if a.title.startswith("Confirm gotcha"))
    assert confirm.is_preferred
    await run_action(client, confirm)
    found = await wait_diagnostics(
        client,
        uri,
        lambda ds: any(
            d.severity == types.DiagnosticSeverity.Information for d in ours(ds, gotcha_id)
        ),
    )
    shown = await execute(client, "engram.gotcha.show", {"id": gotcha_id})
    assert shown["status"] == "confirmed"
    text = await hover_text(client, uri, 4, 8)
    assert "occurrences: 3" in text and "first seen" in text and "last seen" in text
    assert "unchanged since it was recorded" in text


async def test_two_errors_make_no_gotcha(client: LanguageClient) -> None:
    for number in (1, 2):
        result = await execute(
            client,
            "engram.error.track",
            {"message": f"TypeError: x is not a function (call {number})"},
        )
        assert result["gotcha_id"] is None and result["occurrences"] == number
    assert (await execute(client, "engram.gotcha.list"))["gotchas"] == []


async def test_three_errors_spread_over_more_than_24_hours_make_no_gotcha(
    client: LanguageClient,
) -> None:
    times = ["2026-03-01T08:00:00Z", "2026-03-01T20:00:00Z", "2026-03-02T08:30:00Z"]  # 24.5 h apart
    results = [
        await execute(
            client,
            "engram.error.track",
            {"message": f"TypeError: x is not a function (run {i})", "at": at},
        )
        for i, at in enumerate(times)
    ]
    assert [r["gotcha_id"] for r in results] == [None, None, None]
    assert [r["occurrences"] for r in results] == [1, 2, 2]  # the first one left the window
    assert (await execute(client, "engram.gotcha.list"))["gotchas"] == []
    fourth = await execute(
        client,
        "engram.error.track",
        {"message": "TypeError: x is not a function (run 3)", "at": "2026-03-02T09:00:00Z"},
    )
    assert fourth["created"] and fourth["occurrences"] == 3
    with pytest.raises(JsonRpcException, match="ISO-8601"):
        await execute(client, "engram.error.track", {"message": "boom", "at": "yesterday"})


async def test_resolve_snooze_promote_and_show_all_do_what_they_say(client: LanguageClient) -> None:
    first = await pattern_gotcha(client)
    second = await pattern_gotcha(
        client, title="read() without a size", pattern=".read()", severity="medium"
    )
    path = client.folder / "app.py"
    path.write_text(SOURCE)
    uri = open_document(client, path)
    found = await wait_diagnostics(client, uri, lambda ds: len(ours(ds)) == 2)

    actions = await quick_fixes(client, uri, ours(found, first["id"])[0])
    titles = [a.title for a in actions]
    assert any(t.startswith("Resolve gotcha") for t in titles)
    assert "Snooze gotcha for 7 days" in titles
    assert "Promote gotcha to team (team/gotchas.toml)" in titles
    assert "Show all gotchas" in titles
    assert not any(t.startswith("Confirm") for t in titles)  # already confirmed

    promote = next(a for a in actions if a.title.startswith("Promote"))
    result = await run_action(client, promote)
    team_file = Path(result["team_file"])
    assert first["id"] in team_file.read_text()

    show_all = next(a for a in actions if a.title == "Show all gotchas")
    result = await run_action(client, show_all)
    assert result["uri"].endswith(".engram/exports/gotchas.md")
    assert {g["id"] for g in result["gotchas"]} == {first["id"], second["id"]}
    if result["shown"]:
        assert [d.uri for d in client.shown_documents] == [result["uri"]]

    resolve = next(a for a in actions if a.title.startswith("Resolve"))
    assert resolve.title == "Resolve gotcha for the whole project: json.loads on a whole file"
    await run_action(client, resolve)
    found = await wait_diagnostics(client, uri, lambda ds: not ours(ds, first["id"]))
    # The quick fix says what it did (the title alone does not undo a surprise).
    said = [m.message for m in client.messages if "resolved for the whole project" in m.message]
    assert said == [
        "engram: gotcha “json.loads on a whole file” resolved for the whole project; "
        "it comes back if its error happens again."
    ]
    assert ours(found, second["id"])

    actions = await quick_fixes(client, uri, ours(found, second["id"])[0])
    snooze = next(a for a in actions if a.title.startswith("Snooze"))
    snoozed = await run_action(client, snooze)
    assert snoozed["gotcha"]["snoozed_until"] is not None
    await wait_diagnostics(client, uri, lambda ds: not ours(ds))


async def test_add_gotcha_from_selection(client: LanguageClient) -> None:
    path = client.folder / "app.py"
    path.write_text(SOURCE)
    uri = open_document(client, path)
    selection = types.Range(
        start=types.Position(line=4, character=22), end=types.Position(line=4, character=32)
    )
    parse_code_actions_like_an_editor(client)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=selection,
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.Source]),
        )
    )
    [action] = [a for a in actions or [] if isinstance(a, types.CodeAction)]
    assert action.title == "Add gotcha from selection"
    result = await run_action(client, action)
    assert result["gotcha"]["code_pattern"] == "open(path)"
    assert result["gotcha"]["pattern_kind"] == "literal"
    assert result["gotcha"]["title"] == "Careful with `open(path)`"
    found = await wait_diagnostics(client, uri, lambda ds: ours(ds, result["id"]))
    assert ours(found, result["id"])[0].range == selection


async def test_diagnostics_change_after_a_gotcha_is_added_in_another_process(
    client: LanguageClient,
) -> None:
    path = client.folder / "app.py"
    path.write_text(SOURCE)
    uri = open_document(client, path)
    assert ours(await diagnostics_for(client, uri)) == []
    added = await asyncio.to_thread(
        run_cli,
        "gotcha",
        "add",
        "Never read() a whole file",
        "--pattern",
        r"\.read\(\)",
        "--severity",
        "critical",
        "--json",
        cwd=client.folder,
    )
    assert added.code == 0, added.stderr
    gotcha_id = added.json()["id"]
    found = await wait_diagnostics(client, uri, lambda ds: ours(ds, gotcha_id))
    assert ours(found, gotcha_id)[0].severity == types.DiagnosticSeverity.Error
    resolved = await asyncio.to_thread(run_cli, "gotcha", "resolve", gotcha_id, cwd=client.folder)
    assert resolved.code == 0, resolved.stderr
    await wait_diagnostics(client, uri, lambda ds: not ours(ds, gotcha_id))


async def test_edits_update_diagnostics_incrementally(client: LanguageClient) -> None:
    gotcha = await pattern_gotcha(client)
    path = client.folder / "app.py"
    path.write_text(SOURCE)
    uri = open_document(client, path)
    await wait_diagnostics(client, uri, lambda ds: ours(ds, gotcha["id"]))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=1, character=0),
                        end=types.Position(line=1, character=0),
                    ),
                    text="data = json.loads('{}')\n",
                )
            ],
        )
    )
    found = await wait_diagnostics(client, uri, lambda ds: len(ours(ds, gotcha["id"])) == 2)
    assert sorted(d.range.start.line for d in ours(found, gotcha["id"])) == [1, 5]


async def test_annotations_in_comments_are_gotchas(client: LanguageClient) -> None:
    path = client.folder / "db.sql"
    path.write_text("SELECT 1;\n-- GOTCHA: the orders table is sharded, never join it\n")
    uri = open_document(client, path, language="sql")
    found = await wait_diagnostics(client, uri, lambda ds: ours(ds))
    [diagnostic] = ours(found)
    assert diagnostic.range.start == types.Position(line=1, character=0)
    assert "the orders table is sharded" in diagnostic.message
    listed = await wait_for_listed(client, diagnostic.code)
    assert listed["source"]["type"] == "annotation"


async def test_a_resolved_annotation_leaves_the_editor(client: LanguageClient) -> None:
    path = client.folder / "cache.py"
    path.write_text("CACHE = {}  # gotcha: shared between threads, guard it with a lock\n")
    uri = open_document(client, path)
    found = await wait_diagnostics(client, uri, lambda ds: ours(ds))
    gotcha_id = ours(found)[0].code
    await wait_for_listed(client, gotcha_id)
    await execute(client, "engram.gotcha.resolve", {"id": gotcha_id})
    await wait_diagnostics(client, uri, lambda ds: not ours(ds))


async def wait_for_listed(client: LanguageClient, gotcha_id: Any) -> dict[str, Any]:
    async def listed() -> Any:
        return [
            g
            for g in (await execute(client, "engram.gotcha.list"))["gotchas"]
            if g["id"] == gotcha_id
        ]

    deadline = asyncio.get_running_loop().time() + 10
    while not (found := await listed()):
        assert asyncio.get_running_loop().time() < deadline, "annotation never reached the store"
        await asyncio.sleep(0.1)
    return found[0]


async def test_bad_input_is_a_clear_error_and_the_server_keeps_serving(
    client: LanguageClient,
) -> None:
    with pytest.raises(JsonRpcException, match="position 3"):
        await execute(client, "engram.gotcha.add", {"title": "bad", "pattern": "a(b"})
    with pytest.raises(JsonRpcException, match="pathological"):
        await execute(client, "engram.gotcha.add", {"title": "slow", "pattern": "(a|aa)+$"})
    with pytest.raises(JsonRpcException, match="needs the error `message`"):
        await execute(client, "engram.error.track", {})
    with pytest.raises(JsonRpcException, match="no gotcha"):
        await execute(client, "engram.gotcha.resolve", {"id": "G-00000000"})
    assert (await execute(client, "engram.gotcha.list"))["gotchas"] == []


async def test_an_invalid_team_entry_is_a_diagnostic_on_its_line(client: LanguageClient) -> None:
    team = client.folder / ".engram" / "team" / "gotchas.toml"
    team.parent.mkdir(parents=True, exist_ok=True)
    team.write_text(
        "# reviewed by the team\n"
        "[[gotchas]]\n"
        'id = "G-0000abcd"\n'
        'title = "Never call os.system"\n'
        'severity = "high"\n'
        'pattern = "os.system("\n'
        'pattern_kind = "literal"\n'
        "\n"
        "[[gotchas]]\n"
        'id = "G-0000beef"\n'
        'title = "bad severity"\n'
        'severity = "urgent"\n'
    )
    uri = open_document(client, team, language="toml")
    found = await wait_diagnostics(client, uri, lambda ds: ours(ds))
    [problem] = ours(found)
    assert problem.range.start.line == 8
    assert "severity" in problem.message and problem.severity == types.DiagnosticSeverity.Error
    code = client.folder / "run.py"
    code.write_text("import os\nos.system('ls')\n")
    code_uri = open_document(client, code)
    found = await wait_diagnostics(client, code_uri, lambda ds: ours(ds, "G-0000abcd"))
    assert ours(found, "G-0000abcd")[0].severity == types.DiagnosticSeverity.Warning
    # A `git pull` changing the file: the server reloads it.
    team.write_text(team.read_text().replace('severity = "high"', 'severity = "critical"'))
    found = await wait_diagnostics(
        client,
        code_uri,
        lambda ds: any(
            d.severity == types.DiagnosticSeverity.Error for d in ours(ds, "G-0000abcd")
        ),
    )
