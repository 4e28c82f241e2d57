"""Wrong types given to the public entry points: a clear error saying what to pass, never an
AttributeError from deep inside (written from the user's side, as the unseen checks are)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from agent import (
    Agent,
    Answer,
    Budget,
    ConfigError,
    Denial,
    Extension,
    HelpPolicy,
    RetryPolicy,
    SnapshotError,
    StopReason,
    tool,
)
from agent.durable.runner import Catalog, Runner
from agent.durable.store import StoreError, open_store
from agent.history import HistoryPolicy
from agent.models.scripted import ScriptedModel, finish


def asking() -> Agent:
    return Agent(name="a", model=ScriptedModel([[finish("need_help", "Which one?")], [finish("done", "ok")]]))


@pytest.fixture
def waiting() -> Any:
    result = asking().run("pick one")
    assert result.snapshot is not None
    return result.snapshot


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (None, r"resume takes the Snapshot.*not None.*result\.snapshot"),
        ("{}", r"resume takes the Snapshot.*not str.*Snapshot\.from_json"),
        ({"run_id": "r"}, r"resume takes the Snapshot.*not dict"),
    ],
)
def test_resuming_something_that_is_not_a_snapshot_says_what_to_pass(given: Any, message: str) -> None:
    with pytest.raises(SnapshotError, match=message):
        asking().resume(given, Answer("the first"))


@pytest.mark.parametrize("reply", [5, b"the first", Answer(5), Denial(7)])  # type: ignore[arg-type]
def test_a_reply_whose_text_is_not_a_string_is_refused_clearly(waiting: Any, reply: Any) -> None:
    with pytest.raises(ConfigError, match=r"text.*must be a string"):
        asking().resume(waiting, reply)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"state": [1, 2]}, r"state must be a dict"),
        ({"run_id": 5}, r"run_id must be a non-empty string"),
        ({"cancel": 5}, r"cancel must have is_set\(\) \(an asyncio.Event or a threading.Event\), not int"),
    ],
)
def test_run_options_of_the_wrong_type_are_refused_clearly(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        asking().run("pick one", **options)


@pytest.mark.parametrize(
    "fields", [{"max_turns": "5"}, {"max_seconds": "60"}, {"max_tokens": [1]}, {"max_cost_usd": True}]
)
def test_a_budget_of_the_wrong_type_is_refused_when_made(fields: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"Budget\.max_\w+ must be"):
        Budget(**fields)


def test_an_extension_of_the_wrong_type_is_refused_when_made() -> None:
    with pytest.raises(ConfigError, match=r"Extension"):
        Extension(turns="5")  # type: ignore[arg-type]


@pytest.mark.parametrize("seconds", [math.inf, math.nan, "3600", 1e300, 100 * 365 * 86400 + 1])
def test_a_help_wait_that_is_no_finite_number_is_refused_when_made(seconds: Any) -> None:
    """`inf` reads as "wait forever", but a journal cannot hold it: the run could never be answered.
    Past 100 years no deadline can be waited for everywhere (a Temporal timer overflows)."""
    with pytest.raises(ConfigError, match=r"HelpPolicy\.wait_seconds must be a finite number"):
        HelpPolicy(wait_seconds=seconds)


def test_a_help_wait_of_a_hundred_years_is_taken() -> None:
    assert HelpPolicy(wait_seconds=100 * 365 * 86400).wait_seconds == 100 * 365 * 86400


@pytest.mark.parametrize(
    "fields",
    [
        {"on_timeout": "resume", "default_answer": ""},
        {"on_timeout": "resume", "default_answer": "  "},
        {"on_timeout": "resume", "default_answer": None},
        {"default_answer": 42},
    ],
)
def test_a_default_answer_that_says_nothing_is_refused_when_made(fields: dict[str, Any]) -> None:
    """Each was taken: a run nobody answered went on told "Answer from the help policy, as nobody
    answered in time: None" (or nothing), where a person's empty answer is refused."""
    with pytest.raises(ConfigError, match=r"HelpPolicy\.default_answer must be text"):
        HelpPolicy(**fields)


@pytest.mark.parametrize("fields", [{"seconds": math.inf}, {"cost_usd": math.nan}, {"tokens": math.inf}])
def test_an_extension_that_is_no_finite_number_is_refused_when_made(fields: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"Extension.*finite"):
        Extension(**fields)


@pytest.mark.parametrize("field", ["max_turns", "max_seconds", "max_tokens", "max_cost_usd"])
def test_a_budget_of_nan_is_refused_when_made(field: str) -> None:
    """NaN compares false with everything: the ceiling would never stop a run."""
    with pytest.raises(ConfigError, match=rf"Budget\.{field} must be"):
        Budget(**{field: math.nan})


def test_a_run_that_waits_a_very_long_time_is_answered_from_the_store(tmp_path: Any) -> None:
    agent = Agent(
        name="a",
        model=ScriptedModel([[finish("need_help", "Which one?")], [finish("done", "ok")]]),
        help=HelpPolicy(wait_seconds=100 * 365 * 86400.0),  # what to pass instead of inf
    )
    catalog = Catalog()
    catalog.register("a", lambda state: agent)
    store = open_store(str(tmp_path / "runs.db"))
    try:
        runner = Runner(store, catalog)
        first = asyncio.run(runner.start("a", "pick one"))
        assert first.reason is StopReason.NEED_HELP
        assert asyncio.run(runner.resume(first.run_id, "the first")).reason is StopReason.SUCCESS
    finally:
        store.close()


