"""Foreign agents in the catalog: other frameworks' runs, suspended in Endstate's store, resumed from it.

A catalog entry registered with `Catalog.register_foreign` builds a `ForeignAgent`, which the
runner drives as it drives an Endstate `Agent`. A run that stops `need_help` (an OpenAI Agents
SDK interruption, a Pydantic AI deferred tool call, a LangGraph `interrupt()`) is saved as a
suspended snapshot: its journal holds the task, the pending call and the suspension, as an
Endstate suspension's does (so `endstate pending`, `GET /pending` and the inbox show it), and its
`foreign` field holds the framework's own state (`RunState.to_string()`, Pydantic AI's messages
and deferred calls, the LangGraph thread whose checkpointer holds the graph's state). An
answer, approval or denial resumes it through the framework; the help policy ends it (or answers
for the person) at its deadline. State the framework cannot serialize is said so, at the
suspension and to whoever answers; the suspension itself is kept and expires as usual.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agent.agent import as_reply, check_reply
from agent.audit import SuccessAudit
from agent.budget import Spent
from agent.clock import SYSTEM_CLOCK, CancelSignal, Clock
from agent.errors import ConfigError, EndstateError, SnapshotError
from agent.hooks import HumanWait, NoHooks, RunHooks, RunInfo, RunObserver
from agent.integrations._observe import Recorder, UnreadableState, resumed_run, stopping_at_turns
from agent.journal import (
    Answer,
    Answered,
    Approval,
    Call,
    Denial,
    Entry,
    HumanReply,
    Reply,
    Suspended,
    Task,
    Text,
)
from agent.policies import HelpPolicy
from agent.result import RunResult, StopReason, Suspension
from agent.snapshot import Checkpoint, ForeignState, Snapshot, SnapshotKind
from agent.tools import said
from agent.verify import Verifier

log = logging.getLogger("endstate.integrations")


class Framework(StrEnum):
    """The frameworks whose suspended runs Endstate can save and resume (their integration modules)."""

    OPENAI_AGENTS = "openai_agents"
    PYDANTIC_AI = "pydantic_ai"
    LANGGRAPH = "langgraph"


@dataclass
class ForeignAgent:
    """A catalog agent whose runs are another framework's, driven and saved by Endstate's runner.

    `build()` makes the framework's agent (LangGraph: `build(checkpointer)` makes the compiled
    graph). `options` are the framework's own keyword arguments for every run (`max_turns`,
    `usage_limits`, a LangGraph `config`...). LangGraph needs `checkpointer`: a checkpoint saver,
    or a function returning an async context manager of one (`AsyncSqliteSaver.from_conn_string`),
    entered for each segment; the run id is the thread id. `make_input(task)` turns the task
    into the graph's input (default: one user message). The other fields are an `Agent`'s.
    """

    name: str
    framework: Framework
    build: Callable[..., Any]
    task_type: str = "default"
    options: Mapping[str, Any] = field(default_factory=dict)
    checkpointer: Any = None
    make_input: Callable[[str], Any] | None = None
    help: HelpPolicy = field(default_factory=HelpPolicy)
    verifiers: Sequence[Verifier] = ()
    hooks: RunHooks = field(default_factory=NoHooks)
    clock: Clock = SYSTEM_CLOCK
    checkpoint: Callable[[Checkpoint], None] | None = None  # unused: a foreign segment is saved at its end
    audit: SuccessAudit | None = None  # success audits are not offered for foreign runs

    def __post_init__(self) -> None:
        try:
            self.framework = Framework(self.framework)
        except ValueError:
            known = ", ".join(f.value for f in Framework)
            raise ConfigError(f"foreign agent {self.name!r}: framework must be one of {known}") from None
        self._check_options()
        if self.framework is Framework.LANGGRAPH and self.checkpointer is None:
            raise ConfigError(
                f"foreign agent {self.name!r}: LangGraph resumes an interrupt() from a checkpointer; "
                "pass checkpointer= (a persistent one, such as AsyncSqliteSaver, to resume in another "
                "process)"
            )

    def _check_options(self) -> None:
        """The framework's own options, checked against what it takes (LangGraph's stream takes any
        keyword); not where the framework is not installed (a process that only lists runs)."""
        try:
            check = getattr(self._module(), "check_options", None)
        except ImportError:
            return
        if check is not None:
            check(f"register_foreign({self.name!r}, ...) options", self.options)

    def tool_named(self, name: str) -> None:
        """No previews: the framework's tools are not Endstate tools."""
        return None

    # -- the runner's entry points -------------------------------------------------------------

    async def arun(
        self,
        task: str,
        *,
        run_id: str | None = None,
        state: dict[str, Any] | None = None,
        cancel: CancelSignal | None = None,
    ) -> RunResult:
        """Run `task` through the framework; a suspension comes back with its snapshot to store."""
        run_id, hooks = run_id or uuid.uuid4().hex, _SpanOf.around(self.hooks)
        try:
            async with self._target() as target, stopping_at_turns(cancel):
                result = await self._start(target, task, run_id, hooks)
        except EndstateError:
            raise
        except Exception as exc:  # the integrations end every run they begin: this is before it
            raise ConfigError(
                f"run {run_id} of the {self.framework} agent {self.name!r} could not begin: {_why(exc)}"
            ) from exc
        return self._saved(result, [Task(task)], dict(state or {}), _span_of(hooks))

    async def aresume(
        self,
        snapshot: Snapshot,
        reply: HumanReply | str | None = None,
        *,
        approved: bool | None = None,
        more: Any = None,
        cancel: CancelSignal | None = None,
        now: float | None = None,
    ) -> RunResult:
        """Continue a suspended run through the framework with a person's reply (as `Agent.aresume`)."""
        s = self._suspension_of(snapshot)
        if more is not None:
            raise ConfigError(
                f"run {snapshot.run_id} is a {self.framework} run: it cannot be given more budget"
            )
        now = self.clock.time() if now is None else now
        if now >= s.deadline:
            return await self.aexpire(snapshot, now=now, cancel=cancel)
        human = as_reply(reply, approved)
        check_reply(s, human)
        assert human is not None
        return await self._continue(snapshot, Answered(human, now, "person"), cancel)

    async def aexpire(
        self, snapshot: Snapshot, *, now: float | None = None, cancel: CancelSignal | None = None
    ) -> RunResult:
        """Nobody answered before the deadline: end as `help_timeout`, or go on with the default answer."""
        s = self._suspension_of(snapshot)
        now = self.clock.time() if now is None else now
        if now < s.deadline:
            raise SnapshotError(f"run {snapshot.run_id} is not waiting past a deadline")
        note = f"Nobody answered {s.question!r} before the deadline."
        if self.help.on_timeout == "resume":
            default = self.help.default_answer
            human: HumanReply = Denial(default) if s.pending else Answer(default)
            try:
                return await self._continue(snapshot, Answered(human, now, "policy"), cancel)
            except ConfigError as exc:  # it cannot go on: it ends, saying why, rather than wait for ever
                log.error("run %s: the default answer could not be given: %s", snapshot.run_id, exc)
                note += f" The default answer could not be given: {exc}"
        wait = HumanWait(s.suspended_at, now, "expired", s.question, _pending_name(s), s.deadline)
        recorder = Recorder.start(
            self.hooks,
            agent=self.name,
            task_type=snapshot.task_type,
            provider=str(self.framework),
            task=snapshot.task,
            resumed=_resumed(snapshot, s),
            wait=wait,
            go_on=False,
        )
        return recorder.finish(StopReason.HELP_TIMEOUT, note=note)

    # -- segments ----------------------------------------------------------------------------------

    async def _continue(
        self, snapshot: Snapshot, answered: Answered, cancel: CancelSignal | None = None
    ) -> RunResult:
        foreign = snapshot.foreign
        assert foreign is not None and snapshot.suspension is not None
        if foreign.state is None:
            raise ConfigError(
                f"run {snapshot.run_id} cannot be resumed from the store: its {self.framework} state "
                f"could not be saved when it suspended ({foreign.error}). Nothing was changed: it ends "
                "at its deadline under its help policy. Make that state serializable for later runs"
            )
        journal = [*snapshot.journal, answered]
        resumed = _resumed(dataclasses.replace(snapshot, journal=journal), snapshot.suspension)
        hooks = _SpanOf.around(self.hooks)
        try:
            async with self._target() as target, stopping_at_turns(cancel):
                result = await self._resume(target, foreign.state, answered.reply, resumed, hooks)
        except UnreadableState as exc:
            raise self._unloadable(snapshot.run_id, exc.__cause__ or exc) from exc
        except EndstateError:
            raise
        except Exception as exc:  # the integrations end every run they begin: this is before it
            raise self._unloadable(snapshot.run_id, exc) from exc
        if result.reason is StopReason.CANCELLED:  # cut off: the answer is kept, recovery gives it again
            return dataclasses.replace(
                result, snapshot=dataclasses.replace(snapshot, kind=SnapshotKind.CANCELLED)
            )
        return self._saved(result, journal, snapshot.state, _span_of(hooks), snapshot.segment + 1)

    def _unloadable(self, run_id: str, exc: BaseException) -> ConfigError:
        """The framework refused the saved state (the agent renamed since, its messages' format
        changed): a clear error, the run left waiting as it was (its deadline still ends it)."""
        return ConfigError(
            f"run {run_id} cannot be resumed from the store: {self.framework} could not load its saved "
            f"state into the agent built now ({_why(exc)}); was the agent, or its tools, changed since it "
            "suspended? Nothing was changed: it ends at its deadline under its help policy, or build the "
            "agent as it was and answer again"
        )

    async def _start(self, target: Any, task: str, run_id: str, hooks: RunHooks) -> RunResult:
        common = self._common(run_id, hooks)
        if self.framework is not Framework.LANGGRAPH:
            return await self._module().arun(target, task, **common, **self.options)  # type: ignore[no-any-return]
        options = dict(self.options)
        config = dict(options.pop("config", None) or {})
        config["configurable"] = {**(config.get("configurable") or {}), "thread_id": run_id}
        graph_input = self.make_input(task) if self.make_input else {"messages": [("user", task)]}
        if await _begun(target, config, run_id):  # begun before, then cut off or its worker gone: go on
            graph_input = None
        return await self._module().arun(target, graph_input, config, **common, **options)  # type: ignore[no-any-return]

    async def _resume(
        self, target: Any, state: str, reply: HumanReply, resumed: RunResult, hooks: RunHooks
    ) -> RunResult:
        approved, answer = _decision(reply)
        # the run's own task type, though the entry's changed since it suspended: the run goes on as it is
        common = self._common(resumed.run_id, hooks) | {"resumed": resumed, "task_type": resumed.task_type}
        options = dict(self.options)
        if self.framework is Framework.LANGGRAPH:  # interrupt() gets True, False, or the answer's text
            config = dict(options.pop("config", None) or {})
            saved = _json_object(state, "a LangGraph thread config")
            config["configurable"] = {**(config.get("configurable") or {}), **saved.get("configurable", {})}
            answer = answer if isinstance(reply, Answer) else None
            return await self._module().aresume(target, config, approved, answer, **common, **options)  # type: ignore[no-any-return]
        if self.framework is Framework.OPENAI_AGENTS:
            options.pop("context", None)  # the saved RunState carries the run's context
        return await self._module().aresume(target, state, approved, answer, **common, **options)  # type: ignore[no-any-return]

    def _common(self, run_id: str, hooks: RunHooks) -> dict[str, Any]:
        """The keyword arguments every integration's `arun` takes."""
        return {
            **{"hooks": hooks, "task_type": self.task_type, "verifiers": self.verifiers},
            **{"run_id": run_id, "agent_name": self.name, "help_seconds": self.help.wait_seconds},
        }

    def _module(self) -> Any:
        return importlib.import_module(f"agent.integrations.{self.framework.value}")

    @contextlib.asynccontextmanager
    async def _target(self) -> AsyncIterator[Any]:
        """The framework's agent (LangGraph: the graph, compiled with its checkpointer) for one segment."""
        async with self._checkpointer() as saver:
            yield self._built(saver)

    def _built(self, saver: Any) -> Any:
        try:
            return self.build(saver) if self.framework is Framework.LANGGRAPH else self.build()
        except Exception as exc:
            raise ConfigError(f"cannot build the {self.framework} agent {self.name!r}: {_why(exc)}") from exc

    @contextlib.asynccontextmanager
    async def _checkpointer(self) -> AsyncIterator[Any]:
        cp = self.checkpointer
        if cp is None or hasattr(cp, "aget_tuple") or not callable(cp):
            yield cp  # a saver as it is (or none: not LangGraph)
            return
        made = cp()
        if hasattr(made, "__aenter__"):
            async with made as saver:
                yield saver
        else:
            yield made

    # -- saving ------------------------------------------------------------------------------------

    def _saved(
        self,
        result: RunResult,
        journal: list[Entry],
        state: dict[str, Any],
        span_id: str | None,
        segment: int = 1,
    ) -> RunResult:
        """A `need_help` result gets the snapshot the store keeps: the journal, the suspension, the
        framework's state (or why it could not be saved). Other results are as they came."""
        if result.reason is not StopReason.NEED_HELP or result.suspension is None:
            return result
        s = self._on_clock(result.suspension)
        foreign = self._foreign_state(result)
        parts: list[Text | Call] = [Text(result.last_text)] if result.last_text else []
        if s.pending is not None:
            parts.append(Call(s.pending.tool_use_id, s.pending.name, dict(s.pending.arguments)))
        reply = Reply(tuple(parts), stop_reason="tool_use" if s.pending else "end_turn")
        snapshot = Snapshot(
            run_id=result.run_id,
            agent=self.name,
            task_type=result.task_type,
            kind=SnapshotKind.SUSPENDED,
            segment=segment,
            journal=[*journal, reply, Suspended(s)],
            usage=_spent(result),
            state=state,
            trace_id=result.trace_id,
            span_id=span_id,  # the next segment's run span links to this one
            foreign=foreign,
        )
        return dataclasses.replace(result, suspension=s, snapshot=snapshot)

    def _on_clock(self, s: Suspension) -> Suspension:
        """The framework's suspension, which the integration timed by this host's wall clock, moved onto
        the agent's clock (a runner's: the store's, by which its sweep judges the deadline and the
        answer's time is taken): by this host's, a worker whose clock ran ten minutes behind the
        store's cut every person's wait ten minutes short, and their waits were reckoned that far off."""
        if self.clock is SYSTEM_CLOCK:
            return s
        shift = self.clock.time() - time.time()
        return dataclasses.replace(s, deadline=s.deadline + shift, suspended_at=s.suspended_at + shift)

    def _foreign_state(self, result: RunResult) -> ForeignState:
        """The framework's state as JSON text, or why there is none (logged: the run still waits)."""
        options: dict[str, Any] = (
            {"strict_context": True} if self.framework is Framework.OPENAI_AGENTS else {}
        )
        try:
            return ForeignState(str(self.framework), self._module().state_of(result, **options))
        except Exception as exc:
            why = _why(exc)
            log.error(
                "run %s waits for a person, but its %s state cannot be saved (%s): it can only expire, "
                "or be resumed in this process", result.run_id, self.framework, why,
            )  # fmt: skip
            return ForeignState(str(self.framework), None, why)

    def _suspension_of(self, snapshot: Snapshot) -> Suspension:
        if snapshot.agent != self.name:
            raise SnapshotError(
                f"snapshot of run {snapshot.run_id} belongs to agent {snapshot.agent!r}, not {self.name!r}"
            )
        if snapshot.foreign is None or snapshot.foreign.framework != self.framework:
            raise SnapshotError(
                f"run {snapshot.run_id} was not suspended by {self.framework}: "
                f"it has no {self.framework} state"
            )
        s = snapshot.suspension
        if s is None:
            raise SnapshotError(f"run {snapshot.run_id} is not waiting for a person")
        return s


