"""Runner decisions a hand mutation audit found no test pinned (see the `mutate` branch's report)."""

from __future__ import annotations

from pathlib import Path

from test_runner_agents import catalog, counter_state
from test_store import edit_row

from agent.durable.runner import Runner
from agent.durable.store import open_store


def test_a_runner_never_recovers_a_run_it_holds_itself_though_its_lease_looks_run_out(
    store_url: str, tmp_path: Path
) -> None:
    """A run this runner holds (its segment in flight here) is never taken over by this runner's own
    recovery, even when the store says its lease ran out (a renewal that stalled, a store's clock that
    stepped): that would drive one run twice at once in one process."""
    runner = Runner(open_store(store_url), catalog(), lease_seconds=30)
    try:
        job = runner.begin("counter", "count", state=counter_state(tmp_path / "run", "plain"))
        assert runner.held() == {job.run_id}
        edit_row(store_url, "UPDATE endstate_runs SET lease_until = ? WHERE run_id = ?", 1.0, job.run_id)
        assert runner.recovery_jobs(watched=False) == []
        assert runner.held() == {job.run_id}
    finally:
        runner.catalog.close()
        runner.store.close()
