"""What `engram status` and the server's `engram.status` command report about a store.

In the core so that the language server never imports the command line.
"""

from __future__ import annotations

from typing import Any

from memory_core import checkpoints, config, limits, quota
from memory_core.store import Store, latest_schema_version


def status_facts(store: Store, settings: config.Settings) -> dict[str, Any]:
    counts = store.counts()
    retention = []
    for rule in limits.rules():
        retention.append(
            {
                "table": rule.table,
                "max_rows": settings[rule.count_setting] if rule.count_setting else None,
                "max_age_days": settings[rule.age_setting] if rule.age_setting else None,
                "rows": counts.get(rule.table),
            }
        )
    return {
        "root": str(store.root),
        "store": str(store.dir),
        "schema_version": store.schema_version,
        "schema_latest": latest_schema_version(),
        "size_bytes": store.size_bytes(),
        "counts": counts,
        "limits": {
            "retention": retention,
            "session_quota_bytes": settings["sessions.quota_bytes"],
            "session_quota_use": quota.status(store, settings),
            "checkpoint_store_cap_bytes": settings["checkpoints.store_cap_bytes"],
            "checkpoints_bytes": checkpoints.space(store)["stored_bytes"],
        },
        "settings_problems": settings.problems,
    }
