"""Budgets: what a run may spend and what it has spent (prices: `agent.prices`)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from agent._frozen import cached
from agent._valid import is_number, is_whole
from agent.errors import ConfigError
from agent.models.price import Price  # what a model costs: kept importable from here
from agent.prices import PriceTable
from agent.stops import LimitKind
from agent.usage import Usage

log = logging.getLogger("endstate")


@dataclass
class Spent:
    """What a run has spent so far, across all its segments: the loop's running tally.

    Its model usage is `usage` (a `Usage` value, cost None once a call had no
    price). `cost_usd` here is the known part only: the cost budget checks it,
    a lower bound of what the run cost.
    """

    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0  # of the calls with a known price
    active_seconds: float = 0.0
    waiting_seconds: float = 0.0
    unpriced: int = 0  # model calls whose price is unknown: the run's cost is then unknown
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def usage(self) -> Usage:
        """The run's model usage as one value; its cost is None when any call had no price."""
        tokens = self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens
        return Usage(*tokens, self.known_cost())

    def known_cost(self) -> float | None:
        """The run's cost in USD to the micro-dollar; None when any call had no price."""
        return None if self.unpriced else round(self.cost_usd, 6)

    def add(self, usage: Usage) -> None:
        """Count a model call's usage (a call of unknown cost makes the run's cost unknown). Counts stop
        at `MAX_COUNT`, the most a snapshot and a store hold."""
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        total = self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
        if total > MAX_COUNT:  # one sum, not four `min` calls a turn: each count is at most the sum
            self._saturate()
        if usage.cost_usd is None:
            self.unpriced += 1
        else:
            self.cost_usd += usage.cost_usd

    def _saturate(self) -> None:
        self.input_tokens = min(self.input_tokens, MAX_COUNT)
        self.output_tokens = min(self.output_tokens, MAX_COUNT)
        self.cache_read_tokens = min(self.cache_read_tokens, MAX_COUNT)
        self.cache_write_tokens = min(self.cache_write_tokens, MAX_COUNT)

    def copy(self) -> Spent:
        """A tally of its own with the same counts. Every field by name: `dataclasses.replace` costs
        ~300 bytecodes a copy (two a run), and `vars(self)` leaves `self` slow to read (`agent._frozen`)."""
        return Spent(
            self.turns,
            self.input_tokens,
            self.output_tokens,
            self.cost_usd,
            self.active_seconds,
            self.waiting_seconds,
            self.unpriced,
            self.cache_read_tokens,
            self.cache_write_tokens,
        )


_WHOLE_CEILINGS = ("max_turns", "max_tokens")  # counted in whole units: a journal keeps them as ints
# The most a ceiling (or an Extension's amount, or their sum) may be. Turns and tokens: what a signed
# 64-bit integer holds, as the journal and the stores keep counts (a run extended past it was saved
# but could never be read back). Seconds: a year of active time; a timer much longer cannot be made
# everywhere (Temporal's durable timers take a `timedelta`, which stops at 10**14 s).
MAX_COUNT = 2**63 - 1
MAX_SECONDS = 365 * 24 * 3600.0
_MOST = {"turns": MAX_COUNT, "tokens": MAX_COUNT, "seconds": MAX_SECONDS}
_CEILING_KINDS = tuple(str(k) for k in (LimitKind.TURNS, LimitKind.SECONDS, LimitKind.TOKENS, LimitKind.COST))


# A cost within a billionth of its ceiling has reached it: a cost is a float sum of call prices, which
# drifts below the exact sum (ten calls of $0.01 add to 0.09999999999999999), and a $0.10 ceiling let an
# eleventh call through. A billionth is far above that drift and far below any amount of money.
_REACHED = 1 - 1e-9


