"""fuzz: generated requests at every door of the HTTP service (the JSON API, the inbox's forms and
pages, their auth, query strings and headers), through the in-process app over a real SQLite store.

The contract's invariants, never specific outputs: no 500 and no traceback in any response; a refusal
(4xx) names what is wrong (the API's `{"error": ...}`, the inbox's page); a refused request leaves the
store as it was; the service still answers after each.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from test_service_defences import AUTH, LOCAL, TOKEN

from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import COOKIE, Token

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")),  # more while hunting
    deadline=None,
    database=None,
    derandomize=os.environ.get("FUZZ_RANDOM") is None,  # FUZZ_RANDOM=1: new examples each run, while hunting
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
QUESTION = {
    "agent": "invoice-downloader",
    "task": "Get the invoice",
    "state": {"scenario": "invoice/which-one"},
}
APPROVAL = {"agent": "ci-fixer", "task": "Fix CI", "state": {"scenario": "ci/approved-push"}}
FINISHED = {"agent": "csv-cleaner", "task": "Clean it", "state": {"scenario": "csv/clean"}}
SAME_ORIGIN = {"Origin": LOCAL}

# -- what is generated -----------------------------------------------------------------------------

ODD_TEXT = st.text(
    st.characters(codec=None, categories=None, exclude_categories=()),  # surrogates, NUL, bidi: all
    max_size=40,
) | st.sampled_from(["", " ", "\x00", "\u202e", "\ud800", "a" * 5000, "invoice-downloader", "ci-fixer"])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | ODD_TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ODD_TEXT, inner, max_size=4),
    max_leaves=12,
)
FIELDS = (
    "agent",
    "task",
    "task_type",
    "state",
    "run_id",
    "answer",
    "segments",
    "by",
    "reason",
    "more_turns",
    "more_seconds",
    "more_tokens",
    "more_cost",
)
AGENTS = st.sampled_from(["invoice-downloader", "ci-fixer", "csv-cleaner"]) | ODD_TEXT
SCENES = st.sampled_from(["invoice/which-one", "ci/approved-push", "csv/clean", "csv/shutdown"]) | VALUES
NEARLY = st.fixed_dictionaries(  # a body close to one each endpoint takes, each field maybe odd
    {},
    optional={
        "agent": AGENTS,
        "task": ODD_TEXT,
        "task_type": ODD_TEXT | VALUES,
        "state": st.fixed_dictionaries({"scenario": SCENES}, optional={"x": VALUES}) | VALUES,
        "run_id": ODD_TEXT | VALUES,
        "answer": ODD_TEXT | VALUES,
        "segments": st.integers(-2, 3) | VALUES,
        "by": ODD_TEXT | VALUES,
        "reason": ODD_TEXT | VALUES,
        "more_turns": st.integers(-2, 10**20) | VALUES,
        "more_seconds": st.floats() | VALUES,
        "more_cost": st.floats() | st.integers() | VALUES,
        "more_tokens": st.integers() | VALUES,
    },
)
BODIES = NEARLY | st.dictionaries(st.sampled_from(FIELDS) | ODD_TEXT, VALUES, max_size=6) | VALUES
DEEP = st.integers(1, 3000).map(lambda n: "[" * n + "]" * n)
CONTENT_TYPES = st.sampled_from(
    [
        None,
        "application/json",
        "application/json; charset=latin-1",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "multipart/form-data",
        "application/json; charset=\x7f",
        "",
    ]
)
LATIN1 = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=60
)
ACTIONS = st.sampled_from(["answer", "approve", "deny", "resume", "bogus", ""])


def raw_json(value: Any) -> bytes:
    """`value` as JSON bytes, lone surrogates and all (escaped, as a hostile client sends them)."""
    return json.dumps(value, ensure_ascii=True).encode()


# -- the service under test ------------------------------------------------------------------------


class Door:
    """A service over one SQLite store with a question, an approval and a finished run in it."""

    def __init__(self, tmp: Path) -> None:
        self.path = tmp / "runs.db"
        self.store = open_store(str(self.path))
        self.runner = Runner(self.store, example_catalog(tmp / "worlds"))
        self.starter = Runner(self.store, example_catalog(tmp / "worlds"))
        service = Service(self.runner, Token(TOKEN), sweep_interval=3600)
        self.api = TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False)
        self.api.__enter__()
        self.ids: dict[str, str] = {}
        self.refill()

    def refill(self) -> None:
        """A run of each kind to aim at (one a request took is replaced by a new one)."""
        for name, start in (("question", QUESTION), ("approval", APPROVAL), ("finished", FINISHED)):
            run_id = self.ids.get(name)
            record = self.store.get(run_id) if run_id else None
            want = RunStatus.FINISHED if name == "finished" else RunStatus.WAITING
            if record is None or record.status is not want:
                self.ids[name] = asyncio.run(self.starter.start(**start)).run_id  # type: ignore[arg-type]

    def fingerprint(self) -> str:
        """Every row of the store, hashed."""
        with sqlite3.connect(self.path) as db:
            return hashlib.sha256("\n".join(db.iterdump()).encode("utf-8", "surrogatepass")).hexdigest()

    def settle(self) -> None:
        """Wait until no run is running (a request that was taken drives its run in the background)."""
        for _ in range(400):
            if not self.store.list_runs(RunStatus.RUNNING, 10):
                return
            time.sleep(0.05)
        raise AssertionError("a run taken by a request did not settle")

    def send(self, method: str, path: str, **kwargs: Any) -> Any:
        """The request, checked against the invariants; the response."""
        self.settle()
        self.refill()
        before = self.fingerprint()
        response = self.api.request(method, path, **kwargs)
        event(f"status {response.status_code}")  # shown by --hypothesis-show-statistics
        refused(response, path)
        if 400 <= response.status_code < 500:
            assert self.fingerprint() == before, f"{method} {path} was refused and changed the store"
        alive = self.api.get("/healthz")
        assert alive.status_code == 200 and alive.text == "ok"
        return response

    def close(self) -> None:
        self.settle()
        self.api.__exit__(None, None, None)
        self.runner.catalog.close()
        self.starter.catalog.close()
        self.store.close()


def refused(response: Any, path: str) -> None:
    """No 500 and no traceback; a refusal names what is wrong."""
    text = response.text
    assert response.status_code != 500, text[:2000]
    assert "Traceback" not in text and 'File "' not in text, text[:2000]
    if response.status_code < 400:
        return
    if path.startswith("/inbox") and response.status_code != 421:  # a foreign host gets no page
        assert "text/html" in response.headers.get("content-type", ""), text[:500]
        assert len(text) > 100
        return
    error = response.json()["error"]
    assert isinstance(error, str) and len(error) > 10, error


@pytest.fixture
def door(tmp_path: Path) -> Iterator[Door]:
    opened = Door(tmp_path)
    yield opened
    opened.close()


def target(door: Door, which: str) -> str:
    """A run's id for a path: one of the door's runs, or a generated id as a client would send it."""
    return door.ids.get(which) or quote(fix(which), safe="")


def fix(text: str) -> str:
    """`text` as a client can encode it in UTF-8 (a lone surrogate cannot be: U+FFFD)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


