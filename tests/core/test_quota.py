"""Per-session quota: compaction at 80 % and 95 %, in the issue's order, preserving what matters."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import config, lifecycle, memory, quota, search, sessions
from memory_core.store import Store

DAY = 86400.0
NOW = 1_800_000_000.0
S = "sess-quota"


def _settings(workspace: Path, quota_bytes: int) -> config.Settings:
    return config.load(workspace, overrides={"sessions": {"quota_bytes": quota_bytes}})


@pytest.fixture
def session(store: Store) -> dict[str, str]:
    """A session with one entry of each kind compaction treats differently."""
    big = " and more detail" * 300  # ~4.8 KB each
    sessions.start(store, session_id=S, agent="claude-code", now=NOW - 40 * DAY)

    def add(label: str, days_ago: float, **kwargs: object) -> str:
        entry = memory.add(store, f"{label}{big}", session_id=S, now=NOW - days_ago * DAY, **kwargs)  # type: ignore[arg-type]
        return str(entry["id"])

    ids = {
        "decayed": add("an old learning nobody used", 100, type="learning"),
        "pinned": add("a pinned old fact", 100, type="project", pinned=True),
        "open_decision": add("an open old decision", 100, type="decision"),
        "explicit_pref": add("an explicit old preference", 100, type="preference", explicit=True),
        "recent_low": add("a recent low-priority note", 0.1, type="action", base_priority=0.1),
        "resolved": add("a resolved finding", 10, type="finding", status="resolved"),
    }
    sessions.record_turn(
        store,
        S,
        user_message="old question" + big,
        assistant_response="old answer" + big,
        started_at=NOW - 10 * DAY,
        ended_at=NOW - 10 * DAY + 5,
    )
    sessions.record_turn(
        store,
        S,
        user_message="recent question" + big,
        assistant_response="recent answer" + big,
        started_at=NOW - 3600,
        ended_at=NOW - 3500,
    )
    return ids


def _live(store: Store) -> set[str]:
    return {row["id"] for row in store.query("SELECT id FROM memories WHERE session_id = ?", (S,))}


def _turn_lengths(store: Store) -> list[int]:
    return [
        row[0]
        for row in store.query(
            "SELECT length(user_message) FROM session_turns WHERE session_id = ? ORDER BY seq", (S,)
        )
    ]


def test_usage_counts_every_record_of_the_session(
    store: Store, session: dict[str, str], workspace: Path
) -> None:
    used = quota.session_usage(store, S)
    assert used > 6 * 4800 + 4 * 4800
    facts = quota.usage(store, S, _settings(workspace, 10 * 1024 * 1024))
    assert facts["level"] == "ok" and facts["percent"] < 1
    assert quota.enforce(store, S, _settings(workspace, 10 * 1024 * 1024), now=NOW) is None


def test_gentle_compaction_stops_after_the_first_step_that_suffices(
    store: Store, session: dict[str, str], workspace: Path
) -> None:
    used = quota.session_usage(store, S)
    settings = _settings(workspace, int(used / 0.85))  # at 85 %: gentle, target 80 %
    result = quota.enforce(store, S, settings, now=NOW)
    assert result is not None and result["mode"] == "gentle"
    assert [step["step"] for step in result["steps"]] == ["drop_decayed"]
    assert result["steps"][0]["memories"] == [session["decayed"]]
    assert result["after_bytes"] < 0.8 * settings["sessions.quota_bytes"]
    assert _live(store) == set(session.values()) - {session["decayed"]}
    assert min(_turn_lengths(store)) > 4000  # turns untouched
    # Dropped into the recoverable state, not lost.
    lifecycle.undelete(store, session["decayed"], now=NOW)
    assert session["decayed"] in _live(store)


def test_forced_compaction_runs_every_step_in_order_and_keeps_what_must_stay(
    store: Store, session: dict[str, str], workspace: Path
) -> None:
    settings = _settings(workspace, 4096)  # far over: forced
    assert quota.usage(store, S, settings)["level"] == "forced"
    result = quota.enforce(store, S, settings, now=NOW)
    assert result is not None and result["mode"] == "forced"
    assert [step["step"] for step in result["steps"]] == [
        "drop_decayed",
        "summarise_turns",
        "archive_resolved",
    ]
    assert result["steps"][0]["memories"] == [session["decayed"]]
    assert result["steps"][1]["turns"] == 1
    assert result["steps"][2]["memories"] == [session["resolved"]]
    assert result["after_bytes"] < result["before_bytes"]
    # Preserved: pinned, open decision, explicit preference, and the last 24 hours.
    assert _live(store) == {
        session["pinned"],
        session["open_decision"],
        session["explicit_pref"],
        session["recent_low"],
    }
    old_turn, recent_turn = _turn_lengths(store)
    assert old_turn < 400 and recent_turn > 4000
    text = store.query_one(
        "SELECT user_message FROM session_turns WHERE session_id = ? ORDER BY seq LIMIT 1", (S,)
    )[0]
    assert text.startswith("old question") and "compacted" in text
    # The archived finding is kept, compressed, out of the live table and out of search.
    archived = store.query("SELECT ref_id FROM archived_rows WHERE session_id = ?", (S,))
    assert [row[0] for row in archived] == [session["resolved"]]
    assert search.search(store, "resolved finding", record_access=False) == []


def test_status_reports_use_against_quota(
    store: Store, session: dict[str, str], workspace: Path, cli
) -> None:
    used = quota.session_usage(store, S)
    rows = quota.status(store, _settings(workspace, used * 2))
    assert rows[0]["session_id"] == S and rows[0]["percent"] == pytest.approx(50, abs=1)
    store.close()
    shown = cli("status", "--json", cwd=workspace).json()
    assert shown["limits"]["session_quota_use"][0]["session_id"] == S
    assert shown["limits"]["session_quota_use"][0]["used_bytes"] == used
    human = cli("status", cwd=workspace).stdout
    assert S in human


def test_the_columns_learnt_from_the_latest_schema_measure_a_session_as_asking_does(
    store: Store, session: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = quota.session_usage(store, S)
    monkeypatch.setattr(quota, "_COLUMNS", {})
    monkeypatch.setattr(quota, "_COLUMNS_BY_DEFINITION", {})
    quota.learn_latest_columns()  # as the resident server does before it forks
    with monkeypatch.context() as never_asked:
        never_asked.setattr(quota, "_columns_asked", lambda store: pytest.fail("asked SQLite"))
        assert quota.session_usage(store, S) == asked


def test_a_store_whose_tables_differ_from_the_latest_schema_is_asked_for_its_columns(
    store: Store, session: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = quota.session_usage(store, S)
    monkeypatch.setattr(quota, "_COLUMNS", {})
    monkeypatch.setattr(quota, "_COLUMNS_BY_DEFINITION", {})
    quota.learn_latest_columns()
    with store.transaction() as db:  # a table the latest schema does not have
        db.execute("CREATE TABLE notes_of_mine (session_id TEXT, body TEXT)")
        db.execute("INSERT INTO notes_of_mine VALUES (?, ?)", (S, "x" * 1000))
    assert quota.session_usage(store, S) == before + len(S) + 1000  # its id and its text
