"""The model table: every SDK model id known, prices with cache parts, user overrides, unknown prices."""

from __future__ import annotations

import dataclasses
import datetime
import logging
import typing
from pathlib import Path

import anthropic
import pytest
from anthropic._data import DEPRECATED_MODELS

from agent import Agent, Budget, ConfigError, Price, PriceTable
from agent.models import ModelReply, ScriptedModel
from agent.models.catalog import DEFAULT_MODEL, ModelInfo, ModelTable, default_model

MTOK = 1_000_000
# a model with no published price yet, as the table holds one until Anthropic lists it
UNPRICED = ModelTable.builtin().with_rows(
    {
        "claude-next-1": {
            "price": "unknown",
            "reason": "not on Anthropic's pricing page yet",
            "context_window": 200_000,
        }
    }
)


def sdk_model_ids() -> list[str]:
    """The ids the installed SDK lists in its `Model` type (a Literal inside a Union with str)."""
    (literal,) = [
        arg for arg in typing.get_args(anthropic.types.Model) if typing.get_origin(arg) is typing.Literal
    ]
    return list(typing.get_args(literal))


def reply(
    input_tokens: int,
    output_tokens: int = 0,
    *,
    read: int = 0,
    write: int = 0,
    write_1h: int = 0,
) -> ModelReply:
    return ModelReply(
        [],
        input_tokens,
        output_tokens,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=write,
        cache_creation_1h_input_tokens=write_1h,
    )


# -- the table is complete --------------------------------------------------------


def test_the_sdk_lists_the_models_this_test_walks() -> None:
    ids = sdk_model_ids()
    assert len(ids) >= 20 and "claude-sonnet-5-5" in ids


@pytest.mark.parametrize("model", sdk_model_ids())
def test_every_sdk_model_is_priced_or_marked_unknown_with_a_reason(model: str) -> None:
    info = ModelTable.builtin().get(model)
    assert info is not None, f"{model} is not in agent/models/models.toml: add a row (with source and date)"
    assert info.source and isinstance(info.checked, datetime.date), f"{model}: a row needs source and checked"
    if info.price is None:
        assert len(info.unknown_price_reason) > 20, f"{model}: price unknown without a reason"
    else:
        assert info.price.input_per_mtok > 0 and info.price.output_per_mtok > 0
        assert info.context_window and info.max_output, f"{model}: priced but no context window or max output"


@pytest.mark.parametrize("model", sorted(DEPRECATED_MODELS))
def test_models_the_sdk_deprecates_are_marked(model: str) -> None:
    info = ModelTable.builtin().get(model)
    assert info is not None and info.status in ("deprecated", "retired")
    assert info.retires is not None


def test_the_default_model_is_current_and_priced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENDSTATE_MODEL", raising=False)
    info = ModelTable.builtin().get(default_model())
    assert default_model() == DEFAULT_MODEL
    assert info is not None and info.status == "active" and info.price is not None
    assert DEFAULT_MODEL in sdk_model_ids() and DEFAULT_MODEL not in DEPRECATED_MODELS
    monkeypatch.setenv("ENDSTATE_MODEL", "claude-opus-5-5")
    assert default_model() == "claude-opus-5-5"


def test_dated_ids_and_aliases_share_their_family_row() -> None:
    table = ModelTable.builtin()
    assert table.get("claude-sonnet-4-5-20250929") is table.get("claude-sonnet-4-5")
    assert table.get("claude-opus-4-0") is table.get("claude-opus-4")
    assert table.get("claude-sonnet-5-5-20261001") is table.get("claude-sonnet-5-5")
    assert table.get("claude-sonnet-5-5x") is None and "claude-nothing" not in table


# -- prices with cache parts ----------------------------------------------------------


def test_cost_of_prices_each_kind_of_input_token() -> None:
    # Sonnet 4.6: $3 in, $15 out; cache read 0.1x, 5-minute write 1.25x, 1-hour write 2x.
    call = reply(10_000, 500, read=6_000, write=3_000)
    expected = (1_000 * 3 + 3_000 * 3.75 + 6_000 * 0.30 + 500 * 15) / MTOK
    assert PriceTable().cost_of("claude-sonnet-4-6", call) == pytest.approx(expected)
    one_hour = reply(10_000, 500, read=6_000, write=3_000, write_1h=3_000)
    expected_1h = (1_000 * 3 + 3_000 * 6.0 + 6_000 * 0.30 + 500 * 15) / MTOK
    assert PriceTable().cost_of("claude-sonnet-4-6", one_hour) == pytest.approx(expected_1h)


def test_cache_reads_cost_a_tenth_not_the_full_input_price() -> None:
    cached = reply(100_000, read=100_000)
    uncached = reply(100_000)
    prices = PriceTable()
    assert prices.cost_of("claude-opus-4-8", uncached) == pytest.approx(0.5)
    assert prices.cost_of("claude-opus-4-8", cached) == pytest.approx(0.05)


def test_a_row_with_its_own_cache_read_price_uses_it() -> None:
    # Claude Opus 5.5 reads the cache at $0.20 / MTok, not 0.1 x $4.
    assert PriceTable().cost_of("claude-opus-5-5", reply(MTOK, read=MTOK)) == pytest.approx(0.20)


