"""Static proofs for alerts/: promtool and amtool on the real rules and config,
and the contract every alert keeps (guard, `for:`, severity, runbook, tests)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from prom_stack import require_binary

ROOT = Path(__file__).resolve().parents[1]
RULES = sorted((ROOT / "alerts" / "rules").glob("*.yml"))
ALERTMANAGER = ROOT / "alerts" / "alertmanager.yml"
# The rules' promtool unit tests: each file takes promtool 4-90 s of CPU (days of series per case).
UNIT_TESTS = sorted((ROOT / "alerts" / "tests").glob("*.yml"))
PROMTOOL_ENV = {**os.environ, "GOGC": "400"}
# The committed base: plainly a placeholder (`.invalid` never resolves); deployments set theirs
# with `python -m alerts.build --runbook-base URL`.
RUNBOOK_BASE = "https://runbooks.example.invalid/set-with--runbook-base/"
SEVERITIES = {"page", "ticket"}
# The shape every alert's promtool tests take (test group names start with these).
CASES = ("fires", "quiet under normal traffic", "quiet below the minimum", "resolves")
# The one stated exception to that contract: the dead man's switch fires always (`vector(1)`), the
# heartbeat Alertmanager sends to a service that pages when it stops. So it has no traffic guard, no
# `for:`, no quiet or resolving case and no panel, and pages nobody (severity `heartbeat`);
# tests/test_watchdog52_*.py hold it to its own contract. Every other alert keeps this one.
WATCHDOG = "EndstateWatchdog"


def rules(kind: str) -> list[dict[str, Any]]:
    """Every rule of `kind` ("alert" or "record") in alerts/rules/."""
    found = []
    for path in RULES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            found += [rule for rule in group["rules"] if kind in rule]
    return found


ALERTS = {rule["alert"]: rule for rule in rules("alert")}


def run(argv: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    require_binary(argv[0])
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def test_there_are_rules_and_unit_tests() -> None:
    assert RULES and UNIT_TESTS
    assert {"EndstateLimitStopShareHigh", "EndstateLimitStopShareRising", "EndstateHumanWaitSlow",
            "EndstateHelpRequestStale", "EndstateNoProgressSurge", "EndstateGiveUpSurge",
            "EndstateStopsVanishing", "EndstateTelemetryExportFailing",
            "EndstateAgentDown", "EndstateErrorStopShareHigh", "EndstateErrorStopShareRising",
            "EndstateFalseSuccessShareHigh", "EndstateTelemetrySpansDropped",
            "EndstateCollectorSpansLost"} <= set(ALERTS)  # fmt: skip


def test_promtool_check_rules() -> None:
    done = run(["promtool", "check", "rules", *map(str, RULES)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stdout + done.stderr


@pytest.mark.cpu_heavy
@pytest.mark.parametrize("path", UNIT_TESTS, ids=lambda path: path.name)
def test_promtool_unit_tests_pass(path: Path) -> None:
    # Minutes of CPU in all: at low priority, so that the tests beside it under pytest-xdist, which
    # wait on servers within deadlines, come first; GOGC=400 spends a fifth less of it collecting
    # garbage (for about 120 MB, not 70 MB, of memory).
    argv = ["nice", "-n", "10", require_binary("promtool"), "test", "rules", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=900, env=PROMTOOL_ENV)
    assert done.returncode == 0, done.stdout + done.stderr


def test_amtool_check_config() -> None:
    done = run(["amtool", "check-config", str(ALERTMANAGER)])
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("severity", sorted(SEVERITIES))
def test_alertmanager_routes_each_severity_to_its_receiver(severity: str) -> None:
    labels = [f"severity={severity}", "alertname=EndstateLimitStopShareHigh", "agent=a", "task_type=t"]
    argv = ["amtool", "config", "routes", "test", f"--config.file={ALERTMANAGER}",
            f"--verify.receivers={severity}", *labels]  # fmt: skip
    done = run(argv)
    assert done.returncode == 0, done.stdout + done.stderr


def test_recording_rules_are_named_level_metric_operations() -> None:
    pattern = re.compile(r"^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$")
    bad = [rule["record"] for rule in rules("record") if not pattern.match(rule["record"])]
    assert not bad


@pytest.mark.parametrize("name", sorted(set(ALERTS) - {WATCHDOG}))
def test_alert_keeps_the_contract(name: str) -> None:
    rule = ALERTS[name]
    assert rule.get("for"), f"{name} has no for:"
    assert rule["labels"]["severity"] in SEVERITIES
    notes = rule["annotations"]
    assert notes["summary"].strip() and notes["description"].strip()
    assert notes["runbook_url"] == f"{RUNBOOK_BASE}{name}.md"
    assert (ROOT / "docs" / "runbooks" / f"{name}.md").is_file()
    assert re.search(r"\b(and|unless)\b", rule["expr"]) or ">=" in rule["expr"], f"{name}: no traffic guard"


@pytest.mark.parametrize("readme", ["README.md", "alerts/README.md"])
def test_every_alert_is_in_the_readmes_table_of_what_each_means(readme: str) -> None:
    """The on-call person reads what an alert means in the README before its runbook."""
    table = (ROOT / readme).read_text().split("\n| alert |", 1)[1].split("\n\n", 1)[0]
    listed = {
        name for row in table.splitlines() for name in re.findall(r"`(Endstate\w+)`", row.split("|")[1])
    }
    assert sorted(set(ALERTS) - listed) == []


# The alerts about stops the review queue holds (gave_up, limit, no_progress, error).
QUEUED_STOP_ALERTS = (
    "EndstateLimitStopShareHigh", "EndstateLimitStopShareRising", "EndstateErrorStopShareHigh",
    "EndstateErrorStopShareRising", "EndstateNoProgressSurge", "EndstateGiveUpSurge",
)  # fmt: skip


@pytest.mark.parametrize("name", QUEUED_STOP_ALERTS)
def test_a_stop_alerts_runbook_says_how_to_review_and_promote_its_runs(name: str) -> None:
    """Seed 000's loop: the stops behind a page are reviewed and turned into eval cases."""
    text = (ROOT / "docs" / "runbooks" / f"{name}.md").read_text()
    reason = RISING_ALERTS.get(name) or ("limit" if "Limit" in name else "error")
    assert f"endstate review --reason {reason}" in text
    assert "endstate review label" in text and "endstate review promote" in text


