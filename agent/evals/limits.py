"""Choose budgets from the runs that succeeded, never "200 just in case".

For each task type and each budget (turns, active seconds, tokens, cost), the
suggested ceiling is the larger of 1.5 x the 95th percentile and 1.25 x the
longest successful run, rounded up to a round number (1, 1.2, 1.5, 2, 2.5, 3,
4, 5, 6, 8 times a power of ten). So it sits above every successful run and
stays within about twice the longest one: when 95% of successful runs need at
most 14 turns and the longest needs 19, it suggests 25. (A time ceiling is
never under one second.) When one far-out success sets a ceiling (the longest
over 3 x the 95th percentile; among fewer than 20 runs, where that percentile is
the longest run itself, over 3 x the 95th percentile of the others), a note says
so and what the percentile alone would give: the ceiling stays above it, and a
person decides. A task type with no successful run gets no suggestion: failures
say nothing about what the task needs.

A run whose cost is unknown (a model without a known price) is left out of the
cost ceiling, never counted as $0; the suggestion says how many were.

Reviews (`endstate review label`) are evidence too: a success labelled
`false_success` is left out of the successful runs (so is a success that
`endstate eval --json` calls a false success: the eval's independent check
disagreed; or whose case expects another end), and a limit stop labelled `limit_too_low` puts that budget's
ceiling above what the run had used.

The history comes from run results, a JSON Lines file (`endstate demo --json`,
`endstate eval --json`), the run store, or Prometheus (`PrometheusHistory`,
whose numbers are approximations at bucket resolution; see its docstring).
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from agent._valid import is_finite_from_zero
from agent.budget import MAX_COUNT, MAX_FLOAT, MAX_SECONDS
from agent.durable.store.urls import secrets_in, shown_url
from agent.errors import EndstateError
from agent.result import LimitKind, RunResult, StopReason
from agent.text import one_line

KINDS = (LimitKind.TURNS, LimitKind.SECONDS, LimitKind.TOKENS, LimitKind.COST)
ROUND_STEPS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
FEW_SUCCESSES = 20
OUTLIER = 3.0  # a longest success this many times the 95th percentile is named as an outlier
FLOORS = {LimitKind.SECONDS: 1.0}  # a time ceiling under a second would stop runs on jitter alone
_NOT_ENDS = (StopReason.NEED_HELP, StopReason.CANCELLED)  # a run in these states has not ended

log = logging.getLogger("endstate.limits")


class LimitsError(EndstateError):
    """The history cannot be read; the message says from where and why."""


# -- the math -------------------------------------------------------------------------


@dataclass(frozen=True)
class Headroom:
    """How far above the successful runs the ceiling goes."""

    quantile: float = 0.95
    over_quantile: float = 1.5
    over_longest: float = 1.25


@dataclass(frozen=True)
class Observed:
    """One budget's use over a task type's successful runs.

    `past_top`: runs past a histogram's largest bucket (Prometheus), whose size is unknown: then
    `longest` is that bucket's bound, a floor, and no ceiling can be read above the runs.
    `others`: the quantile of the runs but the longest one (None: unknown, or no other run), which
    shows an outlier among few runs, where the 95th percentile is the longest run itself.
    """

    count: int
    quantile: float
    longest: float
    past_top: int = 0
    others: float | None = None


@dataclass(frozen=True)
class Ceiling:
    """A suggested ceiling for one budget, with what it was read from."""

    kind: LimitKind
    observed: Observed
    suggested: float


def nearest_rank(values: Iterable[float], q: float) -> float:
    """The smallest value that at least a share `q` of `values` do not exceed."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def round_up(value: float) -> float:
    """The next round number at or above `value` (steps of at most a third)."""
    if value <= 0:
        return 0.0
    exponent = math.floor(math.log10(value))
    digits = 12 - exponent  # twelve significant digits, whatever the scale (a cost of 1e-13 too)
    steps = (round(s * 10.0**exponent, digits) for s in ROUND_STEPS)
    return next((s for s in steps if s >= value * (1 - 1e-12)), value)


def suggest_ceiling(kind: LimitKind, observed: Observed, headroom: Headroom = Headroom()) -> Ceiling | None:
    """The ceiling for one budget; None when the successful runs used none of it."""
    if observed.count == 0 or observed.longest <= 0 or observed.past_top:
        return None
    quantile = observed.quantile if math.isfinite(observed.quantile) else 0.0  # unknown: the longest alone
    raw = max(quantile * headroom.over_quantile, observed.longest * headroom.over_longest)
    suggested = _within(kind, max(round_up(raw), FLOORS.get(kind, 0.0)))
    return None if suggested is None else Ceiling(kind, observed, suggested)


_WHOLE = (LimitKind.TURNS, LimitKind.TOKENS)


BOUNDS = {
    LimitKind.TURNS: MAX_COUNT,
    LimitKind.SECONDS: MAX_SECONDS,
    LimitKind.TOKENS: MAX_COUNT,
    LimitKind.COST: MAX_FLOAT,
}  # the most a Budget takes of each


def _within(kind: LimitKind, value: float) -> float | None:
    """`value` as a ceiling of `kind` (whole for turns and tokens); None past what a Budget takes
    (64 bits, a year, a float). Such a ceiling comes from a run that claims to have used that much
    (a corrupt or forged record): cut to the bound, it sat below that very run, so it is no advice."""
    if not math.isfinite(value):
        return None
    value = math.ceil(value) if kind in _WHOLE else value
    return value if value <= BOUNDS[kind] else None


