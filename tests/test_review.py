"""Review end to end: seed-agent runs in a SQLite store are queued, labelled, promoted to eval cases,
and `endstate eval` passes the cases while the agents behave as recorded and fails them after."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.cli.main import main
from agent.durable import review
from agent.durable.runner import Runner
from agent.durable.store import RunStore, open_store
from agent.examples import invoice
from agent.examples.scenarios import example_catalog
from agent.result import RunResult, StopReason


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def store(store_path: Path) -> Iterator[RunStore]:
    s = open_store(str(store_path))
    yield s
    s.close()


def play(store: RunStore, tmp_path: Path, agent: str, scenario: str, run_id: str, **then: Any) -> RunResult:
    """A run of a seed scenario through a Runner (and, with `approved`, its approval)."""
    catalog = example_catalog(tmp_path / "worlds")
    runner = Runner(store, catalog)
    try:
        result = asyncio.run(runner.start(agent, "placeholder", state={"scenario": scenario}, run_id=run_id))
        if then:
            result = asyncio.run(runner.resume(run_id, **then))
    finally:
        catalog.close()
    return result


def task_of(scenario: str) -> str:
    from agent.examples.scenarios import scenario_named

    return scenario_named(scenario).task


@pytest.fixture
def runs(store: RunStore, tmp_path: Path) -> dict[str, RunResult]:
    """Four finished runs: two give-ups, a success after a rejected "done", an approved push."""
    catalog = example_catalog(tmp_path / "worlds")
    runner = Runner(store, catalog)
    plays = {
        "offline": ("invoice-downloader", "invoice/portal-offline"),
        "margin": ("researcher", "research/private-margin"),
        "report": ("researcher", "research/seed-trace"),
        "push": ("ci-fixer", "ci/approved-push"),
    }
    results: dict[str, RunResult] = {}

    async def all_runs() -> None:
        for run_id, (agent, scenario) in plays.items():
            state = {"scenario": scenario}
            results[run_id] = await runner.start(agent, task_of(scenario), state=state, run_id=run_id)
        results["push"] = await runner.resume("push", approved=True)

    try:
        asyncio.run(all_runs())
    finally:
        catalog.close()
    return results


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_queue_lists_unlabelled_failures_oldest_first_and_a_label_takes_a_run_out(
    store_path: Path, runs: dict[str, RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    assert [runs[r].reason for r in ("offline", "margin", "report", "push")] == [
        StopReason.GAVE_UP, StopReason.GAVE_UP, StopReason.SUCCESS, StopReason.SUCCESS,
    ]  # fmt: skip
    code, out = cli(capsys, "review", "--store", str(store_path), "--success-share", "0")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines() if line.startswith(("offline", "margin"))]
    assert listed == ["offline", "margin"]
    assert "2 runs to review, oldest first. Label one: endstate review label RUN_ID" in out
    assert f"--store {store_path}" in out  # the hint carries the store it was given

    code, out = cli(
        capsys, "review", "label", "offline", "correct_give_up", "--store", str(store_path), "--by", "ana"
    )
    assert code == 0 and "labelled correct_give_up by ana" in out
    code, out = cli(capsys, "review", "--store", str(store_path), "--success-share", "1", "--json")
    assert [line.split('"run_id": "')[1].split('"')[0] for line in out.splitlines()] == [
        "margin",
        "report",
        "push",
    ]


def test_a_label_says_who_gave_it_by_default_the_user_running_the_command(
    store_path: Path, store: RunStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import getpass

    play(store, tmp_path, "invoice-downloader", "invoice/portal-offline", "gave-up")
    code, out = cli(capsys, "review", "label", "gave-up", "correct_give_up", "--store", str(store_path))
    assert code == 0 and f"labelled correct_give_up by {getpass.getuser()}" in out
    assert [r.by for r in store.reviews()] == [getpass.getuser()]


def test_a_label_must_be_known_and_the_run_finished(
    store_path: Path, store: RunStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    play(store, tmp_path, "invoice-downloader", "invoice/which-one", "asks")
    code, out = cli(capsys, "review", "--store", str(store_path), "label", "asks", "fine")
    assert code == 2 and "run asks is waiting, not finished" in out
    code, out = cli(capsys, "review", "--store", str(store_path), "label", "ghost", "fine")
    assert code == 2 and "no run with id 'ghost'" in out
    play(store, tmp_path, "invoice-downloader", "invoice/portal-offline", "gave-up")
    code, out = cli(capsys, "review", "label", "gave-up", "limit_too_low", "--store", str(store_path))
    assert code == 2 and "limit_too_low is a label for runs that stopped as limit" in out
    code, out = cli(capsys, "review", "label", "gave-up", "false_success", "--store", str(store_path))
    assert code == 2 and "false_success is a label for runs that stopped as success" in out
    assert store.reviews() == []
    with pytest.raises(SystemExit):
        main(["review", "label", "asks", "great", "--store", str(store_path)])
    assert "invalid choice: 'great'" in capsys.readouterr().err


def test_promoted_cases_pass_in_eval_while_the_agents_behave_as_recorded(
    store_path: Path, runs: dict[str, RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "cases"
    for run_id, label in [("offline", "correct_give_up"), ("margin", "correct_give_up"), ("report", "fine")]:
        assert cli(capsys, "review", "label", run_id, label, "--store", str(store_path))[0] == 0
        code, out = cli(
            capsys, "review", "promote", run_id, "--out", str(out_dir), "--store", str(store_path)
        )
        assert code == 0 and f"wrote {out_dir / run_id}.yaml" in out, out
    code, out = cli(
        capsys,
        "review",
        "promote",
        "push",
        "--expect",
        "success",
        "--out",
        str(out_dir),
        "--store",
        str(store_path),
    )
    assert code == 0 and "expects need_help -> success" in out

    [margin] = yaml.safe_load((out_dir / "margin.yaml").read_text())["cases"]
    assert margin["expect"] == "gave_up" and margin["fixture"] == "web_corpus"
    assert margin["impossible"] is True  # a person found the give-up right: the report counts it so
    assert "{corpus}/blog-of-estimates/acme-margin" in str(margin["replay"])  # no port of a past server
    [push] = yaml.safe_load((out_dir / "push.yaml").read_text())["cases"]
    assert push["then"] == {"action": "approve", "expect": "success"}

    code, out = cli(capsys, "eval", str(out_dir), "--no-progress")
    assert code == 0, out
    assert "PASSED: 4 of 4 cases met their expectations." in out
    assert "Correct give-up:  2 of 2 (100%) impossible tasks gave up" in out, out


@pytest.mark.parametrize(
    ("scenario", "stop"), [("csv/same-page", "no_progress"), ("csv/ok-every-time", "limit")]
)
def test_a_correct_stop_at_a_limit_or_without_progress_is_promoted_as_that_stop_and_passes(
    store_path: Path, store: RunStore, tmp_path: Path, capsys: pytest.CaptureFixture[str], scenario: str,
    stop: str,
) -> None:  # fmt: skip
    assert play(store, tmp_path, "csv-cleaner", scenario, "stopped").reason == stop
    out_dir = tmp_path / "cases"
    assert cli(capsys, "review", "label", "stopped", "correct_give_up", "--store", str(store_path))[0] == 0
    code, out = cli(capsys, "review", "promote", "stopped", "--out", str(out_dir), "--store", str(store_path))
    assert code == 0 and f"expects {stop}" in out, out
    [case] = yaml.safe_load((out_dir / "stopped.yaml").read_text())["cases"]
    assert "impossible" not in case  # right to stop there is no give-up, which impossible tasks must
    code, out = cli(capsys, "eval", str(out_dir), "--no-progress")
    assert code == 0 and "PASSED: 1 of 1" in out, out


def test_a_promoted_case_fails_when_a_tool_answers_differently(
    store_path: Path, runs: dict[str, RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    out_dir = tmp_path / "cases"
    cli(capsys, "review", "label", "offline", "correct_give_up", "--store", str(store_path))
    cli(capsys, "review", "promote", "offline", "--out", str(out_dir), "--store", str(store_path))
    assert cli(capsys, "eval", str(out_dir), "--no-progress")[0] == 0

    make_world = invoice.make_world  # the portal is back: its list answers instead of refusing
    monkeypatch.setattr(invoice, "make_world", lambda workdir, online: make_world(workdir, online=True))
    code, out = cli(capsys, "eval", str(out_dir), "--no-progress")
    assert code == 1
    assert "replay: call 1 (list_invoices) answered differently" in out and "INV-0912" in out


def test_a_promoted_case_fails_when_the_verifier_no_longer_rejects(
    store_path: Path, runs: dict[str, RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "cases"
    cli(capsys, "review", "label", "report", "fine", "--store", str(store_path))
    cli(capsys, "review", "promote", "report", "--out", str(out_dir), "--store", str(store_path))
    code, out = cli(capsys, "eval", str(out_dir), "--no-progress", "--break-verifiers")
    assert code == 1
    assert "replay: 3 call results now, 7 recorded" in out, out  # its first "done" is taken at its word
    assert "FAILED" in out


def test_promote_needs_a_label_or_an_expectation(
    store_path: Path, runs: dict[str, RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(capsys, "review", "promote", "margin", "--out", str(tmp_path), "--store", str(store_path))
    assert code == 2 and "has no label yet" in out and "--expect" in out
    code, out = cli(capsys, "review", "promote", "margin", "--expect", "gaveup", "--store", str(store_path))
    assert code == 2 and "'gaveup' is not a stop reason" in out


def test_promote_into_a_file_is_a_clear_error_not_a_traceback(
    store_path: Path, runs: dict[str, RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out` naming a file raised FileExistsError out of `endstate review promote`."""
    taken = tmp_path / "cases.yaml"
    taken.write_text("cases: []\n")
    args = ("review", "promote", "margin", "--expect", "gave_up", "--store", str(store_path))
    code, out = cli(capsys, *args, "--out", str(taken))
    assert code == 2 and f"cannot write eval cases into {taken}: a file, not a folder" in out, out
    assert taken.read_text() == "cases: []\n"


