"""`GET /runs` and `GET /pending` take each of their query parameters once, and no other (red53's
finding): a repeated one was read as its last value (`?agent=nobody&agent=invoice-downloader` listed
invoice-downloader's runs, past a proxy that scoped the listing with its own `agent=`, and
`/pending?agent=nobody&agent=` listed every waiting run), and an unknown one was ignored
(`?task-type=x`, the CLI's spelling, listed every run). Both are a 400 now that says what to send."""

from __future__ import annotations

import pytest
from test_service_defences import AUTH, Build, build  # noqa: F401 - the fixture


@pytest.mark.parametrize(
    ("path", "said"),
    [
        (
            "/runs?status=waiting&agent=nobody&agent=invoice-downloader",
            "'agent' is given 2 times: give it once",
        ),
        ("/runs?limit=1&limit=2", "'limit' is given 2 times"),
        ("/pending?agent=nobody&agent=", "'agent' is given 2 times"),
        ("/pending?task_type=a&task_type=b&task_type=c", "'task_type' is given 3 times"),
        (
            "/runs?task-type=x",
            "'task-type' is no parameter of /runs: it takes status, limit, agent, task_type",
        ),
        ("/pending?task-type=x", "'task-type' is no parameter of /pending: it takes limit, offset, agent"),
        ("/pending?status=waiting", "'status' is no parameter of /pending"),
        ("/runs?offset=50", "'offset' is no parameter of /runs"),
    ],
)
def test_a_listing_refuses_a_parameter_given_twice_or_one_it_does_not_take(
    build: Build,  # noqa: F811
    path: str,
    said: str,
) -> None:
    client = build(runs=1)
    answer = client.get(path, headers=AUTH)
    assert answer.status_code == 400, answer.text
    assert said in answer.json()["error"]


def test_a_listing_still_takes_each_parameter_once_and_its_next_page(build: Build) -> None:  # noqa: F811
    client = build(runs=3)
    assert (
        len(client.get("/runs?status=waiting&limit=2&agent=invoice-downloader", headers=AUTH).json()["runs"])
        == 2
    )
    first = client.get(
        "/pending?limit=2&agent=&task_type=", headers=AUTH
    ).json()  # empty: all, as the inbox sends
    assert len(first["pending"]) == 2 and first["next"]
    rest = client.get(first["next"], headers=AUTH)
    assert rest.status_code == 200 and len(rest.json()["pending"]) == 1
