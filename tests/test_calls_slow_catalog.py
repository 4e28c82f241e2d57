"""One agent's slow catalog call (or one reply Temporal is slow to take) holds no other request.

`endstate serve` ran each start's catalog `prepare` (up to its 300 s deadline) and `build` on its one
thread for starts, claims, recoveries and sweeps: one agent whose `prepare` waited on a git clone, a
lock or a slow server held every other start, answer, approve, deny and resume of the service, of
every agent, while `/healthz` said ok. A runner used as a library did worse: `Runner.start` ran them
on the event loop, so every other run of the process stopped with it. The catalog's calls now run on
threads of their own; the store's calls stay on the service's one thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from test_hard45_catalog_system_exit import _dead_pid
from test_service_support import Server, wait_for, wait_status

from agent import Agent
from agent.durable.runner import Catalog, Runner, machine
from agent.durable.store import Lease, NewRun, open_store
from agent.models.scripted import ScriptedModel, finish
from agent.result import StopReason
from agent.service.app import Service, create_app
from agent.service.auth import Token

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCAL = "http://127.0.0.1:8000"
PROMPT = 5.0  # seconds a request of another agent may take while one agent's catalog call hangs
WAIT = 60.0  # the most a test waits for what should happen at once (CI is loaded)


class Slow:
    """A catalog whose agent `slow` waits in its `prepare` or its `build` (`where`: for a run whose
    state says `hold`; `resume`: every build) until released; `quick` asks a question, then finishes
    once answered (and so does `slow`, with `ask` in its state)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.entered, self.released = threading.Event(), threading.Event()
        self.cleaned: list[dict[str, Any]] = []
        self.prepared: list[str] = []
        self.catalog = Catalog()
        self.catalog.register("slow", self._build_slow, prepare=self._prepare, cleanup=self.cleaned.append)
        self.catalog.register("quick", _quick)

    def _hold(self, state: dict[str, Any], where: str) -> None:
        if self.where == where and (state.get("hold") or where == "resume"):
            self.entered.set()
            self.released.wait(WAIT)

    def _prepare(self, state: dict[str, Any], run_id: str) -> dict[str, Any]:
        self.prepared.append(run_id)
        self._hold(state, "prepare")
        return {**state, "world": run_id}

    def _build_slow(self, state: dict[str, Any]) -> Agent:
        self._hold(state, "build")
        self._hold(state, "resume")
        asks = [[finish("need_help", "Go on?")]] if state.get("ask") else []
        return Agent("slow", ScriptedModel([*asks, [finish("done", "slow done")]]), task_type="slow")


def _quick(state: dict[str, Any]) -> Agent:
    script = [[finish("need_help", "Which one?")], [finish("done", "quick done")]]
    return Agent("quick", ScriptedModel(script), task_type="quick")


@pytest.fixture(params=["prepare", "build"])
def slow(request: pytest.FixtureRequest) -> Iterator[Slow]:
    catalog = Slow(request.param)
    yield catalog
    catalog.released.set()  # no held catalog call outlives its test


@pytest.fixture
def api(slow: Slow, tmp_path: Path) -> Iterator[TestClient]:
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, slow.catalog, prepare_seconds=WAIT)
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    client = TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False)
    with client:
        yield client
    store.close()


