"""Checks that configuration values share."""

from __future__ import annotations

import math
from typing import TypeGuard


def is_number(value: object) -> TypeGuard[int | float]:
    """An int or a float, and not a bool (which Python counts as an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_whole(value: object) -> TypeGuard[int]:
    """An int, and not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_count(value: object) -> TypeGuard[int]:
    """A whole number from 0 to 2**63 - 1 (see `is_whole`): a count of tokens, turns or segments a
    store holds and a provider reports."""
    return is_whole(value) and 0 <= value < 2**63


def is_text(value: object) -> TypeGuard[str]:
    """A string with more than blanks in it."""
    return isinstance(value, str) and bool(value.strip())


def is_finite_from_zero(value: object) -> TypeGuard[int | float]:
    """A number (see `is_number`) from 0 up, neither infinite nor NaN: seconds, an amount."""
    return is_number(value) and 0 <= value < math.inf


def is_finite_number(value: object) -> TypeGuard[int | float]:
    """A number (see `is_number`) that is neither infinite nor NaN, and that a float holds (an int
    such as 10**400 does not: `math.isfinite` raised OverflowError for it)."""
    try:
        return is_number(value) and math.isfinite(value)
    except OverflowError:
        return False


def seconds_in(value: object, most: float, zero: bool = False) -> float | None:
    """`value` (a number, or text such as a variable holds) as seconds above 0 (from 0 with `zero`)
    and at most `most`; None when it is no such number (a bool, NaN and the infinities are not)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        seconds = float(value)
    except (ValueError, OverflowError):
        return None
    return seconds if (seconds >= 0 if zero else seconds > 0) and seconds <= most else None