@dataclass(frozen=True)
class Budget:
    """Ceilings a run may not pass; `None` means no ceiling of that kind.

    Checked by code before every model call. The defaults follow the seed:
    25 turns and 10 minutes of active time.
    """

    max_turns: int | None = 25
    max_seconds: float | None = 600.0
    max_tokens: int | None = None
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_seconds", "max_tokens", "max_cost_usd"):
            value = getattr(self, name)
            if value is not None and not _finite(value):
                raise ConfigError(
                    f"Budget.{name} must be a finite number, or None for no ceiling, not {value!r}"
                )
            if value is not None and value <= 0:
                raise ConfigError(f"Budget.{name} must be positive or None, got {value!r}")
            check_most(f"Budget.{name}", name.removeprefix("max_"), value)
        for name in _WHOLE_CEILINGS:
            if not isinstance(value := getattr(self, name), int | None):
                what = name.removeprefix("max_")
                raise ConfigError(f"Budget.{name} counts whole {what}: give an int (or None), not {value!r}")

    def exceeded(self, usage: Spent, *, within_turn: bool = False) -> LimitKind | None:
        """The first budget that `usage` has used up, or None while all have room.

        `within_turn` checks all but turns, for a second model call inside a turn.
        """
        if not within_turn and self.max_turns is not None and usage.turns >= self.max_turns:
            return LimitKind.TURNS
        if self.max_seconds is not None and usage.active_seconds >= self.max_seconds:
            return LimitKind.SECONDS
        if self.max_tokens is not None and usage.tokens >= self.max_tokens:
            return LimitKind.TOKENS
        if self.max_cost_usd is not None and usage.cost_usd >= self.max_cost_usd * _REACHED:
            return LimitKind.COST
        return None

    def plus(self, more: Extension) -> Budget:
        """This budget with `more` added to every ceiling it sets (no ceiling stays none); a sum past
        a ceiling's most (`MAX_COUNT`, `MAX_SECONDS`; a cost past what a float holds) is that most."""
        return Budget(
            max_turns=None if self.max_turns is None else min(self.max_turns + more.turns, MAX_COUNT),
            max_seconds=None
            if self.max_seconds is None
            else min(self.max_seconds + more.seconds, MAX_SECONDS),
            max_tokens=None if self.max_tokens is None else min(self.max_tokens + more.tokens, MAX_COUNT),
            max_cost_usd=None
            if self.max_cost_usd is None
            else min(self.max_cost_usd + more.cost_usd, MAX_FLOAT),
        )

    def short_by(self, usage: Spent, kind: LimitKind) -> str:
        """The least more of `kind` that leaves `usage` room under this budget, and what it was measured
        against, in words for a refused extension (`by at least 2 (it has used 3 turns; the ceiling
        is 1)`): a deploy may have lowered the ceiling below what the run used."""
        ceiling = self.ceilings().get(str(kind), 0.0)
        if kind in (LimitKind.TURNS, LimitKind.TOKENS):
            whole, most = usage.turns if kind is LimitKind.TURNS else usage.tokens, int(ceiling)
            return f"by at least {whole - most + 1} (it has used {whole} {kind}; the ceiling is {most})"
        if kind is LimitKind.SECONDS:
            used = usage.active_seconds
            said = f"it has used {used:.1f} active seconds; the ceiling is {ceiling:g}"
            return f"by more than {used - ceiling:.1f} ({said})"
        used = usage.cost_usd
        return f"by more than ${used - ceiling:.4f} (it has spent ${used:.4f}; the ceiling is ${ceiling:g})"

    def ceilings(self) -> dict[str, float]:
        """The configured ceilings by `LimitKind` value, for dashboards (a copy of its own each call)."""
        return self._ceilings.copy()

    @cached
    def _ceilings(self) -> dict[str, float]:  # a budget never changes: worked out once, not once a run
        values = (self.max_turns, self.max_seconds, self.max_tokens, self.max_cost_usd)
        return {k: float(v) for k, v in zip(_CEILING_KINDS, values, strict=True) if v is not None}

    def seconds_left(self, usage: Spent) -> float | None:
        """Active seconds left, or None when time is not budgeted."""
        if self.max_seconds is None:
            return None
        return max(0.0, self.max_seconds - usage.active_seconds)


