-- Version 2: a claimed run keeps the answer it was claimed with, so that a worker
-- that takes over after a crash can give the same answer again.
ALTER TABLE endstate_runs ADD COLUMN answer TEXT;
ALTER TABLE endstate_runs ADD COLUMN approved INTEGER;
