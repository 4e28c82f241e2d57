"""Every model and tool call of a LangGraph run, from LangChain's callbacks: `langgraph.run(...,
exact_counts=True)`.

LangChain adds the run's handler through a configure hook (its own way in, as
its run collector and LangSmith's tracing context use): a context variable set
while the graph runs, which LangChain reads whenever it configures a callback
manager, and adds as a handler of that manager only, never inherited. So it sees
each chat-model call (a router's or classifier's too, whose reply the graph
never writes to its state) and each tool call, timed from its start to its end,
and not the graph's nodes, whose events would cost each step a dispatch. The
caller's own callbacks (LangSmith) run as they were; nothing is wrapped. The
graph's states come from `graph.astream(stream_mode="values", version="v2")`:
the output, the interrupts, and what no callback saw (a reply written by a node
that calls its provider's SDK itself, in a run with no chat-model call; a tool
result a node wrote itself), counted where the state shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import replace
from typing import Any
from uuid import UUID

from agent._extras import needs_extra

with needs_extra("langgraph", "agent.integrations.langgraph_calls"):
    from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import LLMResult
    from langchain_core.tracers.context import register_configure_hook
    from langgraph.errors import GraphBubbleUp, GraphInterrupt
    from langgraph.prebuilt.tool_node import INVALID_TOOL_NAME_ERROR_TEMPLATE
    from langgraph.types import Interrupt

from agent.hooks import hook_failed
from agent.integrations._observe import Recorder, Usage, in_turns
from agent.models.base import ModelReply
from agent.prices import PriceTable
from agent.tools import TOOL_ERROR, UNKNOWN_TOOL, said

NO_TOKENS = Usage(cost_usd=None)  # a reply without usage_metadata: tokens unknown, counted as none
INTERRUPT_KEY = "__interrupt__"

# The handler of the run in progress, in the context the graph's tasks copy.
_CALLS: ContextVar[Calls | None] = ContextVar("endstate_langgraph_calls", default=None)


class Calls(BaseCallbackHandler):
    """LangChain callbacks reporting a run's chat-model and tool calls to a `Recorder`; and the
    graph's states, for what no callback saw.

    A model call that starts while another call is open (parallel nodes, a
    model asked inside a tool) is reported at its end, once nothing is open:
    an Endstate turn holds one model call at a time.
    """

    run_inline = True  # called in the run's own task, in order, never from a thread pool
    raise_error = False
    ignore_chain = ignore_retriever = ignore_retry = ignore_custom_event = True

    def __init__(self, recorder: Recorder, prices: PriceTable | None = None) -> None:
        self.recorder, self.prices = recorder, prices
        self.models = 0  # chat-model calls seen
        self._open: UUID | None = None  # the model call the recorder has open
        self._later: set[UUID] = set()  # calls begun while another was open: reported at their end
        self._held: list[Callable[[], None]] = []  # ended calls waiting for the open ones to end
        self._tools: dict[UUID, tuple[str, str, dict[str, Any]]] = {}  # open: call id, name, arguments
        self._tool_ids: set[str] = set()  # the tool calls seen, by their model's call id
        self._seen: set[Any] = set()  # the messages counted or in the state before the run
        self._kept: list[Any] = []  # ...kept alive, so no new message gets a counted one's `id()`
        self.seeded = False

    @property
    def ignore_agent(self) -> bool:
        """Tool events (LangChain files them under agents): only hooks want them."""
        return not self.recorder.watched

    # -- model calls ------------------------------------------------------------

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.models += 1
        if self._open is None and not self._tools:
            self._open = run_id
            if self.recorder.watched:
                sent = list(messages[0]) if messages and isinstance(messages[0], list) else []
                self.recorder.model_started(model=asked_model(kwargs), messages=lambda: api_messages(sent))
            else:
                self.recorder.model_started()
        else:
            self._later.add(run_id)

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.on_chat_model_start(serialized, prompts, run_id=run_id, **kwargs)  # a completion model: the same

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        message = _message_of(response)
        if message is not None and self.recorder.watched:  # states are read for what no callback saw
            self._new(message)
        self._ended(run_id, lambda: self._replied(message))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._ended(run_id, lambda: self.recorder.model_ended(Usage(), error=error))

    def _ended(self, run_id: UUID, report: Callable[[], None]) -> None:
        if run_id == self._open:
            self._open = None
            report()
            if self._held:
                self._release()
        elif run_id in self._later:
            self._later.discard(run_id)
            self._hold(report)

    def _hold(self, report: Callable[[], None]) -> None:
        """A model call timed at its end: reported once no call is open."""

        def started_and_ended() -> None:
            self.recorder.model_started()
            report()

        self._held.append(started_and_ended)
        self._release()

    def _release(self) -> None:
        while self._held and self._open is None and not self._tools:
            self._held.pop(0)()

    def _replied(self, message: Any) -> None:
        tokens = reply_usage(message, self.prices)
        text = content_text(getattr(message, "content", ""))
        if not self.recorder.watched:  # only the run's totals and last text are wanted
            self.recorder.model_ended(tokens, text=text)
            return
        model = reply_model(message)
        self.recorder.model_ended(
            tokens,
            text=text,
            stop_reason="tool_use" if getattr(message, "tool_calls", None) else "end_turn",
            model=model,
            response_id=str(getattr(message, "id", "") or ""),
            call_model=model,
            calls=asked_calls(message),
        )

    # -- tool calls (only when watched) -----------------------------------------

    def on_tool_start(
        self,
        serialized: Any,
        input_str: str,
        *,
        run_id: UUID,
        inputs: Any = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        arguments = dict(inputs) if isinstance(inputs, Mapping) else {"input": input_str}
        call_id = str(tool_call_id or run_id)
        self._tools[run_id] = (call_id, name, arguments)
        self._tool_ids.add(call_id)
        self.recorder.tool_started(call_id, name, arguments)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if (call := self._tools.pop(run_id, None)) is None:
            return
        if isinstance(output, ToolMessage):
            self._new(output)
        call_id, name, arguments = call
        error = tool_failure(output)
        text = content_text(getattr(output, "content", ""))
        self.recorder.tool_ended(call_id, name, text, error, arguments)
        self._release()

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if (call := self._tools.pop(run_id, None)) is None:
            return
        if not isinstance(error, GraphInterrupt):  # a call waiting for a person stays open: cut at the end
            error_type = None if isinstance(error, GraphBubbleUp) else type(error).__name__
            self.recorder.tool_ended(call[0], call[1], said(error), error_type, call[2])
        self._release()

    # -- the graph's states -------------------------------------------------------

    def read(self, state: Any) -> None:
        """A state after a step: the messages in it that no callback saw are counted here."""
        if not self.seeded:  # the state before the run's first step: its messages are not this run's
            self.seeded = True
            for message in messages_in(state):
                self._new(message)
            return
        if self.models and not self.recorder.watched:  # replies come from callbacks; tools unwatched
            return
        watched = self.recorder.watched
        for message in self._fresh(state):
            if isinstance(message, AIMessage) and not self.models:  # a node that called its provider
                self._hold(lambda m=message: self._replied(m))  # type: ignore[misc]
            elif isinstance(message, ToolMessage) and watched and message.tool_call_id not in self._tool_ids:
                self._held.append(lambda m=message: self._tool_result(m))  # type: ignore[misc]  # a node's own
        self._release()

    def _fresh(self, state: Any) -> list[Any]:
        """The messages of `state` not seen before, in order. A list is read from its end back to
        the first message seen: new ones come last (a list written back whole holds the old first)."""
        found: list[Any] = []
        if type(state) is not dict:
            return found
        for value in state.values():
            if type(value) is list:
                tail = []
                for message in reversed(value):
                    if not isinstance(message, BaseMessage) or not self._new(message):
                        break
                    tail.append(message)
                found += reversed(tail)
            elif isinstance(value, BaseMessage) and self._new(value):
                found.append(value)
        return found

    def _tool_result(self, message: ToolMessage) -> None:
        """A tool result a node wrote itself (no LangChain tool ran): timed where it was written."""
        call_id, name = str(message.tool_call_id), str(message.name or "tool")
        self._tool_ids.add(call_id)
        self.recorder.tool_started(call_id, name)
        self.recorder.tool_ended(call_id, name, content_text(message.content), tool_failure(message))

    def _new(self, message: Any) -> bool:
        return first_seen(message, self._seen, self._kept)

    def flush(self) -> None:
        """The run ended: calls still held are reported (an open one is cut by the recorder)."""
        self._open = None
        self._tools.clear()
        self._release()


register_configure_hook(_CALLS, inheritable=False)


def first_seen(message: Any, seen: set[Any], kept: list[Any]) -> bool:
    """Whether `message` is seen for the first time: a node that writes the whole list back (no
    reducer), or a reply to a second channel, writes again what was counted. `kept` holds each
    one seen alive, so no new message gets a counted one's `id()`."""
    mid = getattr(message, "id", None)
    if id(message) in seen or (mid and mid in seen):
        return False
    seen.add(id(message))
    kept.append(message)
    if mid:  # a reducer may give it an id later; a checkpoint gives it back as another object
        seen.add(mid)
    return True


