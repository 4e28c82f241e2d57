"""Probe 35c: a LangGraph graph whose output is a string (the functional API's `@entrypoint` returning
its answer) has that string as the run's output, as every other integration gives a string output.

The output text was the output as JSON when the state has no `messages`: a string came back
quoted (`'"the answer"'`), in `RunResult.output` and in the note the verifiers read.
"""

from __future__ import annotations

from typing import Any

from integrations_support import usage
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task

from agent import StopReason, predicate
from agent.integrations import langgraph as lg


def answering_flow() -> Any:
    model = GenericFakeChatModel(messages=iter([AIMessage("the answer", usage_metadata=usage(10, 4))]))

    @task
    async def ask(question: str) -> Any:
        return await model.ainvoke([HumanMessage(question)])

    @entrypoint(checkpointer=InMemorySaver())
    async def flow(question: str) -> str:
        reply = await ask(question)
        return str(reply.content)

    return flow


def test_a_string_output_is_the_runs_output_as_it_is() -> None:
    seen: list[str] = []
    check = predicate(lambda ctx: seen.append(ctx.note) or ctx.note == "the answer", "not the answer")
    config = {"configurable": {"thread_id": "t1"}}
    res = lg.run(answering_flow(), "what is it?", config, verifiers=[check])
    assert (res.reason, res.output, res.verified) == (StopReason.SUCCESS, "the answer", True), seen
    assert (res.turns, res.input_tokens) == (1, 10)


def test_a_state_with_no_messages_is_still_shown_as_json() -> None:
    config = {"configurable": {"thread_id": "t2"}}

    @entrypoint(checkpointer=InMemorySaver())
    async def counts(n: int) -> dict[str, int]:
        return {"n": n + 1}

    assert lg.run(counts, 1, config).output == '{"n": 2}'
