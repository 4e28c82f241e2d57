"""The agent name of a foreign run is a metric label: checked as `task_type` is (probe19a).

`agent_name=5` was counted as agent "5", a blank one as a blank label, and a list made the metrics
part fail on every hook (logged), so the run's stop was never counted: the run vanished from the
dashboards. A native `Agent` refuses such a name, and the integrations refuse such a task type.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel, assistant_message
from integrations_support import FakeCLI, Rig, graph_of, result, rigged, says
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.test import TestModel

from agent import observe_run
from agent.errors import ConfigError
from agent.integrations import claude_agent_sdk as claude
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.result import StopReason

set_tracing_disabled(True)  # the SDK would export its own traces to OpenAI


def oa_agent(name: str = "oa_named") -> OAAgent[Any]:
    return OAAgent(name=name, model=ScriptedModel([ModelStep(output=[assistant_message("hi")])]))


def home_grown(hooks: Any, name: Any) -> Any:
    with observe_run(hooks, agent=name, task_type="t") as run:
        pass
    return run.result


def oa_streamed(hooks: Any, name: Any) -> Any:
    return oa.run_streamed(oa_agent(), "hi", hooks=hooks, agent_name=name)


def lg_streamed(hooks: Any, name: Any) -> Any:
    return lg.astream(graph_of([says("hi")]), {"messages": []}, hooks=hooks, agent_name=name)


ENTRIES: dict[str, Callable[[Any, Any], Any]] = {
    "pydantic_ai": lambda h, name: pai.run(PAIAgent(TestModel()), "hi", hooks=h, agent_name=name),
    "openai_agents": lambda h, name: oa.run(oa_agent(), "hi", hooks=h, agent_name=name),
    "openai_agents.run_streamed": oa_streamed,  # refused at the call, before any stream is read
    "langgraph": lambda h, name: lg.run(graph_of([says("hi")]), {"messages": []}, hooks=h, agent_name=name),
    "langgraph.astream": lg_streamed,
    "claude_agent_sdk": lambda h, name: claude.run(
        "hi", transport=FakeCLI([result()]), hooks=h, agent_name=name
    ),
    "observe_run": home_grown,
}


def counted(rig: Rig) -> float:
    return sum(s.value for m in rig.registry.collect() if m.name == "agent_stops" for s in m.samples)


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("name", [5, "   ", ["triage"]])
def test_an_agent_name_that_is_no_label_is_refused_before_the_run(entry: str, name: Any) -> None:
    with rigged() as rig:
        with pytest.raises(ConfigError, match=r"agent.?name must be a non-empty string \(a metric label\)"):
            ENTRIES[entry](rig.hooks, name)
        assert counted(rig) == 0


def test_no_agent_name_or_an_empty_one_is_the_framework_agents_own() -> None:
    with rigged() as rig:
        for name in (None, ""):
            assert oa.run(oa_agent(), "hi", hooks=rig.hooks, agent_name=name).agent == "oa_named"
        assert rig.stops("oa_named", "default", "success") == 2
        for name in (None, ""):  # the Claude Agent SDK's runs have no agent of their own: its default
            assert claude.run("hi", transport=FakeCLI([result()]), agent_name=name).agent == "claude_agent"


def test_a_framework_agent_whose_own_name_is_blank_says_to_name_it() -> None:
    with pytest.raises(ConfigError, match="name it with agent_name="):
        oa.run(oa_agent("  "), "hi")
    assert oa.run(oa_agent("  "), "hi", agent_name="triage").reason is StopReason.SUCCESS


def test_a_stream_given_a_good_name_still_runs() -> None:
    async def read() -> Any:
        stream = oa_streamed(None, "triage")
        async for _ in stream.stream_events():
            pass
        return stream.result

    assert asyncio.run(read()).agent == "triage"


# -- the tool names a run's calls are labelled by ------------------------------------------------


def tool_series(rig: Rig) -> set[str]:
    return {
        s.labels["tool"] for m in rig.registry.collect() if m.name == "agent_tool_calls" for s in m.samples
    }


def test_tools_given_as_one_string_is_refused_saying_put_it_in_a_list() -> None:
    """`tools="search"` was read letter by letter: a series for each of s, e, a, r, c, h (18 in all,
    at zero) and the run's own calls of `search` counted as "other"."""
    with rigged() as rig:
        with (
            pytest.raises(ConfigError, match=r"tools=\['search'\]"),
            observe_run(rig.hooks, agent="a", task_type="t", tools="search"),
        ):
            pass
        with pytest.raises(ConfigError, match=r"tools=\['look'\]"):
            lg.run(graph_of([says("hi")]), {"messages": []}, hooks=rig.hooks, tools="look")
        with (
            pytest.raises(ConfigError, match="strings, not 5"),
            observe_run(rig.hooks, agent="a", task_type="t", tools=["search", 5]),
        ):
            pass
        assert tool_series(rig) == set()


