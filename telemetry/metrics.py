"""Prometheus instruments for runs, turns, tools, people and the model API.

Every metric lives in an injected `CollectorRegistry`; `serve_metrics` serves
one on `/metrics`. Label values come from enums (stop reasons, limits,
outcomes) or configured names (agent, task type, tool, model): never run ids
or free text. Past the first MAX_AGENT_TASK_TYPES (agent, task type) pairs
(a caller that makes a task type per task, say), a run is counted under its
agent with task type "other", or under "other"/"other" when its agent is new
too: about 550 series each pair would add. (provider, model) pairs past
MAX_MODELS are counted the same way, and `agent_budget_limit` takes only the
LimitKind names. A tool name the agent was not configured with is "other"; error
types are name-like and at most MAX_ERROR_TYPES_PER_MODEL per model, then
"_OTHER". Each label set a dashboard may ask for is created at zero when its
agent or model is first seen, so ratios and alert rules have series to read
before the first stop of a kind.

The model-call metrics (`gen_ai_client_token_usage`, `..._operation_duration_seconds`,
`..._operation_time_to_first_chunk_seconds`) carry the run's `agent` and `task_type`
beside the GenAI labels, so the dashboards' agent and task type selections narrow
them too: their series are the admitted (agent, task type) pairs times the models
each calls, both bounded as above.

The run histograms (turns, active seconds, tokens) take the run's totals when
a segment ends, labelled with that segment's stop reason: a run that
suspends and then succeeds is one observation under `need_help` and one
under `success` (so "turns per successful run" reads the whole run; summing
a histogram over reasons counts such a run twice). `agent_cost_usd_total`
counts what each segment spent, so its sum over reasons is what runs cost.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app, values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer, choose_encoder
from prometheus_client.registry import Collector

from agent.errors import ConfigError
from agent.hooks import HumanWait, RunInfo, RunObserver
from agent.models.base import BILLED_APART, BILLED_BY_MODEL, CALL_MODEL
from agent.result import LimitKind, StopCause, StopReason
from telemetry import names as n
from telemetry.tracing import bounded_name, error_type_of, person_wait_seconds, utf8_text

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

    from agent.models.base import ModelReply, ModelRequest, ToolCall
    from agent.result import RunResult
    from agent.tools import ToolOutcome

log = logging.getLogger("endstate.telemetry")

PendingRequest = tuple[str, str, float]  # (agent, task_type, suspended_at as epoch seconds)
PendingGroup = tuple[str, str, int, float]  # (agent, task_type, how many, the oldest's suspended_at or 0)

MAX_AGENT_TASK_TYPES = 100  # (agent, task_type) label pairs; runs of further pairs count as "other"
MAX_MODELS = 64  # (provider, model) label pairs; runs of further pairs count as "other"
MAX_TOOLS_PER_AGENT = 64  # more configured tool names than this are counted as "other"
MAX_ERROR_TYPES_PER_MODEL = 16  # more distinct error types of a model's calls are counted as "_OTHER"
MAX_PENDING = 10_000  # help requests InProcessPending holds; past this the oldest are forgotten
MAX_RUN_SERIES = 1024  # (agent, model, tool set) combinations whose label children are kept for reuse
MAX_TOOL_SERIES = 4 * MAX_TOOLS_PER_AGENT  # (tool, outcome, error type) children kept per combination
MAX_LABEL_CHARS = 256  # a longer agent, task type, provider, model or tool name is cut, a digest kept
_WAIT_OUTCOMES = (n.WAIT_ANSWERED, n.WAIT_EXPIRED)
_LIMIT_KINDS = frozenset(str(k) for k in LimitKind)
_TOOL_OUTCOMES = (n.TOOL_OK, n.TOOL_ERROR, n.TOOL_TIMEOUT)
_RESUMABLE = (str(StopReason.NEED_HELP), str(StopReason.CANCELLED), str(StopReason.LIMIT))
_AUDIT_OUTCOMES = (n.AUDIT_CONFIRMED, n.AUDIT_FALSE_SUCCESS, n.AUDIT_ERROR)
_RUN_LABELS = (n.LABEL_AGENT, n.LABEL_TASK_TYPE)
_DATED = re.compile(r"-\d{8}")  # the date a model id may end with
_GEN_AI_LABELS = (n.LABEL_GEN_AI_OPERATION_NAME, n.LABEL_GEN_AI_PROVIDER_NAME, n.LABEL_GEN_AI_REQUEST_MODEL)
_MODEL_LABELS = (*_RUN_LABELS, *_GEN_AI_LABELS)  # the model-call metrics: by agent and task type too


class PendingSource(Protocol):
    """The help requests waiting for a person right now, wherever they are stored: a row per request,
    or a row per group that the source counted itself (a store counts in SQL)."""

    def __call__(self) -> Iterable[PendingRequest | PendingGroup]: ...


class InProcessPending:
    """Help requests of runs suspended in this process and not yet resumed here.

    A request leaves when its run resumes or expires in this process, or when
    its deadline passes (then it waits for expiry, no longer for a person).
    Runs resumed elsewhere never tell this process, so at most `max_pending`
    are held, the oldest forgotten first. A run store that sees every
    process supplies its own `PendingSource`.
    """

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self._lock = threading.Lock()
        self._max = max_pending
        self._runs: dict[str, tuple[str, str, float, float]] = {}  # oldest first

    def add(self, run_id: str, agent: str, task_type: str, suspended_at: float, deadline: float) -> None:
        with self._lock:
            self._runs.pop(run_id, None)
            self._runs[run_id] = (agent, task_type, suspended_at, deadline)
            if len(self._runs) > self._max:
                self._prune(time.time())

    def remove(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)

    def __len__(self) -> int:
        return len(self._runs)

    def __call__(self) -> list[PendingRequest]:
        with self._lock:
            self._prune(time.time())
            return [(a, t, at) for a, t, at, _ in self._runs.values()]

    def _prune(self, now: float) -> None:
        """Requests past their deadline out, then the oldest while there are too many."""
        for run_id in [r for r, v in self._runs.items() if v[3] <= now]:
            del self._runs[run_id]
        while len(self._runs) > self._max:
            del self._runs[next(iter(self._runs))]


def label_value(value: object) -> str:
    """A name from outside (agent, task type, provider, model, tool) as a label value every scrape can
    serve: text that is not UTF-8 (a lone surrogate, from JSON's `\\ud800` or a byte argv could not
    decode) written with backslash escapes, for it failed every later scrape of the process; past
    MAX_LABEL_CHARS characters, its start and a digest of the whole (names stay apart, series small)."""
    text = utf8_text(value if isinstance(value, str) else str(value))
    if len(text) > MAX_LABEL_CHARS:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        text = f"{text[: MAX_LABEL_CHARS - len(digest) - 1]}~{digest}"
    return text


class _LabelPairs:
    """Label pairs (agent and task type; provider and model) admitted as they come, up to a cap.

    Past the cap a new pair keeps its first value when that value is in an admitted pair already,
    with "other" for the second; a new first value too becomes "other"/"other". So there are at most
    twice the cap plus one pairs, and the first overflow is said once in the log.
    """

    def __init__(self, cap: int, what: tuple[str, str], fix: str) -> None:
        self._cap, self._what, self._fix = cap, what, fix
        self._lock = threading.Lock()
        self._pairs: set[tuple[str, str]] = set()
        self._firsts: set[str] = set()
        self._said = False

    def __contains__(self, pair: tuple[str, str]) -> bool:
        return pair in self._pairs

    def __call__(self, first: str, second: str) -> tuple[str, str]:
        first, second = label_value(first), label_value(second)
        with self._lock:
            if (first, second) in self._pairs:
                return first, second
            if len(self._pairs) < self._cap:
                self._pairs.add((first, second))
                self._firsts.add(first)
                return first, second
            known, said, self._said = first in self._firsts, self._said, True
        if not said:
            (a, b), other = self._what, n.RUN_LABEL_OTHER
            log.warning(
                "more than %d (%s, %s) label pairs: %s %r, %s %r and any further pair are counted "
                "under %s %r (and %s %r when the %s is new too). %s; restart the process once fixed",
                self._cap, a, b, a, first, b, second, b, other, a, other, a, self._fix,
            )  # fmt: skip
        return (first if known else n.RUN_LABEL_OTHER), n.RUN_LABEL_OTHER


def stopped_ago(info: RunInfo) -> str:
    """The `stopped_ago` bucket of a resume: how long before `info.started_at` its segment stopped,
    at most (a clock behind the one that stopped it reads as just now); "unknown" when not known."""
    stopped = info.resumed_stopped_at
    age = info.started_at - stopped if stopped is not None and stopped > 0 else math.nan
    if not math.isfinite(age) or info.started_at <= 0:
        return n.STOPPED_AGO_UNKNOWN
    return next((label for bound, label in n.STOPPED_AGO_BOUNDS if age <= bound), n.STOPPED_AGO_OLDER)


class MetricsHooks:
    """`RunHooks` that count stops and measure runs, tools, waits and model calls."""

    def __init__(
        self, registry: CollectorRegistry | None = None, pending: PendingSource | None = None
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        local = InProcessPending()
        self.local_pending = local if pending is None else None  # fed by the hooks when no store is given
        self._lock = threading.Lock()
        self._scraped = threading.Event()  # see `scraped`
        self._agents: dict[tuple[str, str], _AgentSeries] = {}
        self.run_labels = _LabelPairs(
            MAX_AGENT_TASK_TYPES,
            ("agent", "task type"),
            "Task types must be a fixed set of names, not one per task",
        )
        self.model_labels = _LabelPairs(
            MAX_MODELS, ("provider", "model"), "Models must be the configured names, not one per request"
        )
        self._models: dict[tuple[str, str, str, str], _ModelSeries] = {}  # agent, task type, provider, model
        self._tools: dict[tuple[str, str], set[str]] = {}  # configured tool names, by agent
        self._errors: dict[tuple[str, str], set[str]] = {}  # error types seen, by model
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}  # see `child`
        self._runs: dict[tuple[str, str, str, str, tuple[str, ...]], _RunSeries] = {}  # see `_run_series`
        self.m = _instruments(self.registry)
        for signal in (n.SIGNAL_TRACES, n.SIGNAL_METRICS):
            self.count_exports_of(signal)
        for reason in (n.DROP_QUEUE_FULL, n.DROP_SHUTDOWN, n.DROP_EXPORT_FAILED):
            self.m.spans_dropped.labels(reason)
            self.m.events_dropped.labels(reason)
        help_collector = _HelpCollector(
            pending or local,
            self.known_agents,
            self.record_export_failure,
            self.record_export_attempt,
            self.run_labels,
        )
        self.registry.register(help_collector)

    def run_started(self, info: RunInfo) -> RunObserver:
        series = self._runs.get((info.agent, info.task_type, info.provider, info.model, info.tools))
        if series is None:  # labels not seen as they are: bounded (see `_bounded`), then looked up
            info = self._bounded(info)
            series = self._runs.get((info.agent, info.task_type, info.provider, info.model, info.tools))
            series = series or self._run_series(info)
        agent = series[0]
        if not info.replayed:  # a segment observed again was counted where it started
            if info.segment <= 1:
                agent.runs_started.inc()
            if info.resumed_from:
                reason = info.resumed_from if info.resumed_from in _RESUMABLE else str(StopReason.CANCELLED)
                ago = stopped_ago(info)
                self.child(self.m.runs_resumed, info.agent, info.task_type, reason, ago).inc()
        if info.limits != agent.limits:  # most runs have the ceilings set last: nothing to set
            for limit, value in info.limits.items():
                if limit in _LIMIT_KINDS:  # a caller's own keys are no label values
                    self._set_limit(agent, info, limit, value)
        return _RunMetrics(self, info, *series)

    def _bounded(self, info: RunInfo) -> RunInfo:
        """`info` with its label pairs as admitted: "other" for a pair past the caps. (Labels a run's
        series was kept under are admitted, or what a pair past the caps becomes: kept as they are.)"""
        if (info.agent, info.task_type) not in self.run_labels:
            agent_label, task_type_label = self.run_labels(info.agent, info.task_type)
            info = replace(info, agent=agent_label, task_type=task_type_label)
        if (info.provider, info.model) not in self.model_labels:
            provider_label, model_label = self.model_labels(info.provider, info.model)
            info = replace(info, provider=provider_label, model=model_label)
        return info

    def _run_series(self, info: RunInfo) -> _RunSeries:
        """The label children a run of this agent, model and tool set writes, made and kept once."""
        agent, model = self._series(info)
        no_error = (n.OP_INVOKE_AGENT, info.provider, info.agent, info.model, n.NO_ERROR)
        duration = self.child(self.m.agent_duration, *no_error)  # at zero from the first run
        series: _RunSeries = (agent, model, duration, {})
        with self._lock:
            if len(self._runs) < MAX_RUN_SERIES:
                self._runs[(info.agent, info.task_type, info.provider, info.model, info.tools)] = series
        return series

    def _set_limit(self, agent: _AgentSeries, info: RunInfo, limit: str, value: float) -> None:
        """`agent_budget_limit`, set when it changes (runs of one agent mostly share their budget)."""
        if agent.limits.get(limit) == value:
            return
        self.child(self.m.budget_limit, info.agent, info.task_type, limit).set(value)
        agent.limits[limit] = value

    def child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once: the registry's lookup validates and locks each time.

        Label values here are already bounded (see the module's docstring), and
        the registry keeps every child it made anyway, so this holds no more.
        """
        key = (metric, labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def count_exports_of(self, signal: str) -> None:
        """Export attempts and failures of `signal` at zero together: failure ratios from the start."""
        self.m.export_failures.labels(signal)
        self.m.exports.labels(signal)

    def record_export_failure(self, signal: str) -> None:
        """Count a failed export of `signal` (traces or metrics)."""
        self.m.export_failures.labels(signal).inc()

    def record_export_attempt(self, signal: str) -> None:
        """Count an export of `signal` about to be tried, whatever its outcome (metrics: a scrape)."""
        self.m.exports.labels(signal).inc()
        if signal == n.SIGNAL_METRICS:
            self._scraped.set()

    def record_spans_dropped(self, count: int, reason: str = n.DROP_QUEUE_FULL) -> None:
        """Count spans that ended but will never be exported."""
        if count > 0:
            self.m.spans_dropped.labels(reason).inc(count)

    def record_events_dropped(self, count: int, reason: str = n.DROP_QUEUE_FULL) -> None:
        """Count content events that were emitted but will never be exported."""
        if count > 0:
            self.m.events_dropped.labels(reason).inc(count)

    def record_success_audit(self, agent: str, task_type: str, outcome: str) -> None:
        """Count an audit of a run that ended success: confirmed, false_success or error."""
        if outcome not in _AUDIT_OUTCOMES:
            raise ValueError(f"audit outcome {outcome!r} is not one of {', '.join(_AUDIT_OUTCOMES)}")
        self.m.success_audits.labels(*self.run_labels(agent, task_type), outcome).inc()

    def record_review_label(self, agent: str, task_type: str, label: str) -> None:
        """Count a label a person gave a run; a label that is not name-like counts as "other"."""
        labels = self.run_labels(agent, task_type)
        self.m.review_labels.labels(*labels, bounded_name(label, n.REVIEW_OTHER)).inc()

    def known_agents(self) -> list[tuple[str, str]]:
        """Every (agent, task_type) this process has started a run of."""
        with self._lock:
            return sorted(self._agents)

    def tool_label(self, agent: str, task_type: str, tool: str) -> str:
        """The tool's name when the agent is configured with it, else "other".

        A model may call a tool that does not exist: its made-up name never
        becomes a label value.
        """
        tool = label_value(tool)
        with self._lock:
            known = tool in self._tools.get((agent, task_type), ())
        return tool if known else n.TOOL_OTHER

    def error_label(self, provider: str, model: str, error_type: str) -> str:
        """The error type, or "_OTHER" past the first MAX_ERROR_TYPES_PER_MODEL of a model."""
        with self._lock:
            seen = self._errors.setdefault((provider, model), set())
            if error_type not in seen and len(seen) >= MAX_ERROR_TYPES_PER_MODEL:
                return n.ERROR_OTHER
            seen.add(error_type)
        return error_type

    def prepare_runs(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Every series of each (agent, task type) at zero now, before this process starts, resumes
        or recovers a run of it: a counter first read at N (runs recovered before the first scrape)
        is a new series to Prometheus, whose `increase()` counts nothing of those N."""
        for agent, task_type in pairs:
            self._agent_series(self.run_labels(agent, task_type))

    def scraped(self) -> bool:
        """Whether these metrics have been read (a scrape of /metrics) since the process started."""
        return self._scraped.is_set()

    def _agent_series(self, key: tuple[str, str]) -> _AgentSeries:
        agent = self._agents.get(key)
        if agent is None:
            agent = self.m.prepare_agent(*key)
            with self._lock:
                agent = self._agents.setdefault(key, agent)
        return agent

    def _series(self, info: RunInfo) -> tuple[_AgentSeries, _ModelSeries]:
        """The run's label children; the first run of an agent or model creates them all at zero."""
        agent = self._agent_series((info.agent, info.task_type))
        model = self.model_series(info.agent, info.task_type, info.provider, info.model)
        self._admit_tools(info)
        return agent, model

    def model_series(self, agent: str, task_type: str, provider: str, model: str) -> _ModelSeries:
        """The model-call series of an agent and task type's calls to a (bounded) provider and model;
        the first call makes them at zero."""
        model_key = (agent, task_type, provider, model)
        series = self._models.get(model_key)
        if series is None:
            series = self.m.prepare_model(*model_key)
            with self._lock:
                self._models[model_key] = series
        return series

    def _admit_tools(self, info: RunInfo) -> None:
        """The agent's tool names become label values (up to the cap), each outcome at zero."""
        with self._lock:
            seen = self._tools.setdefault((info.agent, info.task_type), set())
            room = MAX_TOOLS_PER_AGENT - len(seen)
            new = [t for t in dict.fromkeys(map(label_value, info.tools)) if t not in seen][: max(0, room)]
            seen.update(new)
        for tool in new:
            self.m.tool_duration.labels(n.OP_EXECUTE_TOOL, tool, n.NO_ERROR)
            for outcome in _TOOL_OUTCOMES:
                self.m.tool_calls.labels(info.agent, info.task_type, tool, outcome)


def _instruments(registry: CollectorRegistry) -> _Instruments:
    """Endstate's metrics in `registry`; a registry that has them already is a clear `ConfigError`."""
    _check_multiprocess_mode()
    try:
        return _Instruments(registry)
    except ValueError as exc:  # prometheus_client's DuplicateTimeseries
        raise ConfigError(
            f"the Prometheus registry already holds these metrics ({exc}): make one Telemetry per "
            "registry and share its hooks, or pass each its own CollectorRegistry()"
        ) from exc


def _check_multiprocess_mode() -> None:
    """prometheus_client in its multiprocess mode (PROMETHEUS_MULTIPROC_DIR set when it was imported,
    as a host app run by gunicorn sets it) keeps every value in a file of that directory: one that is
    not there was a FileNotFoundError traceback at setup. One that is there keeps no exemplar, so
    agent_run_active_seconds loses its trace links: said once."""
    if values.ValueClass is values.MutexValue:
        return
    legacy = os.environ.get("prometheus_multiproc_dir", "")  # noqa: SIM112 (the old name it still reads)
    directory = os.environ.get(n.ENV_PROMETHEUS_MULTIPROC_DIR) or legacy
    if not os.path.isdir(directory):
        raise ConfigError(
            f"{n.ENV_PROMETHEUS_MULTIPROC_DIR}={directory!r} is no directory: prometheus_client's "
            "multiprocess mode keeps every metric value in a file there. Create it, or unset the variable "
            "(Endstate serves each process's own metrics on its own port and needs no such directory)"
        )
    _say_multiprocess_once(directory)


_SAID_MULTIPROCESS = threading.Event()


def _say_multiprocess_once(directory: str) -> None:
    if not _SAID_MULTIPROCESS.is_set():
        _SAID_MULTIPROCESS.set()
        log.warning(
            "%s=%s: prometheus_client's multiprocess mode keeps no exemplars, so %s has no trace links; "
            "unset it for Endstate's processes to keep them (each process serves its own /metrics)",
            n.ENV_PROMETHEUS_MULTIPROC_DIR,
            directory,
            n.METRIC_RUN_ACTIVE_SECONDS,
        )


class _Instruments:
    """The metrics themselves, named and labelled as telemetry/names.py says."""

    def __init__(self, registry: CollectorRegistry) -> None:
        reason = (*_RUN_LABELS, n.LABEL_STOP_REASON)
        self.stops = Counter(
            n.METRIC_STOPS,
            "Run segments ended, by stop reason, the budget that ran out and who gave up.",
            [*reason, n.LABEL_STOP_LIMIT, n.LABEL_STOP_CAUSE],
            registry=registry,
        )
        self.runs_started = Counter(
            n.METRIC_RUNS_STARTED, "Runs started (first segments only).", _RUN_LABELS, registry=registry
        )
        self.cost_unknown = Counter(
            n.METRIC_COST_UNKNOWN,
            "Run segments whose cost is unknown: a model without a known price (never counted as $0).",
            _RUN_LABELS,
            registry=registry,
        )
        self.turns = _histogram(
            n.METRIC_RUN_TURNS,
            "Turns a run had taken when a segment ended.",
            reason,
            n.BUCKETS_RUN_TURNS,
            registry,
        )
        self.active = _histogram(
            n.METRIC_RUN_ACTIVE_SECONDS,
            "Active seconds (waits excluded) a run had used when a segment ended.",
            reason,
            n.BUCKETS_RUN_ACTIVE_SECONDS,
            registry,
        )
        self.tokens = _histogram(
            n.METRIC_RUN_TOKENS,
            "Tokens a run had used when a segment ended.",
            reason,
            n.BUCKETS_RUN_TOKENS,
            registry,
        )
        self.human_wait = _histogram(
            n.METRIC_HUMAN_WAIT_SECONDS,
            "Seconds a suspended run waited for a person.",
            (*_RUN_LABELS, n.LABEL_OUTCOME),
            n.BUCKETS_HUMAN_WAIT_SECONDS,
            registry,
        )
        self.verify_rejections = Counter(
            n.METRIC_VERIFY_REJECTIONS,
            "Finish calls whose verification failed.",
            _RUN_LABELS,
            registry=registry,
        )
        self.tool_calls = Counter(
            n.METRIC_TOOL_CALLS,
            "Tool calls, by tool and outcome.",
            (*_RUN_LABELS, n.LABEL_TOOL, n.LABEL_OUTCOME),
            registry=registry,
        )
        self.cost = Counter(
            n.METRIC_COST_USD,
            "US dollars spent, by the stop reason of the segment that spent it.",
            reason,
            registry=registry,
        )
        self.budget_limit = Gauge(
            n.METRIC_BUDGET_LIMIT,
            "Configured budget ceilings.",
            (*_RUN_LABELS, n.LABEL_LIMIT),
            registry=registry,
        )
        self.export_failures = Counter(
            n.METRIC_TELEMETRY_EXPORT_FAILURES,
            "Telemetry exports that failed (span batches for traces, pending-help reads for metrics, "
            "content event batches for logs).",
            (n.LABEL_SIGNAL,),
            registry=registry,
        )
        self.exports = Counter(
            n.METRIC_TELEMETRY_EXPORTS,
            "Telemetry exports tried (span batches for traces, pending-help reads for metrics, "
            "content event batches for logs).",
            (n.LABEL_SIGNAL,),
            registry=registry,
        )
        self.token_usage = _histogram(
            n.METRIC_GEN_AI_TOKEN_USAGE,
            "Input and output tokens per model call (GenAI semantic conventions).",
            (*_MODEL_LABELS, n.LABEL_GEN_AI_TOKEN_TYPE),
            n.BUCKETS_GEN_AI_TOKEN_USAGE,
            registry,
        )
        self.duration = _histogram(
            n.METRIC_GEN_AI_OPERATION_DURATION,
            "Seconds per model call attempt (GenAI semantic conventions).",
            (*_MODEL_LABELS, n.LABEL_ERROR_TYPE),
            n.BUCKETS_GEN_AI_OPERATION_DURATION,
            registry,
        )

        self.time_to_first_chunk = _histogram(
            n.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
            "Seconds from a streamed model call's start to its first chunk (GenAI semantic conventions).",
            _MODEL_LABELS,
            n.BUCKETS_GEN_AI_TIME_TO_FIRST_CHUNK,
            registry,
        )

        self.runs_resumed = Counter(
            n.METRIC_RUNS_RESUMED,
            "Run segments that resume one that ended need_help, cancelled or limit, by that segment's "
            "reason and how long before it stopped (at most 1h, 6h, older, or unknown).",
            (*_RUN_LABELS, n.LABEL_STOP_REASON, n.LABEL_STOPPED_AGO),
            registry=registry,
        )
        self.spans_dropped = Counter(
            n.METRIC_TELEMETRY_SPANS_DROPPED,
            "Spans ended but never exported (queue full, still queued at shutdown, or in a failed export).",
            (n.LABEL_REASON,),
            registry=registry,
        )
        self.events_dropped = Counter(
            n.METRIC_TELEMETRY_EVENTS_DROPPED,
            "Content events emitted but never exported (queue full, queued at shutdown, or a failed export).",
            (n.LABEL_REASON,),
            registry=registry,
        )
        self.success_audits = Counter(
            n.METRIC_SUCCESS_AUDITS,
            "Audits of runs that ended success: confirmed, false_success, or error.",
            (*_RUN_LABELS, n.LABEL_OUTCOME),
            registry=registry,
        )
        self.review_labels = Counter(
            n.METRIC_REVIEW_LABELS,
            "Labels given to runs by the people who reviewed them.",
            (*_RUN_LABELS, n.LABEL_REVIEW_LABEL),
            registry=registry,
        )
        self.agent_duration = _histogram(
            n.METRIC_GEN_AI_INVOKE_AGENT_DURATION,
            "Seconds per agent invocation, one per run segment (GenAI semantic conventions).",
            (*_GEN_AI_LABELS[:2], n.LABEL_GEN_AI_AGENT_NAME, _GEN_AI_LABELS[2], n.LABEL_ERROR_TYPE),
            n.BUCKETS_GEN_AI_INVOKE_AGENT_DURATION,
            registry,
        )
        self.tool_duration = _histogram(
            n.METRIC_GEN_AI_EXECUTE_TOOL_DURATION,
            "Seconds per tool execution (GenAI semantic conventions).",
            (n.LABEL_GEN_AI_OPERATION_NAME, n.LABEL_GEN_AI_TOOL_NAME, n.LABEL_ERROR_TYPE),
            n.BUCKETS_GEN_AI_EXECUTE_TOOL_DURATION,
            registry,
        )

    def prepare_agent(self, agent: str, task_type: str) -> _AgentSeries:
        """Every series of one agent and task type, created at zero."""
        a, t = agent, task_type
        for outcome in _WAIT_OUTCOMES:
            self.human_wait.labels(a, t, outcome)
        for reason in _RESUMABLE:
            for ago in n.STOPPED_AGO_VALUES:
                self.runs_resumed.labels(a, t, reason, ago)
        for outcome in _AUDIT_OUTCOMES:
            self.success_audits.labels(a, t, outcome)
        for label in n.REVIEW_LABELS:
            self.review_labels.labels(a, t, label)
        return _AgentSeries(
            runs_started=self.runs_started.labels(a, t),
            cost_unknown=self.cost_unknown.labels(a, t),
            rejections=self.verify_rejections.labels(a, t),
            stops={
                (r, lim, cause): self.stops.labels(a, t, r, lim, cause)
                for r in StopReason
                for lim in _limits_of(r)
                for cause in _causes_of(r)
            },
            by_reason={
                r: tuple(m.labels(a, t, r) for m in (self.turns, self.active, self.tokens, self.cost))
                for r in StopReason
            },
        )

    def prepare_model(self, agent: str, task_type: str, provider: str, model: str) -> _ModelSeries:
        """The model-call series of one agent and task type's calls to one provider and model, at zero."""
        gen_ai = (agent, task_type, n.OP_CHAT, provider, model)
        return _ModelSeries(
            tokens_in=self.token_usage.labels(*gen_ai, n.TOKEN_INPUT),
            tokens_out=self.token_usage.labels(*gen_ai, n.TOKEN_OUTPUT),
            duration_ok=self.duration.labels(*gen_ai, n.NO_ERROR),
            first_chunk=self.time_to_first_chunk.labels(*gen_ai),
        )


@dataclass(frozen=True)
class _AgentSeries:
    """Label children of one (agent, task_type), looked up once rather than per run."""

    runs_started: Any
    cost_unknown: Any
    rejections: Any
    stops: dict[tuple[str, str, str], Any]  # by (stop reason, stop limit, stop cause)
    by_reason: dict[str, tuple[Any, ...]]  # turns, active seconds, tokens, cost by stop reason
    limits: dict[str, float] = field(default_factory=dict)  # the budget ceilings last set, by limit


@dataclass(frozen=True)
class _ModelSeries:
    """Label children of one (agent, task_type, provider, model)."""

    tokens_in: Any
    tokens_out: Any
    duration_ok: Any
    first_chunk: Any


ToolSeries = dict[tuple[str, str, str], tuple[Any, Any]]  # (tool, outcome, error type): counter, duration
_RunSeries = tuple[_AgentSeries, _ModelSeries, Any, ToolSeries]  # agent duration's child without error


class _RunMetrics(RunObserver):
    """What one segment adds to the metrics; label children are looked up once."""

    def __init__(
        self,
        hooks: MetricsHooks,
        info: RunInfo,
        agent: _AgentSeries,
        model: _ModelSeries,
        duration: Any,
        tools: ToolSeries,
    ) -> None:
        self._hooks, self._info, self._agent, self._model = hooks, info, agent, model
        self._duration = duration
        self._tool_children = tools  # shared by the runs of one agent, model and tool set
        self._tool_t0: dict[str, float] = {}
        self._spent_before = info.spent.cost_usd if info.spent is not None else 0.0
        self._model_t0 = 0.0
        self._call: tuple[str, _ModelSeries] | None = None  # the open call's model, when not the run's
        self._t0 = time.perf_counter() - _observed_late(info)
        self._ended = False

    def model_started(self, request: ModelRequest, attempt: int) -> None:
        self._model_t0 = time.perf_counter()
        self._call = self._called(request.model) if request.model else None

    def _called(self, model: str) -> tuple[str, _ModelSeries]:
        """The label and series of a call to `model` (a foreign run's call to another model)."""
        info, label = self._info, self._model_label(model)
        return label, self._hooks.model_series(info.agent, info.task_type, info.provider, label)

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None:
        seconds = time.perf_counter() - self._model_t0 if self._model_t0 else 0.0
        self._model_t0, call, self._call = 0.0, self._call, None
        extra = reply.extra if reply is not None else None
        if extra and (told := extra.get(CALL_MODEL)):  # the call's model, told only by its reply
            call = self._called(told)
        label, model = call or (self._info.model, self._model)
        if reply is None:
            info, hooks = self._info, self._hooks
            error_type = hooks.error_label(info.provider, label, error_type_of(error))
            hooks.child(hooks.m.duration, *self._chat(label), error_type).observe(seconds)
            return
        model.duration_ok.observe(seconds)
        if extra and (BILLED_APART in extra or BILLED_BY_MODEL in extra):
            self._billed_tokens(reply, label)  # a few replies: calls billed apart, or parts of other models
        else:
            model.tokens_in.observe(reply.input_tokens)
            model.tokens_out.observe(reply.output_tokens)
            if reply.cache_read_input_tokens or reply.cache_creation_input_tokens:
                self._cache_tokens(reply, label)
        if reply.time_to_first_token is not None:
            model.first_chunk.observe(reply.time_to_first_token)

    def _billed_tokens(self, reply: ModelReply, label: str) -> None:
        """The tokens of a reply whose usage models billed part by part: each part one observation,
        under the model that served it (the requested model for parts that name none or name it),
        so the token metric sums to what the run's usage counts and prices. The parts are a
        server-side fallback's (the top-level usage split by model: `billed_by_model`) and the calls
        billed apart from the top-level usage (a server-side compaction, an advisor model's answer)."""
        hooks = self._hooks
        for part in [*(reply.billed_by_model or (reply,)), *reply.billed_apart]:
            model = label if part is reply else self._model_label(part.model)
            gen_ai = self._chat(model)
            hooks.child(hooks.m.token_usage, *gen_ai, n.TOKEN_INPUT).observe(part.input_tokens)
            hooks.child(hooks.m.token_usage, *gen_ai, n.TOKEN_OUTPUT).observe(part.output_tokens)
            self._cache_tokens(part, model)

    def _chat(self, model: str) -> tuple[str, str, str, str, str]:
        """The labels of this run's calls to `model` (a label): agent, task type and the GenAI ones."""
        info = self._info
        return (info.agent, info.task_type, n.OP_CHAT, info.provider, model)

    def _model_label(self, model: str) -> str:
        """The `gen_ai_request_model` of a part of a reply that names `model`: the run's own when it
        names none or the run's model (dated or not), else that model, bounded as a run's is."""
        run_model = self._info.model
        if not model or not isinstance(model, str) or _same_model(model, run_model):
            return run_model
        return self._hooks.model_labels(self._info.provider, model)[1]

    def _cache_tokens(self, reply: ModelReply, model: str) -> None:
        """The cache reads and writes of `reply`, each of its own token type, when it has any."""
        hooks = self._hooks
        for token_type, tokens in (
            (n.TOKEN_CACHE_READ, reply.cache_read_input_tokens),
            (n.TOKEN_CACHE_CREATION, reply.cache_creation_input_tokens),
        ):
            if tokens:
                hooks.child(hooks.m.token_usage, *self._chat(model), token_type).observe(tokens)

    def tool_started(self, call: ToolCall) -> None:
        self._tool_t0[call.id] = time.perf_counter()

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        t0 = self._tool_t0.pop(call.id, None)
        if outcome.is_error:
            key = (call.name, _tool_outcome(outcome), bounded_name(outcome.error_type, n.ERROR_TOOL))
        else:
            key = (call.name, n.TOOL_OK, n.NO_ERROR)
        children = self._tool_children.get(key) or self._tool_series(key)
        children[0].inc()
        if t0 is not None:  # an approved call run on resume has no start here
            children[1].observe(time.perf_counter() - t0)

    def _tool_series(self, key: tuple[str, str, str]) -> tuple[Any, Any]:
        name, outcome, error_type = key
        info, m = self._info, self._hooks.m
        tool = self._hooks.tool_label(info.agent, info.task_type, name)
        if error_type:
            error_type = self._hooks.error_label(n.OP_EXECUTE_TOOL, tool, error_type)
        children = (
            self._hooks.child(m.tool_calls, info.agent, info.task_type, tool, outcome),
            self._hooks.child(m.tool_duration, n.OP_EXECUTE_TOOL, tool, error_type),
        )
        if tool != n.TOOL_OTHER and len(self._tool_children) < MAX_TOOL_SERIES:
            self._tool_children[key] = children  # a configured tool's labels never change; "other" may
        return children

    def verified(self, failures: list[str]) -> None:
        if failures:
            self._agent.rejections.inc()

    def human_waited(self, wait: HumanWait) -> None:
        if self._hooks.local_pending is not None:
            self._hooks.local_pending.remove(self._info.run_id)
        if wait.outcome in _WAIT_OUTCOMES:
            info, hooks = self._info, self._hooks
            seconds = person_wait_seconds(wait)
            hooks.child(hooks.m.human_wait, info.agent, info.task_type, wait.outcome).observe(seconds)

    def run_ended(self, result: RunResult) -> None:
        if self._ended:
            return
        self._ended = True
        reason = _reason_of(result)
        limit = str(result.limit) if reason is StopReason.LIMIT and result.limit else n.NO_LIMIT
        self._agent.stops[reason, limit, stop_cause(result)].inc()
        turns, active, tokens, cost = self._agent.by_reason[reason]
        turns.observe(result.turns)
        active.observe(
            result.active_seconds, {n.EXEMPLAR_TRACE_ID: result.trace_id} if result.trace_id else None
        )
        usage = result.usage  # its fields read once, not through the result's properties
        tokens.observe(usage.input_tokens + usage.output_tokens)
        self._count_cost(cost, usage.cost_usd)
        self._agent_duration(reason, result.error_type)
        if reason is StopReason.NEED_HELP and result.suspension and self._hooks.local_pending is not None:
            s, info = result.suspension, self._info
            self._hooks.local_pending.add(
                result.run_id, info.agent, info.task_type, s.suspended_at, s.deadline
            )

    def run_taken_over(self, result: RunResult) -> None:
        """Another worker took the run over: no stop of the run (that worker counts its end), so no
        stop, and none of the run histograms, which take a run's totals at a stop. What this segment
        spent was spent: it is counted, under the segment's reason (`cancelled`)."""
        if self._ended:
            return
        self._ended = True
        self._count_cost(self._agent.by_reason[_reason_of(result)][3], result.usage.cost_usd)

    def _count_cost(self, cost: Any, spent: float | None) -> None:
        """What this segment spent, on `cost`; an unknown cost is counted as unknown, not as $0."""
        if spent is not None:
            cost.inc(max(0.0, spent - self._spent_before))
        else:
            self._agent.cost_unknown.inc()

    def _agent_duration(self, reason: StopReason, error_type: str | None) -> None:
        """`gen_ai.invoke_agent.duration` of this segment; `error.type` only for an `error` stop."""
        seconds = time.perf_counter() - self._t0
        if reason is not StopReason.ERROR:
            self._duration.observe(seconds)
            return
        info = self._info
        label = self._hooks.error_label(info.provider, info.model, bounded_name(error_type, str(reason)))
        series = (n.OP_INVOKE_AGENT, info.provider, info.agent, info.model, label)
        self._hooks.child(self._hooks.m.agent_duration, *series).observe(seconds)


class _HelpCollector(Collector):
    """`agent_help_pending` and `agent_help_oldest_pending_seconds`, computed at scrape time."""

    def __init__(
        self, source: PendingSource, known: Any, on_error: Any, on_attempt: Any, labels: _LabelPairs
    ) -> None:
        self._source, self._known, self._on_error, self._on_attempt = source, known, on_error, on_attempt
        self._labels = labels  # MetricsHooks.run_labels: a store's task types are bounded like a run's

    def describe(self) -> Iterable[Metric]:
        return list(_help_families())

    def collect(self) -> Iterator[Metric]:
        self._on_attempt(n.SIGNAL_METRICS)
        try:
            rows = list(self._source())
        except Exception:
            log.warning("the pending help source failed; help gauges left out of this scrape", exc_info=True)
            self._on_error(n.SIGNAL_METRICS)
            return
        now = time.time()
        counts = dict.fromkeys(self._known(), 0)
        began: dict[tuple[str, str], float] = {}  # the oldest known start of each group's requests
        for row in rows:
            key, since = self._labels(row[0], row[1]), float(row[-1])
            many = int(row[2]) if len(row) == 4 else 1  # a group, or one request
            counts[key] = counts.get(key, 0) + many
            if since > 0:  # a store may not know when a request began
                began[key] = min(began.get(key, since), since)
        pending, oldest = _help_families()
        for key, count in sorted(counts.items()):
            pending.add_metric(list(key), count)
            oldest.add_metric(list(key), max(0.0, now - began[key]) if key in began else 0.0)
        yield pending
        yield oldest


def _help_families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
    labels = list(_RUN_LABELS)
    return (
        GaugeMetricFamily(n.METRIC_HELP_PENDING, "Help requests waiting for a person.", labels=labels),
        GaugeMetricFamily(
            n.METRIC_HELP_OLDEST_PENDING_SECONDS,
            "Age of the oldest help request still waiting.",
            labels=labels,
        ),
    )


def _histogram(
    name: str, doc: str, labels: Iterable[str], buckets: Iterable[float], registry: CollectorRegistry
) -> Histogram:
    return Histogram(name, doc, tuple(labels), registry=registry, buckets=tuple(buckets))


def _causes_of(reason: StopReason) -> list[str]:
    return [str(c) for c in StopCause] if reason is StopReason.GAVE_UP else [""]


def _reason_of(result: RunResult) -> StopReason:
    """The result's stop reason as the enum (a result built by hand may hold its text)."""
    return result.reason if type(result.reason) is StopReason else StopReason(result.reason)


def stop_cause(result: RunResult) -> str:
    """The `stop_cause` label: who gave up (an agent's own give-up when none is said), else empty."""
    if result.reason is not StopReason.GAVE_UP:
        return ""
    return str(result.cause or StopCause.AGENT)


def _limits_of(reason: StopReason) -> list[str]:
    return [str(k) for k in LimitKind] if reason is StopReason.LIMIT else [n.NO_LIMIT]


def _observed_late(info: RunInfo) -> float:
    """Seconds of a replayed segment (see `RunInfo.replayed`) that passed before it was observed
    here: its duration runs from its start. Wall clocks of two hosts: close, not exact."""
    return max(0.0, time.time() - info.started_at) if info.replayed and info.started_at > 0 else 0.0


def _same_model(a: str, b: str) -> bool:
    """Whether two model ids name one model: equal, or one the other with its date ("-20250929")."""
    return a == b or bool(_DATED.fullmatch(a.removeprefix(b)) or _DATED.fullmatch(b.removeprefix(a)))


def _tool_outcome(outcome: ToolOutcome) -> str:
    if not outcome.is_error:
        return n.TOOL_OK
    return (
        n.TOOL_TIMEOUT if outcome.error_type == n.TOOL_TIMEOUT else n.TOOL_ERROR
    )  # agent.tools says "timeout"


# -- serving ---------------------------------------------------------------


@dataclass
class MetricsServer:
    """A running metrics endpoint; `close()` stops it."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    @property
    def url(self) -> str:
        host = str(self.server.server_address[0])
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(port: int, registry: CollectorRegistry, addr: str = "127.0.0.1") -> MetricsServer:
    """Serve `registry` on `addr:port` (port 0 picks a free one) in a daemon thread.

    Text format 0.0.4 by default; OpenMetrics, with exemplars, when the
    request's Accept header asks for `application/openmetrics-text`, as
    Prometheus does when started with `--enable-feature=exemplar-storage`.
    An Accept header prometheus_client cannot read is read as `negotiable` says.
    """
    found = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, sockaddr = found[0]  # as prometheus_client's own server: an IPv6 address binds
    server_class = type("MetricsWSGIServer", (ThreadingWSGIServer,), {"address_family": family})
    server: WSGIServer = make_server(
        str(sockaddr[0]), port, _negotiating(make_wsgi_app(registry)), server_class, _Quiet
    )
    thread = threading.Thread(target=server.serve_forever, name="endstate-metrics", daemon=True)
    thread.start()
    return MetricsServer(server, thread)


class _Quiet(WSGIRequestHandler):
    """A request handler that logs no line per scrape."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _negotiating(app: WSGIApplication) -> WSGIApplication:
    """`app` with its request's Accept header made `negotiable` first."""

    def negotiated(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if "HTTP_ACCEPT" in environ:
            environ["HTTP_ACCEPT"] = negotiable(environ["HTTP_ACCEPT"])
        return app(environ, start_response)

    return negotiated


_VERSION = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9}){0,3}")  # a format's version: 1.0.0


def negotiable(accept: str) -> str:
    """A scraper's `Accept` header as prometheus_client can choose a /metrics format from it: each
    `version=` that is not whole numbers and dots (`version=x`, `version=1.a`) dropped, so the format
    is chosen as for none; a header it still cannot read, none at all (the text format). It compares
    such a version with numbers: a TypeError, a 500 (and a traceback) to a request needing no token."""
    kinds = accept.split(",")
    cleaned = ",".join(";".join(p for p in kind.split(";") if not _bad_version(p)) for kind in kinds)
    try:
        choose_encoder(cleaned)
    except Exception:  # whatever else a later prometheus_client cannot read
        return ""
    return cleaned


def _bad_version(param: str) -> bool:
    key, _, value = param.strip().partition("=")
    return key == "version" and not _VERSION.fullmatch(value)
