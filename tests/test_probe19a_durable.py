"""Foreign runs whose saved state the framework cannot load when they are answered (probe19a).

A team redeploys between a suspension and its answer: the OpenAI Agents SDK agent got a new name,
or the framework's saved messages no longer validate. The SDK then refuses the saved state
(`RunState.from_string` raises `UserError`). Answering such a run printed a traceback and left it
`running` (its lease lapsing, the person's answer pending), `endstate recover` raised the same
traceback (and stopped recovering the runs after it), and a help policy that resumes at the
deadline raised in the sweep. Now the answer is a clear error and the run waits as it was; recovery
ends it as `error` saying why; the deadline ends it `help_timeout`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents.testing.model import ModelStep, ScriptedModel
from foreign_agents import oa_reply, pai_agent, remove
from test_runner_agents import outlive_leases

from agent.cli.main import main
from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import RunStatus, RunStore, open_store
from agent.errors import ConfigError
from agent.policies import HelpPolicy
from agent.result import StopReason
from agent.snapshot import ForeignState

CATALOG = "test_probe19a_durable:catalog"
ENV_NAME = "PROBE19A_OA_NAME"  # the name the OpenAI agent is built with: a redeploy renames it


def oa_agent() -> OAAgent[Any]:
    steps = [ModelStep.respond(oa_reply) for _ in range(4)]
    return OAAgent(name=os.environ.get(ENV_NAME, "oa_remover"), model=ScriptedModel(steps), tools=[remove])


def catalog() -> Catalog:
    c = Catalog()
    c.register_foreign("oa", "openai_agents", oa_agent, task_type="cleanup")
    patient = HelpPolicy(on_timeout="resume", default_answer="nobody came: keep it")
    c.register_foreign("oa-patient", "openai_agents", oa_agent, task_type="cleanup", help=patient)
    c.register_foreign("pai", "pydantic_ai", pai_agent, task_type="cleanup")
    return c


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return str(tmp_path / "runs.db")


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def suspended(store: RunStore, agent: str) -> str:
    res = asyncio.run(Runner(store, catalog()).start(agent, "clean up a"))
    assert res.reason is StopReason.NEED_HELP
    return res.run_id


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*argv, "--catalog", CATALOG])
    out, err = capsys.readouterr()
    return code, out, err


def test_an_answer_the_framework_cannot_resume_from_is_a_clear_error_and_the_run_still_waits(
    store: RunStore, store_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = suspended(store, "oa")
    before = store.get(run_id)
    assert before is not None and before.status is RunStatus.WAITING
    monkeypatch.setenv(ENV_NAME, "oa_remover_v2")  # redeployed under a new name
    code, _, err = cli(capsys, "approve", run_id, "--store", store_url)
    assert code == 2 and "Traceback" not in err, err
    assert "cannot be resumed from the store" in err and "UserError" in err and "changed" in err
    after = store.get(run_id)
    assert after is not None and after.status is RunStatus.WAITING  # not left running, answer pending
    assert (after.question, after.pending, after.segments) == (before.question, before.pending, 1)
    monkeypatch.delenv(ENV_NAME)  # the old name back: the same approval now finishes it
    code, out, err = cli(capsys, "approve", run_id, "--store", store_url)
    assert code == 0 and "success" in out, err


def test_a_crashed_resume_that_the_framework_cannot_load_is_recovered_as_an_error_saying_why(
    store: RunStore, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = suspended(store, "oa")
    monkeypatch.setenv(ENV_NAME, "oa_remover_v2")
    dying = Runner(store, catalog(), lease_seconds=0.2)
    job = dying.claim(run_id, approved=True)  # approved, then its worker died before the segment ran
    dying._let_go(run_id, None)
    assert outlive_leases(store_url, 1.0, dying.owner) == 1  # its lease lapses, by the store's clock
    assert job.run_id == run_id
    assert asyncio.run(Runner(store, catalog()).recover()) == []  # logged, not raised: the others go on
    record = store.get(run_id)
    assert record is not None and (record.status, record.stop_reason) == (RunStatus.FINISHED, "error")
    assert record.error_type == "agent_build_failed" and "UserError" in record.note
    assert f"endstate resume {run_id}" in record.note  # its snapshot is kept


def test_a_help_policy_that_resumes_a_run_it_cannot_load_ends_it_at_the_deadline(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = suspended(store, "oa-patient")
    record = store.get(run_id)
    assert record is not None and record.deadline is not None
    monkeypatch.setenv(ENV_NAME, "oa_remover_v2")
    (ended,) = asyncio.run(Runner(store, catalog()).sweep(now=record.deadline + 1))
    assert ended.reason is StopReason.HELP_TIMEOUT and "default answer could not be given" in ended.note
    assert "UserError" in ended.note


def test_saved_messages_that_no_longer_validate_are_a_clear_error(store: RunStore) -> None:
    run_id = suspended(store, "pai")
    snap = store.snapshot(run_id)
    assert snap is not None and snap.foreign is not None
    damaged = dataclasses.replace(snap, foreign=ForeignState("pydantic_ai", '{"messages": [{"kind": "x"}]}'))
    agent = catalog().entry("pai").build({})
    with pytest.raises(ConfigError, match=r"cannot be resumed from the store.*ValidationError"):
        asyncio.run(agent.aresume(damaged, approved=True))


# -- the same through each integration's own resume ------------------------------------------------


def _unreadable_states() -> list[tuple[str, Any]]:
    from foreign_agents import lg_graph
    from foreign_agents import oa_agent as oa_remover
    from langgraph.checkpoint.memory import InMemorySaver

    from agent.integrations import claude_agent_sdk, langgraph, openai_agents, pydantic_ai

    return [
        ("openai_agents", lambda: openai_agents.resume(oa_remover(), "not json", True)),
        ("openai_agents", lambda: openai_agents.resume(oa_remover(), "{}", True)),
        ("pydantic_ai", lambda: pydantic_ai.resume(pai_agent(), "not json", True)),
        ("pydantic_ai", lambda: pydantic_ai.resume(pai_agent(), '{"messages": []}', True)),
        ("pydantic_ai", lambda: pydantic_ai.resume(pai_agent(), '[{"kind": 1}]', True)),
        ("langgraph", lambda: langgraph.resume(lg_graph(InMemorySaver()), "not json", True)),
        ("claude_agent_sdk", lambda: claude_agent_sdk.resume("not json", True)),
        ("claude_agent_sdk", lambda: claude_agent_sdk.resume("[]", True)),
    ]


@pytest.mark.parametrize("case", range(8))
def test_a_state_no_framework_can_read_given_to_resume_is_a_config_error_saying_what_to_pass(
    case: int,
) -> None:
    """They raised the parser's own JSONDecodeError, KeyError, AttributeError or ValidationError."""
    framework, resume = _unreadable_states()[case]
    with pytest.raises(
        ConfigError, match=rf"^{framework}\.resume\(\) cannot read the state .*: pass "
    ) as err:
        resume()
    assert "\n" not in str(err.value) and len(str(err.value)) < 500


