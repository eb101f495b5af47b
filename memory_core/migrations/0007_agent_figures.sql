-- A session's figures kept in the session rows themselves, so that retention pruning the
-- per-message and per-call ledgers (90 days by transcript date) never changes them.

-- Tokens and assistant messages, main conversation and subagents apart (largest usage per
-- message id, as the usage accounting tools count them).
ALTER TABLE agent_sessions ADD COLUMN main_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN main_output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN main_cache_creation_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN main_cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN main_messages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN sub_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN sub_output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN sub_cache_creation_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN sub_cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN sub_messages INTEGER NOT NULL DEFAULT 0;
-- What the main conversation did last (reply, tool_call, tool_result, prompt, interrupt): a
-- transcript that ends on a reply belongs to a finished session.
ALTER TABLE agent_sessions ADD COLUMN last_event TEXT;

UPDATE agent_sessions SET
    main_input_tokens = (SELECT COALESCE(SUM(input_tokens), 0) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 0),
    main_output_tokens = (SELECT COALESCE(SUM(output_tokens), 0) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 0),
    main_cache_creation_tokens = (SELECT COALESCE(SUM(cache_creation_tokens), 0) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 0),
    main_cache_read_tokens = (SELECT COALESCE(SUM(cache_read_tokens), 0) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 0),
    main_messages = (SELECT COUNT(*) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 0),
    sub_input_tokens = (SELECT COALESCE(SUM(input_tokens), 0) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 1),
    sub_output_tokens = (SELECT COALESCE(SUM(output_tokens), 0) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 1),
    sub_cache_creation_tokens = (SELECT COALESCE(SUM(cache_creation_tokens), 0) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 1),
    sub_cache_read_tokens = (SELECT COALESCE(SUM(cache_read_tokens), 0) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 1),
    sub_messages = (SELECT COUNT(*) FROM agent_messages m WHERE m.session_id = agent_sessions.session_id AND sidechain = 1);

-- A failed command whose exit code nobody reported (a hook's block, an interruption, an error
-- phrased without "Exit code") is still failed. NULL: decided by the exit code (older rows).
ALTER TABLE session_commands ADD COLUMN failed INTEGER;
-- Files a session changed outside the workspace (a plan under ~/.claude/plans/): listed, never dropped.
ALTER TABLE session_files ADD COLUMN outside INTEGER NOT NULL DEFAULT 0;
