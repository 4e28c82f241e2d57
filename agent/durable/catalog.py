"""The catalog: the agents a process can run, rebuilt by name from a run's JSON state in any process."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent._codec import unwritable
from agent._env import seconds_variable
from agent._valid import is_text
from agent._within import Overdue, call_within
from agent.agent import Agent
from agent.clock import CancelSignal
from agent.errors import ConfigError, EndstateError

if TYPE_CHECKING:
    from agent.integrations._durable import ForeignAgent

State = dict[str, Any]
ENV_CATALOG = "ENDSTATE_CATALOG"
SEED_CATALOG = (
    "agent.examples.scenarios:example_catalog"  # the CLI's and service's default, not the library's
)
ENV_PREPARE_TIMEOUT = "ENDSTATE_PREPARE_TIMEOUT"
PREPARE_TIMEOUT = (
    300.0  # seconds a catalog entry's `prepare` may take, unless set (Temporal's activity: 5 min)
)
MAX_PREPARE_TIMEOUT = 86400.0  # a day
log = logging.getLogger("endstate.catalog")


class AgentUnavailable(EndstateError):
    """A catalog entry's own code (`prepare`, `build`) failed: the deployment's fault, not the
    request's; the message names the entry, the step and the exception."""


class PrepareHangs(AgentUnavailable):
    """A catalog entry's `prepare` did not finish within its deadline (`prepare_timeout`): nothing was
    stored, and what it makes once it ends is let go (its entry's `cleanup`)."""


def prepare_timeout() -> float:
    """The seconds a catalog entry's `prepare` may take: `$ENDSTATE_PREPARE_TIMEOUT`, else
    `PREPARE_TIMEOUT`."""
    return seconds_variable(
        ENV_PREPARE_TIMEOUT, PREPARE_TIMEOUT, MAX_PREPARE_TIMEOUT, "what a catalog entry's prepare may take"
    )


def prepare_within(name: str, entry: AgentEntry, state: State, run_id: str, seconds: float) -> State:
    """`entry.prepare(state, run_id)` given `seconds` (`call_within`): past them `PrepareHangs`. What a
    late `prepare` returns after all is let go by the entry's `cleanup`, as no run holds it. What it
    raises in time is raised here."""
    assert entry.prepare is not None
    prepare = entry.prepare
    try:
        return call_within(
            lambda: prepare(state, run_id),
            seconds,
            f"endstate-prepare {name[:60]}",
            late=lambda made: _let_go(name, entry, made, run_id),
        )
    except Overdue:
        raise PrepareHangs(
            f"agent {name!r} could not be set up: its catalog entry's prepare did not finish within "
            f"{seconds:g} s (does it wait on a server, a lock or a prompt?); nothing was stored, and what it "
            f"makes if it ends is let go by its cleanup. Make prepare return, or give it longer: "
            f"${ENV_PREPARE_TIMEOUT}=SECONDS (at most {MAX_PREPARE_TIMEOUT:g})"
        ) from None


def named_as_entry(name: str, built: Any) -> Any:
    """The agent an entry's `build` made, under the entry's name: the store, `runs`/`pending --agent`,
    the help gauges and Temporal's search attributes know a run by its entry's name, so its spans and
    metrics carry that name too (an `Agent(name=...)` of another name split one agent's figures in two,
    and an alert's `agent` label found none of its runs). Said once a process in the log."""
    if not isinstance(built, Agent) or built.name == name:
        return built
    if (name, built.name) not in _RENAMED:
        _RENAMED.add((name, built.name))
        log.warning(
            "catalog entry %r built an agent named %r: its runs are stored, traced and counted as %r; "
            "give the Agent the entry's name to silence this",
            name,
            built.name,
            name,
        )
    return dataclasses.replace(built, name=name)


_RENAMED: set[tuple[str, str]] = set()


def check_prepared(agent: str, state: Any) -> None:
    """The state a catalog entry's `prepare` returned, refused as the deployment's fault
    (`AgentUnavailable`: HTTP 503, a Temporal run's final `ConfigError`), not the request's: a
    `prepare` that forgot its `return`, or added a value no store keeps (a `Path`), was said as the
    caller's state being wrong (HTTP 400), or on Temporal as a bare TypeError."""
    if not isinstance(state, dict):
        raise AgentUnavailable(
            f"agent {agent!r} could not be set up: its catalog entry's prepare returned "
            f"{type(state).__name__}, not the run's state (a dict): return the state, with what it added"
        )
    if (problem := unwritable(state)) is not None:
        raise AgentUnavailable(
            f"agent {agent!r} could not be set up: the state its catalog entry's prepare returned cannot "
            f"be stored: {problem}; keep JSON values in it (a str, not a Path)"
        )


