"""Wrong tokens sent to the inbox's sign-in at once are throttled as those sent one by one.

Before, sign-in asked the throttle before reading the form and counted the wrong token after: every
request that arrived while the others' bodies were still being read passed the check, so a guesser
sending many sign-ins at once had every token checked, past any `--token-failures`. The API's check
has no wait in it (its token is in a header). Deterministic: every body is held until all requests
have passed the point where the old check stood."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.service.throttle import Throttle

TOKEN = "t" * 32
LIMIT = 3
AT_ONCE = 12


async def _sign_ins(app: object) -> list[int]:
    """`AT_ONCE` sign-ins with wrong tokens from one address, their bodies sent once all have begun."""
    waiting, go = 0, asyncio.Event()

    async def body(i: int) -> AsyncIterator[bytes]:
        nonlocal waiting
        waiting += 1
        if waiting == AT_ONCE:
            go.set()
        await asyncio.wait_for(go.wait(), 60)
        yield f"token=wrong-token-{i:04d}-0123456789abcdef".encode()

    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000", timeout=60) as client:
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        sent = [client.post("/inbox/login", content=body(i), headers=headers) for i in range(AT_ONCE)]
        return [r.status_code for r in await asyncio.gather(*sent)]


def test_sign_ins_sent_at_once_get_no_more_tokens_checked_than_the_limit(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    service = Service(runner, Token(TOKEN), sweep_interval=3600, throttle=Throttle(LIMIT, 600))
    try:
        statuses = asyncio.run(_sign_ins(create_app(service)))
    finally:
        runner.catalog.close()
        store.close()
    assert sorted(statuses) == [401] * LIMIT + [429] * (AT_ONCE - LIMIT), statuses
