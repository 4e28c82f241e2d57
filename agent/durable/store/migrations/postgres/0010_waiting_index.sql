-- Version 10: the runs waiting for a person are read a page at a time (the inbox, GET /pending),
-- in the order they asked (suspended_at, a missing one first, then run id), and counted by agent
-- and task type in SQL. Two partial indexes over the waiting runs only (a store of a million
-- finished runs keeps them small, and a write to a finished run never touches them): the order,
-- and the filters and counts. The queries name the status as the literal 'waiting'; the status leads
-- each index, as on SQLite.
CREATE INDEX IF NOT EXISTS endstate_runs_waiting ON endstate_runs (status, suspended_at NULLS FIRST, run_id) WHERE status = 'waiting';
CREATE INDEX IF NOT EXISTS endstate_runs_waiting_by ON endstate_runs (status, agent, task_type, suspended_at NULLS FIRST, run_id) WHERE status = 'waiting'