def test_a_long_prompt_is_priced_at_the_long_prompt_rate_output_included() -> None:
    prices = PriceTable()
    short = reply(100_000, 1_000)
    long = reply(100_001, 1_000, read=100_001)
    assert prices.cost_of("claude-haiku-5-5", short) == pytest.approx((100_000 * 0.10 + 1_000 * 0.50) / MTOK)
    assert prices.cost_of("claude-haiku-5-5", long) == pytest.approx((100_001 * 0.05 + 1_000 * 2.50) / MTOK)


def test_a_plain_reply_is_priced_by_the_same_rules_as_one_with_extra_fields() -> None:
    # a reply with no `extra` takes a short path: a long prompt, web searches, a fallback's model and
    # an unknown price are priced there as they are with an `extra` that changes nothing
    prices = PriceTable({"m": Price(1.0, 5.0, long_prompt_above=10, long_prompt=Price(2.0, 7.0))})
    for plain in (
        ModelReply([], 11, 3, server_tool_use={"web_search": 2}),
        ModelReply([], 10, 3),
        ModelReply([], 11, 3, model="claude-haiku-5-5"),
        ModelReply([], 11, 3, model="nobody"),
    ):
        with_extra = dataclasses.replace(plain, extra={"other": 1})
        assert prices.usage_of("m", plain) == prices.usage_of("m", with_extra)
    assert prices.usage_of("m", ModelReply([], 11, 3, server_tool_use={"web_search": 2})).cost_usd == (
        pytest.approx((11 * 2.0 + 3 * 7.0) / MTOK + 0.02)
    )
    assert prices.usage_of("nobody", ModelReply([], 11, 3)).cost_usd is None


def test_overrides_in_code_win_over_the_table() -> None:
    prices = PriceTable({"claude-sonnet-5-5": Price(1.0, 1.0, cache_read_per_mtok=0.0)})
    assert prices.cost_of("claude-sonnet-5-5", reply(MTOK, MTOK, read=MTOK)) == pytest.approx(1.0)
    assert prices.cost_of("claude-sonnet-5-5-20261001", reply(MTOK)) == pytest.approx(1.0)


# -- unknown prices ---------------------------------------------------------------------


def test_an_unknown_price_is_none_with_one_warning_and_a_count_every_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []
    prices = PriceTable(on_unknown=seen.append, models=UNPRICED)
    with caplog.at_level(logging.WARNING, logger="endstate"):
        costs = [prices.cost_of("claude-next-1", reply(1_000, 10)) for _ in range(3)]
    assert costs == [None, None, None]
    assert seen == ["claude-next-1"] * 3
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "claude-next-1" in warnings[0] and "unknown" in warnings[0]
    assert "pricing" in warnings[0]  # the table's reason is in the warning


def test_a_model_missing_from_the_table_is_unknown_too() -> None:
    prices = PriceTable()
    assert prices.cost_of("gpt-9", reply(10, 10)) is None
    assert prices.unknown_reason("gpt-9") == "it is not in the model table"


def test_a_cost_budget_on_a_model_with_no_known_price_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"no price for model 'claude-next-1'.*ENDSTATE_MODELS"):
        PriceTable(models=UNPRICED).require("claude-next-1", "coder")
    path = tmp_path / "models.toml"
    path.write_text('[models."claude-next-1"]\nprice = "unknown"\nreason = "not out yet"\n')
    monkeypatch.setenv("ENDSTATE_MODELS", str(path))
    with pytest.raises(ConfigError, match="has a cost budget but no price for model 'claude-next-1'"):
        Agent("coder", ScriptedModel(name="claude-next-1"), budget=Budget(max_cost_usd=1.0))
    PriceTable().require("claude-fable-5-1", "coder")  # priced: no error


def test_fable_and_mythos_5_2_are_priced_as_anthropic_lists_them() -> None:
    """$8 / $40 (Anthropic's models overview), cache reads $0.20, cache writes by the rule."""
    prices = PriceTable()
    for model in ("claude-fable-5-2", "claude-mythos-5-2"):
        assert prices.cost_of(model, reply(MTOK, MTOK)) == pytest.approx(48.0)
        assert prices.cost_of(model, reply(0, 0, read=MTOK)) == pytest.approx(0.20)
        assert prices.cost_of(model, reply(0, 0, write=MTOK)) == pytest.approx(10.0)
        assert prices.cost_of(model, reply(0, 0, write=MTOK, write_1h=MTOK)) == pytest.approx(16.0)


# -- the user's own table --------------------------------------------------------------------


