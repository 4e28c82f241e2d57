-- Version 16: indexes for the listings' filters, so that a page of the runs, audits or waiting runs
-- of an agent, a task type (as an alert's labels name them) or a status reads what it shows, not the
-- whole store. Each holds a filter's columns, then the listing's order: the page is read in order,
-- and nothing is sorted. None holds a column a checkpoint writes (a run's usage, head, lease, update
-- time): SQLite leaves an index alone when an UPDATE changes none of its columns, so a turn writes
-- what it wrote before. They cost a run's start, and its status changes (a few a run), a little.
-- `endstate runs` and GET /runs, the newest first: of an agent, a task type, both, a status, a
-- status and an agent.
CREATE INDEX IF NOT EXISTS endstate_runs_agent ON endstate_runs (agent, started_at);
CREATE INDEX IF NOT EXISTS endstate_runs_type ON endstate_runs (task_type, started_at);
CREATE INDEX IF NOT EXISTS endstate_runs_agent_type ON endstate_runs (agent, task_type, started_at);
CREATE INDEX IF NOT EXISTS endstate_runs_status_started ON endstate_runs (status, started_at);
CREATE INDEX IF NOT EXISTS endstate_runs_status_agent ON endstate_runs (status, agent, started_at);
-- The review queue of an agent, or of a task type, the oldest first.
CREATE INDEX IF NOT EXISTS endstate_runs_ended_agent ON endstate_runs (status, agent, ended_at, run_id);
CREATE INDEX IF NOT EXISTS endstate_runs_ended_type ON endstate_runs (status, task_type, ended_at, run_id);
-- The review queue's counts by agent and task type (the review page's filters and total): every column
-- they read, in their order, so they are counted from this index alone, never the runs' rows.
CREATE INDEX IF NOT EXISTS endstate_runs_queue_counts ON endstate_runs (status, agent, task_type, stop_reason, ended_at, run_id);
-- The runs waiting for a person of an agent, or of a task type, in the order they asked: partial, as
-- schema 10's (a write to a run that does not wait never touches them).
CREATE INDEX IF NOT EXISTS endstate_runs_waiting_agent ON endstate_runs (status, agent, suspended_at, run_id) WHERE status = 'waiting';
CREATE INDEX IF NOT EXISTS endstate_runs_waiting_type ON endstate_runs (status, task_type, suspended_at, run_id) WHERE status = 'waiting';
-- `audit --list`, the newest first (made, or due: `COALESCE(checked_at, due_at)`, as the query
-- orders them): every audit, or of an outcome, an agent, a task type.
CREATE INDEX IF NOT EXISTS endstate_audits_listed ON endstate_audits (COALESCE(checked_at, due_at) DESC, run_id);
CREATE INDEX IF NOT EXISTS endstate_audits_outcome ON endstate_audits (outcome, COALESCE(checked_at, due_at) DESC, run_id);
CREATE INDEX IF NOT EXISTS endstate_audits_agent ON endstate_audits (agent, COALESCE(checked_at, due_at) DESC, run_id);
CREATE INDEX IF NOT EXISTS endstate_audits_type ON endstate_audits (task_type, COALESCE(checked_at, due_at) DESC, run_id)
