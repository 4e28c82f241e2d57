"""What a hostile or careless caller of the durable runner gets (probe39b red team): a clear error
for a lease no worker could hold, rather than a runner whose every run looks abandoned, and for a
store path that names no file ("disk I/O error" before)."""

from __future__ import annotations

import math

import pytest
from test_runner_agents import catalog

from agent.durable.runner import Runner
from agent.durable.store import RunStore, StoreError, open_store
from agent.errors import ConfigError


@pytest.mark.parametrize("seconds", [0.0, -30.0, math.nan, math.inf, True, "30"])
def test_a_runner_refuses_a_lease_that_is_not_a_finite_number_above_zero(
    store: RunStore, seconds: object
) -> None:
    """A lease of 0 (or less, or NaN) ran out as it was written: any sweep took every run this
    runner held, at once, and its renewal timer fired without pause; an infinite one never ran out."""
    agents = catalog()
    try:
        with pytest.raises(
            ConfigError, match=r"lease_seconds must be a finite number of seconds above 0"
        ) as no:
            Runner(store, agents, lease_seconds=seconds)  # type: ignore[arg-type]
    finally:
        agents.close()
    assert repr(seconds) in str(no.value)


def test_a_runner_takes_a_whole_number_of_seconds_as_its_lease(store: RunStore) -> None:
    runner = Runner(store, catalog(), lease_seconds=12)
    try:
        assert runner.lease().seconds == 12
    finally:
        runner.catalog.close()


@pytest.mark.parametrize("url", ["/dev/null", "sqlite:////dev/null"])
def test_a_store_path_that_is_no_regular_file_is_refused_saying_so(url: str) -> None:
    with pytest.raises(StoreError, match="/dev/null is not a regular file"):
        open_store(url)
