"""filters52: `endstate runs`, `pending` and `review` take `--agent` and `--task-type`, as an alert's
labels name a run's agent and task type, and so does `GET /runs`; on SQLite and PostgreSQL.

Before: none of the three commands had the options (a person on call paged through every agent's
runs), the store's `list_runs` took no such filter, and `GET /runs?agent=` listed every run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg
import pytest
from starlette.testclient import TestClient

from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import Lease, NewRun, Outcome, RunStatus, RunStore, open_store
from agent.examples.scenarios import example_catalog
from agent.models.scripted import finish
from agent.service.app import Service, create_app
from agent.service.auth import Token

NOW = 1_800_000_000.0
TOKEN = "test-token-0123456789abcdef"
GIVE_UP = [[finish("give_up", "cannot")]]
ASK = [[finish("need_help", "which one?")]]
RUNS = [  # run id, agent, task type, how it goes; each started a minute after the one before
    ("ci-1", "ci-fixer", "fix_ci", GIVE_UP),
    ("ci-2", "ci-fixer", "triage", ASK),
    ("re-1", "researcher", "fix_ci", GIVE_UP),
    ("re-2", "researcher", "triage", ASK),
    ("ci-3", "ci-fixer", "fix_ci", ASK),
]
BAD = [  # a name no run has, and what the refusal says of it
    ("", "must not be empty"),
    ("ci-fixer\n", "control or invisible characters"),
    ("ci-fixer\x1b[31m", "control or invisible characters"),
    ("x" * 2049, "is over 2,048 bytes"),
]


@pytest.fixture(params=pg.BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path, make_agent: Any) -> str:
    """A store of `RUNS`: finished as gave_up, or waiting for a person."""
    url = pg.url_for(request.param, tmp_path)
    store = open_store(url)
    try:
        for i, (run_id, agent, task_type, steps) in enumerate(RUNS):
            at = NOW + 60 * i
            lease = Lease("w1", at + 1e6)
            store.create(NewRun(run_id, agent, "do it", task_type), lease, at)
            result = make_agent(*steps, name=agent, task_type=task_type).run("do it", run_id=run_id)
            store.record(run_id, Outcome.of(result), lease, at)
    finally:
        store.close()
    return url


@pytest.fixture
def store(url: str) -> Iterator[RunStore]:
    opened = open_store(url)
    yield opened
    opened.close()


def listed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """The run ids `endstate ARGV --json` prints (exit 0)."""
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return [json.loads(line)["run_id"] for line in capsys.readouterr().out.splitlines()]


def test_the_store_lists_the_runs_of_an_agent_and_a_task_type(store: RunStore) -> None:
    def ids(**only: Any) -> list[str]:
        return [r.run_id for r in store.list_runs(**only)]

    assert ids(agent="ci-fixer") == ["ci-3", "ci-2", "ci-1"]
    assert ids(task_type="fix_ci") == ["ci-3", "re-1", "ci-1"]
    assert ids(agent="ci-fixer", task_type="fix_ci", limit=1) == ["ci-3"]
    assert ids(agent="researcher", status=RunStatus.WAITING) == ["re-2"]
    assert ids(agent="ci-fixer' OR '1'='1") == []  # a parameter, never SQL
    assert ids(agent="nobody") == []


def test_runs_lists_only_the_agent_and_task_type_asked_for(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert listed(capsys, "runs", "--store", url, "--agent", "researcher") == ["re-2", "re-1"]
    assert listed(capsys, "runs", "--store", url, "--task-type", "triage") == ["re-2", "ci-2"]
    both = ["runs", "--store", url, "--agent", "ci-fixer", "--task-type", "fix_ci", "--status", "waiting"]
    assert listed(capsys, *both) == ["ci-3"]
    assert main(["runs", "--store", url, "--agent", "ci-fixer", "--task-type", "fix_ci", "--limit", "1"]) == 0
    table = capsys.readouterr().out
    assert "ci-3" in table and "ci-1" not in table
    assert "`endstate pending --store" in table and "--agent ci-fixer --task-type fix_ci` shows" in table
    assert main(["runs", "--store", url, "--agent", "nobody"]) == 0  # none: said, not an error
    assert capsys.readouterr().out.startswith("no runs of agent 'nobody' in ")
    assert listed(capsys, "runs", "--store", url, "--agent", "nobody") == []


def test_pending_lists_only_the_agent_and_task_type_asked_for(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert listed(capsys, "pending", "--store", url, "--task-type", "triage") == ["ci-2", "re-2"]
    assert listed(capsys, "pending", "--store", url, "--agent", "ci-fixer") == ["ci-2", "ci-3"]
    assert listed(capsys, "pending", "--store", url, "--agent", "ci-fixer", "--task-type", "fix_ci") == [
        "ci-3"
    ]
    assert main(["pending", "--store", url, "--agent", "researcher", "--task-type", "fix_ci"]) == 0
    said = capsys.readouterr().out
    assert said.startswith(
        "no runs of agent 'researcher' and task type 'fix_ci' are waiting for a person in "
    )


def test_review_lists_only_the_agent_and_task_type_asked_for(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    review = ["review", "--store", url, "--reason", "gave_up"]
    assert listed(capsys, *review, "--agent", "researcher") == ["re-1"]
    assert listed(capsys, *review, "--task-type", "fix_ci") == ["ci-1", "re-1"]
    assert main([*review, "--agent", "ci-fixer", "--task-type", "fix_ci", "--limit", "5"]) == 0
    table = capsys.readouterr().out
    assert "ci-1" in table and "re-1" not in table and "\n1 run to review" in table  # not 2: of the filter
    assert listed(capsys, *review, "--agent", "ci-fixer", "--task-type", "triage") == []
    assert main([*review, "--agent", "nobody"]) == 0
    assert capsys.readouterr().out.startswith("nothing to review in ")


@pytest.mark.parametrize("command", [["runs"], ["pending"], ["review"]])
@pytest.mark.parametrize("option", ["--agent", "--task-type"])
@pytest.mark.parametrize(("name", "why"), BAD)
def test_a_bad_name_is_a_usage_error(
    tmp_path: Path, command: list[str], option: str, name: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    open_store(str(store)).close()
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--store", str(store), option, name])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: the {option[2:].replace('-', ' ')} to list " in err and why in err


@pytest.fixture
def api(url: str, tmp_path: Path) -> Iterator[TestClient]:
    store = open_store(url)
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as client:
            yield client
    finally:
        runner.catalog.close()
        store.close()


def test_get_runs_lists_only_the_agent_and_task_type_asked_for(api: TestClient) -> None:
    def ids(query: str) -> list[str]:
        answer = api.get(f"/runs?{query}")
        assert answer.status_code == 200, answer.text
        return [r["run_id"] for r in answer.json()["runs"]]

    assert ids("agent=researcher") == ["re-2", "re-1"]
    assert ids("task_type=fix_ci&limit=2") == ["ci-3", "re-1"]
    assert ids("agent=ci-fixer&task_type=triage&status=waiting") == ["ci-2"]
    assert ids("agent=nobody") == []


@pytest.mark.parametrize("key", ["agent", "task_type"])
@pytest.mark.parametrize(("name", "why"), BAD)
def test_get_runs_refuses_a_bad_name(api: TestClient, key: str, name: str, why: str) -> None:
    answer = api.get("/runs", params={key: name})
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(f"{key}: the {key.replace('_', ' ')} to list ")
    assert why in answer.json()["error"]


def test_get_runs_filters_a_store_without_an_overview_too(store: RunStore) -> None:
    """`overview` passes the filter to a store without `overview` of its own (Temporal's) too."""
    from agent.service.app import overview

    class Plain:
        def list_runs(self, *args: Any, **only: Any) -> Any:
            return store.list_runs(*args, **only)

    assert [r.run_id for r in overview(Plain(), None, 10, agent="researcher")] == ["re-2", "re-1"]
