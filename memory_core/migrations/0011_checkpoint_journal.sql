-- What vouched for each checkpoint's interval, so the next one knows what it may trust:
-- JSON {"source": given|watcher|watchman|git|scan, "epoch": the server watcher's life,
-- "watchman": watchman's clock, "git": {"head", "dirty"}, "rules": fingerprint of the
-- ignore settings}. NULL for checkpoints made before: the next checkpoint after them scans.
ALTER TABLE checkpoints ADD COLUMN journal TEXT;

-- Blobs stored from now on: keyed by the raw 32-byte SHA-256 (half the key of the hex text),
-- and small ones packed: many blobs concatenated and compressed as one row of
-- `checkpoint_packs` (similar files compress far better together, as in git's packs); `offset`
-- and `size` find one inside its pack. Large blobs keep their own compressed `data`.
-- Blobs stored before stay in `checkpoint_blobs` and are still read from there.
CREATE TABLE checkpoint_objects (
    hash    BLOB PRIMARY KEY,
    size    INTEGER NOT NULL,
    pack    INTEGER,
    offset  INTEGER NOT NULL DEFAULT 0,
    data    BLOB
) WITHOUT ROWID;

-- AUTOINCREMENT: a pack id is never reused, so a cached pack can never be mistaken for another.
CREATE TABLE checkpoint_packs (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    raw_size  INTEGER NOT NULL,   -- bytes once decompressed: GC repacks a mostly dead pack
    data      BLOB NOT NULL
);

-- Listings in a rowid table: a listing of a few KB fills its overflow pages instead of leaving
-- most of an index page empty.
CREATE TABLE checkpoint_trees_listed (
    id    INTEGER PRIMARY KEY,
    hash  TEXT NOT NULL UNIQUE,
    data  BLOB NOT NULL
);
INSERT INTO checkpoint_trees_listed (hash, data) SELECT hash, data FROM checkpoint_trees;
DROP TABLE checkpoint_trees;
ALTER TABLE checkpoint_trees_listed RENAME TO checkpoint_trees;

-- The stat cache keeps raw 32-byte hashes from now on; it is only a cache: the next
-- checkpoint reads each file once more and fills it again.
DELETE FROM checkpoint_index;
