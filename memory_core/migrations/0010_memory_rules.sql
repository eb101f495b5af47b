-- Memory rules of seed 003 (BMAD) and Claude Code's / Gemini CLI's own memory files.

-- A finding's severity or a decision's implementation impact: an open critical finding never
-- decays below 0.8, an open decision of high or critical impact never below 0.9
-- (memory_core.decay). NULL: not said.
ALTER TABLE memories ADD COLUMN impact TEXT
    CHECK (impact IS NULL OR impact IN ('critical', 'high', 'medium', 'low'));

-- Lines an agent wrote into its own memory file (CLAUDE.md, MEMORY.md, GEMINI.md) that were
-- taken into engram's memory, by a hash of the line's text: a line is imported once, and a
-- memory forgotten in engram does not come back from the file at the next sync.
CREATE TABLE memory_file_lines (
    path         TEXT NOT NULL,
    line_hash    TEXT NOT NULL,
    memory_id    TEXT,
    imported_at  REAL NOT NULL,
    PRIMARY KEY (path, line_hash)
) WITHOUT ROWID;
