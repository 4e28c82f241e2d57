"""The alerts on stops the review queue holds link that queue, filtered to their agent, task type
and stop reason, as the help alerts link the inbox (issue 14). The queue takes the stop reason as
`endstate review --reason` does: `/inbox/review?reason=limit`; a reason it does not hold is a 400
that names those it does."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from agent.cli.main import main
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
    "csv/clean": ("csv-cleaner", StopReason.SUCCESS),
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
    """A service over a SQLite store holding finished runs of each queued stop but error, and a
    success the queue samples."""
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
    with sqlite3.connect(tmp_path / "runs.db") as db:  # an end time the queue's 5% sample of successes takes
        db.execute("UPDATE endstate_runs SET ended_at = 1700000000.0 WHERE run_id = 'csv-clean'")
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
    """Runs that stopped for that reason, and no sampled success: "limit" shows limit stops."""
    every = api.get("/inbox/review")
    assert every.status_code == 200
    assert {"csv-ok-every-time", "research-one-more-source", "csv-same-page"} <= listed(every.text)
    assert "csv-clean" in listed(every.text)  # the sampled success
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


# -- links a person can click: `python -m alerts.build --inbox-base URL` ---------------------------

INBOX_BASE = "https://agents.example.com/endstate"


def build_rules(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "alerts.build", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)


def built_alerts(out: Path) -> dict[str, dict[str, Any]]:
    return {
        rule["alert"]: rule
        for path in out.glob("*.yml")
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }


def test_an_inbox_base_makes_every_inbox_link_a_url_and_changes_nothing_else(tmp_path: Path) -> None:
    out = tmp_path / "rules"
    done = build_rules("--inbox-base", INBOX_BASE + "/", "--out", str(out))
    assert done.returncode == 0, done.stderr
    written = built_alerts(out)
    linked = {name for name, rule in ALERTS.items() if "/inbox" in rule["annotations"]["description"]}
    assert linked >= set(QUEUED) | {"EndstateHelpRequestStale", "EndstateHumanWaitSlow"}
    for name, rule in written.items():
        description = rule["annotations"]["description"]
        assert description == ALERTS[name]["annotations"]["description"].replace(
            "/inbox", INBOX_BASE + "/inbox"
        )
        assert re.findall(r"\S*/inbox\S*", description) == re.findall(
            rf"{re.escape(INBOX_BASE)}/inbox\S*", description
        )
        assert rule["expr"] == ALERTS[name]["expr"]
    check = subprocess.run(
        ["promtool", "check", "rules", *map(str, sorted(out.glob("*.yml")))], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert build_rules("--check").returncode == 0, "the committed rules were changed"
    assert build_rules("--check", "--inbox-base", INBOX_BASE).returncode == 1  # they hold paths


@pytest.mark.parametrize("tests", ["help_request_stale.yml", "error_stop_share_high.yml"])
def test_promtool_renders_the_inbox_links_as_urls_under_the_base(tmp_path: Path, tests: str) -> None:
    """The first case of the alert's own promtool tests, run on rules built with the base: the
    description the alert carries to Alertmanager holds the whole URL, labels filled in."""
    out = tmp_path / "rules"
    assert build_rules("--inbox-base", INBOX_BASE, "--out", str(out)).returncode == 0
    suite = yaml.safe_load((ROOT / "alerts" / "tests" / tests).read_text())
    suite["rule_files"] = [str(out / "recording.yml"), str(out / "alerts.yml")]
    suite["tests"] = suite["tests"][:1]
    fired = [a for case in suite["tests"][0]["alert_rule_test"] for a in case["exp_alerts"]]
    assert fired
    for alert in fired:
        text = alert["exp_annotations"]["description"]
        assert "/inbox" in text
        alert["exp_annotations"]["description"] = text.replace(" /inbox", f" {INBOX_BASE}/inbox")
    path = tmp_path / tests
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    done = subprocess.run(
        ["nice", "-n", "10", "promtool", "test", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    "base", ["agents.example.com", "https://agents.example.com/?x=1", "https://agents example.com", ""]
)
def test_an_inbox_base_that_cannot_make_links_is_refused(tmp_path: Path, base: str) -> None:
    done = build_rules("--inbox-base", base, "--out", str(tmp_path / "rules"))
    assert done.returncode == 2
    assert "is not an http(s) URL" in done.stderr and "such as https://agents.example.com" in done.stderr
    assert not (tmp_path / "rules").exists()


def test_the_cli_filtered_by_reason_lists_those_runs_only_as_the_inbox(
    api: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`endstate review --reason limit` lists what `?reason=limit` does: its help says "only runs that
    stopped for this reason", and a sampled success is none (an explicit --success-share still samples)."""
    store = ["--store", str(tmp_path / "runs.db")]
    assert main(["review", *store, "--json"]) == 0
    assert "csv-clean" in json_ids(capsys.readouterr().out)
    assert main(["review", *store, "--reason", "limit", "--json"]) == 0
    assert json_ids(capsys.readouterr().out) == {"csv-ok-every-time", "research-one-more-source"}
    assert main(["review", *store, "--reason", "limit", "--success-share", "1", "--json"]) == 0
    assert "csv-clean" in json_ids(capsys.readouterr().out)


def json_ids(out: str) -> set[str]:
    return {json.loads(line)["run_id"] for line in out.splitlines() if line.strip()}
