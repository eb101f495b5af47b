-- Agent integration (Claude Code, Gemini CLI): what the hooks and the transcript ingest saw.
-- These tables are the de-duplication ledger between the two sources (a tool call seen by a
-- PostToolUse hook and again in the transcript is recorded once) and the raw material of
-- digests and of the text injected at session start. Sessions, turns, gotchas and file
-- evolution themselves live in their owners' tables; these never reference them by foreign key
-- so that the agent side keeps working whatever order the migrations land in.

-- One row per transcript file: how far the ingest got. `offset` is always at a line boundary;
-- `head` (the first bytes) detects a file that was replaced rather than appended to.
CREATE TABLE agent_ingest_offsets (
    path        TEXT PRIMARY KEY,
    agent       TEXT    NOT NULL,
    session_id  TEXT,
    offset      INTEGER NOT NULL DEFAULT 0,
    size        INTEGER NOT NULL DEFAULT 0,
    head        TEXT    NOT NULL DEFAULT '',
    lines       INTEGER NOT NULL DEFAULT 0,
    updated_at  REAL    NOT NULL
);

-- One row per agent session, whatever fed it (hooks, transcript or both).
CREATE TABLE agent_sessions (
    session_id       TEXT PRIMARY KEY,
    agent            TEXT NOT NULL,
    transcript_path  TEXT,
    cwd              TEXT,
    git_branch       TEXT,
    model            TEXT,
    started_at       REAL NOT NULL,
    last_seen        REAL NOT NULL,
    ended_at         REAL,
    end_reason       TEXT,
    last_digest_at   REAL,
    compactions      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX agent_sessions_last_seen ON agent_sessions(last_seen);

-- Turns: a human prompt and everything the agent did until it finished answering. `uuid` is the
-- prompt's transcript line uuid (or a hook-made id); `recorded` = 1 once handed to sessions.
CREATE TABLE agent_turns (
    uuid                TEXT PRIMARY KEY,
    session_id          TEXT    NOT NULL,
    started_at          REAL    NOT NULL,
    ended_at            REAL,
    user_message        TEXT    NOT NULL DEFAULT '',
    assistant_response  TEXT    NOT NULL DEFAULT '',
    tool_calls          TEXT    NOT NULL DEFAULT '[]',
    input_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens       INTEGER NOT NULL DEFAULT 0,
    recorded            INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX agent_turns_session ON agent_turns(session_id, started_at);

-- Token usage per API response (message.id), kept at the largest value seen, as ccusage does.
CREATE TABLE agent_messages (
    message_key            TEXT PRIMARY KEY,
    session_id             TEXT    NOT NULL,
    turn_uuid              TEXT,
    ts                     REAL    NOT NULL,
    model                  TEXT,
    sidechain              INTEGER NOT NULL DEFAULT 0,
    input_tokens           INTEGER NOT NULL DEFAULT 0,
    output_tokens          INTEGER NOT NULL DEFAULT 0,
    cache_creation_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX agent_messages_turn ON agent_messages(turn_uuid);
CREATE INDEX agent_messages_session ON agent_messages(session_id);

-- Every tool call once, by its tool_use id; the ledger shared by hooks and the ingest.
CREATE TABLE agent_tool_uses (
    tool_use_id  TEXT PRIMARY KEY,
    session_id   TEXT    NOT NULL,
    ts           REAL    NOT NULL,
    tool         TEXT    NOT NULL,
    ok           INTEGER,
    sidechain    INTEGER NOT NULL DEFAULT 0,
    path         TEXT,
    command      TEXT,
    error        TEXT
);
CREATE INDEX agent_tool_uses_session ON agent_tool_uses(session_id, ts);

-- Human prompts (redacted): the source of user corrections and axioms.
CREATE TABLE agent_prompts (
    uuid        TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    ts          REAL NOT NULL,
    text        TEXT NOT NULL
);
CREATE INDEX agent_prompts_session ON agent_prompts(session_id, ts);

-- Compactions seen in transcripts or hooks, with the model-written summary when there is one.
CREATE TABLE agent_compactions (
    uuid        TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    ts          REAL NOT NULL,
    trigger     TEXT,
    pre_tokens  INTEGER,
    summary     TEXT
);

-- Digests written before compaction, at session end and on a timer.
CREATE TABLE digests (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL,
    ts              REAL NOT NULL,
    trigger         TEXT NOT NULL,
    schema_version  TEXT NOT NULL,
    path            TEXT NOT NULL,
    content         TEXT NOT NULL
);
CREATE INDEX digests_session ON digests(session_id, ts);