# -- what the suggestion would have changed ---------------------------------------------


@dataclass(frozen=True)
class Changes:
    """Past stops the suggested ceilings would have changed.

    `sooner`: limit stops that ran past a suggested ceiling, so they would have
    stopped earlier. `more_room`: limit stops below every suggested ceiling,
    so they would have been let go on (to an outcome no one can know). `cut`:
    runs that ended otherwise (gave_up, no_progress, ...) after passing a
    suggested ceiling, so they would have ended as limit instead.
    """

    limit_stops: int
    sooner: int
    more_room: int
    cut: int
    approximate: bool = False

    @property
    def changed(self) -> int:
        return self.sooner + self.more_room


# -- histories ------------------------------------------------------------------------


class History(Protocol):
    """Past runs, per task type, as the suggestion needs them."""

    def task_types(self) -> list[str]: ...

    def stops(self, task_type: str) -> dict[str, int]: ...

    def agents(self, task_type: str) -> dict[str, int]:
        """Ended runs of the task type by agent ({} when the history does not say)."""
        ...

    def observed(self, task_type: str, kind: LimitKind, q: float) -> Observed | None: ...

    def changes(self, task_type: str, ceilings: Mapping[LimitKind, float]) -> Changes: ...

    def reviewed(self, task_type: str) -> Reviewed: ...

    def unknown(self, task_type: str, kind: LimitKind) -> int:
        """Successful runs left out of `kind`'s ceiling because their use of it is unknown."""
        ...


@dataclass(frozen=True)
class Reviewed:
    """What people's labels say about a task type's runs."""

    false_successes: int = 0  # successes labelled false_success (left out of the successful runs)
    too_low: Mapping[LimitKind, float] = field(default_factory=dict)  # the most a limit_too_low run used


FALSE_SUCCESS = "false_success"
LIMIT_TOO_LOW = "limit_too_low"


@dataclass(frozen=True)
class PastRun:
    """What the suggestion needs of one ended run."""

    task_type: str
    reason: StopReason
    limit: LimitKind | None = None
    turns: float = 0.0
    seconds: float = 0.0
    tokens: float = 0.0
    cost: float | None = 0.0  # None when unknown (a model without a known price)
    run_id: str | None = None
    label: str | None = None  # the latest review label, when a person gave one
    agent: str | None = None  # the agent that ran it, when the record says

    def used(self, kind: LimitKind) -> float | None:
        """How much of a budget the run used; None when that is unknown (its cost, say)."""
        value = getattr(self, str(kind))
        return None if value is None else float(value)

    @property
    def succeeded(self) -> bool:
        """A success no reviewer called false."""
        return self.reason is StopReason.SUCCESS and self.label != FALSE_SUCCESS

    @classmethod
    def from_result(cls, r: RunResult) -> PastRun:
        return cls.from_dict(r.to_dict())

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PastRun:
        """From `RunResult.to_dict()`, a JSON line of `endstate demo --json`, or a store record."""
        limit = d.get("limit", d.get("stop_limit"))
        task_type = d["task_type"]
        if not isinstance(task_type, str) or not task_type:
            raise ValueError(f"task_type must be a non-empty string, not {task_type!r:.60}")
        return cls(
            task_type=task_type,
            reason=StopReason(d.get("reason") or d["stop_reason"]),
            limit=LimitKind(limit) if limit and limit != "none" else None,
            turns=_count(d, "turns"),
            seconds=_amount(d, "active_seconds"),
            tokens=_count(d, "input_tokens") + _count(d, "output_tokens"),
            cost=None if "cost_usd" in d and d["cost_usd"] is None else _amount(d, "cost_usd"),
            run_id=d.get("run_id"),
            label=d.get("label"),
            agent=d["agent"] if isinstance(d.get("agent"), str) else None,
        )


def _amount(d: Mapping[str, Any], key: str) -> float:
    """How much of a budget a run used: a finite number from 0 (missing or null: 0)."""
    value = d.get(key)
    if value is None:
        return 0.0
    if not is_finite_from_zero(value):
        raise ValueError(f"{key} must be a number from 0 up, not {value!r:.60}")
    return float(value)


def _count(d: Mapping[str, Any], key: str) -> float:
    """A count a run used (turns, tokens): a whole number from 0 to 2**63 - 1, as a store and a
    provider hold it (5.0 is read as 5; missing or null: 0). 2.5 turns sized a ceiling before."""
    value = d.get(key)
    if value is None:
        return 0.0
    if not is_finite_from_zero(value) or value != int(value) or int(value) > MAX_COUNT:
        raise ValueError(f"{key} must be a whole number from 0 to 2**63 - 1, not {value!r:.60}")
    return float(value)


