"""Verifiers: a real command, a predicate, all_of, and how the loop uses them."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from pathlib import Path

import pytest

from agent import ConfigError, RunContext, StopReason, Verifier, all_of, command, predicate, tool
from agent.models.scripted import call, finish
from agent.verify import CommandVerifier, Verdict, VerifierError, run_verifiers

PY = sys.executable


def ctx(note: str = "", **state) -> RunContext:
    return RunContext("run-1", "agent", "task", "default", state=state, note=note)


def test_command_exit_0_passes():
    assert command(PY, "-c", "raise SystemExit(0)")(ctx()) == []


def test_command_exit_1_fails_with_the_output_tail():
    check = command(PY, "-c", "import sys; print('collected 3 items'); sys.exit('2 failed, 1 passed')")
    [failure] = check(ctx())
    assert failure.startswith(f"`{PY} -c ")
    assert "exited 1:" in failure
    assert "collected 3 items" in failure
    assert "2 failed, 1 passed" in failure


def test_command_output_is_clipped_to_its_tail():
    check = CommandVerifier([PY, "-c", "print('x' * 5000 + 'THE END'); raise SystemExit(2)"], tail_chars=100)
    [failure] = check(ctx())
    assert "exited 2:" in failure
    assert failure.endswith("THE END")
    assert failure.count("x") <= 100


def test_command_that_runs_too_long_fails_without_hanging():
    check = command(PY, "-c", "import time; time.sleep(60)", timeout=0.5)
    assert check(ctx()) == [f"`{PY} -c import time; time.sleep(60)` did not finish within 0.5 s"]


def test_command_runs_in_cwd(tmp_path):
    script = "import pathlib, sys; sys.exit(0 if pathlib.Path('report.md').exists() else 1)"
    check = command(PY, "-c", script, cwd=tmp_path)
    assert check(ctx()) != []
    (tmp_path / "report.md").write_text("# report")
    assert check(ctx()) == []


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: command(), r"needs the command's words as strings, as command\('pytest', '-q'\) takes them"),
        (lambda: command(["pytest", "-q"]), "needs the command's words as strings"),  # a list, not words
        (lambda: command("true", timeout=0), "timeout is a number of seconds > 0, not 0"),
        (lambda: command("true", timeout="60"), "timeout is a number of seconds > 0, not '60'"),
        (lambda: predicate("ok", "not ok"), "predicate\\(\\) takes a function of the RunContext, not str"),
        (lambda: predicate(lambda ctx: True, ""), "predicate\\(\\) needs the reason to give when it fails"),
        (lambda: all_of(), "all_of\\(\\) takes one or more verifiers"),
        (lambda: all_of(command("true"), "pytest"), "all_of\\(\\) takes one or more verifiers"),
    ],
)
def test_a_verifier_made_wrong_is_refused_when_made(make, says):
    """Each was taken and failed in the run: command(["pytest", "-q"]) or an empty command ended it as
    error (TypeError, IndexError), and timeout=0 rejected every finish ("did not finish within 0 s")
    until the run hit its limit."""
    with pytest.raises(ConfigError, match=says):
        make()


def test_predicate_passes_or_gives_its_reason():
    check = predicate(lambda c: c.state.get("nulls") == 0, "3 rows still hold NULL in email")
    assert check(ctx(nulls=0)) == []
    assert check(ctx(nulls=3)) == ["3 rows still hold NULL in email"]


def test_all_of_reports_every_failure():
    check = all_of(
        predicate(lambda c: "http" in c.note, "no source cited"),
        predicate(lambda c: len(c.note) > 20, "the note is too short"),
        command(PY, "-c", "pass"),
    )
    assert check(ctx("short")) == ["no source cited", "the note is too short"]
    assert check(ctx("see https://a.example for the details")) == []


def test_all_of_nests():
    inner = all_of(predicate(lambda c: False, "inner"))
    assert all_of(inner, predicate(lambda c: False, "outer"))(ctx()) == ["inner", "outer"]


@pytest.mark.parametrize(
    "verifier",
    [command(PY, "-c", "pass"), predicate(lambda c: True, "r"), all_of(lambda c: []), lambda c: []],
)
def test_verifiers_meet_the_protocol(verifier):
    assert isinstance(verifier, Verifier)


def test_a_failing_command_goes_back_to_the_model_until_it_passes(make_agent, tmp_path):
    """The fix-CI shape: `done` is checked by running the tests; the model sees why they fail."""

    @tool
    def write_file(path: str, text: str) -> str:
        """Write a file in the work tree."""
        (tmp_path / path).write_text(text)
        return f"wrote {path}"

    test_cmd = command(PY, "-c", "import fixed; assert fixed.VALUE == 42, 'VALUE is wrong'", cwd=tmp_path)
    agent = make_agent(
        [call("write_file", path="fixed.py", text="VALUE = 41\n")],
        [finish("done", "fixed")],
        [call("write_file", path="fixed.py", text="VALUE = 42\n")],
        [finish("done", "fixed, really")],
        tools=[write_file],
        verifiers=[test_cmd],
    )
    result = agent.run("Make the test pass")

    assert result.reason is StopReason.SUCCESS
    assert result.verified is True
    assert result.output == "fixed, really"
    [rejection] = result.verifier_failures
    assert "AssertionError: VALUE is wrong" in rejection
    seen = agent.model.requests[2].messages[-1]["content"][0]
    assert seen["content"].startswith("Criterion not met: `")
    assert "VALUE is wrong" in seen["content"]
    assert seen["is_error"] is True


def test_every_verifier_runs_and_all_reasons_go_back(make_agent):
    agent = make_agent(
        [finish("done", "short")],
        [finish("done", "a long enough note citing https://a.example")],
        verifiers=[
            predicate(lambda c: "http" in c.note, "no source cited"),
            predicate(lambda c: len(c.note) > 20, "the note is too short"),
        ],
    )
    result = agent.run("task")
    assert result.reason is StopReason.SUCCESS
    assert result.verifier_failures == ("no source cited", "the note is too short")
    seen = agent.model.requests[1].messages[-1]["content"][0]["content"]
    assert seen == "Criterion not met: no source cited; the note is too short"


# -- run_verifiers: off the event loop, within the time left ------------------------------------


def verdict(verifiers, limit=None, context=None):
    return asyncio.run(run_verifiers(verifiers, context or ctx(), limit))


def test_run_verifiers_gathers_every_failure():
    checks = [predicate(lambda c: False, "one"), command(PY, "-c", "pass"), predicate(lambda c: False, "two")]
    assert verdict(checks) == Verdict(["one", "two"])
    assert verdict([]) == Verdict([])


def test_a_command_is_stopped_when_the_run_limit_is_reached(tmp_path):
    """The command is killed at the limit, not left running, however far its start got (it once
    wrote its pid for the test to check: a loaded machine took longer than the limit to start Python,
    and no pid was written)."""
    marker = str(tmp_path / "sleeper")
    script = f"import time; time.sleep(60)  # {marker}"
    result = verdict([command(PY, "-c", script, timeout=60)], limit=1.0)
    assert result.budget_cut
    assert result.failures == []
    for _ in range(200):  # the command is killed, not left running
        if not _running_with(marker):
            break
        time.sleep(0.05)
    assert not _running_with(marker)


def _running_with(marker: str) -> list[int]:
    """The processes whose command line holds `marker` (Linux's /proc)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):  # a process that ended meanwhile
            if marker.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
    return found


def test_a_hanging_predicate_is_abandoned_at_the_limit():
    release = threading.Event()
    result = verdict([predicate(lambda c: release.wait(30), "never")], limit=0.1)
    release.set()
    assert result.budget_cut


def test_failures_before_the_cut_are_kept():
    release = threading.Event()
    checks = [predicate(lambda c: False, "first"), predicate(lambda c: release.wait(30), "never")]
    result = verdict(checks, limit=0.2)
    release.set()
    assert result == Verdict(["first"], budget_cut=True)


def test_no_time_left_runs_no_verifier():
    ran = []
    result = verdict([predicate(lambda c: ran.append(1) or True, "r")], limit=0)
    assert result.budget_cut and ran == []


def test_a_commands_own_timeout_is_a_failure_not_a_cut():
    result = verdict([command(PY, "-c", "import time; time.sleep(60)", timeout=0.3)], limit=30)
    assert not result.budget_cut
    assert result.failures == [f"`{PY} -c import time; time.sleep(60)` did not finish within 0.3 s"]


def test_all_of_is_bounded_as_a_whole():
    script = "import time; time.sleep(60)"
    result = verdict(
        [all_of(predicate(lambda c: False, "first"), command(PY, "-c", script, timeout=60))], limit=0.5
    )
    assert result.budget_cut


def test_a_verifier_raising_system_exit_raises_an_exception_not_a_base_exception():
    def exits(c):
        raise SystemExit("usage: check")

    with pytest.raises(VerifierError, match="SystemExit: usage: check"):
        verdict([exits])
