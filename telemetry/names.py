"""Every telemetry name Endstate emits: spans, attributes, metrics, labels.

This module is a public contract. Dashboards and alert rules are checked
against it by tests; rename nothing that a dashboard or rule uses.
"""

from __future__ import annotations

from typing import Final

# -- spans -------------------------------------------------------------------
SPAN_INVOKE_AGENT: Final = "invoke_agent"  # "invoke_agent {agent}"
SPAN_TURN: Final = "agent.turn"
SPAN_CHAT: Final = "chat"  # "chat {model}"
SPAN_EXECUTE_TOOL: Final = "execute_tool"  # "execute_tool {tool}"
SPAN_VERIFY: Final = "agent.verify"
SPAN_HUMAN_WAIT: Final = "agent.human_wait"

# -- span attributes: GenAI semantic conventions -----------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
ERROR_TYPE: Final = "error.type"

OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"

# -- span attributes: Endstate's own -----------------------------------------
STOP_REASON: Final = "stop.reason"
STOP_LIMIT: Final = "stop.limit"
STOP_CAUSE: Final = "stop.cause"  # gave_up only: agent, refusal or guardrail
STOP_VERIFIED: Final = "stop.verified"
AGENT_TASK_TYPE: Final = "agent.task.type"
AGENT_TURNS: Final = "agent.turns"
AGENT_TURN_INDEX: Final = "agent.turn.index"
AGENT_TURN_SIGNAL: Final = "agent.turn.signal"
AGENT_BUDGET_EXTENDED: Final = "agent.budget.extended"  # a limit stop continued with more budget
AGENT_TURN_CONTINUED: Final = "agent.turn.continued"  # a turn a suspension split: not a new turn
AGENT_COST_USD: Final = "agent.cost.usd"
AGENT_SEGMENT: Final = "agent.segment"
# the segment began on another worker (or before its workflow left this one's cache): its span here
# starts at the segment's start, but the turns before the move are under that worker's span, never ended
AGENT_SEGMENT_REPLAYED: Final = "agent.segment.replayed"
AGENT_ATTEMPT: Final = "agent.model.attempt"
AGENT_VERIFY_PASSED: Final = "agent.verify.passed"
AGENT_VERIFY_FAILURES: Final = "agent.verify.failures"
AGENT_HUMAN_WAIT_OUTCOME: Final = "agent.human_wait.outcome"
AGENT_HUMAN_WAIT_PENDING_TOOL: Final = "agent.human_wait.pending_tool"
AGENT_STOP_NOTE: Final = "stop.note"

# -- environment variables ---------------------------------------------------
ENV_CAPTURE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# -- Prometheus metrics (names as `prometheus_client` takes them) ------------
# The exposition adds `_total` to counters and `_bucket`/`_sum`/`_count` to
# histograms; the full exposed names are in EXPOSED_METRICS below.
METRIC_STOPS: Final = "agent_stops"  # counter -> agent_stops_total
METRIC_RUNS_STARTED: Final = "agent_runs_started"  # counter -> agent_runs_started_total
METRIC_RUN_TURNS: Final = "agent_run_turns"  # histogram
METRIC_RUN_ACTIVE_SECONDS: Final = "agent_run_active_seconds"  # histogram, exemplar trace_id
METRIC_RUN_TOKENS: Final = "agent_run_tokens"  # histogram
METRIC_HUMAN_WAIT_SECONDS: Final = "agent_human_wait_seconds"  # histogram
METRIC_HELP_PENDING: Final = "agent_help_pending"  # gauge (from the store)
METRIC_HELP_OLDEST_PENDING_SECONDS: Final = "agent_help_oldest_pending_seconds"  # gauge
METRIC_VERIFY_REJECTIONS: Final = "agent_verify_rejections"  # counter -> _total
METRIC_TOOL_CALLS: Final = "agent_tool_calls"  # counter -> _total
METRIC_COST_USD: Final = "agent_cost_usd"  # counter -> agent_cost_usd_total
METRIC_BUDGET_LIMIT: Final = "agent_budget_limit"  # gauge: the configured ceilings
METRIC_TELEMETRY_EXPORT_FAILURES: Final = "agent_telemetry_export_failures"  # counter -> _total
METRIC_GEN_AI_TOKEN_USAGE: Final = "gen_ai_client_token_usage"  # histogram
METRIC_GEN_AI_OPERATION_DURATION: Final = "gen_ai_client_operation_duration_seconds"  # histogram

