"""Review for a team's own agent: a run of an agent from a custom catalog is recorded, labelled,
promoted to an eval case that names the catalog, and `endstate eval` passes the case while the agent
behaves as recorded and fails it when the agent's behaviour changes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import review_agents
import yaml

from agent.cli import main
from agent.result import StopReason
from agent.runner import Runner
from agent.store import RunStore, open_store

CATALOG = "review_agents:catalog"


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("REFUNDER_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.delenv("ENDSTATE_CATALOG", raising=False)
    path = tmp_path / "runs.db"
    store = open_store(str(path))
    try:
        record_runs(store)
    finally:
        store.close()
    yield path


def record_runs(store: RunStore) -> None:
    """Two finished runs of the refunder, through a Runner as production runs them."""
    catalog = review_agents.catalog()
    runner = Runner(store, catalog)

    async def both() -> None:
        task = review_agents.TASK
        gave_up = await runner.start("refunder", task, state={"script": "shipped"}, run_id="r-42")
        done = await runner.start("refunder", "Refund order 7.", state={"script": "unshipped"}, run_id="r-7")
        assert (gave_up.reason, done.reason) == (StopReason.GAVE_UP, StopReason.SUCCESS)

    asyncio.run(both())


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def promoted(capsys: pytest.CaptureFixture[str], store_path: Path, out: Path) -> None:
    store = ("--store", str(store_path))
    assert cli(capsys, "review", "label", "r-42", "correct_give_up", "--by", "ana", *store)[0] == 0
    assert cli(capsys, "review", "label", "r-7", "fine", "--by", "ana", *store)[0] == 0
    for run_id in ("r-42", "r-7"):
        code, text = cli(capsys, "review", "promote", run_id, "--out", str(out), "--catalog", CATALOG, *store)
        assert code == 0 and f"wrote {out / run_id}.yaml" in text, text


def test_a_catalog_agents_run_is_promoted_and_eval_passes_it_then_fails_when_the_agent_changes(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "cases"
    promoted(capsys, store_path, out)
    [case] = yaml.safe_load((out / "r-42.yaml").read_text())["cases"]
    assert case["catalog"] == CATALOG and "fixture" not in case
    assert case["agent"] == "refunder" and case["task_type"] == "refund" and case["expect"] == "gave_up"
    assert case["state"]["script"] == "shipped"
    assert case["results"] == [
        {"call": "lookup_order", "text": "{workdir}/orders.json: order 42: {'status': 'shipped', "
         "'date': '2026-11-02'}"},
    ]  # fmt: skip

    code, text = cli(capsys, "eval", str(out), "--no-progress")
    assert code == 0, text
    assert "PASSED: 2 of 2 cases met their expectations." in text

    monkeypatch.setenv("REFUNDER_POLICY", "lenient")  # the order book now says returned, not shipped
    code, text = cli(capsys, "eval", str(out), "--no-progress")
    assert code == 1
    assert "replay: call 1 (lookup_order) answered differently" in text and "returned" in text
    assert "review/r-7" in text and "FAILED: 1 of 2" in text  # the success still replays as recorded


def test_promote_of_a_catalog_agent_without_its_catalog_says_how_to_name_it(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ("--store", str(store_path))
    cli(capsys, "review", "label", "r-42", "correct_give_up", *store)
    code, text = cli(capsys, "review", "promote", "r-42", "--out", str(tmp_path), *store)
    assert code == 2
    assert "agent 'refunder', not a seed agent" in text and "--catalog module:attr" in text
    code, text = cli(capsys, "review", "promote", "r-42", "--catalog", "review_agents:nope", *store)
    assert code == 2 and "cannot load the agent catalog 'review_agents:nope'" in text
    code, text = cli(capsys, "review", "promote", "r-42", "--catalog", "test_runner_agents:catalog", *store)
    assert code == 2 and "no agent named 'refunder' in the catalog" in text
    assert not list(tmp_path.glob("*.yaml"))


def test_a_case_without_its_catalog_runs_with_eval_catalog(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "cases"
    promoted(capsys, store_path, out)
    for path in out.glob("*.yaml"):  # as a team may keep them: the catalog said once, on the command line
        data = yaml.safe_load(path.read_text())
        del data["cases"][0]["catalog"]
        path.write_text(yaml.safe_dump(data))
    code, text = cli(capsys, "eval", str(out), "--no-progress")
    assert code == 2
    assert "field 'agent': 'refunder' is not a seed agent" in text and "endstate eval --catalog" in text
    code, text = cli(capsys, "eval", str(out), "--no-progress", "--catalog", CATALOG)
    assert code == 0 and "PASSED: 2 of 2" in text, text
    monkeypatch.setenv("ENDSTATE_CATALOG", CATALOG)
    code, text = cli(capsys, "eval", str(out), "--no-progress")
    assert code == 0 and "PASSED: 2 of 2" in text, text


def test_the_inbox_promotes_a_catalog_agents_run_with_the_catalog_serve_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib
    import subprocess
    import sys

    import httpx
    from test_runner_agents import env_with_tests
    from test_service_support import TOKEN, Server, wait_status

    monkeypatch.setenv("REFUNDER_WORLDS", str(tmp_path / "worlds"))
    cases = tmp_path / "cases"
    store = str(tmp_path / "served.db")
    with Server(store, tmp_path, "--cases-dir", str(cases), catalog=CATALOG) as server:
        with server.client() as api:
            body = {"agent": "refunder", "task": review_agents.TASK, "state": {"script": "shipped"}}
            run_id = api.post("/runs", json=body).json()["run_id"]
            assert wait_status(api, run_id, "finished")["stop_reason"] == "gave_up"
        with contextlib.closing(httpx.Client(base_url=server.url, timeout=30)) as browser:
            assert browser.post("/inbox/login", data={"token": TOKEN}).status_code == 303
            form = {"label": "correct_give_up", "by": "ana"}
            assert browser.post(f"/inbox/review/runs/{run_id}/label", data=form).status_code == 303
            promoted = browser.post(f"/inbox/review/runs/{run_id}/promote", data={"promote": "1"})
            assert promoted.status_code == 303, promoted.text
    [case] = yaml.safe_load((cases / f"{run_id}.yaml").read_text())["cases"]
    assert case["catalog"] == CATALOG and case["state"]["script"] == "shipped"
    evaluated = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", str(cases), "--no-progress"],
        capture_output=True, text=True, timeout=300, env=env_with_tests(),
    )  # fmt: skip
    assert evaluated.returncode == 0 and "PASSED: 1 of 1" in evaluated.stdout, evaluated.stdout


def test_serve_refuses_a_cases_dir_that_is_a_file(tmp_path: Path) -> None:
    from agent.errors import ConfigError
    from agent.service.server import cases_dir

    (tmp_path / "cases.yaml").write_text("")
    with pytest.raises(ConfigError, match="that is a file, not a folder"):
        cases_dir(tmp_path / "cases.yaml")
    assert cases_dir(str(tmp_path / "new")) == (tmp_path / "new").resolve()
    assert cases_dir(None) is None
