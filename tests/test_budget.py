"""Budgets, usage and prices: small objects, checked with tables."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from agent import Agent, Budget, ConfigError, Extension, LimitKind, Price, PriceTable, Spent
from agent.models.scripted import ScriptedModel, finish

TURNS, SECONDS, TOKENS, COST = LimitKind.TURNS, LimitKind.SECONDS, LimitKind.TOKENS, LimitKind.COST


@pytest.mark.parametrize(
    ("budget", "usage", "expected"),
    [
        (Budget(), Spent(), None),
        (Budget(max_turns=3), Spent(turns=2), None),
        (Budget(max_turns=3), Spent(turns=3), TURNS),
        (Budget(max_turns=3), Spent(turns=4), TURNS),
        (Budget(), Spent(turns=24), None),
        (Budget(), Spent(turns=25), TURNS),
        (Budget(max_seconds=10), Spent(active_seconds=9.99), None),
        (Budget(max_seconds=10), Spent(active_seconds=10.0), SECONDS),
        (Budget(), Spent(active_seconds=600.0), SECONDS),
        (Budget(max_seconds=10), Spent(active_seconds=1, waiting_seconds=86_400), None),
        (Budget(max_tokens=1000), Spent(input_tokens=900, output_tokens=99), None),
        (Budget(max_tokens=1000), Spent(input_tokens=900, output_tokens=100), TOKENS),
        (Budget(max_tokens=1000), Spent(output_tokens=1000), TOKENS),
        (Budget(max_cost_usd=0.5), Spent(cost_usd=0.4999), None),
        (Budget(max_cost_usd=0.5), Spent(cost_usd=0.5), COST),
        (Budget(max_turns=None, max_seconds=None), Spent(turns=10**6, active_seconds=1e9), None),
        (Budget(max_turns=1, max_cost_usd=0.1), Spent(turns=1, cost_usd=1.0), TURNS),
        (Budget(max_seconds=1, max_tokens=1), Spent(active_seconds=2, input_tokens=2), SECONDS),
        (Budget(max_tokens=1, max_cost_usd=0.1), Spent(input_tokens=2, cost_usd=1.0), TOKENS),
    ],
)
def test_budget_exceeded(budget, usage, expected):
    assert budget.exceeded(usage) is expected


@pytest.mark.parametrize("field", ["max_turns", "max_seconds", "max_tokens", "max_cost_usd"])
@pytest.mark.parametrize("value", [0, -1])
def test_budget_rejects_ceilings_that_are_not_positive(field, value):
    with pytest.raises(ConfigError, match=f"Budget.{field} must be positive or None, got {value}"):
        Budget(**{field: value})


@pytest.mark.parametrize(("field", "value"), [("max_turns", 2.5), ("max_tokens", 1000.5), ("max_turns", 3.0)])
def test_budget_counts_turns_and_tokens_in_whole_numbers(field, value):
    wanted = rf"Budget.{field} counts whole .*give an int \(or None\), not {value}"
    with pytest.raises(ConfigError, match=wanted):
        Budget(**{field: value})


@pytest.mark.parametrize(("field", "value"), [("turns", 1.5), ("tokens", 100.0)])
def test_an_extension_adds_whole_turns_and_tokens(field, value):
    """A fractional extension was taken: the run went on, and its snapshot could never be read
    back (the journal keeps an extension's turns and tokens as ints), so the run was stranded."""
    with pytest.raises(ConfigError, match=rf"an Extension adds whole {field}: give an int, not {value}"):
        Extension(**{field: value})


def test_budget_ceilings_name_the_limit_kinds():
    assert Budget(max_turns=5, max_seconds=None, max_cost_usd=2).ceilings() == {"turns": 5.0, "cost": 2.0}


@pytest.mark.parametrize(
    ("budget", "usage", "left"),
    [
        (Budget(max_seconds=10), Spent(active_seconds=4), 6.0),
        (Budget(max_seconds=10), Spent(active_seconds=12), 0.0),
        (Budget(max_seconds=10), Spent(active_seconds=4, waiting_seconds=100), 6.0),
        (Budget(max_seconds=None), Spent(active_seconds=4), None),
    ],
)
def test_budget_seconds_left(budget, usage, left):
    assert budget.seconds_left(usage) == left


def test_usage_tokens_and_copy():
    usage = Spent(input_tokens=3, output_tokens=4)
    copy = usage.copy()
    copy.input_tokens += 10
    assert usage.tokens == 7
    assert copy.tokens == 17


def test_a_copy_of_the_tally_holds_every_field():
    """`Spent.copy` names each field: a field added later and left out of it fails here."""
    fields = dataclasses.fields(Spent)
    usage = Spent(**{f.name: i + 2 for i, f in enumerate(fields)})
    copy = usage.copy()
    assert [getattr(copy, f.name) for f in fields] == [i + 2 for i in range(len(fields))]
    assert copy == usage and copy is not usage


# -- prices ---------------------------------------------------------------------------

MTOK = 1_000_000


@pytest.mark.parametrize(
    ("model", "per_mtok_in_and_out"),
    [
        ("claude-sonnet-4-5", 3.0 + 15.0),
        ("claude-sonnet-4-5-20250929", 3.0 + 15.0),
        ("claude-haiku-4-5", 1.0 + 5.0),
        ("claude-haiku-4-5-20251001", 1.0 + 5.0),
        ("claude-opus-4-5-20251101", 5.0 + 25.0),
        ("claude-opus-4-1", 15.0 + 75.0),
        ("claude-opus-4-1-20250805", 15.0 + 75.0),
        ("claude-sonnet-4-0", 3.0 + 15.0),
        ("claude-sonnet-4-20250514", 3.0 + 15.0),  # Sonnet 4's dated id; claude-sonnet-4-0 is its alias
        ("scripted", 3.0 + 15.0),
    ],
)
def test_price_table_uses_the_family_price_for_dated_ids(model, per_mtok_in_and_out):
    prices = PriceTable()
    assert prices.knows(model)
    assert prices.cost(model, MTOK, MTOK) == pytest.approx(per_mtok_in_and_out)


def test_a_dated_id_takes_its_own_family_not_a_shorter_one():
    prices = PriceTable({"claude-opus-4": Price(100.0, 100.0)})
    assert prices.cost("claude-opus-4-1-20250805", MTOK, 0) == pytest.approx(15.0)
    assert prices.cost("claude-opus-4-20250514", MTOK, 0) == pytest.approx(100.0)


@pytest.mark.parametrize(
    "model",
    [
        "gpt-4o",
        "claude-sonnet",
        "claude-sonnet-4-5x",
        "my-claude-sonnet-4-5",
        "",
        "claude-sonnet-5-6",  # a newer model is not priced as an older one
    ],
)
def test_price_table_unknown_models(model):
    prices = PriceTable()
    assert not prices.knows(model)
    assert prices.cost(model, MTOK, MTOK) == 0.0


def test_price_table_overrides_and_extensions():
    prices = PriceTable({"claude-haiku-4-5": Price(2.0, 10.0), "local-llama": Price(0.1, 0.2)})
    assert prices.cost("claude-haiku-4-5-20251001", MTOK, MTOK) == pytest.approx(12.0)
    assert prices.cost("local-llama", 2 * MTOK, MTOK) == pytest.approx(0.4)
    assert prices.cost("claude-sonnet-4-5", 1000, 100) == pytest.approx((1000 * 3 + 100 * 15) / 1e6)
    assert PriceTable().cost("claude-haiku-4-5", MTOK, MTOK) == pytest.approx(6.0)  # defaults untouched


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"input_per_mtok": -1.0}, "Price.input_per_mtok must be a finite number >= 0, got -1.0"),
        ({"input_per_mtok": float("nan")}, "Price.input_per_mtok must be a finite number >= 0, got nan"),
        ({"output_per_mtok": float("inf")}, "Price.output_per_mtok must be a finite number >= 0, got inf"),
        ({"output_per_mtok": "15"}, "Price.output_per_mtok must be a finite number >= 0, got '15'"),
        ({"cache_read_per_mtok": True}, "Price.cache_read_per_mtok must be a finite number >= 0, got True"),
        ({"long_prompt_above": 0, "long_prompt": Price(6.0, 22.5)}, "long_prompt_above must be a whole"),
    ],
)
def test_a_price_is_a_finite_number_of_dollars(fields, says):
    """A NaN price was taken: every cost came out NaN, and a cost budget (NaN >= ceiling is false)
    never stopped the run; a price given as text raised TypeError, not what to fix."""
    with pytest.raises(ConfigError, match=re.escape(says)):
        Price(**{"input_per_mtok": 3.0, "output_per_mtok": 15.0, **fields})


