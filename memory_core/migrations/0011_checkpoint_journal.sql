-- What vouched for each checkpoint's interval, so the next one knows what it may trust:
-- JSON {"source": given|watcher|watchman|git|scan, "epoch": the server watcher's life,
-- "watchman": watchman's clock, "git": {"head", "dirty"}, "rules": fingerprint of the
-- ignore settings}. NULL for checkpoints made before: the next checkpoint after them scans.
ALTER TABLE checkpoints ADD COLUMN journal TEXT;
