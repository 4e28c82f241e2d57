-- Version 12: the snapshot version of the run's saved head, written with the head, so that recovery and
-- the deadline sweep tell from their listing (not a read of each run's whole row) whether a newer
-- Endstate saved the run (a rolling deploy: it is left for a runner of that version). NULL where the
-- head was saved before this column existed: by an Endstate no newer than the one that added it.
ALTER TABLE endstate_runs ADD COLUMN head_version INTEGER