def retired_model(agent: object) -> str:
    """What the model table says of the agent's model when the API has retired it (its date came while
    a run waited: every call of it fails), else "" (a served model, a foreign agent, a model of a team's
    own with no such word)."""
    said = getattr(getattr(agent, "model", None), "retired", "")
    return said if isinstance(said, str) else ""


class BuildHangs(AgentUnavailable):
    """A catalog entry's `build` did not finish within its deadline (the `prepare_timeout`) where nobody
    waits on it: in a sweep (recovery, deadlines, audits), one hung build held every later run."""


def build_within(name: str, entry: AgentEntry, state: State, seconds: float) -> Agent | ForeignAgent:
    """`entry.build(state)` given `seconds` (`call_within`, on a thread of its own): past them
    `BuildHangs`. What it raises in time is raised here."""
    build = entry.build
    try:
        return call_within(lambda: build(state), seconds, f"endstate-build {name[:60]}")
    except Overdue:
        raise BuildHangs(
            f"agent {name!r} could not be set up: its catalog entry's build did not finish within "
            f"{seconds:g} s (does it wait on a server, a lock or a prompt?). Make build return, or give "
            f"it longer: ${ENV_PREPARE_TIMEOUT}=SECONDS (at most {MAX_PREPARE_TIMEOUT:g})"
        ) from None


def _let_go(name: str, entry: AgentEntry, state: Any, run_id: str) -> None:
    """A `prepare` that ended after its deadline: its world is no run's, so its `cleanup` lets it go."""
    log.warning("agent %r: prepare for run %s ended after its deadline; its cleanup lets it go", name, run_id)
    if entry.cleanup is None:
        return
    try:
        entry.cleanup(state)
    except (Exception, SystemExit):
        log.warning("agent %r: the cleanup after a late prepare (run %s) failed", name, run_id, exc_info=True)


@dataclass(frozen=True)
class AgentEntry:
    """How to make one named agent for a run, from the run's JSON `state`.

    `prepare` runs once when a run starts and returns the state to store
    (say, with the path of a working folder it created); `build` runs in
    whichever process starts, resumes or recovers the run; `cancel` may give
    a run-specific cancel signal; `cleanup` runs when the run has ended for good.
    A run may ask for a task type other than the agent's own only when it is in
    `task_types`: task types are metric labels, so callers cannot invent them.
    `build` may return a `ForeignAgent`: a run of another framework (`Catalog.register_foreign`).
    """

    build: Callable[[State], Agent | ForeignAgent]
    prepare: Callable[[State, str], State] | None = None
    cancel: Callable[[State], CancelSignal] | None = None
    cleanup: Callable[[State], None] | None = None
    task_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """`task_types` a collection of names: a bare string (`task_types=("fix_ci")`, the comma
        forgotten) was taken letter by letter, each letter a task type a start could ask for."""
        given = self.task_types
        if isinstance(given, str | bytes) or not isinstance(given, tuple | list | set | frozenset):
            raise ConfigError(
                f"task_types must be a tuple of task type names, such as ('fix_ci',), not {given!r}"
            )
        if not all(is_text(t) for t in given):
            raise ConfigError(f"task_types must hold non-empty strings, not {sorted(map(repr, given))}")
        object.__setattr__(self, "task_types", tuple(given))


@dataclass
class Catalog:
    """The agents a process can run, by name."""

    entries: dict[str, AgentEntry] = field(default_factory=dict)
    closers: list[Callable[[], None]] = field(default_factory=list)
    seed: bool = field(default=False, repr=False)  # the CLI's default: none named with --catalog

    def register(self, name: str, build: Callable[[State], Agent | ForeignAgent], **hooks: Any) -> None:
        """Add the agent `name`, made by `build(state)`; `hooks` are `AgentEntry`'s other fields."""
        _check_entry(name, build, "register", "build(state)")
        unknown = sorted(set(hooks) - {"prepare", "cancel", "cleanup", "task_types"})
        if unknown:
            raise ConfigError(
                f"register({name!r}, ...): unknown options {unknown}; "
                "known: prepare, cancel, cleanup, task_types"
            )
        self.entries[name] = AgentEntry(build, **hooks)

    def register_foreign(
        self,
        name: str,
        framework: str,
        build: Callable[..., Any],
        *,
        task_types: tuple[str, ...] = (),
        cleanup: Callable[[State], None] | None = None,
        **fields: Any,
    ) -> None:
        """Add an agent of another framework, so its suspended runs resume from the store by name.

        `framework` is `openai_agents`, `pydantic_ai` or `langgraph`; `build()` makes its agent
        (LangGraph: `build(checkpointer)` its compiled graph). `fields` are `ForeignAgent`'s:
        `checkpointer` (LangGraph: required), `options` (the framework's own run arguments),
        `task_type`, `help`, `verifiers`, `make_input`.
        """
        from agent.integrations._durable import ForeignAgent

        _check_entry(name, build, "register_foreign", "build() (LangGraph: build(checkpointer))")
        foreign = ForeignAgent(name, framework, build, **fields)  # type: ignore[arg-type]
        self.entries[name] = AgentEntry(lambda state: foreign, task_types=task_types, cleanup=cleanup)

    def entry(self, name: str) -> AgentEntry:
        if name not in self.entries:
            known = ", ".join(sorted(self.entries)) or "none"
            which = (
                "the seed examples' catalog (used when neither --catalog nor $ENDSTATE_CATALOG names "
                "yours: pass --catalog module:attr)"
                if self.seed
                else "the catalog"
            )
            raise ConfigError(f"no agent named {name!r} in {which}; known: {known}")
        return self.entries[name]

    def names(self) -> list[str]:
        return sorted(self.entries)

    def close(self) -> None:
        for close in self.closers:
            close()
        self.closers.clear()


