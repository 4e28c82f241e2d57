"""A user moving runs from the in-process loop to Temporal: the same agent, the same script, the same
run, against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture
from temporalio.client import WorkflowUpdateFailedError
from test_temporal import replay_failure

from agent import Agent, Budget, RetryPolicy, RunContext, Tool, tool
from agent._loop import CUT_SHORT
from agent.durable.runner import AnswerError, Catalog
from agent.errors import ConfigError
from agent.journal import Result
from agent.models.scripted import ScriptedModel, Step, call, finish
from agent.policies import HelpPolicy
from agent.result import RunResult
from agent.temporal import TemporalRuns, _remote
from agent.temporal import workflow as run_workflow

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parent
FAST_RETRY = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
BUILT: list[Agent] = []


temporal = temporal_fixture()


@tool(timeout=None)
def unbounded(n: int) -> str:
    """Look n up, with no timeout of its own (the run's time budget still bounds it)."""
    return f"found {n}"


SLUGGISH_LET_GO = threading.Event()  # set by the test once its runs ended: `sluggish` never beats its timeout


@tool(timeout=1)
def sluggish(n: int) -> str:
    """Look n up slowly: past its own timeout of 1 s."""
    SLUGGISH_LET_GO.wait(120)
    return f"found {n} late"


@tool(needs_approval=True)
def publish(n: int) -> str:
    """Publish n (needs a person's approval)."""
    return f"published {n}"


CANCEL = threading.Event()  # the local run's cancel signal: set when `write` starts
CANCEL_SENT = threading.Event()  # a Temporal run's cancel was requested (see `cancelled_mid_tool`)
WRITE_LET_GO = threading.Event()  # a `held` write ends only once the test sets it


@tool(timeout=30)
def write(ctx: RunContext, n: int) -> str:
    """Write entry n: a line when it starts and one when it is done, `state["sleep"]` seconds apart
    (or, when `state["held"]`, once the test lets it go)."""
    log = Path(ctx.state["dir"]) / f"{ctx.run_id}.log"
    with log.open("a") as f:
        f.write(f"start {n}\n")
    CANCEL.set()
    if ctx.state.get("gated"):  # on Temporal: the sleep starts once the run's cancel is in its history
        CANCEL_SENT.wait(20)
    if ctx.state.get("held"):
        WRITE_LET_GO.wait(120)
    time.sleep(float(ctx.state.get("sleep", 0)))
    with log.open("a") as f:
        f.write(f"end {n}\n")
    return f"wrote {n}"


def _look_up_by_id(id: int) -> str:
    return f"found {id}"


# Its schema says `n`, its function takes `id`: the worker refuses the model's call of it.
renamed = Tool(
    name="renamed",
    fn=_look_up_by_id,
    description="Look n up.",
    parameters={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
)


SCRIPTS: dict[str, list[Step]] = {
    "unbounded": [[call("unbounded", n=1)], [finish("done", "found")]],
    "sluggish": [[call("sluggish", n=1)], [finish("done", "gave it a try")]],
    "bad-arguments": [[call("renamed", n=1)], [finish("done", "gave it a try")]],
    "publish": [[call("publish", n=1)], [finish("done", "published, or not")]],
    "ask": [[finish("need_help", "Which one?")], [finish("done", "looked it up")]],
    "ask-at-length": [
        [finish("need_help", "Which one? " + "?" * 1_200_000)],
        [finish("done", "looked it up")],
    ],
    "write": [[call("write", n=1)], [call("write", n=2)], [finish("done", "wrote them")]],
}


def build(state: dict[str, Any]) -> Agent:
    agent = Agent(
        name="looker",
        model=ScriptedModel(SCRIPTS[state["script"]]),
        instructions="Look things up.",
        tools=[unbounded] if state["script"] == "unbounded" else [sluggish, renamed, publish, write],
        budget=Budget(max_turns=int(state.get("max_turns", 6)), max_seconds=120),
        retry=FAST_RETRY,
    )
    BUILT.append(agent)
    return agent


def catalog() -> Catalog:
    c = Catalog()
    c.register("looker", build)
    return c


@contextlib.asynccontextmanager
async def worker(server: TemporalServer, **options: Any) -> AsyncIterator[TemporalRuns]:
    async with serving(server, catalog(), **options) as runs:
        yield runs


Played = tuple[RunResult, Agent]  # a run's result, and the agent whose model played it


def both(server: TemporalServer, state: dict[str, Any]) -> tuple[Played, Played]:
    """`state`'s run in this process, then on Temporal (the workflow's own result): each with the agent
    whose model played it."""
    BUILT.clear()
    local = build(state)
    here = local.run("Look it up.", state=state)

    async def go() -> RunResult:
        async with worker(server) as runs:
            started = await asyncio.wait_for(runs.start("looker", "Look it up.", state=state, wait=False), 30)
            assert isinstance(started, str)
            return await asyncio.wait_for(runs.result(started), 60)

    there = asyncio.run(go())
    return (here, local), (there, BUILT[-1])


def same_run(a: RunResult, b: RunResult) -> None:
    fields = ("reason", "limit", "cause", "verified", "turns", "output", "note", "error_type", "last_text")
    assert {f: getattr(a, f) for f in fields} == {f: getattr(b, f) for f in fields}
    assert (a.input_tokens, a.output_tokens, a.cost_usd) == (b.input_tokens, b.output_tokens, b.cost_usd)


def sent_results(agent: Agent) -> list[Any]:
    """The tool results the agent's model was sent, in order."""
    model = agent.model
    assert isinstance(model, ScriptedModel)
    last = model.requests[-1]
    return [
        (b["content"], b.get("is_error", False))
        for m in last.messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


def test_an_agent_with_a_tool_of_no_timeout_runs_on_temporal_as_it_runs_locally(
    temporal: TemporalServer,
) -> None:
    # The workflow read every planned tool's timeout as a number: `timeout=None` failed each workflow
    # task, which Temporal retried for ever, and no run of that agent ever ended.
    (here, local), (there, remote) = both(temporal, {"script": "unbounded"})
    assert here.reason == "success"
    same_run(here, there)
    assert sent_results(remote) == sent_results(local) == [("found 1", False)]


@pytest.mark.parametrize("script", ["sluggish", "bad-arguments"])
def test_a_tool_that_times_out_or_is_called_wrongly_reads_to_the_model_as_it_does_locally(
    temporal: TemporalServer, script: str
) -> None:
    # The worker's error result came back with its kind put in front once more:
    # "Error: timeout: tool 'sluggish' timed out after 1 s." where the loop says
    # "Error: tool 'sluggish' timed out after 1 s.".
    SLUGGISH_LET_GO.clear()
    try:
        (here, local), (there, remote) = both(temporal, {"script": script})
    finally:
        SLUGGISH_LET_GO.set()
    same_run(here, there)
    said = sent_results(local)
    assert len(said) == 1 and said[0][1] is True
    assert sent_results(remote) == said


@pytest.mark.parametrize(
    ("agent", "options", "says"),
    [
        (
            "looker",
            {"state": {"script": "unbounded", "raw": b"\x00"}},
            "state cannot be stored: Object of type bytes",
        ),
        ("looker", {"state": {"script": "unbounded", "seen": {1, 2}}}, "Object of type set"),
        ("looker", {"state": ["unbounded"]}, "state must be a dict"),
        ("looker", {"state": {"script": "unbounded", 1: "one"}}, "state cannot be stored: '<' not supported"),
        (5, {}, "agent must be a non-empty string"),
        ("l" * 3000, {}, "search attribute"),
        ("looker", {"task_type": "t" * 3000}, "search attribute"),
        ("looker", {"task": "Look " * 400_000}, "pass a shorter task"),
    ],
)
def test_a_start_temporal_cannot_take_is_refused_saying_what_to_fix_and_starts_nothing(
    temporal: TemporalServer, agent: Any, options: dict[str, Any], says: str
) -> None:
    # Each went to Temporal as it was: bytes and sets in the state were taken (the store's runner
    # refuses them), and the rest failed as a TypeError, a ValueError or a gRPC error, not a ConfigError.
    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=f"audit-{uuid.uuid4().hex[:8]}")
        run_id = f"refused-{uuid.uuid4().hex[:8]}"
        task = options.pop("task", "Look it up.")
        options.setdefault("state", {"script": "unbounded"})
        with pytest.raises(ConfigError, match=says):
            await asyncio.wait_for(runs.start(agent, task, run_id=run_id, wait=False, **options), 30)
        assert await runs.record(run_id) is None

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("script", "update", "reply"),
    [
        ("publish", "deny", 123),
        ("publish", "deny", ["no"]),
        ("ask", "answer", 123),
        ("ask", "answer", {"a": 1}),
    ],
)
def test_a_reply_that_is_not_text_is_refused_and_the_run_still_takes_a_real_one(
    temporal: TemporalServer, script: str, update: str, reply: Any
) -> None:
    # A denial's reason that was not text was taken: the loop refused it inside the workflow, every
    # workflow task after failed, and the run waited for ever with no stop reason (not even queryable).
    async def scenario() -> None:
        async with worker(temporal) as runs:
            asked = await asyncio.wait_for(runs.start("looker", "Look it up.", state={"script": script}), 30)
            assert isinstance(asked, RunResult) and asked.reason == "need_help"
            with pytest.raises(AnswerError, match="must be text"):
                await asyncio.wait_for(getattr(runs, update)(asked.run_id, reply), 30)
            handle = runs.client.get_workflow_handle(asked.run_id)
            with pytest.raises(WorkflowUpdateFailedError):  # as sent by any client, past `TemporalRuns`
                await asyncio.wait_for(handle.execute_update(update, args=[reply]), 30)
            real = (
                runs.deny(asked.run_id, "not now") if update == "deny" else runs.answer(asked.run_id, "That.")
            )
            done = await asyncio.wait_for(real, 30)
            assert done.reason == "success" and done.turns == 2

    asyncio.run(scenario())


def results(result: RunResult) -> list[str]:
    """The tool results the run's journal holds."""
    assert result.snapshot is not None
    return [e.text for e in result.snapshot.journal if isinstance(e, Result)]


def lines(folder: Path, run_id: str) -> list[str]:
    path = folder / f"{run_id}.log"
    return path.read_text().splitlines() if path.exists() else []


async def cancelled_mid_tool(runs: TemporalRuns, state: dict[str, Any], tmp_path: Path) -> str:
    """Start a `write` run, cancel it once its first tool call has begun writing; its run id.
    The call goes on only once the cancel was requested, as a local run's cancel is set in the call."""
    CANCEL_SENT.clear()
    gated = {**state, "gated": True}
    run_id = await asyncio.wait_for(runs.start("looker", "Write them.", state=gated, wait=False), 30)
    assert isinstance(run_id, str)
    deadline = time.monotonic() + 60
    while not lines(tmp_path, run_id):
        assert time.monotonic() < deadline, f"run {run_id}'s first call did not start within 60 s"
        await asyncio.sleep(0.02)
    await runs.cancel(run_id)
    CANCEL_SENT.set()
    return run_id


def test_a_run_cancelled_during_a_tool_keeps_its_result_and_resumes_as_a_local_run_does(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    # A cancel cut the workflow at once: the tool went on to the end on its worker, but the run recorded
    # its outcome as unknown ("Check before you call it again"), so a model would call it again. A
    # cancelled local run (a caller's cancel, a runner's shutdown within its grace) ends the turn first.
    state = {"script": "write", "dir": str(tmp_path), "sleep": 1.5}
    CANCEL.clear()
    local = build(state)
    here = local.run("Write them.", state=state, run_id="local", cancel=CANCEL)
    here_resumed = build(state).resume(here.snapshot)

    async def go() -> tuple[RunResult, RunResult]:
        async with worker(temporal) as runs:
            run_id = await cancelled_mid_tool(runs, state, tmp_path)
            cancelled = await asyncio.wait_for(runs.result(run_id), 30)
            return cancelled, await asyncio.wait_for(runs.resume(run_id), 30)

    there, there_resumed = asyncio.run(go())
    assert (here.reason, here.turns, results(here)) == ("cancelled", 1, ["wrote 1"])
    same_run(here, there)
    assert results(there) == results(here)
    assert here_resumed.reason == "success"
    same_run(here_resumed, there_resumed)
    assert (
        lines(tmp_path, there.run_id) == lines(tmp_path, "local") == ["start 1", "end 1", "start 2", "end 2"]
    )


def test_a_cancelled_runs_tool_that_outlasts_the_grace_is_cut_with_its_outcome_unknown(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    # A runner's shutdown waits `grace` seconds for the turn in flight, then cuts it there; the worker's
    # `cancel_grace` is that grace on Temporal.
    # The tool ends only once the test has read the result (it slept 6 s: a workflow task 5 s late on a
    # loaded machine saw its result within the grace).
    state = {"script": "write", "dir": str(tmp_path), "held": True}

    async def go() -> RunResult:
        async with worker(temporal, cancel_grace=1.0) as runs:
            run_id = await cancelled_mid_tool(runs, state, tmp_path)
            return await asyncio.wait_for(runs.result(run_id), 30)

    WRITE_LET_GO.clear()
    try:
        there = asyncio.run(go())
        assert (there.reason, there.turns, there.note) == ("cancelled", 1, "The run was cancelled.")
        assert results(there) == [CUT_SHORT]
        assert lines(tmp_path, there.run_id) == ["start 1"]  # the run did not wait for the tool's end
    finally:
        WRITE_LET_GO.set()


class WorkerProcess:
    """`endstate worker` over `temporal_audit_agents:catalog` in a process of its own, once it polls."""

    def __init__(self, server: TemporalServer, queue: str, log: Path, *more: str) -> None:
        argv = [sys.executable, "-m", "agent.cli", "worker", "--temporal", server.address]
        argv += [
            "--task-queue",
            queue,
            "--catalog",
            "temporal_audit_agents:catalog",
            "--heartbeat",
            "1",
            *more,
        ]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
        with log.open("w") as out:
            self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        for _ in range(1200):
            if "polling task queue" in log.read_text() or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        assert self.proc.poll() is None, log.read_text()

    def kill(self, how: signal.Signals = signal.SIGKILL) -> None:
        self.proc.send_signal(how)
        self.proc.wait(timeout=60)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def test_an_approved_call_whose_worker_dies_mid_call_asks_a_person_and_never_runs_again_unasked(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    # Temporal retried the approved call's activity on the next worker: the deploy ran twice, with the
    # same idempotency key, and nobody was asked. Locally the call is marked started before it runs, and
    # a run recovered after a crash never repeats it unasked (issue 11, item 8): it suspends for a person
    # to say whether the call took effect. On Temporal the lost call then read to the model as "Outcome
    # unknown", and nobody was asked; now the run suspends with the same question, within the help
    # policy's deadline, and takes the answer as any suspension.
    queue = f"audit-{uuid.uuid4().hex[:8]}"
    first = WorkerProcess(temporal, queue, tmp_path / "first.log")
    second: WorkerProcess | None = None

    async def scenario() -> tuple[RunResult, RunResult]:
        nonlocal second
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        hold = tmp_path / "hold.flag"  # the call cannot end before the kill (it slept 5 s)
        hold.write_text("hold")
        state = {"dir": str(tmp_path), "hold": str(hold)}
        asked = await asyncio.wait_for(runs.start("deployer", "Deploy release 1.", state=state), 60)
        assert isinstance(asked, RunResult) and asked.reason == "need_help"
        approving = asyncio.ensure_future(runs.approve(asked.run_id))  # the segment that follows
        for _ in range(600):
            if lines(tmp_path, asked.run_id):
                break
            await asyncio.sleep(0.05)
        first.kill()  # mid-call: it started, and never reports
        hold.unlink()  # a worker that ran the call again would now end it
        second = WorkerProcess(temporal, queue, tmp_path / "second.log")
        unsure = await asyncio.wait_for(approving, 90)
        assert unsure.reason == "need_help", unsure.note
        await asyncio.wait_for(runs.submit(asked.run_id, answer="It did not deploy."), 60)
        return unsure, await asyncio.wait_for(runs.result(asked.run_id), 60)

    try:
        unsure, done = asyncio.run(scenario())
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.stop()
    assert unsure.suspension is not None and unsure.suspension.pending is None
    question = unsure.suspension.question
    assert (
        question.startswith('The approved call deploy({"n": 1}) was started') and "may or may not" in question
    )
    waits = unsure.suspension.deadline - unsure.suspension.suspended_at
    assert waits == pytest.approx(HelpPolicy().wait_seconds)  # the help policy's deadline, as any question
    assert lines(tmp_path, done.run_id) == ["start 1"]  # never run again
    assert (done.reason, done.turns) == ("limit", 1)
    assert results(done) == ["Answer from a person: It did not deploy."]


def test_a_worker_stopped_by_sigterm_finishes_the_call_in_hand_within_its_grace(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    # `endstate worker --grace` (README: "finishes the activities in hand on SIGTERM") was read and never
    # used: the worker cancelled the call at once, and the next worker ran it again.
    queue = f"audit-{uuid.uuid4().hex[:8]}"
    first = WorkerProcess(temporal, queue, tmp_path / "first.log", "--grace", "20")
    second: WorkerProcess | None = None

    async def scenario() -> RunResult:
        nonlocal second
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        state = {"dir": str(tmp_path), "until_stop": True, "sleep": 1}  # the call ends 1 s into the stop
        run_id = await asyncio.wait_for(
            runs.start("builder", "Build release 1.", state=state, wait=False), 60
        )
        assert isinstance(run_id, str)
        for _ in range(600):
            if lines(tmp_path, run_id):
                break
            await asyncio.sleep(0.05)
        first.kill(signal.SIGTERM)  # returns once the worker has exited
        second = WorkerProcess(temporal, queue, tmp_path / "second.log")
        return await asyncio.wait_for(runs.result(run_id), 90)

    try:
        done = asyncio.run(scenario())
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.stop()
    assert (done.reason, done.turns) == ("success", 2)
    assert lines(tmp_path, done.run_id) == ["start 1", "end 1"]


def test_a_history_recorded_before_these_changes_still_replays_and_would_not_without_the_gate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run started by the code before `GRACEFUL_CANCEL`, `VERBATIM_ERRORS` and `APPROVED_ONCE` (a
    looker whose tool timed out, whose approved call ran, and which was cancelled mid-call; recorded with
    e70a792: `fetch_history().to_json()`) replays under this code; with the cancel's gate gone (the
    activity not cancelled at once) it would not."""
    fixture = "temporal_v4_cancel_mid_tool_history.json"
    assert replay_failure(fixture) is None
    patched = _remote.workflow.patched
    monkeypatch.setattr(
        _remote.workflow, "patched", lambda patch: patch == run_workflow.GRACEFUL_CANCEL or patched(patch)
    )
    assert "Nondeterminism" in str(replay_failure(fixture))


def test_a_lost_approved_call_recorded_before_it_asked_a_person_still_replays_as_unsure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run started by the code before `LOST_CALL_ASKS` (a deployer whose approved call's worker was
    killed mid-call; the call read `UNSURE` and the run ended `limit`; recorded with 3dd7120:
    `fetch_history().to_json()`) replays under this code; with the gate taken as set (the run suspended
    for a person instead) it would not."""
    fixture = "temporal_v6_lost_approved_call_history.json"
    assert replay_failure(fixture) is None
    patched = _remote.workflow.patched
    monkeypatch.setattr(
        _remote.workflow, "patched", lambda patch: patch == _remote.LOST_CALL_ASKS or patched(patch)
    )
    assert "Nondeterminism" in str(replay_failure(fixture))


def test_a_question_longer_than_a_temporal_payload_is_asked_cut_and_the_run_takes_its_answer(
    temporal: TemporalServer,
) -> None:
    # A question of 1.2 MB went out twice in the segment's result (its note and its suspension): the
    # update's answer passed Temporal's 2 MiB payload limit, the worker could never complete that
    # workflow task, and the run waited for ever with no stop reason; nobody could answer it.
    async def scenario() -> None:
        async with worker(temporal) as runs:
            asking = runs.start("looker", "Look it up.", state={"script": "ask-at-length"})
            asked = await asyncio.wait_for(asking, 30)
            assert isinstance(asked, RunResult) and asked.reason == "need_help" and asked.suspension
            assert asked.suspension.question.startswith("Which one? ???")
            assert asked.suspension.question.endswith("characters to fit a Temporal payload]")
            listed = await runs.record(asked.run_id)
            assert listed is not None and listed.question and listed.question.startswith("Which one?")
            done = await asyncio.wait_for(runs.answer(asked.run_id, "That one."), 30)
            assert (done.reason, done.turns) == ("success", 2)
            model = BUILT[-1].model
            assert isinstance(model, ScriptedModel)
            assert len(model.requests[-1].messages[1]["content"][0]["input"]["note"]) > 1_200_000

    BUILT.clear()
    asyncio.run(scenario())


def test_a_run_whose_result_and_long_task_pass_a_payload_together_still_ends(
    temporal: TemporalServer,
) -> None:
    # The workflow's result holds the run's task (to start it over) beside the result's snapshot, whose
    # journal holds the task again: a task of 1 MB made 2.1 MB, past Temporal's 2 MiB payload limit, and
    # the worker could never complete the workflow; it ran on with no stop reason. The result now fits
    # beside the run: here with its snapshot packed (probe40e: it was left out, the run not resumable).
    task = "Look it up: " + "x" * 1_050_000
    state = {"script": "unbounded", "max_turns": 1}
    here = build(state).run(task, state=state)
    assert (here.reason, here.limit, here.snapshot is not None) == ("limit", "turns", True)

    async def go() -> RunResult:
        async with worker(temporal) as runs:
            run_id = await asyncio.wait_for(runs.start("looker", task, state=state, wait=False), 30)
            assert isinstance(run_id, str)
            return await asyncio.wait_for(runs.result(run_id), 30)

    there = asyncio.run(go())
    assert (there.reason, there.limit, there.turns) == (here.reason, here.limit, here.turns)
    assert there.snapshot is not None and "kept zlib-compressed" in there.note, there.note
    assert here.snapshot is not None and there.snapshot.task == here.snapshot.task
