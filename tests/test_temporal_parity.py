"""A run on Temporal behaves as the same run does on the store's runner, where audit11 found they
differ: a redeploy that dropped the run's agent, listing by task queue, a catalog entry's `cancel`,
more budget for a limit stop. Against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from subprocess import PIPE
from typing import Any

import pytest
from temporal_server import TemporalServer, temporal_fixture
from test_probe17a_temporal import cli as endstate
from test_temporal import replay_failure
from test_temporal_audit import BUILT, CANCEL, build, lines, same_run, sent_results

from agent import Agent, Extension, RunContext, tool
from agent import tools as agent_tools
from agent.durable.runner import Catalog
from agent.durable.store import NotClaimable, RunStatus
from agent.errors import ConfigError
from agent.result import RunResult
from agent.temporal import TemporalRuns, build_worker

pytestmark = pytest.mark.slow


temporal = temporal_fixture()


def catalog(*names: str, **hooks: Any) -> Catalog:
    """The audit tests' looker under each of `names`."""
    c = Catalog()
    for name in names:
        c.register(name, build, **hooks)
    return c


def build_without_publish(state: dict[str, Any]) -> Agent:
    """The looker as a redeploy left it: without its tool `publish`."""
    agent = build(state)
    return dataclasses.replace(agent, tools=[t for t in agent.tools if t.name != "publish"])


@contextlib.asynccontextmanager
async def worker(runs: TemporalRuns, agents: Catalog, **options: Any) -> AsyncIterator[TemporalRuns]:
    options.setdefault("heartbeat_seconds", 2.0)
    async with await build_worker(runs.client, agents, task_queue=runs.task_queue, **options):
        yield runs


async def connected(server: TemporalServer, suffix: str = "") -> TemporalRuns:
    return await TemporalRuns.connect(server.address, task_queue=f"parity-{uuid.uuid4().hex[:8]}{suffix}")


def test_an_answer_to_a_run_whose_workers_lack_its_agent_is_refused_and_the_run_still_waits(
    temporal: TemporalServer,
) -> None:
    # A redeploy dropped (or renamed) the agent while its run waited for a person. The answer was taken,
    # the model's activity found no such agent, and the run ended as error: the answer spent, the run
    # lost. The store's runner refuses the answer (ConfigError) and gives the run back, still waiting.
    async def scenario() -> None:
        runs = await connected(temporal)
        async with worker(runs, catalog("looker")):
            asked = await asyncio.wait_for(runs.start("looker", "Look it up.", state={"script": "ask"}), 30)
        assert isinstance(asked, RunResult) and asked.reason == "need_help"
        # the redeploy renamed it; its refusal is tried again for 3 s (temporal46), then final
        async with worker(runs, catalog("looker-v2"), catalog_wait=3.0):
            with pytest.raises(ConfigError, match=r"'looker'.*Deploy a worker.*reply again.*still waits"):
                await asyncio.wait_for(runs.answer(asked.run_id, "That one."), 60)
            with pytest.raises(ConfigError, match="'looker'"):
                await asyncio.wait_for(runs.submit(asked.run_id, "That one."), 60)
            record = await runs.record(asked.run_id)
            assert record is not None and record.status is RunStatus.WAITING
        async with worker(runs, catalog("looker")):  # deployed again: the same answer is taken
            done = await asyncio.wait_for(runs.answer(asked.run_id, "That one."), 60)
        assert (done.reason, done.turns) == ("success", 2)

    asyncio.run(scenario())


def test_start_of_an_agent_the_workers_lack_exits_2_as_over_the_store(temporal: TemporalServer) -> None:
    # `endstate start nosuch t` over a store is refused before any run is made: exit 2. Over Temporal the
    # client cannot know the workers' catalog, so the run is made and ends as error at once; the command
    # printed that run's line and exited 0, so a script took the refused start for a run that ended.
    async def scenario() -> tuple[tuple[int, str, str], tuple[int, str, str]]:
        runs = await connected(temporal)
        on = ("--temporal", temporal.address, "--task-queue", runs.task_queue)
        async with worker(runs, catalog("looker")):  # the default wait (0): refused for good at once
            refused = await endstate("start", "nosuch", "Look it up.", *on)
            taken = await endstate("start", "looker", "Look it up.", "--state", '{"script": "ask"}', *on)
        return refused, taken

    (code, out, err), (ok, asked, _) = asyncio.run(scenario())
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("endstate: the workers could not begin run ") and "no agent named 'nosuch'" in err
    assert "error" in out  # the run that exists is shown, as any ended run is
    assert ok == 0 and "need_help" in asked


