"""An agent's `max_tokens` above its model's maximum output (the model table's `max_output`) is
refused when the agent is built, with what to do, not at the first paid call of its first run (a
`ModelError` ending every run as `error`); the same for a judge's and a summary model's
`max_tokens`, and for an agent whose summary model takes the agent's `max_tokens`."""

from __future__ import annotations

import re

import pytest

from agent import Agent, ConfigError
from agent.history import HistoryPolicy, ModelSummary
from agent.models.anthropic import AnthropicModel
from agent.models.catalog import ModelTable
from agent.verify import EvaluatorVerifier


def claude(model: str) -> AnthropicModel:
    return AnthropicModel(model, api_key="sk-test", base_url="http://127.0.0.1:9")


def test_the_model_says_its_maximum_output_from_the_model_table() -> None:
    assert claude("claude-haiku-4-5").max_output == 64_000
    assert claude("claude-sonnet-5-5").max_output == 128_000
    assert claude("claude-made-up-9").max_output is None  # not in the table: unknown, not checked


def test_an_agent_asking_more_output_than_its_model_writes_is_refused_when_built() -> None:
    with pytest.raises(ConfigError) as refused:
        Agent("big", claude("claude-haiku-4-5"), max_tokens=100_000)
    said = str(refused.value)
    assert "100,000" in said and "64,000" in said and "claude-haiku-4-5" in said
    assert "max_tokens" in said and "ENDSTATE_MODELS" in said


def test_an_agent_at_its_models_maximum_output_or_of_an_unknown_model_is_built() -> None:
    assert Agent("at", claude("claude-haiku-4-5"), max_tokens=64_000).max_tokens == 64_000
    assert Agent("unknown", claude("claude-made-up-9"), max_tokens=500_000).max_tokens == 500_000


def test_a_summary_model_that_takes_the_agents_max_tokens_is_checked_against_it() -> None:
    history = HistoryPolicy(summarize=ModelSummary(model=claude("claude-haiku-4-5")))
    with pytest.raises(ConfigError, match="64,000"):
        Agent("sum", claude("claude-sonnet-5-5"), max_tokens=100_000, history=history)
    with pytest.raises(ConfigError, match="64,000"):
        ModelSummary(model=claude("claude-haiku-4-5"), max_tokens=70_000)


def test_a_judge_asking_more_output_than_its_model_writes_is_refused() -> None:
    with pytest.raises(ConfigError, match="64,000"):
        EvaluatorVerifier(claude("claude-haiku-4-5"), ["it works"], max_tokens=65_000)
    assert EvaluatorVerifier(claude("claude-haiku-4-5"), ["it works"], max_tokens=64_000)


def test_the_model_an_agents_error_suggests_is_a_current_one() -> None:
    with pytest.raises(ConfigError) as refused:
        Agent("no model", "claude-sonnet-4-5")  # type: ignore[arg-type]
    (suggested,) = re.findall(r"AnthropicModel\('([^']+)'\)", str(refused.value))
    row = ModelTable.builtin().get(suggested)
    assert row is not None and row.status == "active" and row.retires is None
