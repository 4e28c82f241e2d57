"""The usage's `service_tier` says which tier served a call, and the tiers cost differently.

Priority Tier is sold as a capacity commitment under a contract (Anthropic's service-tiers page: its
usage draws the commitment down; no price per token is published), so a call it served costs unknown,
never the standard list price, unless a price is given for it (`Price(priority=Price(...))`). The
batch tier is published at 50% of the standard price, input, output and cache alike."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, iteration, message, tool_use

from agent import Agent, PriceTable, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel
from agent.models.price import Price

MODEL = "claude-haiku-4-5"  # $1 input, $5 output per million tokens
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})


def run(tier: str | None, prices: PriceTable | None = None, **usage: Any) -> Any:
    said = {"service_tier": tier} if tier else {}
    reply = message(DONE, input_tokens=1_000, output_tokens=100, usage=said | usage)
    with MessagesAPI(reply) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        agent = Agent("tiers", model, retry=FAST, **({"prices": prices} if prices else {}))
        result = agent.run("Do it.")
    assert result.reason is StopReason.SUCCESS, result.note
    return result


def test_a_standard_tier_call_costs_the_list_price() -> None:
    assert run("standard").cost_usd == pytest.approx((1_000 * 1 + 100 * 5) / 1e6)


def test_a_priority_tier_call_costs_unknown_not_the_list_price() -> None:
    assert run("priority").cost_usd is None


def test_a_priority_tier_call_costs_the_price_given_for_it() -> None:
    prices = PriceTable({MODEL: Price(1.0, 5.0, priority=Price(2.0, 8.0))})
    assert run("priority", prices).cost_usd == pytest.approx((1_000 * 2 + 100 * 8) / 1e6)


def test_a_batch_tier_call_costs_half_the_list_price_cache_included() -> None:
    cache = {"cache_read_input_tokens": 2_000, "cache_creation_input_tokens": 400}
    full = (1_000 * 1 + 2_000 * 0.1 + 400 * 1.25 + 100 * 5) / 1e6
    assert run("standard", **cache).cost_usd == pytest.approx(full)
    assert run("batch", **cache).cost_usd == pytest.approx(full / 2)


def test_a_model_table_row_gives_the_priority_tier_price(tmp_path: Any) -> None:
    from agent.models.catalog import ModelTable

    path = tmp_path / "models.toml"
    path.write_text(
        f'[models."{MODEL}"]\ninput = 1.0\noutput = 5.0\npriority = {{ input = 3.0, output = 9.0 }}\n'
    )
    prices = PriceTable(models=ModelTable.load({"ENDSTATE_MODELS": str(path)}))
    assert run("priority", prices).cost_usd == pytest.approx((1_000 * 3 + 100 * 9) / 1e6)
    assert run("standard", prices).cost_usd == pytest.approx((1_000 * 1 + 100 * 5) / 1e6)


@pytest.mark.parametrize(("tier", "share"), [("priority", None), ("batch", 0.5), ("standard", 1.0)])
def test_the_tier_holds_for_each_part_of_a_call_billed_by_model_or_apart(
    tier: str, share: float | None
) -> None:
    # A server-side fallback (parts by model), and a compaction within the call (billed apart).
    fell_back = [
        iteration("message", 500, 50, model="claude-opus-4-6"),
        iteration("fallback_message", 500, 50, model=MODEL),
    ]
    compacted = [iteration("compaction", 500, 50, model=MODEL), iteration("message", 500, 50, model=MODEL)]
    for parts, full in (
        (fell_back, (500 * 5 + 50 * 25 + 500 * 1 + 50 * 5) / 1e6),
        (compacted, (1_000 * 1 + 100 * 5 + 500 * 1 + 50 * 5) / 1e6),
    ):
        cost = run(tier, iterations=parts).cost_usd
        assert cost is None if share is None else cost == pytest.approx(full * share)
