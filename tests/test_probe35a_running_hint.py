"""`endstate resume` (or an answer) of a run still marked running was refused with only "run X is
running, not waiting or cancelled": after a crash (kill -9 of the worker, a host gone), the person
who tries to continue the run learned nothing of what does (`endstate recover`, or a service's
sweep). Now the refusal says which: recovery, when the run's worker is gone, or the live worker that
drives it. Nothing is changed either way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_runner_agents import catalog, counter_state, outlive_leases
from test_service_support import endstate

from agent.durable.runner import Runner
from agent.durable.store import Lease, NewRun, NotClaimable, RunStatus, open_store

CATALOG = "test_runner_agents:catalog"
GONE = "otherhost:4242:dead"  # a worker of another host, which died


@pytest.fixture
def crashed(store_url: str, tmp_path: Path) -> Iterator[str]:
    """A run left running by a worker of another host whose lease then ran out; its id."""
    store = open_store(store_url)
    try:
        state = counter_state(tmp_path / "w", "plain")
        store.create(NewRun("crashed", "counter", "count", "counting", state), Lease(GONE, 30.0), 0.0)
    finally:
        store.close()
    assert outlive_leases(store_url, 31.0, GONE) == 1
    yield "crashed"


def test_resuming_a_run_whose_worker_is_gone_says_recovery_continues_it(store_url: str, crashed: str) -> None:
    store = open_store(store_url)
    runner = Runner(store, catalog())
    try:
        for resume in (lambda: runner.claim(crashed), lambda: runner.claim(crashed, answer="go on")):
            with pytest.raises(NotClaimable) as refused:
                resume()
            message = str(refused.value)
            assert "nothing was changed. Its worker is gone" in message, message
            assert "`endstate recover`" in message, message
        record = store.get(crashed)
        assert record is not None and (record.status, record.owner) == (RunStatus.RUNNING, GONE)
    finally:
        runner.catalog.close()
        store.close()


def test_the_cli_says_to_recover_a_crashed_run_it_was_asked_to_resume(store_url: str, crashed: str) -> None:
    done = endstate("resume", crashed, "--catalog", CATALOG, store=store_url)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Its worker is gone" in done.stderr and "endstate recover" in done.stderr, done.stderr


def test_resuming_a_run_a_live_worker_drives_names_that_worker(tmp_path: Path) -> None:
    url = str(tmp_path / "runs.db")
    driving, other = Runner(open_store(url), catalog()), Runner(open_store(url), catalog())
    try:
        job = driving.begin("counter", "count", state=counter_state(tmp_path / "w", "plain"))
        with pytest.raises(NotClaimable) as refused:
            other.claim(job.run_id)
        message = str(refused.value)
        assert f"A live worker ({driving.owner}) drives it" in message and "recover" not in message, message
        assert asyncio.run(driving.drive(job)).reason.value == "success"  # it was left as it was
    finally:
        for r in (driving, other):
            r.catalog.close()
            r.store.close()
