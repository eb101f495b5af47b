-- The seeds' session formats (issue 14): the conversation a checkpoint belongs to (beans),
-- the AIOS session state (type, agents, commands, workflow, task) and the task in a snapshot.

-- A checkpoint remembers the session and turn it was taken at (session_id already exists) and
-- the session's summary fields as they stood then, so a rollback can rewind the conversation.
ALTER TABLE checkpoints ADD COLUMN turn_number INTEGER;
ALTER TABLE checkpoints ADD COLUMN session_state TEXT;

-- AIOS session state: who worked last, what they ran, which workflow and task are in progress.
-- JSON lists, newest last, bounded as AIOS bounds them (20 agents, 10 commands).
ALTER TABLE sessions ADD COLUMN agent_sequence TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sessions ADD COLUMN last_commands TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sessions ADD COLUMN active_workflow TEXT;
ALTER TABLE sessions ADD COLUMN workflow_state TEXT;
ALTER TABLE sessions ADD COLUMN active_story TEXT;
ALTER TABLE sessions ADD COLUMN active_subtask TEXT;

-- A context snapshot carries the task in progress (AIOS: storyId, subtask).
ALTER TABLE snapshots ADD COLUMN story_id TEXT;
ALTER TABLE snapshots ADD COLUMN subtask TEXT;
