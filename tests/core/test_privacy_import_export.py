"""Export and import as a user meets them (issue 31): the Markdown export's every section, the
YAML's order, what an import counts as inserted or skipped, rows from an older export, archived
sessions carried as bytes, hand-edited files, and what cannot be imported said before anything
is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import clock, gotchas, lifecycle, memory, privacy, search, sessions
from memory_core.errors import UsageError
from memory_core.store import Store

NOW = 1_800_000_000.0

EXPORT = {
    "format": "engram-export",
    "format_version": 1,
    "schema_version": 17,
    "exported_at": "2027-01-15T08:00:00Z",
    "root": "/work/shop",
    "session": None,
    "tables": {
        "memories": [
            {
                "id": "M-2",
                "type": "action",
                "pinned": 1,
                "tags": "",
                "created_at": 200.0,
                "content": "Stream uploads\n   in chunks",
            },
            {
                "id": "M-1",
                "type": "finding",
                "pinned": 0,
                "tags": "uploads nginx",
                "created_at": 100.0,
                "content": "Uploads over 2 GB fail",
            },
        ],
        "memory_relations": [{"source_id": "M-2", "kind": "resolves", "target_id": "M-1"}],
        "gotchas": [
            {
                "id": "G-1",
                "title": "nginx body size",
                "severity": "high",
                "category": "config",
                "status": "open",
                "description": "Defaults to 1 MB.",
                "workaround": "Set client_max_body_size.",
            },
            {"id": "G-2", "title": "bare", "severity": "low", "category": "build", "status": "ok"},
        ],
        "sessions": [
            {
                "id": "s-1",
                "name": "uploads",
                "agent": "claude-code",
                "status": "ended",
                "overview": "Fixed large uploads",
                "decisions": '["stream in chunks"]',
                "outcomes": ["uploads work"],
                "open_items": "[]",
            },
            {
                "id": "s-2",
                "name": None,
                "agent": "gemini",
                "status": "active",
                "overview": "",
                "decisions": "not json",
                "outcomes": None,
                "open_items": '{"a": 1}',
            },
            {"id": "s-3", "agent": "codex", "status": "ended", "open_items": "[broken"},
        ],
        "digests": [{"session_id": "s-1", "trigger": "Stop", "content": "summary: uploads\n\n"}],
        "events": [{}, {}],
        "agent_prompts": [{}],
    },
}

MARKDOWN = """\
# engram export: everything

Exported 2027-01-15T08:00:00Z from `/work/shop` (schema 17).

## Memories

- **M-1** finding `uploads nginx`: Uploads over 2 GB fail
- **M-2** action (pinned): Stream uploads in chunks

Relations:

- M-2 resolves M-1

## Gotchas

### G-1: nginx body size

high config, open

Defaults to 1 MB.

Workaround: Set client_max_body_size.

### G-2: bare

low build, ok

## Sessions

### uploads (claude-code, ended)

Fixed large uploads

Decisions:
- stream in chunks

Outcomes:
- uploads work

### s-2 (gemini, active)

### s-3 (codex, ended)

## Digests

### s-1 (Stop)

```yaml
summary: uploads
```

## Other records

