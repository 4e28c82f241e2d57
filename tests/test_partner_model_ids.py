"""Claude on Amazon Bedrock and Vertex AI: a partner id is the same model as its Claude API id (the
same context window, output and thinking rules), priced as the Claude API only on a global endpoint."""

from __future__ import annotations

import asyncio

import anthropic
import pytest
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, ConfigError, Price, PriceTable, RunResult
from agent.models import ModelReply, ScriptedModel
from agent.models.anthropic import AnthropicModel
from agent.models.catalog import ModelTable

TABLE = ModelTable.builtin()
MTOK = 1_000_000

BEDROCK_REGIONAL = [
    "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "us-gov.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
]
VERTEX_REGIONAL = [
    "claude-sonnet-4-5@20250929",
    "publishers/anthropic/models/claude-sonnet-4-5@20250929",
    "projects/acme/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5",
]
GLOBAL = [
    "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "projects/acme/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929",
]


@pytest.mark.parametrize("model", BEDROCK_REGIONAL + VERTEX_REGIONAL + GLOBAL)
def test_a_partner_id_has_its_claude_models_limits(model: str) -> None:
    row, claude = TABLE.get(model), TABLE.get("claude-sonnet-4-5")
    assert row is not None and claude is not None and model in TABLE
    assert row.id == model
    assert (row.context_window, row.max_output, row.thinking, row.status) == (
        claude.context_window,
        claude.max_output,
        claude.thinking,
        claude.status,
    )


@pytest.mark.parametrize(
    "model", ["anthropic.claude-opus-4-6-v1", "claude-opus-4-6@latest", "jp.anthropic.claude-opus-4-6-v1"]
)
def test_an_undated_partner_id_takes_its_familys_row(model: str) -> None:
    row = TABLE.get(model)
    assert row is not None and row.context_window == TABLE.get("claude-opus-4-6").context_window  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "model",
    [
        "anthropic.claude-nothing-v1:0",  # no such Claude model
        "meta.llama3-70b-instruct-v1:0",  # another vendor on Bedrock
        "claude-sonnet-4-5@2025",  # no date
        "us.anthropic.titan",
        "claude-nothing",
    ],
)
def test_what_is_no_known_claude_model_has_no_row(model: str) -> None:
    assert TABLE.get(model) is None


def test_the_adapter_knows_a_partner_models_window_and_that_it_always_thinks() -> None:
    bedrock = AnthropicModel("us.anthropic.claude-opus-4-6-v1", api_key="k", base_url="http://127.0.0.1:9")
    assert bedrock.context_window == TABLE.get("claude-opus-4-6").context_window  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="always thinks"):
        AnthropicModel("claude-fable-5-1@latest", api_key="k", tool_choice={"type": "any"})


def reply(model: str = "claude-sonnet-4-5-20250929") -> ModelReply:
    return ModelReply([], 10_000, 1_000, "end_turn", model)


@pytest.mark.parametrize("model", GLOBAL)
def test_a_global_endpoint_costs_the_claude_api_price(model: str) -> None:
    assert PriceTable().cost_of(model, reply()) == pytest.approx((10_000 * 3 + 1_000 * 15) / MTOK)


@pytest.mark.parametrize("model", BEDROCK_REGIONAL + VERTEX_REGIONAL)
def test_a_regional_partner_calls_cost_is_unknown_even_when_the_reply_names_the_claude_id(
    model: str,
) -> None:
    # The platforms charge regional endpoints above the list price: priced as the Claude API (the
    # model the reply names), the run's cost and its budget would be short by that much, silently.
    prices = PriceTable()
    assert prices.cost_of(model, reply()) is None
    assert prices.cost_of(model, reply(model)) is None
    platform = "Amazon Bedrock" if "anthropic." in model else "Vertex AI"
    assert platform in prices.unknown_reason(model)


def test_a_price_given_for_a_regional_partner_id_is_its_price() -> None:
    model = "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"
    prices = PriceTable({model: Price(3.3, 16.5)})
    assert prices.cost_of(model, reply()) == pytest.approx((10_000 * 3.3 + 1_000 * 16.5) / MTOK)


