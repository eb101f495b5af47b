"""The session vault (issue 31): where notes go, the transcript backup at its quota edge and
size cap, redaction that keeps JSON lines JSON, and the start-of-session reminder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import session_vault, sessions
from memory_core.store import Store

T0 = 1_790_000_000.0
DAY = 86400.0


def test_notes_go_to_the_stores_exports_unless_a_vault_is_named(
    store: Store, workspace: Path, tmp_path: Path
) -> None:
    assert session_vault.vault_dir(store, {}) == store.dir / "exports"
    assert session_vault.vault_dir(store, {"sessions.vault_dir": "  "}) == store.dir / "exports"
    elsewhere = tmp_path / "obsidian"
    assert session_vault.vault_dir(store, {"sessions.vault_dir": str(elsewhere)}) == elsewhere
    assert (
        session_vault.vault_dir(store, {"sessions.vault_dir": "notes/vault"})
        == workspace / "notes" / "vault"
    )
    assert session_vault.vault_dir(store) == store.dir / "exports"  # read from the settings


def test_a_relative_vault_leaving_the_workspace_is_refused_and_logged(
    store: Store, workspace: Path
) -> None:
    found = session_vault.vault_dir(store, {"sessions.vault_dir": "../elsewhere"})
    assert found == store.dir / "exports"
    log = (store.dir / "engram.log").read_text(encoding="utf-8")
    assert "sessions.vault_dir '../elsewhere' leaves the workspace; using .engram/exports" in log


def test_a_note_is_named_by_its_date_and_id_made_safe(store: Store, tmp_path: Path) -> None:
    session = {"id": "abc/../x", "started_at": "2026-09-21T14:13:20Z"}
    path = session_vault.note_path(store, session, tmp_path)
    assert path.parent == tmp_path / "sessions"
    assert path.name.startswith("2026-09-21_abc_.._x-") and path.name.endswith(".md")
    plain = session_vault.note_path(store, {"id": "s1", "started_at": "2026-09-21"}, tmp_path)
    assert plain.name == "2026-09-21_s1.md"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (3, "3"),
        (0.5, "0.5"),
        ("a: b", '"a: b"'),
        ("café", '"café"'),
    ],
)
def test_frontmatter_values_are_valid_yaml_scalars(value: object, text: str) -> None:
    assert session_vault._yaml_scalar(value) == text


@pytest.mark.parametrize("key", ["overview", "decisions", "outcomes", "open_items"])
def test_any_written_part_counts_as_a_summary(key: str) -> None:
    empty = {"overview": None, "decisions": [], "outcomes": [], "open_items": []}
    assert not session_vault.has_summary(empty)
    assert session_vault.has_summary({**empty, key: "x" if key == "overview" else ["x"]})


def _transcript(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_transcript_backup_is_redacted_compressed_and_reads_back(
    store: Store, tmp_path: Path
) -> None:
    sessions.start(store, session_id="s1", now=T0)
    secret = "AKIAIOSFODNN7EXAMPLE"
    transcript = _transcript(
        tmp_path, [json.dumps({"text": f"key {secret}"}), "plain text line", "{}"]
    )
    done = session_vault.backup_transcript(store, "s1", transcript, settings={})
    assert done["original_bytes"] == transcript.stat().st_size
    path = Path(done["path"])
    assert path == store.dir / "exports" / ".projecthub" / "transcripts" / "s1.jsonl.zst"
    assert path.stat().st_size == done["bytes"]
    lines = session_vault.read_backup(path).decode("utf-8").splitlines()
    assert json.loads(lines[0]) == {"text": "key [REDACTED:aws-access-key]"}
    assert lines[1:] == ["plain text line", "{}"]


def test_a_backup_can_be_turned_off(store: Store, tmp_path: Path) -> None:
    transcript = _transcript(tmp_path, ["{}"])
    done = session_vault.backup_transcript(
        store, "s1", transcript, settings={"sessions.backup_transcripts": False}
    )
    assert done == {"skipped": "sessions.backup_transcripts is off"}


def test_a_missing_transcript_is_skipped_with_why(store: Store, tmp_path: Path) -> None:
    done = session_vault.backup_transcript(store, "s1", tmp_path / "gone.jsonl", settings={})
    assert done["skipped"].startswith(f"cannot read {tmp_path / 'gone.jsonl'}: ")


def test_a_transcript_over_the_cap_is_not_backed_up(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = _transcript(tmp_path, ["x" * 99])  # 100 bytes with its newline
    monkeypatch.setattr(session_vault, "BACKUP_MAX_BYTES", 100)
    assert "path" in session_vault.backup_transcript(store, "s1", transcript, settings={})
    monkeypatch.setattr(session_vault, "BACKUP_MAX_BYTES", 99)
    done = session_vault.backup_transcript(store, "s1", transcript, settings={})
    assert done == {"skipped": "transcript is 100 bytes, over 99"}


def test_the_backup_fits_the_session_quota_exactly_or_is_skipped(
    store: Store, tmp_path: Path
) -> None:
    sessions.start(store, session_id="s1", now=T0)
    with store.transaction() as db:
        db.execute("UPDATE sessions SET bytes_used = 1000 WHERE id = 's1'")
    transcript = _transcript(tmp_path, [json.dumps({"n": n}) for n in range(50)])
    size = session_vault.backup_transcript(store, "s1", transcript, quota_bytes=0, settings={})[
        "bytes"
    ]
    assert "path" in session_vault.backup_transcript(
        store, "s1", transcript, quota_bytes=1000 + size, settings={}
    )
    skipped = session_vault.backup_transcript(
        store, "s1", transcript, quota_bytes=1000 + size - 1, settings={}
    )
    assert skipped == {
        "skipped": f"the backup ({size} bytes) would take the session past its quota "
        f"(1000 of {1000 + size - 1} bytes used)"
    }
    from_settings = session_vault.backup_transcript(
        store, "s1", transcript, settings={"sessions.quota_bytes": 1000 + size - 1}
    )
    assert "skipped" in from_settings


def test_redaction_that_would_break_a_json_line_redacts_its_values_instead() -> None:
    line = json.dumps({"cmd": 'export TOKEN="ghp_' + "a" * 36 + '"'})
    out = session_vault._redacted_lines(line.encode() + b"\n\n")
    first = out.decode().splitlines()[0]
    assert "ghp_" not in first
    json.loads(first)
    assert session_vault._redacted_lines(b"") == b""
    assert session_vault._redacted_lines(b"caf\xe9") == "caf\ufffd\n".encode()


def test_removing_a_sessions_note_removes_its_note_and_backup(store: Store, tmp_path: Path) -> None:
    sessions.start(store, session_id="s1", now=T0)
    session = {"id": "s1", "started_at": "2026-09-21T14:13:20Z"}
    vault = store.dir / "exports"
    note = session_vault.note_path(store, session, vault)
    session_vault.write_view(note, "# note\n")
    assert note.read_text(encoding="utf-8") == "# note\n"
    assert note.stat().st_mode & 0o777 == 0o600
    session_vault.backup_transcript(store, "s1", _transcript(tmp_path, ["{}"]), settings={})
    backup = session_vault.backup_path(store, "s1", vault)
    assert backup.exists()
    session_vault.remove_note(store, session)
    assert not note.exists() and not backup.exists()
    session_vault.remove_note(store, session)  # nothing left: no error


def _turned(store: Store, sid: str, at: float, name: str | None = None) -> None:
    sessions.start(store, session_id=sid, name=name, now=at)
    sessions.record_turn(store, sid, user_message="hi", started_at=at, ended_at=at)


def test_the_reminder_names_the_sessions_without_a_summary(store: Store) -> None:
    assert session_vault.reminder(store, now=T0) == ""
    _turned(store, "s1", T0 - 100, name="first")
    assert session_vault.reminder(store, now=T0).startswith(
        "1 earlier session has no summary yet (first): run /session-summarize"
    )
    for n in range(2, 6):
        _turned(store, f"s{n}", T0 - 100 + n)
    text = session_vault.reminder(store, current="s5", now=T0)
    assert text.startswith("4 earlier sessions have no summary yet (s4, s3, s2 and 1 more): ")
    assert text.endswith(
        "(projecthub_session_list hasSummary=false, projecthub_session_transcript, "
        "projecthub_session_update_summary)."
    )


def test_a_summarised_session_or_one_without_turns_needs_no_reminder(store: Store) -> None:
    sessions.start(store, session_id="empty", now=T0)
    _turned(store, "done", T0)
    sessions.set_summary(store, "done", open_items=["later"])
    assert session_vault.reminder(store, now=T0 + 1) == ""
    assert session_vault.unsummarised(store, now=T0 + 1) == []


def test_sessions_older_than_thirty_days_are_no_longer_reminded(store: Store) -> None:
    _turned(store, "old", T0)
    assert session_vault.reminder(store, now=T0 + 30 * DAY) != ""
    assert session_vault.reminder(store, now=T0 + 30 * DAY + 1) == ""
    assert [r["id"] for r in session_vault.unsummarised(store, now=T0 + 30 * DAY)] == ["old"]


def _note_session(**summary: object) -> dict[str, object]:
    base = {"overview": None, "decisions": [], "outcomes": [], "open_items": [], "tags": []}
    base.update(summary)
    return {
        "id": "s1",
        "name": "cache work",
        "label": "cache work",
        "agent": "claude-code",
        "status": "closed",
        "session_type": "new",
        "started_at": "2026-09-21T14:13:20Z",
        "ended_at": "2026-09-21T15:00:00Z",
        "saved_at": None,
        "rolling_summary": "",
        "search_footprint": ["cache ttl"],
        "summary": base,
    }


NUMBERS = {
    "turns": 4,
    "total_tokens": 900,
    "files_modified": 2,
    "files_touched": 3,
    "success_rate": 0.75,
}


def test_a_note_has_the_frontmatter_the_seeds_sections_then_the_facts(store: Store) -> None:
    session = _note_session(
        overview="moved the cache",
        decisions=["use LRU"],
        outcomes=[],
        open_items=["tests"],
        tags=["perf work", "cache"],
    )
    facts = "# Summary\n\nignored\n\n## Metrics\n\n- turns: 4\n"
    text = session_vault.note_markdown(store, session, NUMBERS, facts, format_version=2)
    assert text == "\n".join(
        [
            "---",
            'session_id: "s1"',
            'name: "cache work"',
            f"project_dir: {json.dumps(str(store.root))}",
            'agent: "claude-code"',
            'status: "closed"',
            'session_type: "new"',
            'started_at: "2026-09-21T14:13:20Z"',
            'ended_at: "2026-09-21T15:00:00Z"',
            "saved_at: null",
            "turns: 4",
            "turn_count: 4",
            "total_tokens: 900",
            "files_modified: 2",
            "files_touched: 3",
            "success_rate: 0.75",
            "has_summary: true",
            "format_version: 2",
            'tags: ["perf work", "cache"]',
            "---",
            "",
            "# Session cache work",
            "",
            "## Summary",
            "",
            "### Overview",
            "",
            "moved the cache",
            "",
            "### Key Decisions",
            "",
            "- use LRU",
            "",
            "### Outcomes",
            "",
            "- none recorded",
            "",
            "### Open Items",
            "",
            "- tests",
            "",
            "### Tags",
            "",
            "#perf-work #cache",
            "",
            "## Rolling Summary",
            "",
            "_empty_",
            "",
            "## Decisions",
            "",
            "- use LRU",
            "",
            "## Search Footprint",
            "",
            "- `cache ttl`",
            "",
            "## Metrics",
            "",
            "- turns: 4",
            "",
        ]
    )


def test_a_note_without_a_summary_has_only_engrams_sections(store: Store) -> None:
    session = {**_note_session(), "search_footprint": [], "rolling_summary": "rolling text"}
    text = session_vault.note_markdown(
        store, session, NUMBERS, "no metrics here", format_version=2, decisions=["said in chat"]
    )
    assert "has_summary: false" in text and "tags: []" in text
    assert "## Summary" not in text
    assert "## Rolling Summary\n\nrolling text\n" in text
    assert "## Decisions\n\n- said in chat\n" in text
    assert text.endswith("## Search Footprint\n\n- none recorded\n")
    only_open = _note_session(open_items=["x"])
    written = session_vault.note_markdown(store, only_open, NUMBERS, "", format_version=2)
    assert "### Overview\n\n_not written_\n" in written and "### Tags\n\nnone\n" in written


def test_a_backup_goes_to_the_configured_vault_and_reads_the_settings_itself(
    store: Store, tmp_path: Path
) -> None:
    sessions.start(store, session_id="s1", now=T0)
    transcript = _transcript(tmp_path, ["{}"])
    vault = tmp_path / "vault"
    done = session_vault.backup_transcript(
        store, "s1", transcript, settings={"sessions.vault_dir": str(vault)}
    )
    assert Path(done["path"]) == vault / ".projecthub" / "transcripts" / "s1.jsonl.zst"
    (store.dir / "config.toml").write_text(f'[sessions]\nvault_dir = "{tmp_path / "v2"}"\n')
    read = session_vault.backup_transcript(store, "s1", transcript)
    assert Path(read["path"]).parent == tmp_path / "v2" / ".projecthub" / "transcripts"


def test_at_most_five_sessions_without_a_summary_are_listed_by_default(store: Store) -> None:
    for n in range(6):
        _turned(store, f"s{n}", T0 + n)
    assert [r["id"] for r in session_vault.unsummarised(store, now=T0 + 10)] == [
        "s5",
        "s4",
        "s3",
        "s2",
        "s1",
    ]
