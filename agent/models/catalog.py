"""The model table: context window, maximum output and prices of each model id.

The rows live in `models.toml` beside this module, each with its source and
the date it was checked. Users override or extend them from a TOML file of
the same format named by `ENDSTATE_MODELS`, or in code with `with_rows`.

    table = ModelTable.load()                     # built in, then ENDSTATE_MODELS
    table.get("claude-sonnet-5-5").context_window  # 1_000_000
"""

from __future__ import annotations

import datetime
import math
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal

from agent._valid import is_number, is_whole
from agent.errors import ConfigError
from agent.models.price import Price

ENV_MODELS = "ENDSTATE_MODELS"
ENV_MODEL = "ENDSTATE_MODEL"
DEFAULT_MODEL = "claude-sonnet-5-5"  # current on 2026-11-30; ENDSTATE_MODEL overrides it
BUILTIN = Path(__file__).with_name("models.toml")

Status = Literal["active", "deprecated", "retired"]
Thinking = Literal["always", "default", "adaptive"]
_STATUSES: tuple[str, ...] = ("active", "deprecated", "retired")
_PRICE_KEYS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h", "web_search_per_1k")
_ROW_KEYS = frozenset(
    {
        *_PRICE_KEYS,
        "context_window",
        "max_output",
        "long_prompt",
        "fast",
        "priority",
        "thinking",
        "price",
        "reason",
        "status",
        "retires",
        "note",
        "source",
        "checked",
        "alias_of",
    }
)


@dataclass(frozen=True)
class ModelInfo:
    """One row of the model table.

    `price` is None when no price is known; `unknown_price_reason` then says
    why. `status` is `active`, `deprecated` (still callable, `retires` on a
    date) or `retired` (the API refuses it; a deprecated row reads as retired
    from its `retires` date on). `thinking` says when a model thinks with no
    `thinking` asked for: "always" (its thinking cannot be turned off: the API
    refuses thinking disabled, and a `tool_choice` that forces a call),
    "default" (it thinks unless thinking is disabled) or "adaptive" (it thinks
    only when asked to, adaptively). Each of these models refuses a thinking
    budget and sampling parameters.
    """

    id: str
    context_window: int | None = None
    max_output: int | None = None
    price: Price | None = None
    unknown_price_reason: str = ""
    status: Status = "active"
    retires: datetime.date | None = None
    note: str = ""
    source: str = ""
    checked: datetime.date | None = None
    thinking: Thinking | None = None