- agent_prompts: 1
- events: 2
"""


def test_the_markdown_export_reads_as_a_document() -> None:
    # Memories oldest first, a decision list from its JSON text or a list, an item list that
    # is empty, not JSON or not a list shows nothing; records of other tables are counted.
    assert privacy.render(EXPORT, "md") == MARKDOWN


def test_the_markdown_of_one_session_names_it_and_skips_empty_sections() -> None:
    data = {
        **EXPORT,
        "session": "s-9",
        "tables": {"memories": [{"id": "M-3", "type": "note", "content": "only this"}]},
    }
    assert privacy.render(data, "md") == (
        "# engram export: session s-9\n\n"
        "Exported 2027-01-15T08:00:00Z from `/work/shop` (schema 17).\n\n"
        "## Memories\n\n"
        "- **M-3** note: only this\n"
    )
    assert privacy.render({**EXPORT, "tables": {}}, "md").endswith("(schema 17).\n")


def test_yaml_keeps_the_export_s_own_order_and_its_text_unescaped() -> None:
    text = privacy.render({**EXPORT, "root": "/work/café"}, "yaml")
    assert text.startswith("format: engram-export\nformat_version: 1\nschema_version: 17\n")
    assert "root: /work/café\n" in text


# -- export ----------------------------------------------------------------------------------


def test_an_export_is_dated_when_it_was_made(store: Store) -> None:
    data = privacy.export_data(store, now=NOW)
    assert data["exported_at"] == clock.iso(NOW)
    assert data["root"] == str(store.root) and data["session"] is None
    assert data["schema_version"] == store.schema_version


def test_a_session_with_only_its_own_row_exports(store: Store) -> None:
    sessions.start(store, session_id="s-quiet", agent="gemini", now=NOW)
    data = privacy.export_data(store, session_id="s-quiet", now=NOW)
    assert [row["id"] for row in data["tables"]["sessions"]] == ["s-quiet"]
    assert data["session"] == "s-quiet"


# -- import ----------------------------------------------------------------------------------


def _two_stores(tmp_path: Path) -> tuple[Store, Store]:
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        root.mkdir()
    return Store.init(roots[0]), Store.init(roots[1])


def test_memories_import_into_a_store_that_has_its_own(tmp_path: Path) -> None:
    # Both stores number their memories from 1: the numbering is each store's own, so the
    # other store's memories go in beside these, each searchable.
    here, there = _two_stores(tmp_path)
    with here, there:
        mine = memory.add(here, "Deploys go out on Tuesdays", type="decision", now=NOW)
        theirs = [
            memory.add(there, "Billing retries three times", type="finding", now=NOW),
            memory.add(there, "Invoices are cached for an hour", type="finding", now=NOW),
        ]
        result = privacy.import_data(here, privacy.export_data(there, now=NOW))
        assert result["inserted"]["memories"] == 2
        ids = {m["id"] for m in memory.list_memories(here)}
        assert ids == {mine["id"], *(m["id"] for m in theirs)}
        assert (
            search.search(here, "invoices", record_access=False, now=NOW)[0]["id"]
            == (theirs[1]["id"])
        )
        assert (
            search.search(here, "tuesdays", record_access=False, now=NOW)[0]["id"] == (mine["id"])
        )


def test_a_second_import_counts_every_row_as_skipped(store: Store, tmp_path: Path) -> None:
    memory.add(store, "one", now=NOW)
    memory.add(store, "two", now=NOW)
    gotchas.add(store, "three", now=NOW)
    data = privacy.export_data(store, now=NOW)
    rows = sum(len(rows) for rows in data["tables"].values())
    other_root = tmp_path / "other"
    other_root.mkdir()
    with Store.init(other_root) as other:
        first = privacy.import_data(other, data)
        assert first["skipped"] == 0
        assert sum(first["inserted"].values()) == rows
        again = privacy.import_data(other, data)
    assert again == {"inserted": {}, "skipped": rows, "unknown_tables": []}


def test_rows_of_unknown_columns_and_tables_are_skipped_and_named(store: Store) -> None:
    data = {
        "format": privacy.FORMAT,
        "format_version": 1,
        "tables": {
            "memories": [{"colour": "blue"}, {"shape": "round"}],
            "from_the_future": [{"id": 1}],
            "search_docs": [{"id": 2}],  # a derived index: never imported, not "unknown"
        },
    }
    result = privacy.import_data(store, data)
    assert result == {"inserted": {}, "skipped": 2, "unknown_tables": ["from_the_future"]}


def test_a_row_whose_parent_is_missing_is_skipped(store: Store) -> None:
    data = {
        "format": privacy.FORMAT,
        "format_version": 1,
        "tables": {
            "memory_relations": [
                {"source_id": "M-none", "target_id": "M-gone", "kind": "resolves"},
            ]
        },
    }
    result = privacy.import_data(store, data)
    assert result["skipped"] == 1 and result["inserted"] == {}


def test_transcript_heads_from_an_older_export_are_dropped(store: Store) -> None:
    # Before heads were hashed, an export carried a transcript's first bytes (a prompt, in
    # clear); the hash form (`<n>:<sha256>`) is kept.
    rows = [
        {
            "path": "/t/old.jsonl",
            "agent": "claude-code",
            "head": "7b2274797065223a",
            "updated_at": 1.0,
        },
        {"path": "/t/new.jsonl", "agent": "claude-code", "head": "512:ab12", "updated_at": 1.0},
        {"path": "/t/none.jsonl", "agent": "claude-code", "updated_at": 1.0},
    ]
    privacy.import_data(
        store,
        {"format": privacy.FORMAT, "format_version": 1, "tables": {"agent_ingest_offsets": rows}},
    )
    heads = {
        row["path"]: row["head"]
        for row in store.query("SELECT path, head FROM agent_ingest_offsets")
    }
    assert heads == {"/t/old.jsonl": "", "/t/new.jsonl": "512:ab12", "/t/none.jsonl": ""}


def test_an_archived_session_travels_with_its_turns(store: Store, tmp_path: Path) -> None:
    sessions.start(store, session_id="s-old", agent="claude-code", now=NOW)
    sessions.record_turn(
        store,
        "s-old",
        user_message="why do uploads fail",
        assistant_response="the body size limit",
        started_at=NOW,
        ended_at=NOW + 1,
    )
    assert lifecycle.archive_session(store, "s-old", now=NOW)["rows"] >= 1
    data = privacy.export_data(store, now=NOW)
    (archived,) = data["tables"]["archived_rows"]
    assert set(archived["data"]) == {"__bytes__"}  # bytes, as base64 in JSON and YAML
    other_root = tmp_path / "other"
    other_root.mkdir()
    with Store.init(other_root) as other:
        privacy.import_data(other, privacy.parse(privacy.render(data, "yaml"), "yaml"))
        restored = privacy.export_data(other, session_id="s-old", now=NOW)
    turns = restored["tables"]["session_turns"]
    assert [t["user_message"] for t in turns] == ["why do uploads fail"]


def test_a_hand_edited_list_or_object_is_stored_as_json(store: Store) -> None:
    row = {
        "id": "M-hand",
        "content": "edited by hand",
        "type": "finding",
        "tags": ["a", "b"],
        "provenance": {"by": "hand", "note": "é"},
        "created_at": NOW,
        "updated_at": NOW,
        "last_accessed": NOW,
    }
    privacy.import_data(
        store, {"format": privacy.FORMAT, "format_version": 1, "tables": {"memories": [row]}}
    )
    stored = store.query_one("SELECT tags, provenance FROM memories WHERE id = 'M-hand'")
    assert stored is not None
    assert json.loads(stored["tags"]) == ["a", "b"]
    assert stored["provenance"] == '{"by": "hand", "note": "é"}'


def test_a_row_that_is_not_an_object_is_refused_and_nothing_is_kept(store: Store) -> None:
    data = {
        "format": privacy.FORMAT,
        "format_version": 1,
        "tables": {
            "gotchas": [],
            "memories": [
                {"id": "M-ok", "content": "x", "type": "note", "created_at": NOW},
                "M-2: not a row",
            ],
        },
    }
    with pytest.raises(UsageError, match="a row of 'memories' in the export is not an object"):
        privacy.import_data(store, data)
    assert memory.list_memories(store) == []
    with pytest.raises(UsageError, match=r"not an engram export \(no tables\)"):
        privacy.import_data(store, {"format": privacy.FORMAT, "tables": []})


def test_a_memory_of_a_type_this_engram_does_not_know_is_skipped(store: Store) -> None:
    row = {"content": "x", "created_at": NOW, "last_accessed": NOW}
    data = {
        "format": privacy.FORMAT,
        "format_version": 1,
        "tables": {
            "memories": [
                {**row, "id": "M-odd", "type": "rumour"},
                {**row, "id": "M-ok", "type": "finding"},
            ]
        },
    }
    result = privacy.import_data(store, data)
    assert result["inserted"] == {"memories": 1} and result["skipped"] == 1
    assert [m["id"] for m in memory.list_memories(store)] == ["M-ok"]


def test_imported_gotchas_are_found_by_search(store: Store, tmp_path: Path) -> None:
    other_root = tmp_path / "other"
    other_root.mkdir()
    with Store.init(other_root) as other:
        gotchas.add(other, "nginx client_max_body_size defaults to 1 MB", now=NOW)
        data = privacy.export_data(other, now=NOW)
    assert search.search(store, "client_max_body_size", kinds=["gotcha"], now=NOW) == []
    privacy.import_data(store, data)
    found = search.search(store, "client_max_body_size", kinds=["gotcha"], now=NOW)
    assert [r["label"] for r in found] == ["nginx client_max_body_size defaults to 1 MB"]
