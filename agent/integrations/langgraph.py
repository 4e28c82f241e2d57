"""LangGraph runs with Endstate's stop reasons, spans and metrics.

    from agent.integrations import langgraph as endstate_lg
    result = endstate_lg.run(graph, {"messages": [("user", "hi")]}, hooks=hooks, task_type="ticket",
                             config={"configurable": {"thread_id": "t1"}, "recursion_limit": 12})

    stream = endstate_lg.astream(graph, input, config, stream_mode="updates", hooks=hooks, task_type="ticket")
    async for update in stream:  # what graph.astream(input, config, stream_mode="updates") gives
        ...
    stream.result  # the RunResult, once the stream has ended

By default the integration drives the graph's own output stream, `graph.astream(...)`
with the `values` and `tasks` stream modes (the state after each step, and
each task's start and end with its writes and interrupts), and returns what
`ainvoke` would; `ainvoke` itself is that stream read to its end. Turns come
from the tasks' writes: one turn per model reply a node writes (an
`AIMessage`, its `usage_metadata` the tokens), holding the tool calls
(`ToolMessage`s, matched by `tool_call_id`) that follow it, each call timed
from its node's task start to its end. No callback handler is added but to
LangGraph's prebuilt agent (`create_react_agent`), whose out-of-steps end writes
a message in place of the model's last reply: a handler that keeps each reply's
usage counts that call's tokens (about 3% of a scripted turn). The caller's own
callbacks (LangSmith, say) run as they were. Endstate emits its
own spans, never a copy of another tracer's. What the stream cannot say: a
model call whose reply the graph does not write to its state (a router's,
say: neither counted nor its tokens), the model call's time inside its node
(its span covers the node's task), each of a node's parallel tool calls' own
end (they end with the node; of a `ToolNode` that raised, the call whose tool raised is the
failed one, told by the `ToolNode` frame it raised in, its siblings cut off). A subgraph's tasks
are read from its own stream (`subgraphs=True`): its calls counted as they happen, also when it
is interrupted.

`exact_counts=True` reads every chat-model and tool call from LangChain's
callbacks instead (`langgraph_calls`): the router's call is counted, and each
call is timed from its own start to its end. It costs LangChain's callback
channel, about 3% more of a scripted turn than the stream (benchmarks/README.md):
worth it where a token budget or the model-call metrics must see every call.
How runs end (either way):

| LangGraph                                         | Endstate                              |
| ------------------------------------------------- | ------------------------------------- |
| the graph's final state                           | `success` (checked by the verifiers)  |
| `interrupt()` (needs a checkpointer)              | `need_help`, resumable with `resume`  |
| `interrupt()`, or a stop at a breakpoint, in a    | `error` (nothing can resume it)       |
| graph with no checkpointer                        |                                       |
| a static breakpoint (`interrupt_before`/`_after`) | `need_help`: approve to go on         |
| `GraphRecursionError` (`recursion_limit`), or the | `limit`/`turns`                       |
| prebuilt agent's "Sorry, need more steps" end     |                                       |
| a final reply the model API refused, LangChain's  | `gave_up`, cause `refusal`            |
| `ModelRefusalError`                               |                                       |
| LangChain's `ContextOverflowError`                | `limit`/`context`                     |
| the task cancelled, or the run drained for a      | `cancelled` (drained: the checkpoint  |
| shutdown (`RunControl.request_drain()`)           | is saved, input None goes on)         |
| any other exception                               | `error`, with its type                |

The verifiers see the final state at `ctx.state["output"]`; the output text
is the content of the state's last message when it has `messages`.

An `interrupt({"tool": name, "args": {...}})` (optionally with a `"question"`) is an approval
of that call: the suspension's pending call. Any other value is a question (a string as it is,
anything else as JSON); `resume` gives the graph the answer, or True/False for an approval.
LangGraph's own `Command(resume=...)` given to `run` (or `astream`) with no `resumed=` goes on as
the run that waits on the thread (each segment names itself in the run's config metadata, which
LangGraph keeps in the thread's checkpoints), counting its own totals only (the checkpoint holds
none).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from agent._extras import needs_extra

with needs_extra("langgraph", "agent.integrations.langgraph"):
    from langchain_core.exceptions import ContextOverflowError, ModelRefusalError
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.constants import CONFIG_KEY_CHECKPOINTER
    from langgraph.errors import GraphDrained, GraphRecursionError
    from langgraph.prebuilt import ToolNode
    from langgraph.pregel import Pregel
    from langgraph.types import Command, Interrupt, StateSnapshot

from agent.budget import Spent
from agent.errors import ConfigError
from agent.hooks import RunHooks, hook_failed
from agent.integrations._framework import require
from agent.integrations._lg_saver import sync_capable
from agent.integrations._observe import (
    DEFAULT_HELP_SECONDS,
    OPTIONS,
    Reading,
    Recorder,
    Usage,
    _check_options,
    _Cut,
    answered_late,
    need,
    reading_state,
    resumed_run,
    run_of_saved,
    saved_with_run,
)
from agent.integrations._sync import run_sync
from agent.integrations.langgraph_calls import (
    INTERRUPT_KEY,
    NO_MODEL,
    Replies,
    api_messages,
    asked_calls,
    content_text,
    drive,
    first_seen,
    messages_in,
    reply_model,
    reply_usage,
    tool_failure,
)
from agent.journal import Suspended
from agent.prices import PriceTable
from agent.result import LimitKind, PendingAction, RunResult, StopCause, StopReason, Suspension
from agent.snapshot import Snapshot, SnapshotKind
from agent.text import json_text
from agent.tools import own_cancels, run_cancelled, said
from agent.verify import Verifier

PROVIDER = "langchain"
NO_CHECKPOINTER = "interrupt_without_checkpointer"  # error_type of an interrupt() nothing can resume


# The state after each step (the last is the output), and each task's start and end with its writes
# and interrupts: cheaper than the updates and values `ainvoke` streams. A list: a tuple is one mode.
MODES = ["values", "tasks"]
TOOLS, MODEL, OTHER, MIXED = "tools", "model", "", "mixed"  # what a node is known to do (MIXED: for good)


class _Reader:
    """Reads a graph's `tasks` stream (each task's start, and its end with its writes) into a `Recorder`.

    A model call is an `AIMessage` a node writes (its `usage_metadata` are the
    call's tokens); a tool call is a `ToolMessage` a node writes, matched to
    the call by `tool_call_id`. A call starts when its node's task starts:
    tool nodes are known from the graph (`ToolNode`) or from their first
    writes; a node is known to call the model once it has written a reply, so
    the first reply of each model node in a process is timed at its task's end,
    as are the calls of a node that does both (a subgraph) or replies only sometimes. A model
    node's task that starts while another's call is open (parallel branches, `Send`) is timed at
    its end, reported once no call is open: an Endstate turn holds one model call at a time.
    """

    def __init__(
        self, recorder: Recorder, graph: Any, prices: PriceTable | None = None, replies: Replies | None = None
    ) -> None:
        self.recorder, self.prices, self.replies = recorder, prices, replies
        self.nodes: Mapping[str, Any] = getattr(graph, "nodes", None) or {}
        self._kinds: dict[str, str] = {}  # node name -> TOOLS, MODEL or OTHER, for this run
        self._model_task: str | None = None  # the task whose model call is open
        self._waiting: list[tuple[str, AIMessage]] = []  # replies of tasks that ran beside the open call
        self._tools: dict[str, tuple[str, dict[str, Any]]] = {}  # open tool calls by id
        self._task_tools: dict[str, list[str]] = {}  # a tool task's open call ids
        self.interrupts: list[Interrupt] = []  # what the run's tasks wait for, as `ainvoke` gives them
        self._seen: set[Any] = set()  # the messages already counted or in the state before the run
        self._held: list[Any] = []  # ...kept alive, so no new message gets a counted one's `id()`

    def seed(self, state: Any) -> None:
        """The state of a graph or subgraph before its first step (its first `values`): its
        messages are not this run's."""
        for message in messages_in(state):
            self._new(message)

    def _new(self, message: Any) -> bool:
        return first_seen(message, self._seen, self._held)

    def read(self, task: Mapping[str, Any], inner: bool = False) -> None:
        """One chunk of the `tasks` stream, of the graph or (`inner`) of a subgraph: a task's start
        (it has "triggers") or its end."""
        if "triggers" not in task:
            self.task_ended(task, inner)
        elif self.recorder.watched:  # only hooks need to know when a call starts
            self.task_started(task)

    def task_started(self, task: Mapping[str, Any]) -> None:
        kind = self._kind(task["name"])
        if kind == MODEL and self._model_task is None:  # one open at a time: others timed at their end
            sent = messages_in(task["input"])  # the state the node reads: the history it sends
            self.recorder.model_started(messages=lambda: api_messages(sent))
            self._model_task = task["id"]
        elif kind == TOOLS:
            opened = self._task_tools[task["id"]] = []
            for call in _calls_in(task["input"]):
                call_id = str(call.get("id") or "")
                if call_id and call_id not in self._tools:
                    name, arguments = str(call.get("name") or "tool"), dict(call.get("args") or {})
                    self._tools[call_id] = (name, arguments)
                    self.recorder.tool_started(call_id, name, arguments)
                    opened.append(call_id)

    def task_ended(self, task: Mapping[str, Any], inner: bool = False) -> None:
        """A task's end: its replies and tool results in the order written, its error, its
        interrupts (a subgraph's reach the graph with the task that ran it)."""
        task_id, error = task["id"], task["error"]
        for message in messages_in(task["result"]):  # anything else in a list is passed over
            if not isinstance(message, AIMessage | ToolMessage) or not self._new(message):
                continue
            if isinstance(message, AIMessage):
                self._replied(task["name"], message, task_id)
            elif self.recorder.watched:
                self._tool_result(task["name"], message)
        if task["interrupts"] and not inner:
            self.interrupts += [_interrupt(i) for i in task["interrupts"]]
        if self._model_task == task_id:  # its node wrote no reply
            self._model_task = None
            if error is not None:
                self.recorder.model_ended(Usage(), error=error)
            else:  # a node that calls the model only sometimes: its start no longer opens a call
                self._learn(task["name"], MIXED)
                self.recorder.model_ended(Usage(), stop_reason="no_reply")
        self._release()
        calls = [c for c in self._task_tools.pop(task_id, ()) if c in self._tools]
        raised = _raised_by(error, calls) if error is not None else None  # an interrupt() is no error
        for call_id in calls if error is not None else ():
            if raised is not None and call_id != raised:
                continue  # cut off by the call that raised: it ends as the run does, neither ok nor failed
            name, arguments = self._tools.pop(call_id)
            self.recorder.tool_ended(call_id, name, said(error), type(error).__name__, arguments)

    def _replied(self, node: str, message: AIMessage, task_id: str = "") -> None:
        recorder = self.recorder
        if self._model_task not in (None, task_id):  # another task's call is open: this one waits
            self._waiting.append((node, message))
            return
        if self._model_task is None:  # no call open: the node's first reply in this process
            recorder.model_started()
            if recorder.watched:
                self._learn(node, MODEL)
        self._model_task = None
        made = self.replies.reply(message) if self.replies is not None else message
        tokens = reply_usage(made, self.prices)  # of the reply made, where the prebuilt agent wrote another
        if not recorder.watched:  # only the run's totals and last text are wanted
            recorder.model_ended(tokens, text=content_text(message.content))
            return
        model = reply_model(made)
        recorder.model_ended(
            tokens,
            text=content_text(message.content),
            stop_reason="tool_use" if message.tool_calls else "end_turn",
            model=model,
            response_id=message.id or "",
            call_model=model,
            calls=asked_calls(message),
        )

    def _release(self) -> None:
        """The replies that waited for the open call, each timed at its end, once none is open."""
        while self._waiting and self._model_task is None:
            self._replied(*self._waiting.pop(0))

    def flush(self) -> None:
        """The run stopped: a call still open is cut (as the recorder cuts it), and the replies that
        waited for it are counted."""
        if self._waiting and self._model_task is not None:
            self._model_task = None
            self.recorder.model_ended(Usage(), error=_Cut())
        self._release()

    def _tool_result(self, node: str, message: ToolMessage) -> None:
        call_id = str(message.tool_call_id)
        started = self._tools.pop(call_id, None)
        if started is None:  # its node was not known to run tools: timed at the task's end
            started = (str(message.name or "tool"), {})
            self.recorder.tool_started(call_id, *started)
            self._learn(node, TOOLS)
        error = tool_failure(message)
        self.recorder.tool_ended(call_id, started[0], content_text(message.content), error, started[1])

    def _kind(self, node: str) -> str:
        kind = self._kinds.get(node)
        if kind is None:
            bound = getattr(self.nodes.get(node), "bound", None)
            kind = TOOLS if isinstance(bound, ToolNode) else _KNOWN.get(_key(node, bound), OTHER)
            self._kinds[node] = kind
        return kind

    def _learn(self, node: str, kind: str) -> None:
        """What `node` was seen doing. A node seen doing both (a subgraph, a whole agent in one
        node), or replying only sometimes, is MIXED for good: its calls are timed at its task's end."""
        known = self._kinds.get(node, OTHER)
        if known != kind and known != MIXED:
            kind = kind if known == OTHER else MIXED
            self._kinds[node] = kind
            _KNOWN[_key(node, getattr(self.nodes.get(node), "bound", None))] = kind


# What nodes were seen doing (writing model replies or tool results), by `_key`: process-wide, as
# graphs are compiled once (or once per segment, from the same node functions).
_KNOWN: dict[Any, str] = {}


def _interrupt(fields: Mapping[str, Any]) -> Interrupt:
    """LangGraph's `Interrupt` back from the tasks stream's dict of its fields."""
    return Interrupt(fields["value"], fields["id"], response_schema=fields.get("response_schema"))


def _key(node: str, bound: Any) -> Any:
    """What a node is known by across compilations: its function's code, else its name and type."""
    function = getattr(bound, "afunc", None) or getattr(bound, "func", None)
    code = getattr(function, "__code__", None)
    return code if code is not None else (node, type(bound))


def run(graph: Any, input: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> RunResult:
    """Sync entry point; see `arun`. A checkpointer with sync methods only (`SqliteSaver`,
    `PostgresSaver`) is used through them, as `graph.invoke` uses it."""
    return run_sync(_with_sync_saver(arun, graph, input, config, **kwargs))


async def _with_sync_saver(entry: Any, graph: Any, *args: Any, **kwargs: Any) -> RunResult:
    """`entry(graph, ...)`, the graph's sync-only checkpointer used through its sync methods."""
    result: RunResult = await entry(await sync_capable(graph), *args, **kwargs)
    return result


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
    exact_counts: bool = False,
    prices: PriceTable | None = None,
    **invoke_kwargs: Any,
) -> RunResult:
    """`graph.ainvoke(input, config, **invoke_kwargs)`, ended in a stop reason.

    The final state (or the exception) is at `result.raw`. `tools` names the
    graph's tools, so their calls are labelled by name in the metrics (default:
    the tools of its `ToolNode`s; a tool called elsewhere is "other"); an
    `interrupt()` waits `help_seconds` (default a day). `exact_counts=True`
    reads every chat-model and tool call from LangChain's callbacks
    (`langgraph_calls`): a router's call is counted too, and each call timed
    from its own start to its end, for about 3% more of a scripted turn.
    LangChain prices no call: with `prices` (`PriceTable()` for Endstate's
    model table) each call is priced by the model its reply names, else the
    run's cost is unknown. Never raises for an expected stop.
    """
    need(graph, callable(getattr(graph, "ainvoke", None)), "langgraph.run", "a compiled graph")
    _refuse(invoke_kwargs, _STREAMED, "langgraph.run drives the graph's stream itself")
    config = dict(config or {})
    if resumed is None:
        named = {"agent_name": agent_name, "task_type": task_type, "help_seconds": help_seconds}
        resumed = await _waited_in_thread(graph, input, config, {**named, "run_id": run_id})
    recorder = _recorder(
        graph,
        input,
        config,
        hooks=hooks,
        task_type=task_type,
        verifiers=verifiers,
        run_id=run_id,
        agent_name=agent_name,
        tools=tools,
        resumed=resumed,
        help_seconds=help_seconds,
    )
    with own_cancels():  # a cancel left on the task by an earlier run is not this run's
        try:
            drive_graph = drive if exact_counts else _drive
            watch = _unkept_breakpoints(graph, config, invoke_kwargs)
            output, halted = await drive_graph(graph, input, config, recorder, invoke_kwargs, prices, watch)
            paused = await _paused_at(graph, config, invoke_kwargs, halted)
        except (Exception, asyncio.CancelledError) as exc:
            return _stopped(recorder, exc)
        except BaseException as exc:  # a SystemExit, Ctrl-C, a library's own: the run ends, it goes on up
            _stopped(recorder, exc)
            raise
    return _ended(recorder, graph, output, config, paused)


def astream(
    graph: Any,
    input: Any,
    config: Mapping[str, Any] | None = None,
    *,
    stream_mode: str | Sequence[str] = "values",
    prices: PriceTable | None = None,
    **kwargs: Any,
) -> GraphStream:
    """`graph.astream(input, config, stream_mode=...)` observed as `arun` observes `ainvoke` (with
    `arun`'s options, `exact_counts` aside): iterate it for what LangGraph's stream gives (a chunk
    of the one mode asked for, else `(mode, chunk)` pairs, of the graph itself), then `.result` is
    the run's `RunResult`. The stream never raises for a stop; a caller that stops reading (breaks
    out, or closes it) stops the graph, and the run ends `cancelled`."""
    need(graph, callable(getattr(graph, "astream", None)), "langgraph.astream", "a compiled graph")
    _refuse(
        kwargs, {"version", "subgraphs", "exact_counts"}, "langgraph.astream reads the graph's own stream"
    )
    modes = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    if not modes or not all(isinstance(m, str) for m in modes):
        raise ConfigError(f"stream_mode is a LangGraph stream mode or a list of them, not {stream_mode!r}")
    options = {k: kwargs.pop(k) for k in _OPTIONS if k in kwargs}
    _check_options(
        options.get("hooks"),
        options.get("task_type", "default"),
        options.get("run_id"),
        options.get("help_seconds"),
        options.get("agent_name"),
    )
    config = dict(config or {})
    return GraphStream(graph, input, config, options, modes, isinstance(stream_mode, str), prices, kwargs)


class GraphStream:
    """A graph's stream as the caller asked for it, observed; `result` once it has ended."""

    def __init__(
        self,
        graph: Any,
        input: Any,
        config: dict[str, Any],
        options: dict[str, Any],
        modes: list[str],
        single: bool,
        prices: PriceTable | None,
        invoke_kwargs: dict[str, Any],
    ) -> None:
        self._graph, self._input, self._config, self._options = graph, input, config, options
        self._modes, self._single, self._prices, self._kwargs = modes, single, prices, invoke_kwargs
        self._read = False
        self._recorder: Recorder | None = None
        self.result: RunResult | None = None

    def __aiter__(self) -> AsyncIterator[Any]:
        """The run starts when the stream is first read: one never read starts nothing. A caller that
        breaks out has `result`, `cancelled`, at once."""
        return Reading(self._chunks(), self._abandoned)

    def _abandoned(self) -> None:
        """The caller dropped the stream half read: the run ends `cancelled` (the graph's stream is
        closed with ours, once the event loop closes it)."""
        if self.result is None and self._recorder is not None:
            self.result = self._recorder.fail(GeneratorExit("the caller stopped reading the stream"))

    async def _chunks(self) -> AsyncGenerator[Any]:
        if self._read:
            raise ConfigError("this stream was read already: start another with langgraph.astream")
        with own_cancels():  # a cancel left on the task by an earlier run is not this run's
            self._read, config, options = True, self._config, self._options
            if not options.get("resumed"):
                options["resumed"] = await _waited_in_thread(self._graph, self._input, config, options)
            recorder = self._recorder = _recorder(self._graph, self._input, config, **options)
            reading = _Stream(self._graph, recorder, self._prices)
            unkept = _unkept_breakpoints(self._graph, config, self._kwargs) and "updates" not in self._modes
            watch = ["updates"] if unkept else []
            try:
                chunks = reading.chunks(self._input, config, self._kwargs, [*self._modes, *watch])
                async with contextlib.aclosing(chunks):  # closed with this one: the graph's stream too
                    async for namespace, mode, payload in chunks:
                        if mode in self._modes and not namespace:
                            payload = _without_ours(payload) if mode == "messages" else payload
                            yield payload if self._single else (mode, payload)
                paused = await _paused_at(self._graph, config, self._kwargs, reading.halted)
            except BaseException as exc:  # (a run already ended, by the caller dropping the stream, stays so)
                self.result = _stopped(recorder, exc)
                if not _its_own(exc):  # the run's own failure ends the stream; the rest goes on up
                    raise
            else:
                self.result = _ended(recorder, self._graph, reading.output(), config, paused)
            finally:
                if self.result is None:  # the caller stopped reading: the graph's stream is closed with ours
                    self.result = recorder.fail(GeneratorExit("the caller stopped reading the stream"))


def _its_own(exc: BaseException) -> bool:
    """Whether `exc` out of the graph is the run's own failure, which ends its stream as `arun` returns
    it: an exception, or a `CancelledError` while nobody cancels the run (a node's own, which LangGraph
    passes on bare, not as its NodeCancelledError, in a task an earlier run's cancel is left on)."""
    return isinstance(exc, Exception) or (isinstance(exc, asyncio.CancelledError) and not run_cancelled())


_OPTIONS = (*OPTIONS, "tools")
_STREAMED = {"stream_mode", "version", "subgraphs"}  # the integration drives the graph's stream itself


def check_options(entry: str, options: Mapping[str, Any]) -> None:
    """A clear `ConfigError` for an option of a catalog entry (`entry`) that no run can take: one
    the runner fills for each run itself (Endstate's), or one of the graph's stream. LangGraph's own
    take any keyword, so these failed only at each start (a bare TypeError, the run left running)."""
    if ours := sorted(k for k in options if k in OPTIONS):
        raise ConfigError(
            f"{entry} got {ours}, which the runner fills for each run: give register_foreign its own "
            "task_type=, help=HelpPolicy(...), verifiers= (the run id, the entry's name and the runner's "
            "hooks are given), not as options"
        )
    _refuse(options, _STREAMED, f"{entry}: langgraph.run drives the graph's stream itself")


def _refuse(kwargs: Mapping[str, Any], taken: set[str], why: str) -> None:
    if found := taken & kwargs.keys():
        raise ConfigError(f"{why}: leave out {sorted(found)}")


def _recorder(graph: Any, input: Any, config: dict[str, Any], **options: Any) -> Recorder:
    """The run's recorder, from `arun`'s options; the segment is named in the config's metadata,
    which LangGraph writes into the thread's checkpoints (see `_waited_in_thread`), when it has any."""
    recorder = Recorder.start(
        options.get("hooks"),
        agent=options.get("agent_name") or str(getattr(graph, "name", None) or "langgraph"),
        task_type=options.get("task_type", "default"),
        model=str(config.get("metadata", {}).get("ls_model_name", "") or NO_MODEL),
        provider=PROVIDER,
        task=_task(input),
        tools=options.get("tools") or _graph_tools(graph),
        verifiers=options.get("verifiers"),
        run_id=options.get("run_id"),
        resumed=options.get("resumed"),
        help_seconds=options.get("help_seconds"),
    )
    if _has_checkpointer(graph, config):  # with none, no checkpoint keeps them (and nothing resumes)
        info, observer = recorder.info, recorder.observer
        ours = {RUN_ID: info.run_id, SEGMENT: info.segment, TRACE_ID: observer.trace_id}
        ours |= {SPAN_ID: observer.span_id, AGENT: info.agent, TASK_TYPE: info.task_type}
        config["metadata"] = {**(config.get("metadata") or {}), **{k: v for k, v in ours.items() if v}}
    return recorder


# What a thread's checkpoints say of the Endstate run segment that wrote them (LangGraph copies a
# run's config metadata of strings and numbers into each): LangGraph's own `Command(resume=...)`
# goes on as the run that waited.
RUN_ID, SEGMENT = "endstate_run_id", "endstate_segment"
TRACE_ID, SPAN_ID = "endstate_trace_id", "endstate_span_id"
AGENT, TASK_TYPE = "endstate_agent", "endstate_task_type"
_OURS = frozenset((RUN_ID, SEGMENT, TRACE_ID, SPAN_ID, AGENT, TASK_TYPE))


async def _waited_in_thread(
    graph: Any, input: Any, config: Mapping[str, Any], options: Mapping[str, Any]
) -> RunResult | None:
    """For a `Command(resume=...)` given with no `resumed=`: the run segment that waits on the thread,
    as its latest checkpoint names it (its id, segment and span; not its totals, which the
    checkpoint does not hold: the resumed segment counts its own). None when nothing names one, or
    it names another run than the `run_id` given (`options`: `arun`'s)."""
    if not isinstance(input, Command) or input.resume is None or not _has_checkpointer(graph, config):
        return None
    try:
        saved = await graph.aget_state(config)
    except Exception:  # no thread in the config, a checkpointer without async methods: LangGraph says
        return None
    meta = getattr(saved, "metadata", None) or {}
    run_id, segment = meta.get(RUN_ID), meta.get(SEGMENT)
    waiting = getattr(saved, "interrupts", None)
    if not (isinstance(run_id, str) and isinstance(segment, int) and waiting):
        return None
    if options.get("run_id") not in (None, run_id):  # the caller says which run this is
        return None
    wait = options.get("help_seconds")
    question, pending = _asking(waiting[0])
    asked = _timestamp(getattr(saved, "created_at", None))
    deadline = asked + (DEFAULT_HELP_SECONDS if wait is None else wait)
    suspension = Suspension(question, deadline, asked, pending)
    # the run's own agent and task type, as its segment named them (a checkpoint of an earlier
    # release names neither: the call's then)
    name = (
        _text(meta.get(AGENT))
        or options.get("agent_name")
        or str(getattr(graph, "name", None) or "langgraph")
    )
    task_type = _text(meta.get(TASK_TYPE)) or options.get("task_type", "default")
    snapshot = Snapshot(
        run_id, name, task_type, SnapshotKind.SUSPENDED, segment, [Suspended(suspension)], usage=Spent(),
        trace_id=meta.get(TRACE_ID), span_id=meta.get(SPAN_ID),
    )  # fmt: skip
    return resumed_run(snapshot)


def _text(value: Any) -> str | None:
    """A checkpoint's metadata value when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _without_ours(chunk: Any) -> Any:
    """A `messages` stream chunk's metadata as the graph's own stream gives it: without the segment's
    names (LangChain copies a run's config metadata into every call's)."""
    if isinstance(chunk, tuple) and len(chunk) == 2 and isinstance(chunk[1], Mapping):
        return chunk[0], {k: v for k, v in chunk[1].items() if k not in _OURS}
    return chunk


def _timestamp(created_at: Any) -> float:
    """A checkpoint's `created_at` (ISO 8601) in seconds; now when it cannot be read."""
    try:
        return datetime.fromisoformat(str(created_at)).timestamp()
    except ValueError:
        return time.time()


def _raised_by(error: BaseException, calls: Sequence[str]) -> str | None:
    """Which of a failed task's tool calls (by id) raised `error`: the only one, else the call a
    `ToolNode` was running (its local `call`) where it raised; None when no frame tells (then each
    call of the task failed with it, as the node did)."""
    if len(calls) == 1:
        return calls[0]
    frames = error.__traceback__
    while frames is not None:
        call = frames.tb_frame.f_locals.get("call")
        if isinstance(call, Mapping) and call.get("id") in calls:
            return str(call["id"])
        frames = frames.tb_next
    return None


def _stopped(recorder: Recorder, exc: BaseException) -> RunResult:
    """The stop an exception out of the graph stands for (see the table above)."""
    if isinstance(exc, GraphRecursionError):
        return recorder.finish(StopReason.LIMIT, limit=LimitKind.TURNS, note=str(exc), raw=exc)
    if isinstance(exc, GraphDrained):  # a shutdown's cooperative stop at a step's end, checkpointed first
        note = (
            f"LangGraph drained the run ({exc.reason}) at a step's end; its checkpoint is saved: "
            "run the graph on the same thread with input None to go on."
        )
        return recorder.finish(StopReason.CANCELLED, note=note, raw=exc)
    if isinstance(exc, ContextOverflowError | ModelRefusalError):  # LangChain's, raised by its chat models
        recorder.call_failed(exc)
        note = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ContextOverflowError):  # nothing in the graph shrank the input
            return recorder.finish(StopReason.LIMIT, limit=LimitKind.CONTEXT, note=note, raw=exc)
        return recorder.finish(StopReason.GAVE_UP, cause=StopCause.REFUSAL, note=note, raw=exc)
    return recorder.fail(exc, raw=exc)


