"""Per-model prices: the model table's, then your overrides; an unknown price is unknown, never $0.

A call is priced by the model asked for. The model its reply names (`message.model`) comes from the
server, and a gateway or a hostile server may name a cheaper model than it ran, or one with no price:
a cost ceiling (a `limit` stop) must not count less for it. So a reply naming the model asked (the
same id, a dated id of it, an id the model table's `alias_of` gives the same row, or a Bedrock or
Vertex AI id's Claude API id) is priced as asked; one naming another model (a server-side fallback, a
gateway's routing) is priced at the dearer of the two models' prices, or at the asked model's when
the other has none (what the call costs at least: an unknown cost would leave the call out of the
ceiling), and a warning names both, once per pair. A price given for the name asked (a proxy's alias:
`PriceTable({name: Price(...)})`) is what its calls cost, whatever the reply names. The chat span keeps
the named model as `gen_ai.response.model`. The parts of a call's usage that name a model each (a
server-side fallback's attempts, an advisor's answer) follow the same rule: a part naming a model the
request named for it (the model asked; for a fallback's attempt, a model of its `fallbacks` list; for an
advisor's answer, its advisor tool's model) is priced at that model's price; one naming any other model
(every model when the request leaves the fallback to the API, `fallbacks: "default"`) is marked by the
adapter (`NAMED_UNASKED`) and priced as a reply naming it is, at the dearer of it and the model asked
(an advisor's answer at no less than the advisor asked: `PRICED_AT_LEAST`). The
loop's cost ceiling, the run's cost, the spans and the metrics all take a call's cost from
`PriceTable.usage_of`: one path.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from agent.errors import ConfigError
from agent.models.base import COUNT_UNKNOWN, NAMED_UNASKED, NOT_BILLED, PRICED_AT_LEAST

if TYPE_CHECKING:
    from agent.models.base import ModelReply

from agent.models.catalog import ModelTable, partner_id
from agent.models.price import Price, is_fast, tier_of
from agent.usage import Usage

log = logging.getLogger("endstate")

MOST_NAMED_PAIRS = 1000  # pairs of (asked, named) models warned of: a server may name any model
MOST_SAID = 1000  # warnings the process remembers having given (see `_first_time`)

_said: set[tuple[str, ...]] = set()
_said_lock = threading.Lock()


def _first_time(*key: str) -> bool:
    """True the first time in this process a warning of `key` is to be given. A runner or service
    builds an agent, and so a price table, for every run: a warning once per table was one a run,
    as many lines as runs for a model of the fleet with no price. The first `MOST_SAID` keys are
    remembered (a server may name any model); past them each table still warns once."""
    with _said_lock:
        if key in _said:
            return False
        if len(_said) < MOST_SAID:
            _said.add(key)
        return True


def _once(seen: set[tuple[str, str]], key: tuple[str, str], kind: str, *detail: str) -> bool:
    """True the first time a table (`seen`, its own warnings) and then the process (`_first_time`) are to
    give the warning `kind` of `key` (its models) and `detail`; marks the table's either way."""
    if key in seen:
        return False
    seen.add(key)
    return _first_time(kind, *key, *detail)