def test_price_cost():
    assert Price(3.0, 15.0).cost(1000, 100) == pytest.approx(0.0045)


def test_a_cost_budget_without_a_price_is_a_config_error():
    with pytest.raises(ConfigError, match=r"has a cost budget but no price for model 'gpt-4o'.*PriceTable"):
        Agent("a", ScriptedModel(name="gpt-4o"), budget=Budget(max_cost_usd=1.0))


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        ("gpt-4o", PriceTable({"gpt-4o": Price(2.5, 10.0)})),
        ("claude-sonnet-4-5-20250929", PriceTable()),
    ],
)
def test_a_cost_budget_with_a_price_is_fine(model, prices):
    agent = Agent("a", ScriptedModel(name=model), budget=Budget(max_cost_usd=1.0), prices=prices)
    assert agent.prices.knows(model)


def test_an_unknown_model_without_a_cost_budget_is_fine():
    agent = Agent("a", ScriptedModel(name="gpt-4o"))
    assert agent.budget.max_cost_usd is None


class AnsweredBy(ScriptedModel):
    """A scripted model whose replies name another model: the API's fallback, or a proxy's."""

    def __init__(self, answered_by: str) -> None:
        super().__init__([[finish("done", "ok")]], name="claude-haiku-4-5")
        self.answered_by = answered_by

    async def complete(self, request: Any) -> Any:
        return dataclasses.replace(await super().complete(request), model=self.answered_by)


