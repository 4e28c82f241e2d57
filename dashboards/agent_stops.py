"""The "Agent stops" dashboard: how runs end, per agent and task type.

Every panel has a unit and a description; every rate uses `$__rate_interval`;
thresholds drawn here are the alert thresholds in alerts/rules/alerts.yml (a
test keeps them equal).
"""

from __future__ import annotations

from collections.abc import Callable

from grafana_foundation_sdk.builders import table, timeseries
from grafana_foundation_sdk.builders.dashboard import AnnotationQuery, Dashboard, Row
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

from alerts.runbooks import PLACEHOLDER
from dashboards._kit import (
    PROMETHEUS,
    datasource_variable,
    instant,
    label_variable,
    query,
    runbook_link,
    sel,
    series_panel,
    stacked,
    stop_traceql,
    threshold_line,
    traces_link,
)

UID = "endstate-agent-stops"

# The alert thresholds drawn on panels (alerts/rules/alerts.yml).
LIMIT_SHARE_PAGE = 0.2  # EndstateLimitStopShareHigh
ERROR_SHARE_PAGE = 0.1  # EndstateErrorStopShareHigh
FALSE_SUCCESS_SHARE = 0.2  # EndstateFalseSuccessShareHigh
# Endstate{Limit,Error}StopShareRising, its 1h path: the share above each of these, and at least
# RISING_MIN_STOPS stops of that reason among at least 20 runs in the hour.
BASELINE_FACTOR = 2  # above twice its 7-day average
RISING_SIGMAS = 3  # the hour's count above its expectation by 3 standard deviations of chance
RISING_MIN_STOPS = 5
RISING_FLOOR = {"limit": 0.05, "error": 0.03}  # and above this share
HUMAN_WAIT_P90_SECONDS = 1800  # EndstateHumanWaitSlow
HELP_PENDING_SECONDS = 3600  # EndstateHelpRequestStale
SCRAPED_SHARE = 0.5  # EndstateAgentDown: scraped in at most this share of 10 minutes
SPANS_DROPPED_30M = 5  # EndstateTelemetrySpansDropped: at least this many spans dropped in 30 minutes
COLLECTOR_SPANS_LOST_30M = 5  # EndstateCollectorSpansLost: spans the collector could not pass on, in 30 min

RI = "$__rate_interval"
PER_MIN = "suffix: /min"


def per_minute(metric: str, by: str, selector: str) -> str:
    return f"60 * sum by ({by}) (rate({metric}{selector}[{RI}]))"


def quantile(q: float, metric: str, by: str, selector: str) -> str:
    return f"histogram_quantile({q}, sum by ({by}, le) (rate({metric}_bucket{selector}[{RI}])))"


def bars(panel: timeseries.Panel) -> timeseries.Panel:
    return stacked(panel).draw_style(common.GraphDrawStyle.BARS).fill_opacity(80)


# -- Stops ---------------------------------------------------------------------


def stops_by_reason() -> timeseries.Panel:
    panel = series_panel(
        "Stops by reason",
        "Run segments ending per minute, by stop reason (need_help is a suspension: the resumed segment "
        "ends again). Click a series to open its traces in Tempo.",
        PER_MIN,
        [query(per_minute("agent_stops_total", "stop_reason", sel()), "{{stop_reason}}", "A")],
    )
    link = traces_link(
        "Traces that stopped with ${__field.labels.stop_reason}",
        stop_traceql("${__field.labels.stop_reason}"),
    )
    return bars(panel).data_links([link])


def runs_started_and_stopped() -> timeseries.Panel:
    return series_panel(
        "Runs started and stopped",
        "Runs started, segments stopped and segments resumed per minute. Starts with no stops means runs "
        "hang or vanish (alert EndstateStopsVanishing). A burst of resumes after a deploy is the runs it "
        "cancelled carrying on: the shares count each of them once, at its real end.",
        PER_MIN,
        [
            query(f"60 * sum(rate(agent_runs_started_total{sel()}[{RI}]))", "started", "A"),
            query(f"60 * sum(rate(agent_stops_total{sel()}[{RI}]))", "stopped", "B"),
            query(
                f"60 * sum by (stop_reason) (rate(agent_runs_resumed_total{sel()}[{RI}]))",
                "resumed after {{stop_reason}}",
                "C",
            ),
        ],
    )


# The recorded counts of runs that ended (alerts/rules/recording.yml): each run counted once, at its
# real end. need_help suspensions and resumed segments are no ends; agent_stops_total counts segments.
ENDED_1H = "agent_task_type_stop_reason:agent_stops_final:increase1h"
ENDED_6H = "agent_task_type_stop_reason:agent_stops_final:increase6h"
RUNS_1H = "agent_task_type:agent_stops_final:increase1h"
RUNS_6H = "agent_task_type:agent_stops_final:increase6h"