class ModelTable:
    """Model ids and what is known about them; dated ids fall back to their family's row."""

    def __init__(self, rows: Mapping[str, ModelInfo], aliases: Mapping[str, str] | None = None) -> None:
        self._rows = dict(rows)
        self._aliases = dict(aliases or {})

    @classmethod
    def builtin(cls) -> ModelTable:
        """The table shipped with Endstate."""
        return _builtin()

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None) -> ModelTable:
        """The built-in table, with the rows of the file named by `ENDSTATE_MODELS` over it."""
        path = (os.environ if env is None else env).get(ENV_MODELS)
        table = cls.builtin()
        return table.merged(cls.from_file(Path(path))).checked(path) if path else table

    @classmethod
    def from_file(cls, path: Path) -> ModelTable:
        """A table from a TOML file; a clear `ConfigError` when it cannot be read."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read the model table {str(path)!r} ({ENV_MODELS}): {exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"the model table {str(path)!r} ({ENV_MODELS}) is not UTF-8 text (byte {exc.start}): "
                "save it as UTF-8 TOML"
            ) from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"the model table {str(path)!r} is not valid TOML: {exc}") from exc
        return cls.from_dict(data, where=str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "model table") -> ModelTable:
        """A table from the parsed TOML: `{"models": {id: row}}`."""
        models = data.get("models")
        if not isinstance(models, dict):
            raise ConfigError(f'{where}: expected a [models."<id>"] table per model')
        rows: dict[str, ModelInfo] = {}
        aliases: dict[str, str] = {}
        for model_id, row in models.items():
            if not isinstance(row, dict):
                raise ConfigError(f"{where}: models.{model_id!r} must be a table")
            if "alias_of" in row:
                aliases[model_id] = _alias_target(row, f"{where}: models.{model_id!r}")
            else:
                rows[model_id] = parse_row(model_id, row, where)
        return cls(rows, aliases)

    def merged(self, other: ModelTable) -> ModelTable:
        """This table with `other`'s rows and aliases replacing or adding to its own (a row replacing
        an alias of this table, an alias replacing a row)."""
        rows = {k: v for k, v in {**self._rows, **other._rows}.items() if k not in other._aliases}
        aliases = {k: v for k, v in {**self._aliases, **other._aliases}.items() if k not in other._rows}
        return ModelTable(rows, aliases)

    def checked(self, where: str) -> ModelTable:
        """This table, or a `ConfigError` naming an alias whose target is no row of it."""
        for model_id, target in sorted(self._aliases.items()):
            if target not in self._rows:
                raise ConfigError(
                    f"{where}: models.{model_id!r}: alias_of {target!r} names no row of the model table "
                    "(an alias names a model's own row, not another alias)"
                )
        return self

    def with_rows(self, rows: Mapping[str, ModelInfo | Mapping[str, Any]]) -> ModelTable:
        """This table with rows given in code (a `ModelInfo`, or a dict shaped like a TOML row)."""
        parsed = {
            model_id: (
                replace(row, id=model_id) if isinstance(row, ModelInfo) else parse_row(model_id, dict(row))
            )
            for model_id, row in rows.items()
        }
        aliases = {k: v for k, v in self._aliases.items() if k not in parsed}  # a row replaces an alias
        return ModelTable({**self._rows, **parsed}, aliases)

    def get(self, model: str) -> ModelInfo | None:
        """The row for `model`: its own, its alias target's, or its family's for a dated id; for an
        Amazon Bedrock or Vertex AI id of a Claude model with no row of its own, the Claude API
        id's row, priced as `partner_price` says."""
        if (row := self._own(model)) is not None:
            return row
        partner = partner_id(model)
        if partner is None or (row := self._own(partner.claude_id)) is None:
            return None
        return partner_row(row, model, partner)

    def _own(self, model: str) -> ModelInfo | None:
        for candidate in (model, _undated(model)):
            candidate = self._aliases.get(candidate, candidate)
            if candidate in self._rows:
                return self._rows[candidate]
        return None

    def ids(self) -> list[str]:
        """Every id the table answers for, aliases included."""
        return sorted({*self._rows, *self._aliases})

    def __iter__(self) -> Iterator[ModelInfo]:
        return iter(self._rows.values())

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.get(model) is not None


def default_model(env: Mapping[str, str] | None = None) -> str:
    """The model Endstate uses when none is named: `ENDSTATE_MODEL`, else `DEFAULT_MODEL`."""
    return (os.environ if env is None else env).get(ENV_MODEL) or DEFAULT_MODEL


# -- parsing -------------------------------------------------------------------


_ALIAS_KEYS = frozenset({"alias_of", "note", "source", "checked"})


def _alias_target(row: Mapping[str, Any], at: str) -> str:
    """The id an alias row names; `ConfigError` for one that is no id, or a row with keys it ignores."""
    target = row["alias_of"]
    if not (isinstance(target, str) and target.strip()):
        raise ConfigError(f"{at}: alias_of must be a model id (a string), got {target!r:.60}")
    if other := sorted(set(row) - _ALIAS_KEYS):
        raise ConfigError(
            f"{at}: an alias takes no other keys (it shares {target!r}'s row), got {other}: "
            "drop alias_of to give the id a row of its own"
        )
    return target


