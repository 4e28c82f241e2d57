"""A reply's `finish(done)` calls are verified once: after the verifiers rejected one, the reply's
later `finish(done)` calls are answered without running them again. Before, a reply of 50 of them
ran the verifiers 50 times in one turn: 50 paid calls of an evaluator (the judge's model), past the
cost budget the loop checks only before each turn (probe17b)."""

from __future__ import annotations

from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, StopReason
from agent.models.anthropic import AnthropicModel
from agent.models.scripted import ScriptedModel, finish
from agent.verify import VERDICT_TOOL, evaluator

JUDGE = "claude-haiku-5-5"


def test_many_dones_in_one_reply_run_the_verifiers_once(make_agent) -> None:
    runs: list[str] = []

    def check(ctx) -> list[str]:
        runs.append(ctx.note)
        return ["the report names no source"]

    steps = [[finish("done", f"try {i}") for i in range(50)], [finish("done", "with sources")]]
    agent = make_agent(*steps, verifiers=[check], budget=Budget(max_turns=2))
    result = agent.run("t")
    assert runs == ["try 0", "with sources"]  # once a reply
    assert result.reason is StopReason.LIMIT  # two turns, both rejected: the turn budget ran out
    results = agent.model.requests[1].messages[-1]["content"]
    assert results[0]["content"].startswith("Criterion not met: the report names no source")
    assert all(r["content"].startswith("Not checked: the verifiers already rejected") for r in results[1:])
    assert len(results) == 50 and all(r["is_error"] for r in results)


def test_a_give_up_after_a_rejected_done_in_the_same_reply_still_ends_the_run(make_agent) -> None:
    steps = [[finish("done", "a"), finish("done", "b"), finish("give_up", "cannot find sources")]]
    agent = make_agent(*steps, verifiers=[lambda ctx: ["no sources"]])
    result = agent.run("t")
    assert (result.reason, result.note) == (StopReason.GAVE_UP, "cannot find sources")
    assert result.verifier_failures == ("no sources",)


def test_an_evaluator_is_asked_once_a_reply_whatever_the_model_sends() -> None:
    rejects = message(tool_use(VERDICT_TOOL, {"passed": False, "reasons": ["not committed"]}))
    with MessagesAPI(*[rejects] * 5) as api:
        judge = evaluator(AnthropicModel(JUDGE, api_key="sk-ant-test", base_url=api.url), "committed")
        model = ScriptedModel([[finish("done", f"done {i}") for i in range(5)]])
        agent = Agent("p", model, verifiers=[judge], budget=Budget(max_turns=1))
        result = agent.run("Fix and commit.")
        assert (result.reason, result.limit) == (StopReason.LIMIT, "turns")
        assert len(api.requests) == 1  # one paid judge call, not five
        assert result.verifier_failures == ("not committed",)