# What a runbook may set in italics besides the dashboard's panels, its title and its annotations:
# the pages of Prometheus's own UI it sends people to.
PROMETHEUS_UI = {"Status > Targets", "Last error"}


def runbook_italics(name: str) -> set[str]:
    """The italic phrases of an alert's runbook (panel names and the like), line breaks joined."""
    text = re.sub(r"\s*\n\s*", " ", (ROOT / "docs" / "runbooks" / f"{name}.md").read_text())
    return {found.strip() for found in re.findall(r"(?<!\*)\*([^*]+?)\*(?!\*)", text)}


@pytest.mark.parametrize("name", sorted(ALERTS))
def test_a_runbook_says_what_to_check_and_do_and_names_panels_that_exist(name: str) -> None:
    """Read at night beside the dashboard: a runbook says what to check first, a page's what to do,
    it names the panel whose corner links back to it, and every panel it names is there (the
    stale-help, vanishing-stops, export and false-success runbooks named none; vanishing stops
    paged with nothing to do)."""
    from test_dashboards import PLACEHOLDER_BASE, load, panels, runbook_links

    text = (ROOT / "docs" / "runbooks" / f"{name}.md").read_text()
    assert "\n## Check first\n" in text
    if ALERTS[name]["labels"]["severity"] == "page":
        assert "\n## Mitigate\n" in text
    dashboard = load(ROOT / "dashboards" / "json" / "agent-stops.json")
    titles = [panel["title"] for panel in panels(dashboard)]
    others = {
        dashboard["title"],
        *(note["name"] for note in dashboard["annotations"]["list"]),
    } | PROMETHEUS_UI
    named = runbook_italics(name)
    assert not [n for n in named - others if not any(t.startswith(n) for t in titles)]
    if name == WATCHDOG:
        return  # it fires always: no panel shows it
    linking = [
        title for title, urls in runbook_links(dashboard).items() if f"{PLACEHOLDER_BASE}{name}.md" in urls
    ]
    assert linking and any(t.startswith(n) for t in linking for n in named), (linking, named)


