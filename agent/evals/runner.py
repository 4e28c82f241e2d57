"""Run eval cases: build the case's world and agent, play it, judge every segment."""

from __future__ import annotations

import asyncio
import copy
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent.agent import Agent
from agent.budget import Budget, Extension
from agent.clock import CancelSignal
from agent.durable.catalog import Catalog, check_prepared, load_catalog, named_as_entry
from agent.durable.runner import check_state, either
from agent.errors import ConfigError, SnapshotError
from agent.evals.case import Case
from agent.evals.deadline import DEFAULT_TIMEOUT, CaseExit, Phase, PhaseHooks, TimedOut, Watch, bounded
from agent.evals.fixtures import FIXTURES
from agent.evals.judges import Judged, judge_verdict
from agent.evals.scripts import scripts
from agent.examples.scenarios import Scenario, World, build_agent, follow_up, world_for
from agent.hooks import CompositeHooks
from agent.journal import Entry
from agent.models.base import Model
from agent.models.scripted import ScriptedModel
from agent.result import RunResult, StopReason
from agent.snapshot import Checkpoint
from agent.stops import StopCause

ModelFactory = Callable[[], Model]


@dataclass(frozen=True)
class Segment:
    """One segment of a case's run: its result, the stop expected, what the judges found."""

    result: RunResult
    expected: StopReason
    judge_failures: tuple[str, ...] = ()
    judge_errors: tuple[str, ...] = ()  # judges that raised: they could not judge the run either way
    replay_failures: tuple[str, ...] = ()  # a replayed run whose calls got other results than recorded
    replay_checked: bool = False  # its calls' results were compared with the recorded ones (offline)


@dataclass(frozen=True)
class Outcome:
    """A case after it ran (or why it did not)."""

    case: Case
    segments: tuple[Segment, ...] = ()
    skipped: str = ""
    crashed: str = ""
    rounds: tuple[int, int] | None = None  # with repeats: (rounds that met the case, rounds run)
    timed_out: TimedOut | None = None  # its deadline passed: where it was (its segments: runs that ended)
    each_round: tuple[Outcome, ...] = ()  # with repeats: every round that ran, in order

    @property
    def flaky(self) -> bool:
        """Met in some rounds of a repeated eval and not in others."""
        return self.rounds is not None and 0 < self.rounds[0] < self.rounds[1]

    @property
    def final(self) -> RunResult | None:
        return self.segments[-1].result if self.segments else None

    @property
    def actual(self) -> list[StopReason]:
        return [s.result.reason for s in self.segments]

    @property
    def false_success(self) -> bool:
        """The run says success, but the task was impossible, the case expects another end (a give-up:
        a promoted `false_success`, a refund the rules forbid; a person's say; a budget run out, no
        progress, an error, a cancel: a world where no success can come), or a judge disagrees with
        how it ended or with what it did on the way (refunded before it was told to)."""
        last = self.segments[-1] if self.segments else None
        if last is None or last.result.reason is not StopReason.SUCCESS:
            return False
        judged_wrong = any(s.judge_failures for s in self.segments)  # at its end, or on the way there
        return self.case.impossible or self.not_to_succeed is not None or judged_wrong

    @property
    def not_to_succeed(self) -> StopReason | None:
        """The stop the case expects where the run succeeded, when it is not success: every other
        stop says no success may come there (need_help: the agent decided what only a person may;
        limit: its world holds no way to finish within the budget). None otherwise."""
        last = self.segments[-1] if self.segments else None
        if last is None or last.result.reason is not StopReason.SUCCESS:
            return None
        expected = (last.expected, self.case.expected[-1])
        return next((e for e in expected if e is not StopReason.SUCCESS), None)

    @property
    def unjudged(self) -> bool:
        """The run says success and nothing but the agent's own verifiers looked: the case names no
        judge, and its replay was not checked (a promoted case run with --model uses only the task)."""
        last = self.segments[-1] if self.segments else None
        if last is None or last.result.reason is not StopReason.SUCCESS or self.false_success:
            return False
        if self.timed_out:  # cut before its judges could look: a failed case, not an unjudged success
            return False
        return not self.case.judges and not last.replay_checked

    @property
    def problems(self) -> list[str]:
        """Every expectation the run did not meet, in words."""
        if self.skipped:
            return []
        if self.crashed:
            return [f"the case could not run: {self.crashed}"]
        if self.timed_out:
            ended = f"; its run ended {' -> '.join(self.actual)}" if self.segments else ""
            return [f"the case {self.timed_out}{ended}"]
        return (
            _stop_problems(self)
            + _extra_problems(self)
            + [f for s in self.segments for f in s.judge_failures]
            + [f"could not judge: {e}" for s in self.segments for e in s.judge_errors]
            + [f"replay: {f}" for s in self.segments[-1:] for f in s.replay_failures]
        )

    @property
    def met(self) -> bool:
        return not self.problems


