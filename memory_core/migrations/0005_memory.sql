-- Long-term memory (issue 7): entries, tags, relations, full-text search, deletion records.

-- `seq` is the FTS rowid: an INTEGER PRIMARY KEY survives VACUUM, an implicit rowid may not.
CREATE TABLE memories (
    seq            INTEGER PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE,
    type           TEXT    NOT NULL
                   CHECK (type IN ('project', 'preference', 'action', 'decision', 'finding', 'learning')),
    content        TEXT    NOT NULL,
    tags           TEXT    NOT NULL DEFAULT '',
    created_at     REAL    NOT NULL,
    last_accessed  REAL    NOT NULL,
    access_count   INTEGER NOT NULL DEFAULT 0,
    base_priority  REAL    NOT NULL DEFAULT 1.0,
    pinned         INTEGER NOT NULL DEFAULT 0,
    -- An explicit preference (the user said so) never decays below 0.6.
    explicit       INTEGER NOT NULL DEFAULT 0,
    -- open: in force; resolved: a finding that was fixed or a decision that was closed;
    -- archived: moved out of the way by quota compaction (kept, not searched by default).
    status         TEXT    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved', 'archived')),
    agent          TEXT,
    session_id     TEXT,
    provenance     TEXT    NOT NULL DEFAULT '{}',
    project        TEXT,
    -- A cited place in the code (workspace-relative, 1-based lines) and the hash of the cited
    -- lines (memory_core.drift.anchor), so drift can tell when the cited code changed.
    file           TEXT,
    line           INTEGER,
    end_line       INTEGER,
    anchor         TEXT
);
CREATE INDEX memories_type ON memories(type);
CREATE INDEX memories_session ON memories(session_id);
CREATE INDEX memories_agent ON memories(agent);
CREATE INDEX memories_created ON memories(created_at);

CREATE TABLE memory_tags (
    tag        TEXT NOT NULL,
    memory_id  TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    PRIMARY KEY (tag, memory_id)
) WITHOUT ROWID;
CREATE INDEX memory_tags_memory ON memory_tags(memory_id);

CREATE TABLE memory_relations (
    source_id   TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('resolves', 'led_to', 'influenced')),
    target_id   TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    created_at  REAL NOT NULL,
    PRIMARY KEY (source_id, kind, target_id)
) WITHOUT ROWID;
CREATE INDEX memory_relations_target ON memory_relations(target_id);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags, content='memories', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.seq, new.content, new.tags);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.seq, old.content, old.tags);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.seq, old.content, old.tags);
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.seq, new.content, new.tags);
END;

-- The shared search index other areas feed (gotchas, session summaries, digests) through
-- memory_core.search_index.upsert(); one row per (kind, ref_id).
CREATE TABLE search_docs (
    seq            INTEGER PRIMARY KEY,
    kind           TEXT NOT NULL,
    ref_id         TEXT NOT NULL,
    title          TEXT NOT NULL DEFAULT '',
    body           TEXT NOT NULL DEFAULT '',
    tags           TEXT NOT NULL DEFAULT '',
    session_id     TEXT,
    agent          TEXT,
    created_at     REAL NOT NULL,
    last_accessed  REAL NOT NULL,
    access_count   INTEGER NOT NULL DEFAULT 0,
    resolved       INTEGER NOT NULL DEFAULT 0,
    UNIQUE (kind, ref_id)
);
CREATE VIRTUAL TABLE search_docs_fts USING fts5(
    title, body, tags, content='search_docs', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER search_docs_fts_insert AFTER INSERT ON search_docs BEGIN
    INSERT INTO search_docs_fts(rowid, title, body, tags) VALUES (new.seq, new.title, new.body, new.tags);
END;
CREATE TRIGGER search_docs_fts_delete AFTER DELETE ON search_docs BEGIN
    INSERT INTO search_docs_fts(search_docs_fts, rowid, title, body, tags)
        VALUES ('delete', old.seq, old.title, old.body, old.tags);
END;
CREATE TRIGGER search_docs_fts_update AFTER UPDATE OF title, body, tags ON search_docs BEGIN
    INSERT INTO search_docs_fts(search_docs_fts, rowid, title, body, tags)
        VALUES ('delete', old.seq, old.title, old.body, old.tags);
    INSERT INTO search_docs_fts(rowid, title, body, tags) VALUES (new.seq, new.title, new.body, new.tags);
END;

-- What the index last saw of each source table, so a search re-reads only what changed.
CREATE TABLE search_sources (
    kind       TEXT PRIMARY KEY,
    signature  TEXT NOT NULL
);

-- Deletion records: what was deleted, when and why, and until when it can be undeleted.
CREATE TABLE deletions (
    id             TEXT PRIMARY KEY,
    created_at     REAL NOT NULL,
    what           TEXT NOT NULL,
    selector       TEXT NOT NULL DEFAULT '{}',
    reason         TEXT,
    actor          TEXT,
    counts         TEXT NOT NULL DEFAULT '{}',
    -- The ids of the memories and sessions it took (ids only, no content): `undelete ID`
    -- finds the deletion by them, and says so when they were purged.
    items          TEXT NOT NULL DEFAULT '[]',
    recover_until  REAL NOT NULL,
    state          TEXT NOT NULL DEFAULT 'deleted' CHECK (state IN ('deleted', 'restored', 'purged')),
    restored_at    REAL,
    purged_at      REAL
);
CREATE INDEX deletions_state ON deletions(state, recover_until);

-- The rows a deletion removed (JSON, with their table), kept until purge so undelete can put
-- them back exactly; purge removes them for good.
CREATE TABLE deleted_rows (
    deletion_id  TEXT    NOT NULL REFERENCES deletions(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    table_name   TEXT    NOT NULL,
    row          TEXT    NOT NULL,
    deleted_at   REAL    NOT NULL,
    PRIMARY KEY (deletion_id, seq)
) WITHOUT ROWID;

-- Rows quota compaction archived: compressed JSON, restorable, out of the live tables.
CREATE TABLE archived_rows (
    id           INTEGER PRIMARY KEY,
    archived_at  REAL NOT NULL,
    reason       TEXT NOT NULL,
    session_id   TEXT,
    table_name   TEXT NOT NULL,
    ref_id       TEXT,
    data         BLOB NOT NULL
);
CREATE INDEX archived_rows_session ON archived_rows(session_id);
