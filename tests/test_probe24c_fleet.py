"""The rules and alerts under a fleet: several processes, each scraped as its own `instance`, sharing one
run store, replaced by deploys, restarted, scaled down. promtool runs the real rules over series shaped
as such a fleet serves them, for 1 and for 3 instances.

What each process serves, as found (telemetry/metrics.py, agent/durable/review.py):
- per process (its own events; a fleet's figure is the `sum` across instances): every counter and
  histogram of runs, tools, model calls, waits, audits, telemetry exports and drops, and
  `agent_budget_limit` (its own configured ceilings: read with `max`);
- store-wide (every replica reads the shared store; a fleet's figure is the `max` across instances):
  `agent_help_pending` and `agent_help_oldest_pending_seconds` when a store or Temporal's visibility is
  the source (`endstate serve`, `runs`, `worker`), and `agent_review_labels_total` (every replica
  counts the store's labels from its first one).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prom_stack import require_binary

ROOT = Path(__file__).resolve().parents[1]
RULES = [str(ROOT / "alerts" / "rules" / "recording.yml"), str(ROOT / "alerts" / "rules" / "alerts.yml")]
RUN = 'agent="a",task_type="t"'
STOP_LABELS = {
    "success": 'stop_reason="success",stop_limit="none",stop_cause=""',
    "limit": 'stop_reason="limit",stop_limit="turns",stop_cause=""',
    "cancelled": 'stop_reason="cancelled",stop_limit="none",stop_cause=""',
    "need_help": 'stop_reason="need_help",stop_limit="none",stop_cause=""',
}


def series(metric: str, instance: str, values: str, **labels: str) -> dict[str, str]:
    extra = "".join(f',{k}="{v}"' for k, v in labels.items())
    return {"series": f'{metric}{{job="endstate",instance="{instance}"{extra}}}', "values": values}


def stops(instance: str, reason: str, values: str) -> dict[str, str]:
    return {
        "series": f'agent_stops_total{{job="endstate",instance="{instance}",{RUN},{STOP_LABELS[reason]}}}',
        "values": values,
    }


def firing(alert: str, at: str, count: int) -> dict[str, Any]:
    expr = f'count(ALERTS{{alertname="{alert}",alertstate="firing"}}) or vector(0)'
    return {"expr": expr, "eval_time": at, "exp_samples": [{"labels": "{}", "value": count}]}


def value(expr: str, at: str, expected: float, labels: str = "{}") -> dict[str, Any]:
    return {"expr": expr, "eval_time": at, "exp_samples": [{"labels": labels, "value": expected}]}


def promtool(tmp_path: Path, tests: list[dict[str, Any]]) -> None:
    require_binary("promtool")
    path = tmp_path / "fleet.yml"
    path.write_text(yaml.safe_dump({"rule_files": RULES, "evaluation_interval": "1m", "tests": tests}))
    done = subprocess.run(
        ["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- counters across a deploy, a restart and a scale-down -------------------------------------------


def deployed(n: int, limit_per_min: int) -> list[dict[str, str]]:
    """`n` replicas a1.. end 2 successes and `limit_per_min` limit stops a minute and start 3 runs a
    minute; at 90m a deploy cancels 3 runs in flight on each and replaces it (gone at 91m) by b1..,
    whose series start at zero at 91m (first-scrape wait), which resume those 3 (at 92m, as resumes
    of cancelled stops less than an hour old) and end them as successes, and go on as before."""
    out = []
    for i in range(1, n + 1):
        a, b = f"a{i}", f"b{i}"
        out += [
            stops(a, "success", "0+2x90 stale"),
            stops(a, "limit", f"0+{limit_per_min}x90 stale"),
            stops(a, "cancelled", "0x89 3 stale"),
            series("agent_runs_started_total", a, "0+3x90 stale", agent="a", task_type="t"),
            stops(b, "success", "_x91 0 0 5+2x60"),
            stops(b, "limit", f"_x91 0 0+{limit_per_min}x60"),
            stops(b, "cancelled", "_x91 0x61"),
            series("agent_runs_started_total", b, "_x91 0 0+3x60", agent="a", task_type="t"),
            series(
                "agent_runs_resumed_total",
                b,
                "_x91 0 3x60",
                agent="a",
                task_type="t",
                stop_reason="cancelled",
                stopped_ago="1h",
            ),
        ]
    return out


@pytest.mark.parametrize("n", [1, 3])
def test_a_deploy_that_replaces_every_replica_keeps_the_limit_page_and_counts_each_run_once(
    tmp_path: Path, n: int
) -> None:
    """A third of runs stop at a limit before, during and after the deploy: the page fires before it and
    never resolves through it; the runs cancelled and resumed on the new replicas are no ends; the
    hour after it holds each run once; no replica's stops vanish."""
    checks = [
        firing("EndstateLimitStopShareHigh", t, 1) for t in ("80m", "91m", "95m", "101m", "120m", "150m")
    ]
    checks += [firing("EndstateStopsVanishing", t, 0) for t in ("91m", "100m", "130m")]
    cancelled = 'agent_task_type_stop_reason:agent_stops_final:increase1h{stop_reason="cancelled"}'
    checks += [value(f"round(sum({cancelled}))", t, 0) for t in ("95m", "101m", "130m", "150m")]
    # the hour since 90m on each new replica: 119 successes (the 3 resumed runs' among them) and 58
    # limit stops, and not one of the runs the deploy cancelled
    checks += [value(f"round(sum(agent_task_type:agent_stops_final:increase1h) / {n})", "150m", 177)]
    tests = [{"interval": "1m", "input_series": deployed(n, 1), "promql_expr_test": checks}]
    quiet = [
        firing(a, t, 0)
        for a in ("EndstateLimitStopShareHigh", "EndstateStopsVanishing", "EndstateErrorStopShareHigh")
        for t in ("95m", "101m", "150m")
    ]
    tests.append({"interval": "1m", "input_series": deployed(n, 0), "promql_expr_test": quiet})
    promtool(tmp_path, tests)


