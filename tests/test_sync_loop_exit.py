"""A process that ran an integration's sync `run()` exits.

Since the sync entry points keep one event loop per thread (agent/integrations/_sync.py), that loop
was closed at the interpreter's exit with `asyncio.Runner.close`, which starts a thread to shut the
loop's default executor down; no thread can start then, so a process whose run had used that
executor (a framework running a sync tool with `run_in_executor`) never exited: a user's script
hung after its last line, and so did pytest after printing its summary (CI would time out).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import asyncio, sys, threading
sys.path.insert(0, {root!r})
from agent.integrations._sync import run_sync

async def work():
    return await asyncio.get_running_loop().run_in_executor(None, lambda: 42)

if {in_thread!r}:
    out = []
    worker = threading.Thread(target=lambda: out.append(run_sync(work())))
    worker.start()
    worker.join()
    print(out[0], flush=True)
else:
    print(run_sync(work()), flush=True)
    print(run_sync(work()), flush=True)  # the kept loop and its executor, used again
"""


@pytest.mark.parametrize("in_thread", [False, True], ids=["main-thread", "worker-thread"])
def test_the_process_exits_after_a_sync_run_that_used_the_default_executor(in_thread: bool) -> None:
    script = SCRIPT.format(root=str(ROOT), in_thread=in_thread)
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the process did not exit within 60 s of its last line")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == (["42"] if in_thread else ["42", "42"])