# The alerts that compare a share with its own 7-day baseline, and the stop reason each reads.
RISING_ALERTS = {
    "EndstateLimitStopShareRising": "limit",
    "EndstateErrorStopShareRising": "error",
    "EndstateNoProgressSurge": "no_progress",
    "EndstateGiveUpSurge": "gave_up",
}


def unit_tests_of(name: str) -> list[dict[str, Any]]:
    """The promtool test groups that check alert `name`."""
    groups = []
    for path in UNIT_TESTS:
        for group in yaml.safe_load(path.read_text())["tests"]:
            if any(case["alertname"] == name for case in group.get("alert_rule_test", [])):
                groups.append(group)
    return groups


def evaluations(group: dict[str, Any], name: str) -> list[bool]:
    """For each evaluation of `name` in a test group, in order: is it expected to fire?"""
    return [bool(case["exp_alerts"]) for case in group["alert_rule_test"] if case["alertname"] == name]


@pytest.mark.parametrize("name", sorted(set(ALERTS) - {WATCHDOG}))
def test_alert_is_tested_firing_quiet_guarded_and_resolving(name: str) -> None:
    groups = {case: [g for g in unit_tests_of(name) if g["name"].startswith(case)] for case in CASES}
    missing = [case for case, found in groups.items() if not found]
    assert not missing, f"{name} has no promtool test that {missing}"
    assert all(any(evaluations(g, name)) for g in groups["fires"])
    quiet = groups["quiet under normal traffic"] + groups["quiet below the minimum"]
    assert not any(any(evaluations(g, name)) for g in quiet)
    assert all(evaluations(g, name)[0] and not evaluations(g, name)[-1] for g in groups["resolves"])


def test_baseline_needs_a_day_of_the_traffic_the_alerts_guard_on() -> None:
    """The 7-day baseline exists only after 24 hours that each had the alerts' minimum traffic,
    so a rising alert cannot fire on day one against a few unrepresentative hours."""
    baseline = next(r for r in rules("record") if r["record"].endswith(":ratio_rate1h_avg7d"))
    history = re.search(r"\(agent_task_type:agent_stops_final:increase1h >= (\d+)\)\[7d:1h\]\) >= (\d+)",
                        baseline["expr"])  # fmt: skip
    assert history, "the baseline has no minimum history"
    assert int(history.group(2)) >= 24
    for name in RISING_ALERTS:
        rule = ALERTS[name]
        guard = re.search(r"agent_task_type:agent_stops_final:increase1h >= (\d+)", rule["expr"])
        assert guard and guard.group(1) == history.group(1), rule["alert"]
        assert "ratio_rate1h_avg7d" in rule["expr"]
    # Weighted by runs: the average of rates, not the average of hourly shares.
    assert "avg_over_time(agent_task_type_stop_reason:agent_stops_final:increase1h[7d])" in baseline["expr"]
    assert "avg_over_time(agent_task_type_stop_reason:agent_stops_final:ratio_rate1h[" not in baseline["expr"]


# -- shares of runs, at any traffic ---------------------------------------------------

SHARE_ALERTS = ("EndstateLimitStopShareHigh", "EndstateErrorStopShareHigh")


