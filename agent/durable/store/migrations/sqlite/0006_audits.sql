-- Version 6: success audits. A share of the runs that ended `success` is re-checked later by an
-- independent check; each audit is due at `due_at` and keeps its outcome once checked.
CREATE TABLE endstate_audits (
    run_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    task_type TEXT NOT NULL,
    due_at DOUBLE PRECISION NOT NULL,
    outcome TEXT,
    note TEXT NOT NULL DEFAULT '',
    checked_at DOUBLE PRECISION
);
CREATE INDEX endstate_audits_due ON endstate_audits (outcome, due_at);