def _ended(
    recorder: Recorder, graph: Any, output: Any, config: Mapping[str, Any], paused: Sequence[str]
) -> RunResult:
    """The graph's stream ended: waiting for a person (an interrupt, a breakpoint), or finished."""
    if isinstance(output, Mapping) and output.get(INTERRUPT_KEY):
        if not _has_checkpointer(graph, config):
            return _unresumable(recorder, output)
        return _suspend(recorder, output, config)
    if paused:
        if not _has_checkpointer(graph, config):
            return _unresumable(recorder, output, paused)
        return _suspend_at_breakpoint(recorder, output, config, paused)
    if _refused(output):
        note = "The model API refused: the graph ended on its refusal."
        return recorder.finish(StopReason.GAVE_UP, cause=StopCause.REFUSAL, note=note, raw=output)
    if _out_of_steps(output):
        return recorder.finish(StopReason.LIMIT, limit=LimitKind.TURNS, note=OUT_OF_STEPS_NOTE, raw=output)
    return recorder.succeed(output, text=_final_text(output), raw=output)


# What LangGraph's prebuilt agent (`create_react_agent`) writes in place of the model's reply when
# its `remaining_steps` are too few to run the tools the reply asks for: it ends the graph without
# the `GraphRecursionError` the same recursion limit raises in any other graph.
OUT_OF_STEPS = "Sorry, need more steps to process this request."
OUT_OF_STEPS_NOTE = (
    "The graph ran out of steps (its recursion_limit): LangGraph's prebuilt agent ended it with "
    f"{OUT_OF_STEPS!r} in place of the reply's tool calls"
)


