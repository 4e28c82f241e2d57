"""clock: a `retry-after` given as an HTTP date (a gateway's, a proxy's in front of the API) is
reckoned from the response's own `date`, so the wait is the one the API asked for whatever this host's
clock says.

Before, it was reckoned from this host's clock: a host whose clock ran an hour ahead of the API's cut
a wait of 30 s to none (the call sent again at once, into the same rate limit: "never cut short"
broken), and one an hour behind read it as 3,630 s, more than a run waits out, and ended the run as
error. Through the real `anthropic` SDK against the local Messages API server, whose clock is put off
this host's; the backoff is taken by the agent's clock, which records it (no time is waited)."""

from __future__ import annotations

import email.utils
import time

import pytest
from messages_api import MessagesAPI, error, message, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.clock import SystemClock
from agent.models.anthropic import AnthropicModel, retry_after

ASKED = 30.0  # the wait the API asks for, by its own clock
DONE = tool_use("finish", {"kind": "done", "note": "done"})


class Recorded(SystemClock):
    """The system's clock, whose backoff waits are recorded, not waited."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


def _date(timestamp: float) -> str:
    return email.utils.formatdate(timestamp, usegmt=True)


def test_an_http_date_is_reckoned_from_the_response_s_date() -> None:
    sent = 1_000_000_000.0  # 2001: this host's clock is 25 years ahead of the sender's
    assert retry_after({"retry-after": _date(sent + ASKED), "date": _date(sent)}) == ASKED
    assert retry_after({"retry-after": _date(sent + ASKED), "date": "not a date"}) == 0.0  # this host's


@pytest.mark.parametrize("off", [-3600.0, 3600.0], ids=["api-clock-behind", "api-clock-ahead"])
def test_a_run_waits_what_the_api_asked_whatever_this_host_s_clock_says(off: float) -> None:
    busy = error(429, "rate limited", headers={"retry-after": _date(time.time() + off + ASKED)})
    with MessagesAPI(busy, message(DONE)) as api:
        api.clock_off = off
        clock = Recorded()
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url=api.url)
        agent = Agent(
            "t", model, retry=RetryPolicy(jitter=False), budget=Budget(max_seconds=None), clock=clock
        )
        result = agent.run("Do the task.")
        assert result.reason is StopReason.SUCCESS, result.note
        assert len(api.requests) == 2  # the 429, then the retry that succeeded
    [waited] = clock.waits
    assert ASKED - 2 <= waited <= ASKED, waited  # the date's whole seconds, and the time on the way
