"""Text that UTF-8 cannot hold: a lone surrogate, as in a file name decoded with `surrogateescape`."""

from __future__ import annotations

import re

LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """The text with every lone surrogate as U+FFFD (the replacement character)."""
    return LONE_SURROGATE.sub("\ufffd", text)
