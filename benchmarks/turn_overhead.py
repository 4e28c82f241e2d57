"""What a turn costs: Endstate with full telemetry against the raw OpenTelemetry SDK floor.

Run: `python benchmarks/turn_overhead.py [--repeats N] [--clock cpu|wall] [--no-peer] [--smoke]`.
Not a test: it prints microseconds per turn (median of repeats; this process's
CPU time unless `--clock wall`) at 10, 50 and 100 turns per run, and the
ratios. Every variant plays the same turn: a model reply with one tool call,
one async tool, the result back into the history. The model is a constant-time
fake, so what is measured is the harness, not the script player.

The floor is recorded, not written by hand: one real Endstate run of each
length is recorded (every span with its parent, kind, attributes, events and
status; every Prometheus update, as the change of each series), then the
floor replays exactly those spans through the raw SDK (`tracer.start_span`,
`end`, the SDK's own `BatchSpanProcessor`, the same exporter), their attributes
and events as plain dicts as a hand-written loop passes them, and exactly
those updates on label children looked up once, inside the least loop that
plays the same turns. When Endstate's spans change, the floor changes with
them. Variants run interleaved, one run of each per repeat.

With `--instructions` (needs valgrind) it counts instructions instead of
time: each variant and turn count in processes of its own under cachegrind,
the difference between two numbers of runs, per turn. A count does not move
with the machine's load, and it leaves out what time also holds: the caches
and branch predictors, which a loop that does more kinds of work a turn uses
worse. Both are reported; the target is read on time. `--cache-sim` counts
that too: cachegrind's simulated instruction and data caches and branch
predictor, misses and mispredicts a turn for each variant.

Full telemetry is what `Telemetry.from_env` wires. With pydantic-ai-slim
installed, an instrumented Pydantic AI agent (spans and metrics, content off)
plays the same turns; like Endstate's, its agent is built once per run length,
outside the timed runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind, Status
from prometheus_client import CollectorRegistry

from agent import Agent, Budget, ProgressDetector, tool
from agent.models import ModelReply, ModelRequest
from telemetry import MetricsHooks, Telemetry, TelemetryHooks, TracingHooks
from telemetry.metrics import _Instruments

TURN_COUNTS = (10, 50, 100)
TARGET = 1.3  # full telemetry at most this many times the raw-SDK floor
RunOnce = Callable[[int], Awaitable[None]]


class DropSpans(SpanExporter):
    """Accepts every batch and keeps nothing."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class FastModel:
    """Replies in constant time: a call of `look` with a fresh path each turn."""

    name = "claude-sonnet-4-5"
    provider = "anthropic"

    def __init__(self) -> None:
        self.turn = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.turn += 1
        block = {
            "type": "tool_use",
            "id": f"toolu_{self.turn}",
            "name": "look",
            "input": {"path": f"p{self.turn}"},
        }
        return ModelReply(
            [{"type": "text", "text": "looking"}, block], 1200, 40, "tool_use", self.name, "msg"
        )


@tool
async def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def agent_of(turns: int, hooks: Any = None) -> Agent:
    return Agent(
        "bench",
        FastModel(),
        tools=[look],
        budget=Budget(max_turns=turns, max_seconds=None),
        progress=lambda: ProgressDetector(max_idle_turns=None),
        **({"hooks": hooks} if hooks is not None else {}),
    )


def endstate(hooks: Any = None) -> RunOnce:
    """Runs of one agent per turn count, built once outside the timed runs."""
    agents = {turns: agent_of(turns, hooks) for turns in TURN_COUNTS}

    async def run(turns: int) -> None:
        result = await agents[turns].arun("read")
        assert result.turns == turns, result

    return run


# -- the recorded floor --------------------------------------------------------


Step = tuple[str, int]  # ("start" | "end", index into the recorded spans)
Update = tuple[Any, str, float, int]  # (label child, "inc" | "observe" | "set", value, times)


