"""probe41d: a reply's prompt connection goes through the client's plugins, as the client's own does.

`PromptCaps` sends a reply's update first on a second connection without retries (a refusal by Temporal's cap
on updates in flight is told at once). It copied the client's connection config, so a plugin's
`connect_service_client` hook (auth headers, TLS, an interceptor or metrics set at connection time) never ran
for it. The second connection is now made through the plugins' hooks, chained as `Client.connect` chains them,
and keeps one attempt a call whatever a plugin sets. Against a real Temporal Server behind a gRPC proxy that
refuses any call without the team's header: the header comes from the plugin's hook, which wraps the config.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest
import temporal_agents
from temporal_server import TemporalServer, serving, temporal_fixture, waiting
from temporalio.client import Client, ClientConfig, Plugin
from temporalio.service import ConnectConfig, RetryConfig, ServiceClient
from test_probe38d_update_caps import question

from agent.result import StopReason
from agent.temporal import TemporalRuns
from agent.temporal.client import ONE_ATTEMPT

pytestmark = pytest.mark.slow

temporal = temporal_fixture()

HEADER, TOKEN = "x-team-token", "team-a"
UPDATE = "/temporal.api.workflowservice.v1.WorkflowService/UpdateWorkflowExecution"


class TeamToken(Plugin):
    """A team's plugin: its connection hook adds the header their proxy requires (and its own retries),
    and counts the connections it made."""

    def __init__(self) -> None:
        self.connections = list[ServiceClient]()

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        return config

    async def connect_service_client(
        self, config: ConnectConfig, next: Callable[[ConnectConfig], Awaitable[ServiceClient]]
    ) -> ServiceClient:
        headers = {**config.rpc_metadata, HEADER: TOKEN}
        retries = RetryConfig(max_retries=5)
        self.connections.append(
            await next(dataclasses.replace(config, rpc_metadata=headers, retry_config=retries))
        )
        return self.connections[-1]


class Proxy(grpc.GenericRpcHandler):
    """Passes every unary call on to the server when it carries the team's header, refuses it otherwise;
    each call's method and header kept."""

    def __init__(self, upstream: grpc.aio.Channel) -> None:
        self.upstream, self.calls = upstream, list[tuple[str, str | None]]()
        self.address = ""  # where it listens, once it does

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = details.method

        async def call(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            sent = [(k, v) for k, v in context.invocation_metadata() or () if k != "user-agent"]
            self.calls.append((method, dict(sent).get(HEADER)))  # type: ignore[arg-type]
            if dict(sent).get(HEADER) != TOKEN:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"no {HEADER}")
            try:
                return await self.upstream.unary_unary(method)(
                    request, metadata=sent, timeout=context.time_remaining()
                )
            except grpc.aio.AioRpcError as exc:
                await context.abort(exc.code(), exc.details() or "", exc.trailing_metadata())
                raise

        return grpc.unary_unary_rpc_method_handler(call)  # type: ignore[arg-type]


@asynccontextmanager
async def proxying(address: str) -> AsyncIterator[Proxy]:
    """A proxy to the server at `address`, listening on a free loopback port."""
    async with grpc.aio.insecure_channel(address) as upstream:
        proxy = Proxy(upstream)
        server = grpc.aio.server()
        server.add_generic_rpc_handlers([proxy])
        proxy.address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
        await server.start()
        try:
            yield proxy
        finally:
            await server.stop(None)


async def answered(runs: TemporalRuns, direct: TemporalRuns, folder: Path, n: int) -> None:
    """A run started and answered through `runs`, waited for on `direct`."""
    run_id = str(await runs.start("counter", f"Count {n}", state=question(folder), wait=False))
    await waiting(direct, run_id)
    result = await asyncio.wait_for(runs.answer(run_id, "3"), 60)
    assert result.reason is StopReason.SUCCESS, result.note


def updates(calls: Sequence[tuple[str, str | None]]) -> list[str | None]:
    return [header for method, header in calls if method == UPDATE]