def parse_row(model_id: str, row: Mapping[str, Any], where: str = "model table") -> ModelInfo:
    """A `ModelInfo` from a TOML row, checked: unknown keys, bad numbers and a missing reason are errors."""
    at = f"{where}: models.{model_id!r}"
    if unknown := sorted(set(row) - _ROW_KEYS):
        raise ConfigError(f"{at}: unknown keys {unknown}; known: {sorted(_ROW_KEYS)}")
    status = str(row.get("status", "active"))
    if status not in _STATUSES:
        raise ConfigError(f"{at}: status must be one of {list(_STATUSES)}, got {status!r}")
    price, reason = _price_and_reason(row, at)
    retires = _date(row, "retires", at)
    thinking = row.get("thinking")
    if thinking not in (None, "always", "default", "adaptive"):
        raise ConfigError(
            f'{at}: thinking must be "always" (it cannot be turned off), "adaptive" (only when asked, '
            f'adaptively) or "default" (on unless disabled), got {thinking!r}'
        )
    if status == "deprecated" and retires is not None and retires <= datetime.date.today():
        status = "retired"  # its retirement date has come: calls naming it fail
    return ModelInfo(
        id=model_id,
        context_window=_tokens(row, "context_window", at),
        max_output=_tokens(row, "max_output", at),
        price=price,
        unknown_price_reason=reason,
        status=status,  # type: ignore[arg-type]
        retires=retires,
        note=str(row.get("note", "")),
        source=str(row.get("source", "")),
        checked=_date(row, "checked", at),
        thinking=thinking,
    )


def _price_and_reason(row: Mapping[str, Any], at: str) -> tuple[Price | None, str]:
    if row.get("price") == "unknown":
        reason = str(row.get("reason", "")).strip()
        if not reason:
            raise ConfigError(f'{at}: price = "unknown" needs a reason = "..." saying why')
        return None, reason
    if "price" in row:
        raise ConfigError(f'{at}: price may only be "unknown"; give input = and output = prices instead')
    if "input" not in row or "output" not in row:
        raise ConfigError(f'{at}: give input = and output = (USD per million tokens), or price = "unknown"')
    price = _with_long_prompt(_price(row, at), row.get("long_prompt"), at)
    fast, priority = (_apart_price(row[kind], kind, at) if kind in row else None for kind in _APART)
    return replace(price, fast=fast, priority=priority), ""


# The prices of calls priced apart a row may give: fast mode's, and Priority Tier's (your contract's).
_APART = {"fast": "fast-mode", "priority": "Priority Tier"}


def _apart_price(table: Any, kind: str, at: str) -> Price:
    """The price of a row's `fast` or `priority` table."""
    if not isinstance(table, dict) or "input" not in table or "output" not in table:
        raise ConfigError(f"{at}: {kind} must be a table with the {_APART[kind]} input = and output = prices")
    if unknown := sorted(set(table) - {*_PRICE_KEYS, "long_prompt"}):
        raise ConfigError(f"{at}.{kind}: unknown keys {unknown}")
    return _with_long_prompt(_price(table, f"{at}.{kind}"), table.get("long_prompt"), f"{at}.{kind}")


def _with_long_prompt(price: Price, long: Any, at: str) -> Price:
    """`price` with its `long_prompt` tier, when the row has one."""
    if long is None:
        return price
    above = long.get("above") if isinstance(long, dict) else None
    if not (is_whole(above) and above > 0):
        raise ConfigError(f"{at}: long_prompt must be a table with above = <tokens> and its prices")
    tier = _price(
        {"input": price.input_per_mtok, "output": price.output_per_mtok, **long}, at + ".long_prompt"
    )
    return replace(price, long_prompt_above=above, long_prompt=tier)


def _price(row: Mapping[str, Any], at: str) -> Price:
    values: dict[str, float | None] = {}
    for key in _PRICE_KEYS:
        value = row.get(key)
        if value is not None and not (is_number(value) and 0 <= value < math.inf):  # nan and inf too
            unit = "USD per 1,000 searches" if key == "web_search_per_1k" else "USD per million tokens"
            raise ConfigError(f"{at}: {key} must be a number >= 0 ({unit}), got {value!r}")
        values[key] = None if value is None else float(value)
    return Price(
        input_per_mtok=values["input"] or 0.0,
        output_per_mtok=values["output"] or 0.0,
        cache_read_per_mtok=values["cache_read"],
        cache_write_5m_per_mtok=values["cache_write_5m"],
        cache_write_1h_per_mtok=values["cache_write_1h"],
        web_search_per_1k=values["web_search_per_1k"],
    )


