"""Runs across processes through the CLI: suspend in one, answer from another; concurrent answers."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_runner_agents import catalog, counted, counter_state, env_with_tests
from test_service_support import endstate, spawn

from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.journal import Extended, Stopped
from agent.result import StopReason

pytestmark = pytest.mark.slow
CATALOG = "test_runner_agents:catalog"


def test_suspend_in_one_process_answer_from_another_and_the_run_completes(
    store_url: str, tmp_path: Path
) -> None:
    env_worlds = {"ENDSTATE_WORLDS": str(tmp_path / "worlds")}
    import os

    env = {**os.environ, **env_worlds}
    first = endstate("start", "invoice-downloader", "Get the invoice", "--json", store=store_url, env=env)
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    assert result["reason"] == "need_help"
    pending = endstate("pending", store=store_url, env=env)
    assert result["run_id"] in pending.stdout and "Which one should I download?" in pending.stdout

    second = endstate(
        "answer", result["run_id"], "INV-0913, the corrected one.", "--json", store=store_url, env=env
    )
    assert second.returncode == 0, second.stderr
    done = json.loads(second.stdout)
    assert (done["reason"], done["verified"], done["turns"]) == ("success", True, 4)
    runs = endstate("runs", "--json", store=store_url, env=env)
    assert json.loads(runs.stdout.splitlines()[0])["status"] == "finished"


def test_concurrent_answers_from_two_processes_resume_exactly_once(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    state = json.dumps(counter_state(folder, "ask"))
    first = endstate(
        "start", "counter", "ask", "--state", state, "--catalog", CATALOG, "--json", store=store_url
    )
    run_id = json.loads(first.stdout)["run_id"]
    procs = [
        spawn("answer", run_id, "2", "--catalog", CATALOG, store=store_url, log=tmp_path / f"answer{i}.log")
        for i in range(3)
    ]
    codes = [p.wait(timeout=120) for p in procs]
    logs = [(tmp_path / f"answer{i}.log").read_text() for i in range(3)]
    assert sorted(codes) == [0, 2, 2], logs
    refused = [log for code, log in zip(codes, logs, strict=True) if code == 2]
    assert all("not waiting" in log and "Traceback" not in log for log in refused), refused
    assert counted(folder) == [1, 2]  # the second half ran once
    store = open_store(store_url)
    rec = store.get(run_id)
    store.close()
    assert rec is not None and rec.status is RunStatus.FINISHED and rec.segments == 2


def test_a_corrupt_or_foreign_sqlite_file_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"\x00garbage, not SQLite\n" * 300)
    foreign = tmp_path / "foreign.db"
    subprocess.run(
        ["python3", "-c", f"import sqlite3; sqlite3.connect({str(foreign)!r}).execute('create table t(x)')"]
    )
    for path, message in (
        (corrupt, "file is not a database"),
        (foreign, "SQLite database of something else"),
    ):
        for command in (["runs"], ["pending"], ["answer", "some-run", "yes"]):
            done = endstate(*command, store=str(path))
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith("endstate: ") and message in done.stderr
            assert "Traceback" not in done.stderr


def test_a_disk_that_fills_up_mid_run_is_said_in_lines_not_tracebacks(tmp_path: Path) -> None:
    """The disk fills up during `endstate start` (the test's tool caps the process's file size): the
    checkpoint and each new attempt at it fail; past the retries the run is left to recovery, not
    recorded (audit11). The person at the terminal reads one line for each attempt, one that says
    the run is not over, and the error, exit 2, and no Python traceback."""
    folder = tmp_path / "run"
    state = json.dumps(counter_state(folder, "full"))
    done = endstate(
        "start", "counter", "count", "--state", state, "--catalog", CATALOG, store=str(tmp_path / "runs.db")
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("endstate: warning: a checkpoint was not written (the run store ")
    assert any(line.endswith("trying again in 4.0 s") for line in lines), lines  # then it gave up
    left = [line for line in lines if line.startswith("endstate: error: run ")]
    assert len(left) == 1 and "the run is not over" in left[0] and "recovery continues it" in left[0]
    assert not any("recording run " in line for line in lines), lines  # nothing recorded: no end
    assert lines[-1].startswith("endstate: the run store ") and "disk I/O error" in lines[-1]
    assert all(line.startswith("endstate: ") for line in lines), lines
    assert counted(folder) == [1]


# -- what `runs` and `pending` print for someone new to them -------------------------------------


def _waiting_runs(path: Path, tmp_path: Path) -> list[str]:
    """Two runs of the counter agent: a question past its deadline, and a pending approval."""
    store = open_store(str(path))
    runner = Runner(store, catalog())
    try:
        late = asyncio.run(runner.start("counter", "ask", state=counter_state(tmp_path / "a", "ask", wait=0)))
        wire = asyncio.run(runner.start("counter", "pay", state=counter_state(tmp_path / "b", "approve")))
    finally:
        store.close()
    return [late.run_id, wire.run_id]


def test_runs_prints_a_header_times_with_their_zone_and_what_to_do_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    assert main(["runs", "--store", str(path)]) == 2  # no store there: said, and none made
    assert f"there is no run store at {path}" in capsys.readouterr().err and not path.exists()
    open_store(str(path)).close()
    assert main(["runs", "--store", str(path)]) == 0
    assert (  # with the --store given: pasted without it, the run went to the default store
        capsys.readouterr().out
        == f"no runs in sqlite:///{path}; start one with `endstate start AGENT TASK --store {path}`\n"
    )
    assert main(["runs", "--store", str(path), "--status", "cancelled"]) == 0
    assert capsys.readouterr().out == f"no cancelled runs in sqlite:///{path}\n"  # not "start one"
    _waiting_runs(path, tmp_path)
    assert main(["runs", "--store", str(path)]) == 0
    header, *rows, _, hint = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["RUN", "ID", "AGENT", "TASK"] and "STARTED (local time)" in header
    assert len(rows) == 2 and all(re.search(r" [+-]\d{4}$", row) for row in rows)  # the UTC offset
    assert hint == f"2 of these wait for a person: `endstate pending --store {path}` shows what they ask"


def test_a_damaged_row_is_named_in_the_listing_never_shown_as_no_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    late, wire = _waiting_runs(path, tmp_path)
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:  # a bad disk, or a person with a SQL prompt
        conn.execute("UPDATE endstate_runs SET state = '{oops' WHERE run_id = ?", (late,))
    for command in ("runs", "pending"):
        assert main([command, "--store", str(path)]) == 0
        captured = capsys.readouterr()
        assert "no runs" not in captured.out and wire in captured.out
        assert (
            f"1 run in sqlite:///{path} left out: its row is damaged ({late}); the error logged for "
            "each says which column: fix the row, or delete the run"
        ) in captured.out.splitlines()
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE endstate_runs SET state = '{oops'")
    assert main(["runs", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 runs in ") and "their rows are damaged" in out and "no runs" not in out
    assert main(["pending", "--json", "--store", str(path)]) == 0
    assert capsys.readouterr().out == ""  # JSON lines stay JSON: the log (stderr) names the rows


def test_pending_says_how_to_answer_and_when_it_is_too_late(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    late, wire = _waiting_runs(path, tmp_path)
    assert main(["pending", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "deadline in passed" not in out and re.search(r"deadline passed \d+s ago \(\d{4}-", out)
    # the hints carry the store that was given, and a catalog to name: the runs' agents are no seed agents
    on = f"--store {path} --catalog MODULE:ATTR"
    assert f"too late to answer: `endstate recover {on}` ends it under its help policy" in out
    assert f'endstate approve {wire} {on}   or   endstate deny {wire} {on} "why"' in out
    assert f"endstate answer {late}" not in out  # past its deadline: no command that would be refused


def test_a_cancelled_run_says_how_to_resume_it_and_resume_does(store_url: str, tmp_path: Path) -> None:
    env = {**env_with_tests(), "ENDSTATE_WORLDS": str(tmp_path / "worlds")}
    first = endstate("start", "csv-cleaner", "Clean", "--scenario", "csv/shutdown", store=store_url, env=env)
    assert first.returncode == 3, first.stderr  # cancelled: not a success's 0 (red40b)
    run_id = re.findall(r"^run (\w+): cancelled", first.stdout, re.M)[0]
    assert first.stdout.rstrip().endswith(f"-> endstate resume {run_id} --store {store_url}")
    done = endstate("resume", run_id, "--json", store=store_url, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reason"] == "success"
    again = endstate("resume", run_id, store=store_url, env=env)
    assert again.returncode == 2 and "is finished, not waiting or cancelled" in again.stderr


def test_the_next_command_a_start_or_an_answer_prints_reaches_the_same_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`endstate start ... --store S` printed `-> endstate answer ID "your answer"`, without the store:
    pasted, it looked in the default store (none there: exit 2). `pending` has always printed the
    `--store`; `start`, `answer`, `approve`, `deny`, `resume`, `recover` and `end` print it now too."""
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.chdir(tmp_path)
    store = str(tmp_path / "elsewhere" / "runs.db")
    for run_id, scenario in (("asks", "invoice/which-one"), ("pushes", "ci/approved-push")):
        agent = "invoice-downloader" if run_id == "asks" else "ci-fixer"
        assert main(["start", agent, "Go", "--scenario", scenario, "--run-id", run_id, "--store", store]) == 0
        hint = capsys.readouterr().out.splitlines()[-1].split("->", 1)[1].split("   or   ")[0]
        command = shlex.split(hint.replace("your answer", "INV-0913"))
        assert command[:3] == ["endstate", "answer" if run_id == "asks" else "approve", run_id]
        assert main(command[1:]) == 0
        assert f"run {run_id}: success" in capsys.readouterr().out


