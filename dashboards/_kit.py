"""Small helpers over grafana-foundation-sdk shared by Endstate's dashboards."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from urllib.parse import quote, unquote

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.builders.dashboard import (
    DashboardLink,
    DatasourceVariable,
    QueryVariable,
    ThresholdsConfig,
)
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models import prometheus as prometheus_model

from alerts.runbooks import runbook_url

# Provisioned by dashboards/provisioning/datasources/datasources.yml.
TEMPO_UID = "tempo"
PROMETHEUS = model.DataSourceRef(type_val="prometheus", uid="${datasource}")

# Every agent query is narrowed by the dashboard's two label variables.
SCOPE = {"agent": '=~"$agent"', "task_type": '=~"$task_type"'}


def sel(scoped: bool = True, **matchers: str) -> str:
    """A label selector: `sel(stop_reason='="limit"')` -> `{agent=~"$agent", ..., stop_reason="limit"}`."""
    parts = dict(SCOPE) if scoped else {}
    parts.update(matchers)
    return "{" + ", ".join(f"{name}{op}" for name, op in parts.items()) + "}"


def query(expr: str, legend: str, ref: str, exemplar: bool = False) -> prometheus.Dataquery:
    """A range query against the dashboard's Prometheus data source."""
    target = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(PROMETHEUS)
    return target.range().exemplar(True) if exemplar else target.range()


def instant(expr: str, legend: str, ref: str) -> prometheus.Dataquery:
    """An instant query, for tables."""
    target = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(PROMETHEUS)
    return target.instant().format(prometheus_model.PromQueryFormat.TABLE)


def thresholds(*steps: tuple[float, str]) -> ThresholdsConfig:
    """Absolute thresholds starting green: `thresholds((0.2, "red"))`."""
    first = [model.Threshold(value=None, color="green")]
    rest = [model.Threshold(value=value, color=color) for value, color in steps]
    return ThresholdsConfig().mode(model.ThresholdsMode.ABSOLUTE).steps(first + rest)


def series_panel(
    title: str, description: str, unit: str, targets: Sequence[prometheus.Dataquery]
) -> timeseries.Panel:
    """A time series panel with the conventions every panel here follows."""
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .datasource(PROMETHEUS)
        .targets(list(targets))
        .fill_opacity(10)
        .legend(
            common_builders.VizLegendOptions()
            .display_mode(common.LegendDisplayMode.LIST)
            .placement(common.LegendPlacement.BOTTOM)
            .show_legend(True)
        )
        .tooltip(
            common_builders.VizTooltipOptions()
            .mode(common.TooltipDisplayMode.MULTI)
            .sort(common.SortOrder.DESCENDING)
        )
    )
    return panel.height(8).span(12)


def stacked(panel: timeseries.Panel) -> timeseries.Panel:
    """Stack the series of a panel (shares that sum to one, counts by reason)."""
    return panel.stacking(common_builders.StackingConfig().mode(common.StackingMode.NORMAL))


def threshold_line(panel: timeseries.Panel, value: float) -> timeseries.Panel:
    """Draw an alert threshold on a panel as a dashed red line."""
    style = common_builders.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.DASHED)
    return panel.thresholds(thresholds((value, "red"))).thresholds_style(style)


def explore_traces_url(traceql: str, tempo_uid: str = TEMPO_UID) -> str:
    """A Grafana Explore URL that runs `traceql` in Tempo over the panel's time range."""
    pane = {
        "traces": {
            "datasource": tempo_uid,
            "queries": [
                {
                    "refId": "A",
                    "datasource": {"type": "tempo", "uid": tempo_uid},
                    "queryType": "traceql",
                    "query": traceql,
                    "limit": 20,
                    "tableType": "traces",
                }
            ],
            "range": {"from": "${__from}", "to": "${__to}"},
        }
    }
    return _explore_url(pane)


def _explore_url(panes: dict[str, object]) -> str:
    """Explore's URL for `panes`. Grafana interpolates `${...}` in data links (field labels,
    `__from`, `__to`, dashboard variables), so those are left unencoded; everything else is."""
    encoded = quote(json.dumps(panes, separators=(",", ":")), safe="")
    encoded = re.sub(r"%24%7B(.*?)%7D", lambda m: "${" + unquote(m.group(1)) + "}", encoded)
    return f"/explore?schemaVersion=1&orgId=1&panes={encoded}"


def retarget_traces(url: str, tempo_uid: str) -> str:
    """An Explore URL made by `explore_traces_url`, opening the Tempo data source `tempo_uid`."""
    panes = json.loads(unquote(url.split("&panes=", 1)[1]))
    for pane in panes.values():
        pane["datasource"] = tempo_uid
        for target in pane["queries"]:
            target["datasource"]["uid"] = tempo_uid
    return _explore_url(panes)


def traces_link(title: str, traceql: str) -> DashboardLink:
    """A data link from a series to its traces in Tempo."""
    return (
        DashboardLink(title)
        .type(model.DashboardLinkType.LINK)
        .url(explore_traces_url(traceql))
        .target_blank(True)
    )


def runbook_link(base: str, alert: str) -> DashboardLink:
    """A panel link to the runbook of `alert`, under `base` (as the alert rules' runbook_url)."""
    return (
        DashboardLink(f"Runbook: {alert}")
        .type(model.DashboardLinkType.LINK)
        .url(runbook_url(base, alert))
        .target_blank(True)
    )


def stop_traceql(
    reason: str, task_type: str = "${task_type:pipe}", agent: str = "${agent:pipe}", **extra: str
) -> str:
    """TraceQL for the `invoke_agent` spans of runs that ended with `reason`.

    Dashboard variables go in with Grafana's `pipe` format (`a|b`; the All value `.*` as is), not
    `regex`: that one escapes `.` and `/` with backslashes, which break the JSON of the Explore URL
    and are no valid escapes in a TraceQL string. An unescaped `.` still matches itself.
    """
    terms = [
        f'span.stop.reason="{reason}"',
        f'span.gen_ai.agent.name=~"{agent}"',
        f'span.agent.task.type=~"{task_type}"',
        *(f'span.{name}="{value}"' for name, value in extra.items()),
    ]
    return "{" + " && ".join(terms) + "}"


def datasource_variable() -> DatasourceVariable:
    return DatasourceVariable("datasource").label("Prometheus").type("prometheus")


def label_variable(name: str, label: str, query_text: str) -> QueryVariable:
    """A multi-value label variable with an `All` that matches everything."""
    return (
        QueryVariable(name)
        .label(label)
        .datasource(PROMETHEUS)
        .query(query_text)
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(model.VariableSort.ALPHABETICAL_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .current(model.VariableOption(selected=True, text="All", value="$__all"))
    )
