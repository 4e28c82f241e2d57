"""What a model costs: dollars per million tokens, cache reads and writes at their own prices."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agent._valid import is_number
from agent.errors import ConfigError

if TYPE_CHECKING:
    from agent.models.base import ModelReply

WEB_SEARCH_PER_1K = 10.0  # USD per 1,000 web searches on the Claude API (the same for every model)
US_INFERENCE_MULTIPLIER = 1.1  # every token price of a call run US-only (inference_geo "us")
BATCH_MULTIPLIER = 0.5  # every token price of a call the batch tier served (usage service_tier "batch")


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens of each kind.

    Cache prices left out follow Anthropic's rule: a cache read costs 0.1x
    the input price, a cache write 1.25x (5-minute TTL) or 2x (1-hour TTL).
    `long_prompt` is the price of a request whose prompt (input plus cache
    reads and writes) is over `long_prompt_above` tokens, output included.
    `web_search_per_1k` is the price of 1,000 uses of the provider's web
    search (a reply's `server_tool_use["web_search"]`); left out, Anthropic's
    $10 per 1,000 searches. `us_inference_multiplier` scales every token
    price of a call whose reply says it ran US-only (`extra["inference_geo"]`
    is "us", as a request's or a workspace's `inference_geo` makes it); left
    out, Anthropic's 1.1x. `fast` is the price of a call run in fast mode (the
    reply's `extra["speed"]` is "fast"), its cache prices following its own
    input price; left out, such a call's price is unknown (see `PriceTable`).
    `priority` is the price of a call Priority Tier served (the reply's
    `extra["service_tier"]` is "priority"): Anthropic sells it as a capacity
    commitment under contract and publishes no price per token, so left out,
    such a call's price is unknown, never the standard price. A call the
    batch tier served (`"batch"`) costs half of every token price, as
    Anthropic's batch pricing says.
    """

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_5m_per_mtok: float | None = None
    cache_write_1h_per_mtok: float | None = None
    long_prompt_above: int | None = None
    long_prompt: Price | None = None
    web_search_per_1k: float | None = None
    us_inference_multiplier: float | None = None
    fast: Price | None = None
    priority: Price | None = None

    def __post_init__(self) -> None:
        for name in (
            "input_per_mtok",
            "output_per_mtok",
            "cache_read_per_mtok",
            "cache_write_5m_per_mtok",
            "cache_write_1h_per_mtok",
            "web_search_per_1k",
            "us_inference_multiplier",
        ):
            value = getattr(self, name)
            if value is not None and not (is_number(value) and 0 <= value < math.inf):
                raise ConfigError(f"Price.{name} must be a finite number >= 0, got {value!r}")
        above = self.long_prompt_above
        if above is not None and not (isinstance(above, int) and is_number(above) and above > 0):
            raise ConfigError(f"Price.long_prompt_above must be a whole number of tokens > 0, got {above!r}")
        if (self.long_prompt is None) != (self.long_prompt_above is None):
            raise ConfigError("Price: give long_prompt and long_prompt_above together, or neither")
        for name in ("long_prompt", "fast", "priority"):  # else the first call they price fails
            if (value := getattr(self, name)) is not None and not isinstance(value, Price):
                raise ConfigError(
                    f"Price.{name} must be a Price of its own (say Price(6.0, 30.0)) or None, not "
                    f"{type(value).__name__} {value!r:.60}"
                )

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

    @property
    def web_search(self) -> float:
        """USD per web search."""
        per_1k = WEB_SEARCH_PER_1K if self.web_search_per_1k is None else self.web_search_per_1k
        return per_1k / 1000

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Cost of uncached input and output tokens."""
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6

    def cost_of(self, reply: ModelReply) -> float:
        """Cost of one call, with its cache reads and writes at their own prices, and its web searches.

        `reply.input_tokens` counts every input token (uncached, cache reads
        and cache writes); the uncached part is what the cache parts leave.
        """
        if not reply.extra and not reply.server_tool_use:  # most calls: no fast mode, region or search
            return self._tokens_cost(reply)
        if self.fast is not None and is_fast(reply):
            return self.fast.cost_of(reply)
        if self.priority is not None and tier_of(reply) == "priority":
            return self.priority.cost_of(replace(reply, extra={**reply.extra, "service_tier": "standard"}))
        searches = (reply.server_tool_use or {}).get("web_search", 0) * self.web_search
        tier = BATCH_MULTIPLIER if tier_of(reply) == "batch" else 1.0
        return self._tokens_cost(reply) * self._geo_multiplier(reply) * tier + searches

    def covers(self, reply: ModelReply) -> bool:
        """Whether this price prices `reply`: not a call in fast mode, or that Priority Tier served,
        when it has no price for such a call, nor one a service tier it knows no rule for served."""
        if not reply.extra:
            return True
        tier = tier_of(reply)
        known_tier = tier in _PRICED_TIERS or (tier == "priority" and self.priority is not None)
        return known_tier and (self.fast is not None or not is_fast(reply))

    def _geo_multiplier(self, reply: ModelReply) -> float:
        if reply.extra.get("inference_geo") != "us":
            return 1.0
        return (
            US_INFERENCE_MULTIPLIER if self.us_inference_multiplier is None else self.us_inference_multiplier
        )

    def _tokens_cost(self, reply: ModelReply) -> float:
        above = self.long_prompt_above
        price = self if above is None or reply.input_tokens <= above else self._for_prompt(reply.input_tokens)
        if not (reply.cache_read_input_tokens or reply.cache_creation_input_tokens):  # no cache: the same sum
            return (
                max(0, reply.input_tokens) * price.input_per_mtok
                + reply.output_tokens * price.output_per_mtok
            ) / 1e6
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


# The service tiers priced from the standard price (none said: the API left it out).
_PRICED_TIERS = (None, "standard", "batch")


def tier_of(reply: ModelReply) -> str | None:
    """The service tier that served the call (usage `service_tier`: "standard", "priority", "batch")."""
    tier = reply.extra.get("service_tier")
    return tier if isinstance(tier, str) else None


def is_fast(reply: ModelReply) -> bool:
    """Whether the call ran in fast mode (usage `speed: "fast"`), which is priced apart."""
    return reply.extra.get("speed") == "fast"
