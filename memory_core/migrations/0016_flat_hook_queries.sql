-- A hook's cost must not grow with the store (issue 32). Two kinds of statement still read a
-- whole table on every hook or every session end:
--
-- 1. The quota's measure of a session (memory_core/quota.py, every hook) on agent_compactions:
--    0015's partial index `WHERE session_id IS NOT NULL` is never chosen there, because the
--    column is declared NOT NULL (SQLite drops the implied term before it matches partial
--    indexes). A plain index replaces it.
DROP INDEX IF EXISTS agent_compactions_session;
CREATE INDEX IF NOT EXISTS agent_compactions_session_id ON agent_compactions(session_id);

-- 2. The retention sweeps at each session's end (memory_core/limits.py, agents/retention.py):
--    `ts < cutoff` on tables without an index on their time. Tables whose old rows go: a plain
--    index on the time, so the sweep reads only what it removes.
CREATE INDEX IF NOT EXISTS digests_ts ON digests(ts);
CREATE INDEX IF NOT EXISTS agent_turns_started ON agent_turns(started_at);
CREATE INDEX IF NOT EXISTS deleted_rows_deleted_at ON deleted_rows(deleted_at);
-- Ledgers whose old rows stay (their detail is emptied, their keys kept): an index of the rows
-- not yet emptied only, so the sweep does not walk every old, emptied row again each time.
-- Each WHERE is, word for word, `NOT (<the rule's stripped condition>)` as the sweep writes it:
-- SQLite uses a partial index only for a query whose terms contain its condition.
CREATE INDEX IF NOT EXISTS agent_tool_uses_unstripped_ts ON agent_tool_uses(ts)
    WHERE NOT (path IS NULL AND command IS NULL AND error IS NULL);
CREATE INDEX IF NOT EXISTS agent_prompts_unstripped_ts ON agent_prompts(ts)
    WHERE NOT (text = '');
CREATE INDEX IF NOT EXISTS agent_compactions_unstripped_ts ON agent_compactions(ts)
    WHERE NOT (summary IS NULL);