def test_tools_as_a_list_label_their_calls_and_none_is_no_tools() -> None:
    for tools, label in ((["search"], "search"), (None, "other")):
        with rigged() as rig:
            with (
                observe_run(rig.hooks, agent="a", task_type="t", tools=tools) as run,
                run.turn(),
                run.tool("search", {"q": "x"}) as call,
            ):
                call.result("found")
            assert tool_series(rig) == {label}


# -- a home-grown loop's own ceilings -------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        ({"turns": "ten"}, r"limits\['turns'\] is a ceiling, a finite number >= 0, not 'ten'"),
        ({"turns": float("nan")}, "not nan"),
        ({"turns": -1}, "not -1"),
        ({"money": 5}, "'money' is no limit kind: use one of turns, seconds, tokens, cost"),
        (["turns"], r"limits is a dict of ceilings by limit kind \(say \{'turns': 10\}\)"),
    ],
)
def test_a_home_grown_ceiling_that_is_none_is_refused_before_the_run(limits: Any, said: str) -> None:
    """`{"turns": "ten"}` made the metrics part fail on every hook: the run's stop went uncounted.
    `{"money": 5}` was dropped, NaN and -1 drawn as ceilings, a list a bare ValueError."""
    with rigged() as rig:
        with (
            pytest.raises(ConfigError, match=said),
            observe_run(rig.hooks, agent="a", task_type="t", limits=limits),
        ):
            pass
        assert counted(rig) == 0


def test_a_home_grown_ceiling_is_reported_and_the_run_counted() -> None:
    with rigged() as rig:
        with observe_run(rig.hooks, agent="a", task_type="t", limits={"turns": 8, "cost": 0.5}):
            pass
        assert rig.value("agent_budget_limit", agent="a", task_type="t", limit="turns") == 8
        assert rig.value("agent_budget_limit", agent="a", task_type="t", limit="cost") == 0.5
        assert rig.stops("a", "t", "success") == 1


@pytest.mark.parametrize("cost", [float("inf"), float("nan"), -1.0, "0.1", True])
def test_a_home_grown_reply_of_a_cost_that_is_no_amount_gets_a_clear_error(cost: Any) -> None:
    """inf set `agent_cost_usd_total` to inf for good (every rate over it broken until a restart),
    NaN and -1 were the run's cost, True a dollar, and a string a bare TypeError. As impossible token
    counts: a `ConfigError` out of the block, the run ended `error`."""
    with rigged() as rig:
        with (
            pytest.raises(ConfigError, match=r"cost_usd=\.\.\.\) takes a finite number of dollars >= 0"),
            observe_run(rig.hooks, agent="a", task_type="t") as run,
            run.turn(),
            run.model_call() as call,
        ):
            call.reply(input_tokens=3, output_tokens=2, cost_usd=cost)
        assert run.result is not None and run.result.reason is StopReason.ERROR
        assert rig.value("agent_cost_usd_total", agent="a", task_type="t", stop_reason="error") == 0