@pytest.mark.parametrize("name", SHARE_ALERTS)
def test_a_share_page_has_a_path_for_quiet_agents(name: str) -> None:
    """Busy agents are judged on an hour; an agent with fewer than 20 runs in it on 6 hours,
    by a share of at least 20 runs or a higher share of at least 5, never on the hour as well; one
    with fewer than 5 runs in 6 hours (a run every hour or two) on the day, by the higher share of
    at least 5 (alerts/tests/share_high_quietest.yml: such an agent whose every run stopped at a
    limit never paged)."""
    expr = ALERTS[name]["expr"]
    assert re.search(r"ratio_rate1h\{[^}]*\} > [\d.]+\s+and on \(agent, task_type\)\s+"
                     r"agent_task_type:agent_stops_final:increase1h >= 20", expr)  # fmt: skip
    assert re.search(r"increase6h >= 20", expr) and re.search(r"increase6h >= 5\b", expr)
    assert re.search(
        r"unless on \(agent, task_type\)\s+agent_task_type:agent_stops_final:increase1h >= 20", expr
    )
    quiet = re.search(
        r"ratio_rate6h\{[^}]*\} > ([\d.]+)\s+and on \(agent, task_type\)\s+\S+increase6h >= 5\b", expr
    )
    day = re.search(
        r"ratio_rate1d\{[^}]*\} > ([\d.]+)\s+and on \(agent, task_type\)\s+"
        r"agent_task_type:agent_stops_final:increase1d >= 5\s+"
        r"unless on \(agent, task_type\)\s+agent_task_type:agent_stops_final:increase6h >= 5",
        expr,
    )
    assert quiet and day, f"{name}: no path over a day for an agent with fewer than 5 runs in 6 hours"
    assert day.group(1) == quiet.group(1), "the day is judged by the quiet path's share of at least 5"
    groups = [
        g for g in unit_tests_of(name) if g["name"].startswith("fires for a quiet agent with a run every 90")
    ]
    assert groups and all(any(evaluations(g, name)) for g in groups)


def test_run_ends_are_stops_minus_resumes_of_that_reason() -> None:
    """The shares' counts subtract the resumes of the reason a segment stopped with, and fall
    back to stops alone where no agent serves the resume counter."""
    by_name = {rule["record"]: rule["expr"] for rule in rules("record")}
    for window in ("1h", "6h", "1d"):
        ends = by_name[f"agent_task_type_stop_reason:agent_stops_final:increase{window}"]
        stops = f"agent_task_type_stop_reason:agent_stops:increase{window}"
        resumes = f"agent_task_type_stop_reason:agent_runs_resumed:increase{window}"
        assert re.search(
            rf"{stops}\s*- on \(agent, task_type, stop_reason\)\s*{resumes}\s*or\s*{stops}", ends
        )
        assert "agent_runs_resumed_total" in by_name[resumes]
        assert 'stop_reason!~"need_help|cancelled"' in by_name[stops]
    # Each window subtracts only the resumes of stops it may hold (`stopped_ago` at most its
    # length); `!~`/`!=` keep `unknown` and a series without the label subtracted, as before.
    # `7d` (a day to a week) only from the week's; `older` (over a week): from no window.
    windows = (
        ("1h", 'stopped_ago!~"6h|1d|7d|older"'),
        ("6h", 'stopped_ago!~"1d|7d|older"'),
        ("1d", 'stopped_ago!~"7d|older"'),
        ("7d", 'stopped_ago!="older"'),
    )
    for window, matcher in windows:
        resumed = re.findall(r"agent_runs_resumed_total\{([^}]*)\}", by_name[resumes_of(window)])
        assert len(resumed) == 2 and all(matcher in labels for labels in resumed), resumed


def resumes_of(window: str) -> str:
    return f"agent_task_type_stop_reason:agent_runs_resumed:increase{window}"


# -- runbook links from a base you set ------------------------------------------------


