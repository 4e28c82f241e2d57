"""listings53: `GET /pending` checks its `agent` and `task_type` as `GET /runs` does (`filter_name`): a
name with control characters, a blank one or one over 2,048 bytes is a 400 saying what is wrong. An
empty value still means every run (the inbox's filter forms send one). SQLite and PostgreSQL.

Before: any non-empty value was taken as a name and listed nothing (a 200 with no run), where `GET /runs`
refused it; a person pasting a label with its line break saw an empty inbox, not what was wrong."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient
from test_filters52_store import BAD, api, url  # noqa: F401 - the fixtures

REFUSED = [*[(name, why) for name, why in BAD if name], ("   ", "must not be empty")]


def pending(client: TestClient, **params: str) -> list[str]:
    """The ids of the waiting runs `GET /pending` lists with `params` (200)."""
    answer = client.get("/pending", params=params)
    assert answer.status_code == 200, answer.text
    return [p["run_id"] for p in answer.json()["pending"]]


@pytest.mark.parametrize("key", ["agent", "task_type"])
@pytest.mark.parametrize(("name", "why"), REFUSED)
def test_get_pending_refuses_a_bad_name_as_get_runs_does(
    api: TestClient,  # noqa: F811
    key: str,
    name: str,
    why: str,
) -> None:
    answer = api.get("/pending", params={key: name})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error.startswith(f"{key}: the {key.replace('_', ' ')} to list ") and why in error
    assert api.get("/runs", params={key: name}).json() == answer.json()  # the same words


def test_an_empty_name_still_means_every_waiting_run(api: TestClient) -> None:  # noqa: F811
    every = pending(api)
    assert sorted(every) == ["ci-2", "ci-3", "re-2"]
    assert pending(api, agent="", task_type="") == every
    assert pending(api, agent="ci-fixer", task_type="") == ["ci-2", "ci-3"]
    assert pending(api, agent="", task_type="triage") == ["ci-2", "re-2"]


def test_the_next_page_keeps_the_checked_filter(api: TestClient) -> None:  # noqa: F811
    first = api.get("/pending", params={"agent": "ci-fixer", "limit": "1"}).json()
    assert [p["run_id"] for p in first["pending"]] == ["ci-2"]
    assert [p["run_id"] for p in api.get(first["next"]).json()["pending"]] == ["ci-3"]