# -- metric labels (values only from enums or configured names) --------------
LABEL_AGENT: Final = "agent"
LABEL_TASK_TYPE: Final = "task_type"
LABEL_STOP_REASON: Final = "stop_reason"
LABEL_STOP_LIMIT: Final = "stop_limit"  # "none" unless stop_reason="limit"
LABEL_STOP_CAUSE: Final = "stop_cause"  # empty unless stop_reason="gave_up": agent, refusal, guardrail
LABEL_OUTCOME: Final = "outcome"  # human wait: answered|expired; tools: ok|error|timeout
LABEL_TOOL: Final = "tool"
LABEL_LIMIT: Final = "limit"  # agent_budget_limit: turns|seconds|tokens|cost
LABEL_SIGNAL: Final = "signal"  # export failures: traces|metrics
LABEL_GEN_AI_OPERATION_NAME: Final = "gen_ai_operation_name"
LABEL_GEN_AI_PROVIDER_NAME: Final = "gen_ai_provider_name"
LABEL_GEN_AI_REQUEST_MODEL: Final = "gen_ai_request_model"
LABEL_GEN_AI_TOKEN_TYPE: Final = "gen_ai_token_type"
LABEL_ERROR_TYPE: Final = "error_type"

NO_LIMIT: Final = "none"

EXPOSED_METRICS: Final = frozenset(
    {
        "agent_stops_total",
        "agent_runs_started_total",
        "agent_review_labels_total",
        "agent_run_turns_bucket",
        "agent_run_turns_sum",
        "agent_run_turns_count",
        "agent_run_active_seconds_bucket",
        "agent_run_active_seconds_sum",
        "agent_run_active_seconds_count",
        "agent_run_tokens_bucket",
        "agent_run_tokens_sum",
        "agent_run_tokens_count",
        "agent_human_wait_seconds_bucket",
        "agent_human_wait_seconds_sum",
        "agent_human_wait_seconds_count",
        "agent_help_pending",
        "agent_help_oldest_pending_seconds",
        "agent_verify_rejections_total",
        "agent_tool_calls_total",
        "agent_cost_usd_total",
        "agent_budget_limit",
        "agent_telemetry_export_failures_total",
        "agent_telemetry_exports_total",
        "gen_ai_client_token_usage_bucket",
        "gen_ai_client_token_usage_sum",
        "gen_ai_client_token_usage_count",
        "gen_ai_client_operation_duration_seconds_bucket",
        "gen_ai_client_operation_duration_seconds_sum",
        "gen_ai_client_operation_duration_seconds_count",
        "agent_runs_resumed_total",
        "agent_cost_unknown_total",
        "agent_telemetry_spans_dropped_total",
        "agent_telemetry_events_dropped_total",
        "agent_success_audits_total",
        "gen_ai_invoke_agent_duration_seconds_bucket",
        "gen_ai_invoke_agent_duration_seconds_sum",
        "gen_ai_invoke_agent_duration_seconds_count",
        "gen_ai_execute_tool_duration_seconds_bucket",
        "gen_ai_execute_tool_duration_seconds_sum",
        "gen_ai_execute_tool_duration_seconds_count",
        "gen_ai_client_operation_time_to_first_chunk_seconds_bucket",
        "gen_ai_client_operation_time_to_first_chunk_seconds_sum",
        "gen_ai_client_operation_time_to_first_chunk_seconds_count",
    }
)

# -- added with the telemetry hooks (additions only; nothing above renamed) ---
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"  # only with content capture
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"  # only with content capture
AGENT_VERIFY_FAILURE_COUNT: Final = "agent.verify.failure_count"
AGENT_HUMAN_WAIT_QUESTION: Final = "agent.human_wait.question"  # only with content capture
EVENT_VERIFY: Final = SPAN_VERIFY  # verification is an event on the turn span, named like the span
# An exception recorded on a run span (`Span.record_exception`), as the OpenTelemetry SDK records one.
EVENT_EXCEPTION: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"
EXCEPTION_ESCAPED: Final = "exception.escaped"

