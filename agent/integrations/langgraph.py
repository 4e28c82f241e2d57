"""LangGraph runs with Endstate's stop reasons, spans and metrics.

    from agent.integrations import langgraph as endstate_lg
    result = endstate_lg.run(graph, {"messages": [("user", "hi")]}, hooks=hooks, task_type="ticket",
                             config={"configurable": {"thread_id": "t1"}, "recursion_limit": 12})

Turns come from a LangChain callback handler added to the run's config (the
same channel LangSmith and LangChain's OpenTelemetry instrumentations use):
one turn per chat-model call, holding the tool calls that follow it. Endstate
emits its own spans from those callbacks, never a copy of another handler's.
How runs end:

| LangGraph                                         | Endstate                              |
| ------------------------------------------------- | ------------------------------------- |
| the graph's final state                           | `success` (checked by the verifiers)  |
| `interrupt()` (needs a checkpointer)              | `need_help`, resumable with `resume`  |
| `GraphRecursionError` (`recursion_limit`)         | `limit`/`turns`                       |
| the task cancelled                                | `cancelled`                           |
| any other exception                               | `error`, with its type                |

The verifiers see the final state at `ctx.state["output"]`; the output text
is the content of the state's last message when it has `messages`.

An `interrupt({"tool": name, "args": {...}})` (optionally with a `"question"`) is an approval
of that call: the suspension's pending call. Any other value is a question (a string as it is,
anything else as JSON); `resume` gives the graph the answer, or True/False for an approval.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from langgraph.errors import GraphRecursionError
from langgraph.types import Command

from agent.errors import ConfigError
from agent.hooks import RunHooks
from agent.integrations._observe import Recorder, Usage, need
from agent.integrations._sync import run_sync
from agent.result import LimitKind, PendingAction, RunResult, StopReason
from agent.verify import Verifier

PROVIDER = "langchain"
INTERRUPT_KEY = "__interrupt__"


class EndstateCallbackHandler(BaseCallbackHandler):
    """LangChain callbacks reporting chat-model and tool calls to a `Recorder`."""

    run_inline = True  # called in the run's own task, in order, never from a thread pool
    raise_error = False
    ignore_chain = True  # every graph node is a chain: LangChain need not call this handler for them
    ignore_agent = False  # LangChain files tool events under it: ignored only when nobody watches
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.ignore_agent = not recorder.watched  # no hooks: tool calls have nothing to report
        self._tools: dict[UUID, tuple[str, dict[str, Any]]] = {}

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.recorder.model_started()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        message = _message_of(response)
        usage = getattr(message, "usage_metadata", None) or {}
        calls = getattr(message, "tool_calls", None) or []
        self.recorder.model_ended(
            Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), cost_usd=None),
            text=_content_text(getattr(message, "content", "")),
            stop_reason="tool_use" if calls else "end_turn",
            response_id=str(getattr(message, "id", "") or ""),
        )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.recorder.model_ended(Usage(), error=error)

    def on_tool_start(
        self, serialized: Any, input_str: str, *, run_id: UUID, inputs: Any = None, **kwargs: Any
    ) -> None:
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        arguments = inputs if isinstance(inputs, dict) else {"input": input_str}
        self._tools[run_id] = (name, arguments)
        self.recorder.tool_started(str(run_id), name, arguments)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        name, arguments = self._tools.pop(run_id, ("tool", {}))
        text = getattr(output, "content", output)
        error = "tool_error" if getattr(output, "status", None) == "error" else None
        self.recorder.tool_ended(str(run_id), name, str(text), error, arguments)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        name, arguments = self._tools.pop(run_id, ("tool", {}))
        if type(error).__name__ == "GraphInterrupt":
            return  # not a failure: the call waits for a person (its span ends as interrupted)
        self.recorder.tool_ended(str(run_id), name, str(error), type(error).__name__, arguments)


def run(graph: Any, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> RunResult:
    """Sync entry point; see `arun`."""
    return run_sync(arun(graph, input, config, **kwargs))


async def arun(
    graph: Any,
    input: Any,
    config: Mapping[str, Any] | None = None,
    *,
    hooks: RunHooks | None = None,
    task_type: str = "default",
    verifiers: Sequence[Verifier] | Verifier | None = None,
    run_id: str | None = None,
    agent_name: str | None = None,
    tools: Sequence[str] = (),
    resumed: RunResult | None = None,
    help_seconds: float | None = None,
    **invoke_kwargs: Any,
) -> RunResult:
    """`graph.ainvoke(input, config, **invoke_kwargs)`, ended in a stop reason.

    The final state (or the exception) is at `result.raw`. `tools` names the
    graph's tools, so their calls are labelled by name in the metrics; an
    `interrupt()` waits `help_seconds` (default a day). Never raises for an
    expected stop.
    """
    need(graph, callable(getattr(graph, "ainvoke", None)), "langgraph.run", "a compiled graph")
    config = dict(config or {})
    recorder = Recorder.start(
        hooks,
        agent=agent_name or str(getattr(graph, "name", None) or "langgraph"),
        task_type=task_type,
        model=str(config.get("metadata", {}).get("ls_model_name", "") or "langgraph"),
        provider=PROVIDER,
        task=_task(input),
        tools=tools,
        verifiers=verifiers,
        run_id=run_id,
        resumed=resumed,
        help_seconds=help_seconds,
    )
    config["callbacks"] = _with_handler(config.get("callbacks"), EndstateCallbackHandler(recorder))
    try:
        output = await graph.ainvoke(input, config, **invoke_kwargs)
    except GraphRecursionError as exc:
        return recorder.finish(StopReason.LIMIT, limit=LimitKind.TURNS, note=str(exc), raw=exc)
    except (Exception, asyncio.CancelledError) as exc:
        return recorder.fail(exc, raw=exc)
    if isinstance(output, Mapping) and output.get(INTERRUPT_KEY):
        return _suspend(recorder, output, config)
    return recorder.succeed(output, text=_final_text(output), raw=output)


def state_of(result: RunResult) -> str:
    """A `need_help` result's saved state as JSON: the config naming its checkpointer thread.

    The graph's checkpointer holds the state itself; a store keeps this.
    """
    config = (result.raw or {}).get("config") if isinstance(result.raw, Mapping) else None
    if not isinstance(config, Mapping):
        raise ConfigError("only a need_help result of this integration has a state to save")
    return json.dumps({"configurable": dict(config.get("configurable", {}))}, default=str)


def resume(
    graph: Any, state: Any, approved: bool | None = None, answer: Any = None, **kwargs: Any
) -> RunResult:
    """Sync entry point; see `aresume`."""
    return run_sync(aresume(graph, state, approved, answer, **kwargs))


async def aresume(
    graph: Any, state: Any, approved: bool | None = None, answer: Any = None, **kwargs: Any
) -> RunResult:
    """Continue an interrupted graph with `Command(resume=...)` on the same checkpointer thread.

    What `interrupt()` returns in the graph is `answer` when given, else
    `approved`. `state` is the suspended `RunResult` itself (same run id, its
    wait recorded), the JSON from `state_of` (what a store keeps), or the
    run's config with its `configurable.thread_id`.
    """
    if isinstance(state, RunResult):
        kwargs.setdefault("resumed", state)
        state = state.raw.get("config") if isinstance(state.raw, Mapping) else None
    config = json.loads(state) if isinstance(state, str | bytes) else state
    if not isinstance(config, Mapping) or not config.get("configurable", {}).get("thread_id"):
        raise ConfigError("resume needs the interrupted run's state: its RunResult, state_of() or config")
    config = {k: v for k, v in config.items() if k != "callbacks"}
    await _check_interrupted(graph, config)
    value = answer if answer is not None else approved
    return await arun(graph, Command(resume=value), config, **kwargs)


async def _check_interrupted(graph: Any, config: Mapping[str, Any]) -> None:
    """Refuse to resume a thread the graph's checkpointer holds no interrupt for (it would start over)."""
    thread = config["configurable"]["thread_id"]
    try:
        saved = await graph.aget_state(config)
    except (ValueError, NotImplementedError) as exc:  # no checkpointer, or one without async methods
        raise ConfigError(
            f"cannot resume thread {thread!r}: {exc}. Compile the graph with the (async-capable) "
            "checkpointer it was interrupted with"
        ) from exc
    if not getattr(saved, "interrupts", ()):
        raise ConfigError(
            f"the graph's checkpointer holds no pending interrupt for thread {thread!r}: it was "
            "answered already, or the checkpointer lost it (an in-memory one does when its process "
            "ends; use a persistent one, such as AsyncSqliteSaver or AsyncPostgresSaver)"
        )


