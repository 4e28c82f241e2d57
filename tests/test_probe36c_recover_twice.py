"""`endstate recover` run twice at once on one store (two operators, or a cron job and a person):
each run a crashed worker left is continued by one of them, its tool calls run once, and both say
how many they continued.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

from test_runner_agents import (
    ELSEWHERE_LEASE,
    a_run_whose_worker_died,
    catalog,
    counted,
    env_with_tests,
    outlive_leases,
)

from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store

CATALOG = "test_runner_agents:catalog"
RUNS = 4


def test_two_recoveries_at_once_continue_each_run_once(store_url: str, tmp_path: Path) -> None:
    folders = [tmp_path / f"run{i}" for i in range(RUNS)]
    jobs = [a_run_whose_worker_died(store_url, folder) for folder in folders]
    assert outlive_leases(store_url, ELSEWHERE_LEASE + 1, jobs[0].record.owner) == RUNS  # one dead worker's
    argv = [sys.executable, "-m", "agent.cli", "recover", "--catalog", CATALOG, "--store", store_url]
    both = [
        subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_with_tests()
        )
        for _ in range(2)
    ]
    said = [p.communicate(timeout=300) for p in both]
    assert [p.returncode for p in both] == [0, 0], said
    recovered = []
    for out, err in said:
        assert "cannot be recovered" not in err, err  # the loser of a race is no error
        found = re.search(r"(\d+) runs? recovered or swept", out)
        assert found, out
        recovered.append(int(found.group(1)))
    assert sum(recovered) == RUNS, said
    assert [counted(folder) for folder in folders] == [[1, 2]] * RUNS  # each call ran once
    store = open_store(store_url)
    try:
        for job in jobs:
            record = store.get(job.run_id)
            assert record is not None and record.status is RunStatus.FINISHED, record
    finally:
        store.close()


def test_a_recovery_that_lost_the_race_for_every_run_continues_none(store_url: str, tmp_path: Path) -> None:
    """Both read the runs to recover before either claims one: the second one's claims are refused
    (the runs' owner changed under them), quietly; nothing runs twice."""
    folders = [tmp_path / f"run{i}" for i in range(RUNS)]
    jobs = [a_run_whose_worker_died(store_url, folder) for folder in folders]
    assert outlive_leases(store_url, ELSEWHERE_LEASE + 1, jobs[0].record.owner) == RUNS
    first, second = open_store(store_url), open_store(store_url)
    a, b = Runner(first, catalog()), Runner(second, catalog())
    try:
        seen = b.recoverable()  # as b read them, before a claimed any
        assert len(seen) == RUNS
        won = asyncio.run(a.recover())
        b._left_behind = lambda watched=False: seen  # type: ignore[method-assign]  # (`recoverable`'s read)
        lost = asyncio.run(b.recover())
        assert (len(won), lost) == (RUNS, [])
        assert [counted(folder) for folder in folders] == [[1, 2]] * RUNS
    finally:
        a.catalog.close()
        b.catalog.close()
        first.close()
        second.close()