def test_endstate_models_file_overrides_and_extends_the_table(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        """
[models."claude-sonnet-5-5"]
context_window = 500_000
max_output = 64_000
input = 1.5
output = 7.5
source = "our contract"
checked = 2026-11-01

[models."local-llama"]
context_window = 32_000
max_output = 4_000
input = 0.0
output = 0.0
source = "self-hosted"
checked = 2026-11-30

[models."claude-fable-5-2"]
input = 12.0
output = 60.0
source = "our contract"
"""
    )
    table = ModelTable.load({"ENDSTATE_MODELS": str(path)})
    sonnet = table.get("claude-sonnet-5-5")
    assert sonnet is not None and sonnet.context_window == 500_000 and sonnet.source == "our contract"
    assert table.get("local-llama") is not None
    prices = PriceTable(models=table)
    assert prices.cost_of("claude-fable-5-2", reply(MTOK)) == pytest.approx(12.0)
    assert prices.cost_of("local-llama", reply(MTOK, MTOK)) == 0.0
    assert table.get("claude-opus-5-5") == ModelTable.builtin().get("claude-opus-5-5")  # the rest stays


def test_agents_read_endstate_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "models.toml"
    path.write_text('[models."claude-fable-5-2"]\ninput = 12.0\noutput = 60.0\n')
    monkeypatch.setenv("ENDSTATE_MODELS", str(path))
    agent = Agent("coder", ScriptedModel(name="claude-fable-5-2"), budget=Budget(max_cost_usd=1.0))
    assert agent.prices.knows("claude-fable-5-2")


def test_rows_added_in_code() -> None:
    table = ModelTable.builtin().with_rows(
        {
            "my-model": {"input": 1.0, "output": 2.0, "context_window": 8_000},
            "other": ModelInfo("ignored", context_window=4_000, price=Price(0.5, 0.5)),
        }
    )
    my_model, other = table.get("my-model"), table.get("other")
    assert my_model is not None and my_model.price == Price(1.0, 2.0) and my_model.context_window == 8_000
    assert other is not None and other.id == "other"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[models."m"]\ninput = 1.0\n', "give input = and output ="),
        ('[models."m"]\nprice = "unknown"\n', "needs a reason"),
        ('[models."m"]\nprice = 3\n', 'price may only be "unknown"'),
        ('[models."m"]\ninput = -1.0\noutput = 1.0\n', "input must be a number >= 0"),
        ('[models."m"]\ninput = 1.0\noutput = 1.0\ncontext = 5\n', "unknown keys \\['context'\\]"),
        ('[models."m"]\ninput = 1.0\noutput = 1.0\nstatus = "gone"\n', "status must be one of"),
        ('[models."m"]\ninput = 1.0\noutput = 1.0\nchecked = "yesterday"\n', "checked must be a TOML date"),
        (
            '[models."m"]\ninput = 1.0\noutput = 1.0\ncontext_window = 0\n',
            "context_window must be a positive",
        ),
        ('[models."m"]\ninput = 1.0\noutput = 1.0\nfast = { input = 6.0 }\n', "fast must be a table"),
        (
            '[models."m"]\ninput = 1.0\noutput = 1.0\nfast = { input = 6.0, output = 6.0, speed = 2 }\n',
            "fast: unknown keys \\['speed'\\]",
        ),
        (
            '[models."m"]\ninput = 1.0\noutput = 1.0\nthinking = "sometimes"\n',
            'thinking must be "always" .* or "default"',
        ),
        ("models = 3\n", "expected a \\[models"),
        ("[models\n", "not valid TOML"),
        # NaN and infinity were let through to Price, whose error named neither the file nor the row
        ('[models."m"]\ninput = nan\noutput = 1.0\n', "bad.toml: models.'m': input must be a number >= 0"),
        ('[models."m"]\ninput = 1.0\noutput = inf\n', "bad.toml: models.'m': output must be a number >= 0"),
        (  # `above` was read with int(): a ValueError traceback
            '[models."m"]\ninput = 1.0\noutput = 1.0\nlong_prompt = { above = "lots", input = 2.0 }\n',
            "long_prompt must be a table with above = <tokens>",
        ),
        (
            '[models."m"]\ninput = 1.0\noutput = 1.0\nlong_prompt = { above = -5, input = 2.0 }\n',
            "long_prompt must be a table with above = <tokens>",
        ),
    ],
)
def test_a_bad_models_file_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        ModelTable.load({"ENDSTATE_MODELS": str(path)})


def test_a_models_file_that_is_not_utf8_is_named_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_bytes(b'[models."m"]\nnote = "caf\xe9"\n')  # Latin-1, as an old editor saves it
    with pytest.raises(ConfigError, match=r"models.toml' \(ENDSTATE_MODELS\) is not UTF-8 text"):
        ModelTable.load({"ENDSTATE_MODELS": str(path)})


def test_a_missing_models_file_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read the model table .*ENDSTATE_MODELS"):
        ModelTable.load({"ENDSTATE_MODELS": str(tmp_path / "nope.toml")})


def test_a_deprecated_row_reads_as_retired_from_its_retirement_date() -> None:
    today = datetime.date.today()
    rows = {
        "gone": {"input": 1.0, "output": 5.0, "status": "deprecated", "retires": today},
        "going": {
            "input": 1.0,
            "output": 5.0,
            "status": "deprecated",
            "retires": today + datetime.timedelta(1),
        },
    }
    table = ModelTable({}).with_rows(rows)
    assert table.get("gone").status == "retired"  # type: ignore[union-attr]
    assert table.get("going").status == "deprecated"  # type: ignore[union-attr]