@pytest.mark.parametrize("n", [1, 3])
def test_a_replica_restarted_mid_hour_and_a_scale_down_keep_the_share_and_its_page(
    tmp_path: Path, n: int
) -> None:
    """Replica 1 restarts at 60m under the same instance (its counters back to 0); the others are scaled
    down at 70m (their series end). The share stays a third, the page holds, and the hour counts the
    runs that ended, the restarted replica's included."""
    inputs = [stops("r1", "success", "0+2x60 0+2x89"), stops("r1", "limit", "0+1x60 0+1x89")]
    for i in range(2, n + 1):
        inputs += [stops(f"r{i}", "success", "0+2x70 stale"), stops(f"r{i}", "limit", "0+1x70 stale")]
    share = 'sum(agent_task_type_stop_reason:agent_stops_final:ratio_rate1h{stop_reason="limit"})'
    checks = [value(f"round(100 * {share})", t, 33) for t in ("61m", "75m", "100m", "140m")]
    checks += [
        firing("EndstateLimitStopShareHigh", t, 1) for t in ("45m", "61m", "65m", "75m", "100m", "140m")
    ]
    ended = "round(sum(agent_task_type:agent_stops_final:increase1h))"
    checks.append(value(ended, "140m", 180))  # only r1 is left, and its whole hour since 80m is counted
    promtool(tmp_path, [{"interval": "1m", "input_series": inputs, "promql_expr_test": checks}])


@pytest.mark.parametrize("n", [1, 3])
def test_runs_suspended_on_one_replica_and_finished_on_another_end_once(tmp_path: Path, n: int) -> None:
    """Every run suspends on replica a<i> (need_help) and is answered and finished on replica b<i>
    (the next in the ring); a tenth end at a limit. Each run is one end, under the replica that ended it:
    30 a minute per replica pair counted 30, and the limit share a tenth, not diluted by suspensions."""
    inputs = []
    for i in range(1, n + 1):
        a, b = f"a{i}", f"b{i}"
        inputs += [
            stops(a, "need_help", "0+30x90"),
            series("agent_runs_started_total", a, "0+30x90", agent="a", task_type="t"),
            series(
                "agent_runs_resumed_total",
                b,
                "0 0+30x89",
                agent="a",
                task_type="t",
                stop_reason="need_help",
                stopped_ago="1h",
            ),
            stops(b, "success", "0 0+27x89"),
            stops(b, "limit", "0 0+3x89"),
        ]
    share = 'sum(agent_task_type_stop_reason:agent_stops_final:ratio_rate1h{stop_reason="limit"})'
    checks = [value(f"round(100 * {share})", "80m", 10)]
    checks.append(value("round(sum(agent_task_type:agent_stops_final:increase1h) / 60)", "80m", 30 * n))
    checks += [firing(alert, "80m", 0) for alert in ("EndstateLimitStopShareHigh", "EndstateStopsVanishing")]
    promtool(tmp_path, [{"interval": "1m", "input_series": inputs, "promql_expr_test": checks}])