def scripted() -> ScriptedModel:
    return ScriptedModel([[finish("done", "ok")]])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model": "claude-sonnet-4-5"}, r"model must be a model adapter.*not str"),
        ({"tools": len}, r"tools must be a list of tools made with @tool, not builtin_function_or_method"),
        ({"tools": [len]}, r"tools must be tools made with @tool; .* \(decorate the function with @tool\)"),
        ({"verifiers": lambda ctx: []}, r"verifiers must be a list of callables.*put it in a list"),
        ({"verifiers": ["not callable"]}, r"verifiers must be callables"),
        ({"checks": "done"}, r"checks must be a list of callables.*not str"),
        ({"budget": {"max_turns": 3}}, r"budget must be a Budget, not dict"),
        ({"help": 3600}, r"help must be a HelpPolicy, not int"),
        ({"hooks": "prometheus"}, r"hooks must have run_started\(\).*not str"),
        ({"max_tokens": 0}, r"max_tokens must be a positive int, not 0"),
        ({"max_tokens": True}, r"max_tokens must be a positive int, not True"),
        ({"task_type": 3}, r"task_type must be a non-empty string, not 3"),
        ({"name": " "}, r"name must be a non-empty string"),
        # these were first used mid-run: a run ending as error (TypeError), or an AttributeError out of it
        ({"instructions": ["be brief"]}, r"instructions must be text, not list"),
        ({"checkpoint": "runs.db"}, r"checkpoint must be a function that takes a Checkpoint .*not str"),
        ({"fingerprint": "rows"}, r"fingerprint must be a function that takes the RunContext \(or None\)"),
        ({"clock": 1700000000.0}, r"clock must have time\(\) and monotonic\(\).*not float"),
        ({"audit": 0.1}, r"audit must be a SuccessAudit or None, not float"),
    ],
)
def test_an_agent_made_with_a_field_of_the_wrong_kind_is_refused_when_made(
    fields: dict[str, Any], message: str
) -> None:
    """Not an AttributeError in its first run, nor a run that ends as `error` for a typo."""
    with pytest.raises(ConfigError, match=message):
        Agent(**{"name": "a", "model": scripted(), **fields})


def test_an_agent_made_with_hooks_none_runs_with_no_hooks(caplog: pytest.LogCaptureFixture) -> None:
    """`hooks=None` reads as "no hooks": the run logs no failing hook."""
    result = Agent(name="a", model=scripted(), hooks=None).run("say done")  # type: ignore[arg-type]
    assert result.reason is StopReason.SUCCESS
    assert not [r for r in caplog.records if "hook" in r.getMessage()]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (int, r"@tool takes a function \(def or async def\), not the class int"),
        ("search", r"not str: for a tool named 'search', write @tool\(name='search'\)"),
        (5, r"@tool takes a function"),
        (max, r"@tool cannot read the parameters of .*wrap it in a def"),
    ],
)
def test_tool_made_of_what_is_no_function_is_refused_clearly(given: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        tool(given)


@pytest.mark.parametrize(
    ("name", "build", "options", "message"),
    [
        ("", lambda state: asking(), {}, r"name in the catalog must be a non-empty string"),
        ("a", 5, {}, r"takes a function that makes the agent, called as build\(state\), not int"),
        ("a", asking(), {}, r"takes a function that makes the agent.*not Agent: say lambda state: agent"),
        ("a", lambda state: asking(), {"prepair": None}, r"unknown options \['prepair'\]"),
    ],
)
def test_a_catalog_entry_of_the_wrong_kind_is_refused_when_registered(
    name: Any, build: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Catalog().register(name, build, **options)


def test_a_runner_given_a_url_or_a_dict_says_what_to_pass(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/runs.db"
    with pytest.raises(ConfigError, match=r"open store, not its URL: Runner\(open_store\('sqlite:///"):
        Runner(url, Catalog())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"Runner takes a Catalog .* not dict"):
        Runner(open_store(url), {"a": asking})  # type: ignore[arg-type]


def test_a_store_url_that_is_no_text_is_refused_and_a_path_opens(tmp_path: Any) -> None:
    with pytest.raises(StoreError, match=r"a store URL is a string .* not 5"):
        open_store(5)  # type: ignore[arg-type]
    store = open_store(tmp_path / "runs.db")  # a Path is a file path
    assert store.list_runs() == []
    store.close()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_attempts": "5"}, r"RetryPolicy.max_attempts must be a whole number >= 1"),
        ({"max_attempts": 0}, r"RetryPolicy.max_attempts must be a whole number >= 1"),
        ({"base_delay": -1}, r"RetryPolicy.base_delay must be a finite number of seconds >= 0"),
        ({"max_delay": math.inf}, r"RetryPolicy.max_delay must be a finite number"),
    ],
)
def test_a_retry_policy_of_the_wrong_kind_is_refused_when_made(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RetryPolicy(**fields)


@pytest.mark.parametrize("fields", [{"clear_at": "0.6"}, {"keep_last": 2.5}, {"max_result_chars": "big"}])
def test_a_history_policy_of_the_wrong_kind_is_refused_when_made(fields: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"HistoryPolicy: clear_at and compact_at are shares"):
        HistoryPolicy(**fields)


@pytest.mark.parametrize(("name", "build"), [("", lambda: None), ("triage", 5)])
def test_a_foreign_catalog_entry_of_the_wrong_kind_is_refused_when_registered(name: Any, build: Any) -> None:
    with pytest.raises(
        ConfigError, match=r"name in the catalog must be|register_foreign\('triage', ...\) takes a"
    ):
        Catalog().register_foreign(name, "pydantic_ai", build)
