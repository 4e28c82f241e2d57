"""Text that UTF-8 cannot hold (a lone surrogate, as in a file name decoded with `surrogateescape`),
and values that standard JSON cannot (NaN and the infinities); JSON read from outside, strictly."""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """The text with every lone surrogate as U+FFFD (the replacement character)."""
    return LONE_SURROGATE.sub("\ufffd", text)


# What a terminal acts on rather than shows: C0 and C1 controls (escape sequences, carriage
# returns, bells), DEL, and the bidirectional overrides and isolates that reorder a line.
_NOT_SHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def one_line(text: str) -> str:
    """`text` to print on one terminal line: line breaks and tabs as spaces, every other control
    character as a visible escape (`\\x1b`). A model's note or question is text from outside:
    printed as is, its escape sequences could retitle, clear or rewrite the reader's terminal, or
    a carriage return put other words over it."""
    return _NOT_SHOWN.sub(_escaped, text.replace("\r\n", " ").replace("\n", " ").replace("\t", " "))


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


SHOWN_DEPTH = 255  # levels of nesting a response shows (what a run may keep: `_codec.MAX_DEPTH`)
TOO_DEEP = f"(nested deeper than {SHOWN_DEPTH} levels: not shown)"


def json_ready(value: Any, depth: int = 0) -> Any:
    """`value` as standard JSON holds it: NaN and the infinities as null, lone surrogates as U+FFFD,
    what nests deeper than `SHOWN_DEPTH` as `TOO_DEEP`.

    What a run's state or a model's arguments may hold in Python; the service's responses and
    the command line's `--json` lines must still be JSON that any parser reads (a state stored
    deeper by an older release made every listing fail with a RecursionError)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, dict | list | tuple) and depth >= SHOWN_DEPTH:
        return TOO_DEEP
    if isinstance(value, dict):
        return {json_ready(k): json_ready(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v, depth + 1) for v in value]
    return value


def json_text(value: Any, **options: Any) -> str:
    """Standard JSON for `value` (see `json_ready`); `options` as for `json.dumps`."""
    return json.dumps(json_ready(value), allow_nan=False, **options)


class NotStandardJSON(ValueError):
    """Input that is not standard JSON; the message says what is wrong and what to send instead."""


def strict_json(raw: str | bytes, what: str) -> Any:
    """`raw` (`what`, as the message names it: "the body", "--state") read as standard JSON, or a
    `NotStandardJSON` saying why not: not JSON or not UTF-8, NaN or an infinity, a number too long
    to read (over 4300 digits), nesting deeper than the parser goes, a key twice in one object
    (readers disagree on which one counts)."""
    try:
        return json.loads(
            raw,
            parse_constant=functools.partial(_refuse_constant, what),
            object_pairs_hook=functools.partial(_unique_keys, what),
        )
    except NotStandardJSON:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NotStandardJSON(f"{what} is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise NotStandardJSON(f"{what} is not valid JSON here: it is nested too deeply") from exc
    except ValueError as exc:  # an integer of more digits than Python reads (4300)
        raise NotStandardJSON(f"{what} holds a number too long to read: {str(exc)[:120]}") from exc


def _refuse_constant(what: str, name: str) -> Any:
    raise NotStandardJSON(f"{what} is not standard JSON: {name} is not a JSON number; send a number or null")


def _unique_keys(what: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise NotStandardJSON(
                f"{what} holds the key {key[:80]!r} twice in one object (JSON readers disagree on which "
                "one counts); send each key once"
            )
        seen.add(key)
    return value  # not reached: some key came twice
