"""Agent integration: Claude Code and Gemini CLI hooks, transcript ingest, digests, session-start memory.

Modules:
- `payload`: hook input (JSON on stdin) parsed tolerantly into one shape for both agents.
- `transcripts`: Claude Code JSONL parsed into plain records and ingested incrementally.
- `record`: the one place tool calls, turns and sessions reach the other areas (sessions,
  gotchas, file evolution), de-duplicated so hooks and the ingest never count a thing twice.
- `digest`: the YAML digests written before compaction, at session end and on a timer.
- `context`: the memory printed at session start, within a token budget.
- `hooks`: dispatch of `engram hook AGENT EVENT`.
- `install`: merging engram's hook entries into the agents' settings files.

Everything here must stay cheap to import: the hook path runs as a cold process on every tool call.
"""
