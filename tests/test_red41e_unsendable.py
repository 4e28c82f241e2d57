"""Options that no JSON request can carry (NaN or infinity in `extra_body`, `metadata`, ...) are a
`ConfigError` when the model is built. Before, every call failed before sending with "a 200 reply
whose body could not be read", was retried as a malformed reply, and the run ended `error`."""

from __future__ import annotations

from typing import Any

import pytest

from agent import ConfigError
from agent.models.anthropic import AnthropicModel, web_search


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("extra_body", {"temperature": float("nan")}, "temperature"),
        ("metadata", {"user_id": float("inf")}, "metadata"),
        ("tool_choice", {"type": "auto", "x": float("-inf")}, "tool_choice"),
        ("server_tools", [web_search(max_uses=3) | {"weight": float("nan")}], "server_tools"),
        ("tool_options", {"lookup": {"strict": float("nan")}}, "tool_options"),
    ],
)
def test_an_option_no_json_request_can_carry_is_refused(option: str, value: Any, named: str) -> None:
    with pytest.raises(ConfigError, match=rf"{named}.*NaN or infinite"):
        AnthropicModel("claude-haiku-4-5", api_key="sk-test", **{option: value})


def test_finite_options_still_build() -> None:
    model = AnthropicModel(
        "claude-haiku-4-5", api_key="sk-test", extra_body={"temperature": 0.5}, metadata={"user_id": "u1"}
    )
    assert model.name == "claude-haiku-4-5"