RUN_IDS = st.sampled_from(["question", "approval", "finished"]) | ODD_TEXT


# -- the JSON API ----------------------------------------------------------------------------------


@FUZZ
@given(body=BODIES, content_type=CONTENT_TYPES)
def test_a_generated_start_is_taken_or_named_and_stores_nothing(
    door: Door, body: Any, content_type: Any
) -> None:
    headers = AUTH | ({"Content-Type": content_type} if content_type is not None else {})
    door.send("POST", "/runs", content=raw_json(body), headers=headers)


@FUZZ
@given(action=ACTIONS, which=RUN_IDS, body=BODIES)
def test_a_generated_reply_is_taken_or_named_and_stores_nothing(
    door: Door, action: str, which: str, body: Any
) -> None:
    door.send("POST", f"/runs/{target(door, which)}/{action}", content=raw_json(body), headers=AUTH)


@FUZZ
@given(
    path=st.sampled_from(["/runs", "/runs/x/answer", "/runs/x/deny", "/runs/x/resume"]),
    raw=st.binary(max_size=200) | DEEP.map(str.encode),
    content_type=CONTENT_TYPES,
)
def test_generated_bytes_are_a_named_400(door: Door, path: str, raw: bytes, content_type: Any) -> None:
    path = path.replace("x", door.ids["question"])
    headers = AUTH | ({"Content-Type": content_type} if content_type is not None else {})
    door.send("POST", path, content=raw, headers=headers)


