"""The alert rules' promtool unit tests (alerts/tests/), run beside the rest of the suite.

Each file takes promtool 4-90 s of CPU (days of series per case), about 10 minutes in all, on one
core each. Run in their test's turn they were a third of the suite's time on a 2-core machine.
Started when the test loop starts, one file at a time at low priority, they use the core the rest
of the suite leaves idle while it waits on servers. Their test (in tests/test_alerts.py), moved to
the end of the run by conftest.py, starts a file not yet begun on every core and waits for all.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 900  # seconds one file may take
BACKGROUND_NICENESS = 10  # the suite's own tests come first


class RuleTests:
    """promtool runs of `files` on worker threads, each file once, whichever worker is free first."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self._todo = list(reversed(files))
        self._lock = threading.Lock()
        self._done: dict[Path, subprocess.CompletedProcess[str]] = {}
        self._running: set[subprocess.Popen[str]] = set()
        self._workers: list[threading.Thread] = []
        self._stopped = False

    def start(self, workers: int, niceness: int = 0) -> None:
        """Start `workers` more threads that take files until none is left."""
        for _ in range(workers):
            worker = threading.Thread(target=self._work, args=(niceness,), daemon=True)
            worker.start()
            with self._lock:
                self._workers.append(worker)

    def results(self) -> dict[Path, subprocess.CompletedProcess[str]]:
        """Every file's result, once all have run: the files not yet begun run on every core."""
        self.start(os.cpu_count() or 2)
        with self._lock:
            workers = list(self._workers)
        for worker in workers:
            worker.join()
        return dict(self._done)

    def stop(self) -> None:
        """Begin no more files and kill the running ones (the session is over)."""
        with self._lock:
            self._stopped = True
            running = list(self._running)
        for proc in running:
            proc.kill()

    def _next(self) -> Path | None:
        with self._lock:
            return None if self._stopped or not self._todo else self._todo.pop()

    def _work(self, niceness: int) -> None:
        while (path := self._next()) is not None:
            self._done[path] = self._run(path, niceness)

    def _run(self, path: Path, niceness: int) -> subprocess.CompletedProcess[str]:
        argv = ["promtool", "test", "rules", str(path)]
        if niceness:
            argv = ["nice", "-n", str(niceness), *argv]
        try:
            proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as exc:
            return subprocess.CompletedProcess(argv, 127, "", f"could not start promtool: {exc}")
        with self._lock:
            if self._stopped:  # the session ended as it started: `stop` saw it not, so it goes here
                proc.kill()
            self._running.add(proc)
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err += f"\npromtool did not finish in {TIMEOUT} s"
        finally:
            with self._lock:
                self._running.discard(proc)
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


UNIT_TESTS = RuleTests(sorted((ROOT / "alerts" / "tests").glob("*.yml")))