class PriceTable:
    """Per-model prices: the model table's (see `agent.models.catalog`), then yours.

    `overrides` replace or extend the table's prices (None for a model: its price is
    unknown). Each is checked when the table is made. A model with no known
    price costs `None` from `cost_of` (never $0): the first time per model in the
    process a warning is logged (not once per table: a runner builds an agent a
    run), and `on_unknown(model)` is called on every such call (a counter hook for
    telemetry).
    """

    def __init__(
        self,
        overrides: Mapping[str, Price | None] | None = None,
        *,
        models: ModelTable | None = None,
        on_unknown: Callable[[str], None] | None = None,
        every_attempt: bool = True,
    ) -> None:
        self._overrides = _checked_overrides(overrides)
        if on_unknown is not None and not callable(on_unknown):
            raise ConfigError(
                f"PriceTable: on_unknown must be a function of the model's name, not {on_unknown!r:.60}"
            )
        if models is not None and not isinstance(models, ModelTable):
            raise ConfigError(
                f"PriceTable: models must be a ModelTable (ModelTable.load()), not {type(models).__name__}"
            )
        # a server-side fallback's tokens: every attempt's (False: the reply's own counts, as a
        # Temporal run started before counted them, so that it replays as it ran)
        self.every_attempt = every_attempt
        self.models = models if models is not None else ModelTable.load()
        self.on_unknown = on_unknown
        self._warned: set[tuple[str, str]] = set()
        self._found: dict[str, Price | None] = {}  # asked once a model call: the same few names
        self._priced_as: dict[str, str] = {}  # a model's name -> the id the table prices it by
        self._named: set[tuple[str, str]] = set()  # (asked, named) pairs a reply named apart, warned of

    def pricing_as(self, ids: Mapping[str, str]) -> PriceTable:
        """This table, but each model named in `ids` priced by the table's row for the id it maps
        to (an adapter's `priced_as`: a Vertex AI client's `global` region); a price given for the
        name itself still wins."""
        table = PriceTable(
            self._overrides, models=self.models, on_unknown=self.on_unknown, every_attempt=self.every_attempt
        )
        table._priced_as = {**self._priced_as, **ids}
        return table

    def price(self, model: str) -> Price | None:
        """The price of `model` (an override first, then the model table), or None."""
        try:
            return self._found[model]
        except KeyError:
            found = self._found[model] = self._look_up(model)
            return found

    def _look_up(self, model: str) -> Price | None:
        if model in self._overrides:
            return self._overrides[model]
        family = _family(model)
        if family in self._overrides:
            return self._overrides[family]
        info = self.models.get(self._priced_as.get(model, model))
        return info.price if info is not None else None

    def _given(self, model: str) -> bool:
        """Whether a price was passed for `model` (or its family) rather than read from the table."""
        return model in self._overrides or _family(model) in self._overrides

    def knows(self, model: str) -> bool:
        return self.price(model) is not None

    def unknown_reason(self, model: str) -> str:
        """Why `model` has no price: the table's reason, or that it is not in the table."""
        info = self.models.get(self._priced_as.get(model, model))
        if info is not None and info.unknown_price_reason:
            return info.unknown_price_reason
        return "it is not in the model table"

    def require(self, model: str, agent: str, *, fast: bool = False) -> None:
        """Refuse a cost budget on a model whose price is unknown, or (`fast`: its calls ask for fast
        mode) whose fast-mode price is: a `ConfigError` that says what to do."""
        price = self.price(model)
        if price is not None and (not fast or price.fast is not None):
            return
        if price is None:
            raise ConfigError(
                f"agent {agent!r} has a cost budget but no price for model {model!r} "
                f"({self.unknown_reason(model)}); pass "
                f"prices=PriceTable({{{model!r}: Price(input, output)}}) "
                "or add the model to the file named by ENDSTATE_MODELS"
            )
        raise ConfigError(
            f"agent {agent!r} has a cost budget and asks model {model!r} for fast mode (speed 'fast'), "
            "which has no fast-mode price: its calls would cost unknown and the budget not bound them; "
            "give the row fast = { input = ..., output = ... } in the file named by ENDSTATE_MODELS, or "
            f"pass prices=PriceTable({{{model!r}: Price(input, output, fast=Price(input, output))}})"
        )

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        """Dollar cost of uncached input and output; 0.0 for a model with no price. Prefer `cost_of`."""
        price = self.price(model)
        return price.cost(input_tokens, output_tokens) if price else 0.0

    def cost_of(self, model: str, reply: ModelReply) -> float | None:
        """Dollar cost of one call to `model`, cache reads and writes included; None when the price is
        unknown. A reply that names another model than `model` (not a dated id of it, an `alias_of`
        either way, nor its Claude API id) is priced at the dearer of the two models' prices, or at
        `model`'s when the other has none, and a warning says so once per pair: the name comes from
        the server, and a gateway naming a cheaper model must not lower what a cost ceiling counts.
        A price given for `model` itself (a proxy's alias) is what its calls cost, whatever the reply
        names. A server-side fallback's parts (`billed_by_model`) are each priced as its model, but one
        naming a model its request did not name, by `model` so (`_parts_cost`)."""
        if reply.extra.get(COUNT_UNKNOWN) is True:  # the provider did not say what the call read
            self._report_uncounted(model)
            return None
        if reply.extra.get(NOT_BILLED) is True:  # the provider bills nothing of it (a refusal, say)
            return 0.0
        parts = reply.billed_by_model  # a server-side fallback: each model's part at its price
        cost = self._parts_cost(model, parts) if parts else self._own_cost(model, reply)
        if not (apart := reply.billed_apart):  # most replies: nothing billed apart
            return cost
        apart_cost = self._parts_cost(model, apart)  # a server-side compaction, an advisor
        return None if cost is None or apart_cost is None else cost + apart_cost

    def _parts_cost(self, model: str, parts: list[ModelReply]) -> float | None:
        """The cost of calls each at its own model's price (`model` for those that name none), but for
        a part naming a model its request did not name (`NAMED_UNASKED`): priced as a reply's own
        model is, by `model` (`_unasked_cost`: the dearer of the two, or of an advisor asked), so that a
        server naming a cheaper model in a part does not lower what a cost ceiling counts."""
        total = 0.0
        for part in parts:
            if part.extra.get(NOT_BILLED) is True:  # a fallback's attempt declined before any output
                continue
            if part.extra.get(NAMED_UNASKED) is True:
                cost = self._unasked_cost(model, part)
            else:
                cost = self._own_cost(part.model or model, part)
            if cost is None:
                return None
            total += cost
        return total

    def _unasked_cost(self, model: str, part: ModelReply) -> float | None:
        """The cost of a part naming a model its request did not name: as a reply naming it is, by `model`,
        and no less than by any model the request named for it (`PRICED_AT_LEAST`, an advisor tool's)
        whose price is known; unknown when `model`'s is."""
        cost = self._own_cost(model, part)
        at_least = [m for m in part.extra.get(PRICED_AT_LEAST, ()) if m != model and self._covers(m, part)]
        if cost is None or not at_least:
            return cost
        return max([cost, *(self._own_cost(m, part) or 0.0 for m in at_least)])

    def _covers(self, model: str, reply: ModelReply) -> bool:
        """Whether `model` has a price for all of `reply` (its fast mode, say)."""
        price = self.price(model)
        return price is not None and price.covers(reply)

    def _own_cost(self, model: str, reply: ModelReply) -> float | None:
        """One call's cost, by the model asked (`model`) and the one its reply names (`reply.model`):
        the same model (`same_model`), or a price given for the name asked, prices it as asked;
        another model prices it at the dearer of the two (`_dearer`)."""
        named = reply.model
        if named and named != model and not self._given(model) and not self.same_model(model, named):
            return self._dearer(model, named, reply)
        return self._priced(model, reply)

    def _priced(self, model: str, reply: ModelReply) -> float | None:
        """`reply`'s cost at `model`'s price; None (said once, counted) when it has none for it."""
        price = self.price(model)
        if price is not None and price.covers(reply):
            return price.cost_of(reply)
        self._report_unknown(model, apart=_apart(price, reply) if price is not None else "")
        return None

    def _dearer(self, model: str, named: str, reply: ModelReply) -> float | None:
        """The cost of a call of `model` whose reply names another model, `named` (a server-side
        fallback, a gateway's routing, or a server naming a cheaper model than it ran): the dearer
        of the two prices; unknown when `model`'s is; `model`'s when `named` has no price (what the
        call costs at least, so that a cost ceiling still counts it)."""
        asked = self._priced(model, reply)
        price = self._named_price(named)
        other = price.cost_of(reply) if price is not None and price.covers(reply) else None
        if asked is None:
            self._report_named(model, named, f"its cost is unknown, as {model!r}'s is")
            return None
        if other is None:
            why = f"{named!r} has no price for it: priced as {model!r}, its least cost"
            self._report_named(model, named, why)
            return asked
        self._report_named(model, named, "priced at the dearer of the two models' prices")
        return max(asked, other)

    def _named_price(self, named: str) -> Price | None:
        """The price of a model a reply names: looked up, not kept (a server may name any model: a
        cache of its names would grow without bound) unless already known."""
        return self._found[named] if named in self._found else self._look_up(named)

    def same_model(self, model: str, named: str) -> bool:
        """Whether a reply naming `named` answered a call of `model` with the model asked: the same id,
        one dated and one not ("claude-opus-4-5", "claude-opus-4-5-20251101"), ids the model table
        gives one row (`alias_of`, either way), or a Bedrock or Vertex AI id's Claude API id."""
        if _family(named) == _family(model):
            return True
        partner = partner_id(model)
        if partner is not None and _family(partner.claude_id) == _family(named):
            return True
        asked_row = self.models.get(self._priced_as.get(model, model))
        named_row = self.models.get(named)
        return asked_row is not None and named_row is not None and asked_row.id == named_row.id

    def _report_named(self, model: str, named: str, how: str) -> None:
        """Warn once per pair of models (for the first `MOST_NAMED_PAIRS`) that a call of `model` was
        answered by a reply naming `named`, and `how` it was priced."""
        if len(self._named) >= MOST_NAMED_PAIRS or not _once(self._named, (model, named), "named", how):
            return
        log.warning(
            "a call of model %r was answered by a reply naming another model, %r: %s "
            "(a server-side fallback or a gateway's routing may do this; a price given for %r, "
            "PriceTable({%r: Price(...)}), is taken as what its calls cost)",
            model,
            named,
            how,
            model,
            model,
        )

    def usage_of(self, model: str, reply: ModelReply) -> Usage:
        """One call's usage: its tokens of each kind (those of the calls billed apart within it too),
        and its cost (None when a price is unknown)."""
        if not reply.extra:  # most replies: nothing billed apart nor by model, no fast mode
            return _tokens_of(reply, self._own_cost(model, reply))
        usage = _tokens_of(reply, self.cost_of(model, reply))
        if self.every_attempt and (parts := reply.billed_by_model):  # a server-side fallback: every
            usage = sum((_tokens_of(part) for part in parts), Usage(cost_usd=usage.cost_usd))  # attempt's
        for part in reply.billed_apart:  # priced by `cost_of`, counted here
            usage += _tokens_of(part)
        return usage

    def _report_uncounted(self, model: str) -> None:
        """Warn once per model that a call's input count was no count, so its cost is unknown."""
        if _once(self._warned, (model, COUNT_UNKNOWN), "uncounted"):
            log.warning(
                "a call of model %r gave no count of its input that a call could have: "
                "its cost is reported as unknown, never as a number it did not say",
                model,
            )

    def _report_unknown(self, model: str, *, apart: str = "") -> None:
        """Warn once per model (and once more for each way a call of it is priced `apart`: fast
        mode, Priority Tier), and count every call."""
        if (model, apart) not in self._warned and _once(  # (first: the reason is read for a first only)
            self._warned, (model, apart), "unknown", "" if apart else self.unknown_reason(model)
        ):
            if apart:
                log.warning(
                    "no %s price for model %r (%s, priced apart): its cost is reported as unknown%s",
                    apart,
                    model,
                    _APART_WHY.get(
                        apart, f"the {apart!r} service tier served a call, which has no known rule"
                    ),
                    f"; give the row a {apart} = {{ input = ..., output = ... }}"
                    if apart in _APART_WHY
                    else "",
                )
            else:
                log.warning(
                    "no price for model %r (%s): its cost is reported as unknown",
                    model,
                    self.unknown_reason(model),
                )
        if self.on_unknown is not None:
            self.on_unknown(model)


