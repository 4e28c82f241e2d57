"""What durability costs: per-turn checkpoints on SQLite and PostgreSQL, and 1,000 runs suspended at once.

    python benchmarks/store_overhead.py [--turns 25] [--runs 40] [--growth-rounds 100] [--suspended 1000]
                                        [--parts turns,growth,suspended] [--store PATH] [--no-pg] [--smoke]

Part 1 runs the same scripted agent (one cheap tool call per turn) bare and
through a `Runner` on a SQLite store and on a PostgreSQL store (a throwaway
server on loopback, from Debian's binaries), all with telemetry on (metrics
and tracing into an exporter that drops spans), interleaved in one process,
and prints the median cost per turn of each and its ratio to the bare loop:
the median of per-round ratios (a round plays every variant once, after a
collection) with a 95% bootstrap interval, in wall time and in this process's
CPU time (all its threads; the PostgreSQL server's CPU is not in it).
Each turn writes one checkpoint (its one tool result lands with the completed
turn). Beside them, references show what any store must pay at the least:
the bare loop with one trivial write transaction a turn on a SQLite file
(`BEGIN IMMEDIATE`, an `UPDATE` of one integer, `COMMIT`), with one trivial
round trip a turn to the PostgreSQL server (`SELECT 1`, which writes nothing)
and with one trivial write it commits (an `UPDATE` of one integer), and, on SQLite,
the least a journal store must write a turn (the turn's entries, encoded as the
stores encode them, inserted in one transaction only while a row says this
worker holds the run; no run row written: no usage, head or lease renewal),
each handed to the agent as its checkpointer. Each store is also driven as the HTTP service
drives it (`checkpoints_on_loop=False`: each checkpoint written on the runner's
writer thread, through the store's `checkpoint`, never sent ahead from the
loop), and called directly with no runner around it (`create`, a `checkpoint`
a turn, `record`: what the runner adds is the difference). Each variant goes
first in turn.

The growth check times one checkpoint in runs of 10 and of 200 turns: a
checkpoint appends only the turn's new journal entries, so its cost must not
grow with the history (target: 200/10 at most 1.1x). Many short rounds, each
one run of each length, and the same two with a control checkpointer that
writes one fixed checkpoint (the same work at any length), in a shuffled
order; per-round ratios of the same window of checkpoints; the median ratio
with a 95% bootstrap interval, in wall time and in CPU time, and the net
ratio (checkpoint over control: what the history adds to the checkpoint's
own work). See `checkpoint_growth`.

Part 2 suspends `--suspended` runs at once (each asks a question after one
turn), reports the store bytes (the files on disk, as the issue's 6.2 KB
baseline counted them, whose write-ahead log of up to ~4 MB is most of it; and
the store alone once that log is written back) and the process memory per
suspended run, each beside its baseline, then resumes them all and reports the
throughput. It runs in a process of its own, as its like-for-like baseline was
read (benchmarks/README.md, "Part 2 like for like"): memory is the growth of
the maximum RSS, which depends on what the heap already held, so a number read
after part 1 and the growth check (as the issue's 2.3 KiB was) depended on
which parts ran before it (3.07 KiB after part 1, 1.95 alone, one run each,
2026-12-06; noisy either way).

A benchmark, not a test: numbers vary with the machine; nothing asserts them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from agent import Agent, Budget, HelpPolicy, NoHooks, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import Lease, NewRun, Outcome, open_store
from agent.durable.store._sql import entry_rows
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Checkpoint


@tool
def note(n: int) -> str:
    """Write down a number."""
    return f"noted {n}"


class WaitingModel(ScriptedModel):
    """A scripted model whose every call waits `wait` seconds on the event loop (as over a network)."""

    def __init__(self, steps: list[Any], wait: float) -> None:
        super().__init__(steps)
        self.wait = wait

    async def complete(self, request: ModelRequest) -> ModelReply:
        await asyncio.sleep(self.wait)
        return await super().complete(request)


def counting_agent(turns: int, hooks: Any, wait: float = 0.0) -> Agent:
    """`turns - 1` tool calls with new arguments each turn, then finish (each model call `wait` s)."""
    steps = [[call("note", n=i)] for i in range(turns - 1)] + [[finish("done", "noted")]]
    return Agent(
        name="bench",
        model=WaitingModel(steps, wait) if wait else ScriptedModel(steps),
        tools=[note],
        budget=Budget(max_turns=turns + 5, max_seconds=600),
        hooks=hooks,
    )


def asking_agent(hooks: Any) -> Agent:
    steps = [[call("note", n=1)], [finish("need_help", "Which number next?")], [finish("done", "ok")]]
    return Agent(
        name="asker",
        model=ScriptedModel(steps),
        tools=[note],
        hooks=hooks,
        help=HelpPolicy(wait_seconds=3600),
    )


def telemetry() -> Any:
    """Metrics and tracing on; spans go through the batch processor to an exporter that drops them."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from prometheus_client import CollectorRegistry

    from telemetry import Telemetry

    class Discard(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    return Telemetry.from_env(environ={}, registry=CollectorRegistry(), span_exporter=Discard())


def per_turn(urls: dict[str, str], turns: int, runs: int, wait: float = 0.0) -> dict[str, Any]:
    """Per variant: median microseconds per turn, and its per-round ratio to the bare loop (median
    and 95% bootstrap interval) in wall time and in this process's CPU time (all its threads; not
    the PostgreSQL server's). A round plays every variant once, each going first in turn, after a
    collection; runs interleaved, model calls of `wait` s."""
    tel = telemetry()
    catalog = Catalog()
    catalog.register("bench", lambda state: counting_agent(turns, tel.hooks, wait))
    stores = {name: open_store(url) for name, url in urls.items()}
    runners = runners_of(stores, catalog, tel.hooks)
    least, closers = least_writes(urls)
    plays = plays_of(stores, runners, least, lambda: counting_agent(turns, tel.hooks, wait))
    order = list(plays)
    micros: dict[str, list[float]] = {name: [] for name in plays}
    ratios: dict[str, dict[str, list[float]]] = {"wall": {}, "cpu": {}}
    for i in range(runs + 2):  # two warm-up rounds
        if i == 2:
            gc.freeze()  # the modules' objects leave the collector's view: each round's collection is short
        gc.collect()
        took = {}
        for name in order[i % len(order) :] + order[: i % len(order)]:  # each goes first in turn
            w0, c0 = time.perf_counter(), time.process_time()
            result = plays[name]()
            took[name] = (time.perf_counter() - w0, time.process_time() - c0)
            assert result.reason == "success" and result.turns == turns, (name, result)
        if i >= 2:
            for name, (wall, cpu) in took.items():
                micros[name].append(wall / turns * 1e6)
                ratios["wall"].setdefault(name, []).append(wall / took["bare"][0])
                ratios["cpu"].setdefault(name, []).append(cpu / took["bare"][1])
    gc.unfreeze()
    for store in stores.values():
        store.close()
    for close in closers:
        close()
    tel.shutdown()
    return {
        name: (
            statistics.median(micros[name]),
            median_ci(ratios["wall"][name]),
            median_ci(ratios["cpu"][name]),
        )
        for name in plays
    }


def plays_of(
    stores: dict[str, Any], runners: dict[str, Runner], least: dict[str, Any], agent: Any
) -> dict[str, Any]:
    """Each variant of a round, by name: the bare loop (`agent()` builds its agent), the least writes,
    the runners, and each store with no runner."""
    plays = {"bare": lambda: agent().run("note numbers")}
    for name, write in least.items():
        plays[name] = lambda w=write: dataclasses.replace(agent(), checkpoint=w).run("note numbers")
    for name, runner in runners.items():
        plays[name] = lambda r=runner: asyncio.run(r.start("bench", "note numbers"))
    for name, store in stores.items():
        plays[f"{name} store, no runner"] = lambda s=store: without_runner(s, agent())
    return plays


def without_runner(store: Any, agent: Agent) -> Any:
    """The store's own work with no `Runner` around it: `create`, `checkpoint` called from the agent
    at each turn, `record` at the end (the reference that shows what the runner adds to a run)."""
    run_id, lease = uuid.uuid4().hex, Lease("bench", 30.0)
    store.create(NewRun(run_id, agent.name, "note numbers", agent.task_type), lease, time.time())
    checkpointed = dataclasses.replace(
        agent, checkpoint=lambda new: store.checkpoint(run_id, new, lease, time.time())
    )
    result = checkpointed.run("note numbers")
    store.record(run_id, Outcome.of(result), lease, time.time())
    return result


def runners_of(stores: dict[str, Any], catalog: Catalog, hooks: Any) -> dict[str, Runner]:
    """A runner on each store as the library runs one (checkpoints sent ahead from the loop), then
    one on each as the service does (each written on the runner's writer thread)."""
    runners = {name: Runner(store, catalog, hooks=hooks) for name, store in stores.items()}
    for name, store in stores.items():
        runners[f"{name}, off the loop"] = Runner(store, catalog, hooks=hooks, checkpoints_on_loop=False)
    return runners


def least_writes(urls: dict[str, str]) -> tuple[dict[str, Any], list[Any]]:
    """Checkpointers doing the least a store must: one trivial SQLite commit; one PostgreSQL round trip,
    and one trivial PostgreSQL write committed (a write's commit record: the least any write pays)."""
    least: dict[str, Any] = {}
    closers: list[Any] = []
    if "SQLite" in urls:
        path = urls["SQLite"].removeprefix("sqlite:///") + ".least"
        lite = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        lite.execute("PRAGMA journal_mode = WAL")
        lite.execute("PRAGMA synchronous = NORMAL")
        lite.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER)")
        lite.execute("INSERT INTO t VALUES (0)")

        def sqlite_commit(_: Any) -> None:
            lite.execute("BEGIN IMMEDIATE")
            lite.execute("UPDATE t SET n = n + 1")
            lite.execute("COMMIT")

        least["bare + 1 SQLite commit"] = sqlite_commit
        least["bare + SQLite entries only"] = _entries_only(lite)
        closers.append(lite.close)
    if "PostgreSQL" in urls:
        import psycopg

        conn = psycopg.connect(urls["PostgreSQL"], autocommit=True)
        least["bare + 1 PG round trip"] = lambda _: conn.execute("SELECT 1").fetchall()
        conn.execute("CREATE TABLE IF NOT EXISTS bench_least (n INTEGER)")
        conn.execute("INSERT INTO bench_least VALUES (0)")
        least["bare + 1 PG commit"] = lambda _: conn.execute("UPDATE bench_least SET n = n + 1")
        closers.append(conn.close)
    return least, closers


