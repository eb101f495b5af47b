"""Saved sessions as a user handles them: save (the latest by default, five versions kept),
load and resume, export to a file and import it elsewhere, documents of older engrams and of
beans, and clear refusals of what cannot be read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core import events, sessions
from memory_core.errors import EngramError, NotFoundError, UsageError
from memory_core.store import Store

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z
TOKEN = "ghp_" + "Q1w2E3r4T5" * 3 + "yuiop6"
SEED_EXAMPLE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "seeds" / "beans-session-example.json"
)


def _recorded(store: Store, sid: str = "S-doc") -> str:
    sessions.start(store, session_id=sid, agent="claude-code", now=T0)
    sessions.record_turn(
        store,
        sid,
        user_message="first ask",
        assistant_response="first answer",
        tool_calls=[
            {"tool": "Edit", "ok": True, "summary": "src/a.py"},
            {"tool": "Bash", "ok": False},
        ],
        input_tokens=10,
        output_tokens=5,
        started_at=T0 + 1,
        ended_at=T0 + 2,
    )
    sessions.record_turn(store, sid, user_message="second ask", started_at=T0 + 3, ended_at=T0 + 4)
    sessions.record_file_modified(store, sid, "src/a.py", ts=T0 + 5)
    sessions.record_file_modified(store, sid, "src/a.py", ts=T0 + 6)
    sessions.record_command(store, sid, "make", exit_code=2, ts=T0 + 7)
    sessions.set_summary(store, sid, overview="Made a.", decisions=["use make"], tags=["build"])
    return sid


def _saved_count(store: Store, sid: str) -> int:
    row = store.query_one("SELECT COUNT(*) FROM saved_sessions WHERE session_id = ?", (sid,))
    assert row is not None
    return int(row[0])


def test_save_without_a_session_saves_the_latest_one(store: Store) -> None:
    sessions.start(store, session_id="S-old", now=T0)
    sessions.start(store, session_id="S-new", now=T0 + 10)
    saved = sessions.save(store, now=T0 + 20)
    assert saved["id"] == "S-new"
    assert saved["saved_at"] == "2023-11-14T22:13:40Z"
    assert saved["format_version"] == sessions.FORMAT_VERSION
    assert saved["bytes"] > 0
    assert [s["id"] for s in sessions.list_sessions(store)] == ["S-new", "S-old"]


def test_save_with_no_session_at_all_starts_one_for_the_editor(store: Store) -> None:
    saved = sessions.save(store, agent="editor", now=T0)
    assert saved["agent"] == "editor"
    assert [s["id"] for s in sessions.list_sessions(store)] == [saved["id"]]
    assert _saved_count(store, saved["id"]) == 1


def test_only_the_five_newest_saved_versions_are_kept(store: Store) -> None:
    sid = _recorded(store)
    for n in range(7):
        sessions.save(store, sid, now=T0 + 100 + n)
    kept = store.query(
        "SELECT saved_at FROM saved_sessions WHERE session_id = ? ORDER BY saved_at", (sid,)
    )
    assert [row[0] for row in kept] == [T0 + 102, T0 + 103, T0 + 104, T0 + 105, T0 + 106]


def test_a_saved_version_keeps_the_sessions_name(store: Store) -> None:
    sid = _recorded(store)
    sessions.save(store, sid, name="  login fix  ", now=T0 + 100)
    sessions.save(store, sid, now=T0 + 200)  # no name given: the session's name is kept
    names = store.query(
        "SELECT name FROM saved_sessions WHERE session_id = ? ORDER BY saved_at", (sid,)
    )
    assert [row[0] for row in names] == ["login fix", "login fix"]
    with pytest.raises(UsageError) as empty:
        sessions.save(store, sid, name="   ")
    assert empty.value.one_line() == "a session name cannot be empty"
    assert [e.data for e in events.recent(store, kind="session.saved")] == [
        {"name": None},
        {"name": "login fix"},
    ]


def test_a_session_restored_from_its_save_goes_on_numbering_its_turns(store: Store) -> None:
    sid = _recorded(store)
    sessions.save(store, sid, name="keep", now=T0 + 100)
    with store.transaction() as db:
        db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
    loaded = sessions.load(store, "keep", now=T0 + 200)
    assert [t["seq"] for t in loaded["turns"]] == [1, 2]
    assert loaded["turns"][0]["tool_calls"] == [
        {"tool": "Edit", "ok": True, "summary": "src/a.py"},
        {"tool": "Bash", "ok": False},
    ]
    assert loaded["files"] == ["src/a.py"]
    assert sessions.record_turn(store, sid, user_message="third ask", started_at=T0 + 300) == 3
    numbers = sessions.metrics(store, sid)
    assert sessions.failed_commands(store, sid) == [
        {"command": "make", "exit_code": 2, "at": "2023-11-14T22:13:27Z"}
    ]
    assert (numbers["tool_calls"], numbers["tool_calls_failed"]) == (2, 1)
    assert (numbers["commands"], numbers["commands_failed"]) == (1, 1)
    assert (numbers["input_tokens"], numbers["output_tokens"]) == (10, 5)
    restored = store.query_one(
        "SELECT first_ts, last_ts, changes FROM session_files WHERE session_id = ?", (sid,)
    )
    assert restored is not None and tuple(restored) == (T0 + 5, T0 + 6, 2)
    summary = sessions.get(store, sid)["summary"]
    assert (summary["overview"], summary["decisions"], summary["tags"]) == (
        "Made a.",
        ["use make"],
        ["build"],
    )


def test_loading_a_live_session_shows_it_as_it_is_now(store: Store) -> None:
    sid = _recorded(store)
    sessions.save(store, sid, now=T0 + 100)
    sessions.record_turn(store, sid, user_message="after the save", started_at=T0 + 150)
    loaded = sessions.load(store, sid, now=T0 + 200, history_limit=1)
    assert [t["user_message"] for t in loaded["turns"]] == ["after the save"]
    assert loaded["session"]["turns"] == 3


def test_loading_an_unknown_name_says_where_to_look(store: Store) -> None:
    with pytest.raises(NotFoundError) as missing:
        sessions.load(store, "nothing-here")
    assert missing.value.one_line() == (
        "no saved session 'nothing-here' (see `engram session list`)"
    )


def test_a_save_written_by_an_earlier_engram_without_compression_loads(store: Store) -> None:
    sid = _recorded(store)
    doc = sessions.export_document(store, sid)
    with store.transaction() as db:
        db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
        db.execute(
            "INSERT INTO saved_sessions (session_id, name, format_version, saved_at, payload, size) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (sid, "plain", 2, T0 + 100, json.dumps(doc).encode(), 0),
        )
    loaded = sessions.load(store, "plain")
    assert [t["user_message"] for t in loaded["turns"]] == ["first ask", "second ask"]


def test_load_takes_an_exported_file_by_its_path(store: Store, tmp_path: Path) -> None:
    with Store.init(tmp_path / "elsewhere") as other:
        sid = _recorded(other)
        path = tmp_path / "session.json"
        path.write_text(json.dumps(sessions.export_document(other, sid)))
    loaded = sessions.load(store, str(path), now=T0 + 100)
    assert loaded["session"]["id"] == sid
    assert loaded["session"]["age_state"] == "fresh"
    assert [t["user_message"] for t in loaded["turns"]] == ["first ask", "second ask"]


def test_resume_reopens_a_closed_session(store: Store) -> None:
    sid = _recorded(store)
    sessions.close(store, sid, now=T0 + 50)
    resumed = sessions.resume(store, sid, now=T0 + 500)
    session = resumed["session"]
    assert (session["status"], session["ended_at"], session["end_reason"]) == ("active", None, None)
    assert session["last_action"] == "resume"
    assert session["last_activity_at"] == "2023-11-14T22:21:40Z"
    assert [t["seq"] for t in resumed["turns"]] == [1, 2]


def test_an_import_from_elsewhere_is_redacted_again(store: Store) -> None:
    doc: dict[str, Any] = {
        "version": 2,
        "session": {
            "id": "S-foreign",
            "agent": "claude-code",
            "status": "active",
            "started_at": T0,
            "rolling_summary": f"pushed with {TOKEN}",
            "overview": f"token {TOKEN}",
            "decisions": [f"rotate {TOKEN}"],
        },
        "turns": [
            {
                "user_message": f"use {TOKEN}",
                "assistant_response": f"ok {TOKEN}",
                "tool_calls": [{"tool": "Bash", "ok": True, "summary": f"curl {TOKEN}"}],
            }
        ],
        "toolCalls": [{"tool": "Bash", "ok": True, "summary": f"curl {TOKEN}"}],
        "files": [{"path": f"/tmp/{TOKEN}.txt", "outside": 1}],
        "commands": [{"command": f"git push https://{TOKEN}@github.com/x", "exit_code": 0}],
    }
    doc["session"]["name"] = f"deploy {TOKEN}"
    doc["session"]["search_footprint"] = [f"find {TOKEN}"]
    sessions.import_document(store, doc)
    stored = json.dumps(sessions.export_document(store, "S-foreign"))
    assert TOKEN not in stored
    assert stored.count("[REDACTED:github-token]") == 11
    assert sessions.files_outside(store, "S-foreign") == ["/tmp/[REDACTED:github-token].txt"]
    assert sessions.get(store, "S-foreign")["status"] == "active"


def test_an_import_whose_name_is_taken_here_keeps_its_id(store: Store) -> None:
    sessions.start(store, session_id="S-here", name="shared", now=T0)
    sessions.import_document(
        store, {"version": 2, "session": {"id": "S-there", "name": "shared"}, "turns": []}
    )
    assert sessions.get(store, "shared")["id"] == "S-here"
    assert sessions.get(store, "S-there")["name"] is None


def test_import_with_replace_overwrites_the_session(store: Store) -> None:
    sid = _recorded(store)
    doc = sessions.export_document(store, sid)
    doc["turns"] = doc["turns"][:1]
    with pytest.raises(EngramError, match="already exists"):
        sessions.import_document(store, doc)
    imported = sessions.import_document(store, doc, replace=True)
    assert [t["user_message"] for t in imported["turns"]] == ["first ask"]
    assert sessions.metrics(store, sid)["turns"] == 1


def test_the_beans_example_imports_with_its_counts_recomputed(store: Store) -> None:
    imported = sessions.import_file(store, SEED_EXAMPLE, now=T0)
    session = imported["session"]
    assert (session["id"], session["started_at"]) == ("uuid-here", "2024-01-15T10:30:00Z")
    assert session["status"] == "closed"
    [turn] = imported["turns"]
    assert (turn["user_message"], turn["assistant_response"]) == (
        "Fix the bug",
        "I found the issue...",
    )
    assert (turn["input_tokens"], turn["output_tokens"]) == (500, 200)
    assert imported["files"] == ["src/main.ts"]
    assert sessions.export_document(store, "uuid-here")["files"][0]["changes"] == 1
    numbers = sessions.metrics(store, "uuid-here")
    assert (numbers["turns"], numbers["total_tokens"], numbers["commands"]) == (1, 700, 0)


def test_a_version_1_document_keeps_its_order_state_and_summary(store: Store) -> None:
    old = {
        "version": 1,
        "session": {
            "sessionId": "legacy-3",
            "status": "active",
            "startedAt": "2023-11-14T22:00:00Z",
            "lastActivityAt": "2023-11-14T23:00:00Z",
            "endedAt": "2023-11-14T23:30:00Z",
            "summary": {
                "decisions": ["keep it"],
                "outcomes": ["it works"],
                "openItems": ["docs"],
                "tags": ["t"],
            },
        },
        "turns": [
            {
                "turnNumber": 2,
                "user": "second",
                "assistant": "two",
                "tokens": {"input": 3},
                "toolCalls": [{"tool": "Edit", "ok": True}],
            },
            {"turnNumber": 1, "userMessage": "first", "assistantResponse": "one", "tokens": {}},
        ],
    }
    sessions.import_document(store, old)
    session = sessions.get(store, "legacy-3")
    assert session["status"] == "active"
    assert (session["last_activity_at"], session["ended_at"]) == (
        "2023-11-14T23:00:00Z",
        "2023-11-14T23:30:00Z",
    )
    assert session["summary"]["decisions"] == ["keep it"]
    assert session["summary"]["outcomes"] == ["it works"]
    assert session["summary"]["open_items"] == ["docs"]
    turns = sessions.history(store, "legacy-3")
    assert [(t["seq"], t["user_message"], t["assistant_response"]) for t in turns] == [
        (1, "first", "one"),
        (2, "second", "two"),
    ]
    assert [(t["input_tokens"], t["output_tokens"]) for t in turns] == [(0, 0), (3, 0)]
    assert [t["tool_calls"] for t in turns] == [[], [{"tool": "Edit", "ok": True}]]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "not a saved engram session"),
        ({"turns": []}, "not a saved engram session"),
        ({"version": 2, "session": {"name": "x"}}, "has no `session.id`"),
        ({"version": 2, "session": {"id": ""}}, "has no `session.id`"),
        ({"version": 2, "session": {"id": "a"}, "turns": {"seq": 1}}, "must be a list of objects"),
        ({"version": 2, "session": {"id": "a"}, "turns": ["hello"]}, "must be a list of objects"),
        ({"version": 1, "session": {"id": "a"}, "turns": ["hello"]}, "must be a list of objects"),
        ({"version": "two", "session": {"id": "a"}}, "unreadable version 'two'"),
        ({"version": True, "session": {"id": "a"}}, "unreadable version True"),
        ({"version": None, "session": {"id": "a"}}, "unreadable version None"),
    ],
)
def test_a_document_that_is_not_a_session_is_refused_clearly(
    store: Store, raw: Any, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        sessions.import_document(store, raw)
    assert sessions.list_sessions(store) == []


def test_a_version_written_as_text_is_read_by_its_major_number(store: Store) -> None:
    doc = sessions.parse_document({"version": "2.3", "session": {"id": "a"}, "turns": []})
    assert doc["version"] == sessions.FORMAT_VERSION
    with pytest.raises(EngramError) as newer:
        sessions.parse_document({"version": "3.0", "session": {"id": "a"}})
    assert newer.value.one_line() == (
        "this saved session has format version 3, written by a newer engram (this one reads "
        f"versions 1 to {sessions.FORMAT_VERSION}) (upgrade engram to load it; nothing was changed)"
    )


def test_importing_a_file_that_is_missing_or_not_json_says_so(store: Store, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as missing:
        sessions.import_file(store, tmp_path / "missing.json")
    assert missing.value.one_line() == f"no such file {str(tmp_path / 'missing.json')!r}"
    bad = tmp_path / "bad.json"
    bad.write_text('{"toolCalls": [1, 2')
    with pytest.raises(UsageError, match="is not JSON"):
        sessions.import_file(store, bad)
    # A documentation placeholder is not a broken file: it reads as empty.
    placeholder = tmp_path / "placeholder.json"
    placeholder.write_text('{"toolCalls": [...]}')
    with pytest.raises(UsageError, match="not a saved engram session"):
        sessions.import_file(store, placeholder)
    assert sessions.list_sessions(store) == []


def test_an_export_holds_every_record_of_the_session(store: Store) -> None:
    sid = _recorded(store)
    doc = sessions.export_document(store, "S-doc", now=T0 + 100)
    assert doc["version"] == sessions.FORMAT_VERSION
    assert doc["savedAt"] == "2023-11-14T22:15:00Z"
    assert doc["workspace"] == {"root": str(store.root), "name": store.root.name}
    assert doc["session"]["id"] == sid and doc["session"]["decisions"] == ["use make"]
    assert [t["seq"] for t in doc["turns"]] == [1, 2]
    assert [(c["tool"], c["ok"]) for c in doc["toolCalls"]] == [("Edit", 1), ("Bash", 0)]
    assert doc["files"] == [
        {"path": "src/a.py", "first_ts": T0 + 5, "last_ts": T0 + 6, "changes": 2, "outside": 0}
    ]
    assert doc["commands"] == [{"command": "make", "exit_code": 2, "ts": T0 + 7, "failed": 1}]


def test_an_import_over_an_existing_session_says_how_to_proceed(store: Store) -> None:
    sid = _recorded(store)
    with pytest.raises(EngramError) as exists:
        sessions.import_document(store, sessions.export_document(store, sid))
    assert exists.value.one_line() == (
        "session S-doc already exists here (delete it first or import with --replace)"
    )


def test_an_import_shows_the_last_20_turns(store: Store) -> None:
    doc = {
        "version": 2,
        "session": {"id": "S-long"},
        "turns": [{"user_message": f"ask {n}"} for n in range(1, 26)],
    }
    imported = sessions.import_document(store, doc)
    assert [t["seq"] for t in imported["turns"]] == list(range(6, 26))
    assert sessions.metrics(store, "S-long")["turns"] == 25


def test_a_version_1_document_with_records_of_its_files_keeps_them(store: Store) -> None:
    old = {
        "version": 1,
        "session": {"sessionId": "legacy-f", "modifiedFiles": ["only/a/name.py"]},
        "turns": [],
        "files": [{"path": "src/kept.py", "first_ts": T0, "last_ts": T0 + 5, "changes": 3}],
    }
    imported = sessions.import_document(store, old, now=T0)
    assert imported["files"] == ["src/kept.py"]
    session = imported["session"]
    # What version 1 left out takes the defaults of a session.
    assert (session["agent"], session["session_type"], session["status"]) == (
        "editor",
        "new",
        "closed",
    )


def test_the_search_footprint_survives_a_save_and_restore(store: Store) -> None:
    sid = _recorded(store)
    sessions.record_search(store, sid, "cookie handling", ts=T0 + 8)
    sessions.save(store, sid, name="searched", now=T0 + 100)
    with store.transaction() as db:
        db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
    loaded = sessions.load(store, "searched", now=T0 + 200)
    assert loaded["session"]["search_footprint"] == ["cookie handling"]
    # Aged at the time given, not by the machine's clock.
    assert loaded["session"]["age_state"] == "fresh"


def test_the_note_path_is_where_the_note_is_written(store: Store) -> None:
    sid = _recorded(store)
    written = sessions.write_export(store, sid)
    assert sessions.export_path(store, sessions.get(store, sid)) == written
    assert written == store.dir / "exports" / "sessions" / "2023-11-14_S-doc.md"


@pytest.mark.parametrize("ref", ["newer", "S-future-1", "S-futu"])
def test_a_save_from_a_newer_engram_is_refused_however_the_session_is_named(
    store: Store, ref: str
) -> None:
    sessions.start(store, session_id="S-future-1", now=T0)
    sessions.save(store, "S-future-1", name="newer", now=T0 + 1)
    with store.transaction() as db:
        db.execute("UPDATE saved_sessions SET format_version = ?", (sessions.FORMAT_VERSION + 1,))
    with pytest.raises(EngramError, match="newer engram"):
        sessions.load(store, ref)


def test_an_exported_session_imported_elsewhere_exports_the_same(
    store: Store, tmp_path: Path
) -> None:
    sid = _recorded(store)
    sessions.record_turn(
        store, sid, user_message="tools only", assistant_response="", started_at=T0 + 8
    )
    sessions.record_turn(store, sid, user_message="", assistant_response="ok", started_at=T0 + 9)
    sessions.record_tool_call(store, sid, tool="Read", ok=True, ts=T0 + 9)
    sessions.record_file_modified(
        store, sid, "/home/u/.claude/plans/p.md", ts=T0 + 10, outside=True
    )
    sessions.record_command(store, sid, "blocked by a hook", failed=True, ts=T0 + 11)
    sessions.record_command(store, sid, "grep nothing", exit_code=1, failed=False, ts=T0 + 12)
    sessions.record_search(store, sid, "cookie", ts=T0 + 13)
    sessions.append_rolling_summary(store, sid, "Went on.", now=T0 + 14)
    sessions.save(store, sid, name="trip", now=T0 + 15)
    sessions.close(store, sid, reason="abort", now=T0 + 16)
    exported = sessions.export_document(store, sid, now=T0 + 100)
    with Store.init(tmp_path / "elsewhere") as other:
        sessions.import_document(other, exported)
        again = sessions.export_document(other, sid, now=T0 + 100)
        assert sessions.files_outside(other, sid) == ["/home/u/.claude/plans/p.md"]
        assert sessions.metrics(other, sid) == sessions.metrics(store, sid)
        assert sessions.summary_markdown(other, sid) == sessions.summary_markdown(store, sid)
    kept = (
        "id", "name", "agent", "session_type", "status", "last_action", "end_reason",
        "started_at", "last_activity_at", "ended_at", "saved_at", "rolling_summary", "overview",
        "decisions", "outcomes", "open_items", "tags", "summary_source", "search_footprint",
        "turn_count", "input_tokens", "output_tokens",
    )  # fmt: skip
    assert {k: again["session"][k] for k in kept} == {k: exported["session"][k] for k in kept}
    for records in ("turns", "toolCalls", "files", "commands", "metrics"):
        assert again[records] == exported[records], records


def test_a_restored_active_session_that_went_silent_is_found_crashed(store: Store) -> None:
    doc = {
        "version": 2,
        "session": {
            "id": "S-silent",
            "status": "active",
            "last_action": "turn",
            "started_at": T0,
            "last_activity_at": T0 + 10,
        },
        "turns": [],
        "toolCalls": [{"ok": False}, {"tool": "Read"}],
    }
    sessions.import_document(store, doc)
    assert [s["id"] for s in sessions.crashed(store, now=T0 + 3600)] == ["S-silent"]
    calls = sessions.export_document(store, "S-silent")["toolCalls"]
    # A call without a name is "unknown"; one without an outcome succeeded.
    assert [(c["tool"], c["ok"]) for c in calls] == [("unknown", 0), ("Read", 1)]


def test_the_document_of_an_unknown_session_is_a_clear_error(store: Store) -> None:
    with pytest.raises(NotFoundError) as missing:
        sessions.document(store, "S-none")
    assert missing.value.one_line() == "no session 'S-none' (see `engram session list`)"


def test_importing_a_file_with_replace_overwrites(store: Store, tmp_path: Path) -> None:
    sid = _recorded(store)
    doc = sessions.export_document(store, sid)
    doc["turns"] = doc["turns"][1:]
    path = tmp_path / "one-turn.json"
    path.write_text(json.dumps(doc))
    imported = sessions.import_file(store, path, replace=True)
    assert [t["user_message"] for t in imported["turns"]] == ["second ask"]


def test_a_document_without_a_version_is_read_as_the_first_one(store: Store) -> None:
    sessions.import_document(
        store, {"session": {"sessionId": "S-unversioned", "startedAt": "2023-11-14T22:00:00Z"}}
    )
    assert sessions.get(store, "S-unversioned")["started_at"] == "2023-11-14T22:00:00Z"


def test_a_save_is_on_the_timeline_at_the_time_it_was_made(store: Store) -> None:
    sid = _recorded(store)
    sessions.save(store, sid, now=T0 + 100)
    [event] = events.recent(store, kind="session.saved")
    assert (event.session_id, event.ts) == (sid, T0 + 100)


def test_placeholders_are_read_as_empty_only_outside_strings() -> None:
    from memory_core.sessions.document import fill_placeholders

    text = '{"a": [...], "b": {...}, "c": "keep [...] and {...} in text", "d": "\\"[...]\\"", "e": [ ... ]}'
    filled, count = fill_placeholders(text)
    assert count == 3
    assert json.loads(filled) == {
        "a": [],
        "b": {},
        "c": "keep [...] and {...} in text",
        "d": '"[...]"',
        "e": [],
    }
    assert fill_placeholders('{"a": [1, 2]}') == ('{"a": [1, 2]}', 0)


def test_a_beans_file_of_another_major_version_is_refused_naming_both(store: Store) -> None:
    beans = json.loads(SEED_EXAMPLE.read_text(encoding="utf-8"))
    with pytest.raises(EngramError) as newer:
        sessions.import_document(store, {**beans, "version": "2.0"})
    assert newer.value.one_line() == (
        "this beans session file has version 2.0; this engram reads beans session files of"
        " version 1.x (export it again from a beans that writes version 1.x; nothing was changed)"
    )
    assert sessions.list_sessions(store) == []
    # A later minor version of the same major is read.
    assert sessions.import_document(store, {**beans, "version": "1.4"})["session"]["id"] == (
        "uuid-here"
    )


def test_an_import_from_another_workspace_says_its_files_are_read_as_this_ones(
    store: Store, tmp_path: Path
) -> None:
    other_root = tmp_path / "elsewhere"
    other_root.mkdir()
    other = Store.init(other_root)
    try:
        sid = _recorded(other)
        exported = sessions.export_document(other, sid)
    finally:
        other.close()
    imported = sessions.import_document(store, exported)
    assert imported["notes"] == [
        f"the session was recorded in {other_root}; it is imported into this workspace"
        f" ({store.root}), and its files are read as this workspace's"
    ]
    # Imported back where it was recorded: nothing to say.
    again = Store.open(other_root)
    try:
        assert sessions.import_document(again, exported, replace=True)["notes"] == []
    finally:
        again.close()
