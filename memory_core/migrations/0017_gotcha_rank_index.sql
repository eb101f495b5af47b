-- What ranking the gotchas for a task reads (memory_core/gotchas/rank_index.py), kept beside
-- them so that a prompt, a session start or a file about to change reads only the gotchas that
-- share something with it, instead of scoring every open gotcha's text on every hook (issue 32).
--
-- The tables hold what Python computes of each gotcha (its words, its error's normal form, its
-- related-file globs); SQL cannot compute them, so the triggers below only mark a gotcha whose
-- text changed as stale, and the next gotcha write or ranking indexes it again. Ranking never
-- trusts a stale gotcha's rows: it scores those from their text, as before.

-- The lower-cased words (`normalize.words`) of a gotcha's title, description, workaround and
-- error pattern.
CREATE TABLE IF NOT EXISTS gotcha_words (
    word       TEXT NOT NULL,
    gotcha_id  TEXT NOT NULL,
    PRIMARY KEY (word, gotcha_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS gotcha_words_gotcha ON gotcha_words(gotcha_id);

-- The normal form of a gotcha's error pattern, lower-cased (only when it is not empty): a task
-- quoting the error contains it, or is contained in it.
CREATE TABLE IF NOT EXISTS gotcha_triggers (
    gotcha_id  TEXT PRIMARY KEY,
    trigger    TEXT NOT NULL
) WITHOUT ROWID;

-- A gotcha's related-file globs. A glob without wildcards (`wild` 0) names a file at the root
-- or in any folder, so it is found by key; the others are matched one by one.
CREATE TABLE IF NOT EXISTS gotcha_globs (
    glob       TEXT NOT NULL,
    gotcha_id  TEXT NOT NULL,
    wild       INTEGER NOT NULL,
    PRIMARY KEY (glob, gotcha_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS gotcha_globs_wild ON gotcha_globs(wild, gotcha_id);
CREATE INDEX IF NOT EXISTS gotcha_globs_gotcha ON gotcha_globs(gotcha_id);

-- Gotchas whose rows above are missing or out of date.
CREATE TABLE IF NOT EXISTS gotcha_rank_stale (
    gotcha_id  TEXT PRIMARY KEY
) WITHOUT ROWID;

-- A task naming a category finds its gotchas by key.
CREATE INDEX IF NOT EXISTS gotchas_category ON gotchas(category);

CREATE TRIGGER IF NOT EXISTS gotchas_rank_insert AFTER INSERT ON gotchas BEGIN
    INSERT OR IGNORE INTO gotcha_rank_stale (gotcha_id) VALUES (new.id);
END;

CREATE TRIGGER IF NOT EXISTS gotchas_rank_update AFTER UPDATE ON gotchas
WHEN old.id IS NOT new.id OR old.title IS NOT new.title
    OR old.description IS NOT new.description OR old.workaround IS NOT new.workaround
    OR old.error_pattern IS NOT new.error_pattern OR old.related_files IS NOT new.related_files
BEGIN
    INSERT OR IGNORE INTO gotcha_rank_stale (gotcha_id) VALUES (new.id);
    DELETE FROM gotcha_words WHERE gotcha_id = old.id AND old.id IS NOT new.id;
    DELETE FROM gotcha_triggers WHERE gotcha_id = old.id AND old.id IS NOT new.id;
    DELETE FROM gotcha_globs WHERE gotcha_id = old.id AND old.id IS NOT new.id;
END;

CREATE TRIGGER IF NOT EXISTS gotchas_rank_delete AFTER DELETE ON gotchas BEGIN
    DELETE FROM gotcha_words WHERE gotcha_id = old.id;
    DELETE FROM gotcha_triggers WHERE gotcha_id = old.id;
    DELETE FROM gotcha_globs WHERE gotcha_id = old.id;
    DELETE FROM gotcha_rank_stale WHERE gotcha_id = old.id;
END;

-- Every gotcha already stored is indexed by the first write or ranking after this migration
-- (the index's version in store_meta, `gotchas.rank_index`, is not set yet).