def _entries_only(conn: sqlite3.Connection) -> Any:
    """A checkpointer writing the least a journal store must on SQLite, in one transaction a turn: the
    turn's new entries, encoded as the stores encode them, inserted only while a row says this worker
    holds the run (the lease read, not renewed). No run row written: no usage, head or state saved.
    (Not on PostgreSQL: the runner sends its checkpoints ahead, overlapping the round trip with the
    next model call, so a checkpointer waiting for its round trip is no floor of it.)"""
    conn.execute("CREATE TABLE IF NOT EXISTS bench_runs (run_id TEXT PRIMARY KEY, owner TEXT)")
    keyed = "run_id TEXT, seq INTEGER, entry TEXT, PRIMARY KEY (run_id, seq)"
    conn.execute(f"CREATE TABLE IF NOT EXISTS bench_entries ({keyed}) WITHOUT ROWID")  # as the store's
    run = uuid.uuid4().hex
    conn.execute("INSERT INTO bench_runs VALUES (?, 'bench')", (run,))
    held = "WHERE EXISTS (SELECT 1 FROM bench_runs WHERE run_id = ? AND owner = 'bench')"
    seq = iter(range(1 << 62))
    sql = f"INSERT INTO bench_entries SELECT ?, ?, ? {held}"

    def write(checkpoint: Checkpoint) -> None:
        rows = [(run, next(seq), entry, run) for _, entry in entry_rows(checkpoint)]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, rows)
        conn.execute("COMMIT")

    return write


