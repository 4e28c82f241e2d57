"""review23: the integrations' kept event loop (`_sync.run_sync`) and `os.fork`.

`run_sync` keeps one event loop per thread between runs. A process that forked after a sync run (a
pre-forking server that warmed up, a `multiprocessing` pool started with fork) handed that loop to
its child, which then ran its runs on it: the same epoll instance and the same self-pipe as the
parent's loop, so one process's wake-ups are read by the other. A child gets a loop of its own.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from typing import Any

import pytest

from agent.integrations import _sync
from agent.integrations._sync import run_sync


async def tagged(tag: str) -> str:
    """The tag of the loop this runs on, tagging an untagged one with `tag` (an id could be reused)."""
    loop: Any = asyncio.get_running_loop()
    loop.review23_tag = getattr(loop, "review23_tag", tag)
    return str(loop.review23_tag)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_runs_on_a_loop_of_its_own_and_the_parent_keeps_its_own() -> None:
    assert run_sync(tagged("parent's")) == "parent's"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the loop its run used, and end as a thread or interpreter does
        try:
            os.write(write, run_sync(tagged("child's")).encode())
            _sync._RUNNERS.kept = None  # its runner dropped (closed, as the thread's end closes it)
            gc.collect()
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as reading:
        child = reading.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert child == "child's"  # was: "parent's", the parent's loop inherited
    assert run_sync(tagged("new")) == "parent's"  # the parent goes on with its own, as kept
    # ...and it still wakes when a thread's work ends (was: the child's close unregistered the
    # parent's self-pipe from the epoll instance they shared: this waited for the timeout)
    began = time.monotonic()
    assert run_sync(asyncio.wait_for(asyncio.to_thread(slept), 10)) == "woken"
    assert time.monotonic() - began < 8  # the thread ends after 0.2 s (was: woken by the 10 s timer)


def slept() -> str:
    time.sleep(0.2)  # the loop waits in epoll for this thread's end
    return "woken"
