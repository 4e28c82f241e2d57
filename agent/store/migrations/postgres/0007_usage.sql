-- Version 7: a run's cost may be unknown (a model without a known price), and its cache tokens
-- are kept. `cost_known` is 0 when the cost is unknown; `cost_usd` then holds 0 and is not a
-- cost (never shown or summed as one). Rows written before this version keep their known cost.
ALTER TABLE endstate_runs ADD COLUMN cost_known INTEGER NOT NULL DEFAULT 1;
ALTER TABLE endstate_runs ADD COLUMN cache_read_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE endstate_runs ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0;
