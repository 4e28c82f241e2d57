"""`limits suggest` reads ceilings per task type, but a Budget is an agent's. When two agents ran
the same task type (a quick researcher and a deep one, both `research`), their runs were mixed
without a word: the quick one, whose runs take 5-8 turns, was told max_turns=150 from the deep
one's 100-turn runs. Now the suggestion says which agents' runs it mixes, and `--agent NAME` reads
one agent's runs (from the store, JSON lines, or Prometheus's `agent` label)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli.main import main
from agent.durable.store import Lease, NewRun, Outcome, open_store
from agent.evals.limits import PrometheusHistory, history_from_jsonl, suggest
from agent.result import LimitKind, RunResult, StopReason
from agent.usage import Usage

RUNS = [("researcher", t) for t in (5, 6, 7, 8)] + [("deep-researcher", t) for t in (80, 90, 100)]


def _store(tmp_path: Path) -> str:
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    lease, now = Lease("w1", 4e9), 1.9e9
    for i, (agent, turns) in enumerate(RUNS):
        run_id = f"r{i}"
        store.create(NewRun(run_id, agent, "task", "research"), lease, now)
        result = RunResult(
            run_id, agent, "research", StopReason.SUCCESS, None, turns=turns, active_seconds=turns,
            usage=Usage(100 * turns),
        )  # fmt: skip
        store.record(run_id, Outcome.of(result), lease, now)
    store.close()
    return url


def _lines() -> list[str]:
    return [
        json.dumps({"run_id": f"r{i}", "agent": a, "task_type": "research", "reason": "success", "turns": t})
        for i, (a, t) in enumerate(RUNS)
    ]


def test_a_task_type_two_agents_ran_says_it_mixes_them() -> None:
    (s,) = suggest(history_from_jsonl(_lines()))
    mixed = [n for n in s.notes if "runs of 2 agents" in n]
    assert mixed and "deep-researcher 3, researcher 4" in mixed[0] and "--agent NAME" in mixed[0]


def test_one_agent_s_runs_say_nothing_of_agents() -> None:
    (s,) = suggest(history_from_jsonl(_lines()[:4]))
    assert not any("agents" in n for n in s.notes)


def test_agent_reads_one_agent_s_runs_from_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _store(tmp_path)
    assert main(["limits", "suggest", "--store", url, "--agent", "researcher", "--json"]) == 0
    (found,) = json.loads(capsys.readouterr().out)
    assert found["ceilings"]["turns"]["suggested"] == 12  # 1.5 x its p95 (8); not 150
    assert found["stops"] == {"success": 4}
    assert not any("agents" in n for n in found["notes"])


def test_agent_no_run_has_is_refused_naming_those_there_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _store(tmp_path)
    assert main(["limits", "suggest", "--store", url, "--agent", "reseacher"]) == 2
    err = capsys.readouterr().err
    assert "no runs of agent reseacher" in err and "deep-researcher, researcher" in err


def test_agent_reads_one_agent_s_series_from_prometheus() -> None:
    asked: list[str] = []

    def fetch(promql: str) -> list[dict[str, Any]]:
        asked.append(promql)
        return []

    PrometheusHistory("http://prometheus.invalid", "7d", fetch=fetch, agent='re"searcher').observed(
        "research", LimitKind.TURNS, 0.95
    )
    assert asked and all('agent="re\\"searcher"' in q for q in asked), asked


def test_an_empty_task_type_is_refused_as_an_unset_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["limits", "suggest", "--store", _store(tmp_path), "--task-type", ""])
    assert done.value.code == 2
    assert "argument --task-type: must not be empty (an unset variable?)" in capsys.readouterr().err