def run_shares(ended: str, runs: str, by: str = "") -> str:
    """Shares of runs by stop reason (within each `by` group, agents summed), from recorded counts."""
    if by:
        total, match, keep = f"sum by ({by}) ({runs}{sel()})", f"on ({by})", f"{by}, stop_reason"
    else:
        total, match, keep = f"sum({runs}{sel()})", "ignoring (stop_reason)", "stop_reason"
    return f"sum by ({keep}) ({ended}{sel()}) / {match} group_left () ({total} > 0)"


def by_task_type(column: str) -> model.DataTransformerConfig:
    """A table's transformation into one row per task type and one column per `column` value."""
    return model.DataTransformerConfig(
        id_val="groupingToMatrix",
        options={"columnField": column, "rowField": "task_type", "valueField": "Value"},
    )


def stop_share_table() -> table.Panel:
    matrix = by_task_type("stop_reason")
    return (
        table.Panel()
        .title("How runs ended per task type (6h)")
        .description(
            "Share of the runs of each task type that ended with each stop reason over the 6 hours up to "
            "the end of the time range: each run counted once, at its real end (the counts the alerts "
            "read). A suspension for a person is no end: a run that asked for help and then succeeded "
            "is one success. How often runs ask for help: Requests for a person, under Human help."
        )
        .unit("percentunit")
        .datasource(PROMETHEUS)
        .targets([instant(run_shares(ENDED_6H, RUNS_6H, "task_type"), "", "A")])
        .with_transformation(matrix)
        .height(8)
        .span(12)
    )


def stop_share_per_task_type() -> timeseries.Panel:
    panel = series_panel(
        "How runs ended: $task_type (1h)",
        "Share of the runs of this task type (all selected agents) that ended with each stop reason, "
        "over the last hour at each point: each run counted once, at its real end, as the share alerts "
        "count them (need_help suspensions and cancelled-then-resumed segments are no ends). One panel "
        "per selected task type.",
        "percentunit",
        [query(run_shares(ENDED_1H, RUNS_1H), "{{stop_reason}}", "A")],
    )
    link = traces_link(
        "Traces that stopped with ${__field.labels.stop_reason}",
        stop_traceql("${__field.labels.stop_reason}"),
    )
    return stacked(panel).max(1).data_links([link]).repeat("task_type").repeat_direction("h").max_per_row(2)


# -- Limits ----------------------------------------------------------------------


def share_6h(reason: str) -> str:
    """The 6-hour share that a share alert reads for agents with fewer than 20 runs in the last hour."""
    selector = sel(stop_reason=f'="{reason}"')
    return f"agent_task_type_stop_reason:agent_stops_final:ratio_rate6h{selector}"


def rising_threshold(reason: str) -> str:
    """The 1h share above which the rising alert of `reason` fires, as the alert reads it: the
    largest of twice the 7-day share, the 7-day expectation plus its chance margin (in share of the
    hour's runs), `RISING_MIN_STOPS` of the hour's runs, and the floor."""
    selector = sel(stop_reason=f'="{reason}"')
    base = f"agent_task_type_stop_reason:agent_stops_final:ratio_rate1h_avg7d{selector}"
    expected = f"agent_task_type_stop_reason:agent_stops_final:increase1h_expected{selector}"
    runs = f"on (agent, task_type) group_left () agent_task_type:agent_stops_final:increase1h{sel()}"
    twice = f"{BASELINE_FACTOR} * {base}"
    margin = f"({expected} + {RISING_SIGMAS} * sqrt({expected})) / {runs}"
    fewest = f"(0 * {base} + {RISING_MIN_STOPS}) / {runs}"
    return f"clamp_min({larger(larger(twice, margin), fewest)}, {RISING_FLOOR[reason]})"


def larger(a: str, b: str) -> str:
    """The larger of two series with the same labels, series by series."""
    return f"(({a}) > ({b}) or ({b}))"