TOKEN_INPUT: Final = "input"  # gen_ai.token.type values
TOKEN_OUTPUT: Final = "output"
TOOL_OK: Final = "ok"  # agent_tool_calls_total outcome values
TOOL_ERROR: Final = "error"
TOOL_TIMEOUT: Final = "timeout"
WAIT_ANSWERED: Final = "answered"  # agent_human_wait_seconds outcome values
WAIT_EXPIRED: Final = "expired"
SIGNAL_TRACES: Final = "traces"  # agent_telemetry_export_failures_total signal values
SIGNAL_METRICS: Final = "metrics"
SIGNAL_LOGS: Final = "logs"  # content events (EVENT_ONLY, SPAN_AND_EVENT), when they are on
TOOL_OTHER: Final = "other"  # tool label for names past the per-agent cap or not name-like
RUN_LABEL_OTHER: Final = "other"  # agent and task_type labels past the cap on (agent, task_type) pairs

# Export attempts, the denominator of the export failure ratio: span batches handed to the
# exporter (traces), reads of the pending-help source at scrape time (metrics) and batches of
# content events handed to their exporter (logs).
METRIC_TELEMETRY_EXPORTS: Final = "agent_telemetry_exports"  # counter -> agent_telemetry_exports_total

ENV_TRACES_FILE: Final = "ENDSTATE_TRACES_FILE"  # JSON-lines span file when no OTLP endpoint is set
ENV_REDACT_ENV: Final = "ENDSTATE_REDACT_ENV"  # more variable names whose values are redacted

# Histogram bucket upper bounds. Part of the contract: rules may read `le` values.
BUCKETS_RUN_TURNS: Final = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200)
BUCKETS_RUN_ACTIVE_SECONDS: Final = (
    1, 2, 5, 10, 20, 30, 60, 120, 180, 300, 450, 600, 900, 1200, 1800, 2700, 3600,
)  # fmt: skip
BUCKETS_RUN_TOKENS: Final = (
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    5_000_000, 10_000_000,
)  # fmt: skip
BUCKETS_HUMAN_WAIT_SECONDS: Final = (
    10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800,
)  # fmt: skip
# The GenAI semantic conventions' recommended boundaries.
BUCKETS_GEN_AI_TOKEN_USAGE: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
BUCKETS_GEN_AI_OPERATION_DURATION: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip

INSTRUMENTATION_SCOPE: Final = "endstate"  # the tracer's name
EXEMPLAR_TRACE_ID: Final = "trace_id"  # exemplar label on agent_run_active_seconds
NO_ERROR: Final = ""  # error_type label of a model call that succeeded
ERROR_INTERRUPTED: Final = "interrupted"  # error.type of a call cut off (cancellation) before its end
ERROR_TOOL: Final = "tool_error"  # error.type of a failed tool call that named no type
ERROR_UNKNOWN: Final = "unknown"  # error.type when the failure carried nothing to name it
ERROR_OTHER: Final = "_OTHER"  # error_type label past the per-model cap (the conventions' fallback value)