def _stop_problems(outcome: Outcome) -> list[str]:
    """The stops the case expected against those the run had, with why the first unexpected one
    ended (its note: the error, the give-up's reason), so a red CI line says what happened."""
    expected, actual = outcome.case.expected, outcome.actual
    if actual == expected:
        return []
    problem = f"expected {' -> '.join(expected)}, got {' -> '.join(actual)}"
    off = next((s.result for s in outcome.segments if s.result.reason is not s.expected), None)
    why = " ".join((off.note if off else "").split())
    return [f"{problem} ({_cut(why, MAX_WHY)})" if why else problem]


MAX_WHY = 200  # characters of an unexpected stop's note in its problem line


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


_AGENTS_OWN = (None, StopCause.AGENT)  # a give-up the agent chose (not the API's refusal, a guardrail)


def _extra_problems(outcome: Outcome) -> list[str]:
    case, final = outcome.case, outcome.final
    problems = []
    if final and case.expect_limit and final.reason is StopReason.LIMIT and final.limit != case.expect_limit:
        problems.append(f"expected the {case.expect_limit} budget to run out, not {final.limit}")
    if case.impossible and final and final.reason is StopReason.GAVE_UP and final.cause not in _AGENTS_OWN:
        problems.append(
            f"gave up by {final.cause} ({final.note.strip()[:120]}), not by the agent: no sign that it "
            "found the task impossible"
        )
    rejected = any(s.result.verifier_failures for s in outcome.segments)
    if case.expect_rejected is not None and rejected != case.expect_rejected:
        problems.append(
            "expected a 'done' to be rejected by the verifiers"
            if case.expect_rejected
            else "a 'done' was rejected by the verifiers, which the case did not expect"
        )
    return problems


# -- running --------------------------------------------------------------------------


NO_SCRIPT = "no script: run it against a model with --model"
OFFLINE_ONLY = "offline only: its fixture needs the scripted model"
CALLS_A_MODEL = "its catalog builds a model that is no ScriptedModel: run it with --model, or give it replay:"
# how to run the cases skipped for each reason, as the eval's last line says when none ran
HOW_TO_RUN = {
    NO_SCRIPT: "run them against Claude: ANTHROPIC_API_KEY=... endstate eval --model MODEL",
    OFFLINE_ONLY: "run them offline, without --model",
    CALLS_A_MODEL: "run them against Claude: ANTHROPIC_API_KEY=... endstate eval --model MODEL",
}


async def run_case(
    case: Case,
    model: ModelFactory | None = None,
    *,
    break_verifiers: bool = False,
    catalogs: Catalogs | None = None,
    case_timeout: float | None = None,
) -> Outcome:
    """Play one case offline (its script or replay) or against `model`; never raises for a failing
    run. A catalog agent's catalog comes from `catalogs` (loaded here and closed after, when None).
    The case's deadline is its own `timeout:`, else `case_timeout`, else `DEFAULT_TIMEOUT` plus its
    agent's time budget: past it, the case ends timed out (see `agent.evals.deadline`)."""
    if model is None and case.script is None and case.replay is None and case.catalog is None:
        return Outcome(case, skipped=NO_SCRIPT)
    if model is not None and case.offline_only:
        return Outcome(case, skipped=OFFLINE_ONLY)
    own = catalogs is None
    catalogs = catalogs or Catalogs()
    watch = _watch(case, case_timeout)
    try:
        played = await bounded(lambda: _play(case, model, break_verifiers, catalogs, watch), watch)
    except Exception as exc:  # a case that cannot run is a failed case, not a crashed eval
        return Outcome(
            case, crashed=str(exc) if isinstance(exc, CaseExit) else f"{type(exc).__name__}: {exc}"
        )
    finally:
        if own:
            catalogs.close()
    if isinstance(played, TimedOut):
        ended = tuple(Segment(r, e) for r, e in zip(list(watch.results), case.expected, strict=False))
        return Outcome(case, ended, timed_out=played)
    return played


