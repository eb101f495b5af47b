"""Files people read and share: exports (AIOS-compatible JSON, Markdown), import, the team TOML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import gotchas
from memory_core.errors import UsageError
from memory_core.gotchas import exports, team
from memory_core.store import Store


def test_exports_are_rewritten_after_every_change_in_the_aios_shape(store: Store) -> None:
    added = gotchas.add(
        store,
        "Use UTC",
        severity="high",
        category="runtime",
        workaround="datetime.now(UTC)",
        related_files=["src/*.py"],
        error_pattern="can't compare offset-naive",
    )
    data = json.loads((store.dir / "exports" / "gotchas.json").read_text())
    assert {"schema", "version", "projectId", "lastUpdated", "statistics", "gotchas"} <= set(data)
    assert data["projectId"] == store.root.name
    assert data["statistics"]["totalGotchas"] == 1 and data["statistics"]["bySeverity"] == {
        "high": 1
    }
    [item] = data["gotchas"]
    assert item["id"] == added.id and item["title"] == "Use UTC"
    assert item["relatedFiles"] == ["src/*.py"]
    assert item["trigger"] == {"errorPattern": "can't compare offset-naive"}
    assert item["source"]["type"] == "manual" and item["source"]["occurrences"] == 0
    assert item["resolved"] is False
    gotchas.resolve(store, added.id)
    data = json.loads((store.dir / "exports" / "gotchas.json").read_text())
    assert data["gotchas"][0]["resolved"] is True
    markdown = (store.dir / "exports" / "gotchas.md").read_text()
    assert (
        "### [high] Use UTC (resolved)" in markdown
        and "**Workaround:** datetime.now(UTC)" in markdown
    )


def test_import_reads_an_aios_file_keeps_unknown_fields_and_never_crashes(
    store: Store, tmp_path: Path
) -> None:
    source = {
        "schema": "aios-gotchas-memory-v1",
        "version": "1.0.0",
        "gotchas": [
            {
                "id": "gotcha-1700000000-abc",
                "title": "Zustand persist needs a type parameter",
                "description": "Without it the store type is lost",
                "category": "runtime",
                "severity": "warning",
                "workaround": "create<T>()(persist(...))",
                "relatedFiles": ["src/store.ts"],
                "trigger": {"errorPattern": "Property does not exist on type"},
                "source": {
                    "type": "auto_detected",
                    "occurrences": 4,
                    "firstSeen": "2026-01-01T00:00:00Z",
                    "lastSeen": "2026-01-02T00:00:00Z",
                },
                "resolved": False,
                "confidence": 0.9,
            },
            {"title": "bad regex", "codePattern": "a(b"},
            "not an object",
            {"title": "Odd category", "category": "State Management", "severity": "info"},
        ],
    }
    path = tmp_path / "gotchas.json"
    path.write_text(json.dumps(source))
    report = exports.import_file(store, path)
    assert len(report.imported) == 2
    assert any("confidence" in p for p in report.problems)
    assert any("position 3" in p for p in report.problems)
    assert any("not an object" in p for p in report.problems)
    imported = {g.title: g for g in gotchas.list_gotchas(store)}
    zustand = imported["Zustand persist needs a type parameter"]
    assert (
        zustand.severity == "medium"
        and zustand.occurrences == 4
        and zustand.source_type == "auto_detected"
    )
    assert (
        zustand.extra["confidence"] == 0.9
        and zustand.extra["importedId"] == "gotcha-1700000000-abc"
    )
    assert imported["Odd category"].severity == "low"
    assert imported["Odd category"].extra["category"] == "State Management"
    again = exports.import_file(store, path)
    assert again.imported == [] or all(i not in report.imported for i in again.imported)


def test_a_round_trip_through_our_own_export_keeps_ids(
    store: Store, tmp_path: Path, workspace: Path
) -> None:
    added = gotchas.add(store, "Round trip", pattern="x = 1", pattern_kind="literal")
    exported = store.dir / "exports" / "gotchas.json"
    other_root = tmp_path / "other"
    other_root.mkdir()
    with Store.init(other_root) as other:
        report = exports.import_file(other, exported)
        assert report.imported == [added.id]
        copy = gotchas.get(other, added.id)
        assert (copy.code_pattern, copy.pattern_kind) == ("x = 1", "literal")
        assert exports.import_file(other, exported).skipped == [added.id]


def test_import_refuses_what_is_not_a_gotchas_file(store: Store, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UsageError, match="not JSON"):
        exports.import_file(store, bad)
    bad.write_text('{"gotchas": 3}')
    with pytest.raises(UsageError, match="gotchas"):
        exports.import_file(store, bad)
    with pytest.raises(UsageError, match="no such file"):
        exports.import_file(store, tmp_path / "missing.json")


TEAM_FILE = """\
# Our team's gotchas. Reviewed in PRs.