class TimedStore:
    """A store whose checkpoints are timed: (wall ns, this thread's CPU ns) each, in order."""

    send_checkpoint = None  # each checkpoint written and timed in one call (no sending ahead)

    def __init__(self, store: Any) -> None:
        self.store, self.took = store, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def checkpoint(self, *args: Any) -> None:
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        self.store.checkpoint(*args)
        self.took.append((time.perf_counter_ns() - w0, time.thread_time_ns() - c0))


class SameCheckpoints(TimedStore):
    """The control: each checkpoint writes the same fixed checkpoint (timed) into a run of its own
    (made at `begin`), so its work is the same at any length of history and only the moment differs."""

    def __init__(self, store: Any, fixed: Checkpoint) -> None:
        super().__init__(store)
        self.fixed, self.into = fixed, ""

    def begin(self, lease: Any, now: float) -> None:
        self.into, self.seq = uuid.uuid4().hex, 0
        self.store.create(NewRun(self.into, "control", "write the same checkpoint", "default"), lease, now)

    def checkpoint(self, run_id: str, checkpoint: Checkpoint, lease: Any, now: float) -> None:
        self.seq += len(self.fixed.entries)
        same = Checkpoint(self.fixed.head, self.seq, self.fixed.entries)
        super().checkpoint(self.into, same, lease, now)


