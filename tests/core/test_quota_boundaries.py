"""The session quota on its edges (issue 31): exactly 80 % and 95 %, exactly 100 %, a write
that would just fill the session, memories used or made 48 hours ago to the second, the
warning once per level, and the hooks' 30-second measurement cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core import config, memory, quota, sessions
from memory_core.agents import hooks
from memory_core.errors import QuotaExceededError
from memory_core.store import Store
from tests.agents_fixtures import hook_payload

S = "3c1b2c3d-4e5f-4a6b-8c7d-0123456789ab"
DAY = 86400.0
NOW = 1_800_000_000.0
BIG = "the build needs the generated protobuf stubs before the tests run; " * 300


def _settings(root: Path, quota_bytes: int) -> config.Settings:
    return config.load(root, overrides={"sessions": {"quota_bytes": quota_bytes}})


@pytest.mark.parametrize(
    ("used", "level"),
    [(0, "ok"), (799, "ok"), (800, "gentle"), (949, "gentle"), (950, "forced"), (1200, "forced")],
)
def test_levels_turn_at_exactly_80_and_95_percent(used: int, level: str) -> None:
    facts = quota.usage_of("S", used, 1000)
    assert (facts["level"], facts["percent"]) == (level, round(used / 10, 1))


def test_a_quota_of_zero_is_no_quota() -> None:
    assert quota.usage_of("S", 10**9, 0)["level"] == "ok"


@pytest.fixture
def pinned_session(store: Store) -> Store:
    """A session whose only record may never be removed: compaction frees nothing."""
    sessions.start(store, session_id=S, agent="claude-code", now=NOW - DAY)
    memory.add(store, "pinned: " + BIG, session_id=S, pinned=True, now=NOW - DAY)
    return store


def test_status_levels_match_the_sessions_use(pinned_session: Store) -> None:
    used = quota.session_usage(pinned_session, S)
    for quota_bytes, level in ((used * 2, "ok"), (used * 100 // 85, "gentle"), (used, "forced")):
        (row,) = quota.status(pinned_session, _settings(pinned_session.root, quota_bytes))
        assert (row["session_id"], row["used_bytes"], row["level"]) == (S, used, level)


def test_a_write_that_would_just_fill_the_session_is_made_room_for_first(
    pinned_session: Store,
) -> None:
    used = quota.session_usage(pinned_session, S)
    settings = _settings(pinned_session.root, used + 100)
    assert quota.before_write(pinned_session, S, settings, incoming=99, now=NOW) is None
    made_room = quota.before_write(pinned_session, S, settings, incoming=100, now=NOW)
    assert made_room is not None and made_room["mode"] == "forced"
    full = _settings(pinned_session.root, used)
    with pytest.raises(QuotaExceededError, match="MEM_E001"):
        quota.before_write(pinned_session, S, full, incoming=0, now=NOW)


class _Undo(Exception):
    pass


def _write_prompt(store: Store, uuid: str) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_prompts (uuid, session_id, ts, text) VALUES (?, ?, ?, ?)",
            (uuid, S, 1.0, "x" * 500),
        )


def test_a_write_that_takes_the_session_to_exactly_100_percent_is_kept(
    pinned_session: Store,
) -> None:
    store = pinned_session
    with pytest.raises(_Undo), store.transaction():
        _write_prompt(store, "p-1")
        after = quota.session_usage(store, S)
        raise _Undo
    with quota.guarded_write(store, S, _settings(store.root, after)):
        _write_prompt(store, "p-1")
    assert store.query_one("SELECT 1 FROM agent_prompts WHERE uuid = 'p-1'") is not None


def test_a_write_one_byte_past_the_quota_is_refused_and_nothing_kept(
    pinned_session: Store,
) -> None:
    store = pinned_session
    with pytest.raises(_Undo), store.transaction():
        _write_prompt(store, "p-2")
        after = quota.session_usage(store, S)
        raise _Undo
    with (
        pytest.raises(QuotaExceededError, match="no room for this record"),
        quota.guarded_write(store, S, _settings(store.root, after - 1)),
    ):
        _write_prompt(store, "p-2")
    assert store.query_one("SELECT 1 FROM agent_prompts WHERE uuid = 'p-2'") is None


def _low_note(store: Store, label: str, *, created: float, accessed: float) -> str:
    entry = memory.add(
        store, label + BIG[:2000], type="action", base_priority=0.1, session_id=S, now=created
    )
    with store.transaction() as db:
        db.execute("UPDATE memories SET last_accessed = ? WHERE id = ?", (accessed, entry["id"]))
    return str(entry["id"])


def test_compaction_spares_what_was_made_or_used_within_48_hours_to_the_second(
    pinned_session: Store,
) -> None:
    store = pinned_session
    old = NOW - 100 * DAY
    used_recently = _low_note(
        store, "used 47 h 59 min ago", created=old, accessed=NOW - 2 * DAY + 60
    )
    used_long_ago = _low_note(store, "used 48 h ago", created=old, accessed=NOW - 2 * DAY)
    made_recently = _low_note(
        store, "made 47 h 59 min ago", created=NOW - 2 * DAY + 60, accessed=NOW - 2 * DAY + 60
    )
    made_long_ago = _low_note(store, "made 48 h ago", created=NOW - 2 * DAY, accessed=NOW - 2 * DAY)
    result = quota.compact(store, S, _settings(store.root, 10**9), every_step=True, now=NOW)
    (dropped,) = [step["memories"] for step in result["steps"] if step["step"] == "drop_decayed"]
    assert sorted(dropped) == sorted([used_long_ago, made_long_ago])
    assert {used_recently, made_recently}.isdisjoint(dropped)


def test_a_forced_compaction_aims_at_70_percent_a_gentle_one_at_80(pinned_session: Store) -> None:
    settings = _settings(pinned_session.root, 100_000)
    forced = quota.compact(pinned_session, S, settings, forced=True, now=NOW)
    gentle = quota.compact(pinned_session, S, settings, forced=False, now=NOW)
    assert (forced["mode"], forced["target_bytes"]) == ("forced", 70_000)
    assert (gentle["mode"], gentle["target_bytes"]) == ("gentle", 80_000)


def test_the_warning_is_given_once_per_level_and_again_at_the_next(pinned_session: Store) -> None:
    store = pinned_session
    used = quota.session_usage(store, S)
    at_85 = _settings(store.root, used * 100 // 85)
    first = quota.after_write(store, S, at_85, once_per_level=True, now=NOW)
    assert first is not None and first["threshold"] == 80
    assert "compaction found nothing it may remove" in first["message"]
    quota.mark_warned(store, S, 80)
    assert quota.after_write(store, S, at_85, once_per_level=True, now=NOW) is None
    at_96 = _settings(store.root, used * 100 // 96)
    second = quota.after_write(store, S, at_96, once_per_level=True, now=NOW)
    assert second is not None and second["threshold"] == 95
    quota.mark_warned(store, S, 95)
    assert quota.after_write(store, S, at_96, once_per_level=True, now=NOW) is None
    # Without once_per_level (the CLI), every write past 80 % says so.
    assert quota.after_write(store, S, at_85, now=NOW) is not None


# -- the hook path: the 30-second measurement cache -------------------------------------------


def _set_quota(root: Path, quota_bytes: int) -> None:
    (root / ".engram" / "config.toml").write_text(
        f"[sessions]\nquota_bytes = {quota_bytes}\n", encoding="utf-8"
    )


def _post(store: Store, tool_use_id: str, at: float) -> str:
    payload = hook_payload(
        "PostToolUse",
        S,
        store.root,
        tool_name="Bash",
        tool_input={"command": "ls"},
        tool_use_id=tool_use_id,
        tool_response={"stdout": "a", "stderr": "", "interrupted": False},
    )
    code, out = hooks.handle(
        "claude-code", "PostToolUse", payload, workspace=str(store.root), now=at
    )
    assert code == 0
    output: dict[str, Any] = json.loads(out) if out else {}
    return str(output.get("hookSpecificOutput", {}).get("additionalContext", ""))


@pytest.fixture
def hook_session(store: Store) -> Store:
    sessions.start(store, session_id=S, agent="claude-code")
    memory.add(store, "pinned: " + BIG, session_id=S, pinned=True)
    return store


def test_a_lowered_quota_is_measured_again_at_once(hook_session: Store) -> None:
    store = hook_session
    from memory_core import clock

    start = clock.now()
    used = quota.session_usage(store, S)
    _set_quota(store.root, used * 4)  # 25 %
    assert _post(store, "toolu_a", start) == ""
    _set_quota(store.root, used * 100 // 85)  # the same session is at 85 % of the new quota
    assert "of its quota" in _post(store, "toolu_b", start + 5)


def test_a_session_measured_between_70_and_80_percent_is_measured_again(
    hook_session: Store,
) -> None:
    store = hook_session
    from memory_core import clock

    start = clock.now()
    used = quota.session_usage(store, S)
    quota_bytes = used * 100 // 75
    _set_quota(store.root, quota_bytes)
    assert _post(store, "toolu_75", start) == ""
    # A write from elsewhere (not a hook) takes the session past 80 % within the 30 s.
    memory.add(store, "pinned too: " + BIG[: quota_bytes // 12], session_id=S, pinned=True)
    assert 80 <= quota.usage(store, S, _settings(store.root, quota_bytes))["percent"] < 95
    assert "of its quota" in _post(store, "toolu_85", start + 5)


# -- what compaction records and what `engram memory status` shows -----------------------------


def _decayed(store: Store, label: str, *, created: float, size: int = 2000) -> str:
    entry = memory.add(
        store, label + BIG[:size], type="action", base_priority=0.1, session_id=S, now=created
    )
    return str(entry["id"])


def test_compaction_is_recorded_as_an_event_of_the_session(pinned_session: Store) -> None:
    dropped = _decayed(pinned_session, "old note", created=NOW - 100 * DAY)
    result = quota.compact(
        pinned_session, S, _settings(pinned_session.root, 10**9), every_step=True, now=NOW
    )
    assert result["steps"][0]["memories"] == [dropped]
    (event,) = pinned_session.query("SELECT * FROM events WHERE kind = 'quota.compacted'")
    assert (event["actor"], event["session_id"], event["ts"]) == ("quota", S, NOW)
    assert json.loads(event["data"])["steps"][0]["step"] == "drop_decayed"


def test_a_compaction_that_finds_nothing_records_no_event(pinned_session: Store) -> None:
    result = quota.compact(
        pinned_session, S, _settings(pinned_session.root, 10**9), every_step=True
    )
    assert result["steps"] == []
    assert pinned_session.query("SELECT 1 FROM events WHERE kind = 'quota.compacted'") == []


def test_a_pinned_memory_is_kept_however_low_its_priority(pinned_session: Store) -> None:
    entry = memory.add(
        pinned_session,
        "pinned but minor",
        type="action",
        base_priority=0.1,
        pinned=True,
        session_id=S,
        now=NOW - 100 * DAY,
    )
    quota.compact(
        pinned_session, S, _settings(pinned_session.root, 10**9), every_step=True, now=NOW
    )
    assert pinned_session.query_one("SELECT 1 FROM memories WHERE id = ?", (entry["id"],))


def test_after_write_compacts_as_of_the_time_it_is_given(pinned_session: Store) -> None:
    # Made three days before NOW: past the 48 hours at NOW, in the future at the real clock.
    dropped = _decayed(pinned_session, "three days old", created=NOW - 3 * DAY, size=6000)
    used = quota.session_usage(pinned_session, S)
    notice = quota.after_write(
        pinned_session, S, _settings(pinned_session.root, used * 100 // 85), now=NOW
    )
    assert notice is not None and notice["compaction"]["steps"][0]["memories"] == [dropped]
    assert "compacted to" in notice["message"]


def test_after_write_at_95_percent_compacts_forced(pinned_session: Store) -> None:
    used = quota.session_usage(pinned_session, S)
    notice = quota.after_write(pinned_session, S, _settings(pinned_session.root, used * 100 // 96))
    assert notice is not None and notice["compaction"]["mode"] == "forced"
    assert notice["threshold"] == 95


def test_back_under_80_percent_the_next_crossing_warns_again(pinned_session: Store) -> None:
    store = pinned_session
    _decayed(store, "droppable", created=NOW - 100 * DAY, size=12000)
    used = quota.session_usage(store, S)
    settings = _settings(store.root, used * 100 // 85)
    quota.mark_warned(store, S, 80)
    notice = quota.after_write(store, S, settings, once_per_level=True, now=NOW)
    assert notice is not None and notice["after_percent"] < 80
    key = f"{quota.WARNED_KEY}{S}"
    assert store.query_one("SELECT 1 FROM store_meta WHERE key = ?", (key,)) is None


def test_no_quota_never_refuses(pinned_session: Store) -> None:
    assert quota.before_write(pinned_session, S, _settings(pinned_session.root, 0)) is None
    with quota.guarded_write(pinned_session, S, _settings(pinned_session.root, 0)):
        _write_prompt(pinned_session, "p-free")
    assert quota.after_write(pinned_session, S, _settings(pinned_session.root, 0)) is None


def test_status_says_forced_from_exactly_95_percent(pinned_session: Store) -> None:
    used = quota.session_usage(pinned_session, S)
    (row,) = quota.status(pinned_session, _settings(pinned_session.root, used * 100 // 95))
    assert row["level"] == "forced"
    (under,) = quota.status(pinned_session, _settings(pinned_session.root, used * 100 // 94))
    assert under["level"] == "gentle"


def test_a_session_known_only_by_its_row_is_listed_and_measured(store: Store) -> None:
    sessions.start(store, session_id="S-row", agent="claude-code", now=NOW)
    with store.transaction() as db:
        db.execute("DELETE FROM events WHERE session_id = 'S-row'")
    assert quota.session_ids(store) == ["S-row"]
    assert quota.session_usage(store, "S-row") > 0


def test_memory_status_counts_tiers_pins_archive_and_trash(store: Store) -> None:
    from memory_core import lifecycle

    memory.add(store, "hot decision", type="decision", pinned=True, now=NOW)
    memory.add(store, "cold note", type="action", base_priority=0.1, now=NOW - 300 * DAY)
    gone = memory.add(store, "to delete", type="learning", now=NOW)
    lifecycle.delete(store, memory_ids=[gone["id"]], now=NOW)
    status = quota.memory_status(store, _settings(store.root, 1000), now=NOW)
    assert status["memories"] == 2 and status["pinned"] == 1
    assert status["tiers"] == {"hot": 1, "warm": 0, "cold": 1}
    assert status["recoverable_deletions"] == 1 and status["archived"] == 0


def test_an_archived_resolved_finding_keeps_its_tags_and_relations(pinned_session: Store) -> None:
    import zlib

    store = pinned_session
    finding = memory.add(
        store,
        "the cache key missed the tenant",
        type="finding",
        status="resolved",
        tags=["cache"],
        session_id=S,
        now=NOW - 10 * DAY,
    )
    fix = memory.add(store, "tenant in the key", type="learning", now=NOW - 10 * DAY)
    memory.relate(store, fix["id"], "resolves", finding["id"], now=NOW - 10 * DAY)
    result = quota.compact(store, S, _settings(store.root, 10**9), every_step=True, now=NOW)
    assert {"step": "archive_resolved", "memories": [finding["id"]]} in result["steps"]
    (row,) = store.query("SELECT data FROM archived_rows WHERE ref_id = ?", (finding["id"],))
    payload = json.loads(zlib.decompress(row["data"]))
    assert payload["memory"]["content"] == "the cache key missed the tenant"
    assert payload["tags"] == ["cache"]
    assert [r["kind"] for r in payload["relations"]] == ["resolves"]


def test_a_refused_write_says_how_to_make_room(pinned_session: Store) -> None:
    store = pinned_session
    full = _settings(store.root, quota.session_usage(store, S))
    ways = ("sessions.quota_bytes", "`engram delete --session ID --before DATE`", "new session")
    with pytest.raises(QuotaExceededError) as before:
        quota.before_write(store, S, full, now=NOW)
    with pytest.raises(QuotaExceededError) as during, quota.guarded_write(store, S, full):
        _write_prompt(store, "p-over")
    for refused in (before.value, during.value):
        assert refused.hint is not None and all(way in refused.hint for way in ways)


def test_a_compaction_says_how_it_was_asked_for(pinned_session: Store) -> None:
    settings = _settings(pinned_session.root, 10**9)
    modes = [
        quota.compact(pinned_session, S, settings, every_step=True, now=NOW)["mode"],
        quota.compact(pinned_session, S, settings, forced=True, now=NOW)["mode"],
        quota.compact(pinned_session, S, settings, now=NOW)["mode"],
    ]
    assert modes == ["every step", "forced", "gentle"]


def test_status_lists_the_fullest_session_first(pinned_session: Store) -> None:
    store = pinned_session
    # A small session whose id sorts before the full one's: the order is by use, not by id.
    sessions.start(store, session_id="0-small", agent="claude-code", now=NOW)
    settings = _settings(store.root, 10**6)
    rows = quota.status(store, settings)
    assert [row["session_id"] for row in rows] == [S, "0-small"]
    assert rows[0]["used_bytes"] > rows[1]["used_bytes"]
    assert [row["session_id"] for row in quota.status(store, settings, limit=1)] == [S]


def test_a_finding_archived_by_the_quota_is_counted_and_kept_with_its_origin(
    pinned_session: Store,
) -> None:
    import zlib

    store = pinned_session
    settings = _settings(store.root, 10**9)
    finding = memory.add(
        store,
        "the retry loop hid the 500s",
        type="finding",
        status="resolved",
        session_id=S,
        now=NOW - 10 * DAY,
    )
    before = quota.memory_status(store, settings, now=NOW)
    quota.compact(store, S, settings, every_step=True, now=NOW)
    after = quota.memory_status(store, settings, now=NOW)
    # Out of the live memories, into the archive: `engram memory status` says so.
    assert (before["memories"], before["archived"]) == (2, 0)
    assert (after["memories"], after["archived"]) == (1, 1)
    (row,) = store.query("SELECT * FROM archived_rows")
    assert (row["table_name"], row["ref_id"], row["session_id"]) == ("memories", finding["id"], S)
    assert row["reason"] == "quota compaction: resolved finding" and row["archived_at"] == NOW
    assert json.loads(zlib.decompress(row["data"]))["memory"]["id"] == finding["id"]


def test_use_is_told_to_a_tenth_of_a_percent_and_no_quota_is_0(pinned_session: Store) -> None:
    used = quota.session_usage(pinned_session, S)
    assert quota.usage_of(S, 1, 3)["percent"] == 33.3
    (row,) = quota.status(pinned_session, _settings(pinned_session.root, used * 3))
    assert row["percent"] == 33.3 and row["level"] == "ok"
    (free,) = quota.status(pinned_session, _settings(pinned_session.root, 0))
    assert (free["percent"], free["level"], free["used_bytes"]) == (0.0, "ok", used)


def test_the_warning_says_what_happens_at_100_percent(pinned_session: Store) -> None:
    used = quota.session_usage(pinned_session, S)
    warned = quota.after_write(
        pinned_session, S, _settings(pinned_session.root, used * 100 // 85), now=NOW
    )
    assert warned is not None and warned["message"].startswith(f"engram: session {S} reached 85 %")
    assert warned["message"].endswith(
        "compaction found nothing it may remove. At 100 % new records for it are refused (MEM_E001)."
    )


def test_each_sessions_row_names_its_quota_and_the_compaction_its_result_to_a_tenth(
    pinned_session: Store,
) -> None:
    used = quota.session_usage(pinned_session, S)
    # A quota where the use has a second decimal: told to one, not rounded to a whole percent.
    quota_bytes = next(
        q
        for q in range(used * 100 // 86, used * 100 // 82)
        if round(100 * used / q, 2) != round(100 * used / q, 1) != round(100 * used / q)
    )
    settings = _settings(pinned_session.root, quota_bytes)
    (row,) = quota.status(pinned_session, settings)
    assert row["quota_bytes"] == quota_bytes
    warned = quota.after_write(pinned_session, S, settings, now=NOW)
    assert warned is not None
    expected = round(100.0 * used / quota_bytes, 1)
    assert warned["after_percent"] == expected and expected != round(expected)


def test_memory_status_counts_a_memory_archived_in_place_once(store: Store) -> None:
    memory.add(store, "kept", type="learning", now=NOW)
    memory.add(store, "old news", type="learning", status="archived", now=NOW)
    status = quota.memory_status(store, _settings(store.root, 1000), now=NOW)
    assert (status["memories"], status["archived"]) == (2, 1)
    assert sum(status["tiers"].values()) == 1


def test_compaction_keeps_old_open_findings_and_decisions_and_stated_preferences(
    pinned_session: Store,
) -> None:
    store = pinned_session
    old = NOW - 100 * DAY
    for label, kind, explicit in (
        ("open decision", "decision", False),
        ("open finding", "finding", False),
        ("stated preference", "preference", True),
    ):
        content = f"{label} {BIG[:2000]}"
        memory.add(
            store, content, type=kind, explicit=explicit, base_priority=0.1, session_id=S, now=old
        )
    dropped_note = _low_note(store, "an old note", created=old, accessed=old)
    result = quota.compact(store, S, _settings(store.root, 10**9), every_step=True, now=NOW)
    (dropped,) = [step["memories"] for step in result["steps"] if step["step"] == "drop_decayed"]
    assert dropped == [dropped_note]


def test_a_sessions_use_names_the_session() -> None:
    assert quota.usage_of("S-1", 10, 1000)["session_id"] == "S-1"