def test_a_run_stopped_at_a_limit_says_how_to_give_it_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`endstate start` printed "run ID: limit (turns) after 15 turns." and nothing after it, as if the
    run were over; a cancelled or waiting run's line ends with the command that continues it, and a
    limit stop is continued with more of the budget that ran out (README: `endstate resume RUN_ID
    --more-turns 10`)."""
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    store = str(tmp_path / "runs.db")
    started = ["start", "csv-cleaner", "Clean", "--scenario", "csv/ok-every-time", "--run-id", "short"]
    assert main([*started, "--store", store]) == 0
    said = capsys.readouterr().out
    assert "run short: limit (turns) after 15 turns." in said
    hint = said.splitlines()[-1].split("->", 1)[1].split("   ")[0]
    assert shlex.split(hint) == ["endstate", "resume", "short", "--store", store, "--more-turns", "N"]
    assert main([*shlex.split(hint.replace(" N", " 5"))[1:]]) == 0
    assert "run short: limit (turns) after 20 turns." in capsys.readouterr().out


def test_recover_goes_on_past_a_run_it_cannot_resume(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = open_store(str(path))
    try:
        runner = Runner(store, catalog())
        runner.shutting_down.set()  # both runs stop at their first turn, interrupted
        bad, good = (
            asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / n, "plain"))).run_id
            for n in ("bad", "good")
        )
        store._rows(  # type: ignore[attr-defined]
            'UPDATE endstate_runs SET snapshot = REPLACE(snapshot, \'"agent":"counter"\', '
            '\'"agent":"someone-else"\') WHERE run_id = ?',
            (bad,),
        )
    finally:
        store.close()
    done = endstate("recover", "--catalog", CATALOG, store=str(path))
    assert done.returncode == 0, done.stderr
    assert f"run {good}: success" in done.stdout and "1 run recovered or swept" in done.stdout
    assert (
        f"run {bad} cannot be recovered" in done.stderr and "belongs to agent 'someone-else'" in done.stderr
    )
    store = open_store(str(path))
    try:
        rec = store.get(bad)
        assert rec is not None and (rec.status, rec.owner, rec.stop_reason) == (
            RunStatus.FINISHED,
            None,
            "error",
        )
        assert rec.error_type == "bad_snapshot"  # it says why, and keeps its checkpoint for `endstate resume`
        assert rec.snapshot_json is not None
    finally:
        store.close()


def test_a_run_stopped_at_its_turn_limit_is_continued_with_more_turns(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "r"
    state = counter_state(folder, "plain", max_turns=2)
    first = endstate(
        "start",
        "counter",
        "count",
        "--state",
        json.dumps(state),
        "--catalog",
        CATALOG,
        "--json",
        store=store_url,
    )
    assert first.returncode == 0, first.stderr
    stopped = json.loads(first.stdout)
    assert (stopped["reason"], stopped["limit"], stopped["turns"]) == ("limit", "turns", 2)
    run_id = stopped["run_id"]
    refused = endstate("resume", run_id, "--catalog", CATALOG, store=store_url)
    # it says what would resume it (it said "is finished, not waiting or cancelled")
    assert refused.returncode == 2 and "stopped at its turns limit: give it more budget" in refused.stderr
    assert f"`endstate resume {run_id} --more-turns 10`" in refused.stderr  # a command to copy, its own id
    assert refused.stderr.count("\n") == 1
    done = endstate("resume", run_id, "--more-turns", "3", "--catalog", CATALOG, "--json", store=store_url)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["reason"], result["turns"]) == ("success", 3)
    assert counted(folder) == [1, 2]  # nothing ran twice
    store = open_store(store_url)
    try:
        rec = store.get(run_id)
        assert rec is not None and (rec.status, rec.stop_reason, rec.segments) == (
            RunStatus.FINISHED,
            "success",
            2,
        )
        kept = store.snapshot(run_id)  # the whole journal, the extension in it, down to the stop
        assert kept is not None and sum(isinstance(e, Extended) for e in kept.journal) == 1
        assert isinstance(kept.journal[-1], Stopped) and kept.journal[-1].reason is StopReason.SUCCESS
    finally:
        store.close()


def test_start_refuses_a_state_that_is_not_standard_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    path = str(tmp_path / "runs.db")
    open_store(path).close()
    for state, says in [
        ('{"x": NaN}', "NaN is not a JSON number"),
        ('{"x": -Infinity}', "-Infinity is not a JSON number"),
        ('{"x": "v\udcfe"}', "not UTF-8"),  # a byte argv could not decode
        ('{"x": ' + "[" * 100_000 + "}", "nested too deeply"),  # were tracebacks, RecursionError
        ('{"x": ' + "9" * 5000 + "}", "a number too long to read"),  # and ValueError
        ('{"x": 1, "y": 2, "x": 3}', "the key 'x' twice"),  # was taken as 3, silently
    ]:
        assert main(["start", "invoice-downloader", "t", "--state", state, "--store", path]) == 2
        assert says in capsys.readouterr().err
    assert main(["runs", "--store", path]) == 0
    assert capsys.readouterr().out.startswith("no runs")


def test_json_lines_stay_standard_json_whatever_a_state_set_in_python_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    store = open_store(str(path))
    try:
        runner = Runner(store, catalog())
        state = counter_state(tmp_path / "a", "ask") | {"limit": float("nan"), "name": "v\udcfe"}
        asyncio.run(runner.start("counter", "ask", state=state))
    finally:
        store.close()
    for command in ("runs", "pending"):
        assert main([command, "--json", "--store", str(path)]) == 0
        [line] = capsys.readouterr().out.splitlines()
        shown = json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
        assert shown["state"]["limit"] is None and shown["state"]["name"] == "v\ufffd"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["resume", "r1", "--more-turns", "-3"], "argument --more-turns: '-3' is not a whole number above 0"),
        (["resume", "r1", "--more-cost", "nan"], "argument --more-cost: 'nan' is not a number above 0"),
        (["resume", "r1", "--more-seconds", "inf"], "'inf' is not a number above 0"),
        (["resume", "r1", "--more-turns", "0"], "'0' is not a whole number above 0"),
        (
            ["resume", "r1", "--more-turns", "1" + "0" * 25],
            "argument --more-turns: '1"
            + "0" * 25
            + "' is not a whole number above 0 and at most 9223372036854775807",
        ),
        (["resume", "r1", "--more-seconds", "1e300"], "'1e300' is not a number above 0 and at most 31536000"),
        (["resume", "r1", "--more-tokens", str(2**63)], "is not a whole number above 0 and at most"),
        (["runs", "--limit", "-1"], "argument --limit: '-1' is not a whole number above 0"),
        (["review", "--limit", "0"], "argument --limit: '0' is not a whole number above 0"),
    ],
)
def test_a_count_or_budget_flag_below_one_names_the_flag(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2 and says in capsys.readouterr().err


def test_output_piped_into_a_reader_that_stops_early_ends_quietly(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _waiting_runs(path, tmp_path)
    command = [sys.executable, "-m", "agent.cli", "runs", "--json", "--store", str(path)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with_tests())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `| head -0`: the reader is gone before the first line
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err, err


def test_one_turn_is_one_turn_in_the_runs_table() -> None:
    from agent.cli.runs import run_line
    from agent.durable.store import RunRecord

    one = RunRecord("r1", "a", "t", "tt", RunStatus.WAITING, {}, 0.0, 0.0, turns=1)
    assert " 1 turn  " in run_line(one) and "1 turns" not in run_line(one)
    assert " 2 turns  " in run_line(dataclasses.replace(one, turns=2))