def test_a_cost_budget_on_a_regional_partner_id_says_how_to_price_it() -> None:
    model = ScriptedModel([], name="us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    with pytest.raises(ConfigError, match=r"Amazon Bedrock prices .* pass prices=PriceTable"):
        Agent("a", model, budget=Budget(max_cost_usd=1.0))


def test_a_partner_id_answered_by_another_model_costs_unknown_as_the_partner_id_does() -> None:
    # A reply naming another model is priced at the dearer of the two prices (`agent.prices`): the
    # regional partner id's is unknown, so the call's is too, never the cheaper model's it names.
    cost = PriceTable().cost_of("us.anthropic.claude-sonnet-4-5-20250929-v1:0", reply("claude-haiku-4-5"))
    assert cost is None


def test_a_run_on_vertex_ai_through_the_real_sdk_counts_its_tokens_and_says_its_cost_is_unknown() -> None:
    # The SDK's Vertex AI client puts the model id in the URL and no key header; the reply names the
    # Claude API id, as Vertex AI's does. Tokens are counted, the cost is unknown (not the list price).
    vertex_id = "claude-sonnet-4-5@20250929"
    reply = message(tool_use("finish", {"kind": "done", "note": "ok"}), model="claude-sonnet-4-5-20250929")

    async def run(url: str) -> tuple[AnthropicModel, RunResult]:
        async with anthropic.AsyncAnthropicVertex(
            region="us-east5", project_id="acme", access_token="t", base_url=url
        ) as client:
            model = AnthropicModel(vertex_id, client=client)
            return model, await Agent("v", model, budget=Budget(max_turns=3, max_seconds=30)).arun("go")

    with MessagesAPI(reply, validate=False) as api:
        model, result = asyncio.run(run(api.url))
        (sent,) = api.requests
    assert sent.path.endswith(
        f"/publishers/anthropic/models/{vertex_id}:streamRawPredict"
    ) or sent.path.endswith(f"/publishers/anthropic/models/{vertex_id}:rawPredict"), sent.path
    assert result.reason == "success" and result.input_tokens == 10 and result.output_tokens == 5
    assert result.cost_usd is None
    assert model.context_window == TABLE.get("claude-sonnet-4-5").context_window  # type: ignore[union-attr]


def _vertex_run(region: str, url: str, **agent: object) -> tuple[AnthropicModel, RunResult]:
    async def run() -> tuple[AnthropicModel, RunResult]:
        async with anthropic.AsyncAnthropicVertex(
            region=region, project_id="acme", access_token="t", base_url=url
        ) as client:
            model = AnthropicModel("claude-sonnet-4-5@20250929", client=client)
            return model, await Agent("v", model, **agent).arun("go")  # type: ignore[arg-type]

    return asyncio.run(run())


def test_a_vertex_client_in_the_global_region_is_priced_as_the_claude_api() -> None:
    # The id names no endpoint, but the client does: `global` is Vertex AI's global endpoint, which
    # the Claude API's list price applies to (a regional one costs more: unknown, as above).
    reply = message(tool_use("finish", {"kind": "done", "note": "ok"}), model="claude-sonnet-4-5-20250929")
    budget = Budget(max_turns=3, max_seconds=30, max_cost_usd=1.0)  # a cost budget is now allowed
    with MessagesAPI(reply, validate=False) as api:
        model, result = _vertex_run("global", api.url, budget=budget)
        (sent,) = api.requests
    assert "/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:" in sent.path
    assert model.name == "claude-sonnet-4-5@20250929"  # the labels keep the name the user gave
    assert result.reason == "success"
    assert result.cost_usd == pytest.approx((10 * 3 + 5 * 15) / MTOK)


def test_a_vertex_client_in_a_region_still_refuses_a_cost_budget_and_a_given_price_wins() -> None:
    model = AnthropicModel(
        "claude-sonnet-4-5@20250929",
        client=anthropic.AsyncAnthropicVertex(region="us-east5", project_id="acme", access_token="t"),
    )
    with pytest.raises(ConfigError, match="Vertex AI prices"):
        Agent("a", model, budget=Budget(max_cost_usd=1.0))
    global_model = AnthropicModel(
        "claude-sonnet-4-5@20250929",
        client=anthropic.AsyncAnthropicVertex(region="global", project_id="acme", access_token="t"),
    )
    given = PriceTable({"claude-sonnet-4-5@20250929": Price(9, 9)})
    agent = Agent("a", global_model, prices=given, budget=Budget(max_cost_usd=1.0))
    assert agent.prices.price("claude-sonnet-4-5@20250929") == Price(9, 9)
    assert given.price("claude-sonnet-4-5@20250929") == Price(9, 9)
    assert PriceTable().price("claude-sonnet-4-5@20250929") is None  # the user's table is not changed
