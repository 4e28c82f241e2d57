"""probe24a: a reply sent to a waiting run with Temporal's own CLI (`temporal workflow update execute`) and
a made-up input is refused, saying what the input must be, and the run still waits; against a real
Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_cli, temporal_fixture, waiting
from test_probe22d_operator import payer

from agent import Agent, Budget
from agent.durable.runner import Catalog
from agent.durable.store import RunStatus
from agent.models.scripted import ScriptedModel, finish

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


def asker(state: dict[str, Any]) -> Agent:
    script = [[finish("need_help", "Which account?")], [finish("done", "asked")]]
    return Agent(name="asker", model=ScriptedModel(script), budget=Budget(max_turns=6))


def catalog() -> Catalog:
    found = Catalog()
    found.register("payer", payer)
    found.register("asker", asker)
    return found


async def update_by_hand(server: TemporalServer, run_id: str, name: str, *inputs: str) -> tuple[int, str]:
    """What an operator types: `temporal workflow update execute -w RUN_ID --name NAME --input ...`."""
    argv = ["workflow", "update", "execute", "-w", run_id, "--name", name, "--address", server.address]
    for given in inputs:
        argv += ["--input", given]
    proc = await asyncio.create_subprocess_exec(
        temporal_cli(), *argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode()


@pytest.mark.parametrize(
    ("name", "inputs", "said"),
    [
        ("approve", ['{"approved": false}'], "WAIT must be true or false, not {'approved': False}"),
        ("approve", ['"no"'], "WAIT must be true or false, not 'no'"),
        ("approve", ["true", "-1"], "segments must be the run's segments count as read (a whole number)"),
        ("deny", ['"too much"', '"yes"'], "WAIT must be true or false, not 'yes'"),
    ],
)
def test_an_approval_sent_by_hand_with_a_made_up_input_is_refused_and_the_run_still_waits(
    temporal: TemporalServer, name: str, inputs: list[str], said: str
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            run_id = await runs.start("payer", "Pay the invoice", wait=False)
            assert isinstance(run_id, str)
            await waiting(runs, run_id)
            code, out = await update_by_hand(temporal, run_id, name, *inputs)
            # was: taken as an approval (the payment made), or as a denial waited on with a made-up `wait`
            assert code != 0, out
            assert said in out, out
            record = await runs.record(run_id)
            assert record is not None and record.status is RunStatus.WAITING
            done = await runs.approve(run_id)  # the run still takes a real reply
            assert (done.reason, done.output) == ("success", "paid")

    asyncio.run(scenario())


def test_replies_sent_by_hand_as_endstates_client_sends_them_are_taken(temporal: TemporalServer) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            paying = await runs.start("payer", "Pay the invoice", wait=False)
            asking = await runs.start("asker", "Ask", wait=False)
            assert isinstance(paying, str) and isinstance(asking, str)
            await waiting(runs, paying)
            await waiting(runs, asking)
            code, out = await update_by_hand(temporal, paying, "approve")  # no input at all
            assert code == 0, out
            code, out = await update_by_hand(temporal, asking, "answer", '"the main one"', "true")
            assert code == 0, out
            for run_id, output in ((paying, "paid"), (asking, "asked")):
                result = await runs.result(run_id)
                assert (result.reason, result.output) == ("success", output)

    asyncio.run(scenario())
