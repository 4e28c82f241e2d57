"""The memory of a long-lived `endstate serve`: what each run leaves behind, against its own warm-up.

    python benchmarks/service_memory.py [--runs 20000] [--warm 1000] [--readings 4] [--ask-every 10]
                                        [--stores sqlite,postgresql] [--telemetry on,off]
                                        [--python] [--trim] [--env NAME=VALUE ...] [--smoke]

For each store (SQLite in a temporary folder; PostgreSQL on a throwaway server on loopback, from
Debian's binaries) and each telemetry setting, a real `endstate serve` process (this module's
catalog: two scripted agents, one tool call then `done`; every `--ask-every`th run asks a person
first) is driven over HTTP, one run after another: `POST /runs`, `GET /runs/{id}` until it waits or
ends, the answer posted for a run that asks, `/metrics` and `/pending` read every 50 runs (as
Prometheus and the inbox would). Every run must end `success`. Telemetry `on`: spans exported over
OTLP/HTTP to a receiver on loopback that drops them; `off`: `OTEL_TRACES_EXPORTER=none` and no
`/metrics` read (the metrics still count in memory: a service always has them).

At each reading the service collects its garbage (`gc.collect()`, and glibc's `malloc_trim(0)` with
`--trim`, which gives back free memory the allocator kept: what is left is live data, not
fragmentation) and writes its resident set size (RSS, now, not the maximum), the count of objects
the collector tracks, and with `--python` the bytes tracemalloc traces (started in the service
before anything is imported: slow). Readings: after the first 100 runs (the imports and first
connections are in), after `--warm` runs, then `--readings` more to `--runs`.

The report, per configuration: each reading with the bytes per run since the one before; then the
bytes per run of the warm-up (first reading to `--warm`), of the long stretch after it, and of that
stretch's last half, and two ratios: the last half against the warm-up, and against the long
stretch's first half. A process whose memory levels off (caches filling to their bound) reads near
0x; one that keeps something per run reads near 1x (or more) against the first half, however long
it runs. A benchmark, not a test: nothing asserts the numbers. The counts of what a run could
leave in the service's own structures are asserted by `tests/test_creep_kept.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOKEN = "service-memory-benchmark-token"
READ_ENV = "SERVICE_MEMORY_READING"  # where the service writes a reading (a JSON line) on SIGUSR1
SCRAPE_EVERY = 50  # runs between reads of /metrics and /pending
FIRST = 100  # the first reading, once imports and connections are in


# -- inside the service -----------------------------------------------------------------------


def catalog() -> Any:
    """The service's agents: `quick` (a tool call, then done) and `asker` (the same, asking first)."""
    from agent import Agent, Budget, HelpPolicy, tool
    from agent.durable.runner import Catalog
    from agent.models.scripted import ScriptedModel, call, finish

    @tool
    def note(n: int) -> str:
        """Write down a number."""
        return f"noted {n}"

    def build(asks: bool) -> Any:
        def agent(state: dict[str, Any]) -> Agent:
            steps = [[call("note", n=1)], *([[finish("need_help", "Which one?")]] if asks else [])]
            return Agent(
                name="asker" if asks else "quick",
                model=ScriptedModel([*steps, [finish("done", "noted")]]),
                tools=[note],
                budget=Budget(max_turns=10, max_seconds=600),
                help=HelpPolicy(wait_seconds=3600),
            )

        return agent

    made = Catalog()
    made.register("quick", build(False))
    made.register("asker", build(True))
    return made


def serve_read(argv: list[str]) -> int:
    """`endstate serve ARGV` with a SIGUSR1 handler that appends a reading to $SERVICE_MEMORY_READING."""
    import tracemalloc

    if os.environ.get("SERVICE_MEMORY_PYTHON"):
        tracemalloc.start()
    signal.signal(signal.SIGUSR1, lambda *_: _write_reading())
    from agent.cli.main import main

    return main(["serve", *argv])


def _write_reading() -> None:
    import tracemalloc

    gc.collect()
    if os.environ.get("SERVICE_MEMORY_TRIM"):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else None
    reading = {"rss": rss_bytes(os.getpid()), "objects": len(gc.get_objects()), "traced": traced}
    with open(os.environ[READ_ENV], "a") as out:
        out.write(json.dumps(reading) + "\n")


def rss_bytes(pid: int) -> int:
    """The resident set size of process `pid` now."""
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# -- the driver ----------------------------------------------------------------------------------


@dataclass
class Reading:
    runs: int
    rss: int
    objects: int
    traced: int | None