def limit_share() -> timeseries.Panel:
    ratio = "agent_task_type_stop_reason:agent_stops_final:ratio_rate1h"
    limit = sel(stop_reason='="limit"')
    panel = series_panel(
        "Share of runs stopped at a limit (1h, as alerted)",
        f"Share of ended runs that stopped because a budget ran out, over 1h: the series the alerts read. "
        "Each run counts once, at its real end (need_help suspensions and cancelled-then-resumed segments "
        f"are no ends). Dashed line: page threshold ({LIMIT_SHARE_PAGE:.0%}). Dotted: where the rising "
        "alert opens a ticket (held 30 min, with at least 20 runs in the hour): above the largest of twice "
        "the share of the last 7 days, that share plus three standard deviations of chance for the hour's "
        "runs, 5 limit stops of them, and 5% (drawn once a day of history with 20 runs an hour exists). "
        "Series named 6h: the share over 6 hours, which the alerts read for agents with fewer than 20 runs "
        "in the last hour: they page above "
        f"{LIMIT_SHARE_PAGE:.0%} of at least 20 runs or above half of at least 5, and the rising alert "
        "opens a ticket above three times their share of the 7 days before (with at least 5 limit stops). "
        "Usually a broken tool or a change in the outside world.",
        "percentunit",
        [
            query(f"{ratio}{limit}", "{{agent}} {{task_type}}", "A"),
            query(rising_threshold("limit"), "rising threshold {{agent}} {{task_type}}", "B"),
            query(share_6h("limit"), "6h: {{agent}} {{task_type}}", "C"),
        ],
    )
    dotted = [model.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dot", "dash": [2, 6]})]
    link = traces_link(
        "Limit-stop traces of ${__field.labels.agent} ${__field.labels.task_type}",
        stop_traceql("limit", task_type="${__field.labels.task_type}", agent="${__field.labels.agent}"),
    )
    return threshold_line(panel, LIMIT_SHARE_PAGE).override_by_query("B", dotted).data_links([link])


def error_share() -> timeseries.Panel:
    error = sel(stop_reason='="error"')
    panel = series_panel(
        "Share of runs ended in error (1h, as alerted)",
        "Share of ended runs that stopped in error (the model API failing after retries, a verifier that "
        "raised, a store that could not write), over 1h, each run counted once. Dashed line: the "
        f"EndstateErrorStopShareHigh threshold ({ERROR_SHARE_PAGE:.0%}, at least 20 runs an hour). "
        "Dotted: where the EndstateErrorStopShareRising ticket opens (held 30 min, with at least 20 runs "
        "in the hour): above the largest of twice the share of the last 7 days, that share plus three "
        "standard deviations of chance for the hour's runs, 5 errors of them, and 3% (drawn once a day of "
        "history with 20 runs an hour exists). "
        "Series named 6h: the share over 6 hours, which the alerts read for agents with fewer than 20 runs "
        "in the last hour: they page above "
        f"{ERROR_SHARE_PAGE:.0%} of at least 20 runs or above 30% of at least 5, and the rising alert "
        "opens a ticket above three times their share of the 7 days before (with at least 5 errors). "
        "Click a series for its traces.",
        "percentunit",
        [
            query(
                f"agent_task_type_stop_reason:agent_stops_final:ratio_rate1h{error}",
                "{{agent}} {{task_type}}",
                "A",
            ),
            query(rising_threshold("error"), "rising threshold {{agent}} {{task_type}}", "B"),
            query(share_6h("error"), "6h: {{agent}} {{task_type}}", "C"),
        ],
    )
    dotted = [model.DynamicConfigValue(id_val="custom.lineStyle", value={"fill": "dot", "dash": [2, 6]})]
    link = traces_link(
        "Error traces of ${__field.labels.agent} ${__field.labels.task_type}",
        stop_traceql("error", task_type="${__field.labels.task_type}", agent="${__field.labels.agent}"),
    )
    return threshold_line(panel, ERROR_SHARE_PAGE).override_by_query("B", dotted).max(1).data_links([link])


def budget_ran_out() -> timeseries.Panel:
    panel = series_panel(
        "Which budget ran out",
        "Limit stops per minute by the budget that ran out: turns, seconds, tokens or cost.",
        PER_MIN,
        [
            query(
                per_minute("agent_stops_total", "stop_limit", sel(stop_reason='="limit"')),
                "{{stop_limit}}",
                "A",
            )
        ],
    )
    link = traces_link(
        "Traces stopped by the ${__field.labels.stop_limit} budget",
        stop_traceql("limit", **{"stop.limit": "${__field.labels.stop_limit}"}),
    )
    return bars(panel).data_links([link])


def turns_vs_ceiling() -> timeseries.Panel:
    success = sel(stop_reason='="success"')
    ceiling = sel(limit='="turns"')
    return series_panel(
        "Turns per successful run vs the turns ceiling",
        "Turns used by successful runs (p50, p95) beside the configured turns ceiling. Put the ceiling "
        "above the vast majority of successful runs with room to spare, so it catches stuck runs, not hard "
        "tasks; revisit it when the task type changes.",
        "suffix: turns",
        [
            query(quantile(0.5, "agent_run_turns", "task_type", success), "p50 {{task_type}}", "A"),
            query(quantile(0.95, "agent_run_turns", "task_type", success), "p95 {{task_type}}", "B"),
            query(f"max by (task_type) (agent_budget_limit{ceiling})", "ceiling {{task_type}}", "C"),
        ],
    )


def active_time() -> timeseries.Panel:
    ceiling = sel(limit='="seconds"')
    return series_panel(
        "Active time per run by stop reason",
        "p50 and p95 of active seconds per run (human waits excluded) by stop reason, beside the seconds "
        "ceiling. The dots are exemplars: click one to open that run's trace in Tempo.",
        "s",
        [
            query(
                quantile(0.5, "agent_run_active_seconds", "stop_reason", sel()), "p50 {{stop_reason}}", "A"
            ),
            query(
                quantile(0.95, "agent_run_active_seconds", "stop_reason", sel()),
                "p95 {{stop_reason}}",
                "B",
                exemplar=True,
            ),
            query(f"max(agent_budget_limit{ceiling})", "ceiling", "C"),
        ],
    )


# -- Human help ------------------------------------------------------------------


def human_wait() -> timeseries.Panel:
    alerted = "agent_task_type:agent_human_wait_seconds:p90_rate1h"
    quiet = "agent_task_type:agent_human_wait_seconds:p90_rate6h"
    panel = series_panel(
        "Completed waits for a person (p50, p90)",
        "How long suspended runs waited for an answer, by outcome (answered, or expired at the deadline). "
        "The thick line is what EndstateHumanWaitSlow reads: p90 of all completed waits over 1h. Dashed "
        f"line: its threshold ({HUMAN_WAIT_P90_SECONDS // 60} min); it fires only with at least 5 waits "
        "an hour. Series named 6h: p90 over 6 hours, which the alert reads for agents with fewer than 5 "
        "waits in the last hour (with at least 10 in the 6 hours).",
        "s",
        [
            query(quantile(0.5, "agent_human_wait_seconds", "outcome", sel()), "p50 {{outcome}}", "A"),
            query(quantile(0.9, "agent_human_wait_seconds", "outcome", sel()), "p90 {{outcome}}", "B"),
            query(f"{alerted}{sel()}", "p90 1h, as alerted: {{agent}} {{task_type}}", "C"),
            query(f"{quiet}{sel()}", "6h: {{agent}} {{task_type}}", "D"),
        ],
    )
    thick = [model.DynamicConfigValue(id_val="custom.lineWidth", value=3)]
    return threshold_line(panel, HUMAN_WAIT_P90_SECONDS).override_by_query("C", thick)


def help_pending() -> timeseries.Panel:
    return series_panel(
        "Help requests pending",
        "Runs suspended right now, waiting for a person, by task type.",
        "short",
        [
            query(
                # Every replica reading one run store reports the store's count: de-duplicate first.
                f"sum by (task_type) (max without (instance, job) (agent_help_pending{sel()}))",
                "{{task_type}}",
                "A",
            )
        ],
    )


def oldest_pending() -> timeseries.Panel:
    panel = series_panel(
        "Oldest pending help request",
        "Age of the oldest request still waiting for a person, which completed waits cannot show. Dashed "
        f"line: the EndstateHelpRequestStale threshold ({HELP_PENDING_SECONDS // 3600} h).",
        "s",
        [query(f"max by (task_type) (agent_help_oldest_pending_seconds{sel()})", "{{task_type}}", "A")],
    )
    link = traces_link(
        "Help requests of ${__field.labels.task_type}",
        stop_traceql("need_help", task_type="${__field.labels.task_type}"),
    )
    return threshold_line(panel, HELP_PENDING_SECONDS).data_links([link])


def help_requests() -> timeseries.Panel:
    return reason_per_minute(
        "Requests for a person",
        "Runs per minute that suspended to ask a person (a question, or a tool call to approve), by task "
        "type. A suspension is no end: the run goes on once answered, or ends as help_timeout at its "
        "deadline, and only that end counts in the shares of runs.",
        "need_help",
    )


# -- Quality ---------------------------------------------------------------------


def verify_rejections() -> timeseries.Panel:
    return series_panel(
        "Verification rejections",
        "Times per minute the model said done and a verifier disagreed; the failure went back to the "
        "model and the run went on.",
        PER_MIN,
        [query(per_minute("agent_verify_rejections_total", "task_type", sel()), "{{task_type}}", "A")],
    )


def reason_per_minute(title: str, description: str, reason: str) -> timeseries.Panel:
    panel = series_panel(
        title,
        description,
        PER_MIN,
        [
            query(
                per_minute("agent_stops_total", "task_type", sel(stop_reason=f'="{reason}"')),
                "{{task_type}}",
                "A",
            )
        ],
    )
    link = traces_link(
        f"{reason} traces of ${{__field.labels.task_type}}",
        stop_traceql(reason, task_type="${__field.labels.task_type}"),
    )
    return panel.data_links([link])


def no_progress() -> timeseries.Panel:
    return reason_per_minute(
        "No-progress stops",
        "Runs stopped per minute because the same call repeated with no change, or turns passed with no "
        "new observation. A tool that answers the same whatever it is asked shows up here.",
        "no_progress",
    )


def give_ups() -> timeseries.Panel:
    return reason_per_minute(
        "Give-ups (the review queue)",
        "Runs per minute where the model gave up. Each one's note says why: review them, and turn them into "
        "eval cases or tool fixes.",
        "gave_up",
    )


def give_ups_by_cause() -> timeseries.Panel:
    panel = series_panel(
        "Give-ups by cause",
        "Runs per minute that ended as gave_up, by who ended them: agent (the model gave up), refusal (the "
        "model API refused), guardrail (a guardrail of an observed framework tripped). A refusal surge "
        "shows here before anywhere else. Agents older than stop_cause show no cause.",
        PER_MIN,
        [
            query(
                per_minute("agent_stops_total", "stop_cause", sel(stop_reason='="gave_up"')),
                "cause: {{stop_cause}}",
                "A",
            )
        ],
    )
    link = traces_link(
        "Give-ups with cause ${__field.labels.stop_cause}",
        stop_traceql("gave_up", **{"stop.cause": "${__field.labels.stop_cause}"}),
    )
    return bars(panel).data_links([link])


def tool_errors() -> timeseries.Panel:
    panel = series_panel(
        "Tool errors and timeouts",
        "Tool calls per minute that raised or timed out, by tool. The error went back to the model as the "
        "result; a burst here often comes before a rise in limit or no-progress stops.",
        PER_MIN,
        [
            query(
                per_minute("agent_tool_calls_total", "tool, outcome", sel(outcome='!="ok"')),
                "{{tool}} {{outcome}}",
                "A",
            )
        ],
    )
    runs = '{span.gen_ai.agent.name=~"${agent:pipe}" && span.agent.task.type=~"${task_type:pipe}"}'
    link = traces_link(  # a tool's span holds no agent: the failed calls within the selected runs
        "Failed calls of ${__field.labels.tool}",
        runs + ' >> {span.gen_ai.tool.name="${__field.labels.tool}" && status=error}',
    )
    return panel.data_links([link])


def tool_error_share() -> timeseries.Panel:
    failed = sel(outcome='!="ok"')
    bad = f"sum by (tool) (rate(agent_tool_calls_total{failed}[{RI}]))"
    every = f"sum by (tool) (rate(agent_tool_calls_total{sel()}[{RI}]))"
    return series_panel(
        "Tool error share",
        "Share of each tool's calls that failed or timed out.",
        "percentunit",
        [query(f"{bad} / {every}", "{{tool}}", "A")],
    ).max(1)


# -- Success audits ----------------------------------------------------------------


def false_success_share() -> timeseries.Panel:
    false = sel(outcome='="false_success"')
    quiet = (
        f"agent_task_type_outcome:agent_success_audits:ratio_rate1d{false} unless on (agent, task_type) "
        f"agent_task_type:agent_success_audits:increase6h{sel()} >= 10"
    )
    panel = series_panel(
        "False-success share of audited successes (6h, as alerted)",
        "Share of the audited successes that an independent re-check found wrong, among audits that "
        "reached a verdict (audits that failed themselves are left out), over 6 hours. Dashed line: the "
        f"EndstateFalseSuccessShareHigh threshold ({FALSE_SUCCESS_SHARE:.0%}, at least 10 audits). Series "
        "named 1d: the 1-day share of agents with fewer than 10 audits in 6 hours, which the alert reads "
        f"for them: above {FALSE_SUCCESS_SHARE:.0%} of at least 10 audits, or above half of at least 5.",
        "percentunit",
        [
            query(
                f"agent_task_type_outcome:agent_success_audits:ratio_rate6h{false}",
                "{{agent}} {{task_type}}",
                "A",
            ),
            query(quiet, "1d, few audits: {{agent}} {{task_type}}", "B"),
        ],
    )
    return threshold_line(panel, FALSE_SUCCESS_SHARE).max(1)


def audits_by_outcome() -> timeseries.Panel:
    return bars(
        series_panel(
            "Success audits by outcome",
            "Audits of successful runs per hour by outcome: confirmed, false_success (the run was not a "
            "success), error (the audit itself failed: no verdict). Audits re-check a configured share of "
            "successes, later.",
            "suffix: /h",
            [
                query(
                    f"3600 * sum by (outcome) (rate(agent_success_audits_total{sel()}[{RI}]))",
                    "{{outcome}}",
                    "A",
                )
            ],
        )
    )


def review_labels() -> table.Panel:
    # Every replica counts every label of the run store it reads, from the store's first: each one's
    # counter is the store's total. Labels given in the range: the fleet's total at its end less the
    # total at its start (the max across replicas, both), or less the first count seen in the range
    # when no replica served one at its start. Not `increase()` of each replica: replicas a deploy
    # replaced each held part of the range, and the max of their parts was one part.
    labels = f"agent_review_labels_total{sel()}"
    total = f"max without (instance, job) (max_over_time({labels}[$__range]))"
    before = f"max without (instance, job) (max_over_time({labels}[5m] offset $__range))"
    first = f"max without (instance, job) (min_over_time({labels}[$__range]))"
    given = f"{total} - ({before} or {first})"
    matrix = by_task_type("label")
    return (
        table.Panel()
        .title("Review labels given")
        .description(
            "Labels people gave runs in the review queue (the inbox's Review page, or endstate review "
            "label) over the time range, by task type: correct_give_up (it was right to stop), "
            "should_have_succeeded (a regression to fix), limit_too_low (limits suggest raises that "
            "ceiling), false_success (a success that was not: the audits' false-success share is beside "
            "this), fine. A run labelled again counts each label given. Promote a labelled run to an "
            "eval case with endstate review promote RUN_ID."
        )
        .unit("short")
        .decimals(0)
        .datasource(PROMETHEUS)
        .targets([instant(f"sum by (task_type, label) ({given})", "", "A")])
        .with_transformation(matrix)
        .height(8)
        .span(12)
    )


# -- Tokens and cost -----------------------------------------------------------


def tokens_per_run() -> timeseries.Panel:
    mean = (
        f"sum by (stop_reason) (rate(agent_run_tokens_sum{sel()}[{RI}])) / "
        f"sum by (stop_reason) (rate(agent_run_tokens_count{sel()}[{RI}]))"
    )
    return series_panel(
        "Tokens per run by stop reason",
        "Mean tokens (input plus output) per run, by how its segment ended: the run's tokens up to that "
        "end, so a run that asked a person and then succeeded counts under need_help with its tokens so "
        "far and under success with all of them. Runs that stop at a limit should not cost more than "
        "successful ones by much; if they do, the ceilings are too generous.",
        "suffix: tokens",
        [query(mean, "{{stop_reason}}", "A")],
    )


def cost_per_run() -> timeseries.Panel:
    mean = (
        f"sum by (stop_reason) (rate(agent_cost_usd_total{sel()}[{RI}])) / "
        f"sum by (stop_reason) (rate(agent_stops_total{sel()}[{RI}]))"
    )
    return series_panel(
        "Cost per run segment by stop reason",
        "Mean model cost in US dollars of the run segments that ended with each reason: what each "
        "segment spent, so a run that asked a person and then succeeded shows its cost before the "
        "question under need_help and only the rest under success (Tokens per run by stop reason "
        "counts whole runs). A segment whose cost is unknown (a model without a price) counts as $0 "
        "here. The total spend: Spend per hour by stop reason.",
        "currencyUSD",
        [query(mean, "{{stop_reason}}", "A")],
    )


def spend() -> timeseries.Panel:
    return bars(
        series_panel(
            "Spend per hour by stop reason",
            "Model cost in US dollars per hour, by how the runs ended: what limit stops and give-ups cost.",
            "currencyUSD",
            [
                query(
                    f"3600 * sum by (stop_reason) (rate(agent_cost_usd_total{sel()}[{RI}]))",
                    "{{stop_reason}}",
                    "A",
                )
            ],
        )
    )


# -- Model calls and telemetry ---------------------------------------------------


# Telemetry health is per process, not per agent: one exporter and one /metrics serve every agent
# of a process, so these panels take no agent or task type filter, and say so.
PER_PROCESS = (
    " Per process, not per agent: a process's exporters and scrapes serve all its agents, so the agent "
    "and task type selections do not apply here."
)


def model_latency() -> timeseries.Panel:
    expr = quantile(0.95, "gen_ai_client_operation_duration_seconds", "gen_ai_request_model", sel())
    return series_panel(
        "Model call duration p95",
        "95th percentile of model call duration by requested model, over the calls of the selected "
        "agents and task types (failed attempts included).",
        "s",
        [query(expr, "{{gen_ai_request_model}}", "A")],
    )


def model_tokens() -> timeseries.Panel:
    expr = per_minute("gen_ai_client_token_usage_sum", "gen_ai_request_model, gen_ai_token_type", sel())
    return series_panel(
        "Model tokens per minute",
        "Tokens per minute by requested model and token type, over the calls of the selected agents and "
        "task types: input, output, and the cache reads (cache_read) and writes (cache_creation) of "
        "the input.",
        "suffix: tokens/min",
        [query(expr, "{{gen_ai_request_model}} {{gen_ai_token_type}}", "A")],
    )


def export_failures() -> timeseries.Panel:
    return series_panel(
        "Telemetry export failures",
        "Failed exports per minute by signal. Runs go on; what is lost: spans (traces), content events "
        "(logs), or the help gauges of that scrape (metrics: a failed read of the run store). Alert "
        "EndstateTelemetryExportFailing." + PER_PROCESS,
        PER_MIN,
        [query(per_minute("agent_telemetry_export_failures_total", "signal", sel(False)), "{{signal}}", "A")],
    )


def export_failure_share() -> timeseries.Panel:
    failed = f"sum by (signal) (rate(agent_telemetry_export_failures_total{sel(False)}[{RI}]))"
    tried = f"sum by (signal) (rate(agent_telemetry_exports_total{sel(False)}[{RI}]))"
    return series_panel(
        "Telemetry export failure share",
        "Share of exports that failed, by signal: span batches for traces, reads of the pending-help "
        "source at scrape time for metrics, content event batches for logs (when events are on). "
        "No point where nothing was exported. The alert "
        "EndstateTelemetryExportFailing compares the share over 15 minutes with 50% (at least 3 exports)."
        + PER_PROCESS,
        "percentunit",
        [query(f"{failed} / {tried}", "{{signal}}", "A")],
    )


def agent_scrapes() -> timeseries.Panel:
    # The targets of Endstate's jobs: each Endstate process serves this one series from its start
    # (one per process, so the day it looks back over stays cheap). By job, not by instance: a
    # replica that never came up (a rollout that crashes at start) has served nothing, and it is
    # what EndstateAgentDown's job path pages for.
    scraped = (
        "avg_over_time(up[10m]) and on (job) "
        'group by (job) (last_over_time(agent_telemetry_exports_total{signal="traces"}[1d]))'
    )
    panel = series_panel(
        "Agent processes scraped (10m, as alerted)",
        "Share of the last 10 minutes' scrapes of each agent process that succeeded, for the targets "
        "of jobs with Endstate processes in the last day "
        "(replicas that never came up included). Dashed line: "
        f"EndstateAgentDown pages at or below {SCRAPED_SHARE:.0%} (for 5 min, with at least 10 runs "
        "started in the day before its scrapes failed). While a process is not scraped, every other "
        "panel and alert is blind to its runs. A process that is gone from service discovery (a "
        "replica stopped) leaves no series: when every replica of a job is gone, or none of them "
        "comes up, EndstateAgentDown "
        "pages for the job alone." + PER_PROCESS,
        "percentunit",
        [query(scraped, "{{instance}} ({{job}})", "A")],
    )
    return threshold_line(panel, SCRAPED_SHARE).max(1).min(0)


def dropped_before_export() -> timeseries.Panel:
    return series_panel(
        "Spans and content events dropped before export",
        "Spans (and content events, when message content goes out as events) that ended but were "
        "never exported, per minute, by process and reason: queue_full (the batch queue "
        "overflowed), shutdown (still queued when the process stopped) or export_failed (in a batch "
        "the exporter failed: see the export failures panel). Each is a hole in a run's trace. "
        f"EndstateTelemetrySpansDropped opens a ticket at {SPANS_DROPPED_30M} spans in 30 minutes "
        "lost to a full queue or a shutdown; content events do not alert." + PER_PROCESS,
        PER_MIN,
        [
            query(per_minute("agent_telemetry_spans_dropped_total", "instance, reason", sel(False)),
                  "spans {{reason}} {{instance}}", "A"),
            query(per_minute("agent_telemetry_events_dropped_total", "instance, reason", sel(False)),
                  "content events {{reason}} {{instance}}", "B"),
        ],
    )  # fmt: skip


def collector_spans_lost() -> timeseries.Panel:
    by = "instance, exporter"  # the collector's own series (telemetry/names.py, COLLECTOR_*)
    return series_panel(
        "Spans the collector could not deliver",
        "Spans the OpenTelemetry Collector took from the agents but could not pass on to the trace "
        "backend, per minute, by collector and exporter: given up after the exporter's retries (send "
        "failed: the backend down, refusing or too slow) or refused by its full sending queue (queue "
        "full). The agents' exports succeeded, so the panels above show nothing. "
        f"EndstateCollectorSpansLost opens a ticket at {COLLECTOR_SPANS_LOST_30M} spans in 30 minutes. "
        "Per collector, not per agent: a collector carries the spans of every agent, so the agent and "
        "task type selections do not apply here.",
        PER_MIN,
        [
            query(per_minute("otelcol_exporter_send_failed_spans_total", by, ""),
                  "send failed {{instance}} {{exporter}}", "A"),
            query(per_minute("otelcol_exporter_enqueue_failed_spans_total", by, ""),
                  "queue full {{instance}} {{exporter}}", "B"),
        ],
    )  # fmt: skip


# -- The dashboard -----------------------------------------------------------------

ROWS = (
    ("Stops", (stops_by_reason, runs_started_and_stopped, stop_share_table)),
    ("Stops per task type", (stop_share_per_task_type,)),
    ("Limits", (limit_share, budget_ran_out, turns_vs_ceiling, active_time)),
    ("Human help", (human_wait, oldest_pending, help_pending, help_requests)),
    (
        "Quality",
        (
            error_share,
            no_progress,
            give_ups,
            give_ups_by_cause,
            verify_rejections,
            tool_errors,
            tool_error_share,
        ),
    ),
    ("Success audits and review", (false_success_share, audits_by_outcome, review_labels)),
    ("Tokens and cost", (tokens_per_run, cost_per_run, spend)),
    (
        "Model calls and telemetry",
        (
            model_latency,
            model_tokens,
            agent_scrapes,
            export_failures,
            export_failure_share,
            dropped_before_export,
            collector_spans_lost,
        ),
    ),
)

# The alerts a panel shows: its corner links to their runbooks.
RUNBOOKS: dict[Callable[[], object], tuple[str, ...]] = {
    runs_started_and_stopped: ("EndstateStopsVanishing",),
    limit_share: ("EndstateLimitStopShareHigh", "EndstateLimitStopShareRising"),
    error_share: ("EndstateErrorStopShareHigh", "EndstateErrorStopShareRising"),
    human_wait: ("EndstateHumanWaitSlow",),
    oldest_pending: ("EndstateHelpRequestStale",),
    no_progress: ("EndstateNoProgressSurge",),
    give_ups: ("EndstateGiveUpSurge",),
    give_ups_by_cause: ("EndstateGiveUpSurge",),
    false_success_share: ("EndstateFalseSuccessShareHigh",),
    export_failure_share: ("EndstateTelemetryExportFailing",),
    agent_scrapes: ("EndstateAgentDown",),
    dropped_before_export: ("EndstateTelemetrySpansDropped",),
    collector_spans_lost: ("EndstateCollectorSpansLost",),
}


def alerts_annotation() -> AnnotationQuery:
    """Endstate's firing alerts, marked on every panel: not the watchdog, which always fires (it
    would shade the whole time range). Only the selected agents' and task types' alerts, and the
    alerts of no agent (a process down, telemetry failing), which blind every agent's panels: an
    alert's dashboard link selects its agent, where another agent's alert would mislead."""
    firing = 'alertname=~"Endstate.*", alertname!="EndstateWatchdog", alertstate="firing"'
    selected = 'agent=~"$agent|", task_type=~"$task_type|"'  # `|`: or no such label
    return (
        AnnotationQuery()
        .name("Endstate alerts")
        .datasource(PROMETHEUS)
        .enable(True)
        .icon_color("red")
        .expr(f"ALERTS{{{firing}, {selected}}}")
    )


def build(runbook_base: str = PLACEHOLDER) -> Dashboard:
    """The dashboard, its runbook links built from `runbook_base`."""
    dashboard = (
        Dashboard("Agent stops")
        .uid(UID)
        .description("How Endstate runs end: stop reasons, limits, human waits, quality, cost.")
        .tags(["endstate", "generated"])
        .readonly()
        .refresh("1m")
        .time("now-6h", "now")
        .timezone("browser")
        .tooltip(model.DashboardCursorSync.CROSSHAIR)
        .with_variable(datasource_variable())
        .with_variable(label_variable("agent", "Agent", "label_values(agent_stops_total, agent)"))
        .with_variable(
            label_variable(
                "task_type", "Task type", 'label_values(agent_stops_total{agent=~"$agent"}, task_type)'
            )
        )
        .annotation(alerts_annotation())
    )
    next_id = 1
    for title, panels in ROWS:
        dashboard = dashboard.with_row(Row(title).id(next_id))
        next_id += 1
        for make in panels:
            panel = make().id(next_id)
            if make in RUNBOOKS:
                panel = panel.links([runbook_link(runbook_base, alert) for alert in RUNBOOKS[make]])
            dashboard = dashboard.with_panel(panel)
            next_id += 1
    return dashboard
