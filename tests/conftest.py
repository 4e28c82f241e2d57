"""Shared fixtures: no real model call ever leaves a test, agents are quick to build, and a store
test runs on each backend (a SQLite file, and a database on the real PostgreSQL 15)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pg
import pytest
from browser import page  # noqa: F401  (the page tests' headless Chromium: a fixture for every test file)
from opentelemetry import context as otel_context

from agent import Agent, Budget
from agent.durable.store import RunStore, open_store
from agent.models.scripted import ScriptedModel, Step

_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
_GOLDEN = (5**0.5 - 1) / 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Scatter the `cpu_heavy` tests through the run, each between two test files.

    `scripts/test` runs the suite on pytest-xdist workers, each given an equal stretch of the run in
    order (`--dist worksteal`). Tests of one file kept together would all go to one worker, which
    would spend minutes of CPU on them alone and end the run last; spaced evenly, they would come at
    the same moment in every stretch, and every worker would wait on promtool at once. At the golden
    ratio's multiples (mod 1) each stretch holds a few, each at another point of it.
    """
    heavy = [item for item in items if item.get_closest_marker("cpu_heavy")]
    rest = [item for item in items if not item.get_closest_marker("cpu_heavy")]
    starts = [i for i in range(1, len(rest)) if rest[i].path != rest[i - 1].path]
    if not heavy or not starts:
        return
    before: dict[int, list[pytest.Item]] = {}
    for k, item in enumerate(heavy):
        aim = (k + 1) * _GOLDEN % 1 * len(rest)
        before.setdefault(min(starts, key=lambda i: abs(i - aim)), []).append(item)
    items[:] = [moved for i, item in enumerate(rest) for moved in [*before.get(i, []), item]]


_stopping: list[int] = []  # the SIGTERM that stops the session, once it came


def _interrupted(signum: int, frame: object) -> None:
    """SIGTERM ends the session as Ctrl-C does: pytest tears the fixtures down, so the servers they
    started are stopped (a `timeout`, CI cut at its limit, ran no teardown and left them running).
    A second SIGTERM kills at once, as without this; `reaper.Reaper` then stops what was left."""
    _stopping.append(signum)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise KeyboardInterrupt(f"SIGTERM (signal {signum}): the test session is stopped")


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():  # each xdist worker's too
        signal.signal(signal.SIGTERM, _interrupted)
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            # A session started in the background by a shell without job control (`cmd &` in a
            # script, `nohup ... &`) inherits Ctrl-C ignored, and so would every command the tests
            # start: the tests of how Ctrl-C and SIGTERM stop a command would see it ignored. The
            # commands get the usual Ctrl-C; so does the session.
            signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def sigterm_still_stops_the_session() -> Iterator[None]:
    """A test whose code set its own SIGTERM handler and left it (a CLI's main run in-process; an
    event loop's `add_signal_handler`, which leaves SIG_DFL when the loop closes) would take that
    from every later test: the session's is put back (not once the session is being stopped)."""
    yield
    if not _stopping and signal.getsignal(signal.SIGTERM) is not _interrupted:
        signal.signal(signal.SIGTERM, _interrupted)


@pytest.fixture(scope="session", autouse=True)
def subprocess_pytest_without_plugins() -> None:
    """The `ci-fixer` example runs pytest on its small repository (its `run_tests` tool and its
    verifier), in every run of it the tests make. With the plugins installed here (Playwright,
    Temporal, the agent frameworks') that pytest took 3 s, tens of seconds on a loaded machine, near
    the example's 110 s and 120 s limits; without them, 0.2 s. Subprocesses inherit it.

    Set when the first test starts, not when this file is imported: pytest-xdist's workers start
    after the import, and each must load its plugins (xdist's own, pytest-timeout) to run tests.
    """
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"


class RealModelCall(AssertionError):
    """A test tried to reach a model API over the network."""


@pytest.fixture(autouse=True)
def callers_context_restored() -> Iterator[None]:
    """Each test starts from the OpenTelemetry context the one before it started from.

    A run's span is the current span from `run_started` to `run_ended` (see telemetry/tracing.py);
    a test that starts a segment's observer by hand and never ends it would leave that span current,
    and every later run in the process would be its child.
    """
    before = otel_context.get_current()
    yield
    if otel_context.get_current() is not before:
        otel_context.attach(before)


@pytest.fixture(autouse=True)
def price_warnings_said_afresh() -> None:
    """Each test starts as a new process would: no warning of a model's price said yet (the price
    tables of a process say each once, `agent.prices._first_time`), so a test that reads one does not
    depend on which tests ran before it in the same worker."""
    import agent.prices

    with agent.prices._said_lock:
        agent.prices._said.clear()


@pytest.fixture(autouse=True)
def no_real_model_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail any test whose code sends an HTTP request off this machine.

    The Anthropic SDK sends through `httpx2` clients; a request to a loopback
    host (the local Messages API server of the adapter tests) goes through,
    any other host is refused and fails the test at teardown even when the
    code under test swallowed the error (as the SDK's retries and the loop do).
    The fixture's value is the list of refused URLs.
    """
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    refused: list[str] = []

    def refuse(request: httpx2.Request) -> None:
        if request.url.host not in _LOOPBACK:
            refused.append(str(request.url))
            raise RealModelCall(f"a test tried to call {request.url}; use ScriptedModel or a local server")

    sync_send, async_send = httpx2.Client.send, httpx2.AsyncClient.send

    def send(self: httpx2.Client, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        refuse(request)
        return sync_send(self, request, **kwargs)

    async def asend(self: httpx2.AsyncClient, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        refuse(request)
        return await async_send(self, request, **kwargs)

    monkeypatch.setattr(httpx2.Client, "send", send)
    monkeypatch.setattr(httpx2.AsyncClient, "send", asend)
    yield refused
    if refused:
        pytest.fail(f"real model API calls were attempted: {refused}")


AgentFactory = Callable[..., Agent]


@pytest.fixture
def make_agent() -> AgentFactory:
    """Build an agent around a `ScriptedModel` playing `steps`.

    `make_agent(step, step, ..., tools=[...], budget=Budget(...), then=..., **agent_options)`;
    the model is `agent.model` (its `requests` record what the loop sent).
    """

    def build(*steps: Step, then: Callable[[int], Step] | None = None, **options: Any) -> Agent:
        options.setdefault("name", "test-agent")
        options.setdefault("budget", Budget(max_turns=10, max_seconds=60))
        return Agent(model=ScriptedModel(steps, then=then), **options)

    return build


@pytest.fixture
def rig() -> Iterator[Any]:
    """Endstate's telemetry on in-memory exporters (`integrations_support.rigged`), with the OpenAI
    Agents SDK's own tracing off (its exporter thread would try the network). A test module that
    defines its own `rig` uses that one instead."""
    from agents import set_tracing_disabled
    from integrations_support import rigged

    set_tracing_disabled(True)
    with rigged() as rig:
        yield rig
    set_tracing_disabled(False)


@pytest.fixture(params=pg.BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store's URL, once per backend."""
    return pg.url_for(request.param, tmp_path)


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    """The store at `store_url`, open (closed after the test)."""
    opened = open_store(store_url)
    yield opened
    opened.close()