class Sink:
    """An OTLP/HTTP receiver on loopback that answers every export 200 and drops it."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        ok = ExportTraceServiceResponse().SerializeToString()
        sink = self
        self.exports = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                sink.exports += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(ok)))
                self.end_headers()
                self.wfile.write(ok)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Service:
    """A running `endstate serve` of this module's catalog over `store`."""

    def __init__(self, store: str, folder: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.readings_at = folder / "readings.jsonl"
        self.log = folder / "serve.log"
        argv = ["--store", store, "--catalog", "service_memory:catalog", "--port", str(self.port)]
        code = "import sys, service_memory; sys.exit(service_memory.serve_read(sys.argv[1:]))"
        paths = [str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]
        full = {**os.environ, **env, "ENDSTATE_TOKEN": TOKEN, READ_ENV: str(self.readings_at)}
        full["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code, *argv], env=full, stdout=log, stderr=subprocess.STDOUT
            )

    def read(self) -> tuple[int, int, int | None]:
        """A reading the service makes of itself (after a collection): RSS, objects, traced bytes."""
        before = self._lines()
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.proc.poll() is None:
            lines = self._lines()
            if len(lines) > len(before):
                got = json.loads(lines[-1])
                return got["rss"], got["objects"], got["traced"]
            time.sleep(0.02)
        raise SystemExit(f"the service made no reading: see {self.log}")

    def _lines(self) -> list[str]:
        return self.readings_at.read_text().splitlines() if self.readings_at.exists() else []

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Driver:
    """Runs over HTTP, one after another, each to its end."""

    def __init__(self, port: int, ask_every: int, scrape: bool) -> None:
        import httpx

        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        )
        self.ask_every, self.scrape, self.done = ask_every, scrape, 0

    def ready(self, service: Service) -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and service.proc.poll() is None:
            with contextlib.suppress(Exception):
                if self.http.get("/readyz").status_code == 200:
                    return
            time.sleep(0.1)
        raise SystemExit(f"the service did not get ready: see {service.log}")

    def run_to(self, total: int) -> None:
        while self.done < total:
            self.done += 1
            self.one(asks=bool(self.ask_every) and self.done % self.ask_every == 0)
            if self.scrape and self.done % SCRAPE_EVERY == 0:
                self.http.get("/metrics")
                self.http.get("/pending")

    def one(self, asks: bool) -> None:
        started = self.http.post("/runs", json={"agent": "asker" if asks else "quick", "task": "note it"})
        if started.status_code != 202:
            raise SystemExit(f"POST /runs: {started.status_code} {started.text}")
        run_id = started.json()["run_id"]
        if asks:
            self.wait(run_id, "waiting")
            answered = self.http.post(f"/runs/{run_id}/answer", json={"answer": "the first"})
            if answered.status_code != 202:
                raise SystemExit(f"answer: {answered.status_code} {answered.text}")
        run = self.wait(run_id, "finished")
        if run.get("stop_reason") != "success":
            raise SystemExit(f"run {run_id} did not end success: {run}")

    def wait(self, run_id: str, status: str) -> dict[str, Any]:
        for _ in range(30_000):
            run: dict[str, Any] = self.http.get(f"/runs/{run_id}").json()
            if run["status"] == status:
                return run
            time.sleep(0.002)
        raise SystemExit(f"run {run_id} never got {status}: {run}")


