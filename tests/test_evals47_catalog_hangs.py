"""A case's catalog module whose import hangs (it waits on a server that never answers) timed the
case out at its deadline, as it should, but the eval itself never ended: the loader held the lock
of the eval's catalogs while it imported, so the next case naming that catalog waited on the lock,
and at the end `Catalogs.close()` waited on it in the eval's own thread, for ever (SIGTERM too,
as `endstate eval` turns it into an interrupt). Now a catalog loads outside that lock: every case
times out at its deadline, and the eval ends with their outcomes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hang import hanging_import

from agent.evals.case import load_file
from agent.evals.runner import Outcome, run_cases

SLOW = """
import evals47_gate
from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, finish

evals47_gate.GATE.wait()  # the import hangs until the test opens the gate

catalog = Catalog()
catalog.register("s", lambda state: Agent(name="s", model=ScriptedModel([[finish("done", "ok")]]),
                                          budget=Budget(max_turns=3, max_seconds=30), task_type="sync"))
"""

CASE = """
  - name: slow/{n}
    agent: s
    catalog: evals47_slow:catalog
    task: Sync.
    task_type: sync
    expect: success
    judge: [{{file_absent: {{path: never.txt}}}}]
    timeout: 1
"""


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """A module `evals47_slow` whose import waits on the returned gate."""
    with hanging_import(tmp_path, monkeypatch, "evals47_slow", SLOW, gate="evals47_gate") as made:
        yield made


def test_an_eval_whose_catalog_import_hangs_ends_with_every_case_timed_out(
    tmp_path: Path, gate: threading.Event
) -> None:
    path = tmp_path / "slow.yaml"
    path.write_text("cases:\n" + CASE.format(n=1) + CASE.format(n=2))
    cases = load_file(path)
    found: list[list[Outcome]] = []
    eval_thread = threading.Thread(target=lambda: found.append(asyncio.run(run_cases(cases))), daemon=True)
    eval_thread.start()
    eval_thread.join(timeout=120)  # each case's deadline is 1 s: ended long before, unless it hangs
    assert not eval_thread.is_alive(), "the eval never ended"
    (outcomes,) = found
    assert [o.timed_out is not None for o in outcomes] == [True, True]
    assert all(not o.met for o in outcomes)