@dataclass
class RecordHistory:
    """Exact history from per-run records. A run seen twice (its segments) counts once, as its last."""

    runs: list[PastRun] = field(default_factory=list)

    def __post_init__(self) -> None:
        last = {r.run_id or f"#{i}": r for i, r in enumerate(self.runs)}
        self.runs = [r for r in last.values() if r.reason not in _NOT_ENDS]

    def task_types(self) -> list[str]:
        return sorted({r.task_type for r in self.runs})

    def stops(self, task_type: str) -> dict[str, int]:
        return dict(Counter(str(r.reason) for r in self._of(task_type)))

    def agents(self, task_type: str) -> dict[str, int]:
        return dict(Counter(r.agent for r in self._of(task_type) if r.agent))

    def observed(self, task_type: str, kind: LimitKind, q: float) -> Observed | None:
        used = (r.used(kind) for r in self._of(task_type) if r.succeeded)
        values = [v for v in used if v is not None]  # an unknown cost is left out, never $0
        if not values:
            return None
        others = nearest_rank(sorted(values)[:-1], q) if len(values) > 1 else None
        return Observed(len(values), nearest_rank(values, q), max(values), others=others)

    def unknown(self, task_type: str, kind: LimitKind) -> int:
        """Successful runs whose use of `kind` is unknown (their cost, when a price was missing)."""
        return sum(r.used(kind) is None for r in self._of(task_type) if r.succeeded)

    def reviewed(self, task_type: str) -> Reviewed:
        runs = self._of(task_type)
        false = sum(r.reason is StopReason.SUCCESS and r.label == FALSE_SUCCESS for r in runs)
        too_low: dict[LimitKind, float] = {}
        for r in runs:
            if r.reason is not StopReason.LIMIT or r.limit is None or r.label != LIMIT_TOO_LOW:
                continue
            if (used := r.used(r.limit)) is not None:  # an unknown cost says nothing about the ceiling
                too_low[r.limit] = max(too_low.get(r.limit, 0.0), used)
        return Reviewed(false, too_low)

    def changes(self, task_type: str, ceilings: Mapping[LimitKind, float]) -> Changes:
        def past(r: PastRun) -> bool:
            return any((u := r.used(k)) is not None and u > c for k, c in ceilings.items())

        limits = [r for r in self._of(task_type) if r.reason is StopReason.LIMIT]
        sooner = sum(past(r) for r in limits)
        room = sum(not past(r) and _below_own_ceiling(r, ceilings) for r in limits)
        others = [r for r in self._of(task_type) if r.reason not in (StopReason.LIMIT, StopReason.SUCCESS)]
        return Changes(len(limits), sooner, room, sum(past(r) for r in others))

    def _of(self, task_type: str) -> list[PastRun]:
        return [r for r in self.runs if r.task_type == task_type]


def _below_own_ceiling(run: PastRun, ceilings: Mapping[LimitKind, float]) -> bool:
    """A limit stop that had used less of its budget than the suggested ceiling allows."""
    if run.limit is None or run.limit not in ceilings:
        return False
    used = run.used(run.limit)
    return used is not None and used < ceilings[run.limit]


# -- the suggestion -------------------------------------------------------------------


@dataclass(frozen=True)
class Suggestion:
    """The ceilings for one task type, or why there are none."""

    task_type: str
    stops: dict[str, int]
    ceilings: tuple[Ceiling, ...] = ()
    changes: Changes | None = None
    notes: tuple[str, ...] = ()
    unknown_cost: int = 0  # successful runs of unknown cost, left out of the cost ceiling

    @property
    def successes(self) -> int:
        return self.stops.get(str(StopReason.SUCCESS), 0)

    def ceiling(self, kind: LimitKind) -> float | None:
        return next((c.suggested for c in self.ceilings if c.kind is kind), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_type": self.task_type,
            "stops": self.stops,
            "ceilings": {
                str(c.kind): {
                    "suggested": _number(c.kind, c.suggested),
                    "successes": c.observed.count,
                    "p95": _number(c.kind, c.observed.quantile),
                    "longest": _number(c.kind, c.observed.longest),
                }
                for c in self.ceilings
            },
            "changes": {**self.changes.__dict__, "changed": self.changes.changed} if self.changes else None,
            "notes": list(self.notes),
            "unknown_cost": self.unknown_cost,
        }


def _number(kind: LimitKind, value: float) -> float | int | None:
    """A whole count of turns or tokens as a JSON integer (`25`, not `25.0`: `Budget` takes no
    float for them); a value not known (Prometheus's NaN percentile) as null, which standard JSON
    holds (`NaN` is refused by jq, JSON.parse and Go); anything else as it is."""
    if not math.isfinite(value):
        return None
    return int(value) if kind in _WHOLE and value == int(value) else value


def suggest(history: History, headroom: Headroom = Headroom()) -> list[Suggestion]:
    """A suggestion per task type in the history."""
    return [suggest_one(history, t, headroom) for t in history.task_types()]


def suggest_one(history: History, task_type: str, headroom: Headroom = Headroom()) -> Suggestion:
    stops = history.stops(task_type)
    ended = sum(stops.values())
    reviewed = history.reviewed(task_type)
    if stops.get(str(StopReason.SUCCESS), 0) <= reviewed.false_successes:
        seen = ", ".join(f"{n} {r}" for r, n in sorted(stops.items())) or "none"
        false = (
            f", {reviewed.false_successes} of them labelled false_success" if reviewed.false_successes else ""
        )
        why = (
            f"no successful run among {ended} ({seen}{false}): ceilings are read from successful runs "
            "only, so none is suggested. Make some runs of this task succeed first."
        )
        return Suggestion(
            task_type, stops, notes=(why, *_review_notes(reviewed, ()), *_mixed(history, task_type))
        )
    found = [(k, history.observed(task_type, k, headroom.quantile)) for k in KINDS]
    ceilings = tuple(c for k, o in found if o and (c := suggest_ceiling(k, o, headroom)))
    ceilings = tuple(above_too_low(c, reviewed, headroom) for c in ceilings)
    changes = history.changes(task_type, {c.kind: c.suggested for c in ceilings})
    unknown = history.unknown(task_type, LimitKind.COST)
    successes = stops.get(str(StopReason.SUCCESS), 0) - reviewed.false_successes
    notes = _notes(successes, found, ceilings, unknown) + _outliers(ceilings, headroom)
    notes += _review_notes(reviewed, ceilings) + _mixed(history, task_type)
    return Suggestion(task_type, stops, ceilings, changes, notes, unknown)


