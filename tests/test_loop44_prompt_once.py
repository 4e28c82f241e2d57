"""A reply's prompt connection is made once, however many replies ask for it at once.

`PromptCaps.connection` made its connection (through the client's plugins' `connect_service_client`
hooks) in every caller that found none yet: replies sent at once each ran the hooks (a token fetched, a
connection counted or metrics registered twice) and made a connection, all but one dropped. Now callers
that ask while it is made wait for that one. No server is needed: the connection is lazy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from temporalio.client import Client, ClientConfig, Plugin
from temporalio.service import ConnectConfig, ServiceClient

from agent.temporal.client import PromptCaps


class Counting(Plugin):
    """Counts its hooks; its connection hook takes a while (a token fetched), and fails while `down`."""

    def __init__(self) -> None:
        self.configured = self.hooked = 0
        self.down = False

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        self.configured += 1
        return config

    async def connect_service_client(
        self, config: ConnectConfig, next: Callable[[ConnectConfig], Awaitable[ServiceClient]]
    ) -> ServiceClient:
        self.hooked += 1
        await asyncio.sleep(0.05)
        if self.down:
            raise PermissionError("the token service did not answer")
        return await next(config)


def test_replies_asking_at_once_share_one_connection_made_through_the_hooks_once() -> None:
    async def scenario() -> None:
        plugin = Counting()
        prompt = PromptCaps(await Client.connect("127.0.0.1:1", lazy=True, plugins=[plugin]))
        made = await asyncio.gather(*(prompt.connection() for _ in range(3)))
        assert made[0] is made[1] is made[2] and made[0] is not prompt.client
        assert (plugin.hooked, plugin.configured) == (2, 2)  # the client's, and the prompt one's
        assert await prompt.connection() is made[0] and plugin.hooked == 2

    asyncio.run(scenario())


def test_a_failed_making_fails_every_caller_waiting_on_it_and_the_next_reply_tries_again() -> None:
    async def scenario() -> None:
        plugin = Counting()
        prompt = PromptCaps(await Client.connect("127.0.0.1:1", lazy=True, plugins=[plugin]))
        plugin.down = True
        failed = await asyncio.gather(prompt.connection(), prompt.connection(), return_exceptions=True)
        assert [type(f) for f in failed] == [PermissionError] * 2 and plugin.hooked == 2
        plugin.down = False
        assert isinstance(await prompt.connection(), Client) and plugin.hooked == 3

    asyncio.run(scenario())


def test_a_caller_cancelled_while_waiting_leaves_the_connection_to_the_others() -> None:
    async def scenario() -> None:
        plugin = Counting()
        prompt = PromptCaps(await Client.connect("127.0.0.1:1", lazy=True, plugins=[plugin]))
        first = asyncio.ensure_future(prompt.connection())
        second = asyncio.ensure_future(prompt.connection())
        await asyncio.sleep(0.01)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert isinstance(await second, Client) and plugin.hooked == 2

    asyncio.run(scenario())