class _SpanOf:
    """The caller's hooks, noting the id of the segment's run span (the next segment links to it)."""

    def __init__(self, inner: RunHooks) -> None:
        self.inner = inner
        self.span_id: str | None = None

    @classmethod
    def around(cls, hooks: RunHooks) -> Any:
        """`hooks` wrapped; no hooks stay no hooks (a run nobody watches builds nothing to report)."""
        return hooks if isinstance(hooks, NoHooks) else cls(hooks)

    def run_started(self, info: RunInfo) -> RunObserver:
        observer = self.inner.run_started(info)
        self.span_id = observer.span_id
        return observer


def _span_of(hooks: RunHooks) -> str | None:
    return hooks.span_id if isinstance(hooks, _SpanOf) else None


def _decision(reply: HumanReply) -> tuple[bool | None, str | None]:
    """A typed reply as the integrations' `approved` and `answer` arguments."""
    if isinstance(reply, Approval):
        return True, None
    if isinstance(reply, Denial):
        return False, reply.reason or None
    return None, reply.text


def _resumed(snapshot: Snapshot, s: Suspension) -> RunResult:
    """The suspended segment as the resumed one's recorder takes it: the run's totals and its wait."""
    return dataclasses.replace(resumed_run(snapshot), suspension=s)


def _spent(result: RunResult) -> Spent:
    """What the run spent, as a snapshot keeps it."""
    spent = Spent(
        turns=result.turns, active_seconds=result.active_seconds, waiting_seconds=result.waiting_seconds
    )
    spent.add(result.usage)
    return spent


def _pending_name(s: Suspension) -> str | None:
    return s.pending.name if s.pending else None


async def _begun(graph: Any, config: Mapping[str, Any], run_id: str) -> bool:
    """Whether the run's thread's latest checkpoint is this run's own (the integration names the run
    in each checkpoint's metadata): the run began before and a shutdown cut it off, or its worker
    died, before its end was recorded. It goes on from that checkpoint (input None: LangGraph runs
    the step it was in again), as LangGraph resumes a thread; its task given again on top of that
    state had the model read the task twice and the cut tool call with no result, which a model API
    refuses. A thread begun outside Endstate, or a checkpointer that cannot say: a start as before."""
    from agent.integrations.langgraph import RUN_ID

    try:
        saved = await graph.aget_state(config)
    except Exception:
        return False
    metadata = getattr(saved, "metadata", None)
    return isinstance(metadata, Mapping) and metadata.get(RUN_ID) == run_id


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SnapshotError(f"the saved state is not {what}: {exc}") from exc
    if not isinstance(data, dict):
        raise SnapshotError(f"the saved state is not {what}")
    return data


def _why(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, EndstateError) else f"{type(exc).__name__}: {said(exc)}"
