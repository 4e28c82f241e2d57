"""int43: a home-grown run that ends in another thread or task than the one that started it cannot
make the caller's context current again there; its ended run span stayed the current span of the
starting thread until that thread's next Endstate run. Any other operation there meanwhile (an
instrumented HTTP client's span, a team's own `start_as_current_span`) was parented under the ended
run, in its trace. Once a run has ended, the span its context holds stands for the caller's."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest
from integrations_support import Rig, rigged
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from agent import StopReason, observe_run
from agent.integrations._homegrown import ObservedRun


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as r:
        yield r


def a_turn_then_stop(run: ObservedRun) -> None:
    with run.turn(), run.model_call() as call:
        call.reply(input_tokens=3, text="done")
    run.succeed()


def unrelated_span(rig: Rig, name: str) -> ReadableSpan:
    """A span of the team's own code, begun from the thread's current context."""
    with _tracer(rig).start_as_current_span(name):
        pass
    [span] = [s for s in rig.spans() if s.name == name]
    return span


def _tracer(rig: Rig) -> trace.Tracer:
    assert rig.provider is not None
    return rig.provider.get_tracer("team")


def in_a_fresh_thread(work: Callable[[], None]) -> None:
    failures: list[BaseException] = []

    def catching() -> None:
        try:
            work()
        except BaseException as exc:
            failures.append(exc)

    starter = threading.Thread(target=catching)  # its context starts empty
    starter.start()
    starter.join()
    assert not failures, failures


def test_after_a_run_stopped_in_a_worker_thread_nothing_in_the_starting_thread_is_its_child(rig: Rig) -> None:
    def starting_thread() -> None:
        with observe_run(rig.hooks, agent="first", task_type="t", model="m") as run:
            worker = threading.Thread(target=a_turn_then_stop, args=(run,))
            worker.start()
            worker.join()
        assert run.result is not None and run.result.reason is StopReason.SUCCESS
        assert not trace.get_current_span().get_span_context().is_valid  # the ended run is not current
        assert not trace.get_current_span().is_recording()
        span = unrelated_span(rig, "http GET")
        [first] = rig.run_spans()
        assert span.parent is None and span.context.trace_id != first.context.trace_id

    in_a_fresh_thread(starting_thread)


def test_after_a_run_stopped_in_a_child_task_the_callers_span_is_current_again(rig: Rig) -> None:
    async def main() -> tuple[ReadableSpan, ReadableSpan, ReadableSpan]:
        tracer = _tracer(rig)
        with tracer.start_as_current_span("request") as request:
            with observe_run(rig.hooks, agent="first", task_type="t", model="m") as run:

                async def stop_it() -> None:
                    a_turn_then_stop(run)

                await asyncio.create_task(stop_it())
            assert trace.get_current_span().get_span_context() == request.get_span_context()
            after = unrelated_span(rig, "db query")
        [first] = rig.run_spans()
        [outer] = [s for s in rig.spans() if s.name == "request"]
        return outer, first, after

    outer, first, after = asyncio.run(main())
    assert first.parent is not None and first.parent.span_id == outer.context.span_id
    assert after.parent is not None and after.parent.span_id == outer.context.span_id  # not under `first`


def test_while_the_run_goes_on_its_span_is_still_the_parent(rig: Rig) -> None:
    """What the run's own tools do lands under its span, as before."""
    with observe_run(rig.hooks, agent="outer", task_type="t", model="m") as run:
        inside = unrelated_span(rig, "tool's http GET")
        a_turn_then_stop(run)
    [outer] = rig.run_spans()
    assert inside.parent is not None and inside.parent.span_id == outer.context.span_id
