"""`endstate limits suggest` for runs of tens of minutes: numbers a team lead reads and pastes.

Seconds (and dollars) were printed with 3 significant digits in exponent form past 999: the table
said `1.16e+03  1.18e+03  2e+03` and the line to paste said `Budget(max_seconds=2e+03)`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.budget import Budget
from agent.cli.main import main


def test_seconds_over_a_thousand_read_as_whole_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 20 successes of 800, 820, ... 1180 s: p95 (nearest rank, the 19th) 1160, longest 1180;
    # 1.5 x 1160 = 1740 (over 1.25 x 1180 = 1475), rounded up to 2000.
    rows = [
        {"task_type": "migrate", "reason": "success", "run_id": f"r{i}", "turns": 10,
         "active_seconds": 800 + 20 * i, "input_tokens": 900, "output_tokens": 100, "cost_usd": 1200 + i}
        for i in range(20)
    ]  # fmt: skip
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    assert main(["limits", "suggest", "--jsonl", str(path)]) == 0
    out = capsys.readouterr().out

    seconds = next(line for line in out.splitlines() if line.strip().startswith("seconds"))
    assert seconds.split() == ["seconds", "20", "1,160", "1,180", "2,000"], seconds
    cost = next(line for line in out.splitlines() if line.strip().startswith("cost $"))
    # $1,218 p95 and $1,219 longest: 1.5 x 1218 = 1827 -> 2000
    assert cost.split() == ["cost", "$", "20", "1,218", "1,219", "2,000"], cost
    assert "e+0" not in out
    code = next(line for line in out.splitlines() if "as code:" in line).split("as code: ")[1]
    assert code == "Budget(max_turns=15, max_seconds=2_000, max_tokens=1_500, max_cost_usd=2_000)"
    assert eval(code, {"Budget": Budget}) == Budget(  # the line is meant to be pasted as code
        max_turns=15, max_seconds=2000, max_tokens=1500, max_cost_usd=2000
    )
