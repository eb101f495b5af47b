"""Where a gotcha's squiggle lands and how loud it is, computed by the server's own providers
in this process (the protocol tests in test_gotchas.py drive the same code over stdio).

Positions are what an LSP client expects: UTF-16 code units by default, so a line with an
emoji (two units, one character) shifts everything after it.
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import TextDocument

from lsp_server.features import gotchas as lsp_gotchas
from lsp_server.server import EngramServer, FolderState
from memory_core import gotchas
from memory_core.gotchas.records import Gotcha


def _document(state: FolderState, rel: str, source: str, version: int = 1) -> TextDocument:
    path = state.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8", newline="")
    uri = from_fs_path(str(path))
    assert uri is not None
    return TextDocument(uri, source, version=version)


def _diagnostics(
    server: EngramServer, state: FolderState, document: TextDocument
) -> list[types.Diagnostic]:
    lsp_gotchas.folder_of(state).rebuild()
    return lsp_gotchas.diagnostics(server, state, document)


def _span(diagnostic: types.Diagnostic) -> tuple[int, int, int, int]:
    r = diagnostic.range
    return (r.start.line, r.start.character, r.end.line, r.end.character)


def test_a_squiggle_after_an_emoji_is_placed_in_utf16_units(
    server: EngramServer, state: FolderState
) -> None:
    gotcha = gotchas.add(state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    # 'x = "😀"; ' is 9 characters but 10 UTF-16 units: the emoji takes two.
    document = _document(state, "src/a.py", 'x = "😀"; eval(y)\neval(z)\n')
    found = _diagnostics(server, state, document)
    assert sorted(_span(d) for d in found) == [(0, 10, 0, 15), (1, 0, 1, 5)]
    assert {d.code for d in found} == {gotcha.id}
    assert all(d.source == "engram" for d in found)


def test_a_hover_after_an_emoji_finds_the_gotcha_at_the_clients_position(
    server: EngramServer, state: FolderState
) -> None:
    gotchas.add(
        state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal", workaround="ast"
    )
    document = _document(state, "src/a.py", '"😀😀😀😀"; eval(y)\n')
    lsp_gotchas.folder_of(state).rebuild()
    # In UTF-16 units 'eval' starts at 14 (8 units of emoji); in characters at 10.
    inside = lsp_gotchas.hover(server, state, document, types.Position(line=0, character=15))
    assert inside is not None and inside.startswith("engram gotcha `G-")
    assert "**Workaround:** ast" in inside
    # Character 11 in UTF-16 units is inside the third emoji, before 'eval'.
    before = lsp_gotchas.hover(server, state, document, types.Position(line=0, character=11))
    assert before is None


def test_crlf_lines_match_like_lf_lines_and_keep_no_carriage_return(
    server: EngramServer, state: FolderState
) -> None:
    gotchas.add(state.store, "debug flag left on", pattern=r"DEBUG = True$", pattern_kind="regex")
    crlf = _document(state, "settings_win.py", "import os\r\nDEBUG = True\r\nX = 1\r\n")
    lf = _document(state, "settings.py", "import os\nDEBUG = True\nX = 1\n")
    assert [_span(d) for d in _diagnostics(server, state, crlf)] == [(1, 0, 1, 12)]
    assert [_span(d) for d in _diagnostics(server, state, lf)] == [(1, 0, 1, 12)]


def test_split_lines_drops_only_line_ends() -> None:
    assert lsp_gotchas.split_lines("a\r\nb\r\n") == ["a", "b", ""]
    assert lsp_gotchas.split_lines("a\nb") == ["a", "b"]
    assert lsp_gotchas.split_lines("tab\there\r\n\r\n") == ["tab\there", "", ""]
    # Mixed line ends: only the line end goes, never a line's last character.
    assert lsp_gotchas.split_lines("a\r\nbc\nd") == ["a", "bc", "d"]
    # A lone \r ends a line for the client too (old Mac files).
    assert lsp_gotchas.split_lines("a\rbc\r\nd\re") == ["a", "bc", "d", "e"]


def test_a_squiggle_after_a_lone_carriage_return_is_on_the_clients_line(
    server: EngramServer, state: FolderState
) -> None:
    gotchas.add(state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    document = _document(state, "old_mac.py", "x = 1\reval(y)\r")
    assert [_span(d) for d in _diagnostics(server, state, document)] == [(1, 0, 1, 5)]


def test_files_inside_the_store_and_git_are_never_scanned(
    server: EngramServer, state: FolderState
) -> None:
    gotchas.add(state.store, "todo left", pattern="TODO", pattern_kind="literal")
    text = "# TODO: this line mentions the pattern\n"
    # Negative control: the same text in a workspace file gets its squiggle.
    assert len(_diagnostics(server, state, _document(state, "notes.py", text))) == 1
    assert _diagnostics(server, state, _document(state, ".engram/exports/gotchas.md", text)) == []
    assert _diagnostics(server, state, _document(state, ".git/COMMIT_EDITMSG", text)) == []


@pytest.mark.parametrize(
    ("severity", "status", "expected"),
    [
        ("critical", "confirmed", types.DiagnosticSeverity.Error),
        ("high", "confirmed", types.DiagnosticSeverity.Warning),
        ("medium", "confirmed", types.DiagnosticSeverity.Information),
        ("low", "confirmed", types.DiagnosticSeverity.Hint),
        ("critical", "candidate", types.DiagnosticSeverity.Information),
        ("high", "candidate", types.DiagnosticSeverity.Information),
        ("medium", "candidate", types.DiagnosticSeverity.Hint),
        ("low", "candidate", types.DiagnosticSeverity.Hint),
    ],
)
def test_severity_follows_the_gotcha_and_candidates_stay_quiet_but_visible(
    severity: str, status: str, expected: types.DiagnosticSeverity
) -> None:
    gotcha = Gotcha(id="G-12345678", title="t", severity=severity, status=status)
    assert lsp_gotchas.diagnostic_severity(gotcha) == expected


def test_a_high_severity_candidate_in_a_document_is_information_not_a_hint(
    server: EngramServer, state: FolderState
) -> None:
    for _ in range(3):
        result = gotchas.track_error(state.store, "ConnectionError: pool exhausted")
    learned = gotchas.get(state.store, result.gotcha_id or "")
    gotchas.update(
        state.store, learned.id, severity="high", code_pattern="pool.get(", pattern_kind="literal"
    )
    document = _document(state, "db.py", "conn = pool.get()\n")
    [diagnostic] = _diagnostics(server, state, document)
    assert diagnostic.severity == types.DiagnosticSeverity.Information
    assert diagnostic.code == learned.id
    assert diagnostic.data == {"gotcha_id": learned.id, "status": "candidate", "kind": "pattern"}
    # The squiggle's message is the title; the hover tells the rest.
    assert diagnostic.message == learned.title


def test_the_message_carries_the_workaround(server: EngramServer, state: FolderState) -> None:
    gotchas.add(
        state.store,
        "requests without timeout",
        pattern="requests.get(",
        pattern_kind="literal",
        workaround="pass timeout=10",
        severity="high",
    )
    [diagnostic] = _diagnostics(server, state, _document(state, "net.py", "requests.get(u)\n"))
    assert diagnostic.message == "requests without timeout"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning


def test_code_actions_offer_confirm_first_for_a_candidate(
    server: EngramServer, state: FolderState
) -> None:
    manual = gotchas.add(state.store, "no print", pattern="print(", pattern_kind="literal")
    document = _document(state, "p.py", "print(1)\n")
    [diagnostic] = _diagnostics(server, state, document)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=document.uri),
        range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic]),
    )
    actions = lsp_gotchas.code_actions(server, state, document, params)
    titles = [a.title for a in actions]
    assert titles[0] == "Resolve gotcha for the whole project: no print"
    assert "Promote gotcha to team (team/gotchas.toml)" in titles
    assert not any(t.startswith("Confirm") for t in titles)
    assert actions[0].command is not None
    assert actions[0].command.arguments == [{"id": manual.id, "uri": document.uri}]


def test_an_anchored_gotcha_whose_code_changed_says_so_in_its_squiggle_and_hover(
    server: EngramServer, state: FolderState
) -> None:
    (state.root / "db.py").write_text("import pool\nconn = pool.get()\n", encoding="utf-8")
    for _ in range(3):
        learned = gotchas.track_error(
            state.store, "TimeoutError: pool exhausted", file="db.py", line=2
        )
    gotcha = gotchas.get(state.store, learned.gotcha_id or "")
    unchanged = _document(state, "db.py", "import pool\nconn = pool.get()\n")
    [fresh] = _diagnostics(server, state, unchanged)
    assert (fresh.message, fresh.range.start.line) == (gotcha.title, 1)
    changed = _document(state, "db.py", "import pool\nconn = pool.get(timeout=5)\n", version=2)
    [stale] = _diagnostics(server, state, changed)
    assert stale.message == f"{gotcha.title} (the code changed since it was recorded)"
    assert stale.range.start.line == 1
    shown = lsp_gotchas.hover(server, state, changed, types.Position(line=1, character=3))
    assert shown is not None
    assert shown.endswith("⚠ **The code changed since this was recorded.**")


def test_a_gotcha_comment_is_squiggled_before_it_reaches_the_store(
    server: EngramServer, state: FolderState
) -> None:
    document = _document(state, "svc.py", "x = 1\n# gotcha: the cache is per process\n")
    [diagnostic] = _diagnostics(server, state, document)
    assert diagnostic.message == "the cache is per process"
    assert diagnostic.data is not None and diagnostic.data["kind"] == "annotation"
    assert diagnostic.range.start.line == 1
    shown = lsp_gotchas.hover(server, state, document, types.Position(line=1, character=4))
    assert shown is not None and shown.endswith("confirmed\n\nsource: annotation")


def test_hovers_cover_the_whole_match_and_stack_several_gotchas(
    server: EngramServer, state: FolderState
) -> None:
    first = gotchas.add(state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    second = gotchas.add(state.store, "eval of input", pattern=r"eval\(input", pattern_kind="regex")
    document = _document(state, "a.py", "eval(a)\nx = eval(input())\n")
    lsp_gotchas.folder_of(state).rebuild()

    def at(line: int, character: int) -> str | None:
        return lsp_gotchas.hover(server, state, document, types.Position(line, character))

    # On the match's first character, both gotchas, one after the other.
    both = at(1, 4)
    assert both is not None
    parts = both.split("\n\n---\n\n")
    assert sorted(p.split("`")[1] for p in parts) == sorted([first.id, second.id])
    # Each part is one gotcha's whole story, from its first line to its pattern.
    assert all(p.startswith("engram gotcha `G-") and p.endswith("`") for p in parts)
    assert at(1, 3) is None  # just before it: nothing
    # The line above holds only the first gotcha.
    only_first = at(0, 0)
    assert only_first is not None and only_first.split("`")[1] == first.id
    assert "---" not in only_first
    # Past the last line (the empty one after the final newline): nothing, and no error.
    assert at(2, 0) is None
    assert at(3, 0) is None
    assert at(99, 0) is None


def test_a_document_reopened_with_other_text_is_scanned_again(
    server: EngramServer, state: FolderState
) -> None:
    gotchas.add(state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    lsp_gotchas.folder_of(state).rebuild()
    before = _document(state, "a.py", "eval(x)\n")
    assert len(lsp_gotchas.diagnostics(server, state, before)) == 1
    sync = lsp_gotchas.AnnotationSync()
    sync.did_close(server, state, before.uri)
    # Changed on disk while closed, then opened again: a new document at version 1 again.
    after = _document(state, "a.py", "print(x)\n")
    assert lsp_gotchas.diagnostics(server, state, after) == []


async def test_a_resolved_gotcha_comment_stays_hidden_until_the_comment_changes(
    server: EngramServer, state: FolderState
) -> None:
    document = _document(state, "svc.py", "# gotcha: retries double-charge the card\n")
    sync = lsp_gotchas.AnnotationSync()
    sync.did_save(server, state, document)
    await asyncio.gather(*sync.pending)
    [annotation] = gotchas.list_gotchas(state.store)
    assert len(_diagnostics(server, state, document)) == 1
    gotchas.resolve(state.store, annotation.id)
    assert _diagnostics(server, state, document) == []
    edited = _document(state, "svc.py", "# gotcha: retries charge the card twice\n", version=2)
    [shown] = _diagnostics(server, state, edited)
    assert shown.message == "retries charge the card twice"
