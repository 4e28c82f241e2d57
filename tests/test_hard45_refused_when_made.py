"""Prices, a progress factory and `finish_last` of the wrong kind are refused when made.

Before, `PriceTable({"claude-sonnet-5-5": 3})` (a number where a `Price` goes), a model name that
is no string, a `Price(fast=5)`, an `on_unknown` that cannot be called, and `progress=lambda: 5`
were taken: every run of the agent then ended `error` at its first model call or turn, the note
blaming the model adapter ("a reply the run journal cannot keep: AttributeError: 'int' object has
no attribute 'covers'") or naming a bare AttributeError. `finish_last="no"` read as True.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, Budget, ConfigError, Price, PriceTable, ProgressDetector, StopReason
from agent.models.scripted import ScriptedModel, finish


def _agent(**options: Any) -> Agent:
    return Agent("a", ScriptedModel([[finish("done", "ok")]]), **options)


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        ({"scripted": 3}, "the price of 'scripted' must be a Price"),
        ({"scripted": "cheap"}, "the price of 'scripted' must be a Price"),
        ({"scripted": {"input_per_mtok": 3, "output_per_mtok": 15}}, "not dict"),
        ({5: Price(1.0, 1.0)}, "a model name must be a non-empty string"),
        ({" ": Price(1.0, 1.0)}, "a model name must be a non-empty string"),
        ([("scripted", Price(1.0, 1.0))], "PriceTable takes a mapping of model name to Price"),
    ],
)
def test_a_price_table_of_the_wrong_kind_is_refused_when_made(overrides: Any, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        PriceTable(overrides)


@pytest.mark.parametrize("part", ["fast", "priority"])
def test_a_price_part_that_is_no_price_is_refused_when_made(part: str) -> None:
    with pytest.raises(ConfigError, match=rf"Price\.{part} must be a Price of its own"):
        Price(1.0, 1.0, **{part: 5})


def test_a_long_prompt_price_that_is_no_price_is_refused_when_made() -> None:
    with pytest.raises(ConfigError, match=r"Price\.long_prompt must be a Price of its own"):
        Price(1.0, 1.0, long_prompt={"input_per_mtok": 2}, long_prompt_above=200_000)  # type: ignore[arg-type]


def test_an_on_unknown_that_cannot_be_called_is_refused_when_made() -> None:
    with pytest.raises(ConfigError, match="on_unknown must be a function"):
        PriceTable(on_unknown=5)  # type: ignore[arg-type]


def test_good_prices_still_price_the_run() -> None:
    prices = PriceTable({"scripted": Price(1.0, 2.0, fast=Price(6.0, 12.0)), "unpriced": None})
    result = _agent(prices=prices, budget=Budget(max_cost_usd=1.0)).run("t")

    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd is not None and result.cost_usd > 0


@pytest.mark.parametrize("made", [lambda: 5, lambda: None, lambda: "detector"])
def test_a_progress_factory_that_makes_no_detector_is_refused_when_made(made: Any) -> None:
    with pytest.raises(ConfigError, match=r"progress\(\) made .* it must make a fresh ProgressDetector"):
        _agent(progress=made)


def test_a_progress_factory_that_raises_is_refused_saying_what_it_raised() -> None:
    def broken() -> ProgressDetector:
        raise ValueError("no settings file")

    with pytest.raises(ConfigError, match=r"progress\(\) raised ValueError: no settings file"):
        _agent(progress=broken)


def test_a_progress_factory_that_makes_detectors_still_runs() -> None:
    made: list[ProgressDetector] = []

    def fresh() -> ProgressDetector:
        made.append(ProgressDetector(max_repeats=5))
        return made[-1]

    result = _agent(progress=fresh).run("t")

    assert result.reason is StopReason.SUCCESS, result.note
    assert len({id(d) for d in made}) == len(made)  # each run gets a fresh one


@pytest.mark.parametrize("value", ["no", 0, None])
def test_finish_last_that_is_no_bool_is_refused_when_made(value: object) -> None:
    with pytest.raises(ConfigError, match="finish_last must be True or False"):
        _agent(finish_last=value)


def test_a_planned_price_comes_back_with_its_priority_tier_price_a_price() -> None:
    """A Temporal run's plan carries its model's price as JSON; the Priority Tier's price came back
    as a dict (priced as such, the first priority-tier call failed the run; checked, refused)."""
    from agent.temporal._wire import price_of, price_plan

    price = Price(1.0, 2.0, long_prompt=Price(2.0, 4.0), long_prompt_above=200_000, priority=Price(3.0, 6.0))

    assert price_of(price_plan(price)) == price
