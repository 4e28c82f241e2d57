"""A catalog of foreign agents (OpenAI Agents SDK, Pydantic AI, LangGraph) for the durable-approval tests.

Every agent is rebuilt from nothing in whichever process loads this catalog, as a real
deployment's would be: each model is a test double that decides from the conversation
(a first request calls the tool that needs a person; a tool's result is echoed as
`done: <result>`), so a run started in one process is finished in another. LangGraph's
checkpointer is `$FOREIGN_CHECKPOINTS`: a PostgreSQL URL, a SQLite file, or unset (in memory,
this process only).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent as OAAgent
from agents import function_tool, set_tracing_disabled
from agents.testing.model import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage as OAUsage
from integrations_support import Chat, delete, look, usage
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import RequestUsage

from agent.durable.catalog import Catalog
from agent.policies import HelpPolicy

ENV_CHECKPOINTS = "FOREIGN_CHECKPOINTS"
TASK_TYPE = "cleanup"
MEMORY = InMemorySaver()  # with no $FOREIGN_CHECKPOINTS: LangGraph's state lives in this process only

set_tracing_disabled(True)  # the Agents SDK would export its own traces to OpenAI


# -- OpenAI Agents SDK --------------------------------------------------------------------------


@function_tool(needs_approval=True)
def remove(path: str) -> str:
    """Remove a file, once a person approves."""
    return f"removed {path}"


def oa_reply(call: ModelCall) -> ModelStep:
    """Call `remove` first; once its result (or its rejection) is in, say it."""
    items = call.input if isinstance(call.input, list) else []
    outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    if outputs:
        return ModelStep([assistant_message(f"done: {outputs[-1]['output']}")], usage=oa_usage())
    return ModelStep([function_call("remove", {"path": "a"}, call_id="r1")], usage=oa_usage())


def oa_usage() -> OAUsage:
    return OAUsage(requests=1, input_tokens=10, output_tokens=4, total_tokens=14)


def oa_agent() -> OAAgent[Any]:
    steps = [ModelStep.respond(oa_reply) for _ in range(4)]
    return OAAgent(name="oa_remover", model=ScriptedModel(steps), tools=[remove])


# -- Pydantic AI ----------------------------------------------------------------------------------


async def pai_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call the tool the agent has first; once its result (or its denial) is in, say it."""
    returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
    tokens = RequestUsage(input_tokens=10, output_tokens=4)
    if returns:
        return ModelResponse([TextPart(f"done: {returns[-1].content}")], usage=tokens)
    name = info.function_tools[0].name
    return ModelResponse([ToolCallPart(name, {"path": "a"}, "d1")], usage=tokens)


def pai_agent(reply: Any = pai_reply) -> PAIAgent[None, Any]:
    agent: PAIAgent[None, Any] = PAIAgent(
        FunctionModel(reply), name="pai_deleter", output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def erase(path: str) -> str:
        """Erase a file, once a person approves."""
        return f"erased {path}"

    return agent


async def pai_twice(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Two calls to approve, one after the other; then say what came back."""
    returns = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
    tokens = RequestUsage(input_tokens=10, output_tokens=4)
    if len(returns) < 2:
        return ModelResponse(
            [ToolCallPart("erase", {"path": "ab"[len(returns)]}, f"d{len(returns)}")], usage=tokens
        )
    return ModelResponse([TextPart("done: " + ", ".join(str(r.content) for r in returns))], usage=tokens)


def pai_careful() -> PAIAgent[None, Any]:
    return pai_agent(pai_twice)  # the same agent, asking twice


def pai_asker() -> PAIAgent[None, Any]:
    agent: PAIAgent[None, Any] = PAIAgent(
        FunctionModel(pai_reply), name="pai_asker", output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain
    def ask_owner(path: str) -> str:
        """Ask the file's owner which file to keep."""
        raise CallDeferred

    return agent


# -- LangGraph --------------------------------------------------------------------------------


async def lg_model(state: Chat) -> dict[str, Any]:
    """A chat model call (callbacks and all) whose reply depends on the conversation so far."""
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        reply = AIMessage(content=f"done: {last.content}", usage_metadata=usage(12, 3))
    else:
        call = {"name": "delete", "args": {"path": "a"}, "id": "g1"}
        reply = AIMessage(content="", tool_calls=[call], usage_metadata=usage())
    model = GenericFakeChatModel(messages=iter([reply]))
    return {"messages": [await model.ainvoke(state["messages"])]}


def lg_graph(checkpointer: Any) -> Any:
    def route(state: Chat) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    graph = StateGraph(Chat)
    graph.add_node("model", lg_model)
    graph.add_node("tools", ToolNode([look, delete]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer, name="lg_deleter")


@contextlib.asynccontextmanager
async def lg_checkpointer() -> AsyncIterator[Any]:
    """The saver `$FOREIGN_CHECKPOINTS` names, open for one segment."""
    where = os.environ.get(ENV_CHECKPOINTS, "")
    if where.startswith("postgresql://"):
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(where) as saver:
            await saver.setup()
            yield saver
    elif where:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(where) as saver:
            yield saver
    else:
        yield MEMORY


# -- the catalog ------------------------------------------------------------------------------


def catalog() -> Catalog:
    c = Catalog()
    c.register_foreign("oa-remover", "openai_agents", oa_agent, task_type=TASK_TYPE)
    c.register_foreign("pai-deleter", "pydantic_ai", pai_agent, task_type=TASK_TYPE)
    c.register_foreign("pai-asker", "pydantic_ai", pai_asker, task_type=TASK_TYPE)
    c.register_foreign("pai-careful", "pydantic_ai", pai_careful, task_type=TASK_TYPE)
    c.register_foreign("lg-deleter", "langgraph", lg_graph, checkpointer=lg_checkpointer, task_type=TASK_TYPE)
    patient = HelpPolicy(on_timeout="resume", default_answer="nobody came: keep it")
    c.register_foreign("oa-patient", "openai_agents", oa_agent, task_type=TASK_TYPE, help=patient)
    hasty = HelpPolicy(wait_seconds=0.5)  # the service's own sweep ends it
    c.register_foreign("oa-hasty", "openai_agents", oa_agent, task_type=TASK_TYPE, help=hasty)
    c.register_foreign(  # a context the SDK cannot serialize: the state cannot be saved
        "oa-opaque", "openai_agents", oa_agent, task_type=TASK_TYPE, options={"context": object()}
    )
    c.register_foreign(  # a fresh in-memory checkpointer per segment: the interrupt is lost
        "lg-forgetful", "langgraph", lg_graph, checkpointer=lambda: InMemorySaver(), task_type=TASK_TYPE
    )
    return c