def _mixed(history: History, task_type: str) -> tuple[str, ...]:
    """A note when runs of more than one agent share the task type: a Budget is one agent's."""
    agents = history.agents(task_type)
    if len(agents) < 2:
        return ()
    each = ", ".join(f"{one_line(a)} {n}" for a, n in sorted(agents.items()))  # names from a file: escaped
    return (
        f"runs of {len(agents)} agents share this task type ({each}): a Budget is one agent's, and these "
        "ceilings come from all of them. Pass --agent NAME to read one agent's runs",
    )


def only_agent(history: RecordHistory, agent: str, source: str) -> RecordHistory:
    """The runs of `agent` alone; an agent with none is refused, naming the agents there are."""
    runs = [r for r in history.runs if r.agent == agent]
    if not runs:
        known = ", ".join(sorted({one_line(r.agent) for r in history.runs if r.agent})) or "none named"
        raise LimitsError(f"no runs of agent {one_line(agent)} in {source}; there are: {known}")
    return RecordHistory(runs)


def above_too_low(ceiling: Ceiling, reviewed: Reviewed, headroom: Headroom = Headroom()) -> Ceiling:
    """The ceiling, raised above the most a run labelled `limit_too_low` used of its budget."""
    used = reviewed.too_low.get(ceiling.kind)
    if used is None or ceiling.suggested > used:
        return ceiling
    rounded = round_up(used * headroom.over_longest)
    raised = _within(ceiling.kind, rounded if rounded > used else used * headroom.over_longest)
    return ceiling if raised is None else replace(ceiling, suggested=raised)  # None: see its note


def _outliers(ceilings: tuple[Ceiling, ...], headroom: Headroom) -> tuple[str, ...]:
    """A note for each ceiling that one far-out success sets (its longest run over `OUTLIER` x p95,
    or among few runs x the others' p95), and that would be lower without it."""
    notes = []
    for c in ceilings:
        o = c.observed
        typical, of = _typical(o)
        if o.count > 1 and 0 < typical * OUTLIER < o.longest:
            alone = suggest_ceiling(c.kind, Observed(o.count, typical, typical), headroom)
            if alone is not None and alone.suggested >= c.suggested:
                continue  # the same ceiling without it (a floor, one round number): it sets nothing
            notes.append(
                f"{c.kind}: the longest successful run ({_fmt(c.kind, o.longest)}) is "
                f"{o.longest / typical:.0f}x the 95th percentile{of} ({_fmt(c.kind, typical)}): an outlier "
                f"sets this ceiling. Look at that run (`endstate review`); from the 95th percentile{of} "
                f"alone it would be {_fmt(c.kind, alone.suggested if alone else typical)}"
            )
    return tuple(notes)


def _typical(o: Observed) -> tuple[float, str]:
    """What the longest run is set against: the 95th percentile, or among few runs (where that is
    the longest run itself) the 95th percentile of the others, with words saying which."""
    if o.others is None or o.quantile < o.longest:
        return o.quantile, ""
    return o.others, " of the other successful runs"


def _review_notes(reviewed: Reviewed, ceilings: tuple[Ceiling, ...]) -> tuple[str, ...]:
    notes = []
    if reviewed.false_successes:
        notes.append(
            f"{reviewed.false_successes} success(es) labelled false_success left out of the successful runs "
            "(by a reviewer, or by an eval case that did not accept it: a false success, one its case did "
            "not expect, one its judge could not check or its deadline cut)"
        )
    for kind, used in sorted(reviewed.too_low.items()):
        shown = next((c.suggested for c in ceilings if c.kind is kind), None)
        where = f"the {kind} ceiling is above it ({_fmt(kind, shown)})" if shown is not None else "no ceiling"
        if shown is not None and shown <= used:
            where = f"more than a Budget holds: the {kind} ceiling ({_fmt(kind, shown)}) is not above it"
        notes.append(f"runs labelled limit_too_low used up to {_fmt(kind, used)}: {where}")
    return tuple(notes)


def _notes(
    successes: int,
    found: list[tuple[LimitKind, Observed | None]],
    ceilings: tuple[Ceiling, ...],
    unknown_cost: int = 0,
) -> tuple[str, ...]:
    """What to know about the ceilings read from `successes` successful runs (none labelled false)."""
    notes = []
    if successes < FEW_SUCCESSES:
        notes.append(
            f"only {successes} successful run(s): the 95th percentile is rough; "
            "revisit these ceilings with more history"
        )
    suggested = {c.kind for c in ceilings}
    past = [(k, o) for k, o in found if o is not None and o.past_top]
    notes += [
        f"{k}: {o.past_top} successful run(s) went past the histogram's largest bucket ({o.longest:g}) by "
        "an amount Prometheus cannot tell: no ceiling can be read above them here. Read it from the run "
        "store (--store), or widen that histogram's buckets"
        for k, o in past
    ]
    beyond = [(k, o) for k, o in found if o and k not in suggested and o.longest > 0 and not o.past_top]
    notes += [
        f"{k}: the longest successful run used {_fmt(k, o.longest)}, more than a Budget holds "
        f"({_fmt(k, BOUNDS[k])}): no ceiling suggested. Look at that run's record: no run of this task "
        "should use that much (a corrupt or forged record?)"
        for k, o in beyond
    ]
    notes += [
        f"{c.kind}: Prometheus gave no 95th percentile (histogram_quantile: NaN or Inf): the ceiling is "
        "read from the longest run alone"
        for c in ceilings
        if not math.isfinite(c.observed.quantile)
    ]
    skip = {k for k, _ in past + beyond} | ({LimitKind.COST} if unknown_cost else set())
    missing = [str(k) for k, _ in found if k not in suggested and k not in skip]
    if missing:
        notes.append(f"no suggestion for {', '.join(missing)}: not recorded in this history")
    if unknown_cost:
        none = "" if LimitKind.COST in suggested else "; no run of known cost is left, so no cost ceiling"
        notes.append(
            f"{unknown_cost} successful run(s) of unknown cost (a model without a known price) "
            f"left out of the cost ceiling{none}"
        )
    return tuple(notes)