def _check_entry(name: Any, build: Any, method: str, call: str) -> None:
    """A clear `ConfigError` for a catalog name that is no text, or a builder that is no function."""
    if not is_text(name):
        raise ConfigError(f"an agent's name in the catalog must be a non-empty string, not {name!r}")
    if not callable(build) or isinstance(build, Agent):
        raise ConfigError(
            f"{method}({name!r}, ...) takes a function that makes the agent, called as {call}, "
            f"not {type(build).__name__}: say lambda state: agent"
        )


def load_catalog(spec: str | None = None, default: str | None = None) -> Catalog:
    """The catalog at `module:attribute` (a `Catalog` or a function returning one).

    Without `spec`: `$ENDSTATE_CATALOG`, then `default` (the CLI passes the seed examples).
    """
    named = spec or os.environ.get(ENV_CATALOG)
    spec = named or default
    if not spec:
        raise ConfigError(f"no agent catalog: pass one as module:attribute or set ${ENV_CATALOG}")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # its code failed as it loaded (a setting it reads is missing)
        problem = import_problem(module_name, exc)
        raise ConfigError(f"cannot load the agent catalog {spec!r}: {problem}") from exc
    try:
        found = getattr(module, attr or "catalog")
    except AttributeError as exc:
        raise ConfigError(f"cannot load the agent catalog {spec!r}: {exc}") from exc
    catalog = found() if callable(found) and not isinstance(found, Catalog) else found
    if not isinstance(catalog, Catalog):
        raise ConfigError(f"{spec!r} is not a Catalog (got {type(catalog).__name__})")
    catalog.seed = not named and spec == SEED_CATALOG
    return catalog


def import_problem(module: str, exc: BaseException) -> str:
    """What went wrong importing a catalog's `module`, and what to do: a module not on the path is
    told where Python looked; a module its code needs that is not installed, to install it; any other
    failure of its code as it loads, with the line that raised."""
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    parent, _, last = (missing or "").rpartition(".")
    if missing and (module == missing or module.startswith(f"{missing}.")) and parent in sys.modules:
        where = getattr(sys.modules[parent], "__path__", [""])[0]
        return f"the package {parent!r} ({where}) has no module {last!r}: check the name"
    if missing and (module == missing or module.startswith(f"{missing}.")):
        return (
            f"no module named {missing!r} on this Python's path ($PYTHONPATH, the packages installed for "
            f"{sys.executable}, and for `endstate` commands the working directory, {os.getcwd()}): run "
            f"from the folder that holds {missing.split('.')[0]!r}, add that folder to $PYTHONPATH, or "
            "pip install your package there"
        )
    if missing:
        return (
            f"its module {module!r} imports {missing!r}, which is not installed for this Python "
            f"({sys.executable}): install it there"
        )
    at = _own_line(exc)
    return f"importing {module!r} raised {type(exc).__name__}: {exc}{at and f' (at {at})'}"


def _own_line(exc: BaseException) -> str:
    """The deepest line of a traceback in the team's own code (not Python's, an installed package's
    or Endstate's): the line of their module that raised, or that called what raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    theirs = [f for f in frames if not f.filename.startswith(("<", *_NOT_THEIRS))]
    return next((f"{f.filename}:{f.lineno}" for f in reversed(theirs or frames)), "")


_NOT_THEIRS = tuple(
    {os.path.join(p, "") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    | {os.path.join(os.path.dirname(os.path.dirname(__file__)), "")}
)
