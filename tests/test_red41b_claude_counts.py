"""What the Claude Code CLI reports is read as the Anthropic adapter reads the API's usage: a count that
is no whole number >= 0 is no count (0), a cost that is no finite amount >= 0 is unknown, and an error
list holding no strings still ends the run. Before, a negative or NaN cost became the run's cost
(`agent_cost_usd_total` poisoned for good, or refused by Prometheus), a negative token count was
counted, a float count became a 300-digit integer, a count the SDK gave as text ended the run as
`error` (`ValueError`), and a `null` in the result's `errors` raised `TypeError` out of `run` with
the run's span left open."""

from __future__ import annotations

import math
from typing import Any

import pytest
from integrations_support import FakeCLI, assistant, result, rigged, tool_result, tool_use

from agent import StopReason
from agent.integrations import claude_agent_sdk as claude

TASK = "red41b"
CALL = assistant("m1", tool_use("c1", "Read", {"path": "a"}))
DONE = assistant("m2", {"type": "text", "text": "done"})


def played(*lines: dict[str, Any]) -> Any:
    with rigged() as rig:  # fails on a span left open, or an attribute OTLP drops
        res = claude.run("read a", transport=FakeCLI([*lines]), hooks=rig.hooks, task_type=TASK)
    return res


@pytest.mark.parametrize("cost", [math.nan, -5.0, math.inf, "0.5", True])
def test_a_cost_that_is_no_amount_is_unknown_never_the_runs_cost(cost: Any) -> None:
    res = played(CALL, tool_result("c1", "text"), DONE, result(result="done", total_cost_usd=cost))
    assert (res.reason, res.cost_usd, res.input_tokens) == (StopReason.SUCCESS, None, 20)


@pytest.mark.parametrize("count", [-3, 2.5, 1e300, "20", None, True])
def test_a_token_count_that_is_no_whole_number_from_zero_counts_none(count: Any) -> None:
    usage = {"input_tokens": count, "output_tokens": 10, "cache_read_input_tokens": count}
    res = played(CALL, tool_result("c1", "text"), DONE, result(result="done", usage=usage))
    assert (res.reason, res.input_tokens, res.output_tokens) == (StopReason.SUCCESS, 0, 10)


@pytest.mark.parametrize("usage", [{"input_tokens": "x", "output_tokens": None}, [1, 2], "x", 5])
def test_a_messages_usage_that_is_no_count_is_no_error(usage: Any) -> None:
    reply = assistant("m1", {"type": "text", "text": "done"})
    reply["message"]["usage"] = usage
    res = played(reply, result(result="done", usage=usage if not isinstance(usage, dict) else None))
    assert (res.reason, res.output, res.input_tokens, res.output_tokens) == (StopReason.SUCCESS, "done", 0, 0)


def test_an_error_list_holding_no_strings_still_ends_the_run_as_error_saying_the_rest() -> None:
    res = played(CALL, tool_result("c1", "text"), result("error_during_execution", errors=["boom", None, 5]))
    assert (res.reason, res.error_type, res.note) == (StopReason.ERROR, "error_during_execution", "boom; 5")
