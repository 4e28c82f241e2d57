"""The scripted model finds its place from the request at every call: a run whose model calls are
served by several models of one script (the workers of a fleet, each with its own cached agent) plays
each step once, with the turns and result one model gives, through exception steps, paused replies,
replies cut at `max_tokens`, a context-full error and the compactions the history policy makes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from agent import (
    Agent,
    Budget,
    HistoryPolicy,
    ModelError,
    RetryPolicy,
    RunResult,
    StopReason,
    TransientModelError,
    tool,
)
from agent.history import CONTEXT_FULL, SUMMARIZE, ModelSummary
from agent.journal import Entry, Note, Reply, Shrunk
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import ScriptedModel, Step, call, finish, reply, say
from agent.snapshot import Checkpoint

WINDOW = 10_000
FAST_RETRY = RetryPolicy(max_attempts=5, base_delay=0.001, max_delay=0.002, jitter=False)
COUNTED: list[int] = []  # the `count` calls, in the order they ran


@tool
def count(n: int) -> str:
    """Count `n`."""
    COUNTED.append(n)
    return f"counted {n}"


class Fleet:
    """A run's model calls served by several models in turn, as a fleet's workers serve a run's
    turns, each from its own agent: the next model at every call, or (`by_turn`) at every turn."""

    provider = "scripted"
    context_window = WINDOW

    def __init__(self, *models: ScriptedModel, by_turn: bool = False) -> None:
        self.models, self.by_turn, self.calls = models, by_turn, 0

    @property
    def name(self) -> str:
        return self.models[0].name

    async def complete(self, request: ModelRequest) -> ModelReply:
        at = request.replies if self.by_turn else self.calls
        self.calls += 1
        return await self.models[at % len(self.models)].complete(request)


@dataclass
class Ran:
    """A run's result, its journal as checkpointed, and the `count` calls it made."""

    result: RunResult
    journal: list[Entry]
    counted: list[int]


def run(*models: ScriptedModel, by_turn: bool = False, history: HistoryPolicy | None = None) -> Ran:
    """A run whose model calls `models` serve in turn (see `Fleet`)."""
    COUNTED.clear()
    journal: list[Entry] = []

    def saved(new: Checkpoint) -> None:
        journal[new.first :] = new.entries

    agent = Agent(
        name="counter", model=Fleet(*models, by_turn=by_turn), tools=[count], retry=FAST_RETRY,
        budget=Budget(max_turns=30, max_seconds=60), history=history or HistoryPolicy(keep_last=1),
        checkpoint=saved,
    )  # fmt: skip
    result = agent.run("Count to five.")
    assert result.reason is StopReason.SUCCESS, result.note
    return Ran(result, journal, list(COUNTED))


def played(ran: Ran) -> list[tuple[str, str, str]]:
    """The run's replies as the journal keeps them: id, stop reason and text."""
    replies = [e for e in ran.journal if isinstance(e, Reply)]
    return [
        (r.response_id, r.stop_reason, " ".join(p.text for p in r.parts if hasattr(p, "text")))
        for r in replies
    ]


def counting(*more: Step) -> list[Step]:
    """Counting 1 to 5 with `more` steps between 2 and 3, then finishing."""
    steps: list[Step] = [[say("one"), call("count", n=1)], [say("two"), call("count", n=2)], *more]
    steps += [[say(str(n)), call("count", n=n)] for n in (3, 4, 5)]
    return [*steps, [finish("done", "counted to five")]]


AWKWARD = counting(
    TransientModelError("529 overloaded", error_type="overloaded"),
    reply(say("thinking, paused"), stop_reason="pause_turn"),
    reply(say("cut off"), stop_reason="max_tokens"),
    TransientModelError("529 again", error_type="overloaded"),
    reply(say("filled the window"), stop_reason="model_context_window_exceeded"),
)
# A turn's model calls served by one model: the retry after a context-full error meets the next step. (A
# retry served by another model meets the error again, as that model cannot tell it was raised: the
# request is the one it would be sent first; for a transient error that is one more retry, but the
# window cannot be shrunk twice here.)
TOO_LONG = counting(ModelError("prompt is too long", error_type=CONTEXT_FULL), [say("shrunk")])


@pytest.mark.parametrize(
    ("script", "by_turn"),
    [(counting(), True), (counting(), False), (AWKWARD, True), (AWKWARD, False), (TOO_LONG, True)],
    ids=["plain-by-turn", "plain-by-call", "awkward-by-turn", "awkward-by-call", "too-long-by-turn"],
)
def test_models_of_one_script_serving_a_run_in_turn_play_each_step_once(script: list[Step], by_turn: bool):
    alone = ScriptedModel(script)
    expected = run(alone)
    assert expected.counted == [1, 2, 3, 4, 5]
    alone.assert_used_up()

    models = [ScriptedModel(script), ScriptedModel(script)]
    ran = run(*models, by_turn=by_turn)

    assert ran.counted == [1, 2, 3, 4, 5]  # no step played twice, none skipped
    assert played(ran) == played(expected)
    assert (ran.result.turns, ran.result.output) == (expected.result.turns, expected.result.output)
    assert all(len(m.requests) > 2 for m in models)  # both served the run
    assert any(used_up(m) for m in models)  # the one that played the finish reached the script's end
    assert not used_up(ScriptedModel(script))


