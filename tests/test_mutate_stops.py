"""Stop decisions that a hand mutation audit (see the `mutate` branch's report) found no test pinned:
each test here fails under one small change to the code that decides how a run ends."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from messages_api import MessagesAPI

from agent import (
    Agent,
    Budget,
    Extension,
    LimitKind,
    RunContext,
    RunObserver,
    SnapshotError,
    StopReason,
    command,
    goal,
    invariant,
    predicate,
    tool,
)
from agent.clock import SystemClock
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish, reply, say


class Signals(RunObserver):
    """Records each turn's signal, as the turn span's `agent.turn.signal` gets it."""

    def __init__(self) -> None:
        self.signals: list[tuple[int, str]] = []

    def turn_ended(self, index: int, signal: str) -> None:
        self.signals.append((index, signal))


class Hooks:
    def __init__(self) -> None:
        self.observer = Signals()

    def run_started(self, info: Any) -> Signals:
        return self.observer


def test_a_goal_reached_in_the_turn_the_run_gets_stuck_ends_it_as_success(make_agent: Any) -> None:
    """The per-turn checks come before the progress check: a job polled until it is done, whose
    status text never changes, reaches its goal in the same turn that the third identical poll would
    count as stuck. The run ends `success`, not `no_progress`."""
    polls = []

    @tool
    def poll(job: str) -> str:
        """Poll a job's status."""
        polls.append(job)
        return "status: see the dashboard"

    steps = [[call("poll", job="j1")]] * 3 + [[finish("done", "x")]]
    agent = make_agent(*steps, tools=[poll], checks=[goal(lambda ctx: len(polls) >= 3, "the job ran")])
    result = agent.run("wait for the job")
    assert (result.reason, result.verified, result.output) == (StopReason.SUCCESS, True, "the job ran")
    assert result.turns == 3


def test_a_broken_invariant_is_neither_verified_nor_an_output(make_agent: Any) -> None:
    """An `error` stop from a broken invariant carries its reason as the note: the result is not
    `verified`, and has no `output` (which is what a success returns)."""
    spent = []

    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        spent.append(amount)
        return f"paid {amount}"

    agent = make_agent(
        [call("pay", amount=60)],
        tools=[pay],
        checks=[invariant(lambda ctx: sum(spent) <= 50, "paid more than 50")],
    )
    result = agent.run("pay")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "invariant_broken")
    assert result.note == "Invariant broken: paid more than 50"
    assert (result.verified, result.output) == (False, "")
    assert result.to_dict()["verified"] is False


def test_a_paused_reply_that_uses_up_the_token_budget_ends_the_run_at_the_pause(make_agent: Any) -> None:
    """A paused reply (`pause_turn`) is sent back within the same turn only while the budget has room:
    one that used up the token budget ends the run as `limit`/`tokens`, and the model is not asked
    again (its next reply would be a call past the budget)."""
    paused = reply(say("Searching."), input_tokens=4000, output_tokens=100, stop_reason="pause_turn")
    agent = make_agent(paused, [finish("done", "found")], budget=Budget(max_turns=5, max_tokens=1000))
    result = agent.run("search")
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.TOKENS)
    assert len(agent.model.requests) == 1
    assert (result.turns, result.input_tokens) == (1, 4000)


def test_a_turn_cut_by_a_cancellation_signals_cancelled() -> None:
    """A run cancelled during a model call: the turn it cut ends with the signal `cancelled` (the
    reason the segment ended), as its span shows, not `error`."""

    class Hangs:
        name, provider = "hangs", "scripted"

        def __init__(self) -> None:
            self.inner = ScriptedModel([[call("look", q="a")]])
            self.calls = 0
            self.hanging = asyncio.Event()

        async def complete(self, request: Any) -> Any:
            self.calls += 1
            if self.calls == 2:
                self.hanging.set()
                await asyncio.Event().wait()
            return await self.inner.complete(request)

    @tool
    def look(q: str) -> str:
        """Look something up."""
        return f"found {q}"

    model, hooks = Hangs(), Hooks()
    agent = Agent("cut", model, tools=[look], hooks=hooks)

    async def scenario() -> Any:
        task = asyncio.create_task(agent.arun("task"))
        await model.hanging.wait()
        task.cancel()
        return await task

    result = asyncio.run(scenario())
    assert result.reason is StopReason.CANCELLED
    assert hooks.observer.signals == [(1, "tool_use"), (2, "cancelled")]


