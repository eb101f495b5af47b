-- The stat cache compares the change time too, as git's index does: putting a file's mtime back
-- after a same-size edit (`touch -r`, `cp -p`, `rsync -t`) leaves mtime, size and inode as they
-- were, but the kernel moves the change time on every write and on every mtime set. Rows made
-- before have 0 and are read once more.
ALTER TABLE checkpoint_index ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0;
