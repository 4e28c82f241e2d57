"""A research run resumed in another process (more turns after a limit stop) met another corpus
server, on another port: its promoted case wrote the first segment's address as `{corpus}` and kept
the second's as it was, so `endstate eval` failed the case on the unchanged agent ("call 26
answered differently")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from agent.budget import Extension
from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.evals.replay import CORPUS, LOOPBACK_URL, record
from agent.examples.scenarios import example_catalog, scenario_named
from agent.journal import Call, Reply, Result, Stopped
from agent.result import StopReason
from agent.stops import LimitKind

SCENARIO = "research/one-more-source"


def _played_in_two_processes(store_path: Path, worlds: Path, run: str, more: Extension) -> list[str]:
    """Start the run with a catalog of its own, then resume it (with `more`) with another, as a new
    process does: the second catalog's corpus server starts while the first's still listens, so the
    two segments' addresses differ. The stop reason of each segment."""
    store, first, second = open_store(str(store_path)), example_catalog(worlds), example_catalog(worlds)
    task = scenario_named(SCENARIO).task
    try:
        started = asyncio.run(
            Runner(store, first).start("researcher", task, state={"scenario": SCENARIO}, run_id=run)
        )
        resumed = asyncio.run(Runner(store, second).resume(run, more=more))
        return [str(started.reason), str(resumed.reason)]
    finally:
        first.close()
        second.close()
        store.close()


def test_a_research_run_resumed_with_more_turns_elsewhere_is_promoted_to_a_case_that_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_path, worlds, out = tmp_path / "runs.db", tmp_path / "worlds", tmp_path / "cases"
    assert _played_in_two_processes(store_path, worlds, "r1", Extension(turns=3)) == ["limit", "limit"]
    store = open_store(str(store_path))
    try:
        snap = store.snapshot("r1")
        assert snap is not None
        bases = {
            m.group(0) for e in snap.journal if isinstance(e, Result) for m in LOOPBACK_URL.finditer(e.text)
        }
        assert len(bases) == 2, bases  # two processes, two corpus servers: what this test is about
        replay = record(snap.journal, corpus=True)
        assert not any(LOOPBACK_URL.search(r.text) for r in replay.results)
        assert any(CORPUS in r.text for r in replay.results)
    finally:
        store.close()
    store_arg = ("--store", str(store_path))
    assert main(["review", "label", "r1", "correct_give_up", "--by", "ana", *store_arg]) == 0
    assert main(["review", "promote", "r1", "--out", str(out), *store_arg]) == 0
    [case] = yaml.safe_load((out / "r1.yaml").read_text())["cases"]
    assert case["extend"] == {"turns": 3} and case["expect"] == "limit"
    capsys.readouterr()
    code = main(["eval", str(out), "--no-progress"])
    shown = capsys.readouterr().out
    assert code == 0 and "PASSED: 1 of 1" in shown, shown


def test_each_segments_corpus_is_a_placeholder_and_an_address_the_model_made_up_is_kept() -> None:
    """Each segment's first loopback address is its corpus's; a later one the model made up in that
    segment is not (replayed as `{corpus}`, its call would reach the corpus where the run's failed)."""
    first, second, made_up = "http://127.0.0.1:4234", "http://127.0.0.1:42345", "http://127.0.0.1:9"

    def search(n: int, base: str) -> tuple[Reply, Result]:
        call = Call(f"c{n}", "web_search", {"query": "instant payments"})
        return Reply((call,), stop_reason="tool_use"), Result(f"c{n}", f"Statistics - {base}/bank/stats")

    fetch = Reply((Call("c3", "fetch", {"url": f"{made_up}/x"}),), stop_reason="tool_use")
    journal = [
        *search(1, first),
        fetch,
        Result("c3", f"could not reach {made_up}/x", is_error=True),
        Stopped(StopReason.LIMIT, LimitKind.TURNS),
        *search(2, second),
    ]
    replay = record(journal, corpus=True)
    assert [r.text for r in replay.results] == [
        f"Statistics - {CORPUS}/bank/stats",
        f"could not reach {made_up}/x",
        f"Statistics - {CORPUS}/bank/stats",  # ...:42345 whole, not ...:4234 and a stray "5"
    ]
    assert replay.replies[1]["content"][0]["input"] == {"url": f"{made_up}/x"}