def test_a_summary_asked_in_the_last_turn_leaves_that_turn_its_model_call() -> None:
    """A compaction's summary is a model call inside a turn: the budget checked after it counts no turn
    (the turn already began). In the last turn the budget allows, the turn's own model call still
    follows the summary, and the run stops at the turns limit after it, not at the summary."""
    from test_compaction import WINDOW, ledger_agent, script, summary_reply, summary_requests

    task = "Check every page of the ledger, one a turn."
    with MessagesAPI(*script(), context_window=WINDOW, intercept=summary_reply) as api:
        assert ledger_agent(api).run(task).reason is StopReason.SUCCESS
        [asked] = summary_requests(api)  # requests before it: one a turn
    with MessagesAPI(*script(), context_window=WINDOW, intercept=summary_reply) as again:
        result = ledger_agent(again, Budget(max_turns=asked + 1, max_seconds=None)).run(task)
        assert (result.reason, result.limit, result.turns) == (StopReason.LIMIT, LimitKind.TURNS, asked + 1)
        assert "summarized" not in result.note
        assert summary_requests(again) == [asked] and len(again.requests) == asked + 2


def test_a_check_command_killed_by_a_signal_is_a_failure_not_a_pass(make_agent: Any) -> None:
    """A test command that crashes (killed by a signal: a negative return code) did not pass: the
    `done` is rejected, saying how it exited, and the model keeps working."""
    crash = command("sh", "-c", "kill -KILL $$")
    agent = make_agent([finish("done", "tests pass")], [finish("give_up", "it crashes")], verifiers=[crash])
    result = agent.run("make the tests pass")
    assert result.reason is StopReason.GAVE_UP
    assert result.verifier_failures == ("`sh -c kill -KILL $$` exited -9",)


def test_a_call_id_a_model_uses_again_in_a_later_turn_runs_once_approved_again(make_agent: Any) -> None:
    """Some model servers number their calls afresh each reply (`call_0` every turn). An approved call
    that ran in an earlier turn does not make a later call of the same id look started and lost: the
    later call, approved, runs too."""
    runs = []

    @tool(needs_approval=True)
    def deploy(env: str) -> str:
        """Deploy to an environment."""
        runs.append(env)
        return f"deployed {env}"

    same = {"type": "tool_use", "id": "call_0", "name": "deploy"}
    agent = make_agent(
        [{**same, "input": {"env": "staging"}}],
        [{**same, "input": {"env": "prod"}}],
        [finish("done", "deployed")],
        tools=[deploy],
    )
    first = agent.run("deploy staging then prod")
    second = agent.resume(first.snapshot, approved=True)
    assert (second.reason, second.suspension.pending.arguments) == (StopReason.NEED_HELP, {"env": "prod"})
    third = agent.resume(second.snapshot, approved=True)
    assert third.reason is StopReason.SUCCESS, third.note
    assert runs == ["staging", "prod"]


def test_the_result_as_json_keeps_the_verifier_failures_it_saw(make_agent: Any) -> None:
    """`to_dict` (the CLI's `--json`, the service's run) lists each verifier failure the run saw."""
    checks = iter([False, True])
    agent = make_agent(
        [finish("done", "41")],
        [finish("done", "42")],
        verifiers=[predicate(lambda ctx: next(checks), "the answer is not 42")],
    )
    result = agent.run("What is 6 * 7?")
    assert (result.reason, result.verifier_failures) == (StopReason.SUCCESS, ("the answer is not 42",))
    data = result.to_dict()
    assert data["verifier_failures"] == ["the answer is not 42"]
    assert (data["reason"], data["verified"], data["output"]) == ("success", True, "42")


def test_an_approval_given_to_a_question_is_refused_saying_the_run_wants_an_answer(make_agent: Any) -> None:
    first = make_agent([finish("need_help", "Which month?")]).run("report")
    with pytest.raises(SnapshotError, match="waits for an answer to a question, not for an approval"):
        make_agent().resume(first.snapshot, approved=True)


