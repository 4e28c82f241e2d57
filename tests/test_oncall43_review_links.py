"""The alerts on stops the review queue holds link that queue, filtered to their agent, task type
and stop reason, as the help alerts link the inbox (issue 14). The queue takes the stop reason as
`endstate review --reason` does: `/inbox/review?reason=limit`; a reason it does not hold is a 400
that names those it does."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import SCENARIOS, example_catalog
from agent.result import StopReason
from agent.service.app import Service, create_app
from agent.service.auth import Token

TOKEN = "test-token-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[1]
ALERTS = {
    rule["alert"]: rule
    for group in yaml.safe_load((ROOT / "alerts" / "rules" / "alerts.yml").read_text())["groups"]
    for rule in group["rules"]
    if "alert" in rule
}
# Each alert on stops the queue holds, with the stop reason its runs have.
QUEUED = {
    "EndstateLimitStopShareHigh": "limit",
    "EndstateLimitStopShareRising": "limit",
    "EndstateErrorStopShareHigh": "error",
    "EndstateErrorStopShareRising": "error",
    "EndstateNoProgressSurge": "no_progress",
    "EndstateGiveUpSurge": "gave_up",
}
RUNS = {  # scenario -> (agent, the stop it ends with)
    "csv/same-page": ("csv-cleaner", StopReason.NO_PROGRESS),
    "csv/ok-every-time": ("csv-cleaner", StopReason.LIMIT),
    "research/private-margin": ("researcher", StopReason.GAVE_UP),
    "research/one-more-source": ("researcher", StopReason.LIMIT),
}


@pytest.mark.parametrize(("name", "reason"), sorted(QUEUED.items()))
def test_a_queued_stop_alert_links_the_review_queue_of_its_agent_task_type_and_reason(
    name: str, reason: str
) -> None:
    description = ALERTS[name]["annotations"]["description"]
    link = (
        "/inbox/review?agent={{ $labels.agent | urlquery }}&task_type={{ $labels.task_type | urlquery }}"
        f"&reason={reason}"
    )
    assert link in description


def test_the_queued_stop_alerts_are_those_whose_expression_counts_such_stops() -> None:
    """No alert on a queued stop is left without its link."""
    reasons = {"limit", "error", "no_progress", "gave_up"}
    counted = {
        name
        for name, rule in ALERTS.items()
        if set(re.findall(r'stop_reason="(\w+)"', rule["expr"])) & reasons
    }
    assert counted == set(QUEUED)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    """A service over a SQLite store holding finished runs of each queued stop but error."""
    store = open_store(str(tmp_path / "runs.db"))
    catalog = example_catalog(tmp_path / "worlds")
    runner = Runner(store, catalog)
    for scenario in SCENARIOS:
        if scenario.name in RUNS:
            state = {"scenario": scenario.name}
            done = asyncio.run(
                runner.start(
                    scenario.agent, scenario.task, state=state, run_id=scenario.name.replace("/", "-")
                )
            )
            assert done.reason is RUNS[scenario.name][1], done.note
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as client:
        login = client.post(
            "/inbox/login", data={"token": TOKEN}, headers={"origin": "http://127.0.0.1:8000"}
        )
        assert login.status_code in (200, 303), login.text
        yield client
    catalog.close()
    store.close()


def listed(page: str) -> set[str]:
    return set(re.findall(r'data-run-id="([^"]+)"', page))


def test_the_queue_filtered_by_reason_lists_those_runs_only(api: TestClient) -> None:
    every = api.get("/inbox/review")
    assert every.status_code == 200
    assert {"csv-ok-every-time", "research-one-more-source", "csv-same-page"} <= listed(every.text)
    limits = api.get("/inbox/review?reason=limit")
    assert limits.status_code == 200
    assert listed(limits.text) == {"csv-ok-every-time", "research-one-more-source"}
    assert "(2 to review)" in limits.text
    one = api.get("/inbox/review?agent=researcher&task_type=research&reason=limit")
    assert listed(one.text) <= {"research-one-more-source"}


def test_the_queues_filter_links_keep_the_reason(api: TestClient) -> None:
    page = api.get("/inbox/review?reason=limit").text
    assert 'href="/inbox/review?agent=researcher&amp;reason=limit"' in page
    assert 'href="/inbox/review?reason=gave_up"' in page
    assert 'href="/inbox/review"' in page  # "all" drops the reason


@pytest.mark.parametrize("reason", ["success", "bogus", "need_help"])
def test_a_reason_the_queue_does_not_hold_is_a_400_naming_those_it_does(api: TestClient, reason: str) -> None:
    page = api.get(f"/inbox/review?reason={reason}")
    assert page.status_code == 400
    assert "gave_up, limit, no_progress, error" in page.text
