"""What one page of the runs waiting for a person costs: GET /pending and the inbox at 1,000 and
20,000 waiting runs, paged in SQL (schema 10) against reading every waiting run (as before); and
what a scrape of the help gauges costs: GET /metrics, counted in SQL against one row per waiting run.

    python benchmarks/pending_pages.py [--sizes 1000,20000] [--rounds 15] [--finished 5000] [--no-pg]
    python benchmarks/pending_pages.py --smoke   # 20 and 40 waiting runs, 2 rounds: a check, not a measure

For each store (a SQLite file, and a throwaway PostgreSQL server on loopback unless `--no-pg`)
the waiting runs are real rows: a few runs of the example catalog suspended by the runner, then
copied (row and journal) under new ids, spread over 4 agents and 3 task types and over a day of
asking times, beside `--finished` finished runs. Two services answer over the same store, through
starlette's test client in this process: one as shipped, one whose store cannot page (only
`list_runs`, as Temporal's visibility), which takes the path every store took before: read every
waiting run, sort, filter, slice and count in Python. Each round asks each service, interleaved, for
`/healthz` (the trivial request), `/pending` (its default page of 50), `/inbox` (page 1, 50
runs with their journals) and `/metrics` (the help gauges, beside the metrics hooks' other
series, all at zero: a fresh registry whose pending source is the store's counts by agent and
task type, or for the second service one row per waiting run, as the gauges read before). It
prints the median time per request and the ratio to `/healthz` in the same round (the median of
the rounds' ratios), and the speed-up.

A benchmark, not a test: numbers vary with the machine and its load; nothing asserts them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.testclient import TestClient

from agent.durable.runner import Runner
from agent.durable.store import RunStatus, RunStore, open_store
from agent.durable.store._sql import ENTRIES, TABLE
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token
from telemetry import MetricsHooks

AGENTS = ("ci-fixer", "invoice-downloader", "report-writer", "triage")
TYPES = ("fix_ci", "invoice", "report")
PATHS = ("/healthz", "/pending", "/inbox", "/metrics")
DAY = 86_400.0
QUESTION = "invoice/which-one"  # the example scenario whose run asks a person


class WholeReads:
    """The store as before schema 10: no paged reads, so the service reads every waiting run."""

    def __init__(self, store: RunStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in ("waiting", "waiting_counts"):
            raise AttributeError(name)
        return getattr(self._store, name)

    def pending_rows(self) -> list[tuple[str, str, float]]:
        """What the help gauges read before: (agent, task type, suspended_at) of every waiting run."""
        rows = self._store._rows(  # type: ignore[attr-defined]
            f"SELECT agent, task_type, suspended_at FROM {TABLE} WHERE status = 'waiting'", retry=True
        )
        return [(r["agent"], r["task_type"], float(r["suspended_at"] or 0.0)) for r in rows]


def exposition(registry: CollectorRegistry) -> Any:
    """A service's /metrics page over `registry`."""
    return lambda accept: (generate_latest(registry), CONTENT_TYPE_LATEST)


def seed(url: str, folder: Path) -> RunStore:
    """A store with a few real waiting runs: the templates the rest are copied from."""
    store = open_store(url)
    runner = Runner(store, example_catalog(folder / "worlds"))
    for _ in range(2):
        asyncio.run(
            runner.start("invoice-downloader", "Get the invoice", state={"scenario": "invoice/which-one"})
        )
    runner.catalog.close()
    return store


def grow(store: Any, waiting: int, finished: int, start: int) -> None:
    """Copy the template runs until `waiting` wait (ids from `start` on), and `finished` finished."""
    template = store.list_runs(RunStatus.WAITING, None)[0].run_id
    row = store._rows(f"SELECT * FROM {TABLE} WHERE run_id = ?", (template,))[0]
    entries = store._rows(f"SELECT seq, entry FROM {ENTRIES} WHERE run_id = ?", (template,))
    now = time.time()
    rows, journal = [], []
    for i in range(start, waiting):
        copy = dict(row, run_id=f"w{i:06d}", agent=AGENTS[i % 4], task_type=TYPES[i % 3])
        copy |= {"suspended_at": now - (i * 7919 % waiting) / waiting * DAY, "deadline": now + DAY}
        rows.append(copy)
        journal += [(copy["run_id"], e["seq"], e["entry"]) for e in entries]
    for i in range(start and finished, finished):  # once, with the first batch
        rows.append(dict(row, run_id=f"f{i:06d}", status="finished", ended_at=now - i, deadline=None))
    insert(store, TABLE, rows)
    insert(store, ENTRIES, [{"run_id": r, "seq": s, "entry": e} for r, s, e in journal])