@pytest.mark.parametrize(
    ("prices", "answered_by", "per_mtok"),
    [
        (PriceTable(), "claude-opus-4-8", (5.0, 25.0)),  # priced as the model that answered
        (PriceTable(), "claude-haiku-4-5-20251001", (1.0, 5.0)),  # a dated id of the model asked for
        (PriceTable(), "not-in-any-table", (1.0, 5.0)),  # no price for the one that answered
        (PriceTable({"claude-haiku-4-5": Price(0.5, 0.5)}), "claude-opus-4-8", (0.5, 0.5)),  # given
    ],
    ids=["fallback", "dated", "unknown", "given"],
)
def test_a_call_is_priced_as_the_model_that_answered_it(
    prices: PriceTable, answered_by: str, per_mtok: tuple[float, float]
) -> None:
    """The model asked for is claude-haiku-4-5 ($1/$5 per million tokens in the model table); a price
    given for it is what its calls cost, whoever answers (a proxy's alias)."""
    result = Agent("a", AnsweredBy(answered_by), prices=prices).run("go")
    expected = (result.input_tokens * per_mtok[0] + result.output_tokens * per_mtok[1]) / 1e6
    assert result.cost_usd == pytest.approx(expected)


# -- decide18: ceilings have an upper bound ------------------------------------------------------

HUGE = [
    ("max_turns", 10**25, "at most 9223372036854775807 (2**63 - 1)"),
    ("max_tokens", 2**63, "at most 9223372036854775807 (2**63 - 1)"),
    ("max_seconds", 1e300, "at most 31536000, a year of active time"),
]


@pytest.mark.parametrize(("field", "value", "says"), HUGE)
def test_a_ceiling_past_its_most_is_refused_naming_the_field_and_range(field, value, says):
    with pytest.raises(ConfigError, match=rf"Budget\.{field} must be {re.escape(says)}"):
        Budget(**{field: value})


@pytest.mark.parametrize("field", ["max_seconds", "max_cost_usd"])
def test_an_infinite_ceiling_is_refused_none_is_no_ceiling(field):
    with pytest.raises(
        ConfigError, match=rf"Budget\.{field} must be a finite number, or None for no ceiling"
    ):
        Budget(**{field: float("inf")})


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [("turns", 10**25, "(2**63 - 1)"), ("tokens", 2**63, "(2**63 - 1)"), ("seconds", 4e7, "a year")],
)
def test_an_extension_past_its_most_is_refused(field, value, says):
    """An extension of 10**25 turns was taken and saved, and the run's snapshot could never be read
    back (the journal keeps counts that fit 64 bits): the run was stranded in the store."""
    with pytest.raises(ConfigError, match=rf"Extension\.{field} must be at most .*{re.escape(says)}"):
        Extension(**{field: value})


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: Budget(max_turns=10**400), r"Budget\.max_turns must be at most 9223372036854775807 "),
        (lambda: Budget(max_cost_usd=10**400), r"Budget\.max_cost_usd must be at most 1\.8e\+308, "),
        (lambda: Extension(tokens=10**400), r"Extension\.tokens must be at most 9223372036854775807 "),
        (lambda: Extension(cost_usd=10**400), r"Extension\.cost_usd must be at most 1\.8e\+308, "),
    ],
)
def test_an_int_past_what_a_float_holds_is_refused_naming_its_range_never_an_overflow(make, says):
    """`math.isfinite(10**400)` raised OverflowError: a traceback, not the ConfigError with the range."""
    with pytest.raises(ConfigError, match=says):
        make()


