"""Scripted scenarios for the seed agents. Between them they reach every stop reason.

A scenario is a task for one example agent, a script of model replies, and
what a person does afterwards (answer, approve, let the deadline pass, or
resume after a shutdown). `endstate demo` and the eval cases play them.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent.agent import Agent
from agent.errors import ConfigError, TransientModelError
from agent.examples import csv_clean, fix_ci, invoice, research
from agent.models.base import Model
from agent.models.scripted import ScriptedModel, Step, call, finish, say
from agent.policies import HelpPolicy, RetryPolicy
from agent.result import RunResult, StopReason

if TYPE_CHECKING:
    from agent.durable.runner import Catalog


@dataclass
class World:
    """The outside world one scenario's agent talks to."""

    workdir: Path
    corpus: research.Corpus | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        assert self.corpus is not None, "this world has no web corpus"
        return self.corpus.url(path)


@dataclass(frozen=True)
class FollowUp:
    """What a person (or the host) does after the first segment."""

    action: str  # "answer", "approve", "deny", "expire" or "resume"
    text: str = ""


@dataclass(frozen=True)
class Scenario:
    """One scripted run of an example agent."""

    name: str
    agent: str
    task: str
    expect: StopReason
    script: Callable[[World], list[Step]]
    then: Callable[[World, int], Step] | None = None
    follow_up: FollowUp | None = None
    expect_after: StopReason | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def scripted_model(self, world: World) -> ScriptedModel:
        if self.then is None:
            return ScriptedModel(self.script(world))
        later = self.then
        return ScriptedModel(self.script(world), then=lambda turn: later(world, turn))


AGENTS = {
    "csv-cleaner": csv_clean,
    "researcher": research,
    "ci-fixer": fix_ci,
    "invoice-downloader": invoice,
}


@contextmanager
def world_for(scenario: Scenario, base: Path | None = None) -> Iterator[World]:
    """Build the scenario's outside world in a fresh folder; tear it down after."""
    with tempfile.TemporaryDirectory(prefix="endstate-", dir=base) as tmp:
        world = World(Path(tmp))
        if scenario.agent == "csv-cleaner":
            csv_clean.make_world(world.workdir)
        elif scenario.agent == "ci-fixer":
            fix_ci.make_world(world.workdir)
        elif scenario.agent == "invoice-downloader":
            invoice.make_world(world.workdir, online=scenario.options.get("online", True))
        elif scenario.agent == "researcher":
            world.corpus = research.Corpus()
        try:
            yield world
        finally:
            if world.corpus:
                world.corpus.close()


def build_agent(scenario: Scenario, world: World, model: Model | None = None, **options: Any) -> Agent:
    """The scenario's agent over `world`, with its scripted model unless `model` is given."""
    module = AGENTS[scenario.agent]
    model = model or scenario.scripted_model(world)
    settings = {k: v for k, v in scenario.options.items() if k != "online"} | options
    target: Any = world.corpus if scenario.agent == "researcher" else world.workdir
    agent: Agent = module.make_agent(model, target, **settings)
    return agent


# -- scripts ---------------------------------------------------------------------


def _csv_clean(world: World) -> list[Step]:
    return [
        [say("Let me look at the data."), call("read_rows", page=1)],
        [call("fix_dates")],
        [call("drop_rows_without_email")],
        [call("dedupe")],
        [finish("done", "orders_clean.csv has ISO dates, real emails and unique order ids.")],
    ]


def _csv_same_page(world: World) -> list[Step]:
    return [[call("read_rows", page=1)] for _ in range(3)]


def _csv_validate_forever(world: World, turn: int) -> Step:
    return [call("validate_row", row=turn)]


def _csv_shutdown(world: World) -> list[Step]:
    def fix_dates_then_shutdown(_: object) -> list[dict[str, Any]]:
        world.cancel.set()  # the host starts shutting down during this turn
        return [call("fix_dates")]

    return [
        [call("read_rows", page=1)],
        fix_dates_then_shutdown,
        [call("drop_rows_without_email")],
        [call("dedupe")],
        [finish("done", "Cleaned after the restart.")],
    ]