async def drive(
    graph: Any,
    input: Any,
    config: dict[str, Any],
    recorder: Recorder,
    invoke_kwargs: dict[str, Any],
    prices: PriceTable | None = None,
    watch: bool = False,
) -> tuple[Any, bool]:
    """Run the graph with `Calls` reporting its calls; returns what `ainvoke` would (the last
    state, with the interrupts at `__interrupt__` when the graph waits for a person) and (`watch`:
    its `updates` read too, for a graph with breakpoints and no checkpointer) whether it stopped at one."""
    calls = Calls(recorder, prices)
    latest: Any = None
    interrupts: list[Interrupt] = []
    halted = False
    token = _CALLS.set(calls)
    modes = ["values", "updates"] if watch else "values"
    try:
        async for part in graph.astream(input, config, stream_mode=modes, version="v2", **invoke_kwargs):
            if part["type"] != "values":
                halted = halted or (not part["ns"] and INTERRUPT_KEY in (part["data"] or {}))
                continue
            latest = part["data"]
            interrupts += part["interrupts"]
            try:
                calls.read(latest)
            except Exception:  # a state of an unforeseen shape: the run goes on, unobserved there
                hook_failed("langgraph state")
    finally:
        _CALLS.reset(token)
        calls.flush()
    if not interrupts:
        return latest, halted
    found = {**latest, INTERRUPT_KEY: interrupts} if isinstance(latest, dict) else {INTERRUPT_KEY: interrupts}
    return found, halted