# -- store-wide gauges ------------------------------------------------------------------------------


def stale_alert_guard() -> str:
    """EndstateHelpRequestStale's count of waiting runs, as alerts.yml has it."""
    for group in yaml.safe_load((ROOT / "alerts" / "rules" / "alerts.yml").read_text())["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == "EndstateHelpRequestStale":
                guard: str = rule["expr"].split("and on (agent, task_type)")[1].strip()
                return guard
    raise AssertionError("EndstateHelpRequestStale is not in alerts.yml")


def pending(instance: str, count: str, oldest: str) -> list[dict[str, str]]:
    return [
        series("agent_help_pending", instance, count, agent="a", task_type="t"),
        series("agent_help_oldest_pending_seconds", instance, oldest, agent="a", task_type="t"),
    ]


@pytest.mark.parametrize("n", [1, 3])
def test_a_stale_help_request_pages_once_whatever_the_replicas_and_holds_through_a_rolling_restart(
    tmp_path: Path, n: int
) -> None:
    """Two requests wait from 0m; every replica reads the store and reports both, the oldest's age. At
    100m each replica is replaced by a new one (a new instance, a minute with none), one after another;
    at 140m both are answered. The page fires at the same time for 1 and 3 replicas, holds through the
    rolling restart, and resolves once answered; the fleet's count of waiting runs is 2, not 2 x n."""
    inputs = []
    for i in range(1, n + 1):
        gone = 99 + i  # replica i is replaced at this minute; its successor reports from a minute later
        inputs += pending(f"a{i}", f"2x{gone} stale", f"0+60x{gone} stale")
        inputs += pending(
            f"b{i}",
            f"_x{gone + 2} 2x{138 - gone} 0x20",
            f"_x{gone + 2} {(gone + 2) * 60}+60x{138 - gone} 0x20",
        )
    checks = [firing("EndstateHelpRequestStale", t, 0) for t in ("64m", "143m")]
    checks += [
        firing("EndstateHelpRequestStale", t, 1) for t in ("66m", "100m", "101m", "103m", "105m", "139m")
    ]
    stale = 'ALERTS{alertname="EndstateHelpRequestStale",alertstate="firing"}'
    checks += [value(f"count({stale})", "66m", 1)]
    waiting = "sum by (agent, task_type) (max without (instance, job) (agent_help_pending))"  # the panel's
    checks += [value(f"sum({waiting})", t, 2) for t in ("50m", "120m")]
    guard = stale_alert_guard()  # the alert's count of waiting runs: 2, not 2 x n (it summed the replicas)
    checks += [value(guard.replace(" >= 1", ""), t, 2, "{" + RUN + "}") for t in ("50m", "120m")]
    promtool(tmp_path, [{"interval": "1m", "input_series": inputs, "promql_expr_test": checks}])


# -- every dashboard panel: one process, or three replicas sharing the work and the store ----------

DASHBOARD = ROOT / "dashboards" / "json" / "agent-stops.json"
RANGE, RATE = "4h", "5m"  # $__range and $__rate_interval
MINUTES = 300  # of series; panels are read at the end
# the model-call metrics' GenAI labels (they carry the run's agent and task type too)
CHAT = 'gen_ai_operation_name="chat",gen_ai_provider_name="anthropic",gen_ai_request_model="m"'
# per-process counters, (metric, labels, increase a minute): a multiple of 3, split over 3 replicas
PER_PROCESS = [
    *[("agent_stops_total", STOP_LABELS[r], k) for r, k in (("success", 6), ("limit", 3), ("need_help", 3))],
    ("agent_stops_total", 'stop_reason="error",stop_limit="none",stop_cause=""', 3),
    ("agent_stops_total", 'stop_reason="no_progress",stop_limit="none",stop_cause=""', 3),
    ("agent_stops_total", 'stop_reason="gave_up",stop_limit="none",stop_cause="agent"', 3),
    ("agent_runs_started_total", "", 18),
    ("agent_runs_resumed_total", 'stop_reason="need_help",stopped_ago="1h"', 3),
    ("agent_cost_usd_total", 'stop_reason="success"', 3),
    ("agent_verify_rejections_total", "", 3),
    ("agent_tool_calls_total", 'tool="look",outcome="ok"', 6),
    ("agent_tool_calls_total", 'tool="look",outcome="error"', 3),
    ("agent_success_audits_total", 'outcome="confirmed"', 3),
    ("agent_success_audits_total", 'outcome="false_success"', 3),
    ("agent_run_tokens_sum", 'stop_reason="success"', 3000),
    ("agent_run_tokens_count", 'stop_reason="success"', 6),
    ("agent_human_wait_seconds_count", 'outcome="answered"', 6),
    ("gen_ai_client_token_usage_sum", f'{CHAT},gen_ai_token_type="input"', 3000),
    ("gen_ai_client_token_usage_sum", f'{CHAT},gen_ai_token_type="cache_read"', 6000),
    *[
        ("gen_ai_client_operation_duration_seconds_bucket", f'{CHAT},error_type="",le="{le}"', k)
        for le, k in (("0.64", 0), ("1.28", 3), ("2.56", 6), ("+Inf", 6))
    ],
    *[
        (f"agent_{m}_bucket", f'{extra}le="{le}"', k)
        for m, extra in (
            ("run_turns", 'stop_reason="success",'),
            ("run_active_seconds", 'stop_reason="success",'),
            ("human_wait_seconds", 'outcome="answered",'),
        )
        for le, k in (("1", 0), ("10", 3), ("60", 3), ("600", 6), ("+Inf", 6))
    ],
]


# read series that need days of history (a 7-day baseline, a day of audits): no data in 5 hours
NEEDS_DAYS = ("ratio_rate1h_avg7d", "ratio_rate1d")


def fleet_series(agent: str, replicas: int) -> list[dict[str, str]]:
    """`agent`'s series as `replicas` processes serve them: the events split evenly, the store's
    gauges and label counts the same on each, each replica's own ceilings the same."""
    out = []
    for i in range(replicas):
        instance, run = f"{agent}-{i}", f'agent="{agent}",task_type="t"'

        def one(
            metric: str, labels: str, values: str, instance: str = instance, run: str = run
        ) -> dict[str, str]:
            extra = f",{labels}" if labels else ""
            return {
                "series": f'{metric}{{job="endstate",instance="{instance}",{run}{extra}}}',
                "values": values,
            }

        out += [one(m, labels, f"0+{k // replicas}x{MINUTES}") for m, labels, k in PER_PROCESS]
        out += [
            one("agent_budget_limit", 'limit="turns"', f"20x{MINUTES}"),
            one("agent_budget_limit", 'limit="seconds"', f"600x{MINUTES}"),
            one("agent_help_pending", "", f"2x{MINUTES}"),
            one("agent_help_oldest_pending_seconds", "", f"0+60x{MINUTES}"),
            one("agent_review_labels_total", 'label="fine"', f"0+3x{MINUTES}"),
        ]
    return out


def panel_exprs() -> list[tuple[str, str]]:
    """(panel title, expr) of every target that selects by agent; the others read no agent label."""
    found: list[tuple[str, str]] = []

    def walk(panel: dict[str, Any]) -> None:
        found.extend(
            (panel["title"], t["expr"]) for t in panel.get("targets") or [] if "$agent" in t.get("expr", "")
        )
        for inner in panel.get("panels") or []:
            walk(inner)

    for panel in yaml.safe_load(DASHBOARD.read_text())["panels"]:
        walk(panel)
    return found


def for_agent(expr: str, agent: str) -> str:
    expr = expr.replace("$__range", RANGE).replace("$__rate_interval", RATE)
    return expr.replace('agent=~"$agent"', f'agent="{agent}"').replace("$task_type", ".*")


def test_every_panel_reads_three_replicas_as_it_reads_one_process(tmp_path: Path) -> None:
    """Agent `solo` runs in one process; agent `fleet` does the same work split over 3 replicas that read
    one store. Every panel query that selects by agent shows each the same, label for label."""
    exprs = panel_exprs()
    assert len(exprs) >= 30 and any("agent_help_pending" in e for _, e in exprs)
    checks = []
    for _title, expr in exprs:
        solo, fleet = for_agent(expr, "solo"), for_agent(expr, "fleet")
        differs = f"abs(({solo}) - ignoring (agent) ({fleet})) > 1e-6"
        checks.append({"expr": differs, "eval_time": f"{MINUTES}m", "exp_samples": []})
        if not any(part in expr for part in NEEDS_DAYS):
            checks.append(value(f"count({solo}) - count({fleet})", f"{MINUTES}m", 0))  # both hold data
    inputs = fleet_series("solo", 1) + fleet_series("fleet", 3)
    promtool(tmp_path, [{"interval": "1m", "input_series": inputs, "promql_expr_test": checks}])


@pytest.mark.parametrize("n", [1, 3])
def test_review_labels_given_across_a_deploy_that_replaced_the_replicas(tmp_path: Path, n: int) -> None:
    """One label a minute is given. At 180m every replica is replaced by a new one (a new instance) that
    counts the store's labels from the first, as each replica does (agent/durable/review.py). Over the
    4 hours to 360m the panel shows the 240 labels given; it showed the larger part one side of the
    deploy saw (179: the max across replicas of each one's increase)."""
    inputs = []
    for i in range(n):
        old = series(
            "agent_review_labels_total", f"a{i}", "0+1x180 stale", agent="a", task_type="t", label="fine"
        )
        new = series(
            "agent_review_labels_total", f"b{i}", "_x181 181+1x179", agent="a", task_type="t", label="fine"
        )
        inputs += [old, new]
    [(_title, expr)] = [(t, e) for t, e in panel_exprs() if "agent_review_labels_total" in e]
    checks = [value(for_agent(expr, "a"), "360m", 240, '{label="fine",task_type="t"}')]
    promtool(tmp_path, [{"interval": "1m", "input_series": inputs, "promql_expr_test": checks}])


# -- a process gone while a person's answer is awaited ----------------------------------------------


def quiet_process(instance: str, job: str, pending_then: int, up: str, gone: str) -> list[dict[str, str]]:
    """A quiet agent's process (2 runs started in the day) whose request waits from 1m; `up` and the
    series it serves end as `up` and `gone` say."""
    run = {"agent": "a", "task_type": "t"}
    return [
        {"series": f'up{{job="{job}",instance="{instance}"}}', "values": up},
        {**series("agent_runs_started_total", instance, f"0 1 2x78 {gone}", **run)},
        {**series("agent_help_pending", instance, f"0 {pending_then}x79 {gone}", **run)},
        {**series("agent_help_oldest_pending_seconds", instance, f"0 0+60x79 {gone}", **run)},
    ]


def relabel_job(items: list[dict[str, str]], job: str) -> list[dict[str, str]]:
    return [{**i, "series": i["series"].replace('job="endstate"', f'job="{job}"')} for i in items]


@pytest.mark.parametrize("n", [1, 3])
def test_a_quiet_agents_processes_gone_with_a_request_waiting_still_page(tmp_path: Path, n: int) -> None:
    """The request has waited over an hour (EndstateHelpRequestStale fires) when, at 80m, every process
    goes: a static target that fails its scrapes (`up` 0), or replicas found by DNS that leave no target.
    The gauges go with them, so the stale page resolves; with 2 runs started in the day, under
    EndstateAgentDown's 10, nothing paged. Now EndstateAgentDown does, and stays quiet when nothing
    waited."""
    static, found = [], []
    for i in range(n):
        static += quiet_process(f"agent-{i}:8000", "endstate", 1, "1x80 0x60", "stale")
        found += relabel_job(
            quiet_process(f"10.0.0.{i}:8000", "endstate", 1, "1x80 stale", "stale"), "workers"
        )
    down = 'ALERTS{alertname="EndstateAgentDown",alertstate="firing"}'
    checks = [firing("EndstateHelpRequestStale", "78m", 1), value(f"count({down}) or vector(0)", "78m", 0)]
    checks += [value(f"count({down})", t, n) for t in ("100m", "130m")]
    job_checks = [
        value(f"count({down.replace('}', ',job=' + chr(34) + 'workers' + chr(34) + '}')})", "100m", 1)
    ]
    nothing_waited = []
    for i in range(n):
        nothing_waited += quiet_process(f"agent-{i}:8000", "endstate", 0, "1x80 0x60", "stale")
    promtool(
        tmp_path,
        [
            {"interval": "1m", "input_series": static, "promql_expr_test": checks},
            {"interval": "1m", "input_series": found, "promql_expr_test": job_checks},
            {
                "interval": "1m",
                "input_series": nothing_waited,
                "promql_expr_test": [value(f"count({down}) or vector(0)", "100m", 0)],
            },
        ],
    )