# -- sources --------------------------------------------------------------------------


def history_from_results(results: Iterable[RunResult]) -> RecordHistory:
    return RecordHistory([PastRun.from_result(r) for r in results])


MAX_LINE = 64 * 2**20  # bytes of one JSON line: /dev/zero was one line read until memory ran out


def lines_of(file: Any, source: str) -> Iterator[bytes]:
    """The lines of a binary `file`, each read up to MAX_LINE bytes; a longer one is refused."""
    for number in itertools.count(1):
        line = file.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE:
            raise LimitsError(f"{source}, line {number}: longer than {MAX_LINE} bytes: not a run record")
        yield line


def history_from_jsonl(lines: Iterable[str | bytes], source: str = "<input>") -> RecordHistory:
    """Runs from JSON Lines: `endstate demo --json` rows or `endstate eval --json` case lines.
    Lines read as bytes are decoded one by one, so a line that is not UTF-8 is named."""
    runs: list[PastRun] = []
    for number, line in enumerate(lines, 1):
        try:
            text = line.decode() if isinstance(line, bytes) else line
            if text.strip():
                runs += [PastRun.from_dict(row) for row in _rows(json.loads(text))]
        except (ValueError, KeyError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
            raise LimitsError(f"{source}, line {number}: not a run record: {exc}") from exc
        except RecursionError:  # json's parser past its depth: a traceback, before
            raise LimitsError(f"{source}, line {number}: not a run record: nested too deeply") from None
    return RecordHistory(runs)


def _rows(obj: Any) -> list[dict[str, Any]]:
    if isinstance(obj, dict) and "each_round" in obj:  # `eval --repeat`: every round's run
        rounds = obj["each_round"]
        if not isinstance(rounds, list) or not all(_a_round(r) for r in rounds):
            raise ValueError("each_round must be a list of eval case objects (with segments, no each_round)")
        return [row for r in rounds for row in _rows(r)]
    if isinstance(obj, dict) and "segments" in obj:
        segments = obj["segments"]
        if not isinstance(segments, list) or not all(isinstance(s, dict) for s in segments):
            raise ValueError("segments must be a list of JSON objects")
        rows = [{"task_type": obj["task_type"], **s} for s in segments]
        unchecked = _unjudgeable(rows[-1]) if rows else False
        false = obj.get("false_success") is True or _judged_wrong(rows) or _not_to_succeed(obj)
        if rows and (false or unchecked or _cut(obj)):
            rows[-1]["label"] = FALSE_SUCCESS  # the eval's own check, or its case, says it is false
        return rows
    if isinstance(obj, dict) and ("reason" in obj or "stop_reason" in obj):
        return [obj]
    return []  # a summary line or anything else that is not a run


def _a_round(obj: Any) -> bool:
    """One round of a repeated eval case: a case object with its segments, not rounds again."""
    return isinstance(obj, dict) and "segments" in obj and "each_round" not in obj


def _judged_wrong(segments: list[dict[str, Any]]) -> bool:
    """A judge found something wrong after one of the case's segments: a false success, whatever the
    line's `false_success` says (a file of an older version, which counted the last segment's judges
    only, or one edited by hand)."""
    return any(s.get("judge_failures") for s in segments)


def _unjudgeable(segment: Mapping[str, Any]) -> bool:
    """A segment whose judge raised: its success, if any, was never checked, so it sizes nothing."""
    return bool(segment.get("judge_errors"))


def _cut(case: Mapping[str, Any]) -> bool:
    """An eval case line its deadline cut before its judges were done (`timed_out`, in any phase but
    `cleanup`): its success, if any, was never checked, so it sizes nothing."""
    timed_out = case.get("timed_out")
    return isinstance(timed_out, dict) and timed_out.get("phase") != "cleanup"


def _not_to_succeed(case: Mapping[str, Any]) -> bool:
    """An eval case line whose run ended in success where the case expects another end (a promoted
    `false_success` case still red, say): the case says that success is not one to size budgets by."""
    expected, actual = case.get("expected"), case.get("actual")
    if not (isinstance(expected, list) and isinstance(actual, list) and expected and actual):
        return False
    return actual[-1] == str(StopReason.SUCCESS) and expected[-1] != str(StopReason.SUCCESS)


def history_from_store(url: str | None = None, window_seconds: float | None = None) -> RecordHistory:
    """The finished runs of the run store (`agent.durable.store`), optionally only the recent ones: the
    window is reckoned by the store's clock, which stamped when each ended (a host two days ahead of a
    PostgreSQL server's found none within a day). Only read: a store that does not exist is an error,
    never made (a mistyped path)."""
    from agent.durable._storetime import StoreClock
    from agent.durable.store import open_store

    store = open_store(url, create=False)
    since = StoreClock(store).time() - window_seconds if window_seconds else None
    try:
        records = store.finished_since(since)  # the window applied by the store
        labels = {r.run_id: r.label for r in store.reviews()}  # in order: the latest label wins
    finally:
        store.close()
    return RecordHistory(past_runs([r.to_dict() | {"label": labels.get(r.run_id)} for r in records]))


def past_runs(rows: list[dict[str, Any]]) -> list[PastRun]:
    """The store's finished runs as past runs; one that is none (a hand edit left it no stop reason, or
    a limit this release does not know) is logged and left out, never ending the whole suggestion."""
    runs = []
    for row in rows:
        try:
            runs.append(PastRun.from_dict(row))
        except (ValueError, TypeError) as exc:
            log.warning("run %s is left out of the history: %s", row.get("run_id"), exc)
    return runs


def parse_duration(text: str) -> float:
    """Seconds in a Prometheus-style duration such as `30m`, `12h`, `7d`, `2w` (`0s` included)."""
    match = re.fullmatch(r"(\d+)([smhdwy])", text.strip())
    if not match:
        raise LimitsError(f"window {text!r}: use a number and a unit: s, m, h, d, w or y (e.g. 7d)")
    unit = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}[match.group(2)]
    return int(match.group(1)) * unit


