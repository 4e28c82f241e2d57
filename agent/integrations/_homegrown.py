"""Home-grown agent loops (a raw `anthropic` loop, say) observed with Endstate's spans and metrics."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from agent._valid import is_finite_from_zero, is_whole
from agent.errors import ConfigError
from agent.hooks import RunHooks
from agent.integrations._observe import Recorder, Usage, ended_late
from agent.models.base import StopKind, shown_id
from agent.result import LimitKind, PendingAction, RunResult, StopCause, StopReason
from agent.tools import own_cancels, said
from agent.verify import Verifier

E = TypeVar("E", bound=Enum)


class ObservedRun:
    """What a home-grown loop reports inside `observe_run`.

    Wrap each turn in `turn()`, each model call in `model_call()` and each tool
    call in `tool(...)`; say how the run ended with `succeed`, `limit`,
    `give_up`, `need_help` or `stop`. Leaving the block without a stop is a
    success with the last model text as output (checked by the verifiers), or
    after a reply the model API refused (`stop_reason` "refusal") `gave_up`, cause
    `refusal`; an exception leaving it is `error` (or `cancelled`), recorded and re-raised.
    A call against that shape (a turn or model call inside another call, a tool call inside a model
    call, a second reply or stop) is a `ConfigError`, never counted.
    """

    def __init__(self, recorder: Recorder, late: bool = False) -> None:
        self._rec = recorder
        self._late = late  # resumed after its wait's deadline: ended help_timeout as it began
        self._in_turn = False  # a turn inside a turn counted twice, its span inside the other's
        self._answered = False  # the open turn's model call has its reply: the next call is the next turn's
        self._in_call = False  # a model call's block is open
        self._tools = 0  # tool calls' blocks open (several at once: tools run in parallel)

    @property
    def result(self) -> RunResult | None:
        """The run's result, once it has ended."""
        return self._rec.result

    @property
    def run_id(self) -> str:
        return self._rec.info.run_id

    def _going(self, what: str) -> None:
        """A clear `ConfigError` for a call reported after the run ended (its totals are final)."""
        if self._late:
            raise ConfigError(
                f"run.{what}(): the person answered after the wait's deadline, so the run ended "
                "help_timeout as observe_run began (as a late answer to Endstate's own run does) and "
                "nothing of it may run: check run.result before going on"
            )
        if (ended := self._rec.result) is not None:
            raise ConfigError(
                f"run.{what}() after the run ended ({ended.reason}): its result is final; "
                "start a new observe_run for another run"
            )

    def _outside(self, what: str) -> None:
        """A clear `ConfigError` for a turn or a model call begun inside a model call or a tool call: it
        was counted as another turn (or a retry), its span inside the call's."""
        inside = "a model call" if self._in_call else "a tool call" if self._tools else ""
        if inside:
            raise ConfigError(
                f"run.{what}() inside {inside}: a turn holds one model call and, after its reply, the tool "
                "calls it asks for; end the call's `with` block first (a tool's own model calls are the "
                "tool's, not the run's)"
            )

    @contextlib.contextmanager
    def turn(self) -> Iterator[int]:
        """One turn: its model call and the tool calls that follow it.

        Its span ends when the loop's next step begins (the next turn or call, or the stop), so its
        signal says what came of it as Endstate's own loop's does: the stop reason when the run stops
        after it (a final answer ends `success`), else `tool_use`, or `no_tool_call` when the turn
        called no tool. A limit or a cancellation reported between turns leaves the turn as it was
        (Endstate's loop checks those before a turn)."""
        self._going("turn")
        if self._in_turn:
            raise ConfigError(
                "run.turn() inside a turn: a turn holds one model call and the tool calls after it; "
                "end the turn's `with` block before the next one begins"
            )
        self._outside("turn")
        index = self._rec.begin_turn()
        self._rec.explicit_turns = True
        self._in_turn, self._answered = True, False
        try:
            yield index
        except BaseException:
            self._rec.hold_turn(stopping=True)
            raise
        finally:
            self._in_turn = False
        self._rec.hold_turn()

    @contextlib.contextmanager
    def model_call(self, max_tokens: int = 0, model: str = "") -> Iterator[ModelCall]:
        """Time a model call; give its reply to `call.reply(...)` inside the block. `model`: the
        model this call asks for when not the run's (a cheap model for one step, say): its span
        and series are that model's."""
        if not isinstance(model, str):
            raise ConfigError(f"run.model_call(model=...) takes the model's name, a string, not {model!r}")
        self._going("model_call")
        self._outside("model_call")
        if self._in_turn and self._answered:
            raise ConfigError(
                "run.model_call() after this turn's model call was answered: a turn holds one model call "
                "(and retries of a failed one); begin the next turn with `with run.turn():`"
            )
        self._rec.model_started(max_tokens, model=model)
        call = ModelCall(self._rec)
        self._in_call = True
        try:
            yield call
        except BaseException as exc:
            self._rec.model_ended(Usage(), error=exc)
            raise
        finally:
            self._in_call = False
        if not call.answered and self._rec.result is None:
            call.reply()
        call.answered = True  # a reply given after the block is refused: the call is over
        self._answered = self._in_turn

    @contextlib.contextmanager
    def tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, call_id: str = ""
    ) -> Iterator[ToolRun]:
        """Time a tool call; give its result to `t.result(...)`. An exception is an error outcome."""
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ConfigError(f"run.tool({name!r}, arguments=...) takes a dict, not {arguments!r}")
        self._going("tool")
        if self._in_call:
            raise ConfigError(
                f"run.tool({name!r}) inside a model call: the tool calls come after the reply that asks "
                "for them; give call.reply(...) and end the model call's `with` block first"
            )
        call_id = call_id or uuid.uuid4().hex[:12]
        self._rec.tool_started(call_id, name, arguments)
        handle = ToolRun()
        self._tools += 1
        try:
            yield handle
        except Exception as exc:
            self._rec.tool_ended(call_id, name, said(exc), type(exc).__name__, arguments)
            raise
        finally:
            self._tools -= 1
        self._rec.tool_ended(call_id, name, handle.text, handle.error_type, arguments)

    def succeed(self, output: Any = None) -> RunResult:
        """The loop produced its final output: success, checked by the verifiers."""
        self._going("succeed")
        return self._rec.succeed(self._rec.last_text if output is None else output)

    def limit(self, kind: LimitKind | str, note: str = "") -> RunResult:
        """A budget of the loop's own ran out: `limit` with which one."""
        self._going("limit")
        return self._rec.finish(StopReason.LIMIT, limit=_named(LimitKind, kind, "limit kind"), note=note)

    def give_up(self, note: str, cause: StopCause | str = StopCause.AGENT) -> RunResult:
        """The model gave up (`agent`), the API refused (`refusal`) or a guardrail tripped (`guardrail`)."""
        self._going("give_up")
        return self._rec.finish(StopReason.GAVE_UP, cause=_named(StopCause, cause, "cause"), note=note)

    def need_help(self, question: str, pending: PendingAction | None = None, state: Any = None) -> RunResult:
        """The loop waits for a person; `state` is what it needs to resume (kept at `result.raw`)."""
        self._going("need_help")
        return self._rec.suspend(question, pending, raw=state)

    def stop(self, reason: StopReason | str, note: str = "") -> RunResult:
        """Any other stop reason (`no_progress`, `cancelled`, `error`...); `success`, `need_help` and
        `gave_up` go the way `succeed`, `need_help` and `give_up` do (verified; a question with a
        deadline; the agent's own give-up). `limit` must say which: use `limit(kind)`."""
        self._going("stop")
        reason = _named(StopReason, reason, "stop reason")
        if reason is StopReason.LIMIT:
            kinds = ", ".join(str(k) for k in LimitKind)
            raise ConfigError(
                f"run.stop('limit') does not say which limit: use run.limit(kind), kind one of {kinds}"
            )
        if reason is StopReason.GAVE_UP:
            return self.give_up(note)
        if reason is StopReason.SUCCESS:
            return self.succeed(note or None)
        if reason is StopReason.NEED_HELP:
            return self.need_help(note or "The run waits for a person.")
        error_type = "error" if reason is StopReason.ERROR else None
        return self._rec.finish(reason, note=note, error_type=error_type)


