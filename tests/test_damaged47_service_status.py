"""An answer to a run whose stored journal is damaged (an entry missing in its middle, or at its end,
so its question no longer matches its journal) was a 503 from the service: "unavailable, retry" to
clients and proxies, which retried a request no retry mends. It is a 409 now, on the JSON API and the
inbox, with the message that says how to fix it; a store that is really down stays a 503."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from damaged_journals import drop_entry
from test_durable47_damaged_journal import asked
from test_runner_agents import catalog
from test_service_defences import AUTH, TOKEN, Build, build  # noqa: F401 - the fixture

from agent.durable.runner import Runner
from agent.durable.store import RunStatus, StoreError, open_store
from agent.durable.store.base import DamagedRun, UnreadableSnapshot
from agent.service.http import status_of

SAME = {"Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"}


def _waiting(api: object, count: int) -> list[str]:
    pending = api.get("/pending").json()["pending"]  # type: ignore[attr-defined]
    assert len(pending) == count
    return [p["run_id"] for p in pending]


def _says_how_to_fix(error: str, run_id: str) -> None:
    assert f"run {run_id}" in error and "nothing was changed" in error
    assert "restore" in error and f"`endstate end {run_id}`" in error


@pytest.mark.parametrize("last", [False, True], ids=["a hole", "its end"])
def test_an_answer_to_a_damaged_run_is_a_409_saying_how_to_fix_it_and_changes_nothing(
    build: Build,  # noqa: F811
    tmp_path: Path,
    last: bool,
) -> None:
    api = build(runs=2)
    damaged, fine = _waiting(api, 2)
    drop_entry(str(tmp_path / "runs.db"), damaged, last)
    before = api.get(f"/runs/{damaged}").json()
    refused = api.post(f"/runs/{damaged}/answer", json={"answer": "INV-0913"}, headers=AUTH)
    assert refused.status_code == 409, refused.text
    assert "retry-after" not in refused.headers
    _says_how_to_fix(refused.json()["error"], damaged)
    assert api.get(f"/runs/{damaged}").json() == before  # nothing changed
    assert api.post(f"/runs/{fine}/answer", json={"answer": "INV-0913"}, headers=AUTH).status_code == 202


def test_the_inbox_answers_a_damaged_run_409_saying_how_to_fix_it(build: Build, tmp_path: Path) -> None:  # noqa: F811
    api = build(runs=1)
    (damaged,) = _waiting(api, 1)
    drop_entry(str(tmp_path / "runs.db"), damaged, last=False)
    signed_in = api.post("/inbox/login", data={"token": TOKEN}, headers=SAME, follow_redirects=False)
    assert signed_in.status_code == 303
    refused = api.post(f"/inbox/{damaged}/answer", data={"answer": "INV-0913"}, headers=SAME)
    assert refused.status_code == 409, refused.text
    assert "text/html" in refused.headers["content-type"]
    assert f"run {damaged}" in refused.text and "restore" in refused.text and "endstate end" in refused.text
    assert api.get(f"/runs/{damaged}").json()["status"] == RunStatus.WAITING


def test_a_store_that_fails_is_still_a_503_and_a_damaged_run_a_409() -> None:
    assert status_of(StoreError("the store is down")) == 503
    assert status_of(UnreadableSnapshot("written by a newer Endstate")) == 503  # a rolling upgrade
    assert status_of(DamagedRun("run r: its journal entry 1 is missing")) == 409


@pytest.mark.parametrize("last", [False, True], ids=["a hole", "its end"])
def test_both_stores_say_a_damaged_run_is_damaged_not_that_they_failed(
    store_url: str, tmp_path: Path, last: bool
) -> None:
    """What the service maps to 409 is what each backend raises for either damage."""
    run_id = asked(store_url, tmp_path / "damaged")
    drop_entry(store_url, run_id, last)
    runner = Runner(open_store(store_url), catalog())
    try:
        with pytest.raises(DamagedRun) as refused:
            asyncio.run(runner.resume(run_id, "2"))
        assert status_of(refused.value) == 409
    finally:
        runner.store.close()
