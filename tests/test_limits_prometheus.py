"""`endstate limits suggest --prometheus`: a real Prometheus scrapes run histograms, and the
suggestion read back through its HTTP API matches the seed's example."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from prom_stack import prometheus, prometheus_config, wait_until
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

from agent.cli.main import main
from agent.evals.limits import LimitsError, PrometheusHistory, suggest
from agent.result import LimitKind
from telemetry import names

pytestmark = pytest.mark.slow

LABELS = [names.LABEL_AGENT, names.LABEL_TASK_TYPE, names.LABEL_STOP_REASON]


@dataclass
class Metrics:
    """The run histograms and the stop counter, named and labelled as telemetry/names.py says."""

    turns: Histogram
    seconds: Histogram
    tokens: Histogram
    stops: Counter

    @classmethod
    def new(cls, registry: CollectorRegistry) -> Metrics:
        def histogram(name: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, name, LABELS, buckets=buckets, registry=registry)

        stop_labels = [*LABELS, names.LABEL_STOP_LIMIT]
        return cls(
            histogram(names.METRIC_RUN_TURNS, names.BUCKETS_RUN_TURNS),
            histogram(names.METRIC_RUN_ACTIVE_SECONDS, names.BUCKETS_RUN_ACTIVE_SECONDS),
            histogram(names.METRIC_RUN_TOKENS, names.BUCKETS_RUN_TOKENS),
            Counter(names.METRIC_STOPS, names.METRIC_STOPS, stop_labels, registry=registry),
        )

    def touch(self, task_type: str, reason: str, limit: str = names.NO_LIMIT) -> None:
        """Create the series at zero, so that Prometheus sees them before the runs end."""
        for h in (self.turns, self.seconds, self.tokens):
            h.labels("researcher", task_type, reason)
        self.stops.labels("researcher", task_type, reason, limit)

    def run(
        self, task_type: str, reason: str, turns: int, seconds: float, tokens: int, limit: str = "none"
    ) -> None:
        self.turns.labels("researcher", task_type, reason).observe(turns)
        self.seconds.labels("researcher", task_type, reason).observe(seconds)
        self.tokens.labels("researcher", task_type, reason).observe(tokens)
        self.stops.labels("researcher", task_type, reason, limit).inc()


SEED_TURNS = [6 + i % 9 for i in range(94)] + [14, 15, 16, 17, 18, 19]  # 95% need <= 14, the longest 19


def seed_history(m: Metrics) -> None:
    for t in SEED_TURNS:
        m.run("research", "success", t, 3.0 * t, 1000 * t)
    for _ in range(6):
        m.run("research", "limit", 200, 600, 200_000, "turns")
    for _ in range(2):
        m.run("research", "limit", 12, 60, 12_000, "seconds")
    m.run("research", "gave_up", 30, 90, 30_000)
    for _ in range(3):
        m.run("migrate", "limit", 25, 100, 50_000, "turns")


@contextmanager
def scraped(
    directory: Path, touch: Callable[[Metrics], None], seed: Callable[[Metrics], None], count: str, runs: int
) -> Iterator[tuple[str, float]]:
    """A real Prometheus that scraped `touch`'s empty series, then `seed`'s runs (`count` reads
    `runs`): its URL and the time of its last scrape."""
    registry = CollectorRegistry()
    m = Metrics.new(registry)
    touch(m)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        with prometheus(prometheus_config([f"127.0.0.1:{server.server_address[1]}"]), directory) as p:
            wait_until(lambda: _value(p.query(count)) == 0, 60, "a scrape of the empty series")
            seed(m)
            wait_until(lambda: _value(p.query(count)) == runs, 60, "a scrape of the runs")
            yield p.url, _value(p.query("max(timestamp(agent_run_turns_count))")) or 0.0
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def touch_seed_series(m: Metrics) -> None:
    for task_type, reason, limit in [
        ("research", "success", "none"), ("research", "limit", "turns"), ("research", "limit", "seconds"),
        ("research", "gave_up", "none"), ("migrate", "limit", "turns"),
    ]:  # fmt: skip
        m.touch(task_type, reason, limit)


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, float]]:
    """A Prometheus that scraped the seed history; its URL and the time of its last scrape."""
    with scraped(
        tmp_path_factory.mktemp("prom"), touch_seed_series, seed_history, "sum(agent_run_turns_count)", 112
    ) as found:
        yield found


def _value(rows: list[dict]) -> float | None:
    return float(rows[0]["value"][1]) if rows else None


def test_suggestion_from_a_real_prometheus(prom: tuple[str, float]) -> None:
    url, last = prom
    history = PrometheusHistory(url, "10m", at=last)
    migrate, research = suggest(history)

    assert research.stops == {"success": 100, "limit": 8, "gave_up": 1}
    turns = next(c for c in research.ceilings if c.kind is LimitKind.TURNS)
    assert turns.observed.count == 100
    assert turns.observed.longest == 20  # the bucket that holds the longest run, 19
    assert 12 < turns.observed.quantile <= 15  # interpolated inside the (12, 15] bucket that holds 14
    assert turns.suggested == 25  # the seed's example

    seconds = research.ceiling(LimitKind.SECONDS)
    assert seconds is not None and 60 < seconds <= 120  # longest run 57 s, in the (30, 60] bucket
    tokens = research.ceiling(LimitKind.TOKENS)  # p95 14,000 and longest 19,000, both in (10k, 20k]
    assert tokens is not None and 20_000 < tokens <= 40_000
    assert research.ceiling(LimitKind.COST) is None  # Prometheus has no per-run cost histogram

    changes = research.changes
    assert changes is not None and changes.approximate
    assert (changes.limit_stops, changes.sooner, changes.more_room, changes.cut) == (8, 6, 2, 1)

    assert migrate.ceilings == () and migrate.notes[0].startswith("no successful run among 3 (3 limit)")


def test_command_from_a_real_prometheus(prom: tuple[str, float], capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = prom
    assert main(["limits", "suggest", "--prometheus", url, "--window", "10m"]) == 0
    out = capsys.readouterr().out
    assert "as code: Budget(max_turns=25, max_seconds=" in out
    # without `at`, increase() extrapolates the short-lived test series: counts are "about"
    assert re.search(r"past limit stops: \d+; with these ceilings about \d+ would have stopped sooner", out)
    assert re.search(r"migrate: \d runs ended \(limit \d\)\n  note: no successful run among", out)
    assert f"(from Prometheus at {url}, last 10m)" in out


def test_prometheus_errors_are_clear(prom: tuple[str, float]) -> None:
    url, _ = prom
    with pytest.raises(LimitsError, match="use a number and a unit"):
        PrometheusHistory(url, "ten minutes")
    with pytest.raises(
        LimitsError, match=r"^cannot query Prometheus at http://127\.0\.0\.1:9: .*Connection refused"
    ):
        PrometheusHistory("http://127.0.0.1:9", "10m")
