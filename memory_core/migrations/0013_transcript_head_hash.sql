-- A transcript was recognised by its first 512 bytes, kept hex-encoded: a session's first
-- prompt, secrets included, in clear. It is now recognised by a hash of its head
-- (`<n>:<sha256>`). The bytes kept before are dropped: an empty head means "not known", and the
-- next ingest trusts the offset it had and records the hash.
-- secure_delete: the freed bytes are overwritten, not left in the database file's free space.
PRAGMA secure_delete = ON;
UPDATE agent_ingest_offsets SET head = '' WHERE head NOT LIKE '%:%';
PRAGMA secure_delete = OFF;
