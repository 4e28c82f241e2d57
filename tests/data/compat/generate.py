"""Write a run store holding runs in every state, with the Endstate on PYTHONPATH (an old release).

    PYTHONPATH=OLD_CHECKOUT:tests python tests/data/compat/generate.py URL

URL is a fresh store (sqlite:///path or postgresql://...). The runs are tests/compat_agents.py's
RUNS. A worker that dies mid-turn is a child process of this one that ends with os._exit.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import compat_agents as ca

from agent import StopReason

try:
    from agent.durable.runner import Runner
    from agent.durable.store import open_store
except ImportError:  # releases before the agent/durable layout
    from agent.runner import Runner  # type: ignore[import-not-found,no-redef]
    from agent.store import open_store  # type: ignore[import-not-found,no-redef]

ENDS = {
    "c-question": StopReason.NEED_HELP,
    "c-approval": StopReason.NEED_HELP,
    "c-deny": StopReason.NEED_HELP,
    "c-expired": StopReason.NEED_HELP,
    "c-timeout": StopReason.NEED_HELP,
    "c-answered": StopReason.NEED_HELP,  # then answered by a worker that dies (`die`)
    "c-cancelled": StopReason.CANCELLED,
    "c-cut": StopReason.CANCELLED,
    "c-done": StopReason.SUCCESS,
    "c-limit": StopReason.LIMIT,
    "c-gave-up": StopReason.GAVE_UP,
    "c-audited": StopReason.SUCCESS,
}


def stop(runner: Runner, customer: str) -> None:
    """The shutdown each run meets at a lookup: after it (BETA), or cutting it off (SLOW)."""
    if customer == "BETA":
        runner.stop_soon(60.0)
    if customer == "SLOW":
        runner.stop_soon(0.0)
        time.sleep(1.0)


def main(url: str) -> None:
    for run_id, end in ENDS.items():
        store = open_store(url)
        runner = Runner(store, ca.catalog())
        ca.HOOKS[:] = [lambda c, r=runner: stop(r, c)] if end == StopReason.CANCELLED else []
        result = asyncio.run(runner.start(ca.RUNS[run_id][0], f"task of {run_id}", run_id=run_id))
        assert result.reason == end, (run_id, result.reason, result)
        store.close()
    die(url, "c-crashed", "BETA")
    die(url, "c-answered", "DELTA")


def die(url: str, run_id: str, customer: str) -> None:
    """Start or answer `run_id` in a child process that dies before `customer`'s lookup."""
    child = subprocess.run([sys.executable, __file__, url, run_id, customer], timeout=120)
    assert child.returncode == 0, child


def dying(url: str, run_id: str, customer: str) -> None:
    store = open_store(url)
    ca.HOOKS[:] = [ca.die_at(customer)]
    runner = Runner(store, ca.catalog())
    if run_id == "c-crashed":
        asyncio.run(runner.start("c-ledger", f"task of {run_id}", run_id=run_id))
    else:
        asyncio.run(runner.resume(run_id, "DELTA"))
    raise SystemExit(f"{run_id}: the worker was to die at {customer}")


if __name__ == "__main__":
    main(sys.argv[1]) if len(sys.argv) == 2 else dying(*sys.argv[1:4])