def _tokens(row: Mapping[str, Any], key: str, at: str) -> int | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{at}: {key} must be a positive whole number of tokens, got {value!r}")
    return value


def _date(row: Mapping[str, Any], key: str, at: str) -> datetime.date | None:
    value = row.get(key)
    if value is None or isinstance(value, datetime.date):
        return value
    raise ConfigError(f"{at}: {key} must be a TOML date such as 2026-11-30, got {value!r}")


@dataclass(frozen=True)
class PartnerId:
    """A Claude model's id on a partner platform: which platform, the Claude API's id of the same
    model, and whether it names a global endpoint (priced as the Claude API)."""

    platform: Literal["Amazon Bedrock", "Vertex AI"]
    claude_id: str
    global_endpoint: bool = False


# Bedrock: [arn:aws:bedrock:<region>:<account>:(foundation-model|inference-profile)/]
#          [<geo>.]anthropic.<id>[-v<n>[:<m>]]
_BEDROCK = re.compile(
    r"(?:arn:aws[\w-]*:bedrock:[\w-]*:\d*:(?:foundation-model|inference-profile)/)?"
    r"(?:(?P<geo>[a-z]{2,6}(?:-[a-z]+)?)\.)?anthropic\.(?P<id>claude-[a-z0-9.-]+?)(?:-v\d+(?::\d+)?)?"
)
# Vertex AI: [[projects/<p>/locations/<l>/]publishers/anthropic/models/]<id>[@<date>] (a path or a date)
_VERTEX = re.compile(
    r"(?P<path>(?:projects/[^/]+/locations/(?P<location>[^/]+)/)?publishers/anthropic/models/)?"
    r"(?P<id>claude-[a-z0-9.-]+?)(?:@(?P<date>\d{8}|latest))?"
)


@lru_cache(maxsize=1024)
def partner_id(model: str) -> PartnerId | None:
    """`model` read as an Amazon Bedrock id (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`, or an
    inference profile's ARN) or a Vertex AI id (`claude-sonnet-4-5@20250929`), else None."""
    if found := _BEDROCK.fullmatch(model):
        return PartnerId("Amazon Bedrock", found["id"], found["geo"] == "global")
    if (found := _VERTEX.fullmatch(model)) and (found["path"] or found["date"]):
        date = found["date"]
        claude_id = found["id"] if date in (None, "latest") else f"{found['id']}-{date}"
        return PartnerId("Vertex AI", claude_id, found["location"] == "global")
    return None


def partner_row(row: ModelInfo, model: str, partner: PartnerId) -> ModelInfo:
    """The Claude API row `row` for the partner id `model`: the same model, so the same context
    window, output, thinking and lifecycle. Its price is the Claude API's list price on a global
    endpoint only (Bedrock's `global.` profile, a Vertex AI path in `locations/global`): the
    platforms price regional endpoints apart (10% over the global price for Claude Sonnet 4.5 and
    later), and most ids do not say which endpoint is called (a Vertex AI client's region does).
    That price is unknown until one is given, never guessed."""
    if row.price is None or partner.global_endpoint:
        return replace(row, id=model)
    reason = (
        f"{partner.platform} prices {partner.claude_id!r} by endpoint (regional endpoints above the "
        "Claude API's list price), and the id does not say which price applies"
    )
    return replace(row, id=model, price=None, unknown_price_reason=reason)


@lru_cache(maxsize=1024)  # asked once a model call: the same few names every time
def _undated(model: str) -> str:
    dated = re.fullmatch(r"(.+)-\d{8}", model)
    return dated.group(1) if dated else model


@cache
def _builtin() -> ModelTable:
    return ModelTable.from_file(BUILTIN)
