"""Randomized crash testing with real processes: `endstate serve` on SQLite and on PostgreSQL, many
runs at once over HTTP, people answering as questions appear, and processes killed (SIGKILL), shut
down (SIGTERM) or stalled past their lease (SIGSTOP, then SIGCONT) at random moments, restarted,
sometimes two on one store. Afterwards every promise of "Durable runs and the service" is checked:
each run ended with a named stop reason, its journal has no hole, a call whose result was recorded
never ran again, an approved call never ran twice, usage is never negative, and the last process's
metrics agree with the store (see `chaos_driver.check_invariants`).

The CI size is small and seeded; run longer by hand:
`CHAOS_ROUNDS=40 CHAOS_SEED=7 CHAOS_RUNS=20 python -m pytest -q test_chaos_kills.py`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from chaos_driver import Chaos, check_invariants

pytestmark = pytest.mark.slow

ROUNDS = int(os.environ.get("CHAOS_ROUNDS", "4"))
SEED = int(os.environ.get("CHAOS_SEED", "20261206"))
RUNS = int(os.environ.get("CHAOS_RUNS", "6"))  # at most this many runs started at once each round


def test_runs_keep_every_durability_promise_through_random_kills(store_url: str, tmp_path: Path) -> None:
    chaos = Chaos(store_url, tmp_path, SEED, runs_per_round=RUNS)
    try:
        chaos.play(ROUNDS)
    finally:
        chaos.close()
    print(chaos.summary())
    chaos.save()  # the blows and answers beside the store and the world, to look into a failure
    problems = check_invariants(chaos)
    kinds = sorted({b.kind for b in chaos.blows})
    assert chaos.run_ids and chaos.blows, "the play started no run or dealt no blow"
    assert not problems, (
        f"seed {SEED}, {ROUNDS} rounds, {len(chaos.run_ids)} runs, blows {kinds}:\n" + "\n".join(problems)
    )
