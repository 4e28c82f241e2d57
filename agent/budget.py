"""Budgets: what a run may spend, what it has spent, and what a model costs."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agent.errors import ConfigError
from agent.stops import LimitKind

if TYPE_CHECKING:
    from agent.models.base import ModelReply
    from agent.models.catalog import ModelTable

log = logging.getLogger("endstate")


@dataclass
class Usage:
    """What a run has spent so far, across all its segments."""

    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0  # of the calls with a known price
    active_seconds: float = 0.0
    waiting_seconds: float = 0.0
    unpriced: int = 0  # model calls whose price is unknown: the run's cost is then unknown

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def copy(self) -> Usage:
        return replace(self)


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
            if value is not None and value <= 0:
                raise ConfigError(f"Budget.{name} must be positive or None, got {value!r}")

    def exceeded(self, usage: Usage, *, within_turn: bool = False) -> LimitKind | None:
        """The first budget that `usage` has used up, or None while all have room.

        `within_turn` checks all but turns, for a second model call inside a turn.
        """
        if not within_turn and self.max_turns is not None and usage.turns >= self.max_turns:
            return LimitKind.TURNS
        if self.max_seconds is not None and usage.active_seconds >= self.max_seconds:
            return LimitKind.SECONDS
        if self.max_tokens is not None and usage.tokens >= self.max_tokens:
            return LimitKind.TOKENS
        if self.max_cost_usd is not None and usage.cost_usd >= self.max_cost_usd:
            return LimitKind.COST
        return None

    def plus(self, more: Extension) -> Budget:
        """This budget with `more` added to every ceiling it sets (no ceiling stays none)."""
        return Budget(
            max_turns=None if self.max_turns is None else self.max_turns + more.turns,
            max_seconds=None if self.max_seconds is None else self.max_seconds + more.seconds,
            max_tokens=None if self.max_tokens is None else self.max_tokens + more.tokens,
            max_cost_usd=None if self.max_cost_usd is None else self.max_cost_usd + more.cost_usd,
        )

    def ceilings(self) -> dict[str, float]:
        """The configured ceilings by `LimitKind` value, for dashboards."""
        kinds = (LimitKind.TURNS, LimitKind.SECONDS, LimitKind.TOKENS, LimitKind.COST)
        values = (self.max_turns, self.max_seconds, self.max_tokens, self.max_cost_usd)
        return {str(k): float(v) for k, v in zip(kinds, values, strict=True) if v is not None}

    def seconds_left(self, usage: Usage) -> float | None:
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
        if any(v < 0 for v in values) or not any(values):
            raise ConfigError(
                "an Extension adds something >= 0 to at least one of turns, seconds, tokens, cost_usd"
            )


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens of each kind.

    Cache prices left out follow Anthropic's rule: a cache read costs 0.1x
    the input price, a cache write 1.25x (5-minute TTL) or 2x (1-hour TTL).
    `long_prompt` is the price of a request whose prompt (input plus cache
    reads and writes) is over `long_prompt_above` tokens, output included.
    """

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_5m_per_mtok: float | None = None
    cache_write_1h_per_mtok: float | None = None
    long_prompt_above: int | None = None
    long_prompt: Price | None = None

    def __post_init__(self) -> None:
        for name in ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"Price.{name} must be >= 0, got {value!r}")
        if (self.long_prompt is None) != (self.long_prompt_above is None):
            raise ConfigError("Price: give long_prompt and long_prompt_above together, or neither")

    @property
    def cache_read(self) -> float:
        return self.input_per_mtok * 0.1 if self.cache_read_per_mtok is None else self.cache_read_per_mtok

    @property
    def cache_write_5m(self) -> float:
        return (
            self.input_per_mtok * 1.25
            if self.cache_write_5m_per_mtok is None
            else self.cache_write_5m_per_mtok
        )

    @property
    def cache_write_1h(self) -> float:
        return (
            self.input_per_mtok * 2.0
            if self.cache_write_1h_per_mtok is None
            else self.cache_write_1h_per_mtok
        )

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Cost of uncached input and output tokens."""
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6

    def cost_of(self, reply: ModelReply) -> float:
        """Cost of one call, with its cache reads and writes at their own prices.

        `reply.input_tokens` counts every input token (uncached, cache reads
        and cache writes); the uncached part is what the cache parts leave.
        """
        price = self._for_prompt(reply.input_tokens)
        read = reply.cache_read_input_tokens
        write_1h = min(reply.cache_creation_1h_input_tokens, reply.cache_creation_input_tokens)
        write_5m = reply.cache_creation_input_tokens - write_1h
        uncached = max(0, reply.input_tokens - read - reply.cache_creation_input_tokens)
        dollars = (
            uncached * price.input_per_mtok
            + write_5m * price.cache_write_5m
            + write_1h * price.cache_write_1h
            + read * price.cache_read
            + reply.output_tokens * price.output_per_mtok
        )
        return dollars / 1e6

    def _for_prompt(self, prompt_tokens: int) -> Price:
        above = self.long_prompt_above
        if self.long_prompt is not None and above is not None and prompt_tokens > above:
            return self.long_prompt
        return self


class PriceTable:
    """Per-model prices: the model table's (see `agent.models.catalog`), then yours.

    `overrides` replace or extend the table's prices. A model with no known
    price costs `None` from `cost_of` (never $0): the first time per model a
    warning is logged, and `on_unknown(model)` is called on every such call
    (a counter hook for telemetry).
    """

    def __init__(
        self,
        overrides: Mapping[str, Price] | None = None,
        *,
        models: ModelTable | None = None,
        on_unknown: Callable[[str], None] | None = None,
    ) -> None:
        from agent.models.catalog import ModelTable

        self._overrides = dict(overrides or {})
        self.models = models if models is not None else ModelTable.load()
        self.on_unknown = on_unknown
        self._warned: set[str] = set()

    def price(self, model: str) -> Price | None:
        """The price of `model` (an override first, then the model table), or None."""
        if model in self._overrides:
            return self._overrides[model]
        family = _family(model)
        if family in self._overrides:
            return self._overrides[family]
        info = self.models.get(model)
        return info.price if info is not None else None

    def knows(self, model: str) -> bool:
        return self.price(model) is not None

    def unknown_reason(self, model: str) -> str:
        """Why `model` has no price: the table's reason, or that it is not in the table."""
        info = self.models.get(model)
        if info is not None and info.unknown_price_reason:
            return info.unknown_price_reason
        return "it is not in the model table"

    def require(self, model: str, agent: str) -> None:
        """Refuse a cost budget on a model whose price is unknown: a `ConfigError` that says what to do."""
        if self.knows(model):
            return
        raise ConfigError(
            f"agent {agent!r} has a cost budget but no price for model {model!r} "
            f"({self.unknown_reason(model)}); pass prices=PriceTable({{{model!r}: Price(input, output)}}) "
            "or add the model to the file named by ENDSTATE_MODELS"
        )

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        """Dollar cost of uncached input and output; 0.0 for a model with no price. Prefer `cost_of`."""
        price = self.price(model)
        return price.cost(input_tokens, output_tokens) if price else 0.0

    def cost_of(self, model: str, reply: ModelReply) -> float | None:
        """Dollar cost of one call, cache reads and writes included; None when the price is unknown."""
        price = self.price(model)
        if price is not None:
            return price.cost_of(reply)
        self._report_unknown(model)
        return None

    def _report_unknown(self, model: str) -> None:
        if model not in self._warned:
            self._warned.add(model)
            log.warning(
                "no price for model %r (%s): its cost is reported as unknown",
                model,
                self.unknown_reason(model),
            )
        if self.on_unknown is not None:
            self.on_unknown(model)


def _family(model: str) -> str:
    """A dated id such as "claude-sonnet-4-5-20250929" without its date."""
    dated = re.fullmatch(r"(.+)-\d{8}", model)
    return dated.group(1) if dated else model
