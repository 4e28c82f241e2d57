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


# Characters that `str.isprintable` calls printable but that show nothing or hide text: variation
# selectors (they can carry hidden text after any character) and the combining grapheme joiner.
_PRINTABLE_BUT_HIDDEN = re.compile("[\u034f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_KEPT = frozenset("\n\t ")  # line breaks and tabs lay out a preview or a diff


def visible(text: str) -> str:
    """`text` with every character that a page or a terminal would not show as itself (controls
    and escape sequences, bidi overrides and isolates, zero-width and other format characters,
    separators other than the space, lone surrogates, private-use and unassigned code points,
    variation selectors) as `\\xNN`, `\\uNNNN` or `\\UNNNNNNNN`; line breaks and tabs are kept, a
    carriage return is escaped. Text from a model or a tool is text from outside: a right-to-left
    override shows `evil.example\\u202e` as another address, a zero-width space makes two values
    look the same, an escape sequence retitles or rewrites the reader's terminal."""
    if all_shown(text):
        return text
    return "".join(c if shown(c) else escaped(c) for c in text)


def all_shown(text: str) -> bool:
    """True when `visible` keeps all of `text` (checked at C speed; a line break or tab says False)."""
    return text.isprintable() and not _PRINTABLE_BUT_HIDDEN.search(text)


def shown(char: str) -> bool:
    """True when `visible` keeps `char` as it is."""
    return char in _KEPT or (char.isprintable() and not _PRINTABLE_BUT_HIDDEN.match(char))


def escaped(char: str) -> str:
    """`char` as the escape `visible` writes: `\\xNN`, `\\uNNNN` or `\\UNNNNNNNN` (YAML's double-quoted
    escapes too)."""
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def one_line(text: str) -> str:
    """`text` to print on one terminal line: line breaks and tabs as spaces, and what `visible`
    escapes as escapes. A model's note or question is text from outside: printed as is, its escape
    sequences could retitle, clear or rewrite the reader's terminal, a carriage return put other
    words over it, or a zero-width character hide what it says."""
    return visible(text.replace("\r\n", " ").replace("\n", " ").replace("\t", " "))


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
