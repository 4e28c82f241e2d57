-- Version 14: the last answer a person gave that a run was claimed with, kept after the run goes on
-- (answer, approved and answered_at are cleared when its segment ends): who gave it (the name given
-- with it; NULL when none was given), when, its kind ('answer', 'approved' or 'denied') and its text
-- (a denial's reason; NULL for an approval). A second person whose answer came too late is told whose
-- won, and the run's pages show it. NULL on runs never answered, and on those answered before.
ALTER TABLE endstate_runs ADD COLUMN last_answer_by TEXT;
ALTER TABLE endstate_runs ADD COLUMN last_answer_at DOUBLE PRECISION;
ALTER TABLE endstate_runs ADD COLUMN last_answer_kind TEXT;
ALTER TABLE endstate_runs ADD COLUMN last_answer TEXT
