"""`endstate serve` end to end over HTTP with a real client, against SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_service_support import TOKEN, Server, metric, run_status, wait_for, wait_status
from test_store import edit_row

from agent.durable.store import open_store

pytestmark = pytest.mark.slow


@pytest.fixture
def server(store_url: str, tmp_path: Path) -> Iterator[Server]:
    with Server(store_url, tmp_path) as s:
        yield s


INVOICE = {
    "agent": "invoice-downloader",
    "task": "Get the September invoice",
    "state": {"scenario": "invoice/which-one"},
}


def test_start_suspend_answer_with_and_without_the_token_and_scrape_metrics(server: Server) -> None:
    with server.client() as api, server.client(token=None) as anonymous:
        assert anonymous.post("/runs", json=INVOICE).status_code == 401
        started = api.post("/runs", json=INVOICE)
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        waiting = wait_status(api, run_id, "waiting")
        assert "INV-0913" in waiting["question"] and waiting["stop_reason"] == "need_help"
        [pending] = api.get("/pending").json()["pending"]
        assert pending["run_id"] == run_id and pending["agent"] == "invoice-downloader"

        metrics = api.get("/metrics").text
        labels = {"agent": "invoice-downloader", "task_type": "invoice_download"}
        assert metric(metrics, "agent_help_pending", **labels) == 1.0
        assert (metric(metrics, "agent_help_oldest_pending_seconds", **labels) or 0) >= 0.0

        with server.client(token="wrong-token-0123456789") as wrong:
            for who in (anonymous, wrong):
                refused = who.post(f"/runs/{run_id}/answer", json={"answer": "INV-0913"})
                assert refused.status_code == 401 and "token" in refused.json()["error"]
                assert run_status(api, run_id) == waiting  # nothing changed

        answered = api.post(f"/runs/{run_id}/answer", json={"answer": "INV-0913, the corrected one."})
        assert answered.status_code == 202, answered.text
        done = wait_status(api, run_id, "finished")
        assert (done["stop_reason"], done["verified"], done["segments"]) == ("success", True, 2)
        assert done["waiting_seconds"] > 0 and done["turns"] == 4

        stops = {**labels, "stop_reason": "success", "stop_limit": "none", "stop_cause": ""}

        def counted() -> str | None:  # the run's end is told to telemetry once its record is written
            text = api.get("/metrics").text
            return text if metric(text, "agent_stops_total", **stops) == 1.0 else None

        metrics = wait_for(counted, what="the run's stop counted in /metrics")
        assert metric(metrics, "agent_help_pending", **labels) == 0.0
        assert metric(metrics, "agent_human_wait_seconds_count", **labels, outcome="answered") == 1.0
        om = api.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        assert om.headers["content-type"].startswith("application/openmetrics-text") and "# EOF" in om.text


def test_a_pending_tool_call_is_approved_over_http(server: Server) -> None:
    body = {"agent": "ci-fixer", "task": "Fix CI", "state": {"scenario": "ci/approved-push"}}
    with server.client() as api:
        run_id = api.post("/runs", json=body).json()["run_id"]
        waiting = wait_status(api, run_id, "waiting")
        assert waiting["pending"]["name"] == "push"
        assert waiting["pending"]["arguments"] == {"branch": "fix/add-cents"}
        wrong = api.post(f"/runs/{run_id}/answer", json={"answer": "sure"})
        assert wrong.status_code == 422 and "approve or deny" in wrong.json()["error"]
        assert api.post(f"/runs/{run_id}/approve").status_code == 202
        assert wait_status(api, run_id, "finished")["stop_reason"] == "success"


def test_health_readiness_and_the_inbox_page(server: Server) -> None:
    with server.client(token=None) as anonymous:
        assert anonymous.get("/healthz").text == "ok"
        assert anonymous.get("/readyz").text == "ready"
        page = anonymous.get("/", follow_redirects=True)
        assert page.status_code == 200 and "Runs waiting for a person" in page.text


def test_deadlines_are_swept_to_help_timeout(server: Server) -> None:
    body = {"agent": "ci-fixer", "task": "Fix CI", "state": {"scenario": "ci/unanswered-push"}}
    with server.client() as api:
        run_id = api.post("/runs", json=body).json()["run_id"]
        done = wait_status(api, run_id, "finished")
        assert done["stop_reason"] == "help_timeout"


# -- bad input: a clear 4xx and no change in the store ------------------------------------------


def a_waiting_and_a_finished_run(api: Any) -> tuple[str, str]:
    """The ids of an invoice run waiting for a person and of one that finished."""
    waiting_id = api.post("/runs", json=INVOICE).json()["run_id"]
    wait_status(api, waiting_id, "waiting")
    finished = api.post("/runs", json={**INVOICE, "state": {"scenario": "invoice/portal-offline"}})
    done_id = finished.json()["run_id"]
    wait_status(api, done_id, "finished")
    return waiting_id, done_id


def test_bad_requests_get_a_clear_4xx_and_change_nothing(server: Server, store_url: str) -> None:
    with server.client() as api:
        run_id, done_id = a_waiting_and_a_finished_run(api)
        store = open_store(store_url)
        before = store.list_runs(limit=None)
        try:
            cases = [
                (api.get("/runs/no-such-run"), 404, "no run with id 'no-such-run'"),
                (api.post("/runs/no-such-run/answer", json={"answer": "x"}), 404, "no run with id"),
                (api.post(f"/runs/{done_id}/answer", json={"answer": "x"}), 409, "is finished, not waiting"),
                (api.post(f"/runs/{run_id}/answer", content=b"{not json"), 400, "not valid JSON"),
                (api.post(f"/runs/{run_id}/answer", json=["a list"]), 400, "must be a JSON object"),
                (api.post(f"/runs/{run_id}/answer", content=b"[" * 30_000), 400, "nested too deeply"),
                (api.post(f"/runs/{run_id}/answer", json={"answer": ""}), 400, "'answer' is required"),
                (
                    api.post(f"/runs/{run_id}/answer", json={"answer": "x" * 100_000}),
                    413,
                    "at most 65536 bytes",
                ),
                (api.post(f"/runs/{run_id}/approve"), 422, "not for an approval"),
                (api.post("/runs", json={"agent": "nobody", "task": "t"}), 400, "no agent named 'nobody'"),
                (api.post("/runs", json={"agent": "csv-cleaner"}), 400, "'task' is required"),
                (
                    api.post("/runs", json={**INVOICE, "task": "Another", "run_id": run_id}),
                    409,
                    "taken by a different run",
                ),
                (
                    api.post("/runs", json={**INVOICE, "task_type": "made-up-label"}),
                    400,
                    "does not run task type 'made-up-label'",
                ),
                (api.get("/runs?status=bogus"), 400, "status must be one of"),
            ]
            for response, status, message in cases:
                assert response.status_code == status, (response.request.url, response.text)
                assert message in response.json()["error"], response.text
            assert store.list_runs(limit=None) == before
        finally:
            store.close()


def test_the_runs_listing_names_a_damaged_row_and_still_lists_the_others(
    server: Server, store_url: str
) -> None:
    with server.client() as api:
        waiting_id, done_id = a_waiting_and_a_finished_run(api)
        assert "damaged" not in api.get("/runs").json()
        edit_row(store_url, "UPDATE endstate_runs SET state = '[1]' WHERE run_id = ?", done_id)
        listing = api.get("/runs").json()
        assert [r["run_id"] for r in listing["runs"]] == [waiting_id] and listing["damaged"] == [done_id]
        page = api.get(f"/inbox/review/runs/{done_id}")  # its review link: 409, no retry mends it
        assert page.status_code == 409 and "text/html" in page.headers["content-type"], page.text
        assert f"Run {done_id} cannot be shown" in page.text


def test_a_chunked_oversized_body_is_refused_too(server: Server) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(100):
            yield b"x" * 1024

    with server.client() as api:
        run_id = api.post("/runs", json=INVOICE).json()["run_id"]
        before = wait_status(api, run_id, "waiting")
        response = api.post(f"/runs/{run_id}/answer", content=chunks())
        assert response.status_code == 413
        assert run_status(api, run_id) == before


def test_the_token_comes_from_a_file_or_is_made_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.service.auth import load_token

    monkeypatch.delenv("ENDSTATE_TOKEN", raising=False)
    monkeypatch.delenv("ENDSTATE_TOKEN_FILE", raising=False)
    made, source = load_token(None, tmp_path / "state")
    assert source == str(tmp_path / "state" / "token") and len(made.secret) >= 32
    assert oct((tmp_path / "state" / "token").stat().st_mode)[-3:] == "600"
    again, _ = load_token(None, tmp_path / "state")
    assert again == made
    (tmp_path / "t").write_text(TOKEN + "\n")
    (tmp_path / "t").chmod(0o600)
    from_file, _ = load_token(str(tmp_path / "t"), tmp_path / "state")
    assert from_file.accepts(TOKEN) and not from_file.accepts(TOKEN + "x") and not from_file.accepts("")


def test_the_demo_workload_fills_a_fresh_store_with_every_stop_reason(tmp_path: Path) -> None:
    from test_service_support import wait_for

    extra = ("--demo-workload", "--demo-interval", "1", "--demo-answer-after", "0.5")
    wanted = {"success", "gave_up", "no_progress", "limit", "help_timeout", "error"}
    with Server(str(tmp_path / "runs.db"), tmp_path, *extra) as server, server.client() as api:

        def reasons() -> set[str] | None:
            runs = api.get("/runs", params={"status": "finished", "limit": 1000}).json()["runs"]
            found = {r["stop_reason"] for r in runs}
            resumed = any(r["segments"] == 2 and r["stop_reason"] == "success" for r in runs)
            return found if found >= wanted and resumed else None

        wait_for(reasons, timeout=120, what="every stop reason from the demo workload")


def test_serve_prints_the_inbox_url_and_serves_process_metrics_without_created_series(server: Server) -> None:
    assert f"endstate serve: inbox: {server.url}/inbox" in server.log.read_text()
    with server.client() as api:
        wait_status(api, api.post("/runs", json=INVOICE).json()["run_id"], "waiting")
        for accept in ("", "application/openmetrics-text; version=1.0.0"):
            text = api.get("/metrics", headers={"Accept": accept}).text
            assert "agent_runs_started_total" in text or "agent_runs_started" in text
            assert "_created" not in text, [line for line in text.splitlines() if "_created" in line][:3]
            assert (metric(text, "process_cpu_seconds_total") or 0.0) > 0.0
            assert (metric(text, "process_resident_memory_bytes") or 0.0) > 0.0