def _watch(case: Case, timeout: float | None) -> Watch:
    """The case's deadline: its own, the eval's, or the default (which grows by the agent's budget)."""
    seconds = case.timeout or timeout
    return Watch(seconds or DEFAULT_TIMEOUT, chosen=seconds is not None)


async def _play(
    case: Case, model: ModelFactory | None, break_verifiers: bool, catalogs: Catalogs, watch: Watch
) -> Outcome:
    real = model() if model else None
    try:
        if case.catalog is not None:
            with _catalog_world(case, catalogs.get(case.catalog), watch) as (agent, world, state, cancel):
                if not (played := real or _replayed(case, world) or _offline(agent.model)):
                    return Outcome(case, skipped=CALLS_A_MODEL)
                adjusted = _adjust(case, agent, played, break_verifiers)
                return await _segments(case, adjusted, world, real, state, cancel, watch)
        scenario = _scenario(case)
        with world_for(scenario) as world:
            agent = _agent(case, scenario, world, real, break_verifiers)
            return await _segments(case, agent, world, real, {"eval_case": case.name}, world.cancel, watch)
    finally:
        close = getattr(real, "aclose", None)
        if close is not None:
            await close()


async def _segments(
    case: Case,
    agent: Agent,
    world: World,
    real: Model | None,
    state: dict[str, Any],
    cancel: CancelSignal | None,
    watch: Watch,
) -> Outcome:
    """Run the case's first segment and its follow-up; judge both; compare a replay's results. Each
    step enters its phase on `watch` (a case past its deadline stops there)."""
    journal = _recorder(agent) if case.replay and real is None else None
    _watched(agent, watch)
    watch.enter(Phase.RUN)
    first = watch.ran(await agent.arun(case.task, cancel=cancel, state=state))
    if journal is not None and first.snapshot is not None:  # a suspension is not checkpointed
        journal.update(enumerate(first.snapshot.journal))
    watch.enter(Phase.JUDGE)
    segments = [_judged(case, world, first, 1)]
    if case.then and first.snapshot is not None:
        watch.enter(Phase.RUN)
        try:
            after = watch.ran(await follow_up(agent, case.then, first, world))
        except SnapshotError:  # the case's action does not fit what the run waits for
            return Outcome(case, tuple(segments), crashed=_wrong_action(case.then.action, first))
        watch.enter(Phase.JUDGE)
        segments.append(_judged(case, world, after, 2))
    if case.replay and journal is not None:
        found = tuple(case.replay.differences([journal[i] for i in sorted(journal)], world))
        segments[-1] = replace(segments[-1], replay_failures=found, replay_checked=True)
    return Outcome(case, tuple(segments))


def _wrong_action(action: str, first: RunResult) -> str:
    """The problem of a case whose `then.action` cannot continue its run: what the run waits for."""
    pending = first.snapshot.suspension.pending if first.snapshot and first.snapshot.suspension else None
    fits = (
        f"approval of the call {pending.name!r}: use action: approve or deny"
        if pending is not None
        else "an answer to a question: use action: answer, with text:"
    )
    return f"field 'then.action': {action!r} cannot continue this run: it waits for {fits}"


def _watched(agent: Agent, watch: Watch) -> None:
    """The built agent's time budget added to a default deadline, and hooks that tell `watch` when
    the run verifies (the agent's own hooks still see the run)."""
    watch.budgeted(agent.budget.max_seconds)
    agent.hooks = CompositeHooks((agent.hooks, PhaseHooks(watch)))


