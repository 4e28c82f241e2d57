-- Version 16: indexes for the listings' filters, so that a page of the runs, audits or waiting runs
-- of an agent or a task type (as an alert's labels name them) reads what it shows, not the whole
-- store. Fewer than on SQLite: PostgreSQL plans with statistics, so it pages the runs of a common
-- agent or status over the start time's index, filtered, and those of a rare one (or of an agent's
-- task type, both indexes combined) over these, sorting the few it found. Every index on the runs
-- costs a checkpoint: its UPDATE of the run's row adds an entry to each index whenever the new row
-- does not fit on its page (on a store of many finished runs, nearly always: no HOT update), so
-- only the two the filters cannot do without are made here. The waiting runs of an agent or a task
-- type are read over schema 10's partial (status, agent, task type) index, or these.
-- `endstate runs`, GET /runs and the review queue: of an agent, of a task type.
CREATE INDEX IF NOT EXISTS endstate_runs_agent ON endstate_runs (agent, started_at);
CREATE INDEX IF NOT EXISTS endstate_runs_type ON endstate_runs (task_type, started_at);
-- `audit --list`, the newest first (made, or due: `COALESCE(checked_at, due_at)`, as the query
-- orders them): every audit, or of an outcome, an agent, a task type.
CREATE INDEX IF NOT EXISTS endstate_audits_listed ON endstate_audits ((COALESCE(checked_at, due_at)) DESC, run_id);
CREATE INDEX IF NOT EXISTS endstate_audits_outcome ON endstate_audits (outcome, (COALESCE(checked_at, due_at)) DESC, run_id);
CREATE INDEX IF NOT EXISTS endstate_audits_agent ON endstate_audits (agent, (COALESCE(checked_at, due_at)) DESC, run_id);
CREATE INDEX IF NOT EXISTS endstate_audits_type ON endstate_audits (task_type, (COALESCE(checked_at, due_at)) DESC, run_id)
