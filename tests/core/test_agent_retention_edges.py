"""How long what agents did is kept (the agent tables' rules in memory_core/limits.py), on both
sides of the age limit: a row exactly `timeline.max_age_days` old keeps its text, one a second
older loses it but keeps the key that stops a transcript read again from counting it twice; a
turn still open is never dropped by age; a digest past the limit goes."""

from __future__ import annotations

from memory_core import config, limits
from memory_core.store import Store

DAY = 86400.0
NOW = 1_900_000_000.0
LIMIT_DAYS = 30.0
EDGE = NOW - LIMIT_DAYS * DAY


def _settings() -> config.Settings:
    settings = config.Settings()
    settings.values.update({"timeline.max_age_days": LIMIT_DAYS, "timeline.max_entries": 10_000})
    return settings


def test_agent_records_keep_their_text_up_to_the_age_limit_and_their_keys_after(
    store: Store,
) -> None:
    with store.transaction() as db:
        for name, ts in (("at", EDGE), ("past", EDGE - 1)):
            db.execute(
                "INSERT INTO agent_tool_uses (tool_use_id, session_id, ts, tool, ok, path,"
                " command, error) VALUES (?, 'S', ?, 'Bash', 0, 'a.py', 'make', 'boom')",
                (f"t-{name}", ts),
            )
            db.execute(
                "INSERT INTO agent_prompts (uuid, session_id, ts, text) VALUES (?, 'S', ?, ?)",
                (f"p-{name}", ts, f"request {name}"),
            )
            db.execute(
                "INSERT INTO agent_compactions (uuid, session_id, ts, summary)"
                " VALUES (?, 'S', ?, ?)",
                (f"c-{name}", ts, f"summary {name}"),
            )
            db.execute(
                "INSERT INTO digests (session_id, ts, trigger, schema_version, path, content)"
                " VALUES ('S', ?, 'stop', '1.0', ?, 'x')",
                (ts, f"d-{name}.md"),
            )
    limits.enforce(store, _settings(), now=NOW)
    assert [
        tuple(r)
        for r in store.query(
            "SELECT tool_use_id, path, command, error FROM agent_tool_uses ORDER BY tool_use_id"
        )
    ] == [("t-at", "a.py", "make", "boom"), ("t-past", None, None, None)]
    assert [
        tuple(r) for r in store.query("SELECT uuid, text FROM agent_prompts ORDER BY uuid")
    ] == [
        ("p-at", "request at"),
        ("p-past", ""),
    ]
    assert [
        tuple(r) for r in store.query("SELECT uuid, summary FROM agent_compactions ORDER BY uuid")
    ] == [("c-at", "summary at"), ("c-past", None)]
    assert [r[0] for r in store.query("SELECT path FROM digests")] == ["d-at.md"]


def test_an_open_turn_is_kept_however_old_and_a_finished_one_past_the_limit_goes(
    store: Store,
) -> None:
    with store.transaction() as db:
        for uuid, started, recorded in (
            ("open-old", EDGE - 100 * DAY, 0),
            ("done-at", EDGE, 1),
            ("done-past", EDGE - 1, 1),
        ):
            db.execute(
                "INSERT INTO agent_turns (uuid, session_id, started_at, recorded)"
                " VALUES (?, 'S', ?, ?)",
                (uuid, started, recorded),
            )
    limits.enforce(store, _settings(), now=NOW)
    kept = sorted(r[0] for r in store.query("SELECT uuid FROM agent_turns"))
    assert kept == ["done-at", "open-old"]