@FUZZ
@given(
    path=st.sampled_from(["/runs", "/pending", "/inbox", "/inbox/review", "/inbox/review/labelled"]),
    query=st.lists(
        st.tuples(
            st.sampled_from(["limit", "offset", "status", "agent", "task_type", "page"]) | ODD_TEXT,
            ODD_TEXT | st.integers().map(str),
        ),
        max_size=4,
    ),
)
def test_a_generated_query_is_served_or_named(door: Door, path: str, query: list[tuple[str, str]]) -> None:
    door.send("GET", path, params=[(fix(k), fix(v)) for k, v in query])


@FUZZ
@given(
    path=st.sampled_from(
        ["/runs", "/runs/question", "/pending", "/runs/question/answer", "/inbox", "/metrics", "/readyz"]
    ),
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
    headers=st.dictionaries(
        st.sampled_from(
            [
                "Authorization",
                "Host",
                "Origin",
                "Referer",
                "Accept",
                "Cookie",
                "Content-Length",
                "X-Forwarded-Proto",
                "Content-Type",
            ]
        ),
        LATIN1,
        max_size=4,
    ),
)
def test_generated_headers_are_served_or_named(
    door: Door, path: str, method: str, headers: dict[str, str]
) -> None:
    path = path.replace("question", door.ids["question"])
    body = raw_json({"answer": "the first one"}) if method == "POST" else None
    door.send(method, path, content=body, headers={k: v.encode("latin-1") for k, v in headers.items()})


# -- the inbox ---------------------------------------------------------------------------------------

FORM = st.dictionaries(
    st.sampled_from(["answer", "reason", "by", "token", "label", "note", "segments", "next"]) | ODD_TEXT,
    ODD_TEXT,
    max_size=4,
)


def clean(form: dict[str, str]) -> dict[str, str]:
    """A form as a browser can send it: text in UTF-8 (a lone surrogate cannot be encoded)."""
    return {fix(k): fix(v) for k, v in form.items()}


@FUZZ
@given(which=RUN_IDS, action=ACTIONS, form=FORM, signed_in=st.booleans())
def test_a_generated_inbox_form_is_taken_or_shown_back(
    door: Door, which: str, action: str, form: dict[str, str], signed_in: bool
) -> None:
    door.api.cookies.clear()
    if signed_in:
        door.api.cookies.set(COOKIE, Token(TOKEN).cookie_value)
    door.send(
        "POST",
        f"/inbox/{target(door, which)}/{action}",
        data=clean(form),
        headers=SAME_ORIGIN,
        follow_redirects=False,
    )


@FUZZ
@given(
    path=st.sampled_from(
        [
            "/inbox/login",
            "/inbox/logout",
            "/inbox/review/runs/finished/label",
            "/inbox/review/runs/finished/promote",
        ]
    ),
    form=FORM,
    signed_in=st.booleans(),
)
def test_a_generated_sign_in_or_label_form_is_taken_or_shown_back(
    door: Door, path: str, form: dict[str, str], signed_in: bool
) -> None:
    door.api.cookies.clear()
    if signed_in:
        door.api.cookies.set(COOKIE, Token(TOKEN).cookie_value)
    door.send(
        "POST",
        path.replace("finished", door.ids["finished"]),
        data=clean(form),
        headers=SAME_ORIGIN,
        follow_redirects=False,
    )


@FUZZ
@given(which=RUN_IDS, page=st.sampled_from(["", "/case.yaml", "/case.zip"]))
def test_a_generated_review_address_is_served_or_shown_back(door: Door, which: str, page: str) -> None:
    door.send("GET", f"/inbox/review/runs/{target(door, which)}{page}")
