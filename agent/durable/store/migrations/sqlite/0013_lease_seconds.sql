-- Version 13: the length of the lease its holder wrote (its --lease, in seconds), written with the
-- lease's end: a sweep that saw the lease look run out waits that long (not its own, shorter, lease)
-- before it takes the run, so a live worker with a longer lease renews in time. NULL where a worker of
-- an Endstate before this column wrote the lease: the sweep waits its own lease, as it did.
ALTER TABLE endstate_runs ADD COLUMN lease_seconds REAL
