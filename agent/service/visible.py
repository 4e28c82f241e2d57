"""Text from a model or a tool, made visible for a page: every character a browser would not show
as itself written as an escape.

A pending call's arguments, a question, a tool's result or preview is text an attacker may have
written (a web page the agent read). HTML-escaped it can no longer run, but a browser still acts
on some characters instead of showing them: a right-to-left override (U+202E) shows the rest of
the line reversed, so `evil.example\u202e` reads as another address; a zero-width space, a soft
hyphen, a Unicode tag character (U+E0000 block) or a variation selector shows nothing at all, so
two values that differ look the same, or words hide in a value. Written as `\\u202e`, what the
person approves is what the call gets.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

# Invisible or reordering characters that `str.isprintable` calls printable: variation selectors
# (they can carry hidden text after any character) and the combining grapheme joiner.
_PRINTABLE_BUT_HIDDEN = re.compile("[\u034f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_KEPT = frozenset("\n\t ")  # line breaks and tabs lay out a preview or a diff


def visible(text: str) -> str:
    """`text` with every character that a page would not show as itself (controls, bidi overrides
    and isolates, zero-width and other format characters, separators other than the space, lone
    surrogates, private-use and unassigned code points, variation selectors) as `\\xNN`, `\\uNNNN`
    or `\\UNNNNNNNN`; line breaks and tabs are kept, a carriage return is escaped."""
    if text.isprintable() and not _PRINTABLE_BUT_HIDDEN.search(text):
        return text
    return "".join(c if _shown(c) else _escape(c) for c in text)


def _shown(char: str) -> bool:
    return char in _KEPT or (char.isprintable() and not _PRINTABLE_BUT_HIDDEN.match(char))


def _escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible_json(value: Any, **options: Any) -> str:
    """`value` as JSON (`options` as for `json.dumps`) that reads as it is and shows every character
    `visible` would escape, as a JSON escape (`\\u202e`; a surrogate pair past U+FFFF): still the
    JSON of `value`, so a person can copy it."""
    return shown_json(json.dumps(value, ensure_ascii=False, **options))


def shown_json(text: str) -> str:
    """JSON `text` (written with `ensure_ascii=False`) with what `visible` escapes as JSON escapes:
    the same JSON to a parser; to a person (a terminal that `curl` prints to, a page), no character
    that acts or hides (JSON escapes only C0 controls: not DEL, C1's CSI, bidi overrides)."""
    if text.isprintable() and not _PRINTABLE_BUT_HIDDEN.search(text):
        return text
    return "".join(c if _shown(c) else _json_escape(c) for c in text)


def _json_escape(char: str) -> str:
    return json.dumps(char)[1:-1]  # `\\u202e`, or a pair of `\\ud83d`-style escapes


def escape(text: str) -> str:
    """`text` for HTML: made `visible`, then HTML-escaped (quotes too, for attribute values)."""
    return html.escape(visible(text))
