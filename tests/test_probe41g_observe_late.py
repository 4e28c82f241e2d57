"""`observe_run(..., resumed=result)` given after the wait's deadline ends the run `help_timeout`, as a
late answer to Endstate's own run or to an integration's `resume` does: the block is entered with the
run already ended (`run.result`), and a turn, call, tool call or stop in it is a `ConfigError` saying
the answer came too late, so nothing of the loop runs or is counted. Before, the run went on as if the
person had answered in time: the approved action ran and the run could end `success`."""

from __future__ import annotations

import pytest
from integrations_support import rigged

from agent import ConfigError, StopReason, observe_run
from agent.hooks import RunHooks
from agent.result import PendingAction, RunResult
from telemetry import names as n

AGENT, TASK = "hg_agent", "probe41g"
DELETE = PendingAction("c1", "delete", {"path": "a"})


def suspended(hooks: RunHooks, help_seconds: float) -> RunResult:
    with observe_run(hooks, agent=AGENT, task_type=TASK, help_seconds=help_seconds) as run:
        with run.turn(), run.model_call() as call:
            call.reply(input_tokens=10, output_tokens=2, text="", stop_reason="tool_use")
        run.need_help("Delete a?", DELETE)
    assert run.result is not None
    return run.result


def test_a_resume_after_the_deadline_ends_help_timeout_and_runs_nothing() -> None:
    deleted: list[str] = []
    with rigged() as rig:
        res = suspended(rig.hooks, help_seconds=0)  # the deadline is now: any answer is late
        late = observe_run(rig.hooks, agent=AGENT, task_type=TASK, resumed=res)
        with pytest.raises(ConfigError, match="deadline"), late as run:
            assert run.result is not None and run.result.reason is StopReason.HELP_TIMEOUT
            with run.tool("delete", {"path": "a"}, "c1") as t:
                deleted.append("a")
                t.result("deleted")
    assert deleted == []
    assert run.result is not None and run.result.reason is StopReason.HELP_TIMEOUT
    assert (run.result.run_id, run.result.turns, run.result.input_tokens) == (res.run_id, 1, 10)
    assert rig.stops(AGENT, TASK, "help_timeout") == 1 and rig.stops(AGENT, TASK, "success") == 0
    (wait,) = [s for s in rig.spans() if s.name == n.SPAN_HUMAN_WAIT]
    assert (wait.attributes or {})[n.AGENT_HUMAN_WAIT_OUTCOME] == "expired"
    assert not [s for s in rig.spans() if s.name.startswith(n.SPAN_EXECUTE_TOOL)]


def test_a_block_left_at_once_after_a_late_answer_stays_help_timeout() -> None:
    with rigged() as rig:
        res = suspended(rig.hooks, help_seconds=0)
        with observe_run(rig.hooks, agent=AGENT, task_type=TASK, resumed=res) as run:
            pass
    assert run.result is not None and run.result.reason is StopReason.HELP_TIMEOUT
    assert rig.stops(AGENT, TASK, "success") == 0


def test_a_resume_in_time_goes_on_as_before() -> None:
    with rigged() as rig:
        res = suspended(rig.hooks, help_seconds=3600)
        with observe_run(rig.hooks, agent=AGENT, task_type=TASK, resumed=res) as run:
            assert run.result is None
            with run.tool("delete", {"path": "a"}, "c1") as t:
                t.result("deleted")
            run.succeed("done")
    assert run.result is not None and run.result.reason is StopReason.SUCCESS
    assert rig.stops(AGENT, TASK, "success") == 1