def marks(runs: int, warm: int, readings: int) -> list[int]:
    """When to read: after FIRST runs (fewer for a short run), after `warm`, then `readings` more."""
    first = min(FIRST, warm // 2)
    after = [warm + (runs - warm) * (i + 1) // readings for i in range(readings)]
    return sorted({first, warm, *after})


def measure(store: str, env: dict[str, str], scrape: bool, args: argparse.Namespace) -> list[Reading]:
    """A service over `store` driven to `args.runs` runs, read at each mark."""
    with tempfile.TemporaryDirectory(prefix="service-memory-") as folder:
        service = Service(store.replace("{folder}", folder), Path(folder), env)
        try:
            driver = Driver(service.port, args.ask_every, scrape)
            driver.ready(service)
            readings = []
            for mark in marks(args.runs, args.warm, args.readings):
                driver.run_to(mark)
                readings.append(Reading(mark, *service.read()))
            return readings
        finally:
            service.stop()


def per_run(a: Reading, b: Reading, what: str = "rss") -> float:
    """Bytes per run from reading `a` to reading `b`."""
    return (getattr(b, what) - getattr(a, what)) / max(1, b.runs - a.runs)


def report(title: str, readings: list[Reading], warm: int) -> None:
    print(title)
    print(f"  {'runs':>8}  {'RSS KiB':>10}  {'B/run since last':>16}  {'objects':>9}  {'traced KiB':>10}")
    for before, now in zip([None, *readings], readings, strict=False):
        step = f"{per_run(before, now):16.0f}" if before else f"{'':>16}"
        traced = f"{now.traced / 1024:10.0f}" if now.traced is not None else f"{'-':>10}"
        print(f"  {now.runs:8,}  {now.rss / 1024:10.0f}  {step}  {now.objects:9,}  {traced}")
    first, at_warm, last = readings[0], next(r for r in readings if r.runs == warm), readings[-1]
    middle = min(readings, key=lambda r: abs(r.runs - (warm + last.runs) / 2))
    warming, late, early = per_run(first, at_warm), per_run(middle, last), per_run(at_warm, middle)
    print(
        f"  warm-up ({first.runs:,} -> {warm:,}): {warming:.0f} B/run; after it ({warm:,} -> "
        f"{last.runs:,}): {per_run(at_warm, last):.0f} B/run; its last half ({middle.runs:,} -> "
        f"{last.runs:,}): {late:.0f} B/run"
    )
    print(f"  objects after the warm-up: {per_run(at_warm, last, 'objects'):+.3f} a run")
    print(f"  last half / warm-up: {ratio(late, warming)}; last half / first half: {ratio(late, early)}")


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}x" if b > 0 else f"n/a ({a:.0f} against {b:.0f} B/run)"


@contextlib.contextmanager
def stores(names: list[str]) -> Iterator[list[tuple[str, Any]]]:
    """(label, URL maker) for each store named; a PostgreSQL server while needed."""
    server = None
    made: list[tuple[str, Any]] = []
    try:
        for name in names:
            if name == "sqlite":
                made.append(("SQLite", lambda: "{folder}/runs.db"))
            elif name == "postgresql":
                if server is None:
                    server = _postgres()
                made.append(("PostgreSQL", server.new_database))
            else:
                raise SystemExit(f"unknown store {name!r}: sqlite or postgresql")
        yield made
    finally:
        if server is not None:
            server.stop()


def _postgres() -> Any:
    """A throwaway PostgreSQL server on loopback (the tests' helper)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import pg

    return pg.PostgresServer()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=20_000)
    p.add_argument("--warm", type=int, default=1_000)
    p.add_argument("--readings", type=int, default=4)
    p.add_argument("--ask-every", type=int, default=10)
    p.add_argument("--stores", default="sqlite,postgresql")
    p.add_argument("--telemetry", default="on,off")
    p.add_argument("--python", action="store_true", help="trace Python's allocations (tracemalloc: slow)")
    p.add_argument("--trim", action="store_true", help="malloc_trim(0) before each reading")
    p.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE for the service (MALLOC_ARENA_MAX=2)"
    )
    p.add_argument("--smoke", action="store_true", help="40 runs, warm-up 20, 2 readings: a check it runs")
    args = p.parse_args()
    if args.smoke:
        args.runs, args.warm, args.readings = 40, 20, 2
    if not 0 < args.warm < args.runs:
        raise SystemExit("--warm must be above 0 and below --runs")
    env = dict(kv.split("=", 1) for kv in args.env)
    env |= {"SERVICE_MEMORY_PYTHON": "1"} if args.python else {}
    env |= {"SERVICE_MEMORY_TRIM": "1"} if args.trim else {}
    with stores(args.stores.split(",")) as made:
        for label, url in made:
            for setting in args.telemetry.split(","):
                one_setting(label, url(), setting, env, args)


def one_setting(label: str, store: str, setting: str, env: dict[str, str], args: argparse.Namespace) -> None:
    """Measure and report one store with telemetry `on` or `off`."""
    sink = Sink() if setting == "on" else None
    given = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint} if sink else {"OTEL_TRACES_EXPORTER": "none"}
    try:
        started = time.monotonic()
        readings = measure(store, {**given, **env}, sink is not None, args)
    finally:
        if sink:
            sink.close()
    extra = "".join(f", {k}={v}" for k, v in sorted(env.items()))
    asks = f"every {args.ask_every}th asks and is answered" if args.ask_every else "none asks"
    title = (
        f"{label}, telemetry {setting}{extra}: {args.runs:,} runs ({asks}), "
        f"{time.monotonic() - started:.0f} s, load average {os.getloadavg()[0]:.1f}"
    )
    report(title, readings, args.warm)
    if sink:
        print(f"  spans exported in {sink.exports:,} requests")
    if args.smoke:
        print("  --smoke: not judged")


if __name__ == "__main__":
    main()
