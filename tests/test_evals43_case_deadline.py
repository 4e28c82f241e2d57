"""A hanging case must not hang the eval: every case has a deadline; past it the case fails saying it
timed out and in which phase (build, run, verify, judge), the other cases still run, and the run it
cut still ends with a stop reason its hooks record."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.evals.case import Case, CaseError, load_cases
from agent.evals.deadline import DEFAULT_TIMEOUT, Phase
from agent.evals.judges import JUDGES
from agent.evals.report import case_json, render, summarize
from agent.evals.runner import merge_rounds, run_case, run_cases
from agent.evals.testing import check_case

TEAM = '''
import asyncio
import os
import threading
import time

from agent import Agent, Budget, tool
from agent.durable.catalog import Catalog
from agent.evals.judges import judge
from agent.models.scripted import ScriptedModel, call, finish
from agent.verify import predicate

RELEASE = threading.Event()  # set by a test: the blocking model's call returns then
FOREVER = threading.Event()  # never set: sync code stuck for good (a lock never released)
ENDED = []  # (task, stop reason) of every run the hooks saw end


class Recorded:
    """Hooks that record each run's stop, as telemetry or a run store would."""

    def run_started(self, info):
        task = info.task
        hooks = self

        class Observer:
            def run_ended(self, result):
                ENDED.append((task, str(result.reason)))
                if os.environ.get("T43_ENDED"):  # a run in another process: `endstate eval`
                    with open(os.environ["T43_ENDED"], "a") as f:
                        f.write(f"{task} {result.reason}\\n")

            def __getattr__(self, name):
                return lambda *args, **kwargs: None

        return Observer()


class NeverAnswers(ScriptedModel):
    """A model whose call never returns (awaiting)."""

    async def complete(self, request):
        if os.environ.get("T43_ENDED"):
            open(os.environ["T43_ENDED"] + ".calling", "w").close()
        await asyncio.sleep(3600)


class Blocks(ScriptedModel):
    """A model that blocks its event loop (sync code) until released."""

    async def complete(self, request):
        RELEASE.wait()
        return await super().complete(request)


def build(state):
    kind = state["kind"]
    if kind == "build":
        FOREVER.wait()  # a build() stuck on a lock
    steps = [[call("note", text="hi")], [finish("done", "noted")]]
    model = {"model": NeverAnswers([]), "blocks": Blocks(steps)}.get(kind) or ScriptedModel(steps)

    @tool
    def note(text: str) -> str:
        """Note text."""
        return "ok"

    def checked(ctx):
        if kind == "verify":
            FOREVER.wait()
        return True

    return Agent(
        name="t43",
        model=model,
        tools=[note],
        verifiers=[predicate(checked, "not noted", timeout=3600)],
        budget=Budget(max_turns=5, max_seconds=None),  # no time budget: nothing else ends a hang
        task_type="t43",
        hooks=Recorded(),
    )


@judge("t43_judge")
def t43_judge(run):
    return []


@judge("t43_exits")
def t43_exits(run):
    raise SystemExit(3)


@judge("t43_hangs")
def t43_hangs(run):
    time.sleep(3600)
    return []