def _out_of_steps(output: Any) -> bool:
    """Whether the graph ended on the prebuilt agent's out-of-steps message: that text, written by
    LangGraph (no tool calls, no usage: no model wrote it), as the last message."""
    messages = output.get("messages") if isinstance(output, Mapping) else None
    last = messages[-1] if isinstance(messages, list) and messages else None
    return (
        isinstance(last, AIMessage)
        and last.content == OUT_OF_STEPS
        and not last.tool_calls
        and not last.usage_metadata
    )


def _has_checkpointer(graph: Any, config: Mapping[str, Any]) -> bool:
    """Whether the run had a checkpointer to resume an interrupt() from: the graph's own, or the one
    a parent graph lends it through the config (as LangGraph resolves it)."""
    if (config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER) is not None:
        return True
    return getattr(graph, "checkpointer", None) not in (None, False)


def _unresumable(recorder: Recorder, output: Any, breakpoints: Sequence[str] = ()) -> RunResult:
    """An interrupt() (or a stop at a static breakpoint) of a graph with no checkpointer: nothing can
    ever answer it, so no wait (in the inbox and the help gauges until its deadline) but an error
    saying how to make it resumable."""
    if breakpoints:
        what = f"stopped at a breakpoint (interrupt_before/interrupt_after: {', '.join(breakpoints)})"
    else:
        what = f"called interrupt() (asking: {_asking(output[INTERRUPT_KEY][0])[0]})"
    note = (
        f"The graph {what}, but it has no checkpointer, and LangGraph resumes a graph from one: "
        "compile the graph with graph.compile(checkpointer=...) (InMemorySaver(), or a persistent one "
        "such as SqliteSaver to resume in another process) and run it with a thread_id in its config."
    )
    return recorder.finish(StopReason.ERROR, note=note, error_type=NO_CHECKPOINTER, raw=output)


