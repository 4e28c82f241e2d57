"""What durability costs: per-turn checkpoints on SQLite, and 1,000 runs suspended at once.

    python benchmarks/store_overhead.py [--turns 25] [--runs 40] [--suspended 1000] [--store PATH]

Part 1 runs the same scripted agent (one cheap tool call per turn) bare and
through a `Runner` on a SQLite store, both with telemetry on (metrics and
tracing into an in-memory exporter), interleaved in one process, and prints the
median cost per turn of each and the difference. Each turn writes one
checkpoint (its one tool result lands with the completed turn).

Part 2 suspends `--suspended` runs at once (each asks a question after one
turn), reports the store bytes and the process memory per suspended run, then
resumes them all and reports the throughput.

A benchmark, not a test: numbers vary with the machine; nothing asserts them.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agent import Agent, Budget, HelpPolicy, tool
from agent.models.scripted import ScriptedModel, call, finish
from agent.runner import Catalog, Runner
from agent.store import open_store


@tool
def note(n: int) -> str:
    """Write down a number."""
    return f"noted {n}"


def counting_agent(turns: int, hooks: Any) -> Agent:
    """`turns - 1` tool calls with new arguments each turn, then finish."""
    steps = [[call("note", n=i)] for i in range(turns - 1)] + [[finish("done", "noted")]]
    return Agent(
        name="bench",
        model=ScriptedModel(steps),
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


def per_turn(store_path: Path, turns: int, runs: int) -> dict[str, float]:
    """Median microseconds per turn, bare and durable, runs interleaved."""
    tel = telemetry()
    catalog = Catalog()
    catalog.register("bench", lambda state: counting_agent(turns, tel.hooks))
    store = open_store(str(store_path))
    runner = Runner(store, catalog, hooks=tel.hooks)
    bare, durable = [], []
    for i in range(runs + 2):  # two warm-up rounds
        agent = counting_agent(turns, tel.hooks)
        t0 = time.perf_counter()
        result = agent.run("note numbers")
        t1 = time.perf_counter()
        stored = asyncio.run(runner.start("bench", "note numbers"))
        t2 = time.perf_counter()
        assert result.reason == stored.reason == "success" and stored.turns == turns
        if i >= 2:
            bare.append((t1 - t0) / turns * 1e6)
            durable.append((t2 - t1) / turns * 1e6)
    store.close()
    tel.shutdown()
    b, d = statistics.median(bare), statistics.median(durable)
    return {"bare_us_per_turn": b, "durable_us_per_turn": d, "checkpoint_us_per_turn": d - b}


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
    db_bytes = sum(p.stat().st_size for p in store_path.parent.glob(store_path.name + "*"))
    t2 = time.perf_counter()
    asyncio.run(_resume_all(runner, ids))
    t3 = time.perf_counter()
    store.close()
    tel.shutdown()
    return {
        "suspended": waiting,
        "suspend_per_s": count / (t1 - t0),
        "store_bytes_per_suspended_run": db_bytes / count,
        "rss_kib_growth_per_suspended_run": (rss1 - rss0) / count,
        "resume_per_s": count / (t3 - t2),
    }


def _rss_kib() -> float:
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=25)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--suspended", type=int, default=1000)
    parser.add_argument(
        "--store", type=Path, default=None, help="folder for the SQLite files (default: a temp dir)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.store or Path(tmp)
        turn = per_turn(folder / "turns.db", args.turns, args.runs)
        print(f"per turn ({args.turns}-turn runs, median of {args.runs}, telemetry on):")
        print(f"  bare loop            {turn['bare_us_per_turn']:8.1f} us/turn")
        print(f"  with SQLite store    {turn['durable_us_per_turn']:8.1f} us/turn")
        print(f"  checkpoint overhead  {turn['checkpoint_us_per_turn']:8.1f} us/turn (1 checkpoint a turn)")
        many = suspended(folder / "suspended.db", args.suspended)
        print(f"{many['suspended']:.0f} runs suspended at once:")
        print(f"  suspend              {many['suspend_per_s']:8.1f} runs/s")
        print(f"  store size           {many['store_bytes_per_suspended_run']:8.0f} bytes/suspended run")
        rss = many["rss_kib_growth_per_suspended_run"]
        print(f"  process memory       {rss:8.2f} KiB/suspended run (growth of max RSS)")
        print(f"  resume throughput    {many['resume_per_s']:8.1f} runs/s (answer, finish, record)")


if __name__ == "__main__":
    main()