def record(turns: int) -> tuple[list[ReadableSpan], list[tuple[str, dict[str, str], str, float, int]]]:
    """One real run with full telemetry: its spans, and each series' change (see `_updates`)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    metrics = MetricsHooks(CollectorRegistry())
    before = _samples(metrics.registry)
    asyncio.run(agent_of(turns, TelemetryHooks(metrics, TracingHooks(provider))).arun("read"))
    after = _samples(metrics.registry)
    return list(exporter.get_finished_spans()), _updates(before, after)


def _samples(registry: CollectorRegistry) -> dict[tuple[str, str, tuple[tuple[str, str], ...]], float]:
    return {
        (family.name, sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in registry.collect()
        for sample in family.samples
    }


def _updates(
    before: dict[Any, float], after: dict[Any, float]
) -> list[tuple[str, dict[str, str], str, float, int]]:
    """Counters' increments, histograms' observations (count and mean), gauges' values."""
    changes = []
    for (family, sample, labels), value in after.items():
        delta = value - before.get((family, sample, labels), 0.0)
        if not delta:
            continue
        if sample.endswith("_count"):
            mean = (
                after[(family, family + "_sum", labels)] - before.get((family, family + "_sum", labels), 0.0)
            ) / delta
            changes.append((family, dict(labels), "observe", mean, int(delta)))
        elif sample.endswith("_total"):
            whole = delta == int(delta) and delta <= 1000
            changes.append((family, dict(labels), "inc", 1.0 if whole else delta, int(delta) if whole else 1))
        elif not sample.endswith(("_sum", "_bucket", "_created")):
            changes.append((family, dict(labels), "set", value, 1))
    return changes


def raw_floor(recorded: dict[int, tuple[list[ReadableSpan], list[Any]]]) -> RunOnce:
    """The least loop playing the same turns, making the recorded spans and updates with the raw SDK."""
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DropSpans()))
    tracer = provider.get_tracer("endstate")
    instruments = _Instruments(CollectorRegistry())
    # by `dir`, not `vars`: an instance of a class compiled by mypyc has no `__dict__`
    found = (getattr(instruments, name) for name in dir(instruments) if not name.startswith("__"))
    by_name = {m._name: m for m in found if hasattr(m, "_name")}
    plans = {
        turns: (_steps(spans), [_Replayed.of(s) for s in spans], [_child(by_name, u) for u in updates])
        for turns, (spans, updates) in recorded.items()
    }

    async def run(turns: int) -> None:
        steps, spans, updates = plans[turns]
        model, messages = FastModel(), [{"role": "user", "content": "read"}]
        live: dict[int, Any] = {}
        contexts: dict[int, Any] = {}
        for kind, i in steps:
            span = spans[i]
            if kind == "start":
                if span.name == "agent.turn":  # a turn: the model call, the tool, the history
                    reply = await model.complete(ModelRequest("", list(messages), [], 1024))
                    messages.append({"role": "assistant", "content": reply.content})
                    block = reply.content[1]
                    text = await look.fn(**block["input"])
                    result = {"type": "tool_result", "tool_use_id": block["id"], "content": text}
                    messages.append({"role": "user", "content": [result]})
                parent = contexts.get(span.parent.span_id) if span.parent else None
                made = tracer.start_span(
                    span.name, context=parent, kind=span.kind, attributes=span.attributes
                )
                live[i] = made
                contexts[span.context.span_id] = trace.set_span_in_context(made)
            else:
                made = live.pop(i)
                for name, attributes in span.events:
                    made.add_event(name, attributes)
                if span.status.status_code.value:
                    made.set_status(Status(span.status.status_code, span.status.description))
                made.end()
        for child, how, value, times in updates:
            act = getattr(child, how)
            for _ in range(times):
                act(value)

    return run


