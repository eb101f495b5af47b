"""Bounded size for what the agent integration stores (docs/design.md section 8).

What agents did (tool calls, usage, prompts, compactions, digests, finished turns) is kept as
long as the timeline is (`timeline.max_age_days`). Registered here, not in `record`, so the
tool-call hook does not pay for loading the settings machinery; imported where the rules run:
the SessionEnd hook and `engram ingest`.
"""

from __future__ import annotations

from memory_core import limits

for _table, _column in (
    ("agent_tool_uses", "ts"),
    ("agent_messages", "ts"),
    ("agent_prompts", "ts"),
    ("agent_compactions", "ts"),
    ("digests", "ts"),
):
    limits.register(limits.Retention(_table, _column, None, "timeline.max_age_days"))
# A turn still open (recorded = 0) is carried by the next ingest run: never dropped by age alone.
limits.register(
    limits.Retention("agent_turns", "started_at", None, "timeline.max_age_days", "recorded = 0")
)
