"""The eval report: per case expected and actual stops, the stop distribution per task type,
true success, correct give-up, and the false successes, named loudly."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.evals.runner import HOW_TO_RUN, Outcome
from agent.result import StopReason
from agent.text import one_line


@dataclass(frozen=True)
class Summary:
    """The numbers the seed asks an eval to give."""

    cases: int
    met: int
    skipped: int
    stops: dict[str, dict[str, int]]  # task type -> stop reason -> segments
    successes: int  # runs whose last segment ended in success
    true_successes: int  # ... and that every judge and the case's expectations accept
    impossible: int  # cases impossible on purpose that were not skipped (crashed, timed out included)
    correct_give_ups: int  # ... that ended in gave_up and passed their judges
    false_successes: tuple[str, ...]  # case names
    skipped_why: dict[str, int] = field(default_factory=dict)  # why cases were skipped -> how many
    unjudged: tuple[str, ...] = ()  # case names: successes no independent check looked at
    flaky: tuple[str, ...] = ()  # case names: met in some rounds of a repeated eval, not in others
    timed_out: tuple[str, ...] = ()  # case names: cut at their deadline (failed cases)
    failed: tuple[str, ...] = ()  # case names: every case that ran and did not meet its expectations

    @property
    def ran(self) -> int:
        return self.cases - self.skipped

    @property
    def passed(self) -> bool:
        """Every case that ran met its expectations, none is a false success, and one ran at least:
        an eval that ran nothing (every case skipped) is no pass."""
        return self.ran > 0 and self.met + self.skipped == self.cases and not self.false_successes

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "false_successes": list(self.false_successes),
            "unjudged": list(self.unjudged),
            "flaky": list(self.flaky),
            "timed_out": list(self.timed_out),
            "failed": list(self.failed),
            "passed": self.passed,
        }


def summarize(outcomes: Sequence[Outcome]) -> Summary:
    ran = [o for o in outcomes if not o.skipped and not o.crashed and not o.timed_out]
    stops: dict[str, Counter[str]] = {}
    for o in ran:
        stops.setdefault(o.case.task_type, Counter()).update(str(s.result.reason) for s in o.segments)
    succeeded = [o for o in ran if o.final and o.final.reason is StopReason.SUCCESS]
    # an impossible task that crashed or hung gave no correct give-up: it counts, as one that did not
    impossible = [o for o in outcomes if o.case.impossible and not o.skipped]
    return Summary(
        cases=len(outcomes),
        met=sum(o.met for o in outcomes if not o.skipped),
        skipped=sum(bool(o.skipped) for o in outcomes),
        stops={t: dict(c) for t, c in sorted(stops.items())},
        successes=len(succeeded),
        true_successes=sum(o.met and not o.false_success and not o.unjudged for o in succeeded),
        impossible=len(impossible),
        correct_give_ups=sum(_gave_up(o) and o.met for o in impossible),
        false_successes=tuple(o.case.name for o in outcomes if o.false_success),
        skipped_why=dict(Counter(o.skipped for o in outcomes if o.skipped)),
        unjudged=tuple(o.case.name for o in outcomes if o.unjudged),
        flaky=tuple(o.case.name for o in outcomes if o.flaky),
        timed_out=tuple(o.case.name for o in outcomes if o.timed_out),
        failed=tuple(o.case.name for o in outcomes if not o.skipped and not o.met),
    )


def _gave_up(o: Outcome) -> bool:
    """The run ended in gave_up: at once, or after a person answered or denied (a suspension first)."""
    return o.final is not None and o.final.reason is StopReason.GAVE_UP


# -- JSON -----------------------------------------------------------------------------


def case_json(o: Outcome) -> dict[str, Any]:
    """One JSON line per case: what was expected, what happened, every segment's result; with
    repeats, the round shown (its worst) and `each_round`, every round's own (`limits suggest`
    reads every run from them)."""
    rounds = {"each_round": [case_json(r) for r in o.each_round]} if o.each_round else {}
    return {
        "case": o.case.name,
        "agent": o.case.agent,
        "task_type": o.case.task_type,
        "fixture": o.case.fixture,
        "source": o.case.source,
        "expected": [str(r) for r in o.case.expected],
        "actual": [str(r) for r in o.actual],
        "met": o.met if not o.skipped else None,
        "false_success": o.false_success,
        "unjudged": o.unjudged,
        "flaky": o.flaky,
        "rounds_met": list(o.rounds) if o.rounds else None,
        "problems": o.problems,
        "skipped": o.skipped or None,
        "crashed": o.crashed or None,  # why the case could not run (its agent could not be built, say)
        "timed_out": o.timed_out.to_dict() if o.timed_out else None,  # {"phase", "seconds"}: cut there
        "segments": [
            {
                "segment": i,
                "expected": str(s.expected),
                "judge_failures": list(s.judge_failures),
                "judge_errors": list(s.judge_errors),
                **s.result.to_dict(),
            }
            for i, s in enumerate(o.segments, 1)
        ],
        **rounds,
    }


# -- text -----------------------------------------------------------------------------

_REASONS = [str(r) for r in StopReason]


def render(outcomes: Sequence[Outcome], summary: Summary, mode: str) -> str:
    """The readable report."""
    parts = [
        f"endstate eval: {summary.cases} {'case' if summary.cases == 1 else 'cases'}, {mode}",
        "",
        _case_table(outcomes),
        *_failures(outcomes),
        "",
        "Stop distribution (every run segment, by task type)",
        _stop_table(summary),
        _exits(summary),
        "",
        *_rates(summary),
        *_false_successes(outcomes),
        "",
        _verdict(summary),
    ]
    return "\n".join(parts)


def _case_table(outcomes: Sequence[Outcome]) -> str:
    """One row per case; the columns as wide as their longest value (a promoted case's name is 39)."""
    name = max([30, *(len(o.case.name) for o in outcomes)])
    kind = max([17, *(len(o.case.task_type) for o in outcomes)])
    rows = [f"{'case':{name}} {'task type':{kind}} {'expected':27} {'actual':27} {'turns':>5}  result"]
    for o in outcomes:
        actual = " -> ".join(o.actual) or "-"
        turns = str(o.final.turns) if o.final else "-"
        rows.append(
            f"{o.case.name:{name}} {o.case.task_type:{kind}} {' -> '.join(o.case.expected):27} "
            f"{actual:27} {turns:>5}  {_result(o)}"
        )
    return "\n".join(rows)


def _result(o: Outcome) -> str:
    if o.skipped:
        return f"skipped ({o.skipped})"
    if o.false_success:
        return "FALSE SUCCESS"
    if o.flaky and o.rounds:
        return f"FLAKY (met {o.rounds[0]} of {o.rounds[1]} rounds)"
    if o.timed_out:
        return f"TIMED OUT ({o.timed_out.phase}, {o.timed_out.seconds:g}s)"
    if not o.met:
        return "FAILED"
    return "ok, unjudged" if o.unjudged else "ok"


def _failures(outcomes: Sequence[Outcome]) -> list[str]:
    lines = []
    for o in outcomes:
        if o.problems:
            lines.append(f"\nFAILED {o.case.name} ({_where(o.case.source)})")
            lines += [f"  - {one_line(p)}" for p in o.problems]  # they quote the run: a model's words
    return lines


def _where(source: str) -> str:
    """A case file's path, relative to the working folder when it is inside it."""
    path = Path(source)
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else source


def _stop_table(summary: Summary) -> str:
    seen = {r for counts in summary.stops.values() for r in counts}
    columns = [r for r in _REASONS if r in seen]
    kind = max([17, *map(len, summary.stops)])
    head = f"{'task type':{kind}} {'segments':>8}  " + "  ".join(f"{r:>{max(len(r), 5)}}" for r in columns)
    rows = [head]
    for task_type, counts in summary.stops.items():
        total = sum(counts.values())
        cells = "  ".join(f"{counts.get(r, 0):>{max(len(r), 5)}}" for r in columns)
        rows.append(f"{task_type:{kind}} {total:>8}  {cells}")
    if summary.stops:
        return "\n".join(rows)
    return "(no case ran to its end)" if summary.ran else "(no case ran)"


def _exits(summary: Summary) -> str:
    reached = {r for counts in summary.stops.values() for r in counts}
    missing = [r for r in _REASONS if r not in reached]
    return f"Exits reached: {len(reached)} of {len(_REASONS)}" + (
        f"; never: {', '.join(missing)}" if missing else ""
    )


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({100 * part / whole:.0f}%)" if whole else "0 of 0 (n/a)"


def _rates(summary: Summary) -> list[str]:
    lines = [
        f"True success:     {_share(summary.true_successes, summary.successes)} runs marked success "
        "pass the eval's independent check",
        f"Correct give-up:  {_share(summary.correct_give_ups, summary.impossible)} impossible tasks "
        "gave up instead of inventing an answer",
        f"False successes:  {len(summary.false_successes)}",
    ]
    if summary.unjudged:
        lines.insert(
            1,
            f"  not checked:    {len(summary.unjudged)} success(es) only the agent's own verifiers "
            f"accepted (no judge, replay not checked under --model): {', '.join(summary.unjudged)}; "
            "give these cases a judge",
        )
    return lines


# why a success where the case expects another stop is false, by the stop expected
_EXPECTS = {
    StopReason.GAVE_UP: "the case expects a give-up",
    StopReason.NEED_HELP: "the case expects it to ask a person (need_help), not to decide alone",
    StopReason.HELP_TIMEOUT: "the case expects it to wait for a person who never answers (help_timeout)",
    StopReason.LIMIT: "the case expects a budget to run out (limit), not a success",
    StopReason.NO_PROGRESS: "the case expects it to be stopped for going round in circles (no_progress)",
    StopReason.ERROR: "the case expects the run to end in error, not a success",
    StopReason.CANCELLED: "the case expects the run to be cancelled, not to succeed (it went on past the "
    "cancel, or none came)",
}


def _false_successes(outcomes: Sequence[Outcome]) -> list[str]:
    false = [o for o in outcomes if o.false_success]
    if not false:
        return []
    bar = "!" * 78
    lines = [
        bar,
        f"!! FALSE SUCCESS: {len(false)} run(s) say success, but the task was impossible, "
        "the case expects another end, or the eval's judge disagrees:",
    ]
    for o in false:
        why = ["the task is impossible on purpose"] if o.case.impossible else []
        why += [] if o.case.impossible or o.not_to_succeed is None else [_EXPECTS[o.not_to_succeed]]
        why += [f for s in o.segments for f in s.judge_failures]
        lines.append(f"!!   {o.case.name}: {one_line('; '.join(why))}")  # a judge's words quote the run
    return [*lines, bar]


def _verdict(summary: Summary) -> str:
    skipped = f", {summary.skipped} skipped" if summary.skipped else ""
    ran = summary.ran
    if not ran:
        return not_run(summary)
    if summary.passed:
        return f"PASSED: {summary.met} of {ran} cases met their expectations{skipped}."
    why = [f"{len(summary.flaky)} flaky: met in some rounds only"] if summary.flaky else []
    why += [f"{len(summary.timed_out)} timed out"] if summary.timed_out else []
    said = f" ({'; '.join(why)})" if why else ""
    return f"FAILED: {ran - summary.met} of {ran} cases did not meet their expectations{said}{skipped}."


def not_run(summary: Summary) -> str:
    """The one line of an eval in which no case ran: how many were skipped, why, and how to run them."""
    if not summary.cases:
        return "NO CASE RAN: no case was given. Name case files, folders or case names."
    why = "; ".join(f"{n} {reason}" for reason, n in summary.skipped_why.items())
    how = sorted({HOW_TO_RUN[r] for r in summary.skipped_why if r in HOW_TO_RUN})
    return (
        f"NO CASE RAN: all {summary.cases} {'case was' if summary.cases == 1 else 'cases were'} skipped "
        f"({why}). To run them, {' or '.join(how) or 'see the reasons'}."
    )
