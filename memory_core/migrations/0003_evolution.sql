-- File evolution: one row per recorded change of a workspace file, or per git operation.
-- `lines` holds the touched line ranges as JSON [[start, end], ...] (1-based, inclusive, in the
-- coordinates of the file after the change); NULL when they are not known (first sight of a file).
-- AUTOINCREMENT: rows folded into a git event are deleted, and their ids must never come back
-- (timeline entries are identified by them).
CREATE TABLE file_changes (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    ts           REAL    NOT NULL,
    path         TEXT,
    old_path     TEXT,
    actor        TEXT    NOT NULL CHECK (actor IN ('editor', 'agent', 'external', 'git')),
    session_id   TEXT,
    change       TEXT    NOT NULL DEFAULT 'modified'
                 CHECK (change IN ('created', 'modified', 'deleted', 'renamed', 'git')),
    lines        TEXT,
    line_count   INTEGER NOT NULL DEFAULT 0,
    hash_before  TEXT,
    hash_after   TEXT,
    size         INTEGER,
    data         TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX file_changes_path_ts ON file_changes(path, ts);
CREATE INDEX file_changes_old_path ON file_changes(old_path) WHERE old_path IS NOT NULL;
CREATE INDEX file_changes_ts ON file_changes(ts);

-- Context snapshots: where the work stood (git, open documents, session) at a moment.
CREATE TABLE snapshots (
    id              TEXT    PRIMARY KEY,
    created_at      REAL    NOT NULL,
    note            TEXT,
    is_repo         INTEGER NOT NULL DEFAULT 0,
    branch          TEXT,
    head            TEXT,
    dirty_files     TEXT    NOT NULL DEFAULT '[]',
    stash_count     INTEGER NOT NULL DEFAULT 0,
    open_documents  TEXT    NOT NULL DEFAULT '[]',
    session_id      TEXT,
    agent           TEXT,
    data            TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX snapshots_created_at ON snapshots(created_at);