def _suspend(recorder: Recorder, output: Mapping[str, Any], config: Mapping[str, Any]) -> RunResult:
    first = output[INTERRUPT_KEY][0]
    value = getattr(first, "value", first)
    question = value if isinstance(value, str) else json.dumps(value, default=str)
    pending = None
    if isinstance(value, Mapping) and value.get("tool"):  # {"tool", "args"}: an approval, asked as such
        arguments = dict(value.get("args") or {})
        pending = PendingAction(str(getattr(first, "id", "")), str(value["tool"]), arguments)
        asked = value.get("question")
        question = str(asked) if asked else f"Approve {pending.name}({json.dumps(arguments, default=str)})?"
    saved = {"output": output, "config": {k: v for k, v in config.items() if k != "callbacks"}}
    return recorder.suspend(question, pending, raw=saved)


def _with_handler(callbacks: Any, handler: BaseCallbackHandler) -> Any:
    """The caller's callbacks (a list or a manager) plus Endstate's handler."""
    if callbacks is None:
        return [handler]
    if isinstance(callbacks, list):
        return [*callbacks, handler]
    callbacks = callbacks.copy()
    callbacks.add_handler(handler, inherit=True)
    return callbacks


def _message_of(response: LLMResult) -> Any:
    generations = response.generations[0] if response.generations else []
    return getattr(generations[0], "message", None) if generations else None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return ""


def _final_text(output: Any) -> str:
    messages = output.get("messages") if isinstance(output, Mapping) else None
    if messages:
        return _content_text(getattr(messages[-1], "content", ""))
    return json.dumps(output, default=str) if output is not None else ""


def _task(input: Any) -> str:
    if isinstance(input, str):
        return input
    messages = input.get("messages") if isinstance(input, Mapping) else None
    if messages:
        first = messages[0]
        return _content_text(first[1] if isinstance(first, tuple) else getattr(first, "content", ""))
    return ""