class ModelCall:
    """The reply of one model call in `ObservedRun.model_call`."""

    def __init__(self, recorder: Recorder, late: bool = False) -> None:
        self._rec = recorder
        self._late = late  # resumed after its wait's deadline: ended help_timeout as it began
        self.answered = False  # given its reply, or its block ended: a reply now would count it again

    def reply(
        self,
        message: Any = None,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        text: str = "",
        stop_reason: str = "end_turn",
        cost_usd: float | None = None,
    ) -> None:
        """Record the reply: an `anthropic` Message as it is, or the counts and text.

        A Message's input counts its cache reads and writes, as Endstate's own
        runs do. Without `cost_usd` the call has no price, and the run's cost is
        unknown (never a made-up $0): price it with your own table if you have one.
        A Message's request id (the SDK's, from its `request-id`) is on the call's span.
        """
        if self.answered:
            raise ConfigError(
                "call.reply() of a model call that has its reply, or whose `with` block ended: one model "
                "call has one reply; open another run.model_call() for another call"
            )
        if (ended := self._rec.result) is not None:
            raise ConfigError(f"call.reply() after the run ended ({ended.reason}): its result is final")
        cache_read = cache_write = 0
        if message is not None:
            usage = getattr(message, "usage", None)
            cache_read = getattr(usage, "cache_read_input_tokens", 0) or 0
            cache_write = getattr(usage, "cache_creation_input_tokens", 0) or 0
            input_tokens = (getattr(usage, "input_tokens", 0) or 0) + cache_read + cache_write
            output_tokens = getattr(usage, "output_tokens", 0) or 0
            text = "".join(getattr(b, "text", "") for b in getattr(message, "content", ()) or ())
            stop_reason = getattr(message, "stop_reason", None) or stop_reason
        for name, count in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
            if not (is_whole(count) and count >= 0):
                raise ConfigError(f"call.reply({name}=...) takes a whole number >= 0, not {count!r}")
        if cost_usd is not None and not is_finite_from_zero(cost_usd):  # inf: a counter at inf for good
            raise ConfigError(
                "call.reply(cost_usd=...) takes a finite number of dollars >= 0 (None: unpriced), "
                f"not {cost_usd!r}"
            )
        self.answered = True
        self._rec.model_ended(
            Usage(input_tokens, output_tokens, cache_read, cache_write, cost_usd),
            text=text,
            stop_reason=stop_reason,
            model=str(getattr(message, "model", "") or ""),
            response_id=str(getattr(message, "id", "") or ""),
            calls=_tool_uses(message),
            request_id=shown_id(getattr(message, "_request_id", None)),  # the SDK's, from `request-id`
        )