def _report(world: World, paths: list[str]) -> str:
    cites = "; ".join(world.url(p) for p in paths)
    return f"Instant payments hold about 31-33% of retail credit transfers in 2026. Sources: {cites}"


def _research_seed_trace(world: World) -> list[Step]:
    first = ["central-bank/instant-payments-2026", "fintech-weekly/instant-share"]
    more = ["payments-journal/market-2026", "euro-stats/transfers-q2"]
    return [
        [call("web_search", query="instant payments market share 2026")],
        [call("read_page", url=world.url(first[0]))],
        [call("read_page", url=world.url(first[1]))],
        [finish("done", _report(world, first))],
        [call("web_search", query="instant credit transfers share quarter")],
        [call("read_page", url=world.url(more[0]))],
        [call("read_page", url=world.url(more[1]))],
        [finish("done", _report(world, first + more))],
    ]


def _research_private_margin(world: World) -> list[Step]:
    note = (
        "No public source gives Acme Holdings' margin: it is private and publishes no accounts. "
        f"I found only third-party estimates (4% to 12%): {world.url('blog-of-estimates/acme-margin')}"
    )
    return [
        [call("web_search", query="Acme Holdings net profit margin 2025")],
        [call("read_page", url=world.url("blog-of-estimates/acme-margin"))],
        [call("read_page", url=world.url("trade-press/acme-profile"))],
        [finish("give_up", note)],
    ]


def _research_one_more(world: World, turn: int) -> Step:
    return [say("One more source to be sure."), call("web_search", query=f"instant payments source {turn}")]


def _fix_ci_until_push(world: World) -> list[Step]:
    return [
        [call("read_logs")],
        [call("read_file", path="calc/money.py")],
        [call("edit_file", path="calc/money.py", old="return a - b", new="return a + b")],
        [call("run_tests")],
        [call("push", branch="fix/add-cents")],
    ]


def _fix_ci_approved(world: World) -> list[Step]:
    return [*_fix_ci_until_push(world), [finish("done", "add_cents adds again; tests pass; pushed.")]]


def _fix_ci_after_a_denial(world: World, turn: int) -> Step:
    """Past the approved path's end: the push was denied (`endstate deny`), and its `done` rejected."""
    note = "The push to fix/add-cents was denied, so the fix is not pushed; CI stays red."
    return [finish("give_up", note)]


def _fix_ci_api_down(world: World) -> list[Step]:
    return [TransientModelError("HTTP 529 overloaded", error_type="overloaded") for _ in range(4)]


def _invoice_offline(world: World) -> list[Step]:
    note = "The supplier portal refuses connections (HTTP 503 for 2 hours); I could not download anything."
    return [
        [call("list_invoices", month="2026-09")],
        [call("list_invoices", month="2026-09")],
        [finish("give_up", note)],
    ]


def _invoice_choice(world: World) -> list[Step]:
    question = (
        "There are two September invoices: INV-0912 (1200.00, original) and INV-0913 "
        "(980.00, corrected after a dispute). Which one should I download?"
    )
    return [
        [call("list_invoices", month="2026-09")],
        [finish("need_help", question)],
        [call("download_invoice", invoice_id="INV-0913")],
        [finish("done", "Saved invoices/INV-0913.json, the corrected September invoice.")],
    ]


FAST_RETRY = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05)