[[gotchas]]
# Alice found this one during the 2.0 migration.
id = "G-0000abcd"
title = "Never call os.system"   # use subprocess.run
severity = "high"
pattern = "os.system("
pattern_kind = "literal"
"""


def test_promote_writes_the_team_file_with_tomlkit_keeping_comments(store: Store) -> None:
    path = team.team_path(store.root)
    path.parent.mkdir(parents=True)
    path.write_text(TEAM_FILE)
    gotcha = gotchas.add(
        store,
        "Use UTC everywhere",
        severity="critical",
        workaround="datetime.now(UTC)",
        pattern="utcnow(",
        pattern_kind="literal",
    )
    promoted = gotchas.promote(store, gotcha.id)
    assert promoted.promoted
    text = path.read_text()
    assert text.startswith(TEAM_FILE)  # every comment and the layout survive
    assert f'id = "{gotcha.id}"' in text and 'workaround = "datetime.now(UTC)"' in text
    loaded = team.load(store.root)
    assert [g.id for g in loaded.gotchas] == ["G-0000abcd", gotcha.id] and loaded.problems == []
    gotchas.update(store, gotcha.id, severity="high")
    gotchas.promote(store, gotcha.id)  # updated in place, not appended twice
    assert path.read_text().count(gotcha.id) == 1
    assert "# Alice found this one during the 2.0 migration." in path.read_text()


def test_promoting_a_candidate_confirms_it(store: Store) -> None:
    for i in range(3):
        result = gotchas.track_error(
            store, f"IndexError: list index out of range ({i})", now=1000.0 + i
        )
    promoted = gotchas.promote(store, result.gotcha_id or "")
    assert promoted.status == "confirmed" and promoted.promoted


def test_team_gotchas_are_listed_and_an_invalid_entry_is_reported_with_its_line(
    store: Store,
) -> None:
    path = team.team_path(store.root)
    path.parent.mkdir(parents=True)
    path.write_text(
        TEAM_FILE
        + '\n[[gotchas]]\nid = "G-0000beef"\ntitle = "bad"\nseverity = "urgent"\n'
        + '\n[[gotchas]]\nid = "G-0000cafe"\ntitle = "bad regex"\npattern = "a(b"\npattern_kind = "regex"\n'
    )
    loaded = team.load(store.root)
    assert [g.id for g in loaded.gotchas] == ["G-0000abcd"]
    assert [
        (p.line, "urgent" in p.message or "position" in p.message) for p in loaded.problems
    ] == [(10, True), (15, True)]
    listed = gotchas.list_gotchas(store)
    assert [(g.id, g.source_type, g.status) for g in listed] == [
        ("G-0000abcd", "team", "confirmed")
    ]
    # Resolving a teammate's gotcha keeps a local override; the reviewed file stays as it is.
    before = path.read_text()
    gotchas.resolve(store, "G-0000abcd")
    assert gotchas.list_gotchas(store) == [] and path.read_text() == before


def test_a_broken_team_file_is_one_problem_on_its_line(store: Store) -> None:
    path = team.team_path(store.root)
    path.parent.mkdir(parents=True)
    path.write_text('[[gotchas]]\nid = "G-0000abcd"\ntitle = \n')
    loaded = team.load(store.root)
    assert loaded.gotchas == [] and loaded.problems[0].line == 2
    with pytest.raises(UsageError, match="not valid TOML"):
        gotchas.promote(store, gotchas.add(store, "x").id)
