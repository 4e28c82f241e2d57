"""The turn ceilings a foreign run runs under, as a native run's (probe19a).

`agent_budget_limit{limit="turns"}` is the ceiling the "Turns per successful run vs the turns
ceiling" panel draws. An OpenAI Agents SDK run given no `max_turns` runs under the SDK's default
(10), and a Pydantic AI run given no `usage_limits` under its default `request_limit` (50): both
stop there as `limit`/`turns`, but no ceiling was reported, so the panel showed none for them.
"""

from __future__ import annotations

import asyncio

from agents import Agent as OAAgent
from agents.testing.model import ModelStep, ScriptedModel, assistant_message
from foreign_agents import oa_agent
from integrations_support import Rig, rigged
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import UsageLimits

from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.result import StopReason


def turns_ceiling(rig: Rig, agent: str) -> float | None:
    labels = {"agent": agent, "task_type": "default", "limit": "turns"}
    return rig.registry.get_sample_value("agent_budget_limit", labels)


def test_an_openai_agents_run_given_no_max_turns_reports_the_sdks_default_ceiling() -> None:
    with rigged() as rig:
        agent = OAAgent(name="says", model=ScriptedModel([ModelStep(output=[assistant_message("hi")])]))
        assert oa.run(agent, "hi", hooks=rig.hooks).reason is StopReason.SUCCESS
        assert turns_ceiling(rig, "says") == 10
    with rigged() as rig:  # one given stays as given; None (no limit) reports none
        agent = OAAgent(name="says", model=ScriptedModel([ModelStep(output=[assistant_message("hi")])]))
        oa.run(agent, "hi", hooks=rig.hooks, max_turns=4)
        assert turns_ceiling(rig, "says") == 4
    with rigged() as rig:
        agent = OAAgent(name="says", model=ScriptedModel([ModelStep(output=[assistant_message("hi")])]))
        oa.run(agent, "hi", hooks=rig.hooks, max_turns=None)
        assert turns_ceiling(rig, "says") is None


def test_an_openai_agents_resume_reports_the_ceiling_its_saved_state_runs_under() -> None:
    suspended = oa.run(oa_agent(), "clean up a", max_turns=6)
    assert suspended.reason is StopReason.NEED_HELP
    with rigged() as rig:
        done = oa.resume(oa_agent(), oa.state_of(suspended), True, hooks=rig.hooks)
        assert done.reason is StopReason.SUCCESS
        assert turns_ceiling(rig, "oa_remover") == 6  # the SDK goes on under the saved state's limit


def test_a_pydantic_ai_run_given_no_usage_limits_reports_pydantic_ais_default_request_limit() -> None:
    with rigged() as rig:
        assert (
            pai.run(PAIAgent(TestModel(), name="plain"), "hi", hooks=rig.hooks).reason is StopReason.SUCCESS
        )
        assert turns_ceiling(rig, "plain") == UsageLimits().request_limit == 50
    with rigged() as rig:
        limits = UsageLimits(request_limit=3)
        asyncio.run(pai.arun(PAIAgent(TestModel(), name="plain"), "hi", hooks=rig.hooks, usage_limits=limits))
        assert turns_ceiling(rig, "plain") == 3
