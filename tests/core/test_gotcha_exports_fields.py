"""The gotcha exports field by field (the Markdown people read, the AIOS JSON tools read) and
import of each field, with every mapping and fallback a hand-written or AIOS file can need."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import clock, gotchas
from memory_core.errors import UsageError
from memory_core.gotchas import exports
from memory_core.store import Store

T0 = 1767225600.0  # 2026-01-01T00:00:00Z


def _markdown(store: Store) -> str:
    return (store.dir / "exports" / "gotchas.md").read_text()


def _json(store: Store) -> dict:
    return json.loads((store.dir / "exports" / "gotchas.json").read_text())


def test_the_markdown_groups_by_category_in_order_with_every_detail(store: Store) -> None:
    lint = gotchas.add(
        store,
        "No print in library code",
        category="lint",
        severity="low",
        pattern="print(",
        pattern_kind="literal",
        related_files=["src/lib.py", "src/util.py"],
        description="Use the logger.",
        now=T0,
    )
    build = gotchas.add(store, "Pin setuptools", category="build", severity="critical", now=T0)
    markdown = _markdown(store)
    lines = markdown.splitlines()
    assert lines[0] == "# Known gotchas"
    assert lines[2].startswith(f"> Written by engram for {store.root.name}. Last updated ")
    assert lines[3] == "> 2 gotchas, 2 open."
    # Categories in their fixed order (build before lint), whatever the order of adding.
    assert lines.index("## Build") < lines.index("## Lint")
    assert "## Test" not in lines and "## General" not in lines
    at = lines.index("### [low] No print in library code")
    # Lint is the last category: its gotcha ends the file, with one line end.
    assert lines[at:] == [
        "### [low] No print in library code",
        "",
        f"- id: `{lint.id}`, source: manual, occurrences: 0",
        "- Use the logger.",
        "- Files: `src/lib.py`, `src/util.py`",
        "- Pattern (literal): `print(`",
    ]
    at = lines.index("### [critical] Pin setuptools")
    assert lines[at + 2] == f"- id: `{build.id}`, source: manual, occurrences: 0"
    assert lines[at + 3] == ""  # no description, files, workaround or pattern: no such lines
    assert markdown.endswith("- Pattern (literal): `print(`\n")


def test_the_markdown_says_one_gotcha_and_marks_candidates_and_times(store: Store) -> None:
    added = gotchas.add(store, "Only one", category="runtime", status="candidate", now=T0)
    with store.transaction() as db:
        db.execute(
            "UPDATE gotchas SET first_seen = ?, last_seen = ? WHERE id = ?",
            (T0, T0 + 86400, added.id),
        )
    gotchas.update(store, added.id, workaround="restart it")
    lines = _markdown(store).splitlines()
    assert lines[3] == "> 1 gotcha, 1 open."
    assert "### [medium] Only one (candidate)" in lines
    assert "- first seen 2026-01-01T00:00:00Z, last seen 2026-01-02T00:00:00Z" in lines
    assert "- **Workaround:** restart it" in lines
    gotchas.resolve(store, added.id)
    assert _markdown(store).splitlines()[3] == "> 1 gotcha, 0 open."


def test_the_json_counts_by_category_severity_source_and_resolution(store: Store) -> None:
    a = gotchas.add(store, "A", category="test", severity="high")
    gotchas.add(store, "B", category="test", severity="low")
    gotchas.add(store, "C", category="security", severity="high")
    gotchas.resolve(store, a.id)
    data = _json(store)
    assert data["schema"] == "aios-gotchas-memory-v1" and data["version"] == "1.0.0"
    assert data["statistics"] == {
        "totalGotchas": 3,
        "resolved": 1,
        "unresolved": 2,
        "byCategory": {"test": 2, "security": 1},
        "bySeverity": {"high": 2, "low": 1},
        "bySource": {"manual": 3},
    }
    assert abs(clock.parse_iso(data["lastUpdated"]) - clock.now()) < 60
    item = next(g for g in data["gotchas"] if g["title"] == "A")
    assert item["resolved"] is True and item["status"] == "resolved"
    assert item["workaround"] is None and item["codePattern"] is None
    assert item["patternKind"] == "regex"
    assert item["source"]["firstSeen"] is None and item["source"]["lastSeen"] is None
    assert clock.parse_iso(item["createdAt"]) <= clock.parse_iso(item["updatedAt"])


def _import(store: Store, tmp_path: Path, items: object) -> exports.ImportReport:
    path = tmp_path / "in.json"
    path.write_text(json.dumps(items))
    return exports.import_file(store, path)


def test_aios_severities_and_statuses_are_mapped(store: Store, tmp_path: Path) -> None:
    report = _import(
        store,
        tmp_path,
        [
            {"id": "G-00000001", "title": "i", "severity": "INFO"},
            {"id": "G-00000002", "title": "w", "severity": "warning"},
            {"id": "G-00000003", "title": "e", "severity": "error"},
            {"id": "G-00000004", "title": "c", "severity": "critical", "resolved": True},
            {"id": "G-00000005", "title": "n", "severity": "nope", "status": "candidate"},
            {"id": "G-00000006", "title": "s", "status": "lost", "resolved": "yes"},
        ],
    )
    assert report.imported == [f"G-0000000{n}" for n in range(1, 7)]
    assert report.problems == ["gotchas[4]: unknown severity 'nope'; using medium"]
    got = {g.id: g for g in gotchas.list_gotchas(store, include_resolved=True)}
    assert [got[f"G-0000000{n}"].severity for n in range(1, 7)] == [
        "low",
        "medium",
        "high",
        "critical",
        "medium",
        "medium",
    ]
    assert got["G-00000004"].status == "resolved"
    assert got["G-00000005"].status == "candidate"
    assert got["G-00000006"].status == "confirmed"


def test_import_fills_what_is_missing_and_keeps_what_is_odd(store: Store, tmp_path: Path) -> None:
    long_description = "d" * 100
    report = _import(
        store,
        tmp_path,
        {
            "gotchas": [
                {"description": long_description},
                {},
                {
                    "id": 42,
                    "title": "Fields of every kind",
                    "category": "Lint",
                    "relatedFiles": ["a.py", 3, None, "b.py"],
                    "codePattern": "TODO",
                    "patternKind": "glob",
                    "trigger": {"errorPattern": "E501"},
                    "source": {
                        "type": "imported-from-elsewhere",
                        "occurrences": "7",
                        "firstSeen": "2026-01-01T00:00:00Z",
                        "lastSeen": "not a date",
                    },
                },
                {
                    "title": "files not a list",
                    "relatedFiles": "a.py",
                    "source": {"occurrences": "x"},
                },
                {"title": "odd source", "trigger": "E1", "source": [1]},
            ]
        },
    )
    assert len(report.imported) == 5 and report.problems == []
    by_title = {g.title: g for g in gotchas.list_gotchas(store, include_resolved=True)}
    assert by_title["d" * 80].description == long_description
    assert "Imported gotcha" in by_title
    odd = by_title["Fields of every kind"]
    assert odd.category == "lint" and list(odd.related_files) == ["a.py", "b.py"]
    assert (odd.code_pattern, odd.pattern_kind) == ("TODO", "regex")
    assert odd.error_pattern == "E501"
    assert odd.extra == {"importedId": "42"}
    assert not odd.id.startswith("42")
    assert odd.source_type == "manual" and odd.occurrences == 7
    assert odd.first_seen == T0 and odd.last_seen is None
    assert list(by_title["files not a list"].related_files) == []
    assert by_title["files not a list"].occurrences == 0
    assert by_title["odd source"].error_pattern is None
    assert by_title["odd source"].source_type == "manual"


def test_each_known_source_type_is_kept(store: Store, tmp_path: Path) -> None:
    _import(
        store,
        tmp_path,
        [
            {"title": kind, "source": {"type": kind, "occurrences": 2}}
            for kind in ("manual", "auto_detected", "annotation", "team")
        ],
    )
    assert {g.title: g.source_type for g in gotchas.list_gotchas(store)} == {
        kind: kind for kind in ("manual", "auto_detected", "annotation", "team")
    }


def test_an_id_seen_earlier_in_the_same_file_is_skipped(store: Store, tmp_path: Path) -> None:
    report = _import(
        store,
        tmp_path,
        [{"id": "G-0000aaaa", "title": "one"}, {"id": "G-0000aaaa", "title": "two"}],
    )
    assert report.imported == ["G-0000aaaa"] and report.skipped == ["G-0000aaaa"]
    assert report.to_dict() == {
        "imported": ["G-0000aaaa"],
        "skipped": ["G-0000aaaa"],
        "problems": [],
    }
    assert [g.title for g in gotchas.list_gotchas(store)] == ["one"]


def test_a_gotcha_engram_refuses_is_reported_and_the_rest_imported(
    store: Store, tmp_path: Path
) -> None:
    report = _import(
        store, tmp_path, [{"title": "bad", "codePattern": "(unclosed"}, {"title": "good"}]
    )
    assert len(report.imported) == 1
    [problem] = report.problems
    assert problem.startswith("gotchas[0]: ") and problem.endswith("; skipped")


def test_a_file_that_cannot_be_read_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "folder.json"
    folder.mkdir()
    with pytest.raises(UsageError, match=r"folder\.json: cannot read it"):
        exports.import_file(store, folder)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"gotchas": [{"title": "caf\xe9"}]}')
    with pytest.raises(UsageError, match="cannot read it"):
        exports.import_file(store, latin)
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "gotchas": [,]\n}')
    with pytest.raises(UsageError) as raised:
        exports.import_file(store, broken)
    assert "not JSON (Expecting value at line 2, column 15)" in str(raised.value)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(UsageError, match="nested too deeply"):
        exports.import_file(store, deep)


def test_an_engram_id_is_kept_as_the_id_and_no_id_is_not_an_imported_one(
    store: Store, tmp_path: Path
) -> None:
    _import(store, tmp_path, [{"id": "G-0000beef", "title": "ours"}, {"title": "no id"}])
    by_title = {g.title: g for g in gotchas.list_gotchas(store)}
    assert by_title["ours"].id == "G-0000beef" and by_title["ours"].extra == {}
    assert by_title["no id"].extra == {}


def test_the_markdown_of_a_chosen_list_or_of_every_gotcha(store: Store) -> None:
    kept = gotchas.add(store, "Kept", category="build")
    gotchas.add(store, "Other", category="build")
    chosen = exports.to_markdown(store, [kept])
    assert "### [medium] Kept" in chosen and "Other" not in chosen
    assert chosen.splitlines()[3] == "> 1 gotcha, 1 open."
    every = exports.to_markdown(store)
    assert "### [medium] Kept" in every and "### [medium] Other" in every