SCENARIOS: list[Scenario] = [
    Scenario("csv/clean", "csv-cleaner", csv_clean.TASK, StopReason.SUCCESS, _csv_clean),
    Scenario("csv/same-page", "csv-cleaner", csv_clean.TASK, StopReason.NO_PROGRESS, _csv_same_page),
    Scenario(
        "csv/ok-every-time",
        "csv-cleaner",
        csv_clean.TASK,
        StopReason.LIMIT,
        lambda w: [],
        then=_csv_validate_forever,
    ),
    Scenario(
        "csv/shutdown",
        "csv-cleaner",
        csv_clean.TASK,
        StopReason.CANCELLED,
        _csv_shutdown,
        follow_up=FollowUp("resume"),
        expect_after=StopReason.SUCCESS,
    ),
    Scenario("research/seed-trace", "researcher", research.TASK, StopReason.SUCCESS, _research_seed_trace),
    Scenario(
        "research/private-margin",
        "researcher",
        research.IMPOSSIBLE_TASK,
        StopReason.GAVE_UP,
        _research_private_margin,
    ),
    Scenario(
        "research/one-more-source",
        "researcher",
        research.TASK,
        StopReason.LIMIT,
        lambda w: [],
        then=_research_one_more,
    ),
    Scenario(
        "ci/approved-push",
        "ci-fixer",
        fix_ci.TASK,
        StopReason.NEED_HELP,
        _fix_ci_approved,
        then=_fix_ci_after_a_denial,  # a person may deny the push instead: the run gives up, saying why
        follow_up=FollowUp("approve"),
        expect_after=StopReason.SUCCESS,
    ),
    Scenario(
        "ci/unanswered-push",
        "ci-fixer",
        fix_ci.TASK,
        StopReason.NEED_HELP,
        _fix_ci_until_push,
        follow_up=FollowUp("expire"),
        expect_after=StopReason.HELP_TIMEOUT,
        options={"help": HelpPolicy(wait_seconds=0.0)},
    ),
    Scenario(
        "ci/api-down",
        "ci-fixer",
        fix_ci.TASK,
        StopReason.ERROR,
        _fix_ci_api_down,
        options={"retry": FAST_RETRY},
    ),
    Scenario(
        "invoice/portal-offline",
        "invoice-downloader",
        invoice.TASK,
        StopReason.GAVE_UP,
        _invoice_offline,
        options={"online": False},
    ),
    Scenario(
        "invoice/which-one",
        "invoice-downloader",
        invoice.TASK,
        StopReason.NEED_HELP,
        _invoice_choice,
        follow_up=FollowUp("answer", "INV-0913, the corrected one."),
        expect_after=StopReason.SUCCESS,
    ),
]


class UnknownScenario(ConfigError, KeyError):
    """No scenario has that name (a `ConfigError`: the CLI and the service say so in one line)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def scenario_named(name: object) -> Scenario:
    """Look a scenario up by name; the error lists the names there are."""
    known = ", ".join(s.name for s in SCENARIOS)
    if not isinstance(name, str):
        raise UnknownScenario(f"the scenario must be a name (a string), not {name!r}; known: {known}")
    for scenario in SCENARIOS:
        if scenario.name == name:
            return scenario
    raise UnknownScenario(f"no scenario {name!r}; known: {known}")


# -- durable runs: the seed agents in a catalog that any process can rebuild them from -----------

ENV_WORLDS = "ENDSTATE_WORLDS"


def build_world(scenario: Scenario, workdir: Path, corpus: Any = None, *, fresh: bool = False) -> World:
    """The scenario's world in `workdir`, a folder that outlives the process; `fresh` writes its files."""
    if fresh:
        workdir.mkdir(parents=True, exist_ok=True)
        if scenario.agent == "csv-cleaner":
            csv_clean.make_world(workdir)
        elif scenario.agent == "ci-fixer":
            fix_ci.make_world(workdir)
        elif scenario.agent == "invoice-downloader":
            invoice.make_world(workdir, online=scenario.options.get("online", True))
    return World(workdir, corpus=corpus if scenario.agent == "researcher" else None)


def default_scenario(agent: str) -> Scenario:
    """The first scenario of an example agent that ends in success (maybe after a person helps)."""
    for scenario in SCENARIOS:
        if scenario.agent == agent and StopReason.SUCCESS in (scenario.expect, scenario.expect_after):
            return scenario
    raise KeyError(f"no scenario for agent {agent!r}; agents: {', '.join(AGENTS)}")


