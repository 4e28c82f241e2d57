"""bench53: every benchmark's quick mode (`--smoke`) runs to its end and prints its report's parts.

The benchmarks (benchmarks/README.md) measure speed and memory; no test ran them, so a change to the
store, the loop, the service or an integration could break one unnoticed. Each runs here in a
subprocess, as a person runs it, in its quickest mode; the test asserts that it exits 0 and prints
the rows and labels its report always has, never a number: timings on a loaded CI machine say nothing.
The peers (Pydantic AI, the OpenAI Agents SDK, LangGraph, the Claude Agent SDK and its CLI) come with
the dev extra: a benchmark that misses one fails here. The Temporal ones run on this module's dev server
(`--temporal`); the PostgreSQL ones start their own server from Debian's binaries, as the store tests do
(skipped only with ENDSTATE_SKIP_PG=1, as those are).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pg import pg_bin
from temporal_server import TemporalServer, temporal_fixture

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT_S = 300.0  # each, on a loaded 2-core machine; the slowest takes about 30 s here

temporal = temporal_fixture()


def smoke(script: str, *argv: str) -> str:
    """`python benchmarks/SCRIPT --smoke ARGV` from the repository, its stdout once it exited 0.

    Past the timeout it is interrupted (Ctrl-C: its `finally` blocks stop the servers it started),
    then killed if that does not end it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, str(BENCHMARKS / script), "--smoke", *argv]
    with subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            pytest.fail(f"{script} --smoke ran past {TIMEOUT_S:.0f} s:\n{out}\n{err[-4000:]}")
    assert proc.returncode == 0, f"{script} --smoke exited {proc.returncode}:\n{out}\n{err[-4000:]}"
    return out


def rows(out: str) -> list[str]:
    """The label of each indented row of a table (what comes before its first gap of 2+ spaces)."""
    return [re.split(r"\s{2,}", line.strip())[0] for line in out.splitlines() if line.startswith("  ")]


def printed(out: str, *parts: str) -> None:
    """Every part is in the report."""
    missing = [part for part in parts if part not in out]
    assert not missing, f"missing from the report: {missing}\n{out}"


def test_caching_cost() -> None:
    out = smoke("caching_cost.py")
    printed(
        out, "5-turn run", "caching off: $", "caching on:  $", "cache read", "cheaper (target: at least 4x)"
    )
    printed(out, "--smoke: not judged")


def test_packed_snapshot() -> None:
    out = smoke("packed_snapshot.py")
    printed(out, "5 turns of 500 characters", "start plain", "start packed", "pack ", "unpack ", "read ")


def test_telemetry_shape() -> None:
    out = smoke("telemetry_shape.py")
    printed(out, "# 1 turns, content off", "# 3 turns", "# 10 turns", "# 2 turns, content captured")
    printed(
        out, '"name": "invoke_agent bench', '"name": "chat claude-sonnet-4-5"', '"name": "execute_tool look'
    )


def test_stream_deltas() -> None:
    out = smoke("stream_deltas.py")
    printed(out, "ratio: @20 / @10", "@10", "@20")
    for variant in ("adapter", "SDK helper"):
        for block in ("text", "thinking", "tool input"):
            assert re.search(rf"^{variant} +{block} +[0-9.]+ +[0-9.]+ +[0-9.]+x$", out, re.M), (
                variant,
                block,
                out,
            )


def test_turn_overhead_with_its_peer() -> None:
    out = smoke("turn_overhead.py")
    printed(out, "@10", "@50", "@100", "raw SDK floor (recorded)", "Endstate, full telemetry")
    printed(out, "Endstate, telemetry off", "Pydantic AI, instrumented", "full telemetry / raw-SDK floor:")
    printed(out, "what telemetry adds to a turn", "the loop with telemetry off / floor:")
    printed(out, "Pydantic AI / Endstate full telemetry:")


@pytest.mark.cpu_heavy
def test_integrations_overhead_every_framework() -> None:
    out = smoke("integrations_overhead.py")
    printed(out, "alone us/turn", "control", "noop hook", "integration", "observing", "with telemetry")
    rows = {line.split()[0] for line in out.splitlines()[1:] if line.strip()}
    frameworks = {"pydantic_ai", "openai_agents", "langgraph", "langgraph_exact", "langgraph_prebuilt"}
    assert rows == frameworks | {"claude_agent_sdk"}, out


@pytest.mark.cpu_heavy
def test_claude_cli_overhead_with_the_real_cli() -> None:
    out = smoke("claude_cli_overhead.py")
    printed(out, "Claude Agent SDK alone, real CLI:", "4 turns")
    for clock in ("wall", "cpu"):
        line = next(line for line in out.splitlines() if line.split()[:1] == [clock])
        printed(line, "control", "integration", "observing")


