"""probe24d: two hosts of a fleet with the same name never take each other's live runs.

A worker's owner names its machine so that recovery can tell at once that a worker of this machine
is gone (its pid is dead here) and take its run without waiting for the lease. The machine was the
host name and the pid namespace's number; but the first pid namespace has the same number on every
Linux host (4026531836), so two hosts of the same name (cloned VMs, `localhost`) running workers
outside containers were the same machine: each took the other's runs at once, whenever the other's
pid was not alive here, though that worker was alive and its lease good (its tools ran twice). The
machine now names the boot too (the kernel's random boot id, which the host's containers share).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time

from agent.durable.runner import machine, process_gone, worker_gone
from agent.durable.store import RunRecord, RunStatus


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def held_by(owner: str) -> RunRecord:
    now = time.time()
    return RunRecord(
        run_id="r", agent="a", task="t", task_type="t", status=RunStatus.RUNNING, state={},
        started_at=now, updated_at=now, owner=owner, lease_until=now + 60,
    )  # fmt: skip


def test_a_worker_of_another_host_with_this_hosts_name_and_pid_namespace_is_not_judged_gone() -> None:
    namespace = os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    twin = f"{socket.gethostname()}/{namespace}"  # another host of this name, in its first pid namespace
    dead = dead_pid()  # not alive here: says nothing about a pid of the other host
    other_boot = f"{twin}/000000000000:{dead}:c0ffee00"
    for owner in (f"{twin}:{dead}:c0ffee00", other_boot):
        assert not process_gone(held_by(owner)), owner
        assert not worker_gone(held_by(owner), time.time())  # its lease decides
    assert machine().startswith(f"{twin}/") and machine() != f"{twin}/000000000000"
    assert process_gone(held_by(f"{machine()}:{dead}:deadbeef"))  # a worker of this host that is gone