@dataclass(frozen=True)
class Extension:
    """More budget for a run that stopped at a limit: added to each ceiling the agent sets."""

    turns: int = 0
    seconds: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0

    def __post_init__(self) -> None:
        values = (self.turns, self.seconds, self.tokens, self.cost_usd)
        if not all(_finite(v) for v in values):
            raise ConfigError(
                f"an Extension's turns, seconds, tokens and cost_usd are finite numbers, not {values!r}"
            )
        for name in ("turns", "tokens"):
            if not is_whole(value := getattr(self, name)):
                raise ConfigError(f"an Extension adds whole {name}: give an int, not {value!r}")
        if any(v < 0 for v in values) or not any(values):
            raise ConfigError(
                "an Extension adds something >= 0 to at least one of turns, seconds, tokens, cost_usd"
            )
        for name in ("turns", "seconds", "tokens", "cost_usd"):
            check_most(f"Extension.{name}", name, getattr(self, name))


def _finite(value: object) -> bool:
    """A number (not a bool), neither infinite nor NaN; an int of any size is compared as it is
    (`math.isfinite` raised OverflowError for one past what a float holds, such as 10**400)."""
    return is_number(value) and -math.inf < value < math.inf


# sys.float_info.max: the most a cost may be (an int past it could not be saved as a JSON float), and
# where a cost ceiling summed past it stops
MAX_FLOAT = 1.7976931348623157e308


def check_most(field: str, kind: str, value: float | None) -> None:
    """A `ConfigError` naming `field` and its range when `value` is past the most a `kind` of ceiling
    may be (`_MOST`: turns, tokens, seconds; a cost, what a float holds: an int past it, such as
    10**400, could be neither saved in a journal nor read back)."""
    most = _MOST.get(kind, MAX_FLOAT)
    if value is None or value <= most:
        return
    unit = "a year of active time" if kind == "seconds" else "what a signed 64-bit integer holds"
    unit = "what a float holds" if most == MAX_FLOAT else unit
    exact = " (2**63 - 1)" if most == MAX_COUNT else ""
    raise ConfigError(f"{field} must be at most {shown_most(most)}{exact}, {unit}; got {value!r:.60}")


def bounded(ceilings: dict[str, Any]) -> Budget:
    """A Budget from `ceilings` saved before ceilings had bounds (a Temporal run's plan): a ceiling
    past its bound is read as the bound, an infinite cost as none, so that such a run is never
    stranded by a ConfigError where it is read back."""
    kept = at_bounds(ceilings, prefix="max_")
    if kept.get("max_cost_usd") == math.inf:
        kept["max_cost_usd"] = None
    return Budget(**kept)


def bounded_extension(**amounts: Any) -> Extension:
    """An Extension from `amounts` saved before amounts had bounds (a journal's `Extended` entry, a
    Temporal run's `more`): an amount past its bound is read as the bound, which adds just as much
    (`Budget.plus` stops a ceiling at its bound), so that such a run is never stranded by a
    ConfigError where it is read back (its resume, its recovery, a workflow's replay)."""
    return Extension(**at_bounds(amounts))


def at_bounds(amounts: dict[str, Any], prefix: str = "", most: dict[str, float] = _MOST) -> dict[str, Any]:
    """`amounts` with each number past its kind's bound (`most`, keyed by name without `prefix`)
    read as that bound; anything else as it is."""
    kept = dict(amounts)
    for name, value in amounts.items():
        bound = most.get(name.removeprefix(prefix))
        if is_number(value) and bound is not None and value > bound:
            kept[name] = bound
    return kept


def shown_most(most: float) -> str:
    """A bound as a person reads it: whole, never rounded through a float (what a float holds, as
    1.8e+308)."""
    if most == MAX_FLOAT:
        return f"{most:.2g}"
    return f"{most:.0f}" if isinstance(most, float) else str(most)


__all__ = ["MAX_COUNT", "MAX_SECONDS", "Budget", "Extension", "Price", "PriceTable", "Spent"]