def build_rules(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "alerts.build", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_committed_rules_carry_the_placeholder_base() -> None:
    done = build_rules("--check")
    assert done.returncode == 0, done.stderr
    assert ".invalid/" in RUNBOOK_BASE


@pytest.mark.parametrize(
    ("base", "link"),
    [
        ("https://wiki.example.com/sre/runbooks", "https://wiki.example.com/sre/runbooks/{}.md"),
        ("https://github.com/acme/endstate/blob/main/docs/runbooks/",
         "https://github.com/acme/endstate/blob/main/docs/runbooks/{}.md"),
        ("https://confluence.example.com/display/SRE/{alertname}", "https://confluence.example.com/display/SRE/{}"),
    ],
)  # fmt: skip
def test_a_custom_runbook_base_lands_in_every_runbook_url(tmp_path: Path, base: str, link: str) -> None:
    out = tmp_path / "rules"
    done = build_rules("--runbook-base", base, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.glob("*.yml")) == [p.name for p in RULES]
    written = {
        rule["alert"]: rule
        for path in out.glob("*.yml")
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }
    assert written.keys() == ALERTS.keys()
    for name, rule in written.items():
        assert rule["annotations"]["runbook_url"] == link.format(name)
        original = {k: v for k, v in ALERTS[name]["annotations"].items() if k != "runbook_url"}
        assert {k: v for k, v in rule["annotations"].items() if k != "runbook_url"} == original
        assert rule["expr"] == ALERTS[name]["expr"]
    check = run(["promtool", "check", "rules", *map(str, sorted(out.glob("*.yml")))])
    assert check.returncode == 0, check.stdout + check.stderr
    assert build_rules("--check").returncode == 0, "the committed rules were changed"


@pytest.mark.parametrize("base", ["wiki.example.com/runbooks", "https://wiki.example.com/run books/", ""])
def test_a_runbook_base_that_cannot_make_links_is_refused(tmp_path: Path, base: str) -> None:
    done = build_rules("--runbook-base", base, "--out", str(tmp_path / "rules"))
    assert done.returncode == 2
    assert "is not an http(s) URL" in done.stderr and "{alertname}" in done.stderr
    assert not (tmp_path / "rules").exists()


# -- every share or rate alert pages a quiet agent too (DESIGN.md) --------------------

# Alerts that need no quiet path: one pending request is enough for the first, 10 runs a day for
# the second, and every dropped or lost span is a hole in a trace at any traffic for the last two
# (alerts/README.md, "Quiet agents").
COUNT_ALERTS = {
    "EndstateHelpRequestStale",
    "EndstateAgentDown",
    "EndstateTelemetrySpansDropped",
    "EndstateCollectorSpansLost",
}


@pytest.mark.parametrize("name", sorted(set(ALERTS) - COUNT_ALERTS - {WATCHDOG}))
def test_a_share_or_rate_alert_has_a_quiet_path_tested_both_ways(name: str) -> None:
    """A second path over a longer window (`or`), tested firing for a quiet agent and staying
    quiet for one behaving normally."""
    assert re.search(r"\)\s*or\s*\(", ALERTS[name]["expr"]), f"{name} has no second path"
    names = [group["name"] for group in unit_tests_of(name)]
    for case in ("fires for a quiet agent", "quiet under normal traffic for a quiet agent"):
        groups = [g for g in unit_tests_of(name) if g["name"].startswith(case)]
        assert groups, f"{name} has no promtool test that {case}: {names}"
        assert all(any(evaluations(g, name)) == case.startswith("fires") for g in groups)


def test_the_quiet_baseline_leaves_out_the_window_it_is_compared_with() -> None:
    """The rising alerts' quiet path compares 6 hours with the 7 days before them, so a jump on a
    short history does not raise its own baseline."""
    baseline = next(r for r in rules("record") if r["record"].endswith(":ratio_rate6h_avg7d"))
    assert baseline["expr"].count("offset 6h") == 4
    for name in RISING_ALERTS:
        expr = ALERTS[name]["expr"]
        assert re.search(r"ratio_rate6h\{[^}]*\}\s*> 3 \* \S+:ratio_rate6h_avg7d", expr), name
        assert re.search(r"increase6h\{[^}]*\} >= 5", expr), name
        busy = r"unless on \(agent, task_type\)\s+agent_task_type:agent_stops_final:increase1h >= 20"
        assert re.search(busy, expr), name


def busy_path(expr: str) -> str:
    """The first path of an alert's expression: the one that judges a busy agent on the hour."""
    return re.split(r"\)\s*or\s*\(", expr)[0]


@pytest.mark.parametrize("name", sorted(RISING_ALERTS))
def test_a_busy_agents_hour_needs_five_stops_of_the_reason(name: str) -> None:
    """At 20 runs an hour and a 3% baseline, 2 limit stops are over 5% and twice the baseline:
    chance, not a rise. The hour needs at least 5 stops of the reason, as the quiet path needs in
    6 hours (alerts/tests/rising_low_end_of_busy.yml: 6 an hour fire, 2 an hour do not)."""
    reason = RISING_ALERTS[name]
    busy = busy_path(ALERTS[name]["expr"])
    assert "agent_task_type:agent_stops_final:increase1h >= 20" in busy, name
    count = re.search(rf'increase1h\{{stop_reason="{reason}"\}} >= (\d+)', busy)
    assert count and int(count.group(1)) >= 5, f"{name}: no minimum of {reason} stops in the hour"
    assert f"at least {count.group(1)} " in ALERTS[name]["annotations"]["description"]
    groups = [g for g in unit_tests_of(name) if g["name"].startswith("fires at the low end of busy")]
    fired = {alert["exp_labels"]["task_type"] for g in groups for case in g["alert_rule_test"]
             if case["alertname"] == name for alert in case["exp_alerts"]}  # fmt: skip
    series = " ".join(s["series"] for g in groups for s in g["input_series"])
    fed = set(re.findall(r'task_type="(\w+)"', series))
    assert fired and fed - fired, f"{name}: no case where one task type fires and one with 2 stops does not"


@pytest.mark.parametrize("name", sorted(RISING_ALERTS))
def test_a_busy_agents_count_must_be_three_standard_deviations_over_chance(name: str) -> None:
    """Between 30 and 150 runs an hour, an hour expects a handful of stops of the reason, and "over
    twice the baseline with at least 5 of them" is often chance (at 30 runs an hour and a 5% share,
    5 limit stops happen in about 2% of hours). The count must also exceed what the 7-day share
    expects of the hour's runs by 3 standard deviations, Poisson: the square root of the expectation."""
    expected = next(r for r in rules("record") if r["record"].endswith(":increase1h_expected"))
    assert re.fullmatch(
        r"\s*agent_task_type_stop_reason:agent_stops_final:ratio_rate1h_avg7d\s+\* on \(agent, task_type\) "
        r"group_left \(\)\s+agent_task_type:agent_stops_final:increase1h\s*",
        expected["expr"],
    )
    reason = RISING_ALERTS[name]
    mean = rf'{expected["record"]}\{{stop_reason="{reason}"\}}'
    margin = re.search(
        rf'increase1h\{{stop_reason="{reason}"\}}\s+> {mean}\s+\+ ([\d.]+) \* sqrt\({mean}\)',
        busy_path(ALERTS[name]["expr"]),
    )
    assert margin and float(margin.group(1)) >= 3, f"{name}: no significance margin on the hour's count"
    assert f"{margin.group(1)} standard deviations" in ALERTS[name]["annotations"]["description"]


@pytest.mark.parametrize("rate", [30, 60, 150])
def test_chance_at_30_to_150_runs_an_hour_stays_quiet_and_a_real_jump_fires(rate: int) -> None:
    """alerts/tests/rising_chance_30_to_150.yml: at each rate one task type jumps and fires, and one
    has an hour that met the old conditions by chance and stays quiet."""
    path = ROOT / "alerts" / "tests" / "rising_chance_30_to_150.yml"
    groups = yaml.safe_load(path.read_text())["tests"]
    group = next(g for g in groups if g["name"].startswith(f"fires at {rate} runs an hour"))
    fired = {a["exp_labels"]["task_type"] for c in group["alert_rule_test"] for a in c["exp_alerts"]}
    assert fired == {"jump"}
    met = {s["labels"] for case in group["promql_expr_test"] for s in case["exp_samples"]}
    assert any('task_type="chance"' in labels for labels in met), "no proof the chance hour met the old rule"


@pytest.mark.parametrize("name", ["EndstateHelpRequestStale", "EndstateHumanWaitSlow"])
def test_a_help_alert_links_the_inbox_filtered_to_its_agent_and_task_type(name: str) -> None:
    """An alert on requests nobody answers named the agent and task type but not where to answer
    them; its description now gives the inbox's filter for them (promtool renders it in the
    alert's tests under alerts/tests/) and the command that lists them."""
    description = ALERTS[name]["annotations"]["description"]
    link = "/inbox?agent={{ $labels.agent | urlquery }}&task_type={{ $labels.task_type | urlquery }}"
    assert link in description and "endstate pending" in description
