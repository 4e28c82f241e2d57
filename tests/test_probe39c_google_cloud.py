"""probe39c: Claude Models on Google Cloud (Anthropic managed), the SDK's `AsyncAnthropicGoogleCloud`, is
the Claude API that Anthropic runs, reached through a Google Cloud project (Anthropic's docs: "Claude Models
on Google Cloud"): its requests get the Claude API's limits (10 MB of base64 an image, 32 MB a request),
not Vertex AI's (5 MB, 20 MB), which every `*.googleapis.com` host got. The real SDK client, with its own
gateway URL, sends to the local Messages API server through a transport standing for Google's gateway."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx2
from messages_api import MessagesAPI, message, tool_use
from test_anthropic_media_limits import DONE, MB, MODEL, photo, results

from agent import Agent, Budget, RunResult, StopReason
from agent.models.anthropic import AnthropicModel, bills_by_own_rules
from agent.models.claude_limits import CLAUDE_API, PARTNER_PLATFORM, limits_for


class Gateway(httpx2.AsyncClient):
    """The SDK client's HTTP client, standing for Google's gateway: what goes to claude.googleapis.com
    reaches `api` (its `/v1/messages`), authenticated as the gateway does."""

    def __init__(self, api: MessagesAPI) -> None:
        super().__init__()
        self.api, self.hosts = api, list[str]()

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        self.hosts.append(request.url.host)
        path = "/v1/" + str(request.url.path).split("/invoke/v1/", 1)[1]
        headers = {**request.headers, "x-api-key": "from-the-gateway"}
        url = self.api.url + path
        forwarded = httpx2.Request(request.method, url, headers=headers, content=request.content)
        return await super().send(forwarded, **kwargs)


def google_cloud(api: MessagesAPI, gateway: Gateway) -> Any:
    return anthropic.AsyncAnthropicGoogleCloud(
        project="acme",
        location="global",
        workspace_id="wrkspc_1",
        token_provider=lambda: "ya29.token",
        http_client=gateway,
        max_retries=0,
    )


def test_the_google_cloud_client_gets_the_claude_apis_limits_and_billing() -> None:
    async def check() -> None:
        with MessagesAPI() as api:
            async with google_cloud(api, Gateway(api)) as client:
                assert "claude.googleapis.com" in str(client.base_url)
                assert (
                    limits_for(client) == CLAUDE_API
                )  # was PARTNER_PLATFORM (5 MB an image, 20 MB a request)
                assert not bills_by_own_rules(client)  # the Claude API's refusal rule holds
        async with anthropic.AsyncAnthropicVertex(
            region="us-east5", project_id="acme", access_token="t"
        ) as vertex:
            assert limits_for(vertex) == PARTNER_PLATFORM  # Vertex AI (Google managed) keeps its own
        url = "https://aiplatform.googleapis.com/v1"
        async with anthropic.AsyncAnthropic(api_key="k", base_url=url) as on_vertex:
            assert limits_for(on_vertex) == PARTNER_PLATFORM

    asyncio.run(check())


def test_a_7_mb_image_goes_through_google_cloud_as_it_is() -> None:
    async def run(api: MessagesAPI, gateway: Gateway) -> RunResult:
        async with google_cloud(api, gateway) as client:
            model = AnthropicModel(MODEL, client=client)
            budget = Budget(max_turns=3, max_seconds=None)
            return await Agent("viewer", model, tools=[photo], budget=budget).arun("Look at the photo.")

    with MessagesAPI(message(tool_use("photo", {"mb": 7})), message(DONE)) as api:
        gateway = Gateway(api)
        result = asyncio.run(run(api, gateway))
    assert result.reason is StopReason.SUCCESS, result.note
    assert set(gateway.hosts) == {"claude.googleapis.com"}
    ((image,),) = results(api.bodies[-1])
    assert image["type"] == "image" and len(image["source"]["data"]) > 7 * MB  # was a note: "over the 5 MB"
