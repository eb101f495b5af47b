"""Bounded size for what the agent integration stores (docs/design.md section 8).

What agents did (tool calls, usage, prompts, compactions, digests, finished turns) is kept as
long as the timeline is (`timeline.max_age_days`). The ledgers that make a message, a prompt, a
tool call or a compaction count once keep their keys past that age (their text goes): without
them, the same transcript read again from another path, or a resumed session replaying its
parent's lines, would count everything a second time. Registered here, not in `record`, so the
tool-call hook does not pay for loading the settings machinery; imported where the rules run:
the SessionEnd hook and `engram ingest`.
"""

from __future__ import annotations

from memory_core import limits

limits.register(limits.Retention("digests", "ts", None, "timeline.max_age_days"))
for _table, _strip, _stripped in (
    (
        "agent_tool_uses",
        "path = NULL, command = NULL, error = NULL",
        "path IS NULL AND command IS NULL AND error IS NULL",
    ),
    ("agent_prompts", "text = ''", "text = ''"),
    ("agent_compactions", "summary = NULL", "summary IS NULL"),
):
    limits.register(
        limits.Retention(
            _table, "ts", None, "timeline.max_age_days", strip=_strip, stripped=_stripped
        )
    )
# agent_messages holds numbers only (the usage ledger): its rows are its keys.
# A turn still open (recorded = 0) is carried by the next ingest run: never dropped by age alone.
limits.register(
    limits.Retention("agent_turns", "started_at", None, "timeline.max_age_days", "recorded = 0")
)