def _tool_uses(message: Any) -> list[tuple[str, str, Any]]:
    """The tool calls an `anthropic` Message asks for (none without a Message)."""
    blocks = getattr(message, "content", None) or ()
    return [
        (str(getattr(b, "id", "")), str(getattr(b, "name", "")), getattr(b, "input", None) or {})
        for b in blocks
        if getattr(b, "type", None) == "tool_use"
    ]


@dataclass
class ToolRun:
    """The result of one tool call in `ObservedRun.tool`."""

    text: str = ""
    error_type: str | None = None

    def result(self, text: str, error_type: str | None = None) -> None:
        self.text, self.error_type = text, error_type


def _waiting(resumed: Any, agent: str, task_type: str) -> RunResult | None:
    """`resumed` when it is a run of this agent and task type that waits for a person, else a clear
    `ConfigError` (a run begun under one agent and ended under another counts in neither's shares)."""
    if resumed is None:
        return None
    if not (isinstance(resumed, RunResult) and resumed.reason is StopReason.NEED_HELP):
        shown = resumed.reason if isinstance(resumed, RunResult) else type(resumed).__name__
        raise ConfigError(f"observe_run(resumed=...) takes a need_help RunResult to go on from, not {shown}")
    if (resumed.agent, resumed.task_type) != (agent, task_type):
        raise ConfigError(
            f"observe_run(resumed=...) goes on with run {resumed.run_id} of agent {resumed.agent!r}, task "
            f"type {resumed.task_type!r}: pass agent={resumed.agent!r}, task_type={resumed.task_type!r}"
        )
    return resumed


