"""A tool's own model calls (`ctx.charge`) count in the run's budget when the tool made them.

The loop drained `ctx.charges` only after the verifiers ran, so a tool that called a model (a
sub-agent, a summarizer) and charged it was counted only if a later `finish(done)` reached the
verifiers: a run that gave up, or stopped at a limit, returned too few tokens, and the budget
checked before the next turn never saw them (a token budget the tool used up did not stop the
run). A charge that is no model call (a tool's bug) ended the run as `error` with an
AttributeError from deep in the loop; now `ctx.charge` refuses it where it is made, and the tool
gets the error as its result.
"""

from __future__ import annotations

from agent import Agent, Budget, StopReason, tool
from agent.context import RunContext
from agent.journal import Result
from agent.models.base import ModelReply
from agent.models.scripted import ScriptedModel, call, finish


@tool
def ask_helper(ctx: RunContext) -> str:
    """Ask a helper model."""
    ctx.charge("helper", ModelReply(content=[], input_tokens=700, output_tokens=300))
    return "the helper says: 42"


def test_a_tools_charge_counts_in_the_result_of_a_run_that_gives_up() -> None:
    model = ScriptedModel([[call("ask_helper")], [finish("give_up", "no luck")]])
    result = Agent(name="a", model=model, tools=[ask_helper]).run("t")  # type: ignore[list-item]

    assert result.reason is StopReason.GAVE_UP
    assert result.usage.input_tokens >= 700 and result.usage.output_tokens >= 300


def test_a_tools_charge_that_uses_up_the_token_budget_stops_the_run_before_the_next_model_call() -> None:
    model = ScriptedModel([[call("ask_helper")], [call("ask_helper")], [finish("done", "ok")]])
    agent = Agent(name="a", model=model, tools=[ask_helper], budget=Budget(max_tokens=500))  # type: ignore[list-item]

    result = agent.run("t")

    assert (result.reason, result.limit) == (StopReason.LIMIT, "tokens")
    assert len(model.requests) == 1


def test_a_charge_that_is_no_model_call_is_the_tools_error_not_the_runs() -> None:
    @tool
    def sloppy(ctx: RunContext) -> str:
        """Charge garbage."""
        ctx.charge("helper", {"input_tokens": 5})  # type: ignore[arg-type]
        return "done"

    model = ScriptedModel([[call("sloppy")], [finish("done", "ok")]])
    result = Agent(name="a", model=model, tools=[sloppy]).run("t")  # type: ignore[list-item]

    assert result.reason is StopReason.SUCCESS
    [res] = [e for e in model.requests[-1].journal if isinstance(e, Result)]
    assert res.is_error and "ModelReply" in res.text and "dict" in res.text
