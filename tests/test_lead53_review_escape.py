"""`endstate review` prints a run's id, agent, task type and trace id as red53 made `runs`, `pending`
and `audit --list` print them: what a terminal acts on (an escape sequence, a carriage return, a bidi
mark) escaped. Before, a row edited by hand retitled or cleared the reviewer's terminal."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_red53_listings import ESC, RAW, SHOWN, listed, run_row, store_with


def test_review_escapes_a_hostile_run_id_agent_task_type_and_trace_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = run_row(f"r{ESC}", f"a{ESC}", stop_reason="gave_up", ended_at=1_800_000_000.0, trace_id=f"t{ESC}")
    out = listed(capsys, "review", "--store", store_with(tmp_path, row))
    assert not any(c in out for c in RAW), out
    assert f"r{SHOWN}" in out and f"a{SHOWN}" in out and f"t{SHOWN}" in out
