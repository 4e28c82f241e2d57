"""The chaos test's checks find what they look for: a call run again that no blow explains, an
approved call run twice, a recorded result that was not the last execution, a result recorded twice,
a call left without a result (no processes here: the world and journals are made by hand)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from chaos_agents import Execution
from chaos_driver import Blow, Chaos, _executions, _journal


def _reply(*calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "type": "reply",
        "parts": [{"type": "call", "id": i, "name": n, "arguments": {}} for i, n in calls],
    }


def _result(call_id: str, token: str) -> dict[str, Any]:
    return {"type": "result", "call_id": call_id, "text": f"did r:{call_id} exec={token}"}


def _ran(pid: int, tool: str, key: str, token: str, at: float) -> Execution:
    return Execution(pid, at, tool, key, token, "begin")


def test_a_call_run_again_is_explained_only_by_a_blow_to_the_process_that_ran_it_first(
    tmp_path: Path,
) -> None:
    chaos = Chaos("unused", tmp_path, 1)
    journals = {"r": [_reply(("c1", "work")), _result("c1", "t2")]}
    world = [_ran(10, "work", "r:c1", "t1", 1.0), _ran(11, "work", "r:c1", "t2", 2.0)]
    assert any("no blow cut" in p for p in _executions(chaos, journals, world))
    chaos.blows.append(Blow(10, "KILL", 1.5))
    assert _executions(chaos, journals, world) == []


def test_an_approved_call_run_twice_is_found_even_after_a_blow(tmp_path: Path) -> None:
    chaos = Chaos("unused", tmp_path, 1)
    chaos.blows.append(Blow(10, "KILL", 1.5))
    journals = {"r": [_reply(("c1", "wire")), _result("c1", "t2")]}
    world = [_ran(10, "wire", "r:c1", "t1", 1.0), _ran(11, "wire", "r:c1", "t2", 2.0)]
    assert any("approved call" in p for p in _executions(chaos, journals, world))


def test_a_call_run_after_its_result_was_recorded_is_found(tmp_path: Path) -> None:
    chaos = Chaos("unused", tmp_path, 1)
    chaos.blows.append(Blow(10, "KILL", time.time()))
    journals = {"r": [_reply(("c1", "work")), _result("c1", "t1")]}
    world = [_ran(10, "work", "r:c1", "t1", 1.0), _ran(11, "work", "r:c1", "t2", 2.0)]
    assert any("yet it ran again" in p for p in _executions(chaos, journals, world))


def test_a_result_recorded_twice_or_missing_is_found() -> None:
    twice = [_reply(("c1", "work")), _result("c1", "t1"), _result("c1", "t1")]
    assert any("two results" in p for p in _journal("r", twice))
    missing = [_reply(("c1", "work"), ("c2", "nap")), _result("c1", "t1")]
    assert any("no result" in p for p in _journal("r", missing))
    assert _journal("r", [_reply(("c1", "work")), _result("c1", "t1")]) == []
