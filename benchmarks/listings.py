"""What a listing costs in a large store: `endstate runs`, `audit --list`, `pending` and the review
queue, filtered and not, on a store of many runs (SQLite, and PostgreSQL with `--postgres`).

    python benchmarks/listings.py [--runs 200000] [--rounds 7] [--postgres] [--no-sqlite] [--smoke]

The store is built in one go (rows written straight into its tables after `open_store` made the
schema): `--runs` runs over 60 days, of 8 agents in a skewed mix (the commonest half of the runs, the
rarest one run in a thousand) and 6 task types (likewise skewed), 97% finished (80% of them
`success`), 1% waiting for a person, 0.5% running, 1.5% cancelled; a tenth of the successes audited
(most audits made, the recent ones still due), a tenth of the review queue labelled. Finished rows
keep a head of about 1.5 KB, as real ones do. PostgreSQL is analyzed once loaded (what autovacuum
does to a table that grew); SQLite is not (the store never analyzes: its planner has no statistics).

Each round times every listing once, in the order below, through the store's own methods (what the
CLI, `GET /runs`, `GET /pending`, the inbox and the review page call). It prints, for each listing,
the median time, and the median of the rounds' ratios to the baseline: the first page of the runs
with no filter (`runs`), which the runs' `started_at` index has served since schema 1. A listing
that reads only what it shows is a few times the baseline at most, whatever the store holds; one
that scans grows with the store.

A benchmark, not a test: numbers vary with the machine and its load; nothing asserts them.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent.audit import AuditOutcome
from agent.durable.review import DEFAULT_SUCCESS_SHARE, QUEUE_REASONS
from agent.durable.store import RunStatus, open_store
from agent.result import StopReason

NOW = 1_800_000_000.0
DAY = 86_400.0
SPAN = 60 * DAY  # of start times
AGENTS = {  # agent: its share of the runs (the commonest first)
    "ci-fixer": 0.50, "triage": 0.25, "invoice-downloader": 0.12, "report-writer": 0.06,
    "support-reply": 0.04, "deploy-checker": 0.02, "data-export": 0.009, "legal-review": 0.001,
}  # fmt: skip
TYPES = {"fix_ci": 0.40, "triage": 0.30, "invoice": 0.15, "report": 0.10, "deploy": 0.04, "export": 0.01}
STATUSES = {
    RunStatus.FINISHED: 0.97, RunStatus.WAITING: 0.01, RunStatus.RUNNING: 0.005, RunStatus.CANCELLED: 0.015,
}  # fmt: skip
REASONS = {  # of the finished runs
    StopReason.SUCCESS: 0.80, StopReason.GAVE_UP: 0.05, StopReason.LIMIT: 0.05, StopReason.ERROR: 0.03,
    StopReason.NO_PROGRESS: 0.03, StopReason.HELP_TIMEOUT: 0.02, StopReason.CANCELLED: 0.02,
}  # fmt: skip
OUTCOMES = {AuditOutcome.CONFIRMED: 0.95, AuditOutcome.FALSE_SUCCESS: 0.04, AuditOutcome.ERROR: 0.01}
AUDITED = 0.1  # of the successes, by default (`--audit-share`)
LABELLED = 0.1  # of the review queue
RARE_AGENT, COMMON_AGENT, MID_AGENT = "legal-review", "ci-fixer", "report-writer"
RARE_TYPE = "export"
MESSAGE = '{"role": "user", "text": "x"}'
HEAD = '{"version": 5, "kind": "result", "messages": [' + ", ".join([MESSAGE] * 45) + "]}"  # ~1.5 KB
RUN_COLUMNS = [
    "run_id", "agent", "task", "task_type", "status", "started_at", "updated_at", "ended_at", "stop_reason",
    "turns", "input_tokens", "output_tokens", "cost_usd", "trace_id", "summary", "output", "snapshot",
    "head_version", "journal_length", "question", "deadline", "suspended_at", "owner", "lease_until",
    "segments",
]  # fmt: skip
AUDIT_COLUMNS = ["run_id", "agent", "task_type", "due_at", "outcome", "note", "checked_at"]
REVIEW_COLUMNS = ["run_id", "agent", "task_type", "label", "note", "labelled_at", "labelled_by"]

Listing = Callable[[Any], Any]  # of a store (SQLite's or PostgreSQL's)
LISTINGS: dict[str, Listing] = {
    "runs (baseline)": lambda s: s.list_runs(),
    f"runs --agent {RARE_AGENT}": lambda s: s.list_runs(agent=RARE_AGENT),
    f"runs --agent {COMMON_AGENT}": lambda s: s.list_runs(agent=COMMON_AGENT),
    f"runs --task-type {RARE_TYPE}": lambda s: s.list_runs(task_type=RARE_TYPE),
    f"runs --agent {MID_AGENT} --task-type {RARE_TYPE}": lambda s: s.list_runs(
        agent=MID_AGENT, task_type=RARE_TYPE
    ),
    "runs --status finished": lambda s: s.list_runs(RunStatus.FINISHED),
    "runs --status waiting": lambda s: s.list_runs(RunStatus.WAITING),
    f"runs --status finished --agent {RARE_AGENT}": lambda s: s.list_runs(
        RunStatus.FINISHED, agent=RARE_AGENT
    ),
    f"runs --status waiting --agent {COMMON_AGENT}": lambda s: s.list_runs(
        RunStatus.WAITING, agent=COMMON_AGENT
    ),
    "running runs (recovery, all)": lambda s: s.list_runs(RunStatus.RUNNING, None),
    "GET /runs?agent= (overview)": lambda s: s.overview(None, 100, 200, agent=RARE_AGENT),
    "audit --list": lambda s: s.list_audits(limit=50),
    "audit --list --due": lambda s: s.list_audits(limit=50, due=True),
    "audit --list --outcome false_success": lambda s: s.list_audits(AuditOutcome.FALSE_SUCCESS, 50),
    "audit --list --outcome confirmed": lambda s: s.list_audits(AuditOutcome.CONFIRMED, 50),
    f"audit --list --agent {RARE_AGENT}": lambda s: s.list_audits(limit=50, agent=RARE_AGENT),
    f"audit --list --task-type {RARE_TYPE}": lambda s: s.list_audits(limit=50, task_type=RARE_TYPE),
    "pending (a page of 50)": lambda s: s.waiting(50),
    f"pending --agent {RARE_AGENT}": lambda s: s.waiting(50, agent=RARE_AGENT),
    f"pending --task-type {RARE_TYPE}": lambda s: s.waiting(50, task_type=RARE_TYPE),
    "pending counts": lambda s: s.waiting_counts(),
    "review queue (first page)": lambda s: s.review_queue(QUEUE_REASONS, DEFAULT_SUCCESS_SHARE, 100),
    f"review queue --agent {RARE_AGENT}": lambda s: s.review_queue(
        QUEUE_REASONS, DEFAULT_SUCCESS_SHARE, 100, agent=RARE_AGENT
    ),
    f"review queue --task-type {RARE_TYPE}": lambda s: s.review_queue(
        QUEUE_REASONS, DEFAULT_SUCCESS_SHARE, 100, task_type=RARE_TYPE
    ),
    "review counts (every queued run counted)": lambda s: s.review_counts(
        QUEUE_REASONS, DEFAULT_SUCCESS_SHARE
    ),
}
BASELINE = "runs (baseline)"


def pick(rng: random.Random, shares: dict[Any, float]) -> Any:
    return rng.choices(list(shares), weights=list(shares.values()))[0]


Rows = list[tuple[Any, ...]]


def rows(count: int, audited: float = AUDITED, seed: int = 53) -> tuple[Rows, Rows, Rows]:
    """The runs', audits' and reviews' rows of a store of `count` runs (columns as in `*_COLUMNS`),
    `audited` of its successes audited."""
    rng = random.Random(seed)
    runs, audits, reviews = [], [], []
    for i in range(count):
        run_id, agent, task_type = f"run-{i:07d}", pick(rng, AGENTS), pick(rng, TYPES)
        status, started = pick(rng, STATUSES), NOW - SPAN * rng.random()
        turns, took = rng.randint(1, 40), rng.uniform(5, 600)
        row: dict[str, Any] = dict.fromkeys(RUN_COLUMNS)
        row |= {"run_id": run_id, "agent": agent, "task": f"task {i}: " + "do the thing " * 5}
        row |= {"task_type": task_type, "status": str(status), "started_at": started, "turns": turns}
        row |= {"updated_at": started + took, "input_tokens": 900 * turns, "output_tokens": 150 * turns}
        row |= {"cost_usd": 0.004 * turns, "trace_id": f"{rng.getrandbits(128):032x}", "segments": 1}
        row |= {"summary": "", "output": "", "head_version": 5, "journal_length": 0}
        if status is RunStatus.FINISHED:
            reason = pick(rng, REASONS)
            ended = started + took
            row |= {"ended_at": ended, "stop_reason": str(reason), "snapshot": HEAD}
            row |= {"summary": "what it did " * 15, "output": "the answer " * 40}
            if reason is StopReason.SUCCESS and rng.random() < audited:
                audits.append(audit_row(rng, run_id, agent, task_type, ended))
            elif reason in QUEUE_REASONS and rng.random() < LABELLED:
                reviews.append((run_id, agent, task_type, "bad", "", ended + DAY, "ana"))
        elif status is RunStatus.WAITING:
            asked = started + took
            row |= {"question": "which one?", "suspended_at": asked, "deadline": asked + 7 * DAY}
            row |= {"stop_reason": str(StopReason.NEED_HELP), "snapshot": HEAD}
        elif status is RunStatus.RUNNING:
            row |= {"owner": "worker-1", "lease_until": NOW + 60, "snapshot": HEAD}
        else:
            row |= {"stop_reason": str(StopReason.CANCELLED), "ended_at": started + took}
        runs.append(tuple(row[c] for c in RUN_COLUMNS))
    return runs, audits, reviews


def audit_row(rng: random.Random, run_id: str, agent: str, task_type: str, ended: float) -> tuple[Any, ...]:
    """An audit due a day after the run ended; made (an hour after it was due) once that is past."""
    due = ended + DAY
    if due + 3600 > NOW:
        return (run_id, agent, task_type, due, None, "", None)
    return (run_id, agent, task_type, due, str(pick(rng, OUTCOMES)), "checked again", due + 3600)


def insert_sql(table: str, columns: list[str], mark: str) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(mark for _ in columns)})"


def load_sqlite(path: Path, data: tuple[Rows, Rows, Rows]) -> None:
    open_store(str(path)).close()  # the schema, by this Endstate's migrations
    runs, audits, reviews = data
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(insert_sql("endstate_runs", RUN_COLUMNS, "?"), runs)
        conn.executemany(insert_sql("endstate_audits", AUDIT_COLUMNS, "?"), audits)
        conn.executemany(insert_sql("endstate_reviews", REVIEW_COLUMNS, "?"), reviews)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def load_postgres(url: str, data: tuple[Rows, Rows, Rows]) -> None:
    import psycopg

    open_store(url).close()
    runs, audits, reviews = data
    with psycopg.connect(url, autocommit=True) as conn:
        for table, columns, values in (
            ("endstate_runs", RUN_COLUMNS, runs),
            ("endstate_audits", AUDIT_COLUMNS, audits),
            ("endstate_reviews", REVIEW_COLUMNS, reviews),
        ):
            with conn.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
        conn.execute("VACUUM ANALYZE")


def measure(url: str, rounds: int) -> dict[str, tuple[float, float, int]]:
    """Per listing: the median seconds, the median ratio to the baseline of the same round, rows listed."""
    store = open_store(url)
    times: dict[str, list[float]] = {name: [] for name in LISTINGS}
    listed: dict[str, int] = {}
    try:
        for i in range(rounds + 1):  # one round to warm the caches
            for name, listing in LISTINGS.items():
                start = time.perf_counter()
                result = listing(store)
                took = time.perf_counter() - start
                listed[name] = len(result)
                if i:
                    times[name].append(took)
    finally:
        store.close()
    base = times[BASELINE]
    return {
        name: (
            statistics.median(t),
            statistics.median(a / b for a, b in zip(t, base, strict=True)),
            listed[name],
        )
        for name, t in times.items()
    }


def show(title: str, measured: dict[str, tuple[float, float, int]]) -> None:
    print(title)
    print(f"  {'listing':<48} {'ms':>9} {'x baseline':>11} {'rows':>6}")
    for name, (seconds, ratio, count) in measured.items():
        print(f"  {name:<48} {seconds * 1000:9.2f} {ratio:10.1f}x {count:6d}")


def postgres() -> Any:
    """A throwaway PostgreSQL server on loopback (the tests' helper)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import pg

    return pg.PostgresServer()


def counts(data: tuple[Rows, Rows, Rows]) -> Iterator[str]:
    runs, audits, reviews = data
    by = {k: sum(1 for _ in g) for k, g in itertools.groupby(sorted(r[4] for r in runs))}
    yield f"{len(runs):,} runs ({', '.join(f'{n:,} {k}' for k, n in by.items())})"
    yield f"{len(audits):,} audits ({sum(1 for a in audits if a[4] is None):,} still due)"
    yield f"{len(reviews):,} labels"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200_000, help="runs in the store (default 200,000)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds of every listing (default 7)")
    parser.add_argument(
        "--audit-share", type=float, default=AUDITED, help=f"of the successes, audited (default {AUDITED})"
    )
    parser.add_argument("--postgres", action="store_true", help="also on PostgreSQL (Debian's binaries)")
    parser.add_argument("--no-sqlite", action="store_true", help="skip SQLite")
    parser.add_argument(
        "--smoke", action="store_true", help="a quick check, not a measure: 2,000 runs, 1 round"
    )
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.rounds = 2_000, 1
    data = rows(args.runs, args.audit_share)
    print("store: " + "; ".join(counts(data)))
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_sqlite:
            path = Path(tmp) / "runs.db"
            start = time.perf_counter()
            load_sqlite(path, data)
            print(
                f"SQLite loaded in {time.perf_counter() - start:.1f} s, {path.stat().st_size / 2**20:.0f} MiB"
            )
            show(f"SQLite, {args.rounds} rounds:", measure(str(path), args.rounds))
        if args.postgres:
            server = postgres()
            try:
                url = server.new_database()
                start = time.perf_counter()
                load_postgres(url, data)
                print(f"PostgreSQL loaded and analyzed in {time.perf_counter() - start:.1f} s")
                show(f"PostgreSQL, {args.rounds} rounds:", measure(url, args.rounds))
            finally:
                server.stop()


if __name__ == "__main__":
    main()