MAX_WINDOW = 100 * 365 * 86400.0  # older than any run; Prometheus takes no range past ~292 years


def parse_window(text: str) -> float:
    """Seconds in a window of past runs (`parse_duration`), above 0: no run ends within no time,
    and Prometheus refuses a 0 range (a 0 window once read as "no window": every run); at most
    MAX_WINDOW (Prometheus answered 300y with its parse error, 'duration out of range')."""
    seconds = parse_duration(text)
    if seconds == 0:
        raise LimitsError(f"window {text!r} is empty: give a length above 0 (e.g. 7d)")
    if seconds > MAX_WINDOW:
        raise LimitsError(f"window {text!r}: at most 100 years (36500d), older than any run")
    return seconds


# -- Prometheus -------------------------------------------------------------------------

HISTOGRAMS = {
    LimitKind.TURNS: "agent_run_turns",
    LimitKind.SECONDS: "agent_run_active_seconds",
    LimitKind.TOKENS: "agent_run_tokens",
}
STOPS_TOTAL = "agent_stops_total"
Buckets = list[tuple[float, float]]  # (le, cumulative count), ascending, +Inf last
Fetch = Callable[[str], list[dict[str, Any]]]


class PrometheusHistory:
    """History from the run histograms Prometheus scraped over a window.

    Approximations, since Prometheus keeps buckets, not runs:
    - the 95th percentile is `histogram_quantile(0.95, ...)` over the
      successful runs' buckets (linear interpolation inside a bucket);
    - the longest run is the upper bound of the highest non-empty bucket
      (it may overstate the real longest by up to one bucket); when successful
      runs went past the largest finite bucket, their size is unknown, so that
      budget gets no ceiling, only a note (a ceiling at the bound cut them);
    - counts come from `increase(...[window])`, which Prometheus extrapolates,
      so they are rounded and may be off by a little;
    - "would have changed" is counted at bucket resolution (a run in the
      bucket that holds the ceiling counts as past it), and since each budget
      has its own histogram, `sooner` is the largest count over the budgets
      (a lower bound), `more_room` the rest of the limit stops;
    - cost has no per-run histogram, so no cost ceiling is suggested.
    """

    def __init__(
        self,
        url: str,
        window: str = "7d",
        *,
        at: float | None = None,
        fetch: Fetch | None = None,
        agent: str | None = None,
    ):
        parse_window(window)
        self.url, self.window = url.rstrip("/"), window
        self.agent = f'agent="{_label_value(agent)}"' if agent else ""  # a matcher: one agent's series
        self._fetch = fetch or (lambda q: query(self.url, q, at))
        self._stops = self._load_stops()
        self._buckets = {k: self._load_buckets(m) for k, m in HISTOGRAMS.items()}
        self._quantiles: dict[tuple[LimitKind, float], dict[str, float]] = {}

    def task_types(self) -> list[str]:
        return sorted(self._stops)

    def stops(self, task_type: str) -> dict[str, int]:
        return {r: n for r, n in self._stops.get(task_type, {}).items() if r not in _NOT_ENDS and n}

    def agents(self, task_type: str) -> dict[str, int]:
        """Not read: the queries sum over agents (give --agent to read one agent's series)."""
        return {}

    def observed(self, task_type: str, kind: LimitKind, q: float) -> Observed | None:
        buckets = self._buckets.get(kind, {}).get((task_type, str(StopReason.SUCCESS)))
        if not buckets or round(buckets[-1][1]) == 0:
            return None
        p = self._quantile(kind, q).get(task_type)
        return Observed(
            round(buckets[-1][1]), p if p is not None else math.nan, _longest(buckets), _past_top(buckets)
        )

    def changes(self, task_type: str, ceilings: Mapping[LimitKind, float]) -> Changes:
        def past(reason: str) -> int:
            return max(
                (_above(self._series(k, task_type, reason), c) for k, c in ceilings.items()), default=0
            )

        limits = round(self._total(task_type, str(StopReason.LIMIT)))
        sooner = min(limits, past(str(StopReason.LIMIT)))
        others = [str(r) for r in StopReason if r not in (StopReason.SUCCESS, StopReason.LIMIT, *_NOT_ENDS)]
        return Changes(limits, sooner, limits - sooner, sum(past(r) for r in others), approximate=True)

    def reviewed(self, task_type: str) -> Reviewed:
        """Nothing: Prometheus counts labels but cannot tie them to runs (use --store for that)."""
        return Reviewed()

    def unknown(self, task_type: str, kind: LimitKind) -> int:
        """None left out: no ceiling is read from Prometheus for cost, the only budget that can be unknown."""
        return 0

    # -- queries --

    def _load_stops(self) -> dict[str, dict[str, int]]:
        selector = f"{self._select(STOPS_TOTAL)}[{self.window}]"
        rows = self._fetch(f"sum by (task_type, stop_reason) (increase({selector}))")
        stops: dict[str, dict[str, int]] = {}
        for row in rows:
            labels, value = row["metric"], _value(row)
            if math.isfinite(value):  # NaN: no count to read
                by_reason = stops.setdefault(labels.get("task_type", ""), {})
                by_reason[labels.get("stop_reason", "")] = round(value)
        return stops

    def _load_buckets(self, metric: str) -> dict[tuple[str, str], Buckets]:
        selector = f"{self._select(f'{metric}_bucket')}[{self.window}]"
        q = f"sum by (task_type, stop_reason, le) (increase({selector}))"
        series: dict[tuple[str, str], Buckets] = {}
        for row in self._fetch(q):
            m = row["metric"]
            if not math.isfinite(_value(row)) or "le" not in m:  # NaN: no count to read
                continue
            series.setdefault((m.get("task_type", ""), m.get("stop_reason", "")), []).append(
                (float(m["le"]), _value(row))
            )
        return {key: sorted(b) for key, b in series.items()}

    def _quantile(self, kind: LimitKind, q: float) -> dict[str, float]:
        if (kind, q) not in self._quantiles:
            selector = self._select(f"{HISTOGRAMS[kind]}_bucket", 'stop_reason="success"')
            rows = self._fetch(
                f"histogram_quantile({q}, sum by (task_type, le) (increase({selector}[{self.window}])))"
            )
            found = {r["metric"].get("task_type", ""): _value(r) for r in rows}
            self._quantiles[(kind, q)] = {t: v for t, v in found.items() if math.isfinite(v)}
        return self._quantiles[(kind, q)]

    def _select(self, metric: str, *matchers: str) -> str:
        """`metric` with `matchers`, and the agent's when one is given."""
        given = [*matchers, self.agent] if self.agent else list(matchers)
        return f"{metric}{{{','.join(given)}}}" if given else metric

    def _series(self, kind: LimitKind, task_type: str, reason: str) -> Buckets:
        return self._buckets.get(kind, {}).get((task_type, reason), [])

    def _total(self, task_type: str, reason: str) -> float:
        """Stops of `reason`: from agent_stops_total, else from the turns histogram."""
        if reason in self._stops.get(task_type, {}):
            return float(self._stops[task_type][reason])
        series = self._series(LimitKind.TURNS, task_type, reason)
        return series[-1][1] if series else 0.0


