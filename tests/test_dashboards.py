"""Proofs for dashboards/: the committed JSON is the code's output, every panel is
described and has a unit, every metric a query or rule names exists, and every
panel query returns data from a real Prometheus that scraped a real demo run."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest
import yaml
from prom_stack import (
    Prometheus,
    agent_demo,
    fast_rules,
    prometheus,
    prometheus_config,
    require_binary,
    require_demo_flags,
    wait_until,
)
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent import Agent, ModelError, tool
from agent.models import ScriptedModel, call, finish
from telemetry import MetricsHooks, names

ROOT = Path(__file__).resolve().parents[1]
DASHBOARDS = sorted((ROOT / "dashboards" / "json").glob("*.json"))
RULE_FILES = sorted((ROOT / "alerts" / "rules").glob("*.yml"))
ALERTS_YML = ROOT / "alerts" / "rules" / "alerts.yml"

# Series Prometheus makes itself, which a dashboard may read.
BUILTIN_SERIES = {"ALERTS", "ALERTS_FOR_STATE", "up"}
# Labels Prometheus adds, beside those of telemetry/names.py.
BUILTIN_LABELS = {"le", "job", "instance", "alertname", "alertstate", "__name__"}

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
            "offset", "bool", "inf", "nan"}  # fmt: skip
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile"}  # fmt: skip
GROUPING = r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)"
STRING = r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`"


@tool
def look(path: str) -> str:
    """Read a file."""
    return path


# -- reading dashboards and rules ------------------------------------------------


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel that shows data (rows, and panels nested in collapsed rows, flattened)."""
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def panel_exprs() -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target of every dashboard."""
    for path in DASHBOARDS:
        for panel in panels(load(path)):
            for target in panel.get("targets", []):
                yield f"{path.name}: {panel['title']} / {target['refId']}", target["expr"]


def other_exprs() -> Iterator[tuple[str, str]]:
    """(where, PromQL) for variable queries and annotations."""
    for path in DASHBOARDS:
        dashboard = load(path)
        for variable in dashboard["templating"]["list"]:
            if variable["type"] == "query":
                inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", variable["query"])
                assert inner, f"{path.name}: variable {variable['name']} is not label_values(...)"
                yield f"{path.name}: ${variable['name']}", inner.group(1)
        for note in dashboard.get("annotations", {}).get("list", []):
            if note.get("expr"):
                yield f"{path.name}: annotation {note['name']}", note["expr"]


def rules() -> Iterator[dict[str, Any]]:
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            yield from group["rules"]


def recorded() -> set[str]:
    return {rule["record"] for rule in rules() if "record" in rule}


# -- a crude but careful PromQL reader ---------------------------------------------


def strip(expr: str) -> str:
    """The expression without strings, label matchers, ranges, label lists and Grafana variables."""
    text = re.sub(STRING, '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(GROUPING, " ", text)
    return re.sub(r"\$\{[^}]*\}|\$\w+", " ", text)


def metric_names(expr: str) -> set[str]:
    """The series names an expression reads: identifiers that are not keywords or calls."""
    found = set()
    for match in re.finditer(r"(?<![\w.:$])([A-Za-z_:][\w:]*)(\s*\()?", strip(expr)):
        word, called = match.group(1), match.group(2)
        if not called and word.lower() not in KEYWORDS and word not in AGGREGATIONS:
            found.add(word)
    return found


def label_names(expr: str) -> set[str]:
    """Labels an expression matches on or groups by."""
    text = re.sub(STRING, '""', expr)
    matchers = re.findall(r"\{([^}]*)\}", text)
    used = {m for block in matchers for m in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", block)}
    for group in re.findall(GROUPING, text):
        used |= {label.strip() for label in group.split(",") if label.strip()}
    return used


def test_the_promql_reader() -> None:
    expr = (
        "histogram_quantile(0.9, sum by (task_type, le) (rate(agent_human_wait_seconds_bucket"
        '{agent=~"$agent", outcome="answered"}[$__rate_interval] offset 1h))) / on (agent) group_left () '
        "max(x:y:z) > 1e3 and ALERTS unless sum without (tool) (rate(foo_total[5m]))"
    )
    assert metric_names(expr) == {"agent_human_wait_seconds_bucket", "x:y:z", "ALERTS", "foo_total"}
    assert label_names(expr) == {"task_type", "le", "agent", "outcome", "tool"}


# -- static proofs -----------------------------------------------------------------


def test_committed_json_is_what_the_code_generates() -> None:
    done = subprocess.run([sys.executable, "-m", "dashboards.build", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr + "\nrun: python -m dashboards.build"
    assert DASHBOARDS


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_panel_has_a_unit_and_a_description(path: Path) -> None:
    for panel in panels(load(path)):
        assert panel.get("description", "").strip(), f"{panel['title']}: no description"
        assert panel["fieldConfig"]["defaults"].get("unit"), f"{panel['title']}: no unit"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_variables_and_rates(path: Path) -> None:
    dashboard = load(path)
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert {"datasource", "agent", "task_type"} <= set(variables)
    assert variables["datasource"]["type"] == "datasource"
    for where, expr in panel_exprs():
        assert not re.search(r"\b(rate|increase|irate)\([^\[]*\[(?!\$__rate_interval|\$__range)", expr), where


def test_every_metric_named_is_exposed_or_recorded() -> None:
    known = names.EXPOSED_METRICS | names.COLLECTOR_METRICS | recorded() | BUILTIN_SERIES
    exprs = [
        *panel_exprs(),
        *other_exprs(),
        *((rule.get("alert") or rule["record"], rule["expr"]) for rule in rules()),
    ]
    unknown = {(where, name) for where, expr in exprs for name in metric_names(expr) if name not in known}
    assert not unknown


def test_every_label_named_is_in_the_contract() -> None:
    labels = {value for key, value in vars(names).items() if key.startswith("LABEL_")} | BUILTIN_LABELS
    exprs = [*panel_exprs(), *other_exprs(), *(("rule", rule["expr"]) for rule in rules())]
    unknown = {(where, label) for where, expr in exprs for label in label_names(expr) if label not in labels}
    assert not unknown


# -- per agent or per process ------------------------------------------------------

RUN_LABELS = (names.LABEL_AGENT, names.LABEL_TASK_TYPE)
FOLLOWS_VARIABLES = {(names.LABEL_AGENT, "=~", '"$agent"'), (names.LABEL_TASK_TYPE, "=~", '"$task_type"')}
SELECTED = r"(?<![\w:$.\"])([A-Za-z_:][\w:]*)\s*(\{[^}]*\})?"
MATCHER = r"(\w+)\s*(=~|!~|!=|=)\s*(\"(?:[^\"\\]|\\.)*\")"


def served_labels() -> dict[str, set[str]]:
    """The label names of each series an agent process serves on /metrics after one run (with a
    tool, a failed model call and a verifier's rejection), by sample name."""
    registry = CollectorRegistry()
    hooks = MetricsHooks(registry)
    steps = [ModelError("busy", error_type="overloaded"), [call("look", path="a")], [finish("done", "ok")]]
    Agent("probe", ScriptedModel(steps), tools=[look], hooks=hooks, task_type="triage").run("t")
    found: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            found.setdefault(sample.name, set()).update(sample.labels)
    return found


def per_agent(metric: str, served: dict[str, set[str]]) -> bool:
    """Whether the series `metric` names carry both run labels: served with them, or recorded
    by a rule whose level (`level:metric:operations`) keeps them."""
    if metric in recorded():
        level = f"_{metric.split(':')[0]}_"
        return all(f"_{label}_" in level for label in RUN_LABELS)
    if metric in names.COLLECTOR_METRICS:
        return False  # the OpenTelemetry Collector's own series: per collector
    assert metric in served or metric in BUILTIN_SERIES, f"{metric}: not served after a run"
    return set(RUN_LABELS) <= served.get(metric, set())


def test_every_panel_that_shows_per_agent_data_follows_both_variables() -> None:
    """Choosing an agent or a task type narrows every panel whose series carry those labels: each
    selector of such a series matches `agent=~"$agent"` and `task_type=~"$task_type"`."""
    served = served_labels()
    assert set(RUN_LABELS) <= served[f"{names.METRIC_GEN_AI_TOKEN_USAGE}_sum"]  # the model metrics too
    unfiltered = []
    for where, expr in panel_exprs():
        for found in re.finditer(SELECTED, expr):
            metric, selector = found.group(1), found.group(2) or ""
            if metric in served or metric in recorded() or metric in BUILTIN_SERIES:
                matchers = set(re.findall(MATCHER, selector))
                if per_agent(metric, served) and not matchers >= FOLLOWS_VARIABLES:
                    unfiltered.append(f"{where}: {metric}{selector}")
    assert not unfiltered, "per-agent series the variables do not narrow:\n" + "\n".join(unfiltered)


def test_panels_of_per_process_data_say_they_are_not_per_agent() -> None:
    """A panel whose series carry no agent label (telemetry health, scrapes) cannot follow the
    variables: its description says so, rather than a filter that matches nothing or everything."""
    served = served_labels()
    for panel in panels(load(ROOT / "dashboards" / "json" / "agent-stops.json")):
        read = {m for target in panel.get("targets", []) for m in metric_names(target["expr"])}
        if read and not any(per_agent(metric, served) for metric in read):
            assert "not per agent" in panel["description"], panel["title"]


def alert_threshold(alert: str, pattern: str) -> float:
    rule = next(r for r in rules() if r.get("alert") == alert)
    match = re.search(pattern, rule["expr"])
    assert match, f"{alert}: threshold not found"
    return float(match.group(1))


def drawn(title: str) -> tuple[set[float], list[str]]:
    """The threshold values a panel of the Agent stops dashboard draws, and its queries."""
    dashboard = load(ROOT / "dashboards" / "json" / "agent-stops.json")
    panel = next(p for p in panels(dashboard) if p["title"].startswith(title))
    steps = panel["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])
    values = {step["value"] for step in steps if step["value"] is not None}
    return values, [target["expr"] for target in panel["targets"]]


def test_thresholds_drawn_are_the_alert_thresholds() -> None:
    limit_share, _ = drawn("Share of runs stopped at a limit")
    assert limit_share == {alert_threshold("EndstateLimitStopShareHigh", r'"limit"\}\s*>\s*([\d.]+)')}
    wait = alert_threshold("EndstateHumanWaitSlow", r"p90_rate1h\s*>\s*([\d.]+)")
    assert drawn("Completed waits")[0] == {wait}
    assert drawn("Oldest pending")[0] == {alert_threshold("EndstateHelpRequestStale", r"\)\s*>\s*([\d.]+)")}
    assert drawn("Share of runs ended in error")[0] == {
        alert_threshold("EndstateErrorStopShareHigh", r'"error"\}\s*>\s*([\d.]+)')
    }
    assert drawn("False-success share")[0] == {
        alert_threshold("EndstateFalseSuccessShareHigh", r'"false_success"\}\s*>\s*([\d.]+)')
    }


# The rising line's cases: (the 7-day share, runs in the hour), each where a different term is
# the largest: twice the 7-day share, its chance margin, the fewest stops, the floor.
RISING_CASES = [(0.2, 100), (0.05, 30), (0.01, 20), (0.001, 10_000)]
RISING = {"limit": ("Share of runs stopped at a limit", "EndstateLimitStopShareRising", 0.05),
          "error": ("Share of runs ended in error", "EndstateErrorStopShareRising", 0.03)}  # fmt: skip
R = "agent_task_type_stop_reason:agent_stops_final:"


@pytest.mark.parametrize("reason", sorted(RISING))
def test_the_rising_line_is_where_its_alert_fires(reason: str, tmp_path: Path) -> None:
    """The dotted line over a share is the alert's own boundary: promtool evaluates the line and the
    real rule from the same recorded series; the rule holds a hair above the line and not a hair
    below it, whichever of its terms is the largest."""
    title, alert_name, floor = RISING[reason]
    line = next(substitute(q) for q in drawn(title)[1] if "avg7d" in q)
    alert = substitute(next(r for r in rules() if r.get("alert") == alert_name)["expr"])
    groups, boundaries = [], set()
    for share_7d, runs in RISING_CASES:
        expected = share_7d * runs
        boundary = max(2 * share_7d, (expected + 3 * math.sqrt(expected)) / runs, 5 / runs, floor)
        boundaries.add(boundary)
        above, below = (f'agent="{side}", task_type="t", stop_reason="{reason}"' for side in ("up", "down"))
        series = {}
        for labels, share in ((above, boundary * 1.01), (below, boundary * 0.99)):
            agent = labels.split(", stop_reason")[0]
            series |= {
                f"{R}ratio_rate1h_avg7d{{{labels}}}": share_7d,
                f"{R}increase1h_expected{{{labels}}}": expected,
                f"agent_task_type:agent_stops_final:increase1h{{{agent}}}": runs,
                f"{R}ratio_rate1h{{{labels}}}": share,
                f"{R}increase1h{{{labels}}}": share * runs,
            }
        drawn_at = [{"labels": "{" + labels + "}", "value": boundary} for labels in (above, below)]
        fired = [{"labels": f"{R}ratio_rate1h{{{above}}}", "value": boundary * 1.01}]
        groups.append(
            {
                "interval": "1m",
                "input_series": [
                    {"series": name, "values": f"{value!r}x2"} for name, value in series.items()
                ],
                "promql_expr_test": [
                    {"expr": line, "eval_time": "1m", "exp_samples": drawn_at},
                    {"expr": alert, "eval_time": "1m", "exp_samples": fired},
                ],
            }
        )
    assert len(boundaries) == len(RISING_CASES)  # each case lands on a different term
    path = tmp_path / "rising_line.yml"
    path.write_text(yaml.safe_dump({"rule_files": [], "tests": groups}, width=10_000))
    argv = [require_binary("promtool"), "test", "rules", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


# Panels that draw an alert's threshold, and the alert.
THRESHOLD_PANELS = {
    "Share of runs stopped at a limit": "EndstateLimitStopShareHigh",
    "Share of runs ended in error": "EndstateErrorStopShareHigh",
    "False-success share": "EndstateFalseSuccessShareHigh",
    "Completed waits": "EndstateHumanWaitSlow",
    "Oldest pending": "EndstateHelpRequestStale",
}


@pytest.mark.parametrize("title", sorted(THRESHOLD_PANELS))
def test_a_threshold_is_drawn_over_the_series_its_alert_compares(title: str) -> None:
    """A line at the alert's threshold means something only beside what the alert compares with it
    (the same window, the same aggregation), not beside a look-alike over `$__rate_interval`."""
    rule = next(r for r in rules() if r.get("alert") == THRESHOLD_PANELS[title])
    compared = metric_names(rule["expr"].split(">")[0])
    _, queries = drawn(title)
    assert compared and all(any(name in q for q in queries) for name in compared), (compared, queries)


def test_stop_reason_series_link_to_their_traces() -> None:
    links = [link["url"] for p in panels(load(ROOT / "dashboards" / "json" / "agent-stops.json"))
             for link in p["fieldConfig"]["defaults"].get("links", [])]  # fmt: skip
    assert any("span.stop.reason" in url and "${__field.labels.stop_reason}" in url for url in links)
    assert all(url.startswith("/explore?") and "%22tempo%22" in url for url in links)
    attributes = {value for key, value in vars(names).items() if isinstance(value, str) and "." in value}
    queried = {m for url in links for m in re.findall(r"span\.([\w.]+?)(?:%|\s|=|!)", unquote(url))}
    assert queried and queried <= attributes, queried - attributes


# What a person may have selected: names with dots are legal agent and task type names.
SELECTIONS = [
    {"agent": ["claude.researcher"], "task_type": ["fix.test"]},
    {"agent": ["researcher", "csv-cleaner"], "task_type": ["fix_ci", "csv/clean"]},
    {"agent": "$__all", "task_type": "$__all"},
]
FIELD_LABELS = {"stop_reason": "limit", "stop_limit": "turns", "stop_cause": "refusal",
                "task_type": "fix.test", "tool": "web.fetch", "agent": "claude.researcher"}  # fmt: skip


def grafana_interpolate(url: str, selected: dict[str, Any]) -> str:
    """A data link URL as Grafana 11 makes it: dashboard variables in the format they name (a custom
    all value as is), field labels URI-encoded (the data-link default), time range as epoch ms.
    Only the formats these dashboards use are implemented; any other fails the test."""
    regex_special = re.compile(r"[\\^$*+?.()|\[\]{}/]")

    def one(match: re.Match[str]) -> str:
        name, _, fmt = match.group(1).partition(":")
        if name.startswith("__field.labels."):
            return quote(FIELD_LABELS[name.removeprefix("__field.labels.")], safe="-_.!~*'()")
        if name in ("__from", "__to"):
            return "1700000000000"
        value = selected[name]
        if value == "$__all":
            return ".*"  # the variable's allValue, which Grafana leaves unformatted
        if fmt == "regex":
            escaped = [regex_special.sub(lambda m: "\\" + m.group(0), v) for v in value]
            return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"
        if fmt == "pipe":
            return "|".join(value)
        pytest.fail(f"no model of Grafana's {fmt or 'default'} format for ${{{name}}} in a data link")

    return re.sub(r"\$\{([^}]+)\}", one, url)


def traceql_of(url: str) -> str:
    """The TraceQL query an Explore URL opens (what Grafana's `panes` parameter holds)."""
    panes = json.loads(parse_qs(urlsplit(url).query)["panes"][0])
    (pane,) = panes.values()
    return str(pane["queries"][0]["query"])


@pytest.mark.parametrize("selected", SELECTIONS, ids=["dotted", "multi", "all"])
def test_trace_links_open_valid_traceql_whatever_is_selected(selected: dict[str, Any]) -> None:
    """Every data link, interpolated as Grafana would, is a valid Explore URL whose TraceQL has no
    backslash escapes (TraceQL strings accept none of `\\.` or `\\/`) and whose regexes match what
    was selected."""
    links = [link["url"] for p in panels(load(ROOT / "dashboards" / "json" / "agent-stops.json"))
             for link in p["fieldConfig"]["defaults"].get("links", [])]  # fmt: skip
    assert links
    for url in links:
        template, traceql = traceql_of(url), traceql_of(grafana_interpolate(url, selected))
        assert "\\" not in traceql, traceql
        for attribute, variable in (("gen_ai.agent.name", "agent"), ("agent.task.type", "task_type")):
            matcher = rf'span\.{re.escape(attribute)}=~"([^"]*)"'
            placeholder, found = re.search(matcher, template), re.search(matcher, traceql)
            if placeholder is None:
                continue
            assert found, traceql
            if "__field.labels." in placeholder.group(1):
                values = [FIELD_LABELS[variable]]
            else:
                values = ["any-name"] if selected[variable] == "$__all" else selected[variable]
            assert all(re.fullmatch(found.group(1), value) for value in values), (found.group(1), values)


def test_every_trace_link_keeps_to_the_selected_agents_and_task_types() -> None:
    """A panel drawn for the selected agents and task types links to their traces only: each link's
    TraceQL matches the agent and the task type, by the dashboard variable or the series' own label
    (a tool's span holds neither: its link selects the runs, then their failed calls)."""
    for p in panels(load(ROOT / "dashboards" / "json" / "agent-stops.json")):
        for link in p["fieldConfig"]["defaults"].get("links", []):
            traceql = traceql_of(link["url"])
            for attribute, variable in (("gen_ai.agent.name", "agent"), ("agent.task.type", "task_type")):
                matcher = re.search(rf'span\.{re.escape(attribute)}=~"([^"]*)"', traceql)
                assert matcher, (p["title"], traceql)
                assert matcher.group(1) in (f"${{{variable}:pipe}}", f"${{__field.labels.{variable}}}")


def test_exemplars_are_asked_for_and_lead_to_tempo() -> None:
    targets = [
        t for p in panels(load(ROOT / "dashboards" / "json" / "agent-stops.json")) for t in p["targets"]
    ]
    assert any(t.get("exemplar") and "agent_run_active_seconds_bucket" in t["expr"] for t in targets)
    sources = yaml.safe_load((ROOT / "dashboards/provisioning/datasources/datasources.yml").read_text())
    by_type = {s["type"]: s for s in sources["datasources"]}
    destinations = by_type["prometheus"]["jsonData"]["exemplarTraceIdDestinations"]
    assert destinations == [{"name": "trace_id", "datasourceUid": by_type["tempo"]["uid"],
                             "urlDisplayLabel": "Open trace in Tempo"}]  # fmt: skip


# -- runbook links ----------------------------------------------------------------------

PLACEHOLDER_BASE = "https://runbooks.example.invalid/set-with--runbook-base/"


def alert_names() -> set[str]:
    return {rule["alert"] for rule in rules() if "alert" in rule}


def runbook_links(dashboard: dict[str, Any]) -> dict[str, list[str]]:
    """Panel title -> the URLs of its runbook links."""
    found: dict[str, list[str]] = {}
    for panel in panels(dashboard):
        for link in panel.get("links", []):
            if link["title"].startswith("Runbook: "):
                found.setdefault(panel["title"], []).append(link["url"])
    return found


def test_panels_that_show_an_alert_link_to_its_runbook() -> None:
    links = runbook_links(load(ROOT / "dashboards" / "json" / "agent-stops.json"))
    for title in THRESHOLD_PANELS:
        assert any(t.startswith(title) for t in links), f"{title}: no runbook link"
    urls = [url for found in links.values() for url in found]
    assert all(url.startswith(PLACEHOLDER_BASE) for url in urls)
    linked = {url.removeprefix(PLACEHOLDER_BASE).removesuffix(".md") for url in urls}
    assert linked <= alert_names(), linked - alert_names()
    assert all((ROOT / "docs" / "runbooks" / f"{name}.md").is_file() for name in linked)


def test_every_alert_has_a_panel_that_links_its_runbook() -> None:
    """Whoever an alert wakes opens the dashboard next: some panel shows what it fires on and links
    its runbook (EndstateAgentDown and EndstateTelemetrySpansDropped had none)."""
    from test_alerts import WATCHDOG  # it fires always: no panel shows it

    links = runbook_links(load(ROOT / "dashboards" / "json" / "agent-stops.json"))
    linked = {
        url.removeprefix(PLACEHOLDER_BASE).removesuffix(".md") for urls in links.values() for url in urls
    }
    assert alert_names() - {WATCHDOG} <= linked, alert_names() - {WATCHDOG} - linked


def test_a_custom_runbook_base_lands_in_every_runbook_link(tmp_path: Path) -> None:
    base = "https://wiki.example.com/sre/endstate"
    argv = [sys.executable, "-m", "dashboards.build", "--runbook-base", base, "--out", str(tmp_path)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    built = {path.name: path.read_text() for path in tmp_path.glob("*.json")}
    assert built.keys() == {path.name for path in DASHBOARDS}
    for name, text in built.items():
        assert "example.invalid" not in text, name
        committed = runbook_links(load(ROOT / "dashboards" / "json" / name))
        custom = runbook_links(json.loads(text))
        assert custom.keys() == committed.keys() and custom
        for title, urls in custom.items():
            assert urls == [u.replace(PLACEHOLDER_BASE, f"{base}/") for u in committed[title]]
    check = [sys.executable, "-m", "dashboards.build", "--check"]
    assert subprocess.run(check, cwd=ROOT, capture_output=True, timeout=120).returncode == 0


def data_links(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [link for panel in panels(dashboard) for link in panel["fieldConfig"]["defaults"].get("links", [])]


def test_trace_links_open_the_tempo_uid_asked_for(tmp_path: Path) -> None:
    """`--tempo-uid` (an existing Grafana's Tempo) lands in every trace link; nothing else changes."""
    uid = "P214B5B846CF3925F"
    argv = [sys.executable, "-m", "dashboards.build", "--tempo-uid", uid, "--out", str(tmp_path)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    committed, custom = load(ROOT / "dashboards/json/agent-stops.json"), load(tmp_path / "agent-stops.json")
    before, after = data_links(committed), data_links(custom)
    assert before and len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        assert traceql_of(new["url"]) == traceql_of(old["url"])
        (pane,) = json.loads(parse_qs(urlsplit(new["url"]).query)["panes"][0]).values()
        assert pane["datasource"] == uid
        assert {q["datasource"]["uid"] for q in pane["queries"]} == {uid}
        old["url"] = new["url"] = ""
    assert committed == custom


def test_a_runbook_base_that_is_no_url_is_refused(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "dashboards.build", "--runbook-base", "runbooks/", "--out", str(tmp_path)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "is not an http(s) URL" in done.stderr
    assert not list(tmp_path.glob("*.json"))


# -- the live proof -------------------------------------------------------------------

BASELINE = "agent_task_type_stop_reason:agent_stops_final:ratio_rate1h_avg7d"

# How the live test fills Grafana's variables: every agent and task type.
VARIABLES = {"$__rate_interval": "1m", "$__range": "5m", "$__interval": "15s", "$agent": ".*",
             "$task_type": ".*", "${datasource}": "prometheus"}  # fmt: skip


def substitute(expr: str) -> str:
    for name, value in sorted(VARIABLES.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(name, value)
    return expr


def has_data(result: list[dict[str, Any]]) -> bool:
    """A non-empty result with at least one number (not NaN) in it."""
    return any(not math.isnan(float(sample["value"][1])) for sample in result)


def invoke_agent_spans(traces: Path) -> dict[str, dict[str, Any]]:
    """The `invoke_agent` spans the demo wrote, by trace id (32 hex digits): their attributes. The
    demo goes on writing while the test reads: a last line not yet ended is not read; and spans
    rotated to `PATH.1` (past the file's cap) are read too."""
    files = [traces.with_name(traces.name + ".1"), traces]
    written = "".join(path.read_text() for path in files if path.exists())
    spans = [json.loads(line) for line in written.split("\n")[:-1] if line.strip()]
    return {
        span["context"]["trace_id"].removeprefix("0x"): span["attributes"]
        for span in spans
        if span["name"].startswith(names.SPAN_INVOKE_AGENT)
    }


def exemplar_traces(exemplars: list[dict[str, Any]]) -> dict[str, str]:
    """trace_id -> the stop_reason label of the series its exemplar was on."""
    return {
        e["labels"]["trace_id"]: s["seriesLabels"]["stop_reason"] for s in exemplars for e in s["exemplars"]
    }


# Panel targets that cannot return data from the demo's scrape: a share whose denominator is zero
# there (the demo makes no success audit), review labels (the demo labels no run; the review
# panel's data comes from real labels in tests/test_dashboards_runs.py), and the collector's own
# series (no collector runs here; its names are checked in tests/test_alerts46_collector.py).
# They still run against the real Prometheus, so a query Prometheus rejects fails the test.
NO_DATA_IN_THE_DEMO = {
    "agent-stops.json: False-success share of audited successes (6h, as alerted) / A",
    "agent-stops.json: False-success share of audited successes (6h, as alerted) / B",
    "agent-stops.json: Review labels given / A",
    "agent-stops.json: Spans the collector could not deliver / A",
    "agent-stops.json: Spans the collector could not deliver / B",
}


def empty_panels(prom: Prometheus) -> list[str]:
    results = {where: (expr, prom.query(substitute(expr))) for where, expr in panel_exprs()}
    assert results.keys() >= NO_DATA_IN_THE_DEMO, NO_DATA_IN_THE_DEMO - results.keys()
    return [f"{where}: {expr}" for where, (expr, result) in results.items()
            if where not in NO_DATA_IN_THE_DEMO and not has_data(result)]  # fmt: skip


def settled_empty_panels(prom: Prometheus, within: float = 90.0) -> list[str]:
    """The panels with no data once every rule had time to evaluate: on a loaded machine a rule
    group falls behind and a recorded series the panels read appears some evaluations later.
    Polls up to `within` seconds for none to be empty; the last list (empty when all have data)."""
    deadline = time.monotonic() + within
    while (empty := empty_panels(prom)) and time.monotonic() < deadline:
        time.sleep(1)
    return empty


@pytest.mark.slow
def test_every_panel_query_returns_data(tmp_path: Path) -> None:
    """Every panel target, run against a real Prometheus that scraped a real `endstate demo`;
    and the exemplars of run durations lead to traces whose attributes the trace links query."""
    require_demo_flags("--metrics-port", "--hold", "--repeat")
    # The baseline needs 24 hours that each had the alerts' minimum traffic: 24 seconds here.
    rules = fast_rules(RULE_FILES, tmp_path / "rules", steps={"1h": "1s"})
    with (
        agent_demo(["--repeat", "40"], tmp_path) as demo,
        prometheus(prometheus_config([demo.target], rules, interval="1s"), tmp_path / "prom") as prom,
    ):
        traces = demo.traces
        # A round of the demo takes 10 s of CPU: on a loaded machine (load 16 on 2 cores) over a minute.
        wait_until(lambda: prom.query("sum(agent_stops_total) >= 40"), 300, "two rounds of demo stops")
        wait_until(lambda: prom.query("count_over_time(up[1m]) >= 10"), 60, "ten scrapes")
        # The baseline needs an agent with 20 runs in the hour, then 24 evaluations; rule groups that
        # fall behind skip evaluations. At load 16-24 on 2 cores this took over 4 minutes.
        wait_until(lambda: prom.query(BASELINE), 600, "a 7-day baseline (24 one-second hours)")
        empty = settled_empty_panels(prom)
        linked = exemplar_traces(prom.exemplars("agent_run_active_seconds_bucket"))
        wait_until(lambda: invoke_agent_spans(traces).keys() >= linked.keys(), 30, "the exemplars' spans")
        spans = invoke_agent_spans(traces)
    assert not empty, "panels with no data:\n" + "\n".join(empty)
    assert linked, "no exemplars on agent_run_active_seconds_bucket"
    for trace_id, reason in linked.items():
        assert spans[trace_id][names.STOP_REASON] == reason
        assert {names.GEN_AI_AGENT_NAME, names.AGENT_TASK_TYPE} <= spans[trace_id].keys()
