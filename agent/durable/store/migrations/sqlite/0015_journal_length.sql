-- Version 15: how many journal entries the run has stored, written with them (a checkpoint's, a
-- segment's result, in the same statement or transaction), so that a journal that lost its last
-- entries (a damaged file, rows deleted by hand, an older backup of the entries restored) is told
-- from a whole one when it is read, and in the list of waiting runs. NULL where the run's journal was
-- last written before this column existed: it is read as before until its next write records it.
ALTER TABLE endstate_runs ADD COLUMN journal_length INTEGER
