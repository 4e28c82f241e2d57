"""A nightly agent (a few runs a day) whose runs all end in error or at a limit pages (the auditT review).

The share pages judged a busy agent on an hour, a quiet one on 6 hours and the quietest (under 5 runs
in 6 hours) on a day, by over half (30% for errors) of at least 5 runs. An agent with under 5 runs a
day, a nightly job, had no path at all: every run of its week could end in error and nothing paged,
though DESIGN.md asks each alert's guard to "still let a quiet agent page". Now the week is judged,
by the day's share of at least 5 runs (alerts/tests/share_high_week.yml, on the real promtool).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from prom_stack import require_binary

ROOT = Path(__file__).resolve().parents[1]
WEEK_TESTS = ROOT / "alerts" / "tests" / "share_high_week.yml"


def fires_case(reason: str, tmp_path: Path) -> Path:
    """The promtool test file's case of a nightly agent going to `reason`, alone, with the real rules."""
    spec = yaml.safe_load(WEEK_TESTS.read_text())
    spec["rule_files"] = [str(ROOT / "alerts" / "rules" / name) for name in ("recording.yml", "alerts.yml")]
    spec["tests"] = [
        g for g in spec["tests"] if g["name"].startswith("fires for a nightly") and reason in g["name"]
    ]
    assert len(spec["tests"]) == 1
    path = tmp_path / f"nightly_{reason.replace(' ', '_')}.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.mark.parametrize("reason", ["in error", "at a limit"])
def test_a_nightly_agent_whose_runs_go_wrong_pages_over_the_week(reason: str, tmp_path: Path) -> None:
    require_binary("promtool")
    case = fires_case(reason, tmp_path)
    done = subprocess.run(
        ["promtool", "test", "rules", str(case)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