def _settled(api: TestClient, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        run: dict[str, Any] = api.get(f"/runs/{run_id}").json()
        if run["status"] != "running":
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never settled")


def _within(seconds: float, request: Callable[[], Any]) -> Any:
    """`request()`'s response when it came within `seconds`; else the test fails (the request still
    ends, once the held catalog call is released)."""
    got: list[Any] = []
    sent = threading.Thread(target=lambda: got.append(request()), daemon=True)
    sent.start()
    sent.join(seconds)
    assert got, f"no answer within {seconds:g} s: one agent's catalog call (or Temporal's) held it"
    return got[0]


def test_a_start_held_in_its_catalog_call_holds_no_other_agents_start_or_answer(
    slow: Slow, api: TestClient
) -> None:
    asked = api.post("/runs", json={"agent": "quick", "task": "pick", "run_id": "q1"}, headers=AUTH)
    assert asked.status_code == 202, asked.text
    assert _settled(api, "q1")["status"] == "waiting"
    held: list[Any] = []
    body = {"agent": "slow", "task": "clone", "state": {"hold": True}, "run_id": "s1"}
    starting = threading.Thread(target=lambda: held.append(api.post("/runs", json=body, headers=AUTH)))
    starting.start()
    try:
        assert slow.entered.wait(WAIT), f"the slow start never reached its {slow.where}"
        other = {"agent": "quick", "task": "pick again", "run_id": "q2"}
        started = _within(PROMPT, lambda: api.post("/runs", json=other, headers=AUTH))
        assert started.status_code == 202, started.text
        answered = _within(
            PROMPT, lambda: api.post("/runs/q1/answer", json={"answer": "the first"}, headers=AUTH)
        )
        assert answered.status_code == 202, answered.text
        assert api.get("/healthz").text == "ok"
        assert not held, "the slow start ended before its catalog call was released"
    finally:
        slow.released.set()
        starting.join(WAIT)
    [slow_start] = held
    assert slow_start.status_code == 202, slow_start.text
    assert _settled(api, "q1")["stop_reason"] == "success"
    assert _settled(api, "q2")["status"] == "waiting"
    done = _settled(api, "s1")
    assert (done["stop_reason"], done["state"]) == ("success", {"hold": True, "world": "s1"})


def test_a_second_start_of_the_same_run_id_while_the_first_is_held_is_refused_and_the_first_goes_on(
    slow: Slow, api: TestClient
) -> None:
    body = {"agent": "slow", "task": "clone", "state": {"hold": True}, "run_id": "s1"}
    held: list[Any] = []
    starting = threading.Thread(target=lambda: held.append(api.post("/runs", json=body, headers=AUTH)))
    starting.start()
    try:
        assert slow.entered.wait(WAIT)
        again = _within(PROMPT, lambda: api.post("/runs", json=body, headers=AUTH))
        assert again.status_code == 409, again.text
        assert "is being started here now" in again.json()["error"]
    finally:
        slow.released.set()
        starting.join(WAIT)
    [first] = held
    assert first.status_code == 202, first.text
    assert _settled(api, "s1")["stop_reason"] == "success"
    assert slow.prepared == ["s1"]  # the second was not prepared over the first's world
    deadline = time.monotonic() + WAIT
    while not slow.cleaned and time.monotonic() < deadline:  # (the ended run's cleanup, on its thread)
        time.sleep(0.05)
    assert slow.cleaned == [{"hold": True, "world": "s1"}]  # let go once: as its run ended
    retried = api.post("/runs", json=body, headers=AUTH)  # once answered: the same request gets that run
    assert retried.status_code == 200 and retried.json()["started_before"] is True, retried.text


def test_runner_starts_from_several_tasks_go_on_while_one_agents_catalog_call_is_held(
    slow: Slow, tmp_path: Path
) -> None:
    """A runner used as a library: `Runner.start` of one agent whose prepare (or build) is held, and
    of another agent in the same event loop, which runs to its question meanwhile."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, slow.catalog, prepare_seconds=WAIT)
    release = threading.Timer(WAIT / 2, slow.released.set)  # a loop held by the call is let go at last

    async def both() -> tuple[bool, StopReason, StopReason]:
        held = asyncio.create_task(runner.start("slow", "clone", state={"hold": True}))
        assert await asyncio.to_thread(slow.entered.wait, WAIT)
        quick = await runner.start("quick", "pick")
        still_held = not slow.released.is_set()
        slow.released.set()
        return still_held, quick.reason, (await held).reason

    release.start()
    try:
        still_held, quick, held = asyncio.run(both())
    finally:
        release.cancel()
        store.close()
    assert still_held, "the other agent's start waited for the held catalog call"
    assert (quick, held) == (StopReason.NEED_HELP, StopReason.SUCCESS)


@pytest.mark.parametrize("slow", ["build"], indirect=True)
def test_an_answer_held_in_its_agents_build_holds_no_other_agents_start_or_answer(
    slow: Slow, api: TestClient
) -> None:
    """An answer's claim builds the run's agent: one whose build hangs held every other request."""
    body = {"agent": "slow", "task": "ask first", "state": {"ask": True}, "run_id": "s2"}
    assert api.post("/runs", json=body, headers=AUTH).status_code == 202
    asked = api.post("/runs", json={"agent": "quick", "task": "pick", "run_id": "q1"}, headers=AUTH)
    assert asked.status_code == 202, asked.text
    assert _settled(api, "s2")["status"] == _settled(api, "q1")["status"] == "waiting"
    slow.where = "resume"  # from now on its builds wait
    held: list[Any] = []
    answering = threading.Thread(
        target=lambda: held.append(api.post("/runs/s2/answer", json={"answer": "go on"}, headers=AUTH))
    )
    answering.start()
    try:
        assert slow.entered.wait(WAIT), "the answer never reached the agent's build"
        other = {"agent": "quick", "task": "pick again", "run_id": "q2"}
        started = _within(PROMPT, lambda: api.post("/runs", json=other, headers=AUTH))
        assert started.status_code == 202, started.text
        answered = _within(PROMPT, lambda: api.post("/runs/q1/answer", json={"answer": "that"}, headers=AUTH))
        assert answered.status_code == 202, answered.text
        assert not held, "the held answer ended before its agent's build was released"
    finally:
        slow.released.set()
        answering.join(WAIT)
    [slow_answer] = held
    assert slow_answer.status_code == 202, slow_answer.text
    assert _settled(api, "s2")["stop_reason"] == _settled(api, "q1")["stop_reason"] == "success"


@pytest.mark.parametrize("slow", ["build"], indirect=True)
def test_a_sweep_recovering_a_run_whose_build_is_held_holds_no_start_or_answer(
    slow: Slow, tmp_path: Path
) -> None:
    """A sweep takes over a run whose worker died; its agent's build is held (within the prepare
    deadline): meanwhile the service starts and answers runs of another agent."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, slow.catalog, prepare_seconds=WAIT)
    service = Service(runner, Token(TOKEN), sweep_interval=0.1)
    with TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False) as api:
        asked = api.post("/runs", json={"agent": "quick", "task": "pick", "run_id": "q1"}, headers=AUTH)
        assert asked.status_code == 202, asked.text
        assert _settled(api, "q1")["status"] == "waiting"
        dead = Lease(f"{machine()}:{_dead_pid()}:w1", 30.0)  # a worker of this host that died
        store.create(NewRun("s3", "slow", "clone", "slow", {"hold": True}), dead, store.now())
        try:
            assert slow.entered.wait(WAIT), "no sweep reached the crashed run's build"
            other = {"agent": "quick", "task": "pick again", "run_id": "q2"}
            started = _within(PROMPT, lambda: api.post("/runs", json=other, headers=AUTH))
            assert started.status_code == 202, started.text
            answer = {"answer": "that"}
            answered = _within(PROMPT, lambda: api.post("/runs/q1/answer", json=answer, headers=AUTH))
            assert answered.status_code == 202, answered.text
        finally:
            slow.released.set()
        assert _settled(api, "s3")["stop_reason"] == _settled(api, "q1")["stop_reason"] == "success"
    store.close()


