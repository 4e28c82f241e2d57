"""The model table's thinking rules against Anthropic's pages (checked 2026-12-03): a model whose row
leaves them out is sent what the API refuses with a 400, and the run ends `error` at its first call,
instead of a `ConfigError` when the agent is built.

- Claude Fable 5 and Mythos 5: "Both thinking: {type: "disabled"} and manual extended thinking
  (thinking: {type: "enabled", budget_tokens: N}) return a 400 error"; adaptive thinking always on
  (https://platform.claude.com/docs/en/models/fable-5/migration-guide).
- Claude Mythos 5.1, as Fable 5.1: the same, and "Forcing a tool call with {type: "any"} or {type:
  "tool", ...} returns a 400 error" (https://platform.claude.com/docs/en/models/fable-5-1/migration-guide).
- Claude Sonnet 5: adaptive thinking on by default, manual extended thinking returns 400
  (https://platform.claude.com/docs/zh-CN/models/sonnet-5/migration-guide).
- Claude Haiku 5.5: thinks by default (responses may begin with thinking blocks, thinking tokens count
  toward max_tokens), manual extended thinking returns an error
  (https://platform.claude.com/docs/en/models/haiku-5-5/whats-new-haiku-5-5).
"""

from __future__ import annotations

import asyncio

import pytest
from messages_api import MessagesAPI, message, text

from agent.errors import ConfigError
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelRequest
from agent.models.catalog import ModelTable

KEY = "sk-test"
FORCED = {"type": "tool", "name": "lookup"}
BUDGET = {"type": "enabled", "budget_tokens": 4096}


@pytest.mark.parametrize("model", ["claude-fable-5", "claude-mythos-5", "claude-mythos-5-1"])
def test_the_models_that_always_think_refuse_thinking_off_and_a_forced_call(model: str) -> None:
    assert ModelTable.load().get(model).thinking == "always"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=f"{model} always thinks"):
        AnthropicModel(model, api_key=KEY, thinking={"type": "disabled"})
    with pytest.raises(ConfigError, match=f"drop tool_choice \\({model} always thinks\\)"):
        AnthropicModel(model, api_key=KEY, tool_choice=FORCED)
    AnthropicModel(model, api_key=KEY, tool_choice={"type": "none"})


@pytest.mark.parametrize("model", ["claude-sonnet-5", "claude-haiku-5-5"])
def test_the_models_that_think_by_default_refuse_a_forced_call_unless_thinking_is_off(model: str) -> None:
    assert ModelTable.load().get(model).thinking == "default"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=f"{model} thinks by default"):
        AnthropicModel(model, api_key=KEY, tool_choice=FORCED)
    AnthropicModel(model, api_key=KEY, thinking={"type": "disabled"}, tool_choice=FORCED)


@pytest.mark.parametrize(
    "model",
    [
        "claude-fable-5-1",
        "claude-fable-5",
        "claude-opus-5-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
        "claude-opus-5",
        "claude-sonnet-5",
    ],
)
def test_a_thinking_budget_is_refused_on_a_model_that_thinks_adaptively(model: str) -> None:
    with pytest.raises(
        ConfigError, match=f"{model} thinks adaptively .*use thinking=\\{{'type': 'adaptive'\\}}"
    ):
        AnthropicModel(model, api_key=KEY, thinking=BUDGET)
    AnthropicModel(model, api_key=KEY, thinking={"type": "adaptive"})


@pytest.mark.parametrize("model", ["claude-haiku-4-5", "claude-sonnet-4-6", "claude-opus-4-5"])
def test_a_thinking_budget_is_still_sent_to_a_model_that_takes_one(model: str) -> None:
    built = AnthropicModel(model, api_key=KEY, thinking=BUDGET)  # no ConfigError
    request = ModelRequest.of_messages("", [{"role": "user", "content": "hi"}], [], 8192)
    assert built.params(request)["thinking"] == BUDGET  # was `assert built.params`: a method, always true


@pytest.mark.parametrize("model", ["claude-fable-5-2", "claude-mythos-5-2"])
def test_fable_and_mythos_5_2_know_their_window_output_thinking_and_price(
    model: str,
) -> None:
    # What's new in Claude Fable 5.2: "a 1M token context window (default and maximum) and 128k max
    # output tokens", adaptive thinking always on. Without them the history policy judged a 1M-token
    # run against a 200k default and the API's refusals of thinking settings went unchecked.
    row = ModelTable.load().get(model)
    assert row is not None and (row.context_window, row.max_output, row.thinking) == (
        1_000_000,
        128_000,
        "always",
    )
    assert row.price is not None and (row.price.input_per_mtok, row.price.output_per_mtok) == (8.0, 40.0)
    built = AnthropicModel(model, api_key=KEY)
    assert built.context_window == 1_000_000
    with pytest.raises(ConfigError, match=f"drop tool_choice \\({model} always thinks\\)"):
        AnthropicModel(model, api_key=KEY, tool_choice=FORCED)


@pytest.mark.parametrize("field", [{"temperature": 0.2}, {"top_p": 0.9}, {"top_k": 40}])
@pytest.mark.parametrize(
    "model", ["claude-sonnet-5-5", "claude-haiku-5-5", "claude-fable-5", "claude-sonnet-5"]
)
def test_sampling_parameters_are_refused_on_a_model_that_thinks_adaptively(
    model: str, field: dict[str, float]
) -> None:
    # Sonnet 5 overview: "setting sampling parameters (temperature, top_p, top_k) to non-default values
    # returns a 400 error"; Sonnet 5.5 and Haiku 5.5 migration guides: remove them.
    name = next(iter(field))
    with pytest.raises(ConfigError, match=f"{model} refuses {name} set to other than its default"):
        AnthropicModel(model, api_key=KEY, extra_body=field)
    AnthropicModel(model, api_key=KEY, extra_body={"temperature": 1, "stop_sequences": ["END"]})


def test_sampling_parameters_still_reach_a_model_that_takes_them() -> None:
    # was only built (no ConfigError): now the request the API gets carries them
    with MessagesAPI(message(text("ok"))) as api:
        model = AnthropicModel(
            "claude-haiku-4-5", api_key=KEY, base_url=api.url, extra_body={"temperature": 0.2, "top_k": 40}
        )
        asyncio.run(model.complete(ModelRequest.of_messages("", [{"role": "user", "content": "hi"}], [], 64)))
        [body] = api.bodies
    assert (body["temperature"], body["top_k"]) == (0.2, 40)


@pytest.mark.parametrize("model", ["claude-opus-4-8", "claude-opus-4-7", "us.anthropic.claude-opus-4-7"])
def test_opus_4_7_and_4_8_think_only_adaptively_and_only_when_asked(model: str) -> None:
    # Migrating to Claude Opus 4.7 (and 4.8, which follows it): budget_tokens answers 400 ('"thinking.type.
    # enabled" is not supported for this model'), so do non-default sampling parameters; thinking is
    # opt-in, so a forced tool call without thinking is taken.
    with pytest.raises(ConfigError, match="thinks adaptively"):
        AnthropicModel(model, api_key=KEY, thinking=BUDGET)
    with pytest.raises(ConfigError, match="refuses temperature"):
        AnthropicModel(model, api_key=KEY, extra_body={"temperature": 0.0})
    AnthropicModel(model, api_key=KEY, tool_choice=FORCED)  # no thinking asked for: any choice
    with pytest.raises(ConfigError, match="thinking allows tool_choice 'auto' or 'none' only"):
        AnthropicModel(model, api_key=KEY, thinking={"type": "adaptive"}, tool_choice=FORCED)