@dataclass(frozen=True, slots=True)
class _Replayed:
    """One recorded span as the floor hands it to the SDK: its attributes and events as plain dicts,
    as a hand-written loop passes them (the recorded `BoundedAttributes` are slower to read)."""

    name: str
    kind: SpanKind
    parent: SpanContext | None
    context: SpanContext | None
    status: Status
    attributes: dict[str, Any]
    events: tuple[tuple[str, dict[str, Any]], ...]

    @classmethod
    def of(cls, span: ReadableSpan) -> _Replayed:
        events = tuple((e.name, dict(e.attributes or {})) for e in span.events)
        attributes = dict(span.attributes or {})
        return cls(span.name, span.kind, span.parent, span.context, span.status, attributes, events)


def _steps(spans: list[ReadableSpan]) -> list[Step]:
    """Starts and ends in the order the run made them."""
    events = [(s.start_time or 0, 0, "start", i) for i, s in enumerate(spans)]
    events += [(s.end_time or 0, 1, "end", i) for i, s in enumerate(spans)]
    return [(kind, i) for _, _, kind, i in sorted(events)]


def _child(by_name: dict[str, Any], update: tuple[str, dict[str, str], str, float, int]) -> Update:
    family, labels, how, value, times = update
    metric = by_name[family]
    return (metric.labels(**labels) if labels else metric, how, value, times)


def full_telemetry() -> tuple[RunOnce, Telemetry]:
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=DropSpans())
    return endstate(telemetry.hooks), telemetry


def pydantic_ai_variant() -> RunOnce | None:
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from pydantic_ai import Agent as PydanticAgent
        from pydantic_ai import InstrumentationSettings
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.usage import RequestUsage, UsageLimits
    except ImportError as exc:
        print(f"note: Pydantic AI comparison skipped ({exc}); pip install pydantic-ai-slim to include it")
        return None
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DropSpans()))
    settings = InstrumentationSettings(
        tracer_provider=provider,
        meter_provider=MeterProvider([InMemoryMetricReader()]),
        include_content=False,
    )
    played = {"count": 0, "turns": 0}

    def reply(messages: Any, info: Any) -> ModelResponse:
        played["count"] += 1
        count, usage = played["count"], RequestUsage(input_tokens=1200, output_tokens=40)
        if count > played["turns"] - 1:
            return ModelResponse(parts=[TextPart("done")], usage=usage)
        call = ToolCallPart("look", {"path": f"p{count}"}, tool_call_id=f"t{count}")
        return ModelResponse(parts=[TextPart("looking"), call], usage=usage)

    agent = PydanticAgent(FunctionModel(reply))  # built once, as Endstate's are
    agent.instrument = settings
    agent.tool_plain(look.fn)

    async def run(turns: int) -> None:
        played.update(count=0, turns=turns)
        await agent.run("read", usage_limits=UsageLimits(request_limit=None))
        assert played["count"] == turns

    return run


# -- measuring -----------------------------------------------------------------


Table = dict[str, dict[int, float]]


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def measure(variants: dict[str, RunOnce], repeats: int, clock: str = "cpu") -> Table:
    """Median microseconds per turn for each variant and turn count, interleaved.

    `cpu` is this process's CPU time (all its threads, the span export
    thread too): on a machine shared with other work it leaves out the time
    other processes hold the cores, which wall-clock time (`wall`) counts.

    Each repeat runs every variant once per turn count, in turn, so drift of
    the machine touches them alike; a full garbage collection before each
    timed run keeps one variant's garbage off another's clock.
    """
    samples: dict[str, dict[int, list[float]]] = {name: {t: [] for t in TURN_COUNTS} for name in variants}
    now = CLOCKS[clock]

    async def timed() -> None:
        for run in variants.values():
            for turns in TURN_COUNTS:
                for _ in range(2):
                    await run(turns)
        for _ in range(repeats):
            for turns in TURN_COUNTS:
                for name, run in variants.items():
                    gc.collect()
                    started = now()
                    await run(turns)
                    samples[name][turns].append((now() - started) / turns * 1e6)

    asyncio.run(timed())
    return {name: {t: statistics.median(v) for t, v in row.items()} for name, row in samples.items()}


