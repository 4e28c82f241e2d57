"""fuzz: a real suspended run's snapshot JSON changed at random (a value replaced, a key dropped, deep
in its head or its journal) and decoded (`Snapshot.from_json`, `agent/_codec.py`).

Invariants: a snapshot is read, or refused with a `SnapshotError` saying what is wrong, never another
exception; one that is read writes back to JSON that reads as the same snapshot.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_fuzz_stored import JSON, changed

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.errors import SnapshotError
from agent.examples.scenarios import example_catalog
from agent.snapshot import Snapshot

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "400")),  # more while hunting
    deadline=None,
    database=None,
    derandomize=os.environ.get("FUZZ_RANDOM") is None,  # FUZZ_RANDOM=1: new examples each run, while hunting
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def suspended(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The snapshot of a run waiting for an approval, as JSON data."""
    folder = tmp_path_factory.mktemp("snapshot")
    store = open_store(str(folder / "runs.db"))
    runner = Runner(store, example_catalog(folder / "worlds"))
    try:
        result = asyncio.run(runner.start("ci-fixer", "Go", state={"scenario": "ci/approved-push"}))
        assert result.snapshot is not None
        return json.loads(result.snapshot.to_json())  # type: ignore[no-any-return]
    finally:
        runner.catalog.close()
        store.close()


@FUZZ
@given(
    edits=st.lists(
        st.tuples(st.lists(st.integers(0, 40), min_size=1, max_size=6), JSON), min_size=1, max_size=3
    )
)
def test_a_snapshot_changed_at_random_is_read_or_refused_by_name(
    suspended: dict[str, object], edits: list[tuple[list[int], object]]
) -> None:
    data: object = suspended
    for path, new in edits:
        data = changed(data, path, new)
    try:
        snapshot = Snapshot.from_json(json.dumps(data))
    except SnapshotError as exc:
        event("refused")
        assert str(exc), "a refusal says what is wrong"
        return
    event("read")
    assert Snapshot.from_json(snapshot.to_json()).to_json() == snapshot.to_json()
