"""Deletion into a 30-day recoverable state, undelete, purge for good, session ages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core import config, lifecycle, limits, memory, search, sessions
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store

DAY = 86400.0
NOW = 1_800_000_000.0


def _ids(entries: list[dict]) -> list[str]:
    return [e["id"] for e in entries]


def test_forget_then_undelete_restores_the_entry_its_tags_and_relations(store: Store) -> None:
    bug = memory.add(
        store, "Uploads over 2 GB fail with a 413", type="finding", tags=["uploads"], now=NOW
    )
    fix = memory.add(
        store,
        "Stream uploads in 64 MB chunks",
        type="action",
        tags=["uploads"],
        relations=[("resolves", bug["id"])],
        now=NOW,
    )
    before = memory.get(store, bug["id"], record_access=False, now=NOW)

    record = memory.forget(store, bug["id"], reason="wrong diagnosis", now=NOW)
    assert record["state"] == "deleted" and record["reason"] == "wrong diagnosis"
    assert record["counts"] == {"memories": 1, "memory_tags": 1, "memory_relations": 1}
    assert record["recover_until"] == "2027-02-14T08:00:00Z"
    with pytest.raises(NotFoundError):
        memory.get(store, bug["id"])
    assert search.search(store, "413", record_access=False) == []
    assert memory.relations_of(store, fix["id"]) == []

    restored = lifecycle.undelete(store, bug["id"], now=NOW + DAY)  # by the memory's own id
    assert restored["state"] == "restored" and restored["skipped"] == 0
    after = memory.get(store, bug["id"], record_access=False, now=NOW)
    assert after == before
    assert _ids(search.search(store, "413", record_access=False)) == [bug["id"]]
    assert memory.relations_of(store, fix["id"]) == [
        {"kind": "resolves", "direction": "out", "id": bug["id"]}
    ]
    with pytest.raises(UsageError, match="already undeleted"):
        lifecycle.undelete(store, record["id"])


def test_delete_by_topic_date_range_and_agent(store: Store) -> None:
    old_auth = memory.add(
        store, "old auth note", tags=["auth"], agent="gemini", now=NOW - 100 * DAY
    )
    new_auth = memory.add(store, "new auth note", tags=["auth"], agent="claude-code", now=NOW)
    old_db = memory.add(store, "old db note", tags=["db"], agent="claude-code", now=NOW - 100 * DAY)

    by_topic_and_date = lifecycle.delete(store, topic="AUTH", before=NOW - 30 * DAY, now=NOW)
    assert _ids(memory.list_memories(store)) == [new_auth["id"], old_db["id"]]
    lifecycle.undelete(store, by_topic_and_date["id"], now=NOW)

    lifecycle.delete(store, agent="claude-code", now=NOW)
    assert _ids(memory.list_memories(store)) == [old_auth["id"]]
    deleted = lifecycle.deletions(store)
    assert [d["what"] for d in deleted][:1] == ["agent claude-code"]

    with pytest.raises(UsageError, match="say what to delete"):
        lifecycle.delete(store, now=NOW)
    with pytest.raises(NotFoundError, match="nothing to delete"):
        lifecycle.delete(store, topic="nonexistent", now=NOW)
    with pytest.raises(NotFoundError, match="no memory"):
        lifecycle.delete(store, memory_ids=["M-00000000"], now=NOW)


def test_deleting_a_session_takes_its_turns_and_memories_and_undelete_brings_them_back(
    store: Store,
) -> None:
    session = sessions.start(store, session_id="sess-42", agent="claude-code", now=NOW)
    sessions.record_turn(
        store,
        session["id"],
        user_message="fix the login test",
        assistant_response="done",
        started_at=NOW,
        ended_at=NOW + 5,
    )
    sessions.record_command(store, session["id"], "pytest -q", exit_code=0, ts=NOW + 6)
    note = memory.add(store, "the login test needed a fresh cookie", session_id="sess-42", now=NOW)
    other = memory.add(store, "unrelated", now=NOW)
    turns_before = store.query("SELECT * FROM session_turns WHERE session_id = 'sess-42'")

    record = lifecycle.delete(store, session_id="sess-42", reason="private", now=NOW)
    assert record["counts"]["sessions"] == 1 and record["counts"]["session_turns"] == 1
    assert record["counts"]["memories"] == 1
    assert store.query("SELECT * FROM sessions WHERE id = 'sess-42'") == []
    assert store.query("SELECT * FROM session_turns WHERE session_id = 'sess-42'") == []
    assert _ids(memory.list_memories(store)) == [other["id"]]

    lifecycle.undelete(store, "sess-42", now=NOW)
    assert [
        dict(r) for r in store.query("SELECT * FROM session_turns WHERE session_id = 'sess-42'")
    ] == [dict(r) for r in turns_before]
    assert sessions.get(store, "sess-42")["id"] == "sess-42"
    assert {note["id"], other["id"]} == set(_ids(memory.list_memories(store)))


def _db_bytes(root: Path) -> bytes:
    out = b""
    for name in ("engram.db", "engram.db-wal"):
        path = root / ".engram" / name
        if path.exists():
            out += path.read_bytes()
    return out


def test_purge_makes_it_unrecoverable_and_shrinks_the_store(store: Store, workspace: Path) -> None:
    marker = "zebracorn"
    bulky = [
        memory.add(
            store, f"{marker} {i} " + "lorem ipsum dolor sit amet " * 300, tags=["bulk"], now=NOW
        )
        for i in range(150)
    ]
    keep = memory.add(store, "keep me", now=NOW)
    lifecycle.compact(store)
    size_full = store.size_bytes()

    record = lifecycle.delete(store, topic="bulk", now=NOW)
    # Still recoverable: purge leaves what is within its 30 days alone.
    result = lifecycle.purge(store, now=NOW + 10 * DAY)
    assert result["purged"] == []
    assert marker.encode() in _db_bytes(workspace)

    result = lifecycle.purge(store, now=NOW + 31 * DAY)
    assert result["purged"] == [record["id"]]
    assert result["size_after"] < size_full / 2
    assert store.size_bytes() < size_full / 2
    assert marker.encode() not in _db_bytes(workspace)
    with pytest.raises(NotFoundError, match="past recovery"):
        lifecycle.undelete(store, record["id"])
    with pytest.raises(NotFoundError, match="past recovery"):
        lifecycle.undelete(store, bulky[0]["id"])
    assert lifecycle.deletion(store, record["id"])["state"] == "purged"
    assert _ids(memory.list_memories(store)) == [keep["id"]]


def test_purge_all_removes_what_is_still_recoverable(store: Store) -> None:
    entry = memory.add(store, "temporary", now=NOW)
    record = memory.forget(store, entry["id"], now=NOW)
    assert lifecycle.purge(store, everything=True, now=NOW)["purged"] == [record["id"]]
    with pytest.raises(NotFoundError):
        lifecycle.undelete(store, entry["id"])


def test_retention_drops_deleted_content_past_recovery_even_without_purge(
    store: Store, workspace: Path
) -> None:
    entry = memory.add(store, "old secret-free note", now=NOW)
    record = memory.forget(store, entry["id"], now=NOW)
    limits.enforce(store, config.load(workspace), now=NOW + 29 * DAY)
    assert lifecycle.undelete(store, record["id"], now=NOW + 29 * DAY)["restored"] == {
        "memories": 1
    }
    record = memory.forget(store, entry["id"], now=NOW + 29 * DAY)
    limits.enforce(store, config.load(workspace), now=NOW + 60 * DAY)
    with pytest.raises(NotFoundError, match="past recovery"):
        lifecycle.undelete(store, record["id"])


def test_session_age_states() -> None:
    assert lifecycle.session_age_state(NOW - 3600, status="active", now=NOW) == "active"
    assert lifecycle.session_age_state(NOW - 3600, status="closed", now=NOW) == "closed"
    assert lifecycle.session_age_state(NOW - 2 * DAY, now=NOW) == "idle"
    assert lifecycle.session_age_state(NOW - 8 * DAY, now=NOW) == "decaying"
    assert lifecycle.session_age_state(NOW - 31 * DAY, now=NOW) == "archived"


def test_session_ages_lists_every_session(store: Store) -> None:
    sessions.start(store, session_id="fresh", now=NOW - 60)
    sessions.start(store, session_id="stale", now=NOW - 40 * DAY)
    ages = {s["id"]: s["age_state"] for s in lifecycle.session_ages(store, now=NOW)}
    assert ages == {"fresh": "active", "stale": "archived"}


def test_cli_delete_undelete_purge(cli, workspace: Path) -> None:
    entry = cli(
        "memory", "add", "deploy on fridays", "--tag", "deploy", "--json", cwd=workspace
    ).json()
    deleted = cli("delete", "--topic", "deploy", "--reason", "outdated", "--json", cwd=workspace)
    assert deleted.code == 0, deleted.stderr
    record = deleted.json()
    assert record["what"] == "topic deploy" and record["reason"] == "outdated"
    listing = cli("delete", "--list", cwd=workspace).stdout
    assert record["id"] in listing and "outdated" in listing
    assert cli("undelete", record["id"], cwd=workspace).code == 0
    assert cli("memory", "show", entry["id"], cwd=workspace).code == 0
    forgot = cli("memory", "forget", entry["id"], cwd=workspace)
    assert forgot.code == 0 and f"engram undelete {entry['id']}" in forgot.stdout
    refused = cli("purge", "--all", cwd=workspace)  # no terminal to confirm on
    assert refused.code == 2 and "not confirmed" in refused.stderr
    assert cli("undelete", entry["id"], cwd=workspace).code == 0
    cli("memory", "forget", entry["id"], cwd=workspace)
    purged = cli("purge", "--all", "--yes", "--json", cwd=workspace).json()
    assert len(purged["purged"]) == 1
    gone = cli("undelete", entry["id"], cwd=workspace)
    assert gone.code == 1 and "past recovery" in gone.stderr
    assert cli("delete", cwd=workspace).code == 2
    assert cli("delete", "--before", "yesterday-ish", cwd=workspace).code == 2
    assert os.stat(workspace / ".engram" / "engram.db").st_mode & 0o777 == 0o600


def test_sessions_idle_for_30_days_are_archived_summary_searchable_detail_compressed(
    store: Store,
) -> None:
    long_text = "a long exchange about the build cache and its invalidation rules " * 40
    sessions.start(store, session_id="old", agent="claude-code", now=NOW - 45 * DAY)
    for i in range(5):
        sessions.record_turn(
            store,
            "old",
            user_message=f"q{i} {long_text}",
            assistant_response=f"a{i} {long_text}",
            started_at=NOW - 45 * DAY + i,
            ended_at=NOW - 45 * DAY + i + 1,
        )
    sessions.set_summary(store, "old", overview="Reworked the build cache invalidation")
    sessions.close(store, "old", now=NOW - 45 * DAY + 10)
    sessions.start(store, session_id="recent", now=NOW - DAY)
    sessions.record_turn(
        store,
        "recent",
        user_message="hello",
        assistant_response="hi",
        started_at=NOW - DAY,
        ended_at=NOW - DAY + 1,
    )
    turns_before = [
        dict(r)
        for r in store.query("SELECT * FROM session_turns WHERE session_id = 'old' ORDER BY seq")
    ]

    result = lifecycle.archive_sessions(store, now=NOW)
    assert result["sessions"] == ["old"] and result["rows"] == 5
    assert result["bytes_after"] < result["bytes_before"] / 5
    assert store.query("SELECT * FROM session_turns WHERE session_id = 'old'") == []
    assert len(store.query("SELECT * FROM session_turns WHERE session_id = 'recent'")) == 1
    # The summary is still there and still found.
    assert sessions.get(store, "old")["id"] == "old"
    assert "old" in [
        r["id"]
        for r in search.search(store, "cache invalidation", kinds=["session"], record_access=False)
    ]

    restored = lifecycle.unarchive_session(store, "old")
    assert restored == {"session_turns": 5}
    assert [
        dict(r)
        for r in store.query("SELECT * FROM session_turns WHERE session_id = 'old' ORDER BY seq")
    ] == turns_before
    with pytest.raises(NotFoundError):
        lifecycle.unarchive_session(store, "old")


def test_undelete_works_when_newer_entries_took_the_internal_row_number(store: Store) -> None:
    entry = memory.add(store, "the newest entry, then forgotten", now=NOW)
    memory.forget(store, entry["id"], now=NOW)
    newer = memory.add(store, "added after the forget", now=NOW + 1)  # reuses the row number
    restored = lifecycle.undelete(store, entry["id"], now=NOW + 2)
    assert restored["restored"] == {"memories": 1} and restored["skipped"] == 0
    assert {e["id"] for e in memory.list_memories(store)} == {entry["id"], newer["id"]}
    assert _ids(search.search(store, "forgotten", record_access=False)) == [entry["id"]]
    assert _ids(search.search(store, "after", record_access=False)) == [newer["id"]]


def test_a_date_range_takes_old_sessions_and_old_memories_and_leaves_the_rest(store: Store) -> None:
    sessions.start(store, session_id="old-s", agent="claude-code", now=NOW - 60 * DAY)
    sessions.record_turn(
        store,
        "old-s",
        user_message="old",
        assistant_response="old",
        started_at=NOW - 60 * DAY,
        ended_at=NOW - 60 * DAY + 1,
    )
    sessions.start(store, session_id="new-s", agent="claude-code", now=NOW - DAY)
    old_note = memory.add(store, "old note", now=NOW - 60 * DAY)
    new_note = memory.add(store, "new note", now=NOW - DAY)

    record = lifecycle.delete(store, before=NOW - 30 * DAY, now=NOW)
    assert record["counts"]["sessions"] == 1 and record["counts"]["memories"] == 1
    assert [s["id"] for s in lifecycle.session_ages(store, now=NOW)] == ["new-s"]
    assert _ids(memory.list_memories(store)) == [new_note["id"]]
    lifecycle.undelete(store, record["id"], now=NOW)
    assert {s["id"] for s in lifecycle.session_ages(store, now=NOW)} == {"old-s", "new-s"}
    assert {old_note["id"], new_note["id"]} == set(_ids(memory.list_memories(store)))


def test_deleting_a_session_leaves_its_checkpoints_alone(store: Store, workspace: Path) -> None:
    from memory_core import checkpoints

    (workspace / "app.py").write_text("print('v1')\n")
    sessions.start(store, session_id="with-cp", now=NOW)
    checkpoint = checkpoints.create(store, "before refactor", now=NOW)
    with store.transaction() as db:
        db.execute(
            "UPDATE checkpoints SET session_id = 'with-cp' WHERE id = ?", (checkpoint["id"],)
        )
    record = lifecycle.delete(store, session_id="with-cp", now=NOW)
    assert "checkpoints" not in record["counts"]
    assert [c["id"] for c in checkpoints.list_checkpoints(store)] == [checkpoint["id"]]


def test_undelete_after_the_recovery_deadline_is_refused_even_before_any_purge(
    store: Store,
) -> None:
    entry = memory.add(store, "the staging password rotates monthly", now=NOW)
    record = memory.forget(store, entry["id"], now=NOW)
    # Nothing purged it: the rows are still in the trash...
    assert store.query_one("SELECT count(*) FROM deleted_rows")[0] == 1
    # ...and still the deadline holds.
    with pytest.raises(NotFoundError, match="past recovery: its recovery period ended at 2027-"):
        lifecycle.undelete(store, record["id"], now=NOW + 30 * DAY)
    with pytest.raises(NotFoundError):
        memory.get(store, entry["id"])
    assert lifecycle.deletion(store, record["id"])["state"] == "deleted"
    # A day before the deadline it comes back (the control).
    assert lifecycle.undelete(store, record["id"], now=NOW + 29 * DAY)["restored"] == {
        "memories": 1
    }


def test_cli_refuses_an_undelete_past_its_deadline(cli, workspace: Path) -> None:
    keep = cli("memory", "add", "use the staging bucket", "--json", cwd=workspace).json()
    assert cli("config", "set", "memory.recovery_days", "0", cwd=workspace).code == 0
    late = cli("memory", "add", "deploy on fridays", "--json", cwd=workspace).json()
    assert cli("memory", "forget", late["id"], cwd=workspace).code == 0
    refused = cli("undelete", late["id"], cwd=workspace)
    assert refused.code == 1
    assert refused.stderr.startswith("engram: error: ") and "past recovery" in refused.stderr
    assert refused.stderr.count("\n") <= 2  # the error and its hint, no traceback
    assert cli("memory", "show", late["id"], cwd=workspace).code == 1
    # Within its 30 days an item comes back (the control).
    assert cli("config", "set", "memory.recovery_days", "30", cwd=workspace).code == 0
    assert cli("memory", "forget", keep["id"], cwd=workspace).code == 0
    assert cli("undelete", keep["id"], cwd=workspace).code == 0
    assert cli("memory", "show", keep["id"], cwd=workspace).code == 0
