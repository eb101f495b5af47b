-- Sessions of an agent or of the editor, with what happened in them, and checkpoints of the
-- workspace's files (content-addressed blobs, per-directory trees, one manifest per checkpoint).

CREATE TABLE sessions (
    id               TEXT PRIMARY KEY,
    -- A saved session's name; unique so `engram session load NAME` means one session.
    name             TEXT UNIQUE,
    agent            TEXT NOT NULL DEFAULT 'editor',
    session_type     TEXT NOT NULL DEFAULT 'new',      -- new | existing | workflow
    status           TEXT NOT NULL DEFAULT 'active',   -- active | compacted | closed
    -- What the last recorded action was: turn, tool, file, command, pause, completion, abort.
    -- Crash detection asks whether a silent session stopped on purpose.
    last_action      TEXT NOT NULL DEFAULT 'start',
    end_reason       TEXT,
    started_at       REAL NOT NULL,
    last_activity_at REAL NOT NULL,
    ended_at         REAL,
    saved_at         REAL,
    rolling_summary  TEXT NOT NULL DEFAULT '',
    -- SessionSummary written by an agent or set by hand; JSON lists for the plural fields.
    overview         TEXT,
    decisions        TEXT NOT NULL DEFAULT '[]',
    outcomes         TEXT NOT NULL DEFAULT '[]',
    open_items       TEXT NOT NULL DEFAULT '[]',
    tags             TEXT NOT NULL DEFAULT '[]',
    summary_source   TEXT,                              -- NULL (facts only) | agent | user
    search_footprint TEXT NOT NULL DEFAULT '[]',
    turn_count       INTEGER NOT NULL DEFAULT 0,
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    bytes_used       INTEGER NOT NULL DEFAULT 0,
    data             TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX sessions_activity ON sessions(last_activity_at);

CREATE TABLE session_turns (
    id                 INTEGER PRIMARY KEY,
    session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq                INTEGER NOT NULL,
    user_message       TEXT,
    assistant_response TEXT,
    tool_calls         TEXT NOT NULL DEFAULT '[]',
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    started_at         REAL,
    ended_at           REAL,
    UNIQUE (session_id, seq)
);

CREATE TABLE session_tool_calls (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    tool        TEXT NOT NULL,
    ok          INTEGER NOT NULL,
    summary     TEXT,
    ts          REAL NOT NULL
);
CREATE INDEX session_tool_calls_session ON session_tool_calls(session_id, ts);

CREATE TABLE session_files (
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path        TEXT NOT NULL,
    first_ts    REAL NOT NULL,
    last_ts     REAL NOT NULL,
    changes     INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (session_id, path)
) WITHOUT ROWID;

CREATE TABLE session_commands (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    command     TEXT NOT NULL,
    exit_code   INTEGER,
    ts          REAL NOT NULL
);
CREATE INDEX session_commands_session ON session_commands(session_id, ts);

-- Every save of a session: the whole session as a versioned JSON document (format_version),
-- so an older engram's save still loads and a newer one's is refused.
CREATE TABLE saved_sessions (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL,
    name            TEXT,
    format_version  INTEGER NOT NULL,
    saved_at        REAL NOT NULL,
    payload         BLOB NOT NULL,
    size            INTEGER NOT NULL
);
CREATE INDEX saved_sessions_session ON saved_sessions(session_id, saved_at);

-- Checkpoints. A blob is one file's content, zstd-compressed, keyed by the SHA-256 of the
-- uncompressed bytes, shared by every checkpoint that holds that content.
CREATE TABLE checkpoint_blobs (
    hash         TEXT PRIMARY KEY,
    size         INTEGER NOT NULL,
    stored_size  INTEGER NOT NULL,
    data         BLOB NOT NULL
) WITHOUT ROWID;

-- One directory's listing (name, kind, mode, hash, size), content-addressed like git's trees:
-- a checkpoint rewrites only the trees above the files that changed.
CREATE TABLE checkpoint_trees (
    hash   TEXT PRIMARY KEY,
    data   BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE checkpoints (
    id           TEXT PRIMARY KEY,
    name         TEXT,
    description  TEXT,
    reason       TEXT NOT NULL DEFAULT 'manual',   -- manual | burst | turns | pre-rollback | auto
    session_id   TEXT,
    created_at   REAL NOT NULL,
    root_tree    TEXT NOT NULL,
    file_count   INTEGER NOT NULL,
    total_bytes  INTEGER NOT NULL,
    -- Bytes this checkpoint added to the store (new blobs and trees), for `engram status`.
    added_bytes  INTEGER NOT NULL DEFAULT 0,
    changed      INTEGER NOT NULL DEFAULT 0,
    skipped      TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX checkpoints_created ON checkpoints(created_at);

-- Whoever removes a checkpoint (retention in limits.enforce, a delete), its blobs may now be
-- unreferenced: flag it so the next capture collects them.
CREATE TRIGGER checkpoints_deleted AFTER DELETE ON checkpoints
BEGIN
    INSERT INTO store_meta (key, value) VALUES ('checkpoints.gc_needed', '1')
        ON CONFLICT (key) DO UPDATE SET value = '1';
END;

-- The stat cache (git's index): what each file looked like when it was last hashed, so an
-- unchanged file is recognised by lstat alone and never read again.
CREATE TABLE checkpoint_index (
    path      TEXT PRIMARY KEY,
    mtime_ns  INTEGER NOT NULL,
    size      INTEGER NOT NULL,
    ino       INTEGER NOT NULL,
    mode      INTEGER NOT NULL,
    hash      TEXT NOT NULL
) WITHOUT ROWID;
