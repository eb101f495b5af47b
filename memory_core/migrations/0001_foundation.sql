-- The append-only event log every feature writes to, and a key/value table for store facts.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY,
    ts          REAL    NOT NULL,
    kind        TEXT    NOT NULL,
    actor       TEXT,
    session_id  TEXT,
    path        TEXT,
    data        TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX events_ts ON events(ts);
CREATE INDEX events_kind_ts ON events(kind, ts);
CREATE INDEX events_path_ts ON events(path, ts);

-- Append-only: rows may be removed by retention, never rewritten.
CREATE TRIGGER events_append_only BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

CREATE TABLE store_meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
