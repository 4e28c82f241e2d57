"""Verifiers: a real command, a predicate, all_of, and how the loop uses them."""

from __future__ import annotations

import sys

import pytest

from agent import RunContext, StopReason, Verifier, all_of, command, predicate, tool
from agent.models.scripted import call, finish
from agent.verify import CommandVerifier

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
    [command(PY, "-c", "pass"), predicate(lambda c: True, "r"), all_of(), lambda c: []],
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