class ExampleWorlds:
    """The worlds of durable example runs: one folder per run under `base`."""

    def __init__(self, base: Path) -> None:
        self.base = base.resolve()
        self._corpus: research.Corpus | None = None
        self._live: weakref.WeakValueDictionary[str, World] = weakref.WeakValueDictionary()

    def prepare(self, agent: str, state: dict[str, Any], run_id: str) -> dict[str, Any]:
        """Build a fresh world for a new run; the state records its scenario and folder."""
        scenario = scenario_named(state["scenario"]) if "scenario" in state else default_scenario(agent)
        if scenario.agent != agent:
            raise ConfigError(f"scenario {scenario.name!r} is for agent {scenario.agent!r}, not {agent!r}")
        workdir = self.base / run_id
        build_world(scenario, workdir, fresh=True)
        return {**state, "scenario": scenario.name, "workdir": str(workdir)}

    def build(self, state: dict[str, Any]) -> Agent:
        """The run's agent over its world, with the scenario's scripted model."""
        scenario = scenario_named(state["scenario"])
        corpus = self.corpus() if scenario.agent == "researcher" else None
        world = build_world(scenario, Path(state["workdir"]), corpus)
        self._live[state["workdir"]] = world
        return build_agent(scenario, world)

    def cancel(self, state: dict[str, Any]) -> threading.Event | None:
        """The cancel event of the run's world (the shutdown scenario sets it)."""
        world = self._live.get(state.get("workdir", ""))
        return world.cancel if world else None

    def cleanup(self, state: dict[str, Any]) -> None:
        """Remove the world of a run that has ended for good (only folders under `base`)."""
        workdir = Path(state.get("workdir", "")).resolve()
        if workdir != self.base and workdir.is_relative_to(self.base):
            shutil.rmtree(workdir, ignore_errors=True)

    def corpus(self) -> research.Corpus:
        if self._corpus is None:
            self._corpus = research.Corpus()
        return self._corpus

    def close(self) -> None:
        if self._corpus is not None:
            self._corpus.close()
            self._corpus = None


def example_catalog(worlds: Path | None = None) -> Catalog:
    """The seed agents by name, for `agent.durable.runner`; worlds live under `worlds`.

    `worlds` defaults to `$ENDSTATE_WORLDS`, then `./.endstate/worlds`.
    """
    from agent.durable.runner import Catalog

    base = Path(worlds or os.environ.get(ENV_WORLDS) or Path(".endstate") / "worlds")
    ex = ExampleWorlds(base)
    catalog = Catalog(closers=[ex.close])
    for name in AGENTS:
        prepare = functools.partial(ex.prepare, name)
        catalog.register(name, ex.build, prepare=prepare, cancel=ex.cancel, cleanup=ex.cleanup)
    return catalog


class Action(Protocol):
    """What a person or the host does after a first segment (a scenario's or an eval case's)."""

    @property
    def action(self) -> str: ...  # "answer", "approve", "deny", "expire" or "resume"

    @property
    def text(self) -> str: ...


async def follow_up(agent: Agent, action: Action, first: RunResult, world: World) -> RunResult:
    """Do what the person or host does with a suspended or cancelled run."""
    snapshot = first.snapshot
    assert snapshot is not None
    if action.action == "answer":
        return await agent.aresume(snapshot, action.text)
    if action.action in ("approve", "deny"):
        return await agent.aresume(snapshot, action.text or None, approved=action.action == "approve")
    if action.action == "expire":  # nobody answers: the clock reaches the deadline
        deadline = snapshot.suspension.deadline if snapshot.suspension else 0.0
        return await agent.aexpire(snapshot, now=max(time.time(), deadline))
    world.cancel.clear()  # "resume": the host is back up
    return await agent.aresume(snapshot)
