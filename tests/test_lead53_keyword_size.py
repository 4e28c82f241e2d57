"""An agent's name or a task type is a Temporal keyword search attribute, which Temporal measures as its
JSON payload (the SDK escapes every letter beyond ASCII as six bytes), not as UTF-8 text: a name of 400
`é` (800 bytes of UTF-8, 2,402 of JSON) was let through to a start the server refused in its own words."""

from __future__ import annotations

import pytest
import temporalio.converter

from agent.errors import ConfigError
from agent.temporal import _wire as w
from agent.temporal.client import _check_label


@pytest.mark.parametrize("name", ["payer", "a" * 2046, "é" * 340, "日本" * 100, "🦜" * 150, 'a"b\\c\n'])
def test_a_name_fits_exactly_when_its_payload_is_within_temporals_bound(name: str) -> None:
    payload = temporalio.converter.default().payload_converter.to_payloads([name])[0]
    assert w.keyword_fits(name) is (len(payload.data) <= w.MAX_KEYWORD_BYTES)


@pytest.mark.parametrize("name", ["a" * 2047, "é" * 400, "🦜" * 200])
def test_a_name_over_the_bound_as_temporal_counts_it_is_refused_before_it_is_sent(name: str) -> None:
    with pytest.raises(ConfigError, match="over 2,048 bytes as Temporal counts"):
        _check_label("agent", name)


def test_a_name_within_the_bound_is_taken() -> None:
    _check_label("task type", "a" * 2046)
    _check_label("agent", "é" * 340)
