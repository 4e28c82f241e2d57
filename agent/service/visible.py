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
from typing import Any

from agent.text import all_shown, shown, visible

__all__ = ["escape", "shown_json", "visible", "visible_json"]


def visible_json(value: Any, **options: Any) -> str:
    """`value` as JSON (`options` as for `json.dumps`) that reads as it is and shows every character
    `visible` would escape, as a JSON escape (`\\u202e`; a surrogate pair past U+FFFF): still the
    JSON of `value`, so a person can copy it."""
    return shown_json(json.dumps(value, ensure_ascii=False, **options))


def shown_json(text: str) -> str:
    """JSON `text` (written with `ensure_ascii=False`) with what `visible` escapes as JSON escapes:
    the same JSON to a parser; to a person (a terminal that `curl` prints to, a page), no character
    that acts or hides (JSON escapes only C0 controls: not DEL, C1's CSI, bidi overrides)."""
    if all_shown(text):
        return text
    return "".join(c if shown(c) else _json_escape(c) for c in text)


def _json_escape(char: str) -> str:
    return json.dumps(char)[1:-1]  # `\\u202e`, or a pair of `\\ud83d`-style escapes


def escape(text: str) -> str:
    """`text` for HTML: made `visible`, then HTML-escaped (quotes too, for attribute values)."""
    return html.escape(visible(text))
