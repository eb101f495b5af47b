-- Gotchas: known pitfalls with their workarounds, learned from repeated errors or written by people.
CREATE TABLE gotchas (
    id             TEXT PRIMARY KEY,                  -- G-xxxxxxxx
    title          TEXT NOT NULL,
    description    TEXT NOT NULL DEFAULT '',
    category       TEXT NOT NULL DEFAULT 'general',
    severity       TEXT NOT NULL DEFAULT 'medium',
    workaround     TEXT NOT NULL DEFAULT '',
    related_files  TEXT NOT NULL DEFAULT '[]',        -- JSON list of globs
    code_pattern   TEXT,
    pattern_kind   TEXT NOT NULL DEFAULT 'regex',     -- regex | literal
    error_pattern  TEXT,                              -- trigger.error_pattern (normalised error)
    error_hash     TEXT,                              -- hash of the normalised error it was learned from
    source_type    TEXT NOT NULL DEFAULT 'manual',    -- manual | auto_detected | annotation | team
    occurrences    INTEGER NOT NULL DEFAULT 0,
    first_seen     REAL,
    last_seen      REAL,
    samples        TEXT NOT NULL DEFAULT '[]',        -- JSON, at most 5
    provenance     TEXT NOT NULL DEFAULT '{}',        -- JSON: session, tool, command, file, line
    status         TEXT NOT NULL DEFAULT 'confirmed', -- candidate | confirmed | resolved
    snoozed_until  REAL,
    promoted       INTEGER NOT NULL DEFAULT 0,        -- written into team/gotchas.toml
    extra          TEXT NOT NULL DEFAULT '{}',        -- unknown fields of an imported gotcha, kept
    created_at     REAL NOT NULL,
    updated_at     REAL NOT NULL
);
CREATE INDEX gotchas_error_hash ON gotchas(error_hash) WHERE error_hash IS NOT NULL;
CREATE INDEX gotchas_status ON gotchas(status);

-- Where a gotcha was seen in code: a file, a line range and the hash of the text there, so the
-- anchor follows the text when lines move and is flagged stale when the text changes.
CREATE TABLE gotcha_anchors (
    id            INTEGER PRIMARY KEY,
    gotcha_id     TEXT NOT NULL REFERENCES gotchas(id) ON DELETE CASCADE,
    path          TEXT NOT NULL,                      -- workspace-relative, '/' separators
    line          INTEGER NOT NULL,                   -- 0-based
    end_line      INTEGER NOT NULL,
    content_hash  TEXT,
    text          TEXT,
    created_at    REAL NOT NULL,
    UNIQUE (gotcha_id, path, line)
);
CREATE INDEX gotcha_anchors_path ON gotcha_anchors(path);

-- Every tracked error occurrence, counted in a sliding window per normalised-error hash.
CREATE TABLE error_occurrences (
    id          INTEGER PRIMARY KEY,
    hash        TEXT NOT NULL,
    ts          REAL NOT NULL,
    normalized  TEXT NOT NULL,
    message     TEXT NOT NULL,
    file        TEXT,
    line        INTEGER,
    command     TEXT,
    tool        TEXT,
    session_id  TEXT
);
CREATE INDEX error_occurrences_hash_ts ON error_occurrences(hash, ts);
CREATE INDEX error_occurrences_ts ON error_occurrences(ts);
