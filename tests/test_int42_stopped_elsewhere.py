"""int42: a run that ends in another thread or task than the one that started it (a home-grown
loop's stop reported from a worker thread or a child task, a stream closed by another task) left
its ended span current in the starting thread: every later run there was recorded as a child of
that ended run, in its trace, so a trace view showed unrelated runs nested under one that had
stopped. A later run now takes the context the ended run was started in as its parent."""

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


def the_next_run(rig: Rig) -> ReadableSpan:
    """A second run in the starting thread or task, after the first ended elsewhere: its span."""
    with (
        observe_run(rig.hooks, agent="next", task_type="t", model="m") as run,
        run.turn(),
        run.model_call() as call,
    ):
        call.reply(input_tokens=1, text="ok")
    assert run.result is not None and run.result.reason is StopReason.SUCCESS
    [span] = [s for s in rig.run_spans() if s.name == "invoke_agent next"]
    return span


def test_a_run_stopped_in_a_worker_thread_is_not_the_parent_of_the_next_run(rig: Rig) -> None:
    def in_a_thread() -> None:
        with observe_run(rig.hooks, agent="first", task_type="t", model="m") as run:
            worker = threading.Thread(target=a_turn_then_stop, args=(run,))
            worker.start()
            worker.join()
        assert run.result is not None and run.result.reason is StopReason.SUCCESS
        nxt = the_next_run(rig)
        [first] = [s for s in rig.run_spans() if s.name == "invoke_agent first"]
        assert nxt.parent is None  # a root of its own, as the first run's span was
        assert nxt.context.trace_id != first.context.trace_id
        assert not trace.get_current_span().get_span_context().is_valid  # nothing left current

    failures: list[BaseException] = []
    starter = threading.Thread(target=_catching, args=(in_a_thread, failures))  # its context starts empty
    starter.start()
    starter.join()
    assert not failures, failures


def test_a_run_stopped_in_a_child_task_is_not_the_parent_of_the_next_run(rig: Rig) -> None:
    async def main() -> tuple[ReadableSpan, ReadableSpan]:
        with observe_run(rig.hooks, agent="first", task_type="t", model="m") as run:

            async def stop_it() -> None:
                a_turn_then_stop(run)

            await asyncio.create_task(stop_it())
        nxt = the_next_run(rig)
        [first] = [s for s in rig.run_spans() if s.name == "invoke_agent first"]
        return first, nxt

    first, nxt = asyncio.run(main())
    assert first.parent is None and nxt.parent is None
    assert nxt.context.trace_id != first.context.trace_id


def test_a_run_inside_another_still_has_it_as_parent(rig: Rig) -> None:
    """The outer run is still going: a run begun in it is its child, as before."""
    with observe_run(rig.hooks, agent="outer", task_type="t", model="m") as outer:
        inner_span = the_next_run(rig)
        a_turn_then_stop(outer)
    [outer_span] = [s for s in rig.run_spans() if s.name == "invoke_agent outer"]
    assert inner_span.parent is not None and inner_span.parent.span_id == outer_span.context.span_id


def _catching(work: Callable[[], None], failures: list[BaseException]) -> None:
    try:
        work()
    except BaseException as exc:
        failures.append(exc)