FLOOR = "raw SDK floor (recorded)"
FULL = "Endstate, full telemetry"
OFF = "Endstate, telemetry off"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed runs per variant and turn count")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="process CPU time or wall")
    parser.add_argument("--no-peer", action="store_true", help="leave out Pydantic AI (the slow part)")
    parser.add_argument("--instructions", action="store_true", help="count instructions (valgrind), not time")
    parser.add_argument(
        "--processes", type=int, default=3, help="--instructions: processes per count (median kept)"
    )
    parser.add_argument(
        "--cache-sim",
        action="store_true",
        help="simulate caches and branch prediction (valgrind): misses and mispredicts a turn, not time",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a quick check, not a measure: 1 repeat; the peer must be installed unless --no-peer",
    )
    parser.add_argument("--play", nargs=3, metavar=("VARIANT", "TURNS", "RUNS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.play:
        play(args.play[0], int(args.play[1]), int(args.play[2]))
        return 0
    if args.cache_sim:
        for event, table in count_cache_events().items():
            report(table, f"k {event} a turn", judged=event == "instructions")
            print()
        return 0
    if args.instructions:
        report(count_instructions(args.processes), "k instructions a turn")
        return 0
    run_full, telemetry = full_telemetry()
    variants: dict[str, RunOnce] = {
        FLOOR: raw_floor({turns: record(turns) for turns in TURN_COUNTS}),
        FULL: run_full,
        OFF: endstate(),
    }
    if args.smoke:
        args.repeats = 1
    if not args.no_peer and (pydantic := pydantic_ai_variant()) is not None:
        variants["Pydantic AI, instrumented"] = pydantic
    elif not args.no_peer and args.smoke:  # a check that names its peer must run it
        print("error: --smoke without --no-peer needs Pydantic AI: pip install -e '.[dev]'", file=sys.stderr)
        telemetry.shutdown()
        return 1
    table = measure(variants, args.repeats, args.clock)
    telemetry.shutdown()
    report(table, f"us/turn, median ({args.clock})")
    return 0


def report(table: Table, heading: str = "us/turn, median (cpu)", judged: bool = True) -> None:
    """The table and its ratios; `judged`: against the target too (time and instructions, not the
    cache events, which only say where time goes)."""
    print(f"{heading:<30}" + "".join(f"{f'@{t}':>10}" for t in TURN_COUNTS))
    for name, row in table.items():
        print(f"{name:<30}" + "".join(f"{row[t]:>10.1f}" for t in TURN_COUNTS))
    ratios = {t: table[FULL][t] / table[FLOOR][t] for t in TURN_COUNTS}
    cells = ", ".join(f"{r:.2f}x @{t}" for t, r in ratios.items())
    verdict = "met" if max(ratios.values()) <= TARGET else "NOT met"
    judgement = f" (target <= {TARGET}x): {verdict}" if judged else ""
    print(f"\nfull telemetry / raw-SDK floor: {cells}{judgement}")
    if off := table.get(OFF):
        # full = the loop + its telemetry; the floor = the SDK work + a least loop that does almost nothing
        own = ", ".join(f"{(table[FULL][t] - off[t]) / table[FLOOR][t]:.2f}x @{t}" for t in TURN_COUNTS)
        loop = ", ".join(f"{off[t] / table[FLOOR][t]:.2f}x @{t}" for t in TURN_COUNTS)
        print(f"what telemetry adds to a turn (full - off) / floor: {own}")
        print(f"the loop with telemetry off / floor: {loop}")
    if pydantic := table.get("Pydantic AI, instrumented"):
        print(
            "Pydantic AI / Endstate full telemetry: "
            + ", ".join(f"{pydantic[t] / table[FULL][t]:.1f}x @{t}" for t in TURN_COUNTS)
        )


# -- counting instructions -----------------------------------------------------


PLAYED = {"floor": FLOOR, "full": FULL, "off": OFF}


def play(variant: str, turns: int, runs: int) -> None:
    """Build one variant (a key of `PLAYED`) and play `runs` runs of `turns` turns: what
    `count_instructions` runs under cachegrind."""
    if variant == "floor":
        run = raw_floor({turns: record(turns)})
    else:
        run = full_telemetry()[0] if variant == "full" else endstate()

    async def runs_of() -> None:
        for _ in range(runs):
            await run(turns)

    asyncio.run(runs_of())


def count_instructions(processes: int = 3) -> Table:
    """Thousands of instructions a turn for each variant and turn count: the instructions of a
    process playing `more` runs minus those of one playing `few` (so building, imports and the
    first runs' warm-up cancel out), over the turns between. Hash seed fixed, the collector on.
    Each count is the median of `processes` processes: the batch export thread's share moves
    with how valgrind schedules it, by up to 10% of the floor's count (2026-12-02)."""
    table: Table = {name: {} for name in PLAYED.values()}
    for turns in TURN_COUNTS:
        few, more = 2, 2 + max(10, 1000 // turns)
        for key, name in PLAYED.items():
            counts = [_instructions(key, turns, runs) for runs in (few, more) for _ in range(processes)]
            spent = statistics.median(counts[processes:]) - statistics.median(counts[:processes])
            table[name][turns] = spent / ((more - few) * turns) / 1000
    return table


def _instructions(variant: str, turns: int, runs: int) -> int:
    """Instructions (cachegrind's `I refs`, every thread) of one process that plays `runs` runs."""
    return _cachegrind(variant, turns, runs, simulate=False)["instructions"]


# cachegrind's summary lines, by what the report calls them
CACHE_EVENTS = {
    "instructions": "I refs",
    "instruction-cache misses (I1)": "I1  misses",
    "data-cache misses (D1)": "D1  misses",
    "branches": "Branches",
    "branch mispredicts": "Mispredicts",
}


def count_cache_events() -> dict[str, Table]:
    """Thousands of each of `CACHE_EVENTS` a turn for each variant and turn count, as
    `count_instructions` counts (one process a count). What time holds and an instruction count
    does not: a turn that runs more kinds of code misses the caches and branch predictors more."""
    tables: dict[str, Table] = {event: {name: {} for name in PLAYED.values()} for event in CACHE_EVENTS}
    for turns in TURN_COUNTS:
        few, more = 2, 2 + max(10, 1000 // turns)
        for key, name in PLAYED.items():
            low, high = (_cachegrind(key, turns, runs, simulate=True) for runs in (few, more))
            for event in CACHE_EVENTS:
                tables[event][name][turns] = (high[event] - low[event]) / ((more - few) * turns) / 1000
    return tables


def _cachegrind(variant: str, turns: int, runs: int, simulate: bool) -> dict[str, int]:
    """Cachegrind's counts (every thread) of one process that plays `runs` runs: instructions only,
    or with `simulate` the simulated caches' misses and the branch predictor's mispredicts too."""
    sim = ["--cache-sim=yes", "--branch-sim=yes"] if simulate else ["--cache-sim=no"]
    command = ["valgrind", "--tool=cachegrind", *sim, "--cachegrind-out-file=/dev/null"]
    command += [sys.executable, __file__, "--play", variant, str(turns), str(runs)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    counts = {}
    for event, label in CACHE_EVENTS.items():
        found = re.search(re.escape(label).replace(r"\ ", r"\s+") + r":\s+([\d,]+)", done.stderr)
        if found is None and (simulate or event == "instructions"):
            raise SystemExit(f"no {label!r} count in valgrind's output:\n{done.stderr[-2000:]}")
        counts[event] = int(found.group(1).replace(",", "")) if found else 0
    return counts


if __name__ == "__main__":
    sys.exit(main())