def test_the_largest_ceilings_are_taken_and_extensions_past_them_stop_there():
    from agent.budget import MAX_COUNT, MAX_SECONDS

    most = Budget(max_turns=MAX_COUNT, max_seconds=MAX_SECONDS, max_tokens=MAX_COUNT, max_cost_usd=1e300)
    more = most.plus(Extension(turns=MAX_COUNT, seconds=MAX_SECONDS, tokens=MAX_COUNT, cost_usd=1.7e308))
    assert (more.max_turns, more.max_seconds, more.max_tokens) == (MAX_COUNT, MAX_SECONDS, MAX_COUNT)
    assert more.max_cost_usd is not None and more.max_cost_usd < float("inf")


def test_a_temporal_plan_made_before_the_bounds_is_read_at_them_never_stranded():
    """A running workflow's plan holds the budget it was started with; read back on every replay, a
    ceiling now past its bound must not fail the workflow task (the run would be stuck)."""
    from agent.budget import MAX_COUNT, MAX_SECONDS
    from agent.temporal._wire import budget_of

    old = {
        "max_turns": 10**25,
        "max_seconds": float("inf"),
        "max_tokens": 2**63,
        "max_cost_usd": float("inf"),
    }
    assert budget_of({"budget": old}) == Budget(
        max_turns=MAX_COUNT, max_seconds=MAX_SECONDS, max_tokens=MAX_COUNT, max_cost_usd=None
    )
    fine = {"max_turns": 5, "max_seconds": 60.0, "max_tokens": None, "max_cost_usd": 2.0}
    assert budget_of({"budget": fine}) == Budget(**fine)


def test_a_temporal_plan_whose_wait_was_made_before_its_bound_is_read_at_it_never_stranded():
    """A plan holds the help policy it was started with, read on every replay: a wait of 200 years
    (taken before waits had a bound, and a timer Temporal can make) must not fail the workflow task."""
    from agent.policies import MAX_WAIT_SECONDS, HelpPolicy
    from agent.temporal._wire import help_of

    old = dataclasses.asdict(HelpPolicy(on_timeout="resume")) | {"wait_seconds": 200 * 365 * 86400.0}
    assert help_of({"help": old}) == HelpPolicy(wait_seconds=MAX_WAIT_SECONDS, on_timeout="resume")
    fine = dataclasses.asdict(HelpPolicy(wait_seconds=60.0))
    assert help_of({"help": fine}) == HelpPolicy(wait_seconds=60.0)


def _limited_then_extended_before_the_bounds() -> tuple[Agent, Any]:
    """An agent and its run's snapshot, stopped at a limit after an extension of 10**9 seconds that
    `endstate resume --more-seconds 1e9` took before extensions had bounds (saved, read back)."""
    from agent.journal import Extended
    from agent.models.scripted import call
    from agent.snapshot import Snapshot
    from agent.tools import tool

    @tool
    def look() -> str:
        """Look."""
        return "seen"

    model = ScriptedModel([[call("look")], [call("look")], [finish("done", "ok")]])
    a = Agent("a", model, tools=[look], budget=Budget(max_turns=1, max_seconds=60))
    first = a.run("go")
    assert (first.reason.value, first.limit) == ("limit", TURNS), first
    snap = first.snapshot
    assert snap is not None
    old = Extended(seconds=1e9, at=1.0)  # before the bounds: Extension(seconds=1e9) was taken
    saved = dataclasses.replace(snap, journal=[*snap.journal[:-1], old, snap.journal[-1]])
    return a, Snapshot.from_json(saved.to_json())


def test_a_run_extended_past_the_bounds_before_they_were_set_still_resumes():
    """Its journal's extension is read at the bound (adding as much: a ceiling stops there), never a
    ConfigError where the run is read back (its store's resume, its recovery, a workflow's replay)."""
    from agent._state import RunState
    from agent.budget import MAX_SECONDS

    a, snap = _limited_then_extended_before_the_bounds()
    result = a.resume(snap, more=Extension(turns=5))
    assert result.reason.value == "success", result
    run = RunState.from_snapshot(snap, a.progress(), budget=a.budget)
    assert (run.budget.max_turns, run.budget.max_seconds) == (1, MAX_SECONDS)


def test_an_extension_saved_before_the_bounds_is_read_at_them():
    """What a journal's `Extended` or an older Temporal client's `more` holds past the bounds is read
    at them (tests/test_temporal_parity.py runs the workflow's case); amounts within stay as given."""
    from agent.budget import MAX_COUNT, MAX_SECONDS, bounded_extension

    more = bounded_extension(turns=10**25, seconds=1e9, tokens=0, cost_usd=1e300)
    assert more == Extension(turns=MAX_COUNT, seconds=MAX_SECONDS, tokens=0, cost_usd=1e300)
    assert bounded_extension(turns=3, seconds=0.0, tokens=0, cost_usd=0.0) == Extension(turns=3)