def test_an_answer_given_at_the_deadline_itself_is_late(make_agent: Any) -> None:
    """The deadline is the first moment a question counts as expired, as the stores' sweep (`deadline <=
    now`) and the service's `expired` flag read it: an answer given then is late, and the help policy
    applies (here: the run ends `help_timeout`)."""
    steps = [finish("need_help", "Which region?")], [finish("done", "EU")]
    first = make_agent(*steps).run("deploy")
    deadline = first.suspension.deadline
    agent = make_agent(*steps)
    late = agent.resume(first.snapshot, "EU", now=deadline)
    assert late.reason is StopReason.HELP_TIMEOUT
    assert agent.model.requests == []
    on_time = make_agent(*steps).resume(first.snapshot, "EU", now=deadline - 0.001)
    assert (on_time.reason, on_time.output) == (StopReason.SUCCESS, "EU")


class Manual(SystemClock):
    """The system's wall clock, and a monotonic clock that moves only when told (`mono`)."""

    def __init__(self) -> None:
        self.mono = 1000.0

    def monotonic(self) -> float:
        return self.mono


def test_a_resumed_run_counts_the_active_time_of_its_earlier_segments(make_agent: Any) -> None:
    """Active time is the run's, across its segments: a resumed run's result adds the time of the
    segment before the question, and its time budget is what was left, not a fresh one."""
    clock = Manual()

    @tool
    def crunch(n: int) -> str:
        """Crunch numbers for a while."""
        clock.mono += 100
        return f"crunched {n}"

    steps = (
        [call("crunch", n=1)],
        [finish("need_help", "Go on?")],
        [call("crunch", n=2)],
        [finish("done", "x")],
    )
    budget = Budget(max_turns=10, max_seconds=150)
    first = make_agent(*steps, tools=[crunch], clock=clock, budget=budget).run("crunch")
    assert (first.reason, first.active_seconds) == (StopReason.NEED_HELP, 100)
    resumed = make_agent(*steps, tools=[crunch], clock=clock, budget=budget).resume(first.snapshot, "yes")
    assert (resumed.reason, resumed.limit) == (StopReason.LIMIT, LimitKind.SECONDS)
    assert resumed.active_seconds == 200  # 100 before the question, 100 after: then the budget is spent


def test_a_resumed_run_keeps_the_verifier_failures_and_tool_calls_of_its_earlier_segments(
    make_agent: Any,
) -> None:
    """The result lists every verifier failure the run saw, those of a segment before a question
    too; and what a check reads as the run's tool calls (`ctx.calls`) after a resume is the calls that
    ran, not a finish's result or the answer."""
    seen: list[list[str]] = []
    verdicts = iter([False, True])
    steps = (
        [call("look", q="a")],
        [finish("done", "first try")],
        [finish("need_help", "Which one?")],
        [call("look", q="b")],
        [finish("done", "second try")],
    )

    @tool
    def look(q: str) -> str:
        """Look something up."""
        return f"found {q}"

    def options() -> dict[str, Any]:
        return {
            "tools": [look],
            "verifiers": [predicate(lambda ctx: next(verdicts), "not yet")],
            "checks": [goal(lambda ctx: bool(seen.append([c.name for c in ctx.calls])), "never")],
        }

    first = make_agent(*steps, **options()).run("look")
    assert (first.reason, first.verifier_failures) == (StopReason.NEED_HELP, ("not yet",))
    seen.clear()
    resumed = make_agent(*steps, **options()).resume(first.snapshot, "the first")
    assert (resumed.reason, resumed.output) == (StopReason.SUCCESS, "second try")
    assert resumed.verifier_failures == ("not yet",)
    assert seen == [["look"], ["look", "look"]]  # after the answered turn, then after the next call


