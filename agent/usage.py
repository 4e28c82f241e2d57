"""What model calls used: tokens of each kind and their cost, as one value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from agent._frozen import fast_init


@fast_init
@dataclass(frozen=True)
class Usage:
    """Tokens and cost of one model call, a run segment or a whole run.

    `input_tokens` counts every input token (uncached, cache reads and cache
    writes, as the GenAI conventions count them); the cache parts are also
    given on their own. `cost_usd` is None when a price was unknown: adding a
    usage of unknown cost makes the sum unknown, so a partial sum is never
    shown as the total.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0

    @property
    def tokens(self) -> int:
        """Input plus output tokens (what a token budget counts)."""
        return self.input_tokens + self.output_tokens

    @property
    def cost_known(self) -> bool:
        return self.cost_usd is not None

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            cost,
        )

    def flat(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (`cost_usd` null when unknown)."""
        return asdict(self)

    @classmethod
    def from_flat(cls, data: Mapping[str, Any]) -> Usage:
        """A usage from a flat mapping (a result's or a record's dict); missing counts are 0,
        a `cost_usd` of None stays unknown."""
        cost = data.get("cost_usd", 0.0)
        return cls(
            int(data.get("input_tokens") or 0),
            int(data.get("output_tokens") or 0),
            int(data.get("cache_read_tokens") or 0),
            int(data.get("cache_write_tokens") or 0),
            None if cost is None else float(cost),
        )


__all__ = ["Usage"]


class WithUsage:
    """The flat reads of a `usage` field, for a result or a record that holds one."""

    usage: Usage

    @property
    def input_tokens(self) -> int:
        return self.usage.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.usage.output_tokens

    @property
    def cost_usd(self) -> float | None:
        return self.usage.cost_usd