def test_a_service_stopped_while_a_start_is_held_in_prepare_exits_promptly_and_stores_nothing(
    tmp_path: Path,
) -> None:
    """SIGTERM while a start waits in its catalog's `prepare`: the service exits within its grace (5 s
    here), not at the prepare deadline (the one thread its calls ran on was waited for at exit), the
    start stores nothing, and the runs it had are kept (a waiting run still waits)."""
    worlds = tmp_path / "worlds"
    worlds.mkdir()
    (worlds / "hold.flag").write_text("")
    store = str(tmp_path / "runs.db")
    server = Server(store, tmp_path, catalog="calls_agents:catalog")
    with server, server.client() as api:
        assert api.post("/runs", json={"agent": "quick", "task": "pick", "run_id": "q1"}).status_code == 202
        wait_status(api, "q1", "waiting")
        held: list[Any] = []
        body = {"agent": "held", "task": "clone", "run_id": "h1"}
        starting = threading.Thread(target=lambda: held.append(_sent(api, body)), daemon=True)
        starting.start()
        wait_for(lambda: (worlds / "entered").exists(), what="the start to reach its prepare")
        stopped_at = time.monotonic()
        assert server.stop() == 0
        took = time.monotonic() - stopped_at
        starting.join(WAIT)
    assert took < 30, f"the service took {took:.0f} s to stop while a prepare was held"
    [cut] = held  # cut off at the grace's end (uvicorn answers it 500 itself): never a 202
    assert cut is None or cut.status_code >= 500, cut.text
    after = open_store(store)
    try:
        assert [(r.run_id, str(r.status)) for r in after.list_runs(limit=None)] == [("q1", "waiting")]
    finally:
        after.close()


