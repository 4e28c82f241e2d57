"""A model API that keeps failing past the 1,024th attempt ends the run with what happened.

`RetryPolicy.delay` worked out `base_delay * 2 ** (attempt - 1)`: past attempt 1,024 the factor is an
int no float holds, and a float `base_delay` (0.0, 0.5) raised OverflowError. A policy with many
attempts and small delays, against an API that answers 529 at once, ended the run `error` with
"OverflowError: int too large to convert to float" instead of the API's failure.
"""

from __future__ import annotations

import pytest

from agent import Agent, RetryPolicy, StopReason, TransientModelError
from agent.models.base import ModelReply, ModelRequest


class Overloaded:
    """A model API that is always overloaded."""

    name = "overloaded"
    provider = "scripted"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        raise TransientModelError("529 overloaded", error_type="overloaded")


@pytest.mark.parametrize("attempt", [1025, 5000, 10**6])
def test_the_backoff_past_the_1024th_attempt_is_the_cap(attempt: int) -> None:
    assert (
        RetryPolicy(max_attempts=10**7, base_delay=0.5, max_delay=30.0, jitter=False).delay(attempt) == 30.0
    )
    assert RetryPolicy(max_attempts=10**7, base_delay=0.0, max_delay=0.0, jitter=False).delay(attempt) == 0.0


def test_a_model_failing_past_the_1024th_attempt_ends_with_the_apis_failure() -> None:
    model = Overloaded()
    retry = RetryPolicy(max_attempts=1100, base_delay=0.0, max_delay=0.0)
    agent = Agent(name="patient", model=model, retry=retry)

    result = agent.run("go")

    assert (result.reason, result.error_type) == (StopReason.ERROR, "overloaded")
    assert result.note == "The model API still failed after 1100 attempts: 529 overloaded"
    assert model.calls == 1100