def test_listings_on_both_stores() -> None:
    pg_bin("initdb")  # PostgreSQL is required (or skipped with ENDSTATE_SKIP_PG=1), as for the store tests
    out = smoke("listings.py", "--postgres")
    printed(out, "store: 2,000 runs", "SQLite, 1 rounds:", "PostgreSQL, 1 rounds:", "x baseline")
    for listing in (
        "runs (baseline)",
        "runs --agent legal-review",
        "runs --status waiting",
        "audit --list --due",
        "pending (a page of 50)",
        "pending counts",
        "review queue (first page)",
        "review counts (every queued run counted)",
    ):
        assert rows(out).count(listing) == 2, (listing, out)


def test_pending_pages() -> None:
    pg_bin("initdb")
    out = smoke("pending_pages.py")
    for store in ("SQLite", "PostgreSQL"):
        printed(out, f"{store}, 20 waiting runs:", f"{store}, 40 waiting runs:")
    printed(out, "paged ms", "whole ms", "speed-up")
    for path in ("/healthz", "/pending", "/inbox", "/metrics"):
        assert rows(out).count(path) == 4, (path, out)


def test_store_overhead_every_part() -> None:
    pg_bin("initdb")
    out = smoke("store_overhead.py")
    printed(out, "per turn (2-turn runs, 2 rounds", "per turn with a model call of 1 ms")
    for row in ("bare", "bare + 1 SQLite commit", "bare + 1 PG round trip", "with SQLite", "with PostgreSQL"):
        assert rows(out).count(row) == 2, (row, out)
    printed(out, "one checkpoint at 10 and at 200 turns", "SQLite, wall time:", "PostgreSQL, cpu time:")
    printed(out, "net (checkpoint / control)", "5 runs suspended at once:", "store size", "WAL written back")
    printed(out, "process memory", "resume throughput")


def test_waiting_journal_check() -> None:
    pg_bin("initdb")
    out = smoke("waiting_journal_check.py")
    for store in ("SQLite", "PostgreSQL"):
        for entries in (5, 205):
            printed(out, f"{store}, page of 50 of 60 waiting runs, {entries} entries each:")
    for way in (
        "no check (before)",
        "last entry looked up (shipped)",
        "entries counted",
        "every journal read",
        "store.waiting, as shipped",
    ):
        assert rows(out).count(way) == 4, (way, out)


def test_temporal_answers(temporal: TemporalServer) -> None:
    out = smoke("temporal_answers.py", "--temporal", temporal.address)
    printed(out, "no tool call before each question: 3 answers, then success")
    printed(out, "one tool call before each question: 3 answers, then success", "events")


def test_temporal_mid_deploy(temporal: TemporalServer) -> None:
    out = smoke("temporal_mid_deploy.py", "--temporal", temporal.address)
    printed(out, "3 attempts (before): taken ", "READY_RETRY (now): taken ", " of 2; slowest answer")
    printed(out, "load average:")


def test_temporal_overhead(temporal: TemporalServer) -> None:
    pg_bin("initdb")
    out = smoke("temporal_overhead.py", "--temporal", temporal.address)
    printed(out, "per turn (3 turns a run, median of 1):", "bare loop", "PostgreSQL runner", "Temporal ")
    printed(out, "runs per second (2 runs of 2 turns", "1 worker(s):", "2 worker(s):", "4 worker(s):")


def test_temporal_overhead_history(temporal: TemporalServer) -> None:
    out = smoke("temporal_overhead.py", "--history", "--temporal", temporal.address)
    printed(out, "workflow history bytes (tool results of 10 characters):")
    for tool in ("count (takes ctx)", "read (no ctx)"):
        for turns in (2, 3):
            assert re.search(rf"^  {re.escape(tool)} +{turns} turns: ", out, re.M), (tool, turns, out)
    printed(out, "model.chunked in", "tool.chunked in", "tool in")


def test_temporal_overhead_late(temporal: TemporalServer) -> None:
    out = smoke("temporal_overhead.py", "--late", "--temporal", temporal.address)
    printed(out, "one run of 41 turns in", "the worker's peak memory", "late (the last 3)")
    printed(out, "wall-clock: early (turns 2-", "worker CPU: early (turns 2-")


def test_temporal_overhead_stop(temporal: TemporalServer) -> None:
    out = smoke("temporal_overhead.py", "--stop", "--temporal", temporal.address)
    printed(out, "success (-) after 4 turns", "success (-) after 5 turns", "its cold replay")
