"""The two annotation-gotcha bugs: comment annotations vanished from files that also had an
error-line gotcha, and every annotation gotcha was reported as drifted the moment it was made."""

from __future__ import annotations

from pathlib import Path

from memory_core import drift
from memory_core.gotchas import records
from memory_core.gotchas.records import Anchor, Gotcha, line_hash
from memory_core.gotchas.scan import GotchaIndex, annotation_gotcha, find_annotations
from memory_core.store import Store

NOW = 1_800_000_000.0
SOURCE = """import os

def load():
    # gotcha: the cache dir must exist before load() runs
    return open(os.environ["CACHE"] + "/index.json").read()

def save(data):
    return write(data)  // not python, but the scanner reads any comment syntax
"""


def _error_line_gotcha(lines: list[str]) -> Gotcha:
    """A gotcha learned from an error that pointed at line 5 (0-based 4) of app.py."""
    return Gotcha(
        id="G-errorline",
        title="KeyError: 'CACHE' when the variable is unset",
        source_type="auto_detected",
        status="confirmed",
        created_at=NOW,
        updated_at=NOW,
        anchors=[Anchor("app.py", 4, 4, line_hash(lines[4]), lines[4])],
    )


def test_annotations_show_in_a_file_that_also_has_an_error_line_gotcha() -> None:
    lines = SOURCE.splitlines()
    index = GotchaIndex([_error_line_gotcha(lines)], now=NOW)
    result = index.scan("app.py", lines)
    kinds = sorted((hit.kind, hit.line) for hit in result.hits)
    assert ("anchor", 4) in kinds
    assert ("annotation", 3) in kinds
    assert [a.text for a in result.annotations] == ["the cache dir must exist before load() runs"]


def test_annotations_show_when_the_anchor_had_to_be_found_again() -> None:
    # The error line moved (two lines inserted above): the scan looks the hash up in every line.
    lines = SOURCE.splitlines()
    gotcha = _error_line_gotcha(lines)
    moved = ["# header", "# more header", *lines]
    result = GotchaIndex([gotcha], now=NOW).scan("app.py", moved)
    assert ("anchor", 6) in {(h.kind, h.line) for h in result.hits}
    assert [a.line for a in result.annotations] == [5]


def test_a_new_annotation_gotcha_is_not_drifted(store: Store, workspace: Path) -> None:
    (workspace / "app.py").write_text(SOURCE, encoding="utf-8")
    lines = SOURCE.splitlines()
    found = [annotation_gotcha("app.py", a, NOW) for a in find_annotations("app.py", lines)]
    assert records.sync_annotations(store, "app.py", found, now=NOW)
    stale = [c for c in drift.gotcha_anchor_citations(store) if c.owner == found[0].id]
    assert len(stale) == 1
    assert drift.check_citation(workspace, stale[0]) is None
    # And it is reported once the comment's line really changes.
    (workspace / "app.py").write_text(SOURCE.replace("# gotcha: the cache", "# the cache"))
    item = drift.check_citation(workspace, stale[0])
    assert item is not None and item.kind == "stale-citation"


def test_annotation_gotchas_stored_before_the_fix_are_corrected_by_the_next_sync(
    store: Store, workspace: Path
) -> None:
    (workspace / "app.py").write_text(SOURCE, encoding="utf-8")
    lines = SOURCE.splitlines()
    annotation = find_annotations("app.py", lines)[0]
    old = annotation_gotcha("app.py", annotation, NOW)
    # What engram used to store: the hash and text of the comment's words, not of the line.
    old.anchors = [
        Anchor(
            "app.py", annotation.line, annotation.line, line_hash(annotation.text), annotation.text
        )
    ]
    records.sync_annotations(store, "app.py", [old], now=NOW)
    fresh = [annotation_gotcha("app.py", a, NOW) for a in find_annotations("app.py", lines)]
    assert records.sync_annotations(store, "app.py", fresh, now=NOW)
    citations = [c for c in drift.gotcha_anchor_citations(store) if c.owner == old.id]
    assert [drift.check_citation(workspace, c) for c in citations] == [None]
    # Unchanged afterwards: the next sync writes nothing.
    assert not records.sync_annotations(store, "app.py", fresh, now=NOW)


def test_the_textmate_grammar_highlights_exactly_the_annotations_the_server_reads() -> None:
    """syntax/engram-annotations.tmLanguage.json begins an annotation where the server finds
    one: every severity it reads (`GOTCHA(high):`), and not a severity it does not know. The
    editors' tokenisers are run on it in tests/e2e/test_syntax.py; this keeps the two rules in
    step for every severity and spelling."""
    import json
    import re

    grammar = json.loads(
        (Path(__file__).parents[2] / "syntax" / "engram-annotations.tmLanguage.json").read_text()
    )
    begin = re.compile(grammar["repository"]["gotcha-annotation"]["begin"])
    lines = [
        f"{marker} {word}{spacing}{severity}{colon_space}: text"
        for marker in ("#", "//")
        for word in ("gotcha", "GOTCHA", "Gotcha")
        for spacing in ("", " ")
        for severity in ("", "(critical)", "(high)", "(medium)", "(low)", "(HIGH)", "(urgent)")
        for colon_space in ("", " ")
    ]
    for line in lines:
        server = find_annotations("sample.py", [line])
        assert bool(begin.search(line)) == bool(server), line
        if server and "(" in line:
            assert server[0].severity == line.split("(")[1].split(")")[0].lower()
    assert any("(urgent)" in line and not find_annotations("sample.py", [line]) for line in lines)


def _annotation(gotcha_id: str, path: str, line: int) -> Gotcha:
    return Gotcha(
        id=gotcha_id,
        title=f"note {gotcha_id}",
        source_type="annotation",
        status="confirmed",
        created_at=NOW,
        updated_at=NOW,
        anchors=[Anchor(path, line, line, line_hash(f"# gotcha: {line}"), f"# gotcha: {line}")],
    )


def test_an_annotation_already_stored_for_another_file_does_not_stop_the_others(
    store: Store,
) -> None:
    assert records.sync_annotations(store, "a.py", [_annotation("G-0000aaaa", "a.py", 1)], now=NOW)
    # The same comment copied into b.py (same id) among b.py's own: every one of them is kept.
    found = [_annotation("G-0000aaaa", "b.py", 0)]
    found += [_annotation(f"G-{n:08x}", "b.py", n) for n in range(1, 25)]
    assert records.sync_annotations(store, "b.py", found, now=NOW)
    stored = records.by_ids(store, [g.id for g in found])
    assert sorted(stored) == sorted(g.id for g in found)