def _label_value(text: str) -> str:
    """`text` as a PromQL label value between double quotes."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(row: Mapping[str, Any]) -> float:
    return float(row["value"][1])


def _longest(buckets: Buckets) -> float:
    """The upper bound of the highest non-empty bucket (the last finite bound if that is +Inf).

    `increase` scales and rounds counts a little, so "reaches the total" means within half a run.
    """
    total = buckets[-1][1]
    finite = [le for le, _ in buckets if math.isfinite(le)] or [math.nan]
    top = next(le for le, count in buckets if count >= total - 0.5)
    return top if math.isfinite(top) else finite[-1]


def _past_top(buckets: Buckets) -> int:
    """Runs in the +Inf bucket: past the largest finite bound, by how much no one can tell."""
    finite = [count for le, count in buckets if math.isfinite(le)]
    return max(0, round(buckets[-1][1] - finite[-1])) if finite else 0


def _above(buckets: Buckets, ceiling: float) -> int:
    """Runs whose value passed `ceiling`, at bucket resolution (the bucket holding it counts as past)."""
    if not buckets:
        return 0
    at_or_below = max((count for le, count in buckets if le <= ceiling), default=0.0)
    return max(0, round(buckets[-1][1] - at_or_below))


def query(url: str, promql: str, at: float | None = None) -> list[dict[str, Any]]:
    """One instant query over Prometheus's HTTP API; its result vector.

    A `user:password@` in `url` is sent as HTTP basic auth (urllib would take it for the host),
    and every message shows the URL with the password masked."""
    params = {"query": promql} | ({"time": f"{at:.3f}"} if at is not None else {})
    given, (bare, auth) = url, _without_credentials(url.rstrip("/"))
    url = shown_url(url)
    try:
        if urllib.parse.urlsplit(bare).scheme.lower() not in ("http", "https"):
            raise ValueError("not an http(s) URL")  # a bare host was a ValueError traceback
        request = urllib.request.Request(f"{bare}/api/v1/query?{urllib.parse.urlencode(params)}")
        if auth:
            request.add_header("Authorization", auth)
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raw = None
        body = _error_body(exc)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        hint = " (give the URL with its scheme: http://HOST:9090)" if "not an http(s) URL" in str(exc) else ""
        raise LimitsError(f"cannot query Prometheus at {url}{hint}: {scrub(str(exc), given)}") from exc
    if raw is not None:
        try:
            body = json.loads(raw)
        except ValueError as exc:  # a web page, a proxy's error: not Prometheus's HTTP API
            raise LimitsError(
                f"Prometheus at {url} answered {promql!r} with no JSON ({exc}); "
                "is it Prometheus's HTTP API (the URL without /api/v1)?"
            ) from exc
    if not isinstance(body, dict) or body.get("status") != "success":
        said = body.get("error", body) if isinstance(body, dict) else body
        raise LimitsError(f"Prometheus at {url} refused {promql!r}: {one_line(str(said)[:200])}")
    rows = body.get("data", {}).get("result") if isinstance(body.get("data"), dict) else None
    if not (isinstance(rows, list) and all(_is_sample(r) for r in rows)):
        raise LimitsError(
            f"Prometheus at {url} answered {promql!r} with no instant vector of numbers; "
            "is it Prometheus's HTTP API (the URL without /api/v1)?"
        )
    return rows


def _without_credentials(url: str) -> tuple[str, str | None]:
    """`url` without its `user:password@`, and the basic auth header they make (None without)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    user, password = (urllib.parse.unquote(p or "") for p in (parts.username, parts.password))
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), f"Basic {token}"


