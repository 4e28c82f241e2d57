"""svc42: an answer whose `segments` does not match says what happened, not always "moved on".

Before, every mismatch read "run R moved on (segment 1, not 99) since it was read; ... answer its
current question": for a count the run never had (a typo, another run's count), and for a run that
had finished (it has no current question). Now each case says what is so; the 409 and "nothing was
changed" stay.
"""

from __future__ import annotations

import asyncio

from test_service_defences import AUTH, Build, build  # noqa: F401 (the fixture)

from agent.durable.store import RunStatus


def test_each_mismatched_count_is_said_as_it_is(build: Build) -> None:  # noqa: F811
    api = build(runs=1)
    runner = api.app.state.service.runner  # type: ignore[attr-defined]
    waiting = runner.store.list_runs(RunStatus.WAITING)[0].run_id

    def answer(run_id: str, segments: int) -> str:
        response = api.post(
            f"/runs/{run_id}/answer", json={"answer": "INV-0913", "segments": segments}, headers=AUTH
        )
        assert response.status_code == 409, response.text
        return str(response.json()["error"])

    never = answer(waiting, 99)
    assert never.startswith(f"run {waiting} is at segment 1, not 99 (it never was at 99)"), never
    assert f"Send the `segments` that /pending or /runs/{waiting} shows" in never
    stale = answer(waiting, 0)
    assert "moved on (segment 1, not 0) since it was read" in stale and "current question" in stale
    assert runner.store.get(waiting).status is RunStatus.WAITING  # nothing changed
    done = asyncio.run(runner.drive(runner.claim(waiting, "INV-0913, the corrected one.")))
    assert done.reason == "success", done
    ended = answer(waiting, 1)
    assert "since it was read and is finished, not waiting for an answer" in ended, ended
    assert "current question" not in ended