BIG = 9_000  # a reply's input tokens past `compact_at` of the window: the history is compacted after it


def test_three_models_serving_a_run_whose_history_is_compacted_between_them():
    """A compaction takes older replies out of what the model is sent: the requests after it hold fewer
    replies than the run made, and each model still goes on after the last step played."""
    script = counting(reply(say("a long one"), call("count", n=20), input_tokens=BIG))
    alone = run(ScriptedModel(script))
    assert alone.counted == [1, 2, 20, 3, 4, 5]
    assert any(isinstance(e, Shrunk) and e.summary for e in alone.journal)

    models = [ScriptedModel(script) for _ in range(3)]
    ran = run(*models)

    assert ran.counted == [1, 2, 20, 3, 4, 5]
    assert played(ran) == played(alone)
    ids = [c.id for e in ran.journal if isinstance(e, Reply) for c in e.calls]
    assert len(ids) == len(set(ids)) == 7  # numbered by step: unique after the compaction too
    last = models[(len(played(ran)) - 1) % 3].requests[-1]  # the finishing call's request
    assert last.replies < len(played(ran)) - 1  # the compaction left replies out of it


def test_a_summary_the_scripted_model_writes_is_a_step_of_its_own():
    """The summary call plays its step once: its request holds only the older turns."""
    script = counting(
        reply(say("a long one"), call("count", n=20), input_tokens=BIG),
        [say("<summary>counted 1, 2, 20</summary>")],
    )
    model = ScriptedModel(script)
    ran = run(model, history=HistoryPolicy(keep_last=1, summarize=ModelSummary()))

    assert ran.counted == [1, 2, 20, 3, 4, 5]
    asked = [r for r in model.requests if r.journal[-1] == Note(SUMMARIZE)]
    assert len(asked) == 1
    [shrunk] = [e for e in ran.journal if isinstance(e, Shrunk)]
    assert shrunk.summary == "counted 1, 2, 20"
    model.assert_used_up()


def test_one_model_plays_its_script_on_across_runs_one_after_another():
    model = ScriptedModel([[finish("done", "first")], [finish("done", "second")]])
    agent = Agent(name="twice", model=model, budget=Budget(max_turns=3, max_seconds=30))
    assert [agent.run("task").output for _ in range(2)] == ["first", "second"]
    model.assert_used_up()


def test_a_fresh_model_goes_on_after_the_last_reply_the_request_holds():
    """After exception steps, and with older replies compacted away: the reply's id names its step, where
    counting the request's replies would place the model before a step already played."""
    steps: list[Step] = [TransientModelError("429"), [say("one")], TransientModelError("429"), [say("two")]]
    steps.append([say("three")])
    first = ScriptedModel(steps)
    task = ModelRequest.of_messages("", [{"role": "user", "content": "task"}], [], 64)
    with pytest.raises(TransientModelError):
        play(first, task)
    one = play(first, task)
    after_one = ModelRequest("", (*task.journal, one.entry(one.parts)), [], 64)
    with pytest.raises(TransientModelError):
        play(first, after_one)
    two = play(first, after_one)
    assert [one.response_id, two.response_id] == ["msg_002", "msg_004"]

    compacted = ModelRequest(
        "", (*task.journal, Note("[the turns before, summarized]"), two.entry(two.parts)), [], 64
    )
    assert compacted.replies == 1
    assert play(ScriptedModel(steps), compacted).text == "three"


def test_then_steps_are_placed_past_the_script_by_a_fresh_model():
    steps: list[Step] = [TransientModelError("429"), TransientModelError("429"), [say("one")]]
    model = ScriptedModel(steps, then=lambda turn: [say(f"turn {turn}")])
    task = ModelRequest.of_messages("", [{"role": "user", "content": "task"}], [], 64)
    for _ in range(2):
        with pytest.raises(TransientModelError):
            play(model, task)
    one = play(model, task)
    after_one = ModelRequest("", (*task.journal, one.entry(one.parts)), [], 64)
    two = play(model, after_one)
    assert (two.text, two.response_id) == ("turn 2", "msg_004_then")  # numbered on from "one"
    after_two = ModelRequest("", (*after_one.journal, two.entry(two.parts)), [], 64)
    assert play(ScriptedModel(steps, then=lambda turn: [say(f"turn {turn}")]), after_two).text == "turn 3"


def play(model: ScriptedModel, request: ModelRequest) -> ModelReply:
    return asyncio.run(model.complete(request))


def used_up(model: ScriptedModel) -> bool:
    try:
        model.assert_used_up()
    except AssertionError:
        return False
    return True