def scrub(text: str, url: str) -> str:
    """`text` with any password that `url` holds masked."""
    for secret in secrets_in(url):
        text = text.replace(secret, "***")
    return text


def _is_sample(row: Any) -> bool:
    """A vector's sample as Prometheus sends it: `{"metric": {...}, "value": [time, "number"]}`."""
    if not (isinstance(row, dict) and isinstance(row.get("metric"), dict)):
        return False
    value = row.get("value")
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)):
        return False
    try:
        float(value[1])  # "NaN" and "+Inf" are numbers Prometheus sends
    except ValueError:
        return False
    return True


def _error_body(exc: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        return dict(json.loads(exc.read()))
    except ValueError:
        where = NOT_THE_API if exc.code == 404 else ""  # a path after the host: /api/v1, a proxy's prefix
        return {"status": "error", "error": f"HTTP {exc.code}{where}"}


NOT_THE_API = "; is it Prometheus's HTTP API (the URL without /api/v1)?"


# -- text -------------------------------------------------------------------------------


RUN_SOME = "Run some tasks (or `endstate eval --json`) first."


def render(suggestions: list[Suggestion], source: str, empty: str = RUN_SOME) -> str:
    """The readable suggestion, one block per task type; `empty`: what to do when there is none."""
    if not suggestions:
        return f"No ended runs in {source}: nothing to suggest. {empty}"
    return "\n\n".join(_block(s) for s in suggestions) + f"\n\n(from {source})"


def _block(s: Suggestion) -> str:
    counts = ", ".join(f"{r} {n}" for r, n in sorted(s.stops.items(), key=lambda x: -x[1]))
    ended = sum(s.stops.values())
    said = (
        f"{ended} {'run' if ended == 1 else 'runs'} ended ({counts})"
        if ended
        else "no run ended in what was read"  # Prometheus may hold its durations and no stop in the window
    )
    lines = [f"{one_line(s.task_type)}: {said}"]
    if s.ceilings:
        lines.append(f"  {'budget':8} {'successes':>9} {'p95':>10} {'longest':>10} {'suggested':>10}")
        for c in s.ceilings:
            o = c.observed
            lines.append(
                f"  {_LABEL[c.kind]:8} {o.count:>9} {_fmt(c.kind, o.quantile):>10} "
                f"{_fmt(c.kind, o.longest):>10} {_fmt(c.kind, c.suggested):>10}"
            )
        lines.append(f"  as code: {_as_budget(s)}")
    if s.changes:
        lines += _changes(s.changes)
    lines += [f"  note: {n}" for n in s.notes]
    return "\n".join(lines)


_LABEL = {
    LimitKind.TURNS: "turns",
    LimitKind.SECONDS: "seconds",
    LimitKind.TOKENS: "tokens",
    LimitKind.COST: "cost $",
}
_BUDGET_ARG = {
    LimitKind.TURNS: "max_turns",
    LimitKind.SECONDS: "max_seconds",
    LimitKind.TOKENS: "max_tokens",
    LimitKind.COST: "max_cost_usd",
}


def _fmt(kind: LimitKind, value: float) -> str:
    if math.isnan(value):
        return "?"
    if value >= 1e15:  # past any run's use: 1e+12, not a line of digits
        return f"{value:.3g}"
    if kind in _WHOLE:
        return (
            f"{value:,}"
            if isinstance(value, int)
            else f"{value:,.0f}"
            if value == int(value)
            else f"{value:,.1f}"
        )
    short = f"{value:.3g}"  # 3 significant digits: 0.00615, 12.5, 600
    return f"{value:,.0f}" if "e+" in short else short  # 1,160 seconds, not 1.16e+03


def _as_budget(s: Suggestion) -> str:
    args = ", ".join(
        f"{_BUDGET_ARG[c.kind]}={_fmt(c.kind, c.suggested).replace(',', '_')}" for c in s.ceilings
    )
    return f"Budget({args})"


def _changes(c: Changes) -> list[str]:
    about = "about " if c.approximate else ""
    if not c.limit_stops and not c.cut:
        return ["  past limit stops: 0; no other stop ran past these ceilings"]
    return [
        f"  past limit stops: {c.limit_stops}; with these ceilings {about}{c.sooner} would have stopped "
        f"sooner and {about}{c.more_room} would have had more room ({c.changed} changed)",
        f"  other stops past these ceilings: {about}{c.cut} (they would have ended as limit instead)",
    ]
