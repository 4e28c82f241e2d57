"""store_overhead's part 2 (runs suspended at once) is measured in a process of its own and reported
beside its baselines.

Its memory, the growth of the maximum RSS, depends on what the heap already held: read in the process
that had run part 1 and the growth check first, it was not comparable with the like-for-like baseline
read alone (benchmarks/README.md), and the issue asks for bytes and memory reported beside the baseline,
which the report did not print.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT / "benchmarks" / "store_overhead.py"


def test_part_2_runs_in_a_process_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARK.parent))
    store_overhead = importlib.import_module("store_overhead")  # a script of benchmarks/, not a package

    measured = store_overhead.suspended_alone(tmp_path / "suspended.db", 3)
    assert measured["suspended"] == 3
    assert measured["pid"] != os.getpid()


def test_part_2_is_reported_beside_its_baselines(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [
            sys.executable,
            str(BENCHMARK),
            "--smoke",
            "--no-pg",
            "--parts",
            "suspended",
            "--store",
            str(tmp_path),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "5 runs suspended at once: in a process of its own" in lines
    size = next(line for line in lines if line.strip().startswith("store size"))
    memory = next(line for line in lines if line.strip().startswith("process memory"))
    assert "6.2 KB" in size and "2.3 KiB" in memory and "3.84 KiB" in memory
