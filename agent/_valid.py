"""Checks that configuration values share."""

from __future__ import annotations


def is_number(value: object) -> bool:
    """An int or a float, and not a bool (which Python counts as an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
