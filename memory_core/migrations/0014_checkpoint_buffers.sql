-- The unsaved text of open editor buffers that a rollback replaced, kept with that rollback's
-- pre-rollback checkpoint: rolling back to that checkpoint (undoing the rollback) puts the text
-- back in the buffers, unsaved, as it was. The text as the editor had it, like the content of
-- checkpointed files (docs/checkpoints-and-sessions.md).
CREATE TABLE IF NOT EXISTS checkpoint_buffers (
    checkpoint_id TEXT NOT NULL,
    path          TEXT NOT NULL,
    text          TEXT NOT NULL,
    PRIMARY KEY (checkpoint_id, path)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS checkpoint_buffers_deleted AFTER DELETE ON checkpoints
BEGIN
    DELETE FROM checkpoint_buffers WHERE checkpoint_id = OLD.id;
END;