def insert(store: Any, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    columns = list(rows[0])
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    if store.dialect == "sqlite":
        with store._tx():
            store._conn.executemany(sql, [tuple(r[c] for c in columns) for r in rows])
    else:
        with store._lock, store._conn.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), [tuple(r[c] for c in columns) for r in rows])
        store._rows(f"ANALYZE {table}")


def measure(store: RunStore, folder: Path, rounds: int) -> dict[str, dict[str, tuple[float, float]]]:
    """{service: {path: (median ms per request, median ratio to /healthz in the same round)}}."""
    clients = {}
    whole = WholeReads(store)
    for name, seen, pending in (("paged", store, store.pending_groups), ("whole", whole, whole.pending_rows)):
        runner = Runner(seen, example_catalog(folder / f"worlds-{name}"))  # type: ignore[arg-type]
        metrics = exposition(MetricsHooks(pending=pending).registry)
        service = Service(runner, Token("bench-token-0123456789abcdef"), sweep_interval=3600, metrics=metrics)
        clients[name] = TestClient(create_app(service), base_url="http://127.0.0.1:8000").__enter__()
    times: dict[str, dict[str, list[float]]] = {n: {p: [] for p in PATHS} for n in clients}
    for _ in range(rounds + 1):
        for name, client in clients.items():
            for path in PATHS:
                began = time.perf_counter()
                response = client.get(path)
                times[name][path].append(time.perf_counter() - began)
                assert response.status_code == 200, (path, response.text[:300])
    for client in clients.values():
        client.__exit__(None, None, None)
    return {n: summary(t) for n, t in times.items()}


def summary(times: dict[str, list[float]]) -> dict[str, tuple[float, float]]:
    """The first round warms caches and is dropped."""
    base = times["/healthz"][1:]
    return {
        p: (
            statistics.median(t[1:]) * 1000,
            statistics.median(x / b for x, b in zip(t[1:], base, strict=True)),
        )
        for p, t in times.items()
    }


def report(backend: str, size: int, got: dict[str, dict[str, tuple[float, float]]]) -> None:
    print(f"{backend}, {size:,} waiting runs:")
    print(
        f"  {'':<10} {'paged ms':>9} {'x healthz':>10}   {'whole ms':>9} {'x healthz':>10}   {'speed-up':>8}"
    )
    for path in PATHS:
        (pm, pr), (wm, wr) = got["paged"][path], got["whole"][path]
        print(f"  {path:<10} {pm:9.2f} {pr:10.1f}   {wm:9.2f} {wr:10.1f}   {wm / pm:7.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,20000", help="waiting runs, comma-separated, rising")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--finished", type=int, default=5000, help="finished runs beside them")
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL (needs Debian's postgresql)")
    parser.add_argument(
        "--smoke", action="store_true", help="a quick check, not a measure: 20 and 40 waiting runs, 2 rounds"
    )
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.rounds, args.finished = "20,40", 2, 10
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        urls = {"SQLite": str(folder / "runs.db")}
        server = None if args.no_pg else _postgres()
        try:
            if server is not None:
                urls["PostgreSQL"] = server.new_database()
            for backend, url in urls.items():
                store = seed(url, folder)
                done = 0
                for size in sizes:
                    grow(store, size, args.finished, done)
                    done = size
                    report(backend, size, measure(store, folder, args.rounds))
                store.close()
        finally:
            if server is not None:
                server.stop()


def _postgres() -> Any:
    """A throwaway PostgreSQL server on loopback (the tests' helper)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import pg

    return pg.PostgresServer()


if __name__ == "__main__":
    main()
