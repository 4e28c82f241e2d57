"""What durability costs: per-turn checkpoints on SQLite and PostgreSQL, and 1,000 runs suspended at once.

    python benchmarks/store_overhead.py [--turns 25] [--runs 40] [--suspended 1000] [--store PATH] [--no-pg]

Part 1 runs the same scripted agent (one cheap tool call per turn) bare and
through a `Runner` on a SQLite store and on a PostgreSQL store (a throwaway
server on loopback, from Debian's binaries), all with telemetry on (metrics
and tracing into an exporter that drops spans), interleaved in one process,
and prints the median cost per turn of each and its ratio to the bare loop.
Each turn writes one checkpoint (its one tool result lands with the completed
turn). Beside them, two references show what any store must pay at the least:
the bare loop with one trivial write transaction a turn on a SQLite file
(`BEGIN IMMEDIATE`, an `UPDATE` of one integer, `COMMIT`) and with one trivial
round trip a turn to the PostgreSQL server (`SELECT 1`), each handed to the
agent as its checkpointer. Each variant goes first in turn. It then times
each checkpoint itself in runs of 10 and of 200 turns, alternating: a
checkpoint appends only the turn's new journal entries, so its cost must not
grow with the history (the ratio 200/10 should stay near 1).

Part 2 suspends `--suspended` runs at once (each asks a question after one
turn), reports the store bytes (the files on disk, as the issue's 6.2 KB
baseline counted them, whose write-ahead log of up to ~4 MB is most of it; and
the store alone once that log is written back) and the process memory per
suspended run, then resumes them all and reports the throughput.

A benchmark, not a test: numbers vary with the machine; nothing asserts them.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent import Agent, Budget, HelpPolicy, NoHooks, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import ScriptedModel, call, finish


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


def per_turn(urls: dict[str, str], turns: int, runs: int, wait: float = 0.0) -> dict[str, float]:
    """Median microseconds per turn, bare and on each store, runs interleaved (model calls of `wait` s)."""
    tel = telemetry()
    catalog = Catalog()
    catalog.register("bench", lambda state: counting_agent(turns, tel.hooks, wait))
    stores = {name: open_store(url) for name, url in urls.items()}
    runners = {name: Runner(store, catalog, hooks=tel.hooks) for name, store in stores.items()}
    least, closers = least_writes(urls)
    times: dict[str, list[float]] = {"bare": [], **{name: [] for name in [*least, *urls]}}
    plays = {"bare": lambda: counting_agent(turns, tel.hooks, wait).run("note numbers")}
    for name, write in least.items():
        plays[name] = lambda w=write: dataclasses.replace(
            counting_agent(turns, tel.hooks, wait), checkpoint=w
        ).run("note numbers")
    for name, runner in runners.items():
        plays[name] = lambda r=runner: asyncio.run(r.start("bench", "note numbers"))
    order = list(plays)
    for i in range(runs + 2):  # two warm-up rounds
        took = {}
        for name in order[i % len(order) :] + order[: i % len(order)]:  # each goes first in turn
            t0 = time.perf_counter()
            result = plays[name]()
            took[name] = time.perf_counter() - t0
            assert result.reason == "success" and result.turns == turns, (name, result)
        if i >= 2:
            for name, seconds in took.items():
                times[name].append(seconds / turns * 1e6)
    for store in stores.values():
        store.close()
    for close in closers:
        close()
    tel.shutdown()
    return {name: statistics.median(values) for name, values in times.items()}


def least_writes(urls: dict[str, str]) -> tuple[dict[str, Any], list[Any]]:
    """Checkpointers doing the least a store must: one trivial SQLite commit, one PostgreSQL round trip."""
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
        closers.append(lite.close)
    if "PostgreSQL" in urls:
        import psycopg

        conn = psycopg.connect(urls["PostgreSQL"], autocommit=True)
        least["bare + 1 PG round trip"] = lambda _: conn.execute("SELECT 1").fetchall()
        closers.append(conn.close)
    return least, closers


class TimedStore:
    """A store whose checkpoints are timed (microseconds each, in order)."""

    send_checkpoint = None  # each checkpoint written and timed in one call (no sending ahead)

    def __init__(self, store: Any) -> None:
        self.store, self.took = store, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def checkpoint(self, *args: Any) -> None:
        t0 = time.perf_counter()
        self.store.checkpoint(*args)
        self.took.append((time.perf_counter() - t0) * 1e6)


def checkpoint_growth(url: str, runs: int) -> dict[str, float]:
    """Median microseconds of one checkpoint in 10-turn runs and in the last 10 turns of 200-turn runs.

    The two lengths alternate, so the store's growth and the machine's drift touch both alike.
    """
    store = TimedStore(open_store(url))
    runners: dict[int, Runner] = {}
    last: dict[int, list[float]] = {}
    for turns in (10, 200):
        catalog = Catalog()
        catalog.register("bench", lambda state, t=turns: counting_agent(t, NoHooks()))
        runners[turns] = Runner(store, catalog)  # type: ignore[arg-type]
        last[turns] = []
    for _ in range(max(5, runs // 4)):
        for turns, runner in runners.items():
            store.took = []
            asyncio.run(runner.start("bench", "note numbers"))
            last[turns] += store.took[-10:]
    store.store.close()
    at10, at200 = statistics.median(last[10]), statistics.median(last[200])
    return {"checkpoint_us_at_10": at10, "checkpoint_us_at_200": at200}


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
    with sqlite3.connect(store_path) as folding:  # the write-ahead log written back into the store
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
    }


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


def show(turn: dict[str, float]) -> None:
    bare = turn.pop("bare")
    print(f"  bare loop                   {bare:8.1f} us/turn")
    for name, us in turn.items():
        label = name if name.startswith("bare +") else f"with {name}"
        print(f"  {label:<27} {us:8.1f} us/turn   {us / bare:5.2f}x the bare loop")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=25)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--suspended", type=int, default=1000)
    parser.add_argument(
        "--model-ms", type=float, default=1.0, help="also measure with model calls this long (0: skip)"
    )
    parser.add_argument(
        "--store", type=Path, default=None, help="folder for the SQLite files (default: a temp dir)"
    )
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL (needs Debian's postgresql)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.store or Path(tmp)
        urls = {"SQLite": f"sqlite:///{folder / 'turns.db'}"}
        server = None if args.no_pg else _postgres()
        try:
            if server is not None:
                urls["PostgreSQL"] = server.new_database()
            turn = per_turn(urls, args.turns, args.runs)
            print(f"per turn ({args.turns}-turn runs, median of {args.runs}, telemetry on, interleaved):")
            show(turn)
            if args.model_ms:
                turn = per_turn(urls, args.turns, args.runs, args.model_ms / 1000)
                print(f"per turn with a model call of {args.model_ms:g} ms (awaited, as over a network):")
                show(turn)
            for name, url in urls.items():
                growth = checkpoint_growth(url, args.runs)
                at10, at200 = growth["checkpoint_us_at_10"], growth["checkpoint_us_at_200"]
                print(
                    f"  one {name} checkpoint: {at10:7.1f} us at 10 turns of history, "
                    f"{at200:7.1f} us at 200 ({at200 / at10:4.2f}x)"
                )
        finally:
            if server is not None:
                server.stop()
        many = suspended(folder / "suspended.db", args.suspended)
        print(f"{many['suspended']:.0f} runs suspended at once:")
        print(f"  suspend              {many['suspend_per_s']:8.1f} runs/s")
        print(f"  store size           {many['store_bytes_per_suspended_run']:8.0f} bytes/suspended run")
        folded = many["folded_bytes_per_suspended_run"]
        print(f"    WAL written back   {folded:8.0f} bytes/suspended run (the runs, without a ~4 MB log)")
        rss = many["rss_kib_growth_per_suspended_run"]
        print(f"  process memory       {rss:8.2f} KiB/suspended run (growth of max RSS)")
        print(f"  resume throughput    {many['resume_per_s']:8.1f} runs/s (answer, finish, record)")


if __name__ == "__main__":
    main()