def _sent(api: Any, body: dict[str, Any]) -> Any:
    """The response to a start, or None when the service closed the connection first."""
    try:
        return api.post("/runs", json=body)
    except Exception:
        return None


class _HeldRuns:
    """A stand-in for `TemporalRuns`: a reply to run `held` is taken by no worker until `release`."""

    shown = "temporal (stand-in)"
    task_queue = "endstate"

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    async def start(self, agent: str, task: str, wait: bool = False, **options: Any) -> str:
        return str(options.get("run_id") or "new")

    async def submit(self, run_id: str, *reply: Any) -> None:
        if run_id == "held":
            self.entered.set()
            await asyncio.to_thread(self.release.wait, WAIT)


def test_over_temporal_a_reply_no_worker_takes_holds_no_other_start_or_answer() -> None:
    """`serve --temporal`: a reply no worker takes waits up to 30 s for Temporal; it held each other
    start and answer of the service (its one thread for the runner's calls) as long."""
    from agent.temporal.service import Bridge, TemporalRunner

    runs, bridge = _HeldRuns(), Bridge()
    service = Service(TemporalRunner(runs, bridge), Token(TOKEN), sweep_interval=3600)  # type: ignore[arg-type]
    held: list[Any] = []
    try:
        with TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False) as api:
            answer = {"answer": "go on"}
            answering = threading.Thread(
                target=lambda: held.append(api.post("/runs/held/answer", json=answer, headers=AUTH))
            )
            answering.start()
            try:
                assert runs.entered.wait(WAIT)
                body = {"agent": "quick", "task": "pick", "run_id": "t2"}
                started = _within(PROMPT, lambda: api.post("/runs", json=body, headers=AUTH))
                assert started.status_code == 202, started.text
                other = _within(PROMPT, lambda: api.post("/runs/other/answer", json=answer, headers=AUTH))
                assert other.status_code == 202, other.text
                assert not held
            finally:
                runs.release.set()
                answering.join(WAIT)
    finally:
        bridge.close()
    [taken] = held
    assert taken.status_code == 202, taken.text


