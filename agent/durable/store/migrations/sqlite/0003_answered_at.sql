-- Version 3: when the answer a run was claimed with came. A worker that takes the run over
-- after a crash resumes it as of that moment, so an answer given in time is never expired.
ALTER TABLE endstate_runs ADD COLUMN answered_at REAL;
