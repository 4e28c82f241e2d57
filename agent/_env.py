"""Endstate's own environment settings, read the one way: a bad value is a `ConfigError` that names the
variable, says what it is for and what to set."""

from __future__ import annotations

import os

from agent._valid import seconds_in
from agent.errors import ConfigError


def seconds_variable(name: str, default: float, most: float, what: str) -> float:
    """The seconds environment variable `name` holds, above 0 and at most `most` (unset or blank:
    `default`); `what` says what they bound, in the error for any other value."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    seconds = seconds_in(text, most)
    if seconds is None:
        raise ConfigError(
            f"${name} must be a number of seconds above 0 and at most {most:g} ({what}), not {text[:40]!r}"
        )
    return seconds
