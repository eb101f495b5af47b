"""What `engram status` and the editor's `engram.status` report, read in-process (issue 31)."""

from __future__ import annotations

from pathlib import Path

from memory_core import config, limits
from memory_core.events import Event, append
from memory_core.status import status_facts
from memory_core.store import Store, latest_schema_version


def _settings(workspace: Path, **overrides: object) -> config.Settings:
    return config.load(workspace, overrides=overrides)


def test_status_names_the_store_its_schema_and_row_counts(store: Store, workspace: Path) -> None:
    append(store, Event("file.changed", actor="editor", path="a.py"))
    append(store, Event("file.changed", actor="editor", path="b.py"))
    facts = status_facts(store, _settings(workspace))
    assert facts["root"] == str(workspace)
    assert facts["store"] == str(store.dir)
    assert facts["schema_version"] == facts["schema_latest"] == latest_schema_version()
    assert facts["counts"]["events"] == 2
    assert facts["size_bytes"] == store.size_bytes() > 0
    assert facts["settings_problems"] == []


def test_status_reports_each_retention_rule_with_the_configured_limits(
    store: Store, workspace: Path
) -> None:
    append(store, Event("file.changed", actor="editor", path="a.py"))
    settings = _settings(workspace, **{"timeline.max_entries": 250, "timeline.max_age_days": 12.5})
    retention = {
        rule["table"]: rule for rule in status_facts(store, settings)["limits"]["retention"]
    }
    assert retention["events"] == {
        "table": "events",
        "max_rows": 250,
        "max_age_days": 12.5,
        "rows": 1,
    }
    # deleted items are kept for a number of days, with no row limit
    deleted = retention["deleted_rows"]
    assert deleted["max_rows"] is None
    assert deleted["max_age_days"] == settings["memory.recovery_days"]
    assert deleted["rows"] == 0


def test_status_reports_the_quotas_and_their_use(store: Store, workspace: Path) -> None:
    settings = _settings(
        workspace,
        **{"sessions.quota_bytes": 123_456, "checkpoints.store_cap_bytes": 7_000_000},
    )
    limits = status_facts(store, settings)["limits"]
    assert limits["session_quota_bytes"] == 123_456
    assert limits["checkpoint_store_cap_bytes"] == 7_000_000
    assert limits["session_quota_use"] == []
    assert limits["checkpoints_bytes"] == 0


def test_status_passes_on_the_settings_problems(store: Store, workspace: Path) -> None:
    (workspace / ".engram" / "config.toml").write_text(
        "[timeline]\nmax_entries = 'many'\n", encoding="utf-8"
    )
    settings = config.load(workspace)
    facts = status_facts(store, settings)
    assert facts["settings_problems"] == settings.problems
    assert any("timeline.max_entries" in problem for problem in facts["settings_problems"])


def test_a_rule_limited_by_count_only_reports_no_age(store: Store, workspace: Path) -> None:
    rule = limits.Retention("events", "ts", "timeline.max_entries")
    saved = limits._RULES["events"]
    limits.register(rule)
    try:
        facts = status_facts(store, _settings(workspace))
    finally:
        limits.register(saved)
    events_rule = next(r for r in facts["limits"]["retention"] if r["table"] == "events")
    assert events_rule["max_age_days"] is None and events_rule["max_rows"] == 5000
