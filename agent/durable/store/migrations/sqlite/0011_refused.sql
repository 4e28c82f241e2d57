-- Version 11: why the last answer given to a waiting run was not taken (the run's framework could
-- not load its saved state, say), so the person who answered is told on the run, in /pending and
-- in the inbox, not only in a log. NULL when none was refused since the run last moved on.
ALTER TABLE endstate_runs ADD COLUMN refused TEXT
