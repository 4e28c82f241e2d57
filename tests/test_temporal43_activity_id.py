"""temporal43: the queued-call rule reads a call's activity id from the SDK's private fields (no public
way: `ActivityHandle` is a bare task); an SDK that changes them makes the call cut at the budget, as the
README documents for a worker that cannot read the call, never a failed workflow task (a stuck run).

Before, a handle without `_seq` raised AttributeError in workflow code: the workflow task failed and was
retried for ever. Against a real Temporal Server for the run's end.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from temporal_server import TemporalServer, temporal_fixture
from test_temporal42_queued_call import _queued_past_the_budget

from agent.temporal import _remote
from agent.temporal._activities import call_state

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


@pytest.mark.parametrize(
    ("handle", "expected"),
    [
        (SimpleNamespace(_input=SimpleNamespace(activity_id="given"), _seq=7), "given"),
        (SimpleNamespace(_input=SimpleNamespace(activity_id=None), _seq=7), "7"),
        (SimpleNamespace(_input=SimpleNamespace(), _seq=3), "3"),
        (SimpleNamespace(), None),  # both fields gone
        (SimpleNamespace(_input=SimpleNamespace(activity_id=None)), None),  # the sequence renamed
        (SimpleNamespace(_seq="seq-3"), None),  # the sequence no longer a number
        (SimpleNamespace(_seq=True), None),
        (SimpleNamespace(_input=SimpleNamespace(activity_id=""), _seq=None), None),
    ],
)
def test_the_activity_id_is_read_or_none_never_raises(handle: Any, expected: str | None) -> None:
    assert _remote._activity_id(handle) == expected


def test_a_call_whose_id_the_sdk_does_not_show_is_cut_at_the_budget_as_documented(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []

    def changed_sdk(handle: Any) -> str | None:
        seen.append(handle)
        return _activity_id(SimpleNamespace())  # as a handle without the fields reads

    _activity_id = _remote._activity_id
    monkeypatch.setattr(_remote, "_activity_id", changed_sdk)
    result, _ = asyncio.run(_queued_past_the_budget(temporal, call_state))  # checks the run replays too
    assert seen, "the rule never read the call's id"
    assert (result.reason, result.limit) == ("limit", "seconds"), result.note
    assert result.note == "The model call was cut off when the time budget ran out."