# -- a LangGraph entry's options that no run can take ----------------------------------------------


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"task_type": "x"}, r"got \['task_type'\], which the runner fills for each run"),
        ({"hooks": None, "run_id": "r"}, r"got \['hooks', 'run_id'\], which the runner fills"),
        ({"help_seconds": 5}, r"help=HelpPolicy\(\.\.\.\)"),
        ({"verifiers": []}, "verifiers="),
        ({"agent_name": "z"}, "the entry's name"),
        ({"stream_mode": "values"}, r"drives the graph's stream itself: leave out \['stream_mode'\]"),
    ],
)
def test_a_langgraph_entrys_options_that_no_run_can_take_are_refused_when_registered(
    options: dict[str, Any], said: str
) -> None:
    """LangGraph's stream takes any keyword, so these were taken: every start then raised a bare
    TypeError ("multiple values for keyword argument 'hooks'") and left the run `running`."""
    from foreign_agents import lg_checkpointer, lg_graph

    with pytest.raises(ConfigError, match=said):
        Catalog().register_foreign("lg", "langgraph", lg_graph, checkpointer=lg_checkpointer, options=options)
    Catalog().register_foreign(  # the graph's own options, and the integration's, are as before
        "lg",
        "langgraph",
        lg_graph,
        checkpointer=lg_checkpointer,
        options={"exact_counts": True, "tools": ["look"]},
    )


# -- a foreign run whose segment cannot begin ------------------------------------------------------


def _no_input(task: str) -> Any:
    return {"messages": [("user", task)]}["prompt"]  # a make_input with a slip: KeyError


@contextlib.asynccontextmanager
async def _unreachable_saver() -> AsyncIterator[Any]:
    raise OSError("connection refused: the checkpoint database is down")
    yield  # pragma: no cover


def broken_catalog() -> Catalog:
    from foreign_agents import lg_checkpointer, lg_graph

    c = Catalog()
    c.register_foreign("lg-slip", "langgraph", lg_graph, checkpointer=lg_checkpointer, make_input=_no_input)
    c.register_foreign("lg-down", "langgraph", lg_graph, checkpointer=_unreachable_saver)
    return c


@pytest.mark.parametrize(
    ("agent", "why"), [("lg-slip", "KeyError: 'prompt'"), ("lg-down", "OSError: connection")]
)
def test_a_foreign_run_that_cannot_begin_is_a_clear_error_and_recovery_ends_it(
    store: RunStore, store_url: str, agent: str, why: str
) -> None:
    """make_input raising, or a checkpointer that cannot open, raised out of the runner as they were:
    the run was left `running`, and each recovery raised again (and stopped recovering the rest)."""
    dying = Runner(store, broken_catalog(), lease_seconds=0.2)
    with pytest.raises(ConfigError, match=rf"could not begin: {why}"):
        asyncio.run(dying.start(agent, "clean up a"))
    (left,) = store.list_runs(RunStatus.RUNNING)
    assert outlive_leases(store_url, 1.0, dying.owner) == 1  # its lease lapses, by the store's clock
    assert asyncio.run(Runner(store, broken_catalog()).recover()) == []  # logged, not raised
    record = store.get(left.run_id)
    assert record is not None and (record.status, record.stop_reason) == (RunStatus.FINISHED, "error")
    assert why in record.note
