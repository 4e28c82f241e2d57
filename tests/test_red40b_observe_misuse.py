"""red40b: `observe_run`'s calls nested or ordered against its contract (a turn holds one model call and,
after its reply, the tool calls it asks for) are a clear ConfigError, the run ends `error` once, and no
call is counted twice. Before, each was taken and counted: a model call inside another as two calls (two
turns without `run.turn()`), a second reply as a second call, a stop after the stop returned the first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from integrations_support import Rig, rigged

from agent import observe_run
from agent.errors import ConfigError
from agent.integrations._homegrown import ObservedRun
from telemetry import names as n

TASK = "misuse"
CHAT = {
    n.LABEL_AGENT: "raw",
    n.LABEL_TASK_TYPE: TASK,
    n.LABEL_GEN_AI_OPERATION_NAME: n.OP_CHAT,
    n.LABEL_GEN_AI_PROVIDER_NAME: "anthropic",
    n.LABEL_GEN_AI_REQUEST_MODEL: "m",
    n.LABEL_GEN_AI_TOKEN_TYPE: n.TOKEN_INPUT,
}


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as r:
        yield r


def calls_counted(rig: Rig) -> tuple[float, float]:
    """The model calls the token histogram counted, and their input tokens."""
    metric = n.METRIC_GEN_AI_TOKEN_USAGE
    return rig.value(f"{metric}_count", **CHAT), rig.value(f"{metric}_sum", **CHAT)


def nested_calls(run: ObservedRun) -> None:
    with run.turn(), run.model_call() as outer:
        with run.model_call() as inner:
            inner.reply(input_tokens=5)
        outer.reply(input_tokens=7)


def nested_calls_without_turns(run: ObservedRun) -> None:
    with run.model_call() as outer:
        with run.model_call() as inner:
            inner.reply(input_tokens=5)
        outer.reply(input_tokens=7)


def two_replies(run: ObservedRun) -> None:
    with run.turn(), run.model_call() as call:
        call.reply(input_tokens=5)
        call.reply(input_tokens=5)


def a_reply_after_the_block(run: ObservedRun) -> None:
    with run.model_call() as call:
        pass  # its reply given later, once the block (and the call) ended
    call.reply(input_tokens=5)


def two_answered_calls_in_one_turn(run: ObservedRun) -> None:
    with run.turn():
        with run.model_call() as first:
            first.reply(input_tokens=5, stop_reason="tool_use")
        with run.tool("look") as t:
            t.result("seen")
        with run.model_call() as second:
            second.reply(input_tokens=5)


def a_tool_inside_a_model_call(run: ObservedRun) -> None:
    with run.turn(), run.model_call() as call:
        with run.tool("look") as t:
            t.result("seen")
        call.reply(input_tokens=5, stop_reason="tool_use")


def a_turn_inside_a_model_call(run: ObservedRun) -> None:
    with run.model_call() as call:
        with run.turn():
            pass
        call.reply(input_tokens=5)


def a_turn_inside_a_tool_call(run: ObservedRun) -> None:
    with run.turn(), run.model_call() as call:
        call.reply(input_tokens=5, stop_reason="tool_use")
    with run.tool("look"), run.turn():
        pass


def a_model_call_inside_a_tool_call(run: ObservedRun) -> None:
    with run.model_call() as call:
        call.reply(input_tokens=5, stop_reason="tool_use")
    with run.tool("summarize"), run.model_call() as inner:
        inner.reply(input_tokens=9)


MISUSES: list[tuple[Callable[[ObservedRun], None], str, int, float]] = [  # the misuse, says, turns, tokens
    (nested_calls, r"run.model_call\(\) inside a model call", 1, 0),
    (nested_calls_without_turns, r"run.model_call\(\) inside a model call", 1, 0),
    (two_replies, r"call.reply\(\) of a model call that has its reply", 1, 5),
    (a_reply_after_the_block, r"or whose `with` block ended: one model call has one reply", 1, 0),
    (two_answered_calls_in_one_turn, r"run.model_call\(\) after this turn's model call was answered", 1, 5),
    (a_tool_inside_a_model_call, r"run.tool\('look'\) inside a model call: the tool calls come after", 1, 0),
    (a_turn_inside_a_model_call, r"run.turn\(\) inside a model call", 1, 0),
    (a_turn_inside_a_tool_call, r"run.turn\(\) inside a tool call", 1, 5),
    (a_model_call_inside_a_tool_call, r"run.model_call\(\) inside a tool call", 1, 5),
]


@pytest.mark.parametrize(("misuse", "says", "turns", "tokens"), MISUSES, ids=[m[0].__name__ for m in MISUSES])
def test_a_call_against_the_contract_is_refused_and_counted_once(
    rig: Rig, misuse: Callable[[ObservedRun], None], says: str, turns: int, tokens: float
) -> None:
    with (
        pytest.raises(ConfigError, match=says),
        observe_run(rig.hooks, agent="raw", task_type=TASK, model="m") as run,
    ):
        misuse(run)
    assert run.result is not None
    assert (run.result.reason, run.result.error_type, run.result.turns) == ("error", "ConfigError", turns)
    assert run.result.input_tokens == tokens and calls_counted(rig)[1] == tokens
    assert rig.stops("raw", TASK, "error") == 1


@pytest.mark.parametrize(
    ("end", "name"),
    [
        (lambda run: run.succeed("again"), "succeed"),
        (lambda run: run.limit("tokens"), "limit"),
        (lambda run: run.give_up("no"), "give_up"),
        (lambda run: run.need_help("which?"), "need_help"),
        (lambda run: run.stop("no_progress"), "stop"),
    ],
)
def test_a_second_end_is_refused_and_the_first_stands(rig: Rig, end: Any, name: str) -> None:
    """Before: a second end returned the first result without a word (`run.succeed()` after
    `run.limit("turns")` gave back the limit), so a loop believed it had ended as it said."""
    with observe_run(rig.hooks, agent="raw", task_type=TASK, model="m") as run:
        with run.turn(), run.model_call() as call:
            call.reply(input_tokens=5)
        run.limit("turns")
        with pytest.raises(
            ConfigError, match=rf"run.{name}\(\) after the run ended \(limit\): its result is final"
        ):
            end(run)
    assert run.result is not None and (run.result.reason, run.result.limit) == ("limit", "turns")
    assert rig.stops("raw", TASK, "limit", "turns") == 1 and calls_counted(rig) == (1, 5)


def test_a_reply_after_the_run_ended_is_refused() -> None:
    with (
        observe_run(None, agent="raw", task_type=TASK, model="m") as run,
        run.turn(),
        run.model_call() as call,
    ):
        run.limit("seconds")
        with pytest.raises(ConfigError, match=r"call.reply\(\) after the run ended \(limit\)"):
            call.reply(input_tokens=5)
    assert run.result is not None and run.result.input_tokens == 0


def test_what_the_contract_allows_still_goes(rig: Rig) -> None:
    """A failed call tried again in its turn, tools after the turn's block (still that turn's) and tool
    calls at once (parallel tools overlap), a stop inside a tool call (an approval it needs)."""
    with observe_run(rig.hooks, agent="raw", task_type=TASK, model="m") as run:
        with run.turn():
            with pytest.raises(TimeoutError), run.model_call():
                raise TimeoutError("the API timed out")
            with run.model_call() as call:
                call.reply(input_tokens=5, stop_reason="tool_use")
        with run.tool("a") as a, run.tool("b") as b:
            a.result("one")
            b.result("two")
        with run.turn(), run.model_call() as call:
            call.reply(input_tokens=7, stop_reason="tool_use")
        with run.tool("deploy"):
            run.need_help("deploy to production?")
    assert run.result is not None and (run.result.reason, run.result.turns) == ("need_help", 2)
    assert run.result.input_tokens == 12 and calls_counted(rig) == (2, 12)