def test_a_replys_prompt_connection_runs_the_clients_plugin_hooks(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with (
            serving(temporal, temporal_agents.catalog()) as direct,
            proxying(temporal.address) as proxy,
        ):
            plugin = TeamToken()
            client = await Client.connect(proxy.address, plugins=[plugin])
            runs = TemporalRuns(client, task_queue=direct.task_queue)
            assert len(plugin.connections) == 1  # the client's own
            for n in range(2):
                await answered(runs, direct, tmp_path, n)
            assert len(plugin.connections) == 2  # and the replies' one, made once
            once = await runs.prompt.connection()
            assert once.service_client is plugin.connections[1]
            assert once.service_client.config.retry_config == ONE_ATTEMPT  # the plugin's retries not taken
            assert updates(proxy.calls) and set(updates(proxy.calls)) == {TOKEN}
            assert {header for _, header in proxy.calls} == {TOKEN}  # nothing refused: none sent again
            client.rpc_metadata = {HEADER: "rotated"}  # set on the client since: the connection takes it
            assert (await runs.prompt.connection()).rpc_metadata == {HEADER: "rotated"}

    asyncio.run(scenario())


class Failing(Plugin):
    """A plugin whose hook fails after the client's own connection (its auth service went down)."""

    def __init__(self) -> None:
        self.hooked = 0

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        return config

    async def connect_service_client(
        self, config: ConnectConfig, next: Callable[[ConnectConfig], Awaitable[ServiceClient]]
    ) -> ServiceClient:
        self.hooked += 1
        if self.hooked > 1:
            raise PermissionError("the token service did not answer")
        return await next(config)


def test_a_reply_whose_prompt_connection_a_plugin_refuses_is_sent_on_the_clients_own(
    temporal: TemporalServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with serving(temporal, temporal_agents.catalog()) as direct:
            plugin = Failing()
            client = await Client.connect(temporal.address, plugins=[plugin])
            runs = TemporalRuns(client, task_queue=direct.task_queue)
            await answered(runs, direct, tmp_path, 0)
            assert plugin.hooked == 2  # tried, refused; the reply went on the client's connection

    with caplog.at_level(logging.WARNING, logger="endstate.temporal"):
        asyncio.run(scenario())
    said = [r.getMessage() for r in caplog.records if "prompt one failed" in r.getMessage()]
    assert said == [
        "a reply goes on the client's connection, with retries: its prompt one failed: "
        "the token service did not answer"
    ], said


def test_plugins_hooks_chain_as_client_connect_chains_them(temporal: TemporalServer) -> None:
    """The first plugin wraps the others, as in `Client.connect`: each sees what the ones before it set;
    what they set for the second connection (a header of its own) is kept."""
    seen = list[tuple[str, dict[str, str | bytes]]]()

    class Tag(Plugin):
        def __init__(self, tag: str) -> None:
            self.tag = tag

        def configure_client(self, config: ClientConfig) -> ClientConfig:
            return config

        async def connect_service_client(
            self, config: ConnectConfig, next: Callable[[ConnectConfig], Awaitable[ServiceClient]]
        ) -> ServiceClient:
            seen.append((self.tag, dict(config.rpc_metadata)))
            tagged = {**config.rpc_metadata, self.tag: str(sum(tag == self.tag for tag, _ in seen))}
            return await next(dataclasses.replace(config, rpc_metadata=tagged))

    async def scenario() -> None:
        client = await Client.connect(temporal.address, plugins=[Tag("x-first"), Tag("x-second")])
        prompt = TemporalRuns(client).prompt
        once = await prompt.connection()
        assert [(tag, headers.get("x-first")) for tag, headers in seen] == [
            ("x-first", None),
            ("x-second", "1"),
            ("x-first", "1"),  # the client's config, as the hooks left it
            ("x-second", "2"),
        ]
        assert {"x-first": "1", "x-second": "1"}.items() <= client.rpc_metadata.items()
        assert {"x-first": "2", "x-second": "2"}.items() <= once.rpc_metadata.items()
        assert (await prompt.connection()).rpc_metadata == once.rpc_metadata  # not the client's: kept

    asyncio.run(scenario())