async def run_cases(
    cases: Sequence[Case],
    model: ModelFactory | None = None,
    *,
    jobs: int = 1,
    break_verifiers: bool = False,
    on_done: Callable[[Outcome], Any] | None = None,
    case_timeout: float | None = None,
) -> list[Outcome]:
    """Run cases, `jobs` at a time, each within its deadline (see `run_case`); outcomes come back in
    the order of `cases`."""
    gate = asyncio.Semaphore(max(1, jobs))
    catalogs = Catalogs()

    async def one(case: Case) -> Outcome:
        async with gate:
            outcome = await run_case(
                case, model, break_verifiers=break_verifiers, catalogs=catalogs, case_timeout=case_timeout
            )
        if on_done:
            on_done(outcome)
        return outcome

    try:
        return list(await asyncio.gather(*(one(c) for c in cases)))
    finally:
        catalogs.close()


def merge_rounds(rounds: Sequence[Sequence[Outcome]]) -> list[Outcome]:
    """Per case, from rounds of the same cases: its first false success, else its first unmet
    round, else its first round, with how many rounds met it (`rounds`) and every round that ran
    (`each_round`): a case met only sometimes is flaky, and fails."""
    merged = []
    for runs in zip(*rounds, strict=True):
        ran = [o for o in runs if not o.skipped]
        worst = [o for o in ran if o.false_success] + [o for o in ran if not o.met]
        chosen = worst[0] if worst else runs[0]
        met = (sum(o.met for o in ran), len(ran))
        merged.append(replace(chosen, rounds=met, each_round=tuple(ran)) if ran else chosen)
    return merged


# -- agents from a catalog ------------------------------------------------------------------------


class Catalogs:
    """The catalogs a run of cases names, each loaded once (by `module:attr`) and closed at the end.

    Cases run on threads of their own (see `agent.evals.deadline`); a catalog is loaded outside the
    lock, so an import that hangs holds up only the cases naming it (each cut at its deadline), never
    `close` at the eval's end: it closes the catalogs that loaded, and leaves one still loading."""

    def __init__(self) -> None:
        self.loaded: dict[str, Future[Catalog]] = {}
        self.lock = threading.Lock()

    def get(self, spec: str) -> Catalog:
        with self.lock:
            mine = spec not in self.loaded
            found = self.loaded.setdefault(spec, Future())
        if mine:
            try:
                found.set_result(load_catalog(spec))
            except BaseException as exc:
                with self.lock:  # the next case naming it tries again, as before
                    if self.loaded.get(spec) is found:
                        del self.loaded[spec]
                found.set_exception(exc)
        return found.result()  # another case's load: wait for it (within this case's deadline)

    def close(self) -> None:
        with self.lock:
            loaded, self.loaded = self.loaded, {}
        for found in loaded.values():
            if found.done() and found.exception() is None:
                found.result().close()


@contextmanager
def _catalog_world(
    case: Case, catalog: Catalog, watch: Watch
) -> Iterator[tuple[Agent, World, dict[str, Any], Any]]:
    """The case's agent as its catalog makes it for a new run (`prepare`, then `build`), the world
    its `{workdir}` stands for (the state's `workdir`, else a fresh folder), and the cancel signal;
    the entry's `cleanup` runs after (also for a case past its deadline, in the background)."""
    entry = catalog.entry(case.agent)
    run_id = f"eval-{uuid.uuid4().hex[:12]}"
    state = copy.deepcopy(dict(case.state))  # its own: a prepare that appends to a list in it changed the
    # case's, so the next round of --repeat (or check_case) began from another state
    state = entry.prepare(state, run_id) if entry.prepare else state
    try:
        if entry.prepare:  # as a start checks it: a state no store keeps would fail in production
            check_prepared(case.agent, state)  # naming the prepare that made it so
        else:
            check_state(state)
        with tempfile.TemporaryDirectory(prefix="endstate-eval-") as tmp:
            world = World(Path(str(state.get("workdir") or tmp)))
            built = named_as_entry(case.agent, entry.build(state))  # as a runner names it
            if not isinstance(built, Agent):
                raise ConfigError(_not_an_agent(case, built))
            cancel = entry.cancel(state) if entry.cancel else None
            # the world's is set by a replay where the recorded run was cancelled (its host shut down)
            yield built, world, state, either(cancel, world.cancel)
    finally:
        if entry.cleanup and isinstance(state, dict):  # a prepare that forgot its return made nothing
            watch.phase = Phase.CLEANUP
            entry.cleanup(state)