GROWTH_WINDOW = 8  # checkpoints timed in each run: turns 2-9 of a 10-turn run, 192-199 of a 200-turn one


def checkpoint_growth(url: str, rounds: int) -> dict[str, Any]:
    """One checkpoint's cost at 200 turns of history over its cost at 10, as a per-round ratio.

    A round runs a 10-turn and a 200-turn run on the same store, and the same two
    as the control (each checkpoint writes one fixed checkpoint instead: the same
    work at any length), in a fresh seeded random order; each compares the median
    of the same window of checkpoints (the turns before the last: the last one
    carries the stop). So the store's growth, the machine's drift and a
    neighbour's load touch every run alike; the control shows how much slower
    the same work is at that moment of a long run (the loop's per-turn work
    grows with the history and leaves the caches cold), and `net` divides it
    out. Wall time is what the loop waits; CPU time (this thread's) leaves out
    other processes, the PostgreSQL server's work with them, so it fits SQLite
    (which writes in this thread) and not PostgreSQL. Returns per measure the
    median per-round ratio with its 95% bootstrap interval, and median microseconds.
    """
    timed = TimedStore(open_store(url))
    runners: dict[tuple[str, int], Runner] = {}
    for turns in (10, 200):
        catalog = Catalog()
        catalog.register("bench", lambda state, t=turns: counting_agent(t, NoHooks()))
        runners["checkpoint", turns] = Runner(timed, catalog)  # type: ignore[arg-type]
    took: list[Any] = []
    timed.store.checkpoint, real = (lambda *a: took.append(a) or real(*a)), timed.store.checkpoint
    asyncio.run(runners["checkpoint", 10].start("bench", "note numbers"))
    timed.store.checkpoint = real
    control = SameCheckpoints(timed.store, took[5][1])  # a checkpoint of one reply and one result
    for turns in (10, 200):
        runners["control", turns] = Runner(control, runners["checkpoint", turns].catalog)  # type: ignore[arg-type]

    def window(what: str, turns: int) -> tuple[float, float]:
        store = timed if what == "checkpoint" else control
        runner = runners[what, turns]
        if store is control:
            control.begin(runner.lease(), time.time())
        store.took = []
        asyncio.run(runner.start("bench", "note numbers"))
        last = store.took[-1 - GROWTH_WINDOW : -1]
        return statistics.median(w for w, _ in last), statistics.median(c for _, c in last)

    plays = [(what, turns) for what in ("checkpoint", "control") for turns in (10, 200)]
    for play in plays * 2:  # warm-up
        window(*play)
    gc.collect()
    gc.freeze()  # the modules' objects leave the collector's view: each round's collection is short
    ratios: dict[str, list[float]] = {}
    micros: dict[str, list[float]] = {}
    shuffle = random.Random(rounds).shuffle
    for _ in range(rounds):
        gc.collect()
        shuffle(plays)
        got = {play: window(*play) for play in plays}
        for i, clock in enumerate(("wall", "cpu")):
            for what in ("checkpoint", "control"):
                ratios.setdefault(f"{what} {clock}", []).append(got[what, 200][i] / got[what, 10][i])
                for turns in (10, 200):
                    micros.setdefault(f"{what} {clock} {turns}", []).append(got[what, turns][i] / 1000)
            ratios.setdefault(f"net {clock}", []).append(
                ratios[f"checkpoint {clock}"][-1] / ratios[f"control {clock}"][-1]
            )
    gc.unfreeze()
    timed.store.close()
    return {name: median_ci(v) for name, v in ratios.items()} | {
        name: statistics.median(v) for name, v in micros.items()
    }