# Why a call priced apart is: fast mode's prices, and Priority Tier's, which Anthropic sells under
# contract as a capacity commitment and publishes no price per token for.
_APART_WHY = {
    "fast": "a call ran with speed 'fast'",
    "priority": "Priority Tier served a call: it is priced by your contract, not published",
}


def _apart(price: Price, reply: ModelReply) -> str:
    """How `reply`'s call is priced apart, which `price` does not price: "fast", or the service tier
    that served it ("priority", or one with no known rule)."""
    return "fast" if is_fast(reply) and price.fast is None else str(tier_of(reply))


@functools.lru_cache(maxsize=1024)  # asked once a model call: the same few names every time
def _family(model: str) -> str:
    """A dated id such as "claude-sonnet-4-5-20250929" without its date."""
    dated = re.fullmatch(r"(.+)-\d{8}", model)
    return dated.group(1) if dated else model


def _tokens_of(reply: ModelReply, cost: float | None = 0.0) -> Usage:
    """A call's tokens of each kind, as a `Usage` of `cost`."""
    return Usage(
        reply.input_tokens,
        reply.output_tokens,
        reply.cache_read_input_tokens,
        reply.cache_creation_input_tokens,
        cost,
    )


def _checked_overrides(overrides: object) -> dict[str, Price | None]:
    """`PriceTable`'s overrides, refused when made unless each is a model's name (or family) and its
    `Price` (None: its price is unknown): a wrong one failed every model call it priced, blamed on the
    model adapter."""
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise ConfigError(
            "PriceTable takes a mapping of model name to Price, say PriceTable({'claude-sonnet-5-5': "
            f"Price(3.0, 15.0)}}), not {type(overrides).__name__}"
        )
    for model, price in overrides.items():
        if not (isinstance(model, str) and model.strip()):
            raise ConfigError(f"PriceTable: a model name must be a non-empty string, not {model!r:.60}")
        if price is not None and not isinstance(price, Price):
            raise ConfigError(
                f"PriceTable: the price of {model!r} must be a Price (US dollars per million tokens: "
                f"Price(input, output)), not {type(price).__name__} {price!r:.60}"
            )
    return dict(overrides)