def test_a_tool_cut_by_the_time_budget_is_recorded_and_not_run_again_when_the_run_gets_more(
    make_agent: Any,
) -> None:
    """A tool call the time budget cut off ends the run `limit`/`seconds` with the call's result in the
    journal: a run given more time goes on from it, and never runs that call (its side effect) again."""
    release, runs = threading.Event(), []

    @tool(timeout=30)
    def crawl(url: str) -> str:
        """Crawl a site (slowly)."""
        runs.append(url)
        release.wait(30)
        return "crawled"

    steps = [call("crawl", url="a")], [finish("done", "x")]
    try:
        first = make_agent(*steps, tools=[crawl], budget=Budget(max_seconds=0.5)).run("crawl")
    finally:
        release.set()
    assert (first.reason, first.limit) == (StopReason.LIMIT, LimitKind.SECONDS)
    assert [r.ran for r in first.snapshot.journal if isinstance(r, Result)] == ["crawl"]
    more = make_agent(*steps, tools=[crawl], budget=Budget(max_seconds=0.5))
    resumed = more.resume(first.snapshot, more=Extension(seconds=30))
    assert resumed.reason is StopReason.SUCCESS, resumed.note
    assert runs == ["a"]


@tool
def poke(q: str) -> str:
    """Poke at something."""
    return f"poked {q}"


class Turns(RunObserver):
    """Records each turn's start: its index and whether it continues a turn an earlier segment began."""

    def __init__(self) -> None:
        self.started: list[tuple[int, bool]] = []

    def turn_started(self, index: int, continued: bool = False) -> None:
        self.started.append((index, continued))


class TurnHooks:
    def __init__(self) -> None:
        self.observers: list[Turns] = []

    def run_started(self, info: Any) -> Turns:
        self.observers.append(Turns())
        return self.observers[-1]


def test_a_run_resumed_after_a_cancel_between_turns_begins_a_new_turn_not_a_continued_one(
    make_agent: Any,
) -> None:
    """A cancel seen between turns cuts no turn: the resumed segment's first turn is a turn of its own
    (its span is not `agent.turn.continued`, which is only for a turn a cancellation cut before its
    reply), so turns counted from spans count it."""
    hooks, cancel = TurnHooks(), threading.Event()

    @tool
    def press(q: str) -> str:
        """Press a button (here: the cancel button)."""
        cancel.set()
        return f"pressed {q}"

    steps = [call("press", q="a")], [call("poke", q="b")], [finish("done", "x")]
    agent = make_agent(*steps, tools=[press, poke], hooks=hooks)
    first = asyncio.run(agent.arun("press", cancel=cancel))
    assert (first.reason, first.turns) == (StopReason.CANCELLED, 1)
    resumed = make_agent(*steps, tools=[press, poke], hooks=hooks).resume(first.snapshot)
    assert (resumed.reason, resumed.turns) == (StopReason.SUCCESS, 3)
    assert [o.started for o in hooks.observers] == [[(1, False)], [(2, False), (3, False)]]


def test_a_call_of_a_tool_needing_approval_with_bad_arguments_is_sent_back_not_asked_about(
    make_agent: Any,
) -> None:
    """Nobody is asked to approve a call that could not run: its arguments' problem goes back to the
    model as the call's error result, and the run goes on."""
    ran = []

    @tool(needs_approval=True)
    def refund(order: str, amount: int) -> str:
        """Refund an order."""
        ran.append(order)
        return "refunded"

    agent = make_agent([call("refund", order="A-1")], [finish("give_up", "cannot")], tools=[refund])
    result = agent.run("refund A-1")
    assert result.reason is StopReason.GAVE_UP
    [told] = results_seen_last(agent)
    assert told["is_error"] is True and "amount" in str(told["content"])
    assert ran == []


def results_seen_last(agent: Agent) -> list[dict[str, Any]]:
    last = agent.model.requests[-1].messages[-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def test_an_error_stop_says_its_own_cause_though_the_state_could_not_be_saved(make_agent: Any) -> None:
    """A verifier that raises ends the run `error` saying so, even when it left a state no checkpoint can
    hold: an error saves no state to resume, so that problem does not stand in for the cause."""

    def broken(ctx: RunContext) -> list[str]:
        ctx.state["scratch"] = object()  # no checkpoint can hold it
        raise RuntimeError("the checker is broken")

    agent = make_agent([finish("done", "x")], verifiers=[broken], checkpoint=lambda new: None)
    result = agent.run("check")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "the checker is broken" in result.note