class Replies(BaseCallbackHandler):
    """The chat-model replies of a run, by message id, until its stream reads them: the message
    LangGraph's prebuilt agent writes in place of a reply when out of steps keeps the reply's id but
    not its usage, and the call was made (and paid for) all the same."""

    run_inline = True
    raise_error = False
    ignore_chain = ignore_agent = ignore_retriever = ignore_retry = ignore_custom_event = True
    KEEP = 32  # replies no node wrote (a router's) are dropped, oldest first, past this many

    def __init__(self) -> None:
        self._by_id: dict[str, Any] = {}

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        """Nothing: defined so LangChain does not fall back to `on_llm_start` with the text."""

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        message = _message_of(response)
        if message is not None and message.id:
            self._by_id[message.id] = message
            if len(self._by_id) > self.KEEP:
                del self._by_id[next(iter(self._by_id))]

    def reply(self, written: Any) -> Any:
        """The model's reply a written message is (or stands in for)."""
        return self._by_id.pop(written.id, written) if written.id else written

    def config(self, config: dict[str, Any]) -> dict[str, Any]:
        """`config` with this handler among its callbacks (the caller's own are kept as they were)."""
        callbacks = config.get("callbacks")
        if isinstance(callbacks, BaseCallbackManager):
            callbacks = callbacks.copy()
            callbacks.add_handler(self, inherit=True)
        else:
            callbacks = [*(callbacks or ()), self]
        return {**config, "callbacks": callbacks}


def _message_of(response: LLMResult) -> Any:
    """A chat model's reply (a completion model's text, as a message of its own)."""
    first = response.generations[0] if response.generations else []
    if not first:
        return None
    return getattr(first[0], "message", None) or AIMessage(content=first[0].text)