# -- added with the lean telemetry of issue 9 and the GenAI metrics of issue 13 (additions only) --
# Runs that continue a segment that ended need_help or cancelled: a run cancelled and then
# resumed is one run, so stop shares subtract these (labelled by the resumed segment's reason).
METRIC_RUNS_RESUMED: Final = "agent_runs_resumed"  # counter -> agent_runs_resumed_total
# Its `stopped_ago` label: how long before the resume the resumed segment stopped (suspended, for
# need_help), at most, in the share rules' windows, so that a window subtracts only resumes of stops it
# may hold: "1h", "6h", "1d", "7d", "older" (past a week), or "unknown" (a snapshot saved before stops kept
# their time). A few fixed values, never the seconds: the rules need no finer cut. ("1d" and "7d" came
# later: an agent from before them says "older" for a stop 6 hours to a day old, or a day to a week.)
LABEL_STOPPED_AGO: Final = "stopped_ago"
STOPPED_AGO_1H: Final = "1h"
STOPPED_AGO_6H: Final = "6h"
STOPPED_AGO_1D: Final = "1d"
STOPPED_AGO_7D: Final = "7d"
STOPPED_AGO_OLDER: Final = "older"
STOPPED_AGO_UNKNOWN: Final = "unknown"
# (upper bound in seconds, value), shortest first; past the last: STOPPED_AGO_OLDER
STOPPED_AGO_BOUNDS: Final = (
    (3600.0, STOPPED_AGO_1H),
    (6 * 3600.0, STOPPED_AGO_6H),
    (24 * 3600.0, STOPPED_AGO_1D),
    (7 * 24 * 3600.0, STOPPED_AGO_7D),
)
STOPPED_AGO_VALUES: Final = (
    STOPPED_AGO_1H,
    STOPPED_AGO_6H,
    STOPPED_AGO_1D,
    STOPPED_AGO_7D,
    STOPPED_AGO_OLDER,
    STOPPED_AGO_UNKNOWN,
)
# Run segments whose cost is unknown (a model without a known price): never counted as $0.
METRIC_COST_UNKNOWN: Final = "agent_cost_unknown"  # counter -> agent_cost_unknown_total
# Spans ended but never exported: the batch queue was full, the span export was shut down (or
# gave up at exit) with spans still queued, or the exporter failed the batch that held them.
METRIC_TELEMETRY_SPANS_DROPPED: Final = "agent_telemetry_spans_dropped"  # counter -> _total
# Content events (log records, when a capture mode asks for events) lost the same ways.
METRIC_TELEMETRY_EVENTS_DROPPED: Final = "agent_telemetry_events_dropped"  # counter -> _total
LABEL_REASON: Final = "reason"  # agent_telemetry_{spans,events}_dropped: queue_full|shutdown|export_failed
DROP_QUEUE_FULL: Final = "queue_full"
DROP_SHUTDOWN: Final = "shutdown"
# each span (event) of a failed batch, or a collector rejected (or whose answer could not be read)
DROP_EXPORT_FAILED: Final = "export_failed"
# Audits of runs that ended `success`: confirmed, a false success, or the audit itself failed.
METRIC_SUCCESS_AUDITS: Final = "agent_success_audits"  # counter -> agent_success_audits_total
AUDIT_CONFIRMED: Final = "confirmed"
AUDIT_FALSE_SUCCESS: Final = "false_success"
AUDIT_ERROR: Final = "error"
# Labels people give runs when they review them (values: name-like, else "other").
METRIC_REVIEW_LABELS: Final = "agent_review_labels"  # counter -> agent_review_labels_total
LABEL_REVIEW_LABEL: Final = "label"
REVIEW_OTHER: Final = "other"
# The labels a person can give (the values of agent.durable.review.Label; a test checks they
# agree), each counted from zero for every agent and task type, so a first label is an increase.
REVIEW_LABELS: Final = ("correct_give_up", "should_have_succeeded", "limit_too_low", "false_success", "fine")

# GenAI semantic conventions (semantic-conventions-genai, development status): agent and tool
# durations, histograms in seconds. Prometheus names as the OTLP-to-Prometheus mapping gives them.
METRIC_GEN_AI_INVOKE_AGENT_DURATION: Final = "gen_ai_invoke_agent_duration_seconds"
METRIC_GEN_AI_EXECUTE_TOOL_DURATION: Final = "gen_ai_execute_tool_duration_seconds"
LABEL_GEN_AI_AGENT_NAME: Final = "gen_ai_agent_name"
LABEL_GEN_AI_TOOL_NAME: Final = "gen_ai_tool_name"
BUCKETS_GEN_AI_INVOKE_AGENT_DURATION: Final = (
    0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6,
)  # fmt: skip
BUCKETS_GEN_AI_EXECUTE_TOOL_DURATION: Final = BUCKETS_GEN_AI_OPERATION_DURATION