def test_a_resume_on_workers_that_lack_the_runs_agent_is_refused_and_the_run_stays_resumable(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    # A cancelled run (or a limit stop given more budget) resumed on workers whose catalog no longer has
    # its agent ended as error in the new execution: no longer cancelled, it could not be resumed again.
    # The store's runner refuses the resume and leaves the run as it was.
    async def scenario() -> None:
        runs = await connected(temporal)
        limited = {"script": "write", "dir": str(tmp_path), "sleep": 0, "max_turns": 1}
        async with worker(runs, catalog("looker")):
            stopped = await asyncio.wait_for(runs.start("looker", "Write them.", state=limited), 30)
            asked = await asyncio.wait_for(runs.start("looker", "Look it up.", state={"script": "ask"}), 30)
            assert isinstance(stopped, RunResult) and isinstance(asked, RunResult)
            await runs.cancel(asked.run_id)
            assert (await asyncio.wait_for(runs.result(asked.run_id), 30)).reason == "cancelled"
            await asyncio.wait_for(runs.result(stopped.run_id), 30)  # its cleanup done
        async with worker(runs, catalog("looker-v2"), catalog_wait=3.0):  # tried again for 3 s, then final
            with pytest.raises(ConfigError, match=r"'looker'.*Deploy a worker.*resume it again"):
                await asyncio.wait_for(runs.resume(stopped.run_id, more=Extension(turns=5)), 60)
            with pytest.raises(ConfigError, match=r"'looker'.*Deploy a worker.*resume it again"):
                await asyncio.wait_for(runs.resume(asked.run_id), 60)
            left = await asyncio.wait_for(runs.result(stopped.run_id), 30)
            assert (left.reason, left.limit, left.turns) == ("limit", "turns", 1)
            record = await runs.record(asked.run_id)
            assert record is not None and record.status is RunStatus.CANCELLED
        async with worker(runs, catalog("looker")):  # deployed again: both go on
            extended = await asyncio.wait_for(runs.resume(stopped.run_id, more=Extension(turns=5)), 60)
            assert (extended.reason, extended.turns) == ("success", 3)
            waits = await asyncio.wait_for(runs.resume(asked.run_id), 60)
            assert waits.reason == "need_help"
            done = await asyncio.wait_for(runs.answer(asked.run_id, "That one."), 60)
            assert (done.reason, done.turns) == ("success", 2)

    asyncio.run(scenario())


def test_a_resume_an_older_client_started_with_more_past_the_bounds_goes_on(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    # A client from before budgets had bounds took `--more-seconds 1e9` and started the resume with it
    # in `more`; the workflow read it as `Extension(**more)`, which now refuses it: the workflow task
    # failed on every attempt and the run hung. It is read at the bounds (`bounded_extension`).
    async def scenario() -> None:
        runs = await connected(temporal)
        limited = {"script": "write", "dir": str(tmp_path), "sleep": 0, "max_turns": 1}
        async with worker(runs, catalog("looker")):
            stopped = await asyncio.wait_for(runs.start("looker", "Write them.", state=limited), 30)
            assert isinstance(stopped, RunResult) and stopped.reason == "limit"
            await asyncio.wait_for(runs.result(stopped.run_id), 30)  # its cleanup done
            older = object.__new__(Extension)  # as an older client made it: unchecked
            for name, value in {"turns": 5, "seconds": 1e9, "tokens": 0, "cost_usd": 0.0}.items():
                object.__setattr__(older, name, value)
            extended = await asyncio.wait_for(runs.resume(stopped.run_id, more=older), 30)
            assert (extended.reason, extended.turns) == ("success", 3)

    asyncio.run(scenario())


def test_an_approval_of_a_call_whose_tool_a_redeploy_dropped_is_refused_and_a_denial_is_taken(
    temporal: TemporalServer,
) -> None:
    # The approval was taken and spent: the tool's activity said "this worker's agent has no tool", as a
    # result for the model. The store's runner refuses it (`check_approved_tool`), the run still waiting
    # for a redeploy or a denial.
    async def scenario() -> None:
        runs = await connected(temporal)
        async with worker(runs, catalog("looker")):
            asked = await asyncio.wait_for(runs.start("looker", "Publish.", state={"script": "publish"}), 30)
        assert isinstance(asked, RunResult) and asked.reason == "need_help" and asked.suspension
        assert asked.suspension.pending is not None and asked.suspension.pending.name == "publish"
        dropped = Catalog()
        dropped.register("looker", build_without_publish)
        async with worker(runs, dropped):
            with pytest.raises(
                ConfigError, match=r"no tool 'publish' any more.*or deny the call.*still waits"
            ):
                await asyncio.wait_for(runs.approve(asked.run_id), 60)
            record = await runs.record(asked.run_id)
            assert record is not None and record.status is RunStatus.WAITING
            done = await asyncio.wait_for(runs.deny(asked.run_id, "not now"), 60)
        assert (done.reason, done.turns) == ("success", 2)
        assert sent_results(BUILT[-1]) == [("Denied by a person: not now. Do not retry this call.", False)]

    asyncio.run(scenario())


async def listed(runs: TemporalRuns, run_id: str, status: RunStatus | None = None) -> bool:
    return any(r.run_id == run_id for r in await runs.runs(status, limit=None))


@pytest.mark.parametrize("suffix", ["", ' it\'s "odd" \\'])  # quotes the server's filter does not match
def test_the_runs_listed_and_pending_are_those_of_the_clients_task_queue_only(
    temporal: TemporalServer, suffix: str
) -> None:
    # `runs` and `pending` listed every Endstate workflow of the namespace: a client (the CLI's
    # `--task-queue`, a service) showed, and offered to answer, the runs of other queues' workers.
    async def scenario() -> None:
        ours, theirs = await connected(temporal, suffix), await connected(temporal, suffix)
        async with worker(theirs, catalog("looker")):
            asked = await asyncio.wait_for(theirs.start("looker", "Look it up.", state={"script": "ask"}), 30)
            assert isinstance(asked, RunResult) and asked.reason == "need_help"
            for _ in range(600):  # visibility is eventually consistent: until the other queue lists it
                if await listed(theirs, asked.run_id, RunStatus.WAITING):
                    break
                await asyncio.sleep(0.05)
            assert [r.run_id for r in await theirs.pending()] == [asked.run_id]
            assert not await listed(ours, asked.run_id)
            assert not await listed(ours, asked.run_id, RunStatus.WAITING)
            assert await ours.pending() == []

    asyncio.run(scenario())


def test_a_catalog_entrys_cancel_stops_the_run_before_its_next_turn_as_the_runner_does(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    # The entry's `cancel` (a run-specific cancel signal: the store's runner stops the run before its
    # next turn once it is set) was never read on Temporal: the run went on to its end.
    state = {"script": "write", "dir": str(tmp_path), "sleep": 0}
    CANCEL.clear()  # set by `write` as it starts: the entry's signal below
    here = build(state).run("Write them.", state=state, run_id="local", cancel=CANCEL)
    CANCEL.clear()

    async def go() -> RunResult:
        runs = await connected(temporal)
        async with worker(runs, catalog("looker", cancel=lambda state: CANCEL)):
            run_id = await asyncio.wait_for(runs.start("looker", "Write them.", state=state, wait=False), 30)
            assert isinstance(run_id, str)
            return await asyncio.wait_for(runs.result(run_id), 60)

    there = asyncio.run(go())
    assert (here.reason, here.turns, here.note) == ("cancelled", 1, "The caller cancelled the run.")
    same_run(here, there)
    assert lines(tmp_path, there.run_id) == lines(tmp_path, "local") == ["start 1", "end 1"]


def test_a_run_that_stopped_at_a_limit_goes_on_with_more_budget_as_it_does_locally(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    # `resume` took cancelled runs only ("ended as limit, not cancelled"), its `more` was no argument,
    # `endstate resume --temporal --more-turns` dropped the budget given, and the Temporal service's
    # `POST /runs/{id}/resume` failed as a TypeError (its runner's claim took no `more`).
    from agent.temporal.service import Bridge, TemporalRunner

    state = {"script": "write", "dir": str(tmp_path), "sleep": 0, "max_turns": 1}
    local = build(state)
    stopped = local.run("Write them.", state=state, run_id="local")
    assert stopped.snapshot is not None
    here = build(state).resume(stopped.snapshot, more=Extension(turns=5))
    bridge = Bridge()

    def from_the_service(run_id: str, queue: str) -> None:
        runs = bridge.call(TemporalRuns.connect(temporal.address, task_queue=queue))
        TemporalRunner(runs, bridge).claim(run_id, more=Extension(turns=5))

    async def limited(runs: TemporalRuns) -> str:
        run_id = await asyncio.wait_for(runs.start("looker", "Write them.", state=state, wait=False), 30)
        assert isinstance(run_id, str)
        result = await asyncio.wait_for(runs.result(run_id), 60)
        assert (result.reason, result.limit, result.turns) == ("limit", "turns", 1)
        return run_id

    async def go() -> tuple[RunResult, RunResult]:
        runs = await connected(temporal)
        async with worker(runs, catalog("looker")):
            run_id = await limited(runs)
            with pytest.raises(NotClaimable, match=r"not cancelled \(give it more budget"):
                await runs.resume(run_id)
            with pytest.raises(ConfigError, match="still be out of turns budget"):
                await runs.resume(run_id, more=Extension(seconds=60))
            there = await asyncio.wait_for(runs.resume(run_id, more=Extension(turns=5)), 60)
            await asyncio.wait_for(runs.result(run_id), 60)  # its cleanup done
            with pytest.raises(NotClaimable, match="ended as success, not stopped at a limit"):
                await runs.resume(run_id, more=Extension(turns=5))
            served = await limited(runs)
            await asyncio.to_thread(from_the_service, served, runs.task_queue)
            by_cli = await limited(runs)
            said = await cli("resume", by_cli, "--more-turns", "5", "--json", *on(temporal, runs))
            assert json.loads(said)["reason"] == "success"
            return there, await asyncio.wait_for(runs.result(served), 60), await runs.result(by_cli)

    try:
        there, by_service, by_cli = asyncio.run(go())
    finally:
        bridge.close()
        bridge.loop.close()
    assert (here.reason, here.turns) == ("success", 3)
    for other in (there, by_service, by_cli):
        same_run(here, other)


def on(server: TemporalServer, runs: TemporalRuns) -> tuple[str, ...]:
    return ("--temporal", server.address, "--task-queue", runs.task_queue)


async def cli(*argv: str) -> str:
    """`endstate ARGV` in a process of its own (this one's loop runs the worker meanwhile): its output."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent.cli", *argv, stdout=PIPE, stderr=PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    return out.decode()


@tool
def made(n: int) -> Any:
    """Return what the host stands for n."""
    return HostedOutcome(n)


@dataclasses.dataclass(frozen=True)
class HostedOutcome:
    n: int


class Host:
    """A `ToolHost` that takes `HostedOutcome` values and awaits `made` itself, saying what it did."""

    def __init__(self) -> None:
        self.offloaded: list[str] = []

    def outcome(self, value: Any) -> agent_tools.ToolOutcome | None:
        if isinstance(value, HostedOutcome):
            return agent_tools.ToolOutcome(f"hosted {value.n}", True, "hosted")
        return None

    def offload(self, fn: Any, kwargs: dict[str, Any]) -> Any:
        self.offloaded.append(getattr(fn, "__name__", "?"))
        return asyncio.sleep(0, fn(**kwargs)) if fn is made.fn else None


def test_agent_tools_internals_stay_in_place_and_a_worker_sets_its_documented_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The worker swapped `agent.tools._outcome` and `_in_daemon_thread` for wrappers of its own at
    # import time (monkey-patching private functions); it sets a `ToolHost` now.
    from agent.temporal import _remote
    from agent.temporal.worker import workflow_runner

    before = (agent_tools._outcome, agent_tools._in_daemon_thread)
    monkeypatch.setattr(agent_tools, "_host", None)
    workflow_runner()
    assert (agent_tools._outcome, agent_tools._in_daemon_thread) == before
    assert agent_tools._outcome.__qualname__ == "_outcome"
    assert agent_tools._in_daemon_thread.__qualname__ == "_in_daemon_thread"
    assert agent_tools._host is _remote.WORKFLOW_TOOLS

    host = Host()
    agent_tools.set_host(host)
    ctx = RunContext(run_id="r", agent="a", task="t", task_type="t")
    hosted = asyncio.run(agent_tools.execute(made, {"n": 2}, ctx))
    assert (hosted.text, hosted.is_error, hosted.error_type, host.offloaded) == (
        "hosted 2",
        True,
        "hosted",
        ["made"],
    )
    agent_tools.set_host(None)
    plain = asyncio.run(agent_tools.execute(made, {"n": 2}, ctx))
    assert (plain.text, plain.is_error) == ('"HostedOutcome(n=2)"', False)


def test_a_history_recorded_before_these_changes_still_replays_and_would_not_without_the_gates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run started by the code before `REPLY_CHECKED` and `CATALOG_CANCEL` (a looker that asked for
    approval of `publish`, was approved and finished; recorded with ad46164: `fetch_history().to_json()`)
    replays under this code; with the reply's gate gone (the approval checked by an activity first) it
    would not."""
    from agent.temporal import _remote
    from agent.temporal import workflow as run_workflow

    fixture = "temporal_v5_approved_history.json"
    assert replay_failure(fixture) is None
    patched = _remote.workflow.patched
    monkeypatch.setattr(
        _remote.workflow, "patched", lambda patch: patch == run_workflow.REPLY_CHECKED or patched(patch)
    )
    assert "Nondeterminism" in str(replay_failure(fixture))