NO_MODEL = "langgraph"  # the run's model label when the config's metadata names none (`ls_model_name`)


def asked_calls(message: Any) -> list[tuple[str, str, Any]]:
    """The tool calls a LangChain reply asks for (its `tool_calls`: id, name, arguments)."""
    found = getattr(message, "tool_calls", None) or ()
    return [(str(c.get("id") or ""), str(c.get("name") or ""), c.get("args") or {}) for c in found]


def reply_model(message: Any) -> str:
    """The model a reply names (LangChain's `response_metadata`: `model_name`, or `model`), else ""."""
    metadata = getattr(message, "response_metadata", None) or {}
    return str(metadata.get("model_name") or metadata.get("model") or "")


def asked_model(callback: Mapping[str, Any]) -> str:
    """The model a chat-model call asks for, as LangChain's callback metadata names it (`ls_model_name`)."""
    metadata = callback.get("metadata") or {}
    return str(metadata.get("ls_model_name") or "")


def reply_usage(message: Any, prices: PriceTable | None) -> Usage:
    """A reply's tokens (input counting its cache reads and writes, as LangChain and Endstate count)
    and, with `prices`, its cost by the model its reply names; else, or for a model `prices` does
    not know, its cost is unknown (None): LangChain prices nothing."""
    usage = getattr(message, "usage_metadata", None)
    if not usage:
        return NO_TOKENS
    cache = usage.get("input_token_details") or {}
    read, written = cache.get("cache_read", 0), cache.get("cache_creation", 0)
    tokens = Usage(usage.get("input_tokens", 0), usage.get("output_tokens", 0), read, written, None)
    if prices is None:
        return tokens
    model = reply_model(message)
    if not model:
        return tokens
    reply = ModelReply(
        [],
        tokens.input_tokens,
        tokens.output_tokens,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=written,
    )
    return replace(tokens, cost_usd=prices.cost_of(model, reply))


def messages_in(writes: Any) -> list[Any]:
    """The messages in a state or a task's writes: in any channel, one message or a list of them
    (several writes to one channel come as `{"$writes": [...]}`)."""
    if type(writes) is not dict:
        return []
    found: list[Any] = []
    for value in writes.values():
        if type(value) is list:
            found += value
        elif isinstance(value, BaseMessage):
            found.append(value)
        elif isinstance(value, tuple):
            found += value
        elif type(value) is dict and "$writes" in value:
            found += messages_in(dict(enumerate(value["$writes"])))
    return found


def api_messages(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """LangChain messages in the Messages API's layout (a model call's captured input): human text,
    replies' text and tool calls, tool results (system messages and other kinds left out)."""
    return in_turns(_blocks(m) for m in messages)


def _blocks(message: Any) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, AIMessage):
        text = content_text(message.content)
        blocks = [{"type": "text", "text": text}] if text else []
        calls = [
            {"type": "tool_use", "id": c.get("id"), "name": c.get("name"), "input": c.get("args") or {}}
            for c in message.tool_calls
        ]
        return "assistant", blocks + calls
    if isinstance(message, ToolMessage):
        result = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": content_text(message.content),
        }
        return "user", [result | {"is_error": True} if message.status == "error" else result]
    if isinstance(message, HumanMessage) and (text := content_text(message.content)):
        return "user", [{"type": "text", "text": text}]
    return "", []


def tool_failure(message: Any) -> str | None:
    """How a tool result message failed: `unknown_tool` for `ToolNode`'s answer to a call of a tool
    it lacks ("Error: NAME is not a valid tool, ..."), as in Endstate's own runs; `tool_error` for
    any other error status; None: it did not."""
    if getattr(message, "status", None) != "error":
        return None
    invalid = INVALID_TOOL_NAME_ERROR_TEMPLATE.split("{available_tools}")[0]
    unknown = invalid.format(requested_tool=getattr(message, "name", None) or "")
    return UNKNOWN_TOOL if content_text(message.content).startswith(unknown) else TOOL_ERROR


def content_text(content: Any) -> str:
    """A message's content as text: a string as it is, the text of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return ""