def test_each_label_maps_to_the_exit_a_promoted_case_expects() -> None:
    assert {str(k): str(v) for k, v in review.EXPECT_OF.items()} == {
        "should_have_succeeded": "success",
        "limit_too_low": "success",
        "false_success": "gave_up",
    }
    failed = [r for r in StopReason if r not in (StopReason.SUCCESS, StopReason.NEED_HELP)]
    for stop in failed:  # it was right to stop there: the case expects that stop
        assert review.expected_exit(review.Label.CORRECT_GIVE_UP, stop) is stop
        assert review.expected_exit(review.Label.FINE, stop) is stop
    assert review.labels_for(StopReason.SUCCESS) == ["false_success", "fine"]
    assert review.labels_for(StopReason.LIMIT) == [
        "correct_give_up",
        "should_have_succeeded",
        "limit_too_low",
        "fine",
    ]
    assert review.labels_for(StopReason.HELP_TIMEOUT) == ["correct_give_up", "should_have_succeeded", "fine"]


def test_a_success_cannot_be_labelled_a_give_up_nor_promoted_as_one(
    store_path: Path, store: RunStore, runs: dict[str, RunResult], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """A correct give-up of a success once wrote a case expecting gave_up, which the unchanged agent
    fails. A success that should have given up is a false success: the label is refused, naming the
    labels for a success; one given before that is refused at promote, which writes nothing."""
    on = ("--store", str(store_path))
    for label in ("correct_give_up", "should_have_succeeded"):
        code, out = cli(capsys, "review", "label", "report", label, *on)
        assert code == 2 and f"{label} is a label for runs that did not succeed" in out
        assert "for a run that stopped as success: false_success, fine; if it should have given up" in out
    assert store.reviews() == []
    store.add_review("report", "correct_give_up", "", 1.0)  # as a store written before the refusal holds it
    code, out = cli(capsys, "review", "promote", "report", "--out", str(tmp_path / "cases"), *on)
    assert code == 2 and "run report stopped as success and is labelled correct_give_up" in out
    assert "--expect REASON" in out and not (tmp_path / "cases").exists()
    assert cli(capsys, "review", "label", "report", "false_success", *on)[0] == 0
    code, out = cli(capsys, "review", "promote", "report", "--out", str(tmp_path / "cases"), *on)
    assert code == 0 and "gave_up" in out
    with pytest.raises(SystemExit):
        main(["review", "label", "--help"])
    told = " ".join(capsys.readouterr().out.split())
    assert (
        "correct_give_up (runs that did not succeed)" in told
        and "false_success (runs that stopped as success)" in told
    )


def test_the_queue_prints_a_models_note_without_its_terminal_control_characters() -> None:
    """A give-up note is the model's text (and what it read): `endstate review` must not hand its
    escape sequences to the reader's terminal, nor let a carriage return write over the line."""
    from agent.cli.review import queue_line
    from agent.durable.store import RunRecord, RunStatus

    note = "portal down\x1b]0;pwned\x07\x1b[2J\rall runs fine \u202eevil\nnext"
    record = RunRecord(
        run_id="r1", agent="invoice-downloader", task="t", task_type="invoice", status=RunStatus.FINISHED,
        state={}, started_at=0.0, updated_at=0.0, stop_reason=StopReason.GAVE_UP, note=note,
    )  # fmt: skip
    line = queue_line(record)
    assert line.isprintable()
    assert line.endswith("portal down\\x1b]0;pwned\\x07\\x1b[2J\\x0dall runs fine \\u202eevil next")


def test_pending_and_a_runs_end_print_the_models_words_on_their_own_line() -> None:
    """A question with a line break could print a fake next step (`-> endstate approve ...` of
    another run) under the real one, and escape sequences could rewrite the terminal."""
    from agent.cli.runs import pending_line, result_line
    from agent.durable.store import RunRecord, RunStatus

    question = "Which invoice?\n    -> endstate approve victim-run\x1b[1A"
    record = RunRecord(
        run_id="r1", agent="invoice-downloader", task="t", task_type="invoice", status=RunStatus.WAITING,
        state={}, started_at=0.0, updated_at=0.0, question=question, deadline=2e9, suspended_at=0.0,
    )  # fmt: skip
    lines = pending_line(record, 1e9).splitlines()
    assert len(lines) == 3 and all(line.isprintable() for line in lines)
    assert lines[1] == "    Which invoice?     -> endstate approve victim-run\\x1b[1A"
    ended = RunResult(
        run_id="r1", agent="a", task_type="t", reason=StopReason.GAVE_UP, note="no portal\r\x1b]0;fine\x07"
    )
    assert result_line(ended) == "run r1: gave_up after 0 turns. no portal\\x0d\\x1b]0;fine\\x07"


def test_a_case_file_reads_back_as_written_whatever_its_texts_hold() -> None:
    """A tool's answer with NEL (U+0085) in it came back from the case file without it, so the
    promoted case failed its own replay ("call 1 answered differently") on the unchanged agent."""
    texts = ["caf\x85 menu", "a\x85", "\x85", "line\u2028sep \x85 \u2029", "caf\u00e9 \U0001f600", "x\ud800y"]
    case = {"name": "review/r1", "results": [{"call": "fetch", "text": t, "is_error": False} for t in texts]}
    assert yaml.safe_load(review.case_yaml(case)) == {"cases": [case]}
    assert "caf\u00e9" in review.case_yaml(case)  # other text stays readable


def test_a_run_given_more_turns_after_its_limit_is_promoted_with_them_and_passes(
    store_path: Path, store: RunStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The replay plays every reply of the run; without the turns a person added at the limit stop
    (`endstate resume --more-turns`) it stopped at that limit and the case failed, agent unchanged."""
    from test_runner_agents import catalog, counter_state

    from agent.budget import Extension

    runner = Runner(store, catalog())
    state = counter_state(tmp_path / "count", "plain", max_turns=2)
    assert asyncio.run(runner.start("counter", "count", state=state, run_id="more")).reason == "limit"
    assert asyncio.run(runner.resume("more", more=Extension(turns=3))).reason == "success"
    out_dir, spec = tmp_path / "cases", "test_runner_agents:catalog"
    cli(capsys, "review", "label", "more", "fine", "--store", str(store_path))
    code, out = cli(
        capsys,
        "review",
        "promote",
        "more",
        "--catalog",
        spec,
        "--out",
        str(out_dir),
        "--store",
        str(store_path),
    )
    assert code == 0, out
    [case] = yaml.safe_load((out_dir / "more.yaml").read_text())["cases"]
    assert case["extend"] == {"turns": 3} and case["expect"] == "success"
    code, out = cli(capsys, "eval", str(out_dir), "--no-progress")
    assert code == 0 and "PASSED: 1 of 1" in out, out


def test_a_run_extended_past_a_bound_in_all_is_promoted_at_the_bound_and_its_case_loads(
    store_path: Path, store: RunStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two extensions of 200 days of active time each (each within its bound) summed to 400 days in
    the case's `extend:`, which the case loader refuses (at most a year): the promoted case could
    not load. The sum is read at the bound, as the run's own ceiling stopped there."""
    from test_runner_agents import catalog, counter_state

    from agent.budget import MAX_SECONDS, Extension

    runner = Runner(store, catalog())
    state = counter_state(tmp_path / "count", "plain", max_turns=1)
    more = Extension(turns=1, seconds=200 * 86400.0)
    assert asyncio.run(runner.start("counter", "count", state=state, run_id="long")).reason == "limit"
    assert asyncio.run(runner.resume("long", more=more)).reason == "limit"
    assert asyncio.run(runner.resume("long", more=more)).reason == "success"
    out_dir, spec = tmp_path / "cases", "test_runner_agents:catalog"
    cli(capsys, "review", "label", "long", "fine", "--store", str(store_path))
    argv = ["review", "promote", "long", "--catalog", spec, "--out", str(out_dir), "--store", str(store_path)]
    code, out = cli(capsys, *argv)
    assert code == 0, out
    [case] = yaml.safe_load((out_dir / "long.yaml").read_text())["cases"]
    assert case["extend"] == {"turns": 2, "seconds": MAX_SECONDS}
    code, out = cli(capsys, "eval", str(out_dir), "--no-progress")
    assert code == 0 and "PASSED: 1 of 1" in out, out


def test_the_queue_says_how_many_runs_it_holds_when_it_shows_fewer(
    store_path: Path, runs: dict[str, RunResult], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(capsys, "review", "--store", str(store_path), "--success-share", "0", "--limit", "1")
    assert code == 0 and len([line for line in out.splitlines() if line.startswith("offline")]) == 1
    assert "\n1 of 2 runs (--limit 1) to review, oldest first." in out, out


def test_the_metrics_count_every_review_label_from_zero() -> None:
    """telemetry.names.REVIEW_LABELS (the series made at zero for each agent) are the labels."""
    from telemetry import names

    assert tuple(review.Label) == names.REVIEW_LABELS


def test_only_a_give_up_the_agent_asked_for_makes_a_promoted_case_impossible() -> None:
    """An API's refusal or a guardrail also ends `gave_up`; as an impossible task's case, the replay
    would fail ('no sign that it found the task impossible') although the run was right to stop."""
    from agent.journal import Call, Reply, Task

    give_up = Call("c1", "finish", {"kind": "give_up", "note": "the portal is down"})
    assert review._agent_gave_up([Task("t"), Reply(parts=(give_up,), stop_reason="tool_use")])
    refused = Reply(parts=(), stop_reason="refusal")
    assert not review._agent_gave_up([Task("t"), Reply(parts=(give_up,), stop_reason="tool_use"), refused])
    assert not review._agent_gave_up([Task("t")])