def _not_an_agent(case: Case, built: Any) -> str:
    """Why what a catalog entry built cannot play a case: a foreign agent, or no agent at all."""
    framework = getattr(built, "framework", None)
    if isinstance(framework, str):
        return f"agent {case.agent!r} is a foreign ({framework}) agent: evals replay Endstate agents only"
    return (
        f"agent {case.agent!r}: its catalog entry's build returned {type(built).__name__}, not an Agent "
        "(its return forgotten?)"
    )


def _replayed(case: Case, world: World) -> Model | None:
    """The scripted model that plays the case's recorded replies; None for a case written without
    them, which runs the model its catalog entry builds (a team's own cases, offline)."""
    return ScriptedModel(case.replay.steps(world)) if case.replay else None


def _offline(model: Model) -> Model | None:
    """`model`, played from its start, when it plays offline (a `ScriptedModel`), else None: a case
    without `replay:` runs the model its catalog builds only when no model API is called unasked
    (`--model` says to). A fresh copy: a catalog whose build returns one shared agent had each case
    go on from where the one before (or, with `--jobs`, beside) it left the shared script."""
    return model.fresh() if isinstance(model, ScriptedModel) else None


def _adjust(case: Case, agent: Agent, model: Model, break_verifiers: bool) -> Agent:
    """The agent with the case's model, task type, ceilings and verifiers: a copy, as a start makes
    (a catalog whose build returns one shared agent had each case change it for the next), and
    checked as any agent is (a cost budget refuses a model of no known price: `--model` swapped in
    one, and its cost, unknown, never reached the ceiling)."""
    budget = _budget(agent.budget, case.budget) if case.budget else agent.budget
    if case.extend:
        get = case.extend.get
        more = Extension(int(get("turns", 0)), get("seconds", 0.0), int(get("tokens", 0)), get("cost", 0.0))
        budget = budget.plus(more)
    verifiers = () if break_verifiers or case.break_verifiers else agent.verifiers
    return replace(agent, model=model, task_type=case.task_type, budget=budget, verifiers=verifiers)


def _recorder(agent: Agent) -> dict[int, Entry]:
    """The journal entries of `agent`'s runs by index, kept as its checkpoints hand them over."""
    kept: dict[int, Entry] = {}

    def keep(checkpoint: Checkpoint) -> None:
        kept.update({checkpoint.first + i: e for i, e in enumerate(checkpoint.entries)})

    agent.checkpoint = keep
    return kept


def _scenario(case: Case) -> Scenario:
    """The seed scenario the case's world and script come from, with the case's task and fixture."""
    fixture = FIXTURES[case.fixture]
    if case.script:
        base = scripts()[case.script]
    elif case.replay:
        base = Scenario(case.name, case.agent, case.task, case.expect, case.replay.steps)
    else:
        base = Scenario(case.name, case.agent, case.task, case.expect, _none)
    return replace(base, task=case.task, options={**base.options, **fixture.options})


def _none(world: World) -> list[Any]:
    return []


def _agent(case: Case, scenario: Scenario, world: World, model: Model | None, break_verifiers: bool) -> Agent:
    agent = build_agent(scenario, world, model)
    FIXTURES[case.fixture].apply(agent)
    return _adjust(case, agent, agent.model, break_verifiers)


def _budget(base: Budget, ceilings: Mapping[str, float]) -> Budget:
    """The agent's budget with the case's ceilings in place of its own."""
    get = ceilings.get
    return Budget(
        max_turns=int(get("turns", 0)) or base.max_turns,
        max_seconds=get("seconds", base.max_seconds),
        max_tokens=int(get("tokens", 0)) or base.max_tokens,
        max_cost_usd=get("cost", base.max_cost_usd),
    )


def _judged(case: Case, world: World, result: RunResult, segment: int) -> Segment:
    """The segment's judges' verdicts. They see a copy of its snapshot: the one the follow-up resumes
    from is the run's, and a judge that changed it (its spent turns, its journal) changed the run."""
    run = Judged(world, replace(result, snapshot=copy.deepcopy(result.snapshot)), segment)
    # each call its own arguments: a judge that changes a list it is given must not change the next call's
    verdicts = [judge_verdict(ref.name, copy.deepcopy(dict(ref.params)), run) for ref in case.judges]
    failures = tuple(f for found, _ in verdicts for f in found)
    errors = tuple(error for _, error in verdicts if error)
    return Segment(result, case.expected[segment - 1], failures, errors)
