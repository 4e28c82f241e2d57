-- Version 4: the run journal. Each checkpoint appends a run's new entries here, keyed by the
-- run and their sequence number; the runs table keeps the snapshot's head (everything but the
-- journal). Version-1 snapshots are upgraded in place by the store when it opens.
CREATE TABLE endstate_entries (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
