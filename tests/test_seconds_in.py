"""`seconds_in`: the one reading of a seconds setting (a variable's text, or a number) that the store's
timeout, the shutdown grace, the catalog deadline and the OTLP export timeouts share."""

from __future__ import annotations

import pytest

from agent._valid import seconds_in


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("2.5", 2.5), (" 7 ", 7.0), ("1e1", 10.0), (3, 3.0), (0.25, 0.25), ("60", 60.0)],
)
def test_a_number_of_seconds_within_the_bounds_is_read(value: object, seconds: float) -> None:
    assert seconds_in(value, most=60) == seconds


@pytest.mark.parametrize(
    "value",
    ["", "ten", "0", 0, "-1", "60.001", "nan", "inf", "-inf", "1e400", 10**400, True, None, [5], b"5"],
)
def test_anything_else_is_none(value: object) -> None:
    assert seconds_in(value, most=60) is None


def test_zero_is_read_only_where_zero_is_allowed() -> None:
    assert seconds_in("0", most=60, zero=True) == 0.0
    assert seconds_in("-0.1", most=60, zero=True) is None
