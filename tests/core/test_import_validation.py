"""Imports are validated before anything is stored: a value of the wrong type for its column
(which broke every command reading that table afterwards), a value too large, and YAML aliases
(the "billion laughs" that ran a minute into MemoryError) are refused with nothing imported."""

from __future__ import annotations

import json

import pytest

from memory_core import privacy, snapshots
from memory_core.errors import UsageError
from memory_core.store import Store
from tests.conftest import run_cli


def _export(store: Store, **tables: list[dict[str, object]]) -> dict[str, object]:
    data = privacy.export_data(store)
    data["tables"] = dict(tables)
    return data


def test_a_value_of_the_wrong_type_is_refused_and_nothing_is_imported(store: Store) -> None:
    good = {"id": "S-good", "created_at": 1.7e9, "note": "kept out too"}
    bad = {"id": "S-bad", "created_at": "yesterday", "note": "a text where a time belongs"}
    with pytest.raises(UsageError, match=r"snapshots\.created_at: str 'yesterday'"):
        privacy.import_data(store, _export(store, snapshots=[good, bad]))
    assert store.query("SELECT id FROM snapshots") == []
    # What reads the table still works (it failed from then on before).
    assert snapshots.list_snapshots(store) == []
    for args in (["snapshot", "list", "--json"], ["timeline", "--json"], ["doctor", "--json"]):
        done = run_cli(*args, cwd=store.root)
        assert done.code == 0, (args, done.stdout, done.stderr)


def test_a_number_where_text_belongs_and_a_huge_value_are_refused(store: Store) -> None:
    with pytest.raises(UsageError, match=r"snapshots\.note: int"):
        privacy.import_data(
            store, _export(store, snapshots=[{"id": "S-1", "created_at": 1.0, "note": 5}])
        )
    huge = "x" * (privacy.MAX_IMPORT_VALUE_CHARS + 1)
    with pytest.raises(UsageError, match="the limit is"):
        privacy.import_data(
            store, _export(store, snapshots=[{"id": "S-2", "created_at": 1.0, "note": huge}])
        )
    assert store.query("SELECT id FROM snapshots") == []


BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
format: engram-export
format_version: 1
tables: {memories: [{id: M-1, content: *i}]}
"""


def test_yaml_aliases_are_refused_before_they_expand(store: Store) -> None:
    # A valid export in every other way (format and version), so the aliases are the only
    # reason to refuse it: without the check the parse succeeds (the loader shares the
    # aliased lists) and the import expands nine levels of them into a billion strings.
    with pytest.raises(UsageError, match="YAML aliases"):
        privacy.parse(BILLION_LAUGHS, "yaml")
    path = store.root / "bomb.yaml"
    path.write_text(BILLION_LAUGHS)
    done = run_cli("import", str(path), "--json", cwd=store.root)
    assert done.code == 2 and "YAML aliases" in json.loads(done.stdout)["error"]


def test_engrams_own_yaml_export_still_imports(store: Store) -> None:
    privacy.import_data(
        store, _export(store, snapshots=[{"id": "S-1", "created_at": 1.7e9, "note": "kept"}])
    )
    text = privacy.render(privacy.export_data(store), "yaml")
    parsed = privacy.parse(text, "yaml")
    assert [row["id"] for row in parsed["tables"]["snapshots"]] == ["S-1"]


def test_doctor_names_a_value_of_the_wrong_type_that_commands_would_fail_on(store: Store) -> None:
    """As an import from before this check (or an edit by hand) left it: doctor said healthy."""
    from memory_core import doctor

    assert doctor.run(store)["healthy"]
    with store.transaction() as db:
        db.execute("INSERT INTO snapshots (id, created_at) VALUES ('S-bad', 'yesterday')")
    report = doctor.run(store)
    assert not report["healthy"]
    assert report["wrong_types"] == {"snapshots.created_at": 1}
    assert any("snapshots.created_at 1" in line for line in report["problems"])