def median_ci(values: list[float], resamples: int = 2000) -> tuple[float, float, float]:
    """The median and a 95% bootstrap confidence interval around it (seeded: same data, same interval)."""
    draw = random.Random(13)
    medians = sorted(statistics.median(draw.choices(values, k=len(values))) for _ in range(resamples))
    return statistics.median(values), medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def show_growth(name: str, growth: dict[str, Any]) -> None:
    for clock in ("wall", "cpu"):
        print(f"  {name}, {clock} time:")
        for what in ("checkpoint", "control"):
            at10, at200 = growth[f"{what} {clock} 10"], growth[f"{what} {clock} 200"]
            label = "one checkpoint" if what == "checkpoint" else "control (same work)"
            ratio = cell(growth[f"{what} {clock}"])
            print(f"    {label:<20} {at10:6.1f} us at 10 turns, {at200:6.1f} us at 200: {ratio}")
        print(f"    {'net (checkpoint / control)':<48}: {cell(growth[f'net {clock}'])}")


def cell(value: tuple[float, float, float]) -> str:
    """`1.023x [1.015-1.031]`: a median per-round ratio and its 95% confidence interval."""
    mid, low, high = value
    return f"{mid:.3f}x [{low:.3f}-{high:.3f}]"


async def _suspend_all(runner: Runner, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        result = await runner.start("asker", "ask a question")
        assert result.reason == "need_help"
        ids.append(result.run_id)
    return ids


async def _resume_all(runner: Runner, ids: list[str]) -> None:
    for run_id in ids:
        result = await runner.resume(run_id, "seven")
        assert result.reason == "success", result


def suspended(store_path: Path, count: int) -> dict[str, float]:
    """Store bytes and process memory per suspended run; resume throughput."""
    tel = telemetry()
    catalog = Catalog()
    catalog.register("asker", lambda state: asking_agent(tel.hooks))
    store = open_store(str(store_path))
    runner = Runner(store, catalog, hooks=tel.hooks)
    rss0 = _rss_kib()
    t0 = time.perf_counter()
    ids = asyncio.run(_suspend_all(runner, count))
    t1 = time.perf_counter()
    rss1 = _rss_kib()
    waiting = len(store.list_runs(limit=None))
    db_bytes = _bytes_on_disk(store_path)
    with contextlib.closing(sqlite3.connect(store_path)) as folding:  # the write-ahead log written back
        folding.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    folded_bytes = _bytes_on_disk(store_path)
    t2 = time.perf_counter()
    asyncio.run(_resume_all(runner, ids))
    t3 = time.perf_counter()
    store.close()
    tel.shutdown()
    return {
        "suspended": waiting,
        "suspend_per_s": count / (t1 - t0),
        "store_bytes_per_suspended_run": db_bytes / count,
        "folded_bytes_per_suspended_run": folded_bytes / count,
        "rss_kib_growth_per_suspended_run": (rss1 - rss0) / count,
        "resume_per_s": count / (t3 - t2),
        "pid": os.getpid(),  # the process it ran in (`suspended_alone`: not the one that asked)
    }


# What part 2 is read against (benchmarks/README.md, "Part 2 like for like"): the numbers, and
# the code before the journal (617445e) measured as part 2 measures now, in a process of its own
BASELINE_BYTES = "the issue's 6.2 KB; 6,168-6,197 B before the journal"
BASELINE_KIB = "the issue's 2.3 KiB, after part 1; 3.84 KiB before the journal, alone"


def suspended_alone(store_path: Path, count: int) -> dict[str, float]:
    """`suspended` in a fresh process (`--measure-suspended`): its memory read from a heap no other
    part has grown."""
    command = [sys.executable, __file__, "--measure-suspended", str(store_path), str(count)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"part 2 failed in its own process:\n{done.stderr[-4000:]}")
    measured: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def _bytes_on_disk(store_path: Path) -> int:
    """The store file with its write-ahead log and shared-memory index beside it."""
    return sum(p.stat().st_size for p in store_path.parent.glob(store_path.name + "*"))


def _postgres() -> Any:
    """A throwaway PostgreSQL server on loopback (the tests' helper)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import pg

    return pg.PostgresServer()


def _rss_kib() -> float:
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def show(turn: dict[str, Any]) -> None:
    print(f"  {'':<32} {'us/turn':>8}   {'per-round ratio to the bare loop: wall':<40} cpu (this process)")
    for name, (us, wall, cpu) in turn.items():
        label = name if name.startswith("bare") else f"with {name}"
        print(f"  {label:<32} {us:8.1f}   {cell(wall):<40} {cell(cpu)}")


def show_suspended(many: dict[str, float]) -> None:
    """Part 2's report, each number beside its baseline."""
    print(f"{many['suspended']:.0f} runs suspended at once: in a process of its own")
    print(f"  suspend              {many['suspend_per_s']:8.1f} runs/s")
    size = many["store_bytes_per_suspended_run"]
    print(f"  store size           {size:8.0f} bytes/suspended run (baseline: {BASELINE_BYTES})")
    folded = many["folded_bytes_per_suspended_run"]
    print(f"    WAL written back   {folded:8.0f} bytes/suspended run (the runs, without a ~4 MB log)")
    rss = many["rss_kib_growth_per_suspended_run"]
    print(f"  process memory       {rss:8.2f} KiB/suspended run (max RSS growth; baseline: {BASELINE_KIB})")
    print(f"  resume throughput    {many['resume_per_s']:8.1f} runs/s (answer, finish, record)")


def main() -> None:
    args = _arguments()
    if args.measure_suspended:  # part 2 alone, in the process `suspended_alone` started
        path, count = args.measure_suspended
        print(json.dumps(suspended(Path(path), int(count))))
    else:
        run_parts(args)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=25)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--suspended", type=int, default=1000)
    parser.add_argument(
        "--growth-rounds", type=int, default=100, help="rounds of the checkpoint-growth check"
    )
    parser.add_argument(
        "--model-ms", type=float, default=1.0, help="also measure with model calls this long (0: skip)"
    )
    parser.add_argument(
        "--store", type=Path, default=None, help="folder for the SQLite files (default: a temp dir)"
    )
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL (needs Debian's postgresql)")
    parser.add_argument(
        "--parts", default="turns,growth,suspended", help="which parts to run (comma-separated; default all)"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a quick check, not a measure: 2-turn runs, 2 rounds, 5 suspended runs",
    )
    parser.add_argument("--measure-suspended", nargs=2, metavar=("PATH", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.turns, args.runs, args.growth_rounds, args.suspended = 2, 2, 2, 5
    args.parts = set(args.parts.split(","))
    if unknown := args.parts - {"turns", "growth", "suspended"}:
        parser.error(f"unknown part(s) {', '.join(sorted(unknown))}: use turns, growth and/or suspended")
    return args


def run_parts(args: argparse.Namespace) -> None:
    """The parts `args` name, in turn; part 2 in a process of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.store or Path(tmp)
        urls = {"SQLite": f"sqlite:///{folder / 'turns.db'}"}
        server = None if args.no_pg else _postgres()
        try:
            if server is not None:
                urls["PostgreSQL"] = server.new_database()
            if "turns" in args.parts:
                turn = per_turn(urls, args.turns, args.runs)
                print(f"per turn ({args.turns}-turn runs, {args.runs} rounds, telemetry on, interleaved):")
                show(turn)
            if "turns" in args.parts and args.model_ms:
                turn = per_turn(urls, args.turns, args.runs, args.model_ms / 1000)
                print(f"per turn with a model call of {args.model_ms:g} ms (awaited, as over a network):")
                show(turn)
            if "growth" in args.parts:
                print(f"one checkpoint at 10 and at 200 turns of history ({args.growth_rounds} rounds):")
                for name, url in urls.items():
                    show_growth(name, checkpoint_growth(url, args.growth_rounds))
        finally:
            if server is not None:
                server.stop()
        if "suspended" not in args.parts:
            return
        show_suspended(suspended_alone(folder / "suspended.db", args.suspended))


if __name__ == "__main__":
    main()