catalog = Catalog()
catalog.register("t43", build)
'''


CUT = 1.0  # the deadline of a case that hangs at once (its build, its first model call)
REACH = 4  # of one that first runs to a "done" (to hang in its verifier or its judge): a loaded machine


def _case(name: str, kind: str, judge: str = "t43_judge", extra: str = "") -> str:
    """A case of the team's agent; one that must first run to a "done" gets REACH seconds, and one that
    must not time out a minute, of their own (over the eval's deadline)."""
    if not extra and (judge == "t43_hangs" or kind == "verify"):
        extra = f", timeout: {REACH}"
    elif not extra and (kind, judge) == ("ok", "t43_judge"):
        extra = ", timeout: 60"
    return (
        f"  - {{name: {name}, agent: t43, catalog: 't43_agents:catalog', state: {{kind: {kind}}},\n"
        f"     task: '{name}', task_type: t43, expect: success, judge: [{judge}]{extra}}}\n"
    )


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The team's package on the path. Its hung threads are left as they are (daemon threads, as the
    eval leaves them): released, they would run on beside the next test."""
    (tmp_path / "t43_agents.py").write_text(textwrap.dedent(TEAM))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("t43_agents", None)
    JUDGES.pop("t43_judge", None)
    JUDGES.pop("t43_hangs", None)
    JUDGES.pop("t43_exits", None)


def _load(folder: Path, text: str) -> list[Case]:
    path = folder / "cases.yaml"
    path.write_text("cases:\n" + text)
    return load_cases([path])


def _ended() -> list[tuple[str, str]]:
    return list(sys.modules["t43_agents"].ENDED)  # type: ignore[attr-defined]


def test_a_case_hung_in_each_phase_fails_saying_where_and_the_other_cases_still_run(team: Path) -> None:
    cases = _load(
        team,
        _case("hang/build", "build")
        + _case("hang/model", "model")
        + _case("hang/verify", "verify")
        + _case("hang/judge", "ok", "t43_hangs")
        + _case("fine", "ok"),
    )
    started = time.monotonic()
    outcomes = asyncio.run(run_cases(cases, jobs=2, case_timeout=CUT))
    assert time.monotonic() - started < 30  # the eval ends (the hangs are for an hour, or for good)
    phases = {o.case.name: o.timed_out.phase if o.timed_out else None for o in outcomes}
    assert phases == {
        "hang/build": Phase.BUILD,
        "hang/model": Phase.RUN,
        "hang/verify": Phase.VERIFY,
        "hang/judge": Phase.JUDGE,
        "fine": None,
    }
    assert [o.met for o in outcomes] == [False, False, False, False, True]
    model = outcomes[1]
    assert model.problems == [
        "the case timed out in its run phase after 1s (the case's deadline); its run ended cancelled"
    ]
    assert outcomes[3].actual == ["success"] and not outcomes[3].unjudged  # ran, then cut in its judge


def test_the_run_a_deadline_cut_still_ends_with_a_stop_reason_its_hooks_record(team: Path) -> None:
    """Awaiting (a model that never answers, a verifier on its thread): the run ends `cancelled` within
    the grace; blocking the event loop (sync code in a model): it ends `cancelled` when that returns."""
    cases = _load(team, _case("hang/model", "model") + _case("hang/verify", "verify") + _case("b", "blocks"))
    outcomes = asyncio.run(run_cases(cases, case_timeout=CUT))
    assert [o.timed_out.phase for o in outcomes if o.timed_out] == [Phase.RUN, Phase.VERIFY, Phase.RUN]
    assert sorted(_ended()) == [("hang/model", "cancelled"), ("hang/verify", "cancelled")]
    assert outcomes[2].segments == ()  # its run had not ended when the eval moved on
    sys.modules["t43_agents"].RELEASE.set()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 20
    while len(_ended()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ("b", "cancelled") in _ended()


def test_summary_json_and_report_count_a_timed_out_case_as_failed(team: Path) -> None:
    cases = _load(team, _case("hang/judge", "ok", "t43_hangs") + _case("fine", "ok"))
    outcomes = asyncio.run(run_cases(cases))
    summary = summarize(outcomes)
    assert not summary.passed and summary.timed_out == ("hang/judge",) and summary.met == 1
    assert summary.to_dict()["timed_out"] == ["hang/judge"]
    assert summary.stops == {"t43": {"success": 1}}  # a cut case is no stop of the distribution
    line = case_json(outcomes[0])
    assert line["timed_out"] == {"phase": "judge", "seconds": REACH} and line["met"] is False
    assert case_json(outcomes[1])["timed_out"] is None
    text = render(outcomes, summary, "offline")
    assert f"TIMED OUT (judge, {REACH}s)" in text
    assert "FAILED: 1 of 2 cases did not meet their expectations (1 timed out)." in text


def test_with_repeat_each_round_is_bounded(team: Path) -> None:
    [case] = _load(team, _case("hang/model", "model"))
    rounds = [asyncio.run(run_cases([case], case_timeout=CUT)) for _ in range(3)]
    [merged] = merge_rounds(rounds)
    assert merged.timed_out is not None and merged.rounds == (0, 3) and not merged.met


def test_a_case_sets_its_own_deadline_over_the_eval_s(team: Path) -> None:
    [case] = _load(team, _case("hang/model", "model", extra=", timeout: 0.3"))
    assert case.timeout == 0.3
    outcome = asyncio.run(run_case(case, case_timeout=3600))
    assert outcome.timed_out is not None and outcome.timed_out.seconds == 0.3


@pytest.mark.parametrize("value", ["0", "-1", "'soon'", "true", ".inf", "86401"])
def test_a_case_timeout_that_is_no_number_of_seconds_is_refused_naming_the_field(
    team: Path, value: str
) -> None:
    with pytest.raises(CaseError, match=r"case 'x': field 'timeout': must be a number of seconds"):
        _load(team, _case("x", "ok", extra=f", timeout: {value}"))


def test_the_default_deadline_is_generous_and_grows_with_the_agent_s_time_budget(team: Path) -> None:
    [case] = _load(team, _case("fine", "ok", extra=", description: no deadline of its own"))
    from agent.evals.runner import _watch

    watch = _watch(case, None)
    watch.budgeted(900.0)
    assert watch.seconds == DEFAULT_TIMEOUT + 900 and DEFAULT_TIMEOUT >= 600
    chosen = _watch(case, 30.0)
    chosen.budgeted(900.0)
    assert chosen.seconds == 30.0  # a deadline someone chose is kept as it is


def test_the_pytest_entry_point_fails_a_hung_case_saying_it_timed_out(team: Path) -> None:
    [case] = _load(team, _case("hang/model", "model"))
    with pytest.raises(AssertionError, match=r"hang/model .*timed out in its run phase after 1s"):
        check_case(case, case_timeout=CUT)


def test_endstate_eval_exits_1_and_the_process_exits_though_a_judge_sleeps_for_good(team: Path) -> None:
    cases = team / "cases.yaml"
    cases.write_text("cases:\n" + _case("hang/model", "model") + _case("hang/judge", "ok", "t43_hangs"))
    env = {"PYTHONPATH": str(team), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", str(cases), "--json", "--case-timeout", str(CUT)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["timed_out"] == {"phase": "run", "seconds": CUT}  # --case-timeout's
    assert lines[1]["timed_out"] == {"phase": "judge", "seconds": REACH}  # its own, over the flag
    assert lines[-1]["summary"]["timed_out"] == ["hang/model", "hang/judge"]


def test_a_case_timeout_flag_that_is_no_number_of_seconds_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", "--case-timeout", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "--case-timeout: must be a number of seconds above 0" in done.stderr


def test_limits_suggest_sizes_nothing_by_a_success_its_deadline_cut_before_the_judges(
    team: Path, tmp_path: Path
) -> None:
    """A success whose judge never finished was never checked: from `endstate eval --json` it is no
    successful run for `limits suggest` (as a success whose judge raised)."""
    from agent.evals.limits import history_from_jsonl, suggest

    cases = _load(team, _case("hang/judge", "ok", "t43_hangs") + _case("fine", "ok"))
    outcomes = asyncio.run(run_cases(cases))
    lines = [json.dumps(case_json(o)).encode() for o in outcomes]
    [cut] = suggest(history_from_jsonl(lines[:1], "eval.jsonl"))
    assert not cut.ceilings  # its success was left out: no successful run
    [fine] = suggest(history_from_jsonl(lines[1:], "eval.jsonl"))
    assert fine.ceilings and fine.successes == 1


def test_the_report_of_cases_that_all_timed_out_does_not_say_none_ran(team: Path) -> None:
    """Before: a case that ran (to a success) and then timed out was reported as "(no case ran)"."""
    cases = _load(team, _case("hang/judge", "ok", "t43_hangs"))
    outcomes = asyncio.run(run_cases(cases))
    text = render(outcomes, summarize(outcomes), "offline")
    assert "(no case ran)" not in text and "(no case ran to its end)" in text


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_eval_still_records_the_stop_of_the_run_it_cut(
    team: Path, sig: signal.Signals, code: int
) -> None:
    """Ctrl-C or SIGTERM while a case's run waits on its model: the run ends `cancelled`, recorded by its
    hooks, before the process exits (the case runs on a daemon thread, which exit would drop)."""
    cases = team / "cases.yaml"
    cases.write_text("cases:\n" + _case("hang/model", "model"))
    ended = team / "ended.txt"
    env = {"PYTHONPATH": str(team), "PATH": "/usr/bin:/bin", "T43_ENDED": str(ended)}
    command = [sys.executable, "-m", "agent.cli", "eval", str(cases), "--no-progress"]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        calling = Path(f"{ended}.calling")
        deadline = time.monotonic() + 60
        while not calling.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert calling.exists(), process.stderr.read() if process.stderr else ""
        process.send_signal(sig)
        assert process.wait(timeout=60) == code
    assert ended.read_text() == "hang/model cancelled\n"


def test_a_judge_that_calls_sys_exit_fails_its_case_not_the_eval(team: Path) -> None:
    """Before: `endstate eval` ended with the judge's exit code 3 and "Task exception was never
    retrieved", no report, the other cases never run."""
    cases = team / "cases.yaml"
    cases.write_text("cases:\n" + _case("exits", "ok", "t43_exits") + _case("fine", "ok"))
    env = {"PYTHONPATH": str(team), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", str(cases), "--json", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["crashed"] == "SystemExit: 3" and lines[0]["met"] is False
    assert lines[1]["met"] is True