# Content capture, as the GenAI instrumentations read it. The four modes need the opt-in below
# (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental); "true" alone means SPAN_ONLY.
ENV_SEMCONV_STABILITY_OPT_IN: Final = "OTEL_SEMCONV_STABILITY_OPT_IN"
OPT_IN_GEN_AI_LATEST: Final = "gen_ai_latest_experimental"
CAPTURE_NO_CONTENT: Final = "NO_CONTENT"
CAPTURE_SPAN_ONLY: Final = "SPAN_ONLY"
CAPTURE_EVENT_ONLY: Final = "EVENT_ONLY"
CAPTURE_SPAN_AND_EVENT: Final = "SPAN_AND_EVENT"
# The event that carries a model call's messages when content goes to events (a log record).
EVENT_INFERENCE_DETAILS: Final = "gen_ai.client.inference.operation.details"

# -- added for Claude in production (issue 10): cache tokens, time to first token ---
# Chat span attributes (GenAI conventions), from ModelReply.cache_read_input_tokens and
# .cache_creation_input_tokens; gen_ai_client_token_usage observes them under these token types.
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
# Chat span attribute (GenAI conventions): the output tokens spent thinking, from
# ModelReply.extra[THINKING_TOKENS] (Anthropic's usage.output_tokens_details.thinking_tokens), when given.
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
TOKEN_CACHE_READ: Final = "cache_read"  # gen_ai.token.type values for the cache parts of the input
TOKEN_CACHE_CREATION: Final = "cache_creation"
# The GenAI conventions name it "time to first chunk": the span attribute and the client
# metric (histogram, seconds, the duration metric's buckets), read from ModelReply.time_to_first_token.
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
# On chat spans: server tool uses of a reply (`...web_search_requests`: 2), and the provider's
# rate-limit headers (`anthropic.ratelimit.requests-remaining`, ..., and `retry-after`).
SERVER_TOOL_USE_PREFIX: Final = "anthropic.usage.server_tool_use."  # no GenAI convention for it yet
RATE_LIMIT_PREFIX: Final = "anthropic.ratelimit."
# On chat spans: the id of the HTTP request behind the reply (`ModelReply.request_id`: Anthropic's
# `request-id` header, Amazon Bedrock's `x-amzn-requestid`), what the provider's support asks for. No
# GenAI convention names it; the `anthropic` SDK's own call span does, so: the name the SDK gives it.
ANTHROPIC_REQUEST_ID: Final = "anthropic.request.id"
METRIC_GEN_AI_TIME_TO_FIRST_CHUNK: Final = "gen_ai_client_operation_time_to_first_chunk_seconds"  # histogram
BUCKETS_GEN_AI_TIME_TO_FIRST_CHUNK: Final = BUCKETS_GEN_AI_OPERATION_DURATION

# prometheus_client's multiprocess mode: set as it is imported, every metric value lives in a file
# of this directory, and no exemplar is kept (telemetry.metrics says so at setup).
ENV_PROMETHEUS_MULTIPROC_DIR: Final = "PROMETHEUS_MULTIPROC_DIR"

# -- the OpenTelemetry Collector's own metrics, read by the rules and the dashboard --------------
# The collector of docker-compose.yml (otel/opentelemetry-collector-contrib 0.120.0) serves them on
# :8888 (telemetry/collector.yaml), where Prometheus scrapes it (job otel-collector). Its exporter
# helper names the counters `otelcol_exporter_..._spans`; the Prometheus reader of collector.yaml
# keeps the counter suffix (`without_type_suffix: false`), so they are served with `_total`.
# Spans the exporter gave up on after its retries (Tempo down or refusing):
COLLECTOR_SEND_FAILED_SPANS: Final = "otelcol_exporter_send_failed_spans_total"
# Spans refused by the exporter's full sending queue (Tempo slower than the traffic, or down):
COLLECTOR_ENQUEUE_FAILED_SPANS: Final = "otelcol_exporter_enqueue_failed_spans_total"
COLLECTOR_SENT_SPANS: Final = "otelcol_exporter_sent_spans_total"  # delivered
LABEL_COLLECTOR_EXPORTER: Final = "exporter"  # the collector's exporter: otlp/tempo
COLLECTOR_METRICS: Final = frozenset(
    {COLLECTOR_SEND_FAILED_SPANS, COLLECTOR_ENQUEUE_FAILED_SPANS, COLLECTOR_SENT_SPANS}
)
