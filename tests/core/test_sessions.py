"""Sessions: recording, summaries, metrics, lifecycle, crash recovery, save/load/versioning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import sessions
from memory_core.errors import EngramError, NotFoundError, UsageError
from memory_core.store import Store

T0 = 1_700_000_000.0


def _busy_session(store: Store, sid: str = "claude-1") -> str:
    sessions.start(store, session_id=sid, agent="claude-code", now=T0)
    sessions.record_turn(
        store,
        sid,
        user_message="Fix the flaky login test. My key is sk-ant-abcdefghijklmnopqrstuvwxyz012345",
        assistant_response="I changed the retry logic.",
        tool_calls=[
            {"tool": "Edit", "ok": True},
            {"name": "Bash", "success": False, "summary": "pytest"},
        ],
        input_tokens=1200,
        output_tokens=300,
        started_at=T0 + 10,
        ended_at=T0 + 60,
    )
    sessions.record_turn(
        store,
        sid,
        user_message="Now run the suite",
        input_tokens=800,
        output_tokens=100,
        started_at=T0 + 120,
        ended_at=T0 + 180,
    )
    sessions.record_tool_call(store, sid, tool="Read", ok=True, ts=T0 + 130)
    sessions.record_file_modified(store, sid, "src/login.py", ts=T0 + 40)
    sessions.record_file_modified(
        store, sid, str(store.root / "tests" / "test_login.py"), ts=T0 + 50
    )
    sessions.record_file_modified(store, sid, "src/login.py", ts=T0 + 70)
    sessions.record_command(store, sid, "pytest -q", exit_code=1, ts=T0 + 150)
    sessions.record_command(store, sid, "pytest -q tests/test_login.py", exit_code=0, ts=T0 + 170)
    return sid


def test_start_is_idempotent_and_reopens_a_closed_session(store: Store) -> None:
    first = sessions.start(store, session_id="abc", agent="claude-code", now=T0)
    again = sessions.start(store, session_id="abc", agent="claude-code", now=T0 + 5)
    assert first["id"] == again["id"] == "abc"
    assert len(sessions.list_sessions(store)) == 1
    sessions.close(store, "abc", now=T0 + 10)
    assert sessions.get(store, "abc")["status"] == "closed"
    assert sessions.start(store, session_id="abc", now=T0 + 20)["status"] == "active"


def test_unknown_session_type_is_refused(store: Store) -> None:
    with pytest.raises(UsageError):
        sessions.start(store, session_type="weird")


def test_metrics_cover_every_field_of_the_design(store: Store) -> None:
    sid = _busy_session(store)
    m = sessions.metrics(store, sid)
    assert m["turns"] == 2
    assert (m["input_tokens"], m["output_tokens"], m["total_tokens"]) == (2000, 400, 2400)
    assert m["avg_tokens_per_turn"] == 1200.0
    assert m["files_modified"] == 2
    assert (m["commands"], m["commands_failed"]) == (2, 1)
    assert (m["tool_calls"], m["tool_calls_succeeded"], m["tool_calls_failed"]) == (3, 2, 1)
    assert m["success_rate"] == pytest.approx(0.667)
    assert m["duration_seconds"] == pytest.approx(180.0)


def test_secrets_are_redacted_before_they_are_stored(store: Store) -> None:
    sid = _busy_session(store)
    turn = sessions.history(store, sid)[0]
    assert "sk-ant-" not in turn["user_message"]
    assert "[REDACTED" in turn["user_message"]


def test_history_returns_turns_in_order_and_the_last_n(store: Store) -> None:
    sid = _busy_session(store)
    assert [t["seq"] for t in sessions.history(store, sid)] == [1, 2]
    assert [t["user_message"] for t in sessions.history(store, sid, last=1)] == [
        "Now run the suite"
    ]
    assert sessions.history(store, sid)[0]["tool_calls"][1] == {
        "tool": "Bash",
        "ok": False,
        "summary": "pytest",
    }


def test_summary_from_facts_names_files_and_failed_commands(store: Store) -> None:
    sid = _busy_session(store)
    text = sessions.summary_markdown(store, sid)
    assert "## Overview" in text and "Fix the flaky login test" in text
    assert "`src/login.py`" in text and "`tests/test_login.py`" in text
    assert "## Commands that failed" in text and "`pytest -q` failed (last exit 1" in text
    assert "| success rate | 67% |" in text


def test_a_command_that_failed_again_and_again_is_one_open_item(store: Store) -> None:
    sid = sessions.start(store, agent="claude-code", now=1000.0)["id"]
    for attempt in range(3):
        sessions.record_command(
            store, sid, "pytest -q tests/test_billing.py", exit_code=1, ts=1001.0 + attempt
        )
    sessions.record_command(store, sid, "ruff check .", exit_code=2, ts=1010.0)
    text = sessions.summary_markdown(store, sid, now=1020.0)
    open_items = text.split("## Open items")[1].split("##")[0]
    assert open_items.count("tests/test_billing.py") == 1
    assert "`pytest -q tests/test_billing.py` failed 3 times (last exit 1" in open_items
    assert "`ruff check .` failed (last exit 2" in open_items


def test_agent_summary_is_shown_and_lists_merge_without_duplicates(store: Store) -> None:
    sid = _busy_session(store)
    sessions.set_summary(
        store, sid, overview="Fixed the login retry.", decisions=["retry 3 times"], tags=["auth"]
    )
    summary = sessions.set_summary(
        store, sid, decisions=["retry 3 times", "log failures"], open_items=["CI flake"]
    )
    assert summary["decisions"] == ["retry 3 times", "log failures"]
    assert summary["overview"] == "Fixed the login retry."
    text = sessions.summary_markdown(store, sid)
    assert "Fixed the login retry." in text and "Started with" not in text
    assert "- log failures" in text and "- CI flake" in text and "auth" in text


def test_rolling_summary_is_compacted_at_a_sentence_boundary(store: Store) -> None:
    sid = sessions.start(store, now=T0)["id"]
    for index in range(60):
        result = sessions.append_rolling_summary(
            store,
            sid,
            f"Step {index} changed the parser and ran the tests.",
            threshold=1000,
            now=T0 + index,
        )
    assert result["compacted"] or len(result["rolling_summary"]) <= 1000
    session = sessions.get(store, sid)
    assert session["status"] == "compacted"
    compacted = sessions.compact_text(
        "First sentence here. " + "Second one is longer than that. " * 40
    )
    assert len(compacted) <= 500
    assert compacted.endswith(".") and compacted.startswith("Second")


def test_age_states_follow_the_time_since_last_activity(store: Store) -> None:
    sid = sessions.start(store, now=T0)["id"]
    assert sessions.get(store, sid, now=T0 + 3600)["age_state"] == "fresh"
    assert sessions.get(store, sid, now=T0 + 2 * 86400)["age_state"] == "idle"
    assert sessions.get(store, sid, now=T0 + 8 * 86400)["age_state"] == "decaying"
    assert sessions.get(store, sid, now=T0 + 31 * 86400)["age_state"] == "archived"


def test_crash_detection_and_the_four_resume_choices(store: Store) -> None:
    for sid in ("crashed-a", "crashed-b", "crashed-c", "crashed-d", "paused", "done"):
        sessions.start(store, session_id=sid, agent="claude-code", now=T0)
        sessions.record_turn(store, sid, user_message="work", started_at=T0 + 1, ended_at=T0 + 2)
    sessions.pause(store, "paused", now=T0 + 3)
    sessions.close(store, "done", now=T0 + 3)
    assert sessions.crashed(store, now=T0 + 10 * 60) == []  # not silent long enough
    found = {s["id"] for s in sessions.crashed(store, now=T0 + 31 * 60)}
    assert found == {"crashed-a", "crashed-b", "crashed-c", "crashed-d"}

    later = T0 + 40 * 60
    assert (
        sessions.resolve_crash(store, "crashed-a", "continue", now=later)["session"]["last_action"]
        == "resume"
    )
    review = sessions.resolve_crash(store, "crashed-b", "review", now=later)
    assert "# Session crashed-b" in review["summary"]
    restart = sessions.resolve_crash(store, "crashed-c", "restart", now=later)
    assert (
        restart["session"]["status"] == "closed"
        and restart["new_session"]["session_type"] == "existing"
    )
    discard = sessions.resolve_crash(store, "crashed-d", "discard", now=later)
    assert discard["session"]["end_reason"] == "discarded"
    still = {s["id"] for s in sessions.crashed(store, now=later + 60)}
    assert still == {"crashed-b"}  # review leaves the decision open
    with pytest.raises(UsageError):
        sessions.resolve_crash(store, "crashed-b", "explode")


def test_save_names_are_unique_and_overwrite_moves_the_name(store: Store) -> None:
    a = sessions.start(store, session_id="a", now=T0)["id"]
    b = sessions.start(store, session_id="b", now=T0 + 1)["id"]
    sessions.save(store, a, name="refactor", now=T0 + 2)
    with pytest.raises(sessions.NameTakenError) as taken:
        sessions.save(store, b, name="refactor", now=T0 + 3)
    assert taken.value.holder == "a"
    assert sessions.get(store, "refactor")["id"] == "a"
    sessions.save(store, b, name="refactor", overwrite=True, now=T0 + 4)
    assert sessions.get(store, "refactor")["id"] == "b"
    assert sessions.get(store, "a")["name"] is None


def test_save_writes_a_markdown_export_with_frontmatter(store: Store) -> None:
    sid = _busy_session(store)
    saved = sessions.save(store, sid, name="login-fix", now=T0 + 200)
    path = Path(saved["export_path"])
    assert path == store.dir / "exports" / "sessions" / "2023-11-14_claude-1.md"
    text = path.read_text()
    assert text.startswith('---\nsession_id: "claude-1"\nname: "login-fix"\n')
    frontmatter = text.split("---\n")[1]
    assert "turns: 2" in frontmatter and "format_version: 2" in frontmatter
    assert "# Session login-fix" in text
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_load_by_name_and_restore_a_session_whose_records_were_lost(store: Store) -> None:
    sid = _busy_session(store)
    sessions.save(store, sid, name="keep", now=T0 + 200)
    # Simulate records lost (an import elsewhere, a cleanup): the saved document restores them.
    with store.transaction() as db:
        db.execute("DELETE FROM sessions WHERE id = ?", (sid,))
    loaded = sessions.load(store, "keep")
    assert loaded["session"]["id"] == sid and loaded["session"]["turns"] == 2
    assert [t["user_message"] for t in loaded["turns"]][1] == "Now run the suite"
    assert set(loaded["files"]) == {"src/login.py", "tests/test_login.py"}
    assert sessions.metrics(store, sid)["commands_failed"] == 1


def test_resume_without_argument_takes_the_latest_and_reactivates_it(store: Store) -> None:
    sessions.start(store, session_id="old", now=T0)
    sessions.start(store, session_id="new", now=T0 + 100)
    sessions.close(store, "new", now=T0 + 200)
    resumed = sessions.resume(store, now=T0 + 300)
    assert resumed["session"]["id"] == "new" and resumed["session"]["status"] == "active"


def test_resume_with_no_sessions_is_a_clear_error(store: Store) -> None:
    with pytest.raises(NotFoundError):
        sessions.resume(store)


def test_delete_removes_records_saved_copies_and_the_export(store: Store) -> None:
    sid = _busy_session(store)
    saved = sessions.save(store, sid, name="gone", now=T0 + 200)
    sessions.delete(store, "gone")
    assert not Path(saved["export_path"]).exists()
    assert store.query_one("SELECT COUNT(*) FROM saved_sessions")[0] == 0  # type: ignore[index]
    assert store.query_one("SELECT COUNT(*) FROM session_turns")[0] == 0  # type: ignore[index]
    with pytest.raises(NotFoundError):
        sessions.get(store, "gone")


def test_export_is_the_beans_session_export_shape_and_imports_back(
    store: Store, tmp_path: Path
) -> None:
    sid = _busy_session(store)
    doc = sessions.export_document(store, sid)
    assert {"session", "turns", "workspace", "savedAt", "version"} <= set(doc)
    assert doc["metrics"]["turns"] == 2 and doc["metrics"]["commands_failed"] == 1
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    other = Store.init(tmp_path / "other")
    imported = sessions.import_file(other, path)
    assert imported["session"]["turns"] == 2
    assert sessions.metrics(other, sid) == sessions.metrics(store, sid)
    with pytest.raises(EngramError, match="already exists"):
        sessions.import_file(other, path)
    other.close()


def test_a_version_1_document_from_an_older_engram_loads(store: Store) -> None:
    old = {
        "version": "1.0",
        "savedAt": "2023-11-14T22:13:20Z",
        "workspace": {"root": "/elsewhere"},
        "session": {
            "id": "legacy-1",
            "name": "legacy",
            "agent": "claude-code",
            "startedAt": "2023-11-14T22:00:00Z",
            "summary": {"overview": "Old work.", "openItems": ["write docs"]},
        },
        "turns": [
            {
                "user": "hello",
                "assistant": "hi",
                "timestamp": "2023-11-14T22:01:00Z",
                "tokens": {"input": 5, "output": 7},
            },
        ],
    }
    imported = sessions.import_document(store, old)
    assert imported["session"]["name"] == "legacy"
    assert imported["turns"][0]["user_message"] == "hello"
    assert sessions.metrics(store, "legacy-1")["total_tokens"] == 12
    assert "write docs" in sessions.summary_markdown(store, "legacy")


def test_a_document_from_a_newer_engram_is_refused_and_nothing_changes(store: Store) -> None:
    newer = {"version": sessions.FORMAT_VERSION + 1, "session": {"id": "future"}, "turns": []}
    with pytest.raises(EngramError, match="newer engram"):
        sessions.import_document(store, newer)
    assert sessions.list_sessions(store) == []


def test_autosave_saves_active_sessions_on_the_interval(store: Store) -> None:
    sid = _busy_session(store)
    assert sessions.autosave(store, interval_minutes=5, now=T0 + 200) == []  # started < 5 min ago
    assert sessions.autosave(store, interval_minutes=5, now=T0 + 400) == [sid]
    assert sessions.autosave(store, interval_minutes=5, now=T0 + 500) == []  # nothing new since
    assert sessions.autosave(store, interval_minutes=0, now=T0 + 9999) == []


def test_quota_compacts_old_turns_when_nearly_full(store: Store) -> None:
    sid = sessions.start(store, now=T0)["id"]
    long_text = "This turn says a lot. " * 200
    for index in range(10):
        sessions.record_turn(
            store, sid, user_message=long_text, started_at=T0 + index, ended_at=T0 + index
        )
    used = store.query_one("SELECT bytes_used FROM sessions WHERE id = ?", (sid,))[0]  # type: ignore[index]
    result = sessions.enforce_quota(store, sid, quota_bytes=int(used / 0.96))
    assert result["compacted"]
    assert sessions.get(store, sid)["status"] == "compacted"
    assert len(sessions.history(store, sid)[0]["user_message"]) <= 500
    assert result["bytes_used"] <= 0.8 * int(used / 0.96)


def test_autosave_compacts_sessions_over_their_quota(store: Store) -> None:
    sid = sessions.start(store, now=T0)["id"]
    for index in range(5):
        sessions.record_turn(
            store, sid, user_message="Words and more words. " * 100, started_at=T0 + index
        )
    sessions.autosave(store, interval_minutes=0, quota_bytes=10_000)
    assert sessions.get(store, sid)["status"] == "compacted"


def test_a_stored_save_from_a_newer_engram_is_refused_on_load(store: Store) -> None:
    sid = _busy_session(store)
    sessions.save(store, sid, name="future", now=T0 + 200)
    with store.transaction() as db:
        db.execute("UPDATE saved_sessions SET format_version = ?", (sessions.FORMAT_VERSION + 1,))
    with pytest.raises(EngramError, match="newer engram"):
        sessions.load(store, "future")
