-- Every hook measures its session's use of the quota (memory_core/quota.py: the bytes of every
-- row that names the session) and the session's end reads its events back; on these tables
-- that was a scan of the whole table, so a hook grew slower with every session the store kept.
-- Partial indexes: rows of no session (most events of an editor's typing) cost nothing, and
-- `session_id = ?` still uses them (it implies IS NOT NULL).
CREATE INDEX IF NOT EXISTS events_session ON events(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS error_occurrences_session
    ON error_occurrences(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS file_changes_session
    ON file_changes(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS snapshots_session ON snapshots(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS checkpoints_session
    ON checkpoints(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS search_docs_session
    ON search_docs(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS agent_ingest_offsets_session
    ON agent_ingest_offsets(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS agent_compactions_session
    ON agent_compactions(session_id) WHERE session_id IS NOT NULL;
