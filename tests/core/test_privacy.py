"""Export (json, yaml, md; everything or one session), import back, anonymize."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from memory_core import gotchas, memory, privacy, search, sessions
from memory_core.errors import UsageError
from memory_core.store import Store

NOW = 1_800_000_000.0


def _fill(store: Store) -> dict[str, str]:
    bug = memory.add(
        store,
        "Uploads over 2 GB fail with a 413",
        type="finding",
        tags=["uploads"],
        session_id="s-1",
        now=NOW,
    )
    fix = memory.add(
        store,
        "Stream uploads in chunks",
        type="action",
        relations=[("resolves", bug["id"])],
        session_id="s-1",
        now=NOW,
    )
    other = memory.add(store, "Prefer httpx", type="preference", explicit=True, now=NOW)
    sessions.start(store, session_id="s-1", agent="claude-code", now=NOW)
    sessions.record_turn(
        store,
        "s-1",
        user_message="fix uploads",
        assistant_response="streamed them",
        started_at=NOW,
        ended_at=NOW + 1,
    )
    sessions.set_summary(
        store, "s-1", overview="Fixed large uploads", decisions=["stream in chunks"]
    )
    sessions.start(store, session_id="s-2", agent="gemini", now=NOW)
    gotcha = gotchas.add(store, "nginx client_max_body_size defaults to 1 MB", now=NOW)
    return {"bug": bug["id"], "fix": fix["id"], "other": other["id"], "gotcha": gotcha.id}


def test_export_holds_every_area_and_imports_back_into_an_empty_store(
    store: Store, tmp_path: Path
) -> None:
    ids = _fill(store)
    data = privacy.export_data(store, now=NOW)
    tables = data["tables"]
    assert data["format"] == "engram-export" and data["format_version"] == 1
    assert {row["id"] for row in tables["memories"]} == {ids["bug"], ids["fix"], ids["other"]}
    assert {row["id"] for row in tables["sessions"]} == {"s-1", "s-2"}
    assert [row["id"] for row in tables["gotchas"]] == [ids["gotcha"]]
    assert len(tables["session_turns"]) == 1
    assert "deleted_rows" not in tables and "search_docs" not in tables

    for fmt in ("json", "yaml"):
        text = privacy.render(data, fmt)
        other_root = tmp_path / f"other-{fmt}"
        other_root.mkdir()
        with Store.init(other_root) as other:
            result = privacy.import_data(other, privacy.parse(text, fmt))
            assert result["inserted"]["memories"] == 3 and result["inserted"]["sessions"] == 2
            assert memory.find_related(other, ids["fix"], now=NOW)[0]["id"] == ids["bug"]
            assert memory.get(other, ids["other"], record_access=False)["explicit"] is True
            assert sessions.get(other, "s-1")["summary"]["overview"] == "Fixed large uploads"
            assert search.search(other, "413", record_access=False)[0]["id"] == ids["bug"]
            # Importing the same export again adds nothing.
            again = privacy.import_data(other, privacy.parse(text, fmt))
            assert again["inserted"] == {}


def test_export_of_one_session_holds_only_it_and_what_cites_it(store: Store) -> None:
    ids = _fill(store)
    data = privacy.export_data(store, session_id="s-1")
    tables = data["tables"]
    assert [row["id"] for row in tables["sessions"]] == ["s-1"]
    assert {row["id"] for row in tables["memories"]} == {ids["bug"], ids["fix"]}
    assert len(tables["session_turns"]) == 1
    assert "gotchas" not in tables
    from memory_core.errors import NotFoundError

    with pytest.raises(NotFoundError):
        privacy.export_data(store, session_id="no-such-session")


def test_markdown_export_is_readable(store: Store) -> None:
    ids = _fill(store)
    text = privacy.render(privacy.export_data(store), "md")
    assert text.startswith("# engram export: everything")
    assert f"**{ids['bug']}** finding `uploads`: Uploads over 2 GB fail with a 413" in text
    assert f"- {ids['fix']} resolves {ids['bug']}" in text
    assert (
        "### nginx client_max_body_size" in " ".join(text.split("\n"))
        or "nginx client_max_body_size" in text
    )
    assert "Fixed large uploads" in text and "- stream in chunks" in text


def test_import_refuses_what_is_not_an_export(store: Store) -> None:
    with pytest.raises(UsageError, match="not valid json"):
        privacy.parse("{nope", "json")
    with pytest.raises(UsageError, match="not an engram export"):
        privacy.parse(json.dumps({"tables": {}}), "json")
    with pytest.raises(UsageError, match="format version 99"):
        privacy.parse(
            json.dumps({"format": "engram-export", "format_version": 99, "tables": {}}), "json"
        )
    with pytest.raises(UsageError, match="not valid yaml"):
        privacy.parse("a: [unclosed", "yaml")
    with pytest.raises(UsageError, match="not a list"):
        privacy.import_data(store, {"format": "engram-export", "tables": {"memories": "x"}})
    assert memory.list_memories(store) == []


def test_anonymize_replaces_every_name_and_keeps_relations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", "alicew")
    workspace = tmp_path / "acme-payments"
    workspace.mkdir()
    store = Store.init(workspace)
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text(
        "[user]\n\tname = Alice Wonder\n\temail = alice.wonder@corp.example.com\n"
    )
    ids = _fill(store)
    memory.add(
        store,
        f"Alice Wonder (alice.wonder@corp.example.com) keeps the scripts in /home/alicew/src/{workspace.name}; "
        "ask bob.builder@corp.example.com, files under /Users/bobb/notes",
        type="project",
        relations=[("influenced", ids["bug"])],
        provenance={"by": "alicew", "cwd": str(workspace)},
        now=NOW,
    )
    data = privacy.export_data(store)
    anonymized, mapping = privacy.anonymize(data, privacy.identities(store, extra=["Wonder Corp"]))
    text = json.dumps(anonymized)
    originals = [
        "alicew",
        "Alice Wonder",
        "alice.wonder@corp.example.com",
        "bob.builder@corp.example.com",
        "bobb",
        str(workspace),
        workspace.name,
    ]
    for original in originals:
        assert original not in text, original
        assert original in mapping
    # Stable placeholders: the same name gets the same placeholder everywhere.
    note = next(r for r in anonymized["tables"]["memories"] if r["type"] == "project")
    assert mapping["alicew"] in note["content"] and mapping["alicew"] in note["provenance"]
    # Structure and relations survive: same ids, same links, same types, valid to import.
    assert {r["id"] for r in anonymized["tables"]["memories"]} == {
        r["id"] for r in data["tables"]["memories"]
    }
    assert anonymized["tables"]["memory_relations"] == data["tables"]["memory_relations"]
    assert [r["type"] for r in anonymized["tables"]["memories"]] == [
        r["type"] for r in data["tables"]["memories"]
    ]
    mapping_again = privacy.anonymize(data, privacy.identities(store, extra=["Wonder Corp"]))[1]
    assert mapping_again == mapping
    store.close()


def test_anonymize_in_place_rewrites_the_store_file(
    store: Store, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", "carolq")
    memory.add(store, "carolq wrote this; mail carol@corp.example.com", now=NOW)
    result = privacy.anonymize_store(store)
    assert result["replaced"] >= 1
    blob = (workspace / ".engram" / "engram.db").read_bytes()
    assert b"carolq" not in blob and b"carol@corp.example.com" not in blob
    assert "USER_" in memory.list_memories(store)[0]["content"]


def test_cli_export_import_anonymize(cli, workspace: Path, tmp_path: Path) -> None:
    entry = cli(
        "memory", "add", "We ship on Tuesdays", "--type", "decision", "--json", cwd=workspace
    ).json()
    out = tmp_path / "export.yaml"
    result = cli("export", "--format", "yaml", "--out", str(out), cwd=workspace)
    assert result.code == 0, result.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert yaml.safe_load(out.read_text())["tables"]["memories"][0]["id"] == entry["id"]
    printed = cli("export", cwd=workspace)
    assert json.loads(printed.stdout)["tables"]["memories"][0]["content"] == "We ship on Tuesdays"
    assert "# engram export" in cli("export", "--format", "md", cwd=workspace).stdout

    other = tmp_path / "other"
    other.mkdir()
    imported = cli("import", str(out), "--json", cwd=other)
    assert imported.code == 0, imported.stderr
    assert imported.json()["inserted"]["memories"] == 1
    assert cli("memory", "show", entry["id"], cwd=other).code == 0
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    bad = cli("import", str(broken), cwd=other)
    assert bad.code == 2 and "not valid json" in bad.stderr and "Traceback" not in bad.stderr
    missing = cli("import", str(tmp_path / "missing.json"), cwd=other)
    assert missing.code == 2

    anon = cli("anonymize", "--name", "Tuesdays", cwd=workspace)
    assert anon.code == 0 and "Tuesdays" not in anon.stdout and "NAME_1" in anon.stdout
    refused = cli("anonymize", "--in-place", cwd=workspace)
    assert refused.code == 2 and "not confirmed" in refused.stderr
