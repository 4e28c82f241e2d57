"""A catalog for `endstate serve` in the calls tests (a helper; no tests here).

`held`'s `prepare` leaves `entered` in `$ENDSTATE_WORLDS`, then waits while `hold.flag` is there
(at most 120 s); its `cleanup` leaves `cleaned-RUN_ID` there. `quick` asks a question, then
finishes once answered. Load it with `--catalog calls_agents:catalog` and tests/ on PYTHONPATH.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from agent import Agent
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, finish


def _worlds() -> Path:
    return Path(os.environ["ENDSTATE_WORLDS"])


def _prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
    worlds = _worlds()
    worlds.mkdir(parents=True, exist_ok=True)
    (worlds / "entered").write_text(run_id)
    until = time.monotonic() + 120
    while (worlds / "hold.flag").exists() and time.monotonic() < until:
        time.sleep(0.05)
    return {**state, "world": run_id}


def _cleanup(state: dict[str, Any]) -> None:
    (_worlds() / f"cleaned-{state.get('world')}").write_text("")


def _held(state: dict[str, Any]) -> Agent:
    return Agent("held", ScriptedModel([[finish("done", "held done")]]), task_type="held")


def _quick(state: dict[str, Any]) -> Agent:
    script = [[finish("need_help", "Which one?")], [finish("done", "quick done")]]
    return Agent("quick", ScriptedModel(script), task_type="quick")


catalog = Catalog()
catalog.register("held", _held, prepare=_prepare, cleanup=_cleanup)
catalog.register("quick", _quick)
