"""Online guessing of the service token is throttled per client address (API and inbox sign-in).

Real HTTP against `endstate serve` (as the service tests start it), with a short failure budget and
a window far longer than a test; the window's passing and the table's cap are judged in this process
with an injected clock (no sleeping).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient
from test_service_support import TOKEN, Server, endstate

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.service.throttle import NO_ADDRESS, Throttle, client_key

LIMIT = 3
WINDOW = 600  # longer than any test takes: a 429 here is never a race with the window's end
WRONG = "wrong-token-0123456789abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("throttle44")
    args = ("--read-auth", "token", "--token-failures", str(LIMIT), "--token-window", str(WINDOW))
    with Server(str(tmp / "runs.db"), tmp, *args) as served:
        yield served


def from_address(server: Server, address: str, token: str) -> httpx.Client:
    """A client the service sees at `address`: behind the loopback proxy uvicorn trusts by default."""
    headers = {"Authorization": f"Bearer {token}", "X-Forwarded-For": address}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def retry_after(response: httpx.Response) -> int:
    wait = int(response.headers["retry-after"])
    assert 0 < wait <= WINDOW
    return wait


def test_wrong_bearer_tokens_past_the_limit_are_429_without_checking_any_token(server: Server) -> None:
    with from_address(server, "198.51.100.1", WRONG) as guesser:
        for _ in range(LIMIT):
            assert guesser.get("/runs").status_code == 401
        throttled = guesser.get("/runs")
        assert throttled.status_code == 429
        wait = retry_after(throttled)
        said = throttled.json()["error"]
        assert "too many wrong tokens" in said and f"{wait} s" in said
        right = guesser.get("/runs", headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 429  # not checked: a 200 here would tell a guesser it guessed right
        assert guesser.post("/runs", json={"agent": "x", "task": "y"}).status_code == 429


def test_right_tokens_are_never_slowed_and_other_addresses_are_unaffected(server: Server) -> None:
    with from_address(server, "198.51.100.2", WRONG) as guesser:
        for _ in range(LIMIT + 2):
            guesser.get("/runs")
        assert guesser.get("/runs").status_code == 429
    with from_address(server, "198.51.100.3", TOKEN) as other:
        for _ in range(LIMIT * 4):  # right tokens are not failures, however many
            assert other.get("/runs").status_code == 200
    with server.client() as local:  # the loopback client itself, no proxy
        assert local.get("/runs").status_code == 200


def test_a_request_without_a_token_is_not_a_guess(server: Server) -> None:
    with httpx.Client(base_url=server.url, headers={"X-Forwarded-For": "198.51.100.4"}) as anonymous:
        for _ in range(LIMIT * 2):
            assert anonymous.get("/runs").status_code == 401
    with from_address(server, "198.51.100.4", TOKEN) as same:
        assert same.get("/runs").status_code == 200


def test_x_forwarded_for_from_an_untrusted_peer_is_not_believed(server: Server) -> None:
    """A peer that is not the trusted loopback proxy (127.0.0.2 here) cannot spread its guesses over
    addresses it names in X-Forwarded-For: they all count against the peer itself."""
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(base_url=server.url, transport=transport, timeout=30) as peer:
        statuses = [
            peer.get(
                "/runs", headers={"Authorization": f"Bearer {WRONG}", "X-Forwarded-For": f"203.0.113.{n}"}
            ).status_code
            for n in range(LIMIT + 1)
        ]
    assert statuses == [401] * LIMIT + [429]


def test_inbox_sign_in_past_the_limit_is_a_429_page_and_the_token_is_not_checked(server: Server) -> None:
    with httpx.Client(base_url=server.url, headers={"X-Forwarded-For": "198.51.100.5"}) as browser:
        for _ in range(LIMIT):
            assert browser.post("/inbox/login", data={"token": WRONG}).status_code == 401
        paused = browser.post("/inbox/login", data={"token": TOKEN})
        assert paused.status_code == 429
        wait = retry_after(paused)
        assert "text/html" in paused.headers["content-type"]
        assert "sign-in from it is paused" in paused.text and f"{wait} s" in paused.text
        assert "endstate_inbox" not in paused.headers.get("set-cookie", "")
    with httpx.Client(base_url=server.url, headers={"X-Forwarded-For": "198.51.100.6"}) as other:
        assert other.post("/inbox/login", data={"token": TOKEN}).status_code == 303


def test_guesses_at_the_inbox_and_the_api_share_one_budget(server: Server) -> None:
    with from_address(server, "198.51.100.7", WRONG) as guesser:
        assert guesser.post("/inbox/login", data={"token": WRONG}).status_code == 401
        for _ in range(LIMIT - 1):
            assert guesser.get("/runs").status_code == 401
        assert guesser.post("/inbox/login", data={"token": WRONG}).status_code == 429


def test_serve_refuses_a_bad_failure_budget(tmp_path: Path) -> None:
    done = endstate("serve", "--token-failures", "0", store=str(tmp_path / "runs.db"), timeout=60)
    assert done.returncode == 2
    assert "--token-failures" in done.stderr and "not a whole number from 1" in done.stderr


# -- the window and the table, with an injected clock ---------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(tmp_path: Path, clock: Clock) -> Iterator[TestClient]:
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    service = Service(
        runner,
        Token(TOKEN),
        sweep_interval=3600,
        reads_need_token=True,
        throttle=Throttle(3, 60, clock=clock),
    )
    with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as client:
        yield client
    runner.catalog.close()
    store.close()


def test_the_address_may_try_again_once_its_oldest_failure_left_the_window(
    app: TestClient, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    wrong, right = {"Authorization": f"Bearer {WRONG}"}, {"Authorization": f"Bearer {TOKEN}"}
    for _ in range(3):
        assert app.get("/runs", headers=wrong).status_code == 401
        clock.now += 10  # failures at 1000, 1010, 1020
    with caplog.at_level(logging.WARNING, "endstate.service"):
        throttled = app.get("/runs", headers=right)
    assert throttled.status_code == 429 and throttled.headers["retry-after"] == "30"  # 1000 + 60 - 1030
    assert "someone may be guessing the service token" in caplog.text
    clock.now = 1060  # the first failure is 60 s old: two remain in the window
    assert app.get("/runs", headers=right).status_code == 200
    assert app.get("/runs", headers=wrong).status_code == 401
    assert app.get("/runs", headers=wrong).status_code == 429  # 1010, 1020, 1060: three again


def test_the_table_of_addresses_stays_bounded_oldest_out(clock: Clock) -> None:
    throttle = Throttle(limit=2, window=60, max_clients=100, clock=clock)
    for n in range(1000):
        throttle.failed(f"10.0.{n // 256}.{n % 256}")
        throttle.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(throttle) == 100
    assert throttle.retry_after("10.0.0.0") == 0  # the oldest was forgotten
    assert throttle.retry_after("10.0.3.231") == 60  # the newest (n = 999) is throttled
    clock.now += 61
    throttle.failed("192.0.2.1")  # a failure past the window drops every address that went quiet
    assert len(throttle) == 1


def test_an_ipv6_client_counts_by_its_network() -> None:
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:192.0.2.1") == "192.0.2.1"
    assert client_key("192.0.2.1") == "192.0.2.1"
    assert client_key(None) == client_key("") == NO_ADDRESS != client_key("unknown")