def _refused(output: Any) -> bool:
    """Whether the graph ended on a reply the model API refused, as LangChain keeps the provider's
    reason: Anthropic's `stop_reason` "refusal", OpenAI's `finish_reason` "content_filter"."""
    messages = output.get("messages") if isinstance(output, Mapping) else None
    last = messages[-1] if isinstance(messages, list) and messages else None
    if not isinstance(last, AIMessage) or last.tool_calls:
        return False
    meta = last.response_metadata or {}
    return meta.get("stop_reason") == "refusal" or meta.get("finish_reason") == "content_filter"


async def _paused_at(
    graph: Any, config: Mapping[str, Any], invoke_kwargs: Mapping[str, Any], halted: bool = False
) -> Sequence[str]:
    """The nodes a graph with static breakpoints (`interrupt_before`/`interrupt_after`) stopped in
    front of: the stream ends there as if the graph had finished. Asked only of such graphs, of
    their checkpointer; with none, `halted` says whether the `updates` stream showed the stop (and
    the breakpoints configured stand for the nodes)."""
    breakpoints = _breakpoints(graph, invoke_kwargs)
    if not breakpoints:
        return ()
    if not _has_checkpointer(graph, config):
        return breakpoints if halted else ()
    return tuple((await graph.aget_state(config)).next)