@pytest.mark.parametrize("slow", ["prepare"], indirect=True)
def test_a_start_held_in_prepare_counts_against_max_running_and_past_its_deadline_is_a_503(
    slow: Slow, tmp_path: Path
) -> None:
    """Starts now wait in their catalog calls side by side: each still counts against --max-running
    while it does, and one past the prepare deadline is still a 503 (`PrepareHangs`) that stores
    nothing, what its prepare makes later let go by its cleanup."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, slow.catalog, prepare_seconds=2)
    service = Service(runner, Token(TOKEN), sweep_interval=3600, max_running=1)
    held: list[Any] = []
    with TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False) as api:
        body = {"agent": "slow", "task": "clone", "state": {"hold": True}, "run_id": "s1"}
        starting = threading.Thread(target=lambda: held.append(api.post("/runs", json=body, headers=AUTH)))
        starting.start()
        try:
            assert slow.entered.wait(WAIT)
            other = {"agent": "quick", "task": "pick"}
            refused = _within(PROMPT, lambda: api.post("/runs", json=other, headers=AUTH))
            assert refused.status_code == 503 and "--max-running" in refused.json()["error"], refused.text
            starting.join(WAIT)
        finally:
            slow.released.set()
        [late] = held
        assert late.status_code == 503, late.text
        assert "prepare did not finish within 2 s" in late.json()["error"]
        assert api.get("/runs").json()["runs"] == []
        deadline = time.monotonic() + WAIT
        while not slow.cleaned and time.monotonic() < deadline:  # the late prepare's world, let go
            time.sleep(0.05)
        assert slow.cleaned == [{"hold": True, "world": "s1"}]
        assert api.post("/runs", json=other, headers=AUTH).status_code == 202  # room again
    store.close()


@pytest.mark.parametrize("slow", ["build"], indirect=True)
def test_a_service_starting_with_a_crashed_run_whose_build_is_held_serves_at_once(
    slow: Slow, tmp_path: Path
) -> None:
    """A service recovers the runs a dead worker left as it starts: it served nothing until each
    one's build ended (up to the prepare deadline, one after another: a restart loop under a liveness
    probe). Now it serves at once, and the run is recovered once its build ends."""
    store = open_store(str(tmp_path / "runs.db"))
    dead = Lease(f"{machine()}:{_dead_pid()}:w1", 30.0)  # a worker of this host that died
    store.create(NewRun("s3", "slow", "clone", "slow", {"hold": True}), dead, store.now())
    runner = Runner(store, slow.catalog, prepare_seconds=WAIT)
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    api = TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False)
    try:
        _within(PROMPT, api.__enter__)
        assert api.get("/readyz").text == "ready"
        assert slow.entered.wait(WAIT), "the crashed run's recovery never reached its build"
        quick = {"agent": "quick", "task": "pick"}
        started = _within(PROMPT, lambda: api.post("/runs", json=quick, headers=AUTH))
        assert started.status_code == 202, started.text
    finally:
        slow.released.set()
    try:
        assert _settled(api, "s3")["stop_reason"] == "success"
    finally:
        api.__exit__(None, None, None)
        store.close()


def test_a_start_cut_off_while_its_checks_run_leaves_its_run_id_free(tmp_path: Path) -> None:
    """A start cut off (a shutdown's cancel) while its checks ran on the store's thread: its run id was
    kept as being started here for good, so each later start of that id was refused."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, Slow("prepare").catalog, prepare_seconds=WAIT)
    gate, checked = threading.Event(), threading.Event()

    def late(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        gate.wait(WAIT)
        try:
            return call(*args, **kwargs)
        finally:
            checked.set()

    async def slow_calls(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(late, call, *args, **kwargs)

    async def scenario() -> StopReason:
        cut = asyncio.create_task(runner.abegin("quick", "pick", run_id="c1", calls=slow_calls))
        await asyncio.sleep(0.1)
        cut.cancel()
        gate.set()
        assert await asyncio.to_thread(checked.wait, WAIT)
        await asyncio.sleep(0.1)  # (what the checks' end hands to the loop)
        return (await runner.start("quick", "pick", run_id="c1")).reason

    try:
        assert asyncio.run(scenario()) is StopReason.NEED_HELP
    finally:
        store.close()
