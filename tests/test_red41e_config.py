"""Bad configuration of `AnthropicModel` is refused when the model is built, with a clear error
naming what is wrong, never found by the first call of a run (and retried as a transient failure)."""

from __future__ import annotations

from typing import Any

import pytest

from agent import ConfigError
from agent.cli.main import main
from agent.models.anthropic import AnthropicModel


@pytest.mark.parametrize("model", ["  ", "\t", 42, b"claude-haiku-4-5"])
def test_a_model_id_that_is_no_id_is_refused(model: Any) -> None:
    with pytest.raises(ConfigError, match="model id"):
        AnthropicModel(model, api_key="sk-test")


def test_a_blank_endstate_model_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENDSTATE_MODEL", "   ")
    with pytest.raises(ConfigError, match="ENDSTATE_MODEL"):
        AnthropicModel(api_key="sk-test")


@pytest.mark.parametrize("url", ["not a url", "ftp://example.com", "api.anthropic.com"])
def test_a_base_url_that_is_no_http_url_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url=url)


def test_a_base_url_from_the_environment_that_is_not_http_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "localhost:8080")
    with pytest.raises(ConfigError, match="ANTHROPIC_BASE_URL"):
        AnthropicModel("claude-haiku-4-5", api_key="sk-test")


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("-inf"), "30", True])
def test_a_timeout_that_is_no_positive_number_of_seconds_is_refused(timeout: Any) -> None:
    with pytest.raises(ConfigError, match="timeout"):
        AnthropicModel("claude-haiku-4-5", api_key="sk-test", timeout=timeout)


def test_good_settings_still_build() -> None:
    model = AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url="http://127.0.0.1:9", timeout=30)
    assert model.name == "claude-haiku-4-5"
    forever = AnthropicModel("claude-haiku-4-5", api_key="sk-test", timeout=float("inf"))
    assert forever.name == "claude-haiku-4-5"


def test_doctor_names_a_bad_base_url_as_the_settings_not_the_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "localhost:8080")
    monkeypatch.delenv("ENDSTATE_MODELS", raising=False)
    assert main(["doctor", "--model", "claude-haiku-4-5"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("fail      settings:") and "ANTHROPIC_BASE_URL 'localhost:8080'" in lines[0]
    assert lines[2:] == [
        "unchecked models API: needs a client, which the settings above do not give",
        "unchecked round trip: needs a client, which the settings above do not give",
    ]


@pytest.mark.parametrize("budget", [-5, 0, 1023, 2048.0, "4096", None, True])
def test_a_thinking_budget_below_the_api_minimum_or_no_whole_number_is_refused(budget: Any) -> None:
    # The API refuses a budget_tokens under 1,024 (extended thinking: "must be ≥1024").
    with pytest.raises(ConfigError, match="budget_tokens"):
        AnthropicModel(
            "claude-haiku-4-5", api_key="sk-test", thinking={"type": "enabled", "budget_tokens": budget}
        )


def test_a_thinking_budget_the_api_takes_builds() -> None:
    thinking = {"type": "enabled", "budget_tokens": 1024}
    assert AnthropicModel("claude-haiku-4-5", api_key="sk-test", thinking=thinking).name == "claude-haiku-4-5"


@pytest.mark.parametrize("model", ["claude-haiku-4-5 ", " claude-haiku-4-5", "claude-haiku-4-5\n"])
def test_a_model_id_with_blanks_around_it_is_refused(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # e.g. a trailing space from a .env file: the API knows no such id and the table no price
    with pytest.raises(ConfigError, match="blanks around it"):
        AnthropicModel(model, api_key="sk-test")
    monkeypatch.setenv("ENDSTATE_MODEL", model)
    with pytest.raises(ConfigError, match=r"blanks around it \(ENDSTATE_MODEL is"):
        AnthropicModel(api_key="sk-test")
