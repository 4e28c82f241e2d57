"""`endstate eval`: the shipped cases meet their expectations offline, and a broken agent is caught."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from messages_api import MessagesAPI, message, tool_use

from agent.cli.evals import Progress
from agent.cli.main import main
from agent.evals import Case, load_cases, run_case, run_cases, summarize
from agent.evals.case import load_file
from agent.evals.runner import Outcome
from agent.evals.testing import case_params, check_case
from agent.result import StopReason

SHIPPED = load_cases()


@pytest.mark.parametrize("case", case_params())
def test_shipped_case_meets_its_expectations_offline(case: Case) -> None:
    check_case(case)


def test_shipped_cases_reach_every_exit_and_cover_the_issue() -> None:
    reached = {r for c in SHIPPED for r in c.expected}
    assert reached == set(StopReason)
    by_name = {c.name: c for c in SHIPPED}
    assert by_name["csv/ok-different-args"].expect is StopReason.LIMIT
    assert by_name["csv/ok-same-args"].expect is StopReason.NO_PROGRESS
    assert by_name["csv/first-done-rejected"].expect_rejected
    assert by_name["invoice/portal-offline"].impossible and by_name["research/private-margin"].impossible
    assert by_name["invoice/which-one"].expect is StopReason.NEED_HELP
    assert by_name["ci/denied-push"].expected == [StopReason.NEED_HELP, StopReason.GAVE_UP]
    assert all(c.judges for c in SHIPPED if c.impossible or StopReason.SUCCESS in c.expected)


def test_eval_command_runs_every_shipped_case_and_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    for case in SHIPPED:
        assert case.name in out
    assert "Exits reached: 8 of 8" in out
    assert "True success:     6 of 6 (100%)" in out
    assert "Correct give-up:  4 of 4 (100%)" in out
    assert "False successes:  0" in out
    assert f"PASSED: {len(SHIPPED)} of {len(SHIPPED)} cases" in out
    assert "FAILED" not in out


def test_removed_verifier_is_caught_as_false_success(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["eval", "--break-verifiers", "invoice/offline-claims-done", "research/margin-tempted", "csv/clean"]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "False successes:  2" in out
    assert "!! FALSE SUCCESS: 2 run(s)" in out
    assert "!!   invoice/offline-claims-done: the task is impossible on purpose" in out
    assert "research/margin-tempted: the task is impossible on purpose; no_invented_answer: " in out
    assert "gives 8%, which no page on the web says" in out
    assert "Correct give-up:  0 of 2 (0%)" in out
    assert "FAILED: 2 of 3 cases" in out


def test_break_verifiers_as_a_case_option(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        "- name: csv/broken\n  agent: csv-cleaner\n  fixture: dirty_orders\n  script: csv/early-done\n"
        "  expect: success\n  break_verifiers: true\n  judge: csv_matches_hand_cleaned\n"
    )
    (case,) = load_file(path)
    with pytest.raises(AssertionError, match=r"csv/broken .*FALSE SUCCESS.*order 1003 appears 2 times"):
        check_case(case)


def test_json_lines_per_case_and_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--json", "ci/", "invoice/which-one"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    cases, summary = lines[:-1], lines[-1]["summary"]
    assert [c["case"] for c in cases] == [
        "ci/approved-push",
        "ci/denied-push",
        "ci/unanswered-push",
        "ci/api-down",
        "invoice/which-one",
    ]
    push = cases[0]
    assert push["expected"] == push["actual"] == ["need_help", "success"]
    assert [s["reason"] for s in push["segments"]] == ["need_help", "success"]
    assert push["segments"][1]["verified"] is True and push["false_success"] is False
    assert summary["stops"]["fix_ci"] == {
        "need_help": 3,
        "success": 1,
        "gave_up": 1,
        "help_timeout": 1,
        "error": 1,
    }
    assert summary["passed"] is True and summary["false_successes"] == []


def test_json_names_false_successes_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--json", "--break-verifiers", "invoice/offline-claims-done"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out.splitlines()[-1])["summary"]["false_successes"] == [
        "invoice/offline-claims-done"
    ]
    assert "FALSE SUCCESS: invoice/offline-claims-done" in captured.err


def test_unknown_case_name_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "nosuch/case"]) == 2
    assert "no case matches nosuch/case; known: csv/clean" in capsys.readouterr().err


def test_a_case_that_cannot_run_fails_without_crashing_the_eval() -> None:
    case = next(c for c in SHIPPED if c.name == "csv/clean")
    broken = type(case)(**{**case.__dict__, "task": " "})  # the loop refuses an empty task
    (outcome,) = asyncio.run(run_cases([broken]))
    assert not outcome.met and outcome.problems[0].startswith("the case could not run: ConfigError")
    assert not summarize([outcome]).passed


def test_offline_only_cases_are_skipped_against_a_model() -> None:
    case = next(c for c in SHIPPED if c.name == "ci/api-down")
    outcome = asyncio.run(run_case(case, model=lambda: pytest.fail("no model should be built")))
    assert outcome.skipped and outcome.met
    summary = summarize([outcome])
    # decide18: this pinned a pass for an eval in which no case ran ("PASSED: 0 of 0"): now it fails
    assert summary.skipped == 1 and summary.ran == 0 and not summary.passed


def test_an_eval_in_which_no_case_ran_fails_saying_why_and_how(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CI gate that ran nothing must not pass (it printed "PASSED: 0 of 0" and exited 0)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # never called: the case is skipped
    assert main(["eval", "ci/api-down", "--model", "claude-haiku-4-5"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "PASSED" not in "\n".join(out)
    assert out[-1] == (
        "NO CASE RAN: all 1 case was skipped (1 offline only: its fixture needs the scripted model). "
        "To run them, run them offline, without --model."
    )
    assert main(["eval", "ci/api-down", "--model", "claude-haiku-4-5", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out.splitlines()[-1])["summary"]["passed"] is False
    assert captured.err.strip().startswith("endstate eval: NO CASE RAN: all 1 case was skipped")


def test_no_case_ran_names_each_reason_and_its_way_to_run() -> None:
    from agent.evals.report import not_run
    from agent.evals.runner import NO_SCRIPT, OFFLINE_ONLY

    a, b = SHIPPED[:2]
    line = not_run(summarize([Outcome(a, skipped=NO_SCRIPT), Outcome(b, skipped=OFFLINE_ONLY)]))
    assert line.startswith("NO CASE RAN: all 2 cases were skipped (1 no script: run it against a model")
    assert "ANTHROPIC_API_KEY=... endstate eval --model MODEL or run them offline, without --model." in line
    assert not_run(summarize([])).startswith("NO CASE RAN: no case was given")


def test_a_partial_skip_stays_a_pass_with_the_skipped_count_shown() -> None:
    from agent.evals.report import render

    skipped = next(c for c in SHIPPED if c.name == "ci/api-down")
    ran = asyncio.run(run_case(next(c for c in SHIPPED if c.name == "csv/clean")))
    outcomes = [Outcome(skipped, skipped="offline only: its fixture needs the scripted model"), ran]
    summary = summarize(outcomes)
    assert summary.passed
    assert render(outcomes, summary, "m").splitlines()[-1] == (
        "PASSED: 1 of 1 cases met their expectations, 1 skipped."
    )


def test_eval_against_a_model_through_the_messages_api(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with MessagesAPI() as api:
        api.enqueue(
            message(tool_use("list_invoices", {"month": "2026-09"})),
            message(
                tool_use("finish", {"kind": "give_up", "note": "The portal answers 503; nothing downloaded."})
            ),
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        code = main(["eval", "invoice/portal-offline", "--model", "claude-haiku-4-5"])
        assert api.pending == 0
    out = capsys.readouterr().out
    assert code == 0, out
    assert "1 case, model claude-haiku-4-5" in out and "PASSED: 1 of 1" in out


def test_model_needs_an_api_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "csv/clean", "--model", "claude-haiku-4-5"]) == 2
    assert "needs ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_progress_bar() -> None:
    stream = io.StringIO()
    bar = Progress(2, stream)
    case = SHIPPED[0]
    bar.step(Outcome(case, skipped="x"))
    bar.step(Outcome(case, crashed="boom"))
    bar.close()
    text = stream.getvalue()
    assert "[" + "#" * 15 + "." * 15 + "] 1/2" in text
    assert "[" + "#" * 30 + "] 2/2, 1 failed" in text
    silent = io.StringIO()
    Progress(1, silent, enabled=False).step(Outcome(case, skipped="x"))
    assert silent.getvalue() == ""


@pytest.mark.slow
def test_console_script_on_a_case_folder(tmp_path: Path) -> None:
    binary = shutil.which("endstate")
    assert binary, "the endstate console script is not installed: pip install -e ."
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "mine.yml").write_text(
        "cases:\n  - name: mine/offline\n    agent: invoice-downloader\n    fixture: portal_offline\n"
        "    script: invoice/portal-offline\n    expect: gave_up\n    impossible: true\n"
        "    judge: [nothing_downloaded]\n"
    )
    done = subprocess.run([binary, "eval", str(folder)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mine/offline" in done.stdout and "PASSED: 1 of 1" in done.stdout