def _ceilings(limits: Any) -> dict[str, float]:
    """The loop's own budgets (`agent_budget_limit`), by limit kind: a clear `ConfigError` for a kind
    that is none (its series would never show) or a ceiling that is no number >= 0 (the metrics part
    failed on it, and the run's stop went uncounted)."""
    if limits is None:
        return {}
    if not isinstance(limits, Mapping):
        raise ConfigError(f"limits is a dict of ceilings by limit kind (say {{'turns': 10}}), not {limits!r}")
    ceilings = {}
    for kind, ceiling in limits.items():
        named = _named(LimitKind, kind, "limit kind")
        if not is_finite_from_zero(ceiling):
            raise ConfigError(f"limits[{kind!r}] is a ceiling, a finite number >= 0, not {ceiling!r}")
        ceilings[str(named)] = float(ceiling)
    return ceilings


def _named(kind: type[E], value: Any, what: str) -> E:
    """`value` as a member of the enum `kind`, or a `ConfigError` listing the names it takes."""
    try:
        return kind(value)
    except ValueError:
        names = ", ".join(str(m.value) for m in kind)  # type: ignore[attr-defined]
        raise ConfigError(f"{value!r} is no {what}: use one of {names}") from None


@contextlib.contextmanager
def observe_run(
    hooks: RunHooks | None,
    *,
    agent: str,
    task_type: str,
    model: str = "",
    provider: str = "anthropic",
    task: str = "",
    tools: Sequence[str] = (),
    limits: Mapping[str, float] | None = None,
    verifiers: Sequence[Verifier] | Verifier | None = None,
    resumed: RunResult | None = None,
    help_seconds: float | None = None,
) -> Iterator[ObservedRun]:
    """Observe a home-grown agent loop with Endstate's spans and metrics.

    with observe_run(hooks, agent="triage", task_type="ticket", model=MODEL) as run:
        with run.turn(), run.model_call() as call:
            call.reply(client.messages.create(...))
        run.succeed()
    run.result.reason  # StopReason.SUCCESS

    A run that stopped `need_help` goes on with `resumed=` its result: the same run (its id, its
    totals, the next segment linked to the last), the person's wait recorded as answered now;
    after the wait's deadline it ends `help_timeout` at once (`run.result`, the wait `expired`), and
    a turn, call or stop in the block is a `ConfigError`: nothing of the loop runs.
    `help_seconds` is how long a `need_help` waits (default a day).
    """
    resumed = _waiting(resumed, agent, task_type)
    late = ended_late(hooks, resumed, agent, task_type, provider)
    recorder = late or Recorder.start(
        hooks,
        agent=agent,
        task_type=task_type,
        model=model,
        provider=provider,
        task=task,
        tools=tools,
        limits=_ceilings(limits),
        verifiers=verifiers,
        resumed=resumed,
        help_seconds=help_seconds,
    )
    run = ObservedRun(recorder, late=late is not None)
    with own_cancels():  # a cancel left on the task by an earlier run is not this run's
        try:
            yield run
        except BaseException as exc:
            recorder.fail(exc)
            raise
    if recorder.result is None:  # left without a stop: the last reply's says how
        if recorder.last_stop == StopKind.REFUSED:  # the model API refused, as Endstate's own runs end it
            recorder.finish(StopReason.GAVE_UP, cause=StopCause.REFUSAL, note="The model API refused.")
        else:
            recorder.succeed(recorder.last_text)
