"""What marking the damaged runs in a page of waiting runs costs (journal49): a page of 50 out of 1,000
waiting runs, each with 5 or with 205 journal entries, read as the store reads it (`waiting`), and the
same page read three ways: without any check (as before schema 15), with the check the store makes
(the run's last recorded entry looked up by its key: one look-up a run), and with a count of each
run's entries against its recorded length (which would find a hole in the middle too). For reference,
reading every journal of the page (as a check in Python would), and the store's whole `waiting` call
(the page's SQL with the check, and its rows made records).

    python benchmarks/waiting_journal_check.py [--runs 1000] [--rounds 30] [--no-pg] [--smoke]

The runs are rows written straight into a fresh store (a SQLite file, and a throwaway PostgreSQL
server on loopback unless `--no-pg`), entries of about 400 bytes, one of every 50 runs short of its
last entry. It prints the median milliseconds per page over pages at offsets 0, 500 and 950.

A benchmark, not a test: numbers vary with the machine and its load; nothing asserts them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.durable.store import open_store
from agent.durable.store._sql import ENTRIES, JOURNAL_SHORT, LIST_COLUMNS, TABLE, SqlStore

PAGE = 50
OFFSETS = (0, 500, 950)
ENTRY = '{"type":"result","call_id":"c%d","text":"' + "x" * 360 + '"}'
HEAD = '{"version":4,"run_id":"%s","agent":"a","task_type":"t","kind":"suspended"}'
COUNTED = (
    f"(r.journal_length IS NOT NULL AND (SELECT COUNT(*) FROM {ENTRIES} e WHERE e.run_id = r.run_id) "
    "< r.journal_length) AS journal_short"
)


def fill(store: SqlStore, runs: int, entries: int) -> None:
    """`runs` waiting runs of `entries` entries each; every 50th lacks its last entry."""
    for i in range(runs):
        run_id = f"w{i:05d}"
        store._rows(
            f"INSERT INTO {TABLE} (run_id, agent, task, task_type, status, started_at, updated_at, "
            "suspended_at, question, snapshot, journal_length) VALUES (?, 'a', 'task', 't', 'waiting', ?, ?, "
            "?, ?, ?, ?)",
            (run_id, float(i), float(i), 1000.0 + i, "Which one?", HEAD % run_id, entries),
        )
        kept = entries - 1 if i % 50 == 7 else entries
        marks = ", ".join("(?, ?, ?)" for _ in range(kept))
        params = [v for seq in range(kept) for v in (run_id, seq, ENTRY % seq)]
        store._rows(f"INSERT INTO {ENTRIES} (run_id, seq, entry) VALUES {marks}", params)


def page_sql(store: SqlStore, check: str | None, offset: int) -> str:
    """The page's SQL, as `waiting` makes it, with `check` beside each row (None: no check)."""
    cut = f"ORDER BY {store.waiting_order} LIMIT {PAGE} OFFSET {offset}"
    if check is None:
        return f"SELECT {LIST_COLUMNS} FROM {TABLE} WHERE status = 'waiting' {cut}"
    return store._journal_checked("status = 'waiting'", cut).replace(JOURNAL_SHORT, check)


def timed(call: Any, rounds: int) -> float:
    """The median milliseconds of `call()` over `rounds` (after one to warm up)."""
    call()
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def measure(store: SqlStore, rounds: int) -> dict[str, float]:
    found: dict[str, list[float]] = {}
    for offset in OFFSETS:
        for name, call in _ways(store, offset).items():
            found.setdefault(name, []).append(timed(call, rounds))
    shipped = store.waiting(PAGE, 0)
    assert [r.run_id for r in shipped if r.journal_short] == ["w00007"], "the check marks the short run"
    return {name: statistics.median(times) for name, times in found.items()}


def _ways(store: SqlStore, offset: int) -> dict[str, Any]:
    """The ways to read the page at `offset`, each a call."""
    return {
        "no check (before)": lambda: store._rows(page_sql(store, None, offset)),
        "last entry looked up (shipped)": lambda: store._rows(page_sql(store, JOURNAL_SHORT, offset)),
        "entries counted": lambda: store._rows(page_sql(store, COUNTED, offset)),
        "every journal read": lambda: [
            _entries(store, r["run_id"]) for r in store._rows(page_sql(store, None, offset))
        ],
        "store.waiting, as shipped": lambda: store.waiting(PAGE, offset),
    }


def _entries(store: SqlStore, run_id: str) -> int:
    return len(store._rows(f"SELECT seq, entry FROM {ENTRIES} WHERE run_id = ? ORDER BY seq", (run_id,)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument(
        "--smoke", action="store_true", help="a quick check, not a measure: 60 waiting runs, 1 round"
    )
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.rounds = 60, 1
    server = None
    if not args.no_pg:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        import pg

        server = pg.PostgresServer()
    try:
        with tempfile.TemporaryDirectory() as folder:
            for entries in (5, 205):
                urls = {"SQLite": str(Path(folder) / f"runs{entries}.db")}
                if server is not None:
                    urls["PostgreSQL"] = server.new_database()
                for backend, url in urls.items():
                    store = open_store(url)
                    assert isinstance(store, SqlStore)
                    try:
                        fill(store, args.runs, entries)
                        if backend == "PostgreSQL":
                            store._rows(f"ANALYZE {TABLE}")
                            store._rows(f"ANALYZE {ENTRIES}")
                        results = measure(store, args.rounds)
                    finally:
                        store.close()
                    print(f"{backend}, page of {PAGE} of {args.runs} waiting runs, {entries} entries each:")
                    for name, ms in results.items():
                        print(f"  {name:<32} {ms:8.3f} ms")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
