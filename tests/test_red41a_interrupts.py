"""red41a: Ctrl-C (SIGINT) at any moment of a command ends it quietly with exit 130: no traceback."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_red40b_demo_interrupt import children
from test_runner_agents import counted, counter_state, env_with_tests, outlive_leases
from test_service_support import wait_for

from agent.cli._signals import SIGTERM_EXIT
from agent.cli.runs import CANCELLED_EXIT
from agent.durable.store import RunRecord, open_store

pytestmark = pytest.mark.slow

# `endstate ARGS` as its console script runs it, with a real SIGINT sent to the process the moment it
# imports `module` (the modules a command line is built from load after `run` began)
CTRL_C_AT_IMPORT = """
import os, signal, sys
MODULE, sys.argv = sys.argv[1], ["endstate", *sys.argv[2:]]
class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, CtrlC())
from agent.cli.main import run
run()
"""


@pytest.mark.parametrize("module", ["agent.cli.evals", "agent.cli.temporal"])
def test_ctrl_c_while_the_command_line_is_built_exits_130_without_a_traceback(
    tmp_path: Path, module: str
) -> None:
    """Before: a Ctrl-C pressed as `endstate eval` started printed a traceback of the import it cut."""
    argv = [sys.executable, "-c", CTRL_C_AT_IMPORT, module, "eval", "csv/clean"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert (done.returncode, done.stderr) == (130, ""), done.stderr


def _stopped_in_a_tool_call(
    argv: list[str], cwd: Path, sig: signal.Signals
) -> subprocess.CompletedProcess[str]:
    """Run `endstate ARGV`; once its run is inside a tool call (a command it runs), send `sig`."""
    env = {**os.environ, "TMPDIR": str(cwd)}  # the scenario's world (a repository) is made there
    command = [sys.executable, "-m", "agent.cli", *argv]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd
    )
    try:
        wait_for(lambda: children(proc.pid), what="the run inside its tool call (a command it runs)")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def _root_spans(traces: Path) -> list[tuple[str, str]]:
    """Each run's span in the demo's offline traces: its name and stop reason."""
    spans = [json.loads(line) for line in traces.read_text().splitlines()]
    return [(s["name"], s["attributes"]["stop.reason"]) for s in spans if s["parent_id"] is None]


def test_sigterm_stops_the_demo_as_ctrl_c_does_its_run_cancelled_and_its_spans_kept(tmp_path: Path) -> None:
    """Before: SIGTERM killed `endstate demo` outright (exit -15): the run it cut never ended (no
    `cancelled`) and the spans of every run it had played were lost (none in .endstate/traces.jsonl)."""
    done = _stopped_in_a_tool_call(["demo", "ci/approved-push", "--repeat", "5"], tmp_path, signal.SIGTERM)
    assert (done.returncode, done.stderr) == (SIGTERM_EXIT, "") == (143, "")
    assert "stop reasons reached" not in done.stdout  # it stopped at once
    runs = _root_spans(tmp_path / ".endstate" / "traces.jsonl")
    assert runs[-1] == ("invoke_agent ci-fixer", "cancelled"), runs


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_an_eval_quietly(tmp_path: Path, sig: signal.Signals) -> None:
    """Ctrl-C ends `endstate eval` with 130, SIGTERM with 143 (before: killed, -15), and no traceback."""
    done = _stopped_in_a_tool_call(["eval", "ci/approved-push", "--repeat", "20"], tmp_path, sig)
    assert (done.returncode, done.stderr) == (128 + sig, ""), done.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_recover_cut_short_by_a_signal_keeps_its_run_cancelled_and_exits_3(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """Before: `endstate recover` exited 0 once SIGTERM or Ctrl-C had cut the run it continued, as if
    all had ended (`start` and `resume` exit 3 then)."""
    store, folder, flag = str(tmp_path / "runs.db"), tmp_path / "run", tmp_path / "run" / "slow.flag"
    state, _ = counter_state(folder, "slow", hold_at=2), flag.touch()
    crashed = _on_store(store, "start", "counter", "count slowly", "--state", json.dumps(state))
    wait_for(lambda: len(counted(folder)) >= 2, what="two counts")
    crashed.kill()  # its worker died holding the run
    crashed.communicate()
    assert outlive_leases(store, 3600, *_owners(store)) == 1
    before = len(counted(folder))
    recover = _on_store(store, "recover")
    wait_for(lambda: len(counted(folder)) > before, what="a count of the recovered run")
    recover.send_signal(sig)
    flag.unlink()  # its turn ends
    out, err = recover.communicate(timeout=120)
    assert (recover.returncode, err) == (CANCELLED_EXIT, ""), err
    assert ": cancelled after" in out and "-> endstate resume " in out
    [run] = _runs(store)
    assert (run.status, run.stop_reason) == ("cancelled", "cancelled")


def _on_store(store: str, *argv: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "agent.cli", *argv, "--catalog", "test_runner_agents:catalog"]
    return subprocess.Popen(
        [*command, "--store", store], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env_with_tests(),
    )  # fmt: skip


def _owners(store: str) -> list[str]:
    """The workers that hold runs of the store."""
    return [r.owner for r in _runs(store) if r.owner]


def _runs(store: str) -> list[RunRecord]:
    with contextlib.closing(open_store(store)) as opened:
        return opened.list_runs()
