"""A call cut short by a cancellation has an unknown outcome; the calls its reply made after it were
planned on it. A resumed run does not run them blindly: they are answered "Not run" (as after a
suspension), and the model, which reads the unknown outcome first, decides again."""

from __future__ import annotations

import asyncio

from agent import Agent, RunResult, tool
from agent.models.scripted import ScriptedModel, call, finish, reply

ran: list[str] = []
started: list[asyncio.Event] = []  # set when transfer starts (one event per test's loop)


@tool
async def transfer(amount: int) -> str:
    """Send money (slow)."""
    ran.append(f"transfer {amount}")
    started[-1].set()
    await asyncio.sleep(30)
    return "sent"


@tool
def confirm(note: str) -> str:
    """Tell the customer."""
    ran.append(f"confirm {note}")
    return "told"


@tool
def ledger(amount: int) -> str:
    """Write the ledger (fast)."""
    ran.append(f"ledger {amount}")
    return "written"


def _agent(*first: dict[str, object]) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([reply(*first), reply(finish("done", "paid"))])
    return Agent(name="payer", model=model, tools=[transfer, confirm, ledger]), model


async def _cancelled_in_transfer(agent: Agent) -> RunResult:
    started.append(asyncio.Event())
    task = asyncio.ensure_future(agent.arun("pay 5"))
    await asyncio.wait_for(started[-1].wait(), 10)
    task.cancel()
    return await task


def test_the_calls_after_a_cut_call_are_not_run_on_resume() -> None:
    ran.clear()
    agent, model = _agent(call("transfer", amount=5), call("confirm", note="sent 5"))
    cut = asyncio.run(_cancelled_in_transfer(agent))
    assert cut.reason == "cancelled" and cut.snapshot is not None
    result = agent.resume(cut.snapshot)
    assert (result.reason, result.turns) == ("success", 2)
    assert ran == ["transfer 5"]  # confirm(sent 5) was never run on an unknown transfer
    said = repr(model.requests[-1].messages)
    assert "Outcome unknown" in said and "Not run: the run was stopped while an earlier call" in said


def test_a_call_before_the_cut_one_is_not_run_again_and_none_after_it_runs() -> None:
    ran.clear()
    agent, model = _agent(
        call("ledger", amount=5), call("transfer", amount=5), call("confirm", note="sent 5")
    )
    cut = asyncio.run(_cancelled_in_transfer(agent))
    assert cut.snapshot is not None
    assert agent.resume(cut.snapshot).reason == "success"
    assert ran == ["ledger 5", "transfer 5"]
    assert "written" in repr(model.requests[-1].messages)  # the ledger's result reached the model