def _breakpoints(graph: Any, invoke_kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The static breakpoints of a run: the nodes given to it or compiled in ("*" for all)."""
    found = [invoke_kwargs.get(k) for k in ("interrupt_before", "interrupt_after")]
    found += [getattr(graph, k, None) for k in ("interrupt_before_nodes", "interrupt_after_nodes")]
    names = (n for nodes in found if nodes for n in ([nodes] if isinstance(nodes, str) else nodes))
    return tuple(dict.fromkeys(str(n) for n in names))


def _unkept_breakpoints(graph: Any, config: Mapping[str, Any], invoke_kwargs: Mapping[str, Any]) -> bool:
    """Breakpoints in a graph with no checkpointer: LangGraph stops at them, with no state to ask
    where, and only its `updates` stream says that it stopped (read then, for such runs alone)."""
    return bool(_breakpoints(graph, invoke_kwargs)) and not _has_checkpointer(graph, config)


async def _drive(
    graph: Any,
    input: Any,
    config: dict[str, Any],
    recorder: Recorder,
    invoke_kwargs: dict[str, Any],
    prices: PriceTable | None = None,
    watch: bool = False,
) -> tuple[Any, bool]:
    """`graph.astream` read as it goes (`MODES`); returns what `ainvoke` would, and (`watch`: its
    `updates` read too) whether the graph stopped at a breakpoint."""
    reading = _Stream(graph, recorder, prices)
    async for _ in reading.chunks(input, config, invoke_kwargs, ["updates"] if watch else []):
        pass
    return reading.output(), reading.halted


class _Stream:
    """A graph's stream (`MODES`, and any other modes asked for) read into a `_Reader` as it goes."""

    def __init__(self, graph: Any, recorder: Recorder, prices: PriceTable | None) -> None:
        self.replies = Replies() if _prebuilt(graph) else None  # its out-of-steps end hides a reply
        self.graph, self.reader = graph, _Reader(recorder, graph, prices, self.replies)
        self.latest: Any = None
        self.halted = False  # an `updates` chunk (read only when asked for) showed the graph stop
        self._seeded: set[tuple[str, ...]] = set()  # graphs (by namespace) whose state before it ran is read
        self._inner = _has_subgraphs(graph)  # their streams cost about a tenth of a scripted turn

    async def chunks(
        self, input: Any, config: dict[str, Any], invoke_kwargs: dict[str, Any], extra: Sequence[str] = ()
    ) -> AsyncGenerator[tuple[tuple[str, ...], str, Any]]:
        """Each chunk as `(namespace, mode, payload)`, read before it is given on."""
        modes = [*MODES, *(m for m in extra if m not in MODES)]
        if self.replies is not None:
            config = self.replies.config(config)
        stream = self.graph.astream(input, config, stream_mode=modes, subgraphs=self._inner, **invoke_kwargs)
        async with contextlib.aclosing(stream):
            try:
                async for chunk in stream:
                    namespace, mode, payload = chunk if self._inner else ((), *chunk)
                    self._read(namespace, mode, payload)
                    yield namespace, mode, payload
            finally:  # the replies still waiting for an open call count, however the run ends
                self.reader.flush()

    def _read(self, namespace: tuple[str, ...], mode: str, payload: Any) -> None:
        if mode == "values":
            if not namespace:
                self.latest = payload
            if namespace not in self._seeded:  # a subgraph's too: what it resumes with was counted before
                self._seeded.add(namespace)
                self.reader.seed(payload)
        elif mode == "tasks":
            try:
                self.reader.read(payload, inner=bool(namespace))
            except Exception:  # a chunk of an unforeseen shape: the run goes on, unobserved there
                hook_failed("langgraph tasks stream")
        elif mode == "updates" and not namespace and isinstance(payload, Mapping):
            self.halted = self.halted or INTERRUPT_KEY in payload

    def output(self) -> Any:
        """What `ainvoke` returns: the last state, with the interrupts at `__interrupt__` when the
        graph waits for a person."""
        latest, interrupts = self.latest, self.reader.interrupts
        if not interrupts:
            return latest
        return (
            {**latest, INTERRUPT_KEY: interrupts} if isinstance(latest, dict) else {INTERRUPT_KEY: interrupts}
        )


def _has_subgraphs(graph: Any) -> bool:
    """Whether the graph runs subgraphs (as nodes or called in them), as LangGraph finds them;
    asked once per graph (a graph is compiled once and run many times)."""
    try:
        return _SUBGRAPHS[graph]
    except (KeyError, TypeError):
        pass
    found = getattr(graph, "get_subgraphs", None)
    try:
        has = callable(found) and next(iter(found()), None) is not None
    except Exception:  # a graph LangGraph cannot look into: read as one graph
        has = False
    with contextlib.suppress(TypeError):  # a graph that cannot be weakly referenced is asked each run
        _SUBGRAPHS[graph] = has
    return has


_SUBGRAPHS: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()

PREBUILT = "langgraph.prebuilt.chat_agent_executor"  # where `create_react_agent`'s model node is


def _prebuilt(graph: Any) -> bool:
    """Whether the graph (or a subgraph) is LangGraph's prebuilt agent, which can end out of steps
    with a message in place of its model's reply (its tokens then come from a callback handler, at
    about 3% of a scripted turn); asked once per graph."""
    try:
        return _PREBUILT[graph]
    except (KeyError, TypeError):
        pass
    found = any(_runs_prebuilt(g) for g in [graph, *_subgraphs(graph)])
    with contextlib.suppress(TypeError):
        _PREBUILT[graph] = found
    return found


def _runs_prebuilt(graph: Any) -> bool:
    nodes = getattr(graph, "nodes", None) or {}
    for node in nodes.values():
        bound = getattr(node, "bound", None)
        function = getattr(bound, "afunc", None) or getattr(bound, "func", None)
        if getattr(function, "__module__", None) == PREBUILT:
            return True
    return False


_PREBUILT: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def state_of(result: RunResult) -> str:
    """A `need_help` result's saved state as JSON: the config naming its checkpointer thread.

    The graph's checkpointer holds the state itself; a store keeps this. Of the config's
    `configurable`, what JSON cannot hold (a connection, a client) is left out, never saved as
    its text: whoever resumes gives it again (a catalog agent's `options` do).
    """
    config = (result.raw or {}).get("config") if isinstance(result.raw, Mapping) else None
    if not isinstance(config, Mapping):
        raise ConfigError("only a need_help result of this integration has a state to save")
    configurable = {k: v for k, v in config.get("configurable", {}).items() if _is_json(v)}
    return saved_with_run(result, {"configurable": configurable})


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def resume(
    graph: Any, state: Any, approved: bool | None = None, answer: Any = None, **kwargs: Any
) -> RunResult:
    """Sync entry point; see `aresume` (and `run`, for a checkpointer with sync methods only)."""
    return run_sync(_with_sync_saver(aresume, graph, state, approved, answer, **kwargs))


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
    with reading_state("langgraph.resume", "a need_help result, state_of() or the run's config"):
        state = run_of_saved(state, kwargs)
        config = json.loads(state) if isinstance(state, str | bytes) else state
    if (late := answered_late(kwargs, PROVIDER)) is not None:
        return late
    if not isinstance(config, Mapping) or not config.get("configurable", {}).get("thread_id"):
        if getattr(graph, "checkpointer", None) is None:  # it ran with no thread: nothing holds its state
            raise ConfigError(
                "the graph has no checkpointer, and LangGraph resumes an interrupt() from one: compile "
                "the graph with checkpointer= (a persistent one, such as SqliteSaver, to resume in "
                "another process) and run it with a thread_id in its config"
            )
        raise ConfigError("resume needs the interrupted run's state: its RunResult, state_of() or config")
    waiting = await _interrupts(graph, config)
    value = answer if answer is not None else approved
    if not waiting and approved is False:
        raise ConfigError(
            f"thread {config['configurable']['thread_id']!r} is paused at a LangGraph breakpoint, which "
            "cannot be told no: approve it to go on, or let it expire. For calls a person may deny, "
            "call interrupt() in the tool instead"
        )
    if len(waiting) > 1:  # LangGraph must be told which: the one the person was asked about
        value = {_asked(waiting, kwargs.get("resumed")).id: value}
    return await arun(graph, Command(resume=value), config, **kwargs)


def _asked(waiting: Sequence[Interrupt], resumed: RunResult | None) -> Interrupt:
    """Of several pending interrupts, the one the suspension asked about (else the first: the others
    wait on, and the run asks about them next)."""
    s = resumed.suspension if resumed is not None else None
    for waits in waiting:
        question, _ = _asking(waits)
        if s is not None and (s.pending.tool_use_id == waits.id if s.pending else s.question == question):
            return waits
    return waiting[0]


async def _interrupts(graph: Any, config: Mapping[str, Any]) -> Sequence[Interrupt]:
    """The thread's pending interrupts (none at a breakpoint); refuse to resume a thread that waits
    for nothing (it would start over)."""
    thread = config["configurable"]["thread_id"]
    try:
        saved = await graph.aget_state(config)
    except (ValueError, NotImplementedError) as exc:  # no checkpointer, or one without async methods
        raise ConfigError(
            f"cannot resume thread {thread!r}: {exc}. Compile the graph with the (async-capable) "
            "checkpointer it was interrupted with"
        ) from exc
    waiting: Sequence[Interrupt] = getattr(saved, "interrupts", ())
    if not waiting and not getattr(saved, "next", ()):
        raise ConfigError(
            f"the graph's checkpointer holds no pending interrupt for thread {thread!r}: it was "
            "answered already, or the checkpointer lost it (an in-memory one does when its process "
            "ends; use a persistent one, such as AsyncSqliteSaver or AsyncPostgresSaver)"
        )
    return waiting


def _suspend(recorder: Recorder, output: Mapping[str, Any], config: Mapping[str, Any]) -> RunResult:
    question, pending = _asking(output[INTERRUPT_KEY][0])
    return recorder.suspend(question, pending, raw=_saved(output, config))


def _suspend_at_breakpoint(
    recorder: Recorder, output: Any, config: Mapping[str, Any], before: Sequence[str]
) -> RunResult:
    """A breakpoint: an approval of the tool calls the last reply asks for (going on runs them
    all, so the question names each), else a question whose answer lets the graph go on."""
    messages = output.get("messages") if isinstance(output, Mapping) else None
    last = messages[-1] if isinstance(messages, list) and messages else None
    waiting = last.tool_calls if isinstance(last, AIMessage) else []
    if not waiting:
        question = f"The graph paused at a breakpoint before {', '.join(before)}: go on?"
        return recorder.suspend(question, None, raw=_saved(output, config))
    first = waiting[0]
    pending = PendingAction(str(first.get("id") or ""), str(first["name"]), dict(first["args"]))
    shown = " and ".join(f"{c['name']}({json_text(c['args'], default=str)})" for c in waiting)
    return recorder.suspend(f"Approve {shown}?", pending, raw=_saved(output, config))


def _saved(output: Any, config: Mapping[str, Any]) -> dict[str, Any]:
    """What a suspended run keeps at `result.raw`: the graph's output and the config naming its thread."""
    return {"output": output, "config": {k: v for k, v in config.items() if k != "callbacks"}}


def _asking(waits: Any) -> tuple[str, PendingAction | None]:
    """What an interrupt asks: an approval of a call (`{"tool", "args"}`), else a question."""
    value = getattr(waits, "value", waits)
    question = value if isinstance(value, str) else json_text(value, default=str)
    pending = None
    if isinstance(value, Mapping) and value.get("tool"):  # {"tool", "args"}: an approval, asked as such
        args = value.get("args") or {}
        arguments = dict(args) if isinstance(args, Mapping) else {"args": args}
        pending = PendingAction(str(getattr(waits, "id", "")), str(value["tool"]), arguments)
        asked = value.get("question")
        question = str(asked) if asked else f"Approve {pending.name}({json_text(arguments, default=str)})?"
    return question, pending


def _calls_in(task_input: Any) -> list[Mapping[str, Any]]:
    """The tool calls a tool node's task runs: its state's last reply's, or the one `Send` gave it."""
    if isinstance(task_input, Mapping):
        if isinstance(call := task_input.get("tool_call"), Mapping):
            return [call]
        messages = task_input.get("messages")
    else:
        messages = task_input
    last = messages[-1] if isinstance(messages, list) and messages else None
    return list(getattr(last, "tool_calls", None) or []) if isinstance(last, AIMessage) else []


def _graph_tools(graph: Any) -> tuple[str, ...]:
    """The tools of the `ToolNode`s of the graph and of its subgraphs (an agent of its own as a
    node, say), as LangGraph finds them: their calls are labelled by name in the metrics. Read once
    per graph (a graph is compiled once and run many times)."""
    try:
        return _TOOLS[graph]
    except (KeyError, TypeError):
        pass
    names: dict[str, None] = {}
    for each in (graph, *_subgraphs(graph)):
        nodes: Mapping[str, Any] = getattr(each, "nodes", None) or {}
        found = (getattr(node, "bound", None) for node in nodes.values())
        names.update(
            (name, None) for bound in found if isinstance(bound, ToolNode) for name in bound.tools_by_name
        )
    tools = tuple(names)
    with contextlib.suppress(TypeError):  # a graph that cannot be weakly referenced is read each run
        _TOOLS[graph] = tools
    return tools


def _subgraphs(graph: Any) -> list[Any]:
    """The graph's subgraphs at any depth, as LangGraph finds them (none when it cannot look in)."""
    found = getattr(graph, "get_subgraphs", None)
    try:
        return [sub for _, sub in found(recurse=True)] if callable(found) else []
    except Exception:
        return []


_TOOLS: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()


def _final_text(output: Any) -> str:
    """The output as text: its last message's content, a string as it is (a functional API
    `@entrypoint`'s answer), anything else as JSON."""
    if isinstance(output, str):
        return output
    messages = output.get("messages") if isinstance(output, Mapping) else None
    if isinstance(messages, list) and messages:
        return content_text(getattr(messages[-1], "content", ""))
    return json.dumps(output, default=str) if output is not None else ""


def _task(input: Any) -> str:
    """The first input message's text: a message, a (role, text) pair or a {"role", "content"} dict."""
    if isinstance(input, str):
        return input
    messages = input.get("messages") if isinstance(input, Mapping) else None
    first = messages[0] if isinstance(messages, list) and messages else None
    if isinstance(first, tuple):
        return content_text(first[1]) if len(first) == 2 else ""
    if isinstance(first, Mapping):
        return content_text(first.get("content"))
    return content_text(getattr(first, "content", ""))


require(  # what this module reads of LangGraph (a stream mode it lacks, `tasks`, LangGraph refuses itself)
    "langgraph",
    "langgraph",
    {
        Pregel: ("astream", "aget_state", "get_subgraphs", "interrupt_before_nodes", "interrupt_after_nodes"),
        StateSnapshot: ("metadata", "interrupts", "next", "created_at"),
        Interrupt: ("value", "id"),
    },
)
require(  # and of the LangChain messages a graph writes
    "langchain-core",
    "langgraph",
    {
        AIMessage: ("usage_metadata", "tool_calls", "response_metadata"),
        ToolMessage: ("tool_call_id", "status"),
    },
)
