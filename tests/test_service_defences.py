"""The service's defences, in this process through the ASGI app: hostile input, hosts, tokens, paging."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
INVOICE = {
    "agent": "invoice-downloader",
    "task": "Get the invoice",
    "state": {"scenario": "invoice/which-one"},
}
LOCAL = "http://127.0.0.1:8000"

Build = Callable[..., TestClient]


@pytest.fixture
def build(tmp_path: Path) -> Iterator[Build]:
    """`build(**service_options)`: a client of a fresh service over a SQLite store (lifespan running)."""
    opened: list[tuple[TestClient, Any, Runner]] = []

    def make(runs: int = 0, **options: Any) -> TestClient:
        store = open_store(str(tmp_path / "runs.db"))
        runner = Runner(store, example_catalog(tmp_path / "worlds"))
        for _ in range(runs):
            asyncio.run(runner.start(**INVOICE))
        service = Service(runner, Token(TOKEN), sweep_interval=3600, **options)
        client = TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False)
        client.__enter__()
        opened.append((client, store, runner))
        return client

    yield make
    for client, store, runner in opened:
        client.__exit__(None, None, None)
        runner.catalog.close()
        store.close()


# -- item 11: hostile JSON and query strings are a clear 400, never a 500 ------------------------

HOSTILE: list[tuple[str, bytes, str]] = [
    ("/runs", b'{"agent": "invoice-downloader", "task": "t", "state": {"x": NaN}}', "NaN"),
    ("/runs", b'{"agent": "invoice-downloader", "task": "t", "state": {"x": Infinity}}', "Infinity"),
    ("/runs", b'{"agent": "invoice-downloader", "task": "t", "state": {"x": -Infinity}}', "-Infinity"),
    # a number too large for a double read as an infinity, stored as the non-standard Infinity (probe39b)
    ("/runs", b'{"agent": "invoice-downloader", "task": "t", "state": {"x": 1e999}}', "1e999, too large"),
    ("/runs", b'{"agent": "invoice-downloader", "task": "t", "state": {"x": [-2.5E400]}}', "-2.5E400, too"),
    (
        "/runs",
        b'{"agent": "invoice-downloader", "task": "t", "state": {"x": ' + b"9" * 5000 + b"}}",
        "digits",
    ),
    ("/runs", b'{"agent": "invoice-downloader", "task": "\\ud800"}', "surrogate"),
    ("/runs", b'{"agent": "invoice-downloader", "task": "a\\u0000b"}', "NUL"),
    ("/runs", b'{"agent": "invoice-downloader", "task": "t", "state": {"scenario": 5}}', "scenario"),
    (
        "/runs",
        b'{"agent": "invoice-downloader", "task": "t", "state": {"scenario": "nosuch"}}',
        "no scenario",
    ),
    (
        "/runs",
        b'{"agent": "invoice-downloader", "task": "t", "state": {"scenario": "csv/clean"}}',
        "csv-cleaner",
    ),
    (  # readers disagree on which of two equal keys counts: Python's took the last, silently
        "/runs",
        b'{"agent": "invoice-downloader", "task": "t", "state": {"scenario": "ci/approved-push", '
        b'"scenario": "invoice/which-one"}}',
        "the key 'scenario' twice",
    ),
    (  # JSON that parses, but nested deeper than the store's readers take: every GET /runs was a 500
        "/runs",
        b'{"agent": "invoice-downloader", "task": "t", "state": {"scenario": "invoice/which-one", "x": '
        + b"[" * 300
        + b"]" * 300
        + b"}}",
        "deeper than 255 levels",
    ),
]


@pytest.mark.parametrize(("path", "body", "says"), HOSTILE)
def test_hostile_bodies_are_a_clear_400_and_store_nothing(
    build: Build, path: str, body: bytes, says: str
) -> None:
    api = build()
    response = api.post(path, content=body, headers=AUTH)
    assert response.status_code == 400, response.text
    assert says in response.json()["error"]
    listed = api.get("/runs")
    assert listed.status_code == 200 and listed.json()["runs"] == []


@pytest.mark.parametrize("limit", ["²", "1e3", "-1", "0", "١٢", "99999999999999999999999"])
def test_a_bad_limit_is_a_400(build: Build, limit: str) -> None:
    response = build().get("/runs", params={"limit": limit})
    assert response.status_code == 400 and "limit must be a whole number" in response.json()["error"]


def test_an_answer_with_a_lone_surrogate_is_a_400(build: Build) -> None:
    api = build(runs=1)
    [run] = api.get("/runs").json()["runs"]
    response = api.post(f"/runs/{run['run_id']}/answer", content=b'{"answer": "\\udfff"}', headers=AUTH)
    assert response.status_code == 400 and "surrogate" in response.json()["error"]
    assert api.get(f"/runs/{run['run_id']}").json()["status"] == "waiting"


# -- item 12: only allowed Host headers are served ----------------------------------------------


def host(name: str) -> dict[str, str]:
    """The `Host` header a page on `name` (rebound to this service's address) would send."""
    return {"Host": name}


@pytest.mark.parametrize("name", ["evil.example", "evil.example:8000", "10.0.0.7:8000", ""])
def test_a_foreign_host_header_is_refused(build: Build, name: str) -> None:
    api = build()
    for path in ("/runs", "/pending", "/inbox"):
        response = api.get(path, headers=host(name))
        assert response.status_code == 421, (path, response.text)
        assert "not served" in response.text and "--allowed-host" in response.text
    assert api.post("/runs", json=INVOICE, headers={**AUTH, **host(name)}).status_code == 421
    assert api.get("/healthz", headers=host(name)).status_code == 200  # probes and scrapers use any address


@pytest.mark.parametrize(
    "name", ["127.0.0.1:8000", "localhost:8000", "LOCALHOST.", "[::1]:8000", "127.0.0.1"]
)
def test_loopback_hosts_are_served(build: Build, name: str) -> None:
    assert build().get("/runs", headers=host(name)).status_code == 200


def test_configured_hosts_are_served(build: Build) -> None:
    from agent.service.app import allowed_hosts

    api = build(allowed_hosts=allowed_hosts("0.0.0.0", ["agent", "Inbox.Example.COM"]))
    assert api.get("/runs", headers=host("inbox.example.com")).status_code == 200
    assert api.get("/runs", headers=host("agent:8000")).status_code == 200
    assert api.get("/runs", headers=host("other")).status_code == 421
    assert allowed_hosts("10.1.2.3", []) >= {"10.1.2.3", "localhost", "127.0.0.1", "::1"}
    assert "0.0.0.0" not in allowed_hosts("0.0.0.0", [])
    anywhere = build(allowed_hosts=allowed_hosts("0.0.0.0", ["*"]))
    assert anywhere.get("/runs", headers=host("whatever")).status_code == 200


# -- item 15: paginated, oldest first, store calls off the event loop ---------------------------


def test_pending_is_paginated_oldest_first(build: Build) -> None:
    api = build(runs=5)
    first = api.get("/pending", params={"limit": 2}).json()
    assert first["total"] == 5 and len(first["pending"]) == 2
    seen = [p["run_id"] for p in first["pending"]]
    page = first
    while page["next"]:
        page = api.get(page["next"]).json()
        seen += [p["run_id"] for p in page["pending"]]
    every = api.get("/pending", params={"limit": 500}).json()["pending"]
    assert seen == [p["run_id"] for p in every] and len(set(seen)) == 5
    times = [p["suspended_at"] for p in every]
    assert times == sorted(times)
    assert api.get("/pending").json()["limit"] == 50
    assert api.get("/pending", params={"offset": "x"}).status_code == 400


def test_the_inbox_is_paginated_oldest_first(build: Build) -> None:
    api = build(runs=5, page_size=2)
    every = [p["run_id"] for p in api.get("/pending").json()["pending"]]
    shown: list[str] = []
    for page in (1, 2, 3):
        text = api.get("/inbox", params={"page": page}).text
        shown += [rid for rid in every if f'data-run-id="{rid}"' in text]
        assert "5 runs wait" in text or "5 waiting" in text or ">5<" in text
    assert shown == every
    assert 'href="/inbox?page=2"' in api.get("/inbox").text
    assert api.get("/inbox", params={"page": "0"}).status_code == 400


def calls_on_the_loop(store: Any, monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> list[str]:
    """The names of the store's methods among `names` called on an event loop, as they come."""
    on_loop: list[str] = []
    for name in names:
        real = getattr(store, name)

        def watched(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
                on_loop.append(_name)
            except RuntimeError:
                pass
            return _real(*args, **kwargs)

        monkeypatch.setattr(store, name, watched)
    return on_loop


def test_store_reads_run_off_the_event_loop(build: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    api = build(runs=1)
    on_loop = calls_on_the_loop(
        api.app.state.service.runner.store, monkeypatch, ("list_runs", "get", "snapshot")
    )
    [run] = api.get("/runs").json()["runs"]
    assert api.get(f"/runs/{run['run_id']}").status_code == 200
    assert api.get("/pending").status_code == 200
    assert api.get("/inbox").status_code == 200
    assert on_loop == []


def test_store_writes_run_off_the_event_loop(build: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    """Starts, claims and the records of how segments ended wait for the store's locks on a thread."""
    api = build(runs=1)
    on_loop = calls_on_the_loop(
        api.app.state.service.runner.store, monkeypatch, ("create", "claim", "record", "checkpoint")
    )
    [waiting] = api.get("/runs").json()["runs"]
    started = api.post("/runs", json=INVOICE, headers=AUTH).json()["run_id"]
    assert api.post(f"/runs/{waiting['run_id']}/answer", json={"answer": "INV-0913"}, headers=AUTH).is_success
    for run_id in (started, waiting["run_id"]):
        _settled(api, run_id)
    assert on_loop == []


def _settled(api: TestClient, run_id: str) -> dict[str, Any]:
    """The run once its segment has been recorded (no worker holds it)."""
    for _ in range(600):
        run: dict[str, Any] = api.get(f"/runs/{run_id}").json()
        if run["status"] != "running":
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never settled")


class _Watched:
    """Wraps a store method: `reached` once it is called, `returned` once it has returned or raised."""

    def __init__(self, real: Any) -> None:
        self.real, self.reached, self.returned = real, threading.Event(), threading.Event()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.reached.set()
        try:
            return self.real(*args, **kwargs)
        finally:
            self.returned.set()


def test_a_write_lock_held_on_the_sqlite_store_stalls_only_the_start_that_waits_for_it(
    build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process in `BEGIN IMMEDIATE` (a sqlite3 shell, say): the start waits for the lock
    off the event loop; `/healthz` and the reads answer meanwhile (a reader never waits for a writer in
    WAL mode), `/readyz` says "not ready" (the store cannot be written), and the start goes through
    once the lock is released."""
    monkeypatch.setenv("ENDSTATE_STORE_TIMEOUT", "60")  # the start waits out every check below
    api = build(runs=1)
    store = api.app.state.service.runner.store  # type: ignore[attr-defined]
    create = _Watched(store.create)
    monkeypatch.setattr(store, "create", create)
    answers: list[Any] = []
    start = threading.Thread(target=lambda: answers.append(api.post("/runs", json=INVOICE, headers=AUTH)))
    other = sqlite3.connect(tmp_path / "runs.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        start.start()
        assert create.reached.wait(30)
        assert api.get("/healthz").text == "ok"
        assert [r["status"] for r in api.get("/runs").json()["runs"]] == ["waiting"]
        assert api.get("/pending").json()["total"] == 1
        ready = api.get("/readyz")  # the store cannot be written: a load balancer sends starts elsewhere
        assert ready.status_code == 503 and "another process keeps locked" in ready.text, ready.text
        assert not create.returned.is_set()  # they answered while the start still waited
    finally:
        other.execute("ROLLBACK")
        other.close()
        start.join(60)
    [started] = answers
    assert started.status_code == 202
    assert _settled(api, started.json()["run_id"])["status"] == "waiting"


def test_a_write_lock_held_past_the_busy_timeout_is_a_clear_503_and_stores_nothing(
    build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENDSTATE_STORE_TIMEOUT", "0.2")  # how long the store waits for the lock
    api = build()
    other = sqlite3.connect(tmp_path / "runs.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        refused = api.post("/runs", json=INVOICE, headers=AUTH)
        assert api.get("/healthz").text == "ok"
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert refused.status_code == 503
    error = refused.json()["error"]
    assert "kept a write transaction open on it for over 0.2 s" in error and "end that transaction" in error
    assert api.get("/runs").json()["runs"] == []


# -- item 16: reads need the token when the service listens beyond loopback ----------------------


@pytest.mark.parametrize(
    ("host", "mode", "needed"),
    [
        ("127.0.0.1", "auto", False),
        ("localhost", "auto", False),
        ("::1", "auto", False),
        ("0.0.0.0", "auto", True),
        ("::", "auto", True),
        ("10.0.0.5", "auto", True),
        ("0.0.0.0", "open", False),
        ("127.0.0.1", "token", True),
    ],
)
def test_when_reads_need_the_token(host: str, mode: str, needed: bool) -> None:
    from agent.service.app import reads_need_token

    assert reads_need_token(host, mode) is needed


def test_reads_need_the_token_when_so_configured(build: Build) -> None:
    api = build(runs=1, reads_need_token=True)
    run_id = api.get("/runs", headers=AUTH).json()["runs"][0]["run_id"]
    for path in ("/runs", f"/runs/{run_id}", "/pending"):
        refused = api.get(path)
        assert refused.status_code == 401 and "token" in refused.json()["error"]
        assert api.get(path, headers=AUTH).status_code == 200
    page = api.get("/inbox").text
    assert "Get the invoice" not in page and "Sign in" in page
    assert api.get("/healthz").status_code == 200


def test_reads_are_open_on_loopback_by_default(build: Build) -> None:
    api = build(runs=1)
    assert api.get("/pending").status_code == 200
    assert "Get the invoice" in api.get("/inbox").text


# -- item 18: logout and Referer-only cross-site posts --------------------------------------------


def test_a_cross_site_logout_is_refused(build: Build) -> None:
    api = build()
    response = api.post("/inbox/logout", headers={"Origin": "http://evil.example"})
    assert response.status_code == 403
    ours = api.post("/inbox/logout", headers={"Origin": LOCAL}, follow_redirects=False)
    assert ours.status_code == 303
    response = api.post("/inbox/logout", headers={"Sec-Fetch-Site": "cross-site"})
    assert response.status_code == 403


def test_a_cross_site_post_carrying_only_a_referer_is_refused(build: Build) -> None:
    api = build()
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    response = api.post(
        "/inbox/login", content=f"token={TOKEN}", headers={**form, "Referer": "http://evil.example/page"}
    )
    assert response.status_code == 403
    same = api.post(
        "/inbox/login",
        content=f"token={TOKEN}",
        headers={**form, "Referer": f"{LOCAL}/inbox"},
        follow_redirects=False,
    )
    assert same.status_code == 303


# -- item 13: no password in any error the service shows -----------------------------------------


def test_store_errors_never_show_a_password(build: Build) -> None:
    from agent.durable.store import StoreError

    api = build()
    store = api.app.state.service.runner.store  # type: ignore[attr-defined]
    url = "postgresql://app:p%40ss@w0rd@db.example:5432/runs?sslmode=require&password=hunter2xyz"
    store.url = url

    def down(*args: Any, **kwargs: Any) -> Any:
        raise StoreError(f"cannot reach {url}: password=hunter2xyz failed")

    store.schema_version = store.answers = down  # the ready probe: a write on SQLite
    store.list_runs = store.overview = store.waiting = store.waiting_counts = down
    for path in ("/readyz", "/runs", "/pending"):
        text = api.get(path).text
        assert api.get(path).status_code == 503, text
        for secret in ("p%40ss", "w0rd", "hunter2xyz", "p@ss"):
            assert secret not in text, (path, text)


def test_json_responses_are_standard_json(build: Build) -> None:
    api = build(runs=1)
    text = api.get("/runs").text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert RunStatus.WAITING in text


# -- what a run holds in Python is still standard JSON on the way out -----------------------------


def strict(text: str) -> Any:
    """Parse as a strict JSON parser would: no NaN or Infinity, no lone surrogate."""
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert not re.search("[\ud800-\udfff]", json.dumps(data, ensure_ascii=False)), text
    return data


def test_a_state_set_in_python_with_nan_or_a_lone_surrogate_is_listed_as_standard_json(
    build: Build,
) -> None:
    api = build()
    runner = api.app.state.service.runner  # type: ignore[attr-defined]
    state = {**INVOICE["state"], "threshold": float("nan"), "top": float("inf"), "path": "v\udcfe"}
    run_id = asyncio.run(runner.start(INVOICE["agent"], "t \udcff", state=state)).run_id
    for path in ("/runs", f"/runs/{run_id}", "/pending"):
        response = api.get(path)
        assert response.status_code == 200, (path, response.text)
        assert run_id in response.text
    shown = strict(api.get(f"/runs/{run_id}").text)["state"]
    assert shown["threshold"] is None and shown["top"] is None and shown["path"] == "v\ufffd"
    strict(api.get("/runs").text)
    strict(api.get("/pending").text)


def test_a_state_stored_deeper_than_a_run_may_keep_is_still_listed(build: Build, tmp_path: Path) -> None:
    """A state nested 600 levels deep, as a release before the start check could store it: every
    GET /runs and /pending was a 500 (RecursionError); the listing shows it cut at 255 levels."""
    api = build(runs=1)
    [run] = api.get("/runs").json()["runs"]
    deep = json.dumps({**INVOICE["state"], "x": json.loads("[" * 600 + "]" * 600)})
    with contextlib.closing(sqlite3.connect(tmp_path / "runs.db")) as conn, conn:
        conn.execute("UPDATE endstate_runs SET state = ? WHERE run_id = ?", (deep, run["run_id"]))
    for path in ("/runs", f"/runs/{run['run_id']}", "/pending"):
        response = api.get(path)
        assert response.status_code == 200, (path, response.text[:300])
        assert run["run_id"] in response.text
        strict(response.text)
    shown, lists = strict(api.get(f"/runs/{run['run_id']}").text)["state"]["x"], 0
    while isinstance(shown, list):
        [shown], lists = shown, lists + 1
    assert shown == "(nested deeper than 255 levels: not shown)"
    assert 200 < lists < 300  # cut near the state's 255th level, not at the run's


# -- every error is JSON saying what to fix, and no field is dropped without a word ---------------


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/runs", {**INVOICE, "task_typ": "x"}, "unknown field(s) 'task_typ'"),
        ("/runs", {**INVOICE, "run_id": ""}, "'run_id' must not be empty"),
        ("/runs/{run}/answer", {"answer": "INV-0913", "who": "me"}, "unknown field(s) 'who'"),
        ("/runs/{run}/deny", {"reson": "no"}, "takes 'reason'"),
        ("/runs/{run}/approve", {"answer": "yes"}, "takes 'segments'"),
    ],
)
def test_a_field_an_endpoint_does_not_take_is_a_400_and_changes_nothing(
    build: Build, path: str, body: dict[str, Any], says: str
) -> None:
    api = build(runs=1)
    [run] = api.get("/runs").json()["runs"]
    response = api.post(path.format(run=run["run_id"]), json=body, headers=AUTH)
    assert response.status_code == 400 and says in response.json()["error"], response.text
    [same] = api.get("/runs").json()["runs"]
    assert same["status"] == "waiting" and same["segments"] == run["segments"]


def test_an_unknown_path_or_method_is_a_json_error(build: Build) -> None:
    api = build()
    missing = api.get("/runs/a/b/c")
    assert missing.status_code == 404 and "no such endpoint" in missing.json()["error"]
    wrong = api.put("/runs", json=INVOICE, headers=AUTH)
    assert wrong.status_code == 405 and "does not take PUT" in wrong.json()["error"]
    assert "POST" in wrong.headers["allow"]


# -- a stale page or a retried request never answers the question that came next ------------------


def _waiting_at(api: TestClient, run_id: str, segments: int) -> dict[str, Any]:
    for _ in range(6000):  # a minute at least: the runner resumes it on the service's loop
        run = api.get(f"/runs/{run_id}").json()
        if run["status"] == "waiting" and run["segments"] > segments:
            return dict(run)
        time.sleep(0.01)
    raise AssertionError(f"run {run_id} did not wait again: {run}")


def test_a_stale_approval_never_approves_the_call_that_came_next(tmp_path: Path) -> None:
    from test_runner_agents import catalog, counter_state

    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, catalog())
    folder = tmp_path / "a"
    run_id = asyncio.run(runner.start("counter", "pay", state=counter_state(folder, "approve-twice"))).run_id
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    with TestClient(create_app(service), base_url=LOCAL) as api:
        [read] = api.get("/pending").json()["pending"]
        assert read["pending"]["arguments"] == {"amount": 7}
        first = {"segments": read["segments"]}
        assert api.post(f"/runs/{run_id}/approve", json=first, headers=AUTH).status_code == 202
        now = _waiting_at(api, run_id, read["segments"])
        assert now["pending"]["arguments"] == {"amount": 700}
        again = api.post(f"/runs/{run_id}/approve", json=first, headers=AUTH)  # a client's retry
        assert again.status_code == 409 and "moved on" in again.json()["error"]
        origin = {"Origin": LOCAL, "Content-Type": "application/x-www-form-urlencoded"}
        assert api.post("/inbox/login", content=f"token={TOKEN}", headers=origin).status_code == 200
        page = api.get("/inbox").text
        assert f'name="segments" value="{now["segments"]}"' in page  # the form says what it shows
        stale = api.post(f"/inbox/{run_id}/approve", content=f"segments={read['segments']}", headers=origin)
        assert stale.status_code == 409 and "moved on" in stale.text
        assert api.get(f"/runs/{run_id}").json()["segments"] == now["segments"]
    assert (folder / "wired.txt").read_text() == "7\n"  # only the call that was approved ran
    runner.catalog.close()
    store.close()


def test_a_start_sent_again_with_its_run_id_gets_that_run_and_a_different_one_is_a_409(build: Build) -> None:
    api = build()
    first = api.post("/runs", json={**INVOICE, "run_id": "order-42"}, headers=AUTH)
    assert first.status_code == 202
    again = api.post("/runs", json={**INVOICE, "run_id": "order-42"}, headers=AUTH)  # its reply was lost
    assert again.status_code == 200, again.text
    assert again.json()["run_id"] == "order-42" and again.json()["started_before"] is True
    other = api.post("/runs", json={**INVOICE, "task": "Another task", "run_id": "order-42"}, headers=AUTH)
    assert other.status_code == 409 and "taken by a different run" in other.json()["error"]
    moved = {**INVOICE, "state": {"scenario": "invoice/portal-offline"}, "run_id": "order-42"}
    assert api.post("/runs", json=moved, headers=AUTH).status_code == 409
    assert [r["run_id"] for r in api.get("/runs").json()["runs"]] == ["order-42"]


# -- a catalog entry whose own code fails: the deployment's fault, said in one line ---------------


def test_a_start_whose_catalog_prepare_fails_is_a_503_naming_it_and_stores_nothing(
    build: Build, tmp_path: Path
) -> None:
    """The example agents' worlds folder is a file (ENDSTATE_WORLDS mistyped): `prepare` raised
    NotADirectoryError, the service answered a bare "Internal Server Error" (500) and logged a traceback."""
    (tmp_path / "worlds").write_text("not a folder")
    api = build()
    answer = api.post("/runs", json={**INVOICE, "run_id": "r1"}, headers=AUTH)
    assert answer.status_code == 503, answer.text
    said = answer.json()["error"]
    assert "agent 'invoice-downloader' could not be set up: its catalog entry's prepare raised" in said
    assert "NotADirectoryError" in said and "nothing was changed" in said
    assert api.get("/runs").json()["runs"] == []


# -- more budget over HTTP, as `endstate resume --more-turns` ------------------------------------


def test_a_run_stopped_at_a_limit_is_given_more_turns_over_http(build: Build) -> None:
    api = build()
    limited = {"agent": "csv-cleaner", "task": "Clean it", "state": {"scenario": "csv/ok-every-time"}}
    run_id = api.post("/runs", json=limited, headers=AUTH).json()["run_id"]
    before = _finished(api, run_id, 0)
    assert (before["stop_reason"], before["stop_limit"]) == ("limit", "turns")
    for bad, says in [
        ({"more_turns": 0}, "'more_turns' must be a whole number above 0"),
        ({"more_turns": 1.5}, "'more_turns' must be a whole number above 0"),
        ({"more_turns": True}, "'more_turns' must be a whole number above 0"),
        (
            {"more_turns": 10**25},
            "'more_turns' must be a whole number above 0 and at most 9223372036854775807",
        ),
        ({"more_seconds": 1e300}, "'more_seconds' must be a number above 0 and at most 31536000"),
        (
            {"more_tokens": 2**63},
            "'more_tokens' must be a whole number above 0 and at most 9223372036854775807",
        ),
        ({"more_cost": "1"}, "'more_cost' must be a number above 0"),
        ({"more_cost": 10**400}, "'more_cost' must be a number above 0 and at most 1.8e+308"),  # was a 500
        ({"more_turn": 2}, "unknown field(s) 'more_turn'"),
    ]:
        refused = api.post(f"/runs/{run_id}/resume", json=bad, headers=AUTH)
        assert refused.status_code == 400 and says in refused.json()["error"], refused.text
    assert api.post(f"/runs/{run_id}/resume", json={"more_turns": 2}).status_code == 401
    assert api.post(f"/runs/{run_id}/resume", json={"more_turns": 2}, headers=AUTH).status_code == 202
    after = _finished(api, run_id, before["segments"])
    assert after["stop_reason"] == "limit" and after["turns"] == before["turns"] + 2
    done = api.post("/runs", json={**limited, "state": {"scenario": "csv/clean"}}, headers=AUTH).json()
    _finished(api, done["run_id"], 0)
    refused = api.post(f"/runs/{done['run_id']}/resume", json={"more_turns": 2}, headers=AUTH)
    assert refused.status_code == 409 and "did not stop at a limit" in refused.json()["error"]


def test_more_of_a_budget_that_did_not_run_out_is_refused_at_once_and_the_run_stays_resumable(
    build: Build,
) -> None:
    """A turn-limited run given only more tokens was answered 202 "running"; the runner then failed
    in the background (a traceback in the log) and the client never heard why nothing happened."""
    api = build()
    limited = {"agent": "csv-cleaner", "task": "Clean it", "state": {"scenario": "csv/ok-every-time"}}
    run_id = api.post("/runs", json=limited, headers=AUTH).json()["run_id"]
    before = _finished(api, run_id, 0)
    refused = api.post(f"/runs/{run_id}/resume", json={"more_tokens": 10_000}, headers=AUTH)
    assert refused.status_code == 400, refused.text
    assert "would still be out of turns budget: extend turns" in refused.json()["error"]
    now = api.get(f"/runs/{run_id}").json()
    assert (now["status"], now["segments"], now["stop_limit"]) == ("finished", before["segments"], "turns")
    assert api.post(f"/runs/{run_id}/resume", json={"more_turns": 2}, headers=AUTH).status_code == 202
    assert _finished(api, run_id, before["segments"])["turns"] == before["turns"] + 2


def _finished(api: TestClient, run_id: str, segments: int) -> dict[str, Any]:
    for _ in range(6000):  # a minute at least
        run = api.get(f"/runs/{run_id}").json()
        if run["status"] == "finished" and run["segments"] > segments:
            return dict(run)
        time.sleep(0.01)
    raise AssertionError(f"run {run_id} did not finish: {run}")


# -- one run whose journal cannot be read never hides the others --------------------------------


def test_a_run_with_a_damaged_journal_is_shown_as_such_and_the_others_still_are(
    build: Build, tmp_path: Path
) -> None:
    api = build(runs=2)
    damaged, fine = (r["run_id"] for r in api.get("/pending").json()["pending"])
    # a bad disk, or a person with a SQL prompt
    with contextlib.closing(sqlite3.connect(tmp_path / "runs.db")) as conn, conn:
        conn.execute("UPDATE endstate_entries SET entry = '{oops' WHERE run_id = ? AND seq = 2", (damaged,))
    page = api.get("/inbox")
    assert page.status_code == 200, page.text
    assert f'data-run-id="{fine}"' in page.text and f'data-run-id="{damaged}"' in page.text
    assert "Its journal cannot be read" in page.text
    run_page = api.get(f"/inbox/review/runs/{damaged}")
    assert "cannot be shown" in run_page.text and "text/html" in run_page.headers["content-type"]


@pytest.mark.parametrize("column", ["suspended_at", "deadline", "cost_usd"])
def test_a_waiting_run_with_a_number_column_edited_into_text_hides_no_other(
    build: Build, tmp_path: Path, column: str
) -> None:
    """/pending and the inbox sorted and showed such a row: a 500 for everyone, every refresh."""
    api = build(runs=2)
    damaged, fine = (r["run_id"] for r in api.get("/pending").json()["pending"])
    with contextlib.closing(sqlite3.connect(tmp_path / "runs.db")) as conn, conn:
        conn.execute(f"UPDATE endstate_runs SET {column} = 'soon' WHERE run_id = ?", (damaged,))
    pending = api.get("/pending")
    assert pending.status_code == 200, pending.text
    assert [r["run_id"] for r in pending.json()["pending"]] == [fine]
    page = api.get("/inbox")
    assert page.status_code == 200 and f'data-run-id="{fine}"' in page.text, page.text
    listing = api.get("/runs").json()
    assert [r["run_id"] for r in listing["runs"]] == [fine] and listing["damaged"] == [damaged]


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ("'garbage'", "snapshot is not JSON"),
        ("json_set(snapshot, '$.version', 99)", "snapshot version 99 is not supported"),
    ],
)
def test_an_answer_to_a_run_whose_stored_snapshot_cannot_be_read_is_a_503_naming_the_run(
    build: Build, tmp_path: Path, edit: str, says: str
) -> None:
    """Not the client's fault, so not a 400 that named no run ('snapshot is not JSON: Expecting
    value'): a 503 saying which run and what to do; the run still waits, its answer not spent."""
    api = build(runs=1)
    [waiting] = api.get("/pending").json()["pending"]
    run_id = waiting["run_id"]
    with contextlib.closing(sqlite3.connect(tmp_path / "runs.db")) as conn, conn:
        conn.execute(f"UPDATE endstate_runs SET snapshot = {edit} WHERE run_id = ?", (run_id,))
    response = api.post(f"/runs/{run_id}/answer", json={"answer": "INV-0913"}, headers=AUTH)
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert f"run {run_id}: its stored snapshot cannot be read ({says}" in error
    assert "upgrade this Endstate" in error and "fix the row or delete the run" in error
    assert api.get(f"/runs/{run_id}").json()["status"] == "waiting"
