-- Version 5: reviews. Each label a person gives a finished run is one row: a later label of the
-- same run supersedes the earlier one (for the queue, `limits suggest` and `review promote`), and
-- every row counts once in `agent_review_labels_total`. Rows keep the run's agent and task type,
-- so they outlive a run pruned for retention. The index on ended_at serves the queue and pruning.
CREATE TABLE IF NOT EXISTS endstate_reviews (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    task_type TEXT NOT NULL,
    label TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    labelled_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS endstate_reviews_run ON endstate_reviews (run_id, id);
CREATE INDEX IF NOT EXISTS endstate_runs_ended ON endstate_runs (status, ended_at);
