"""`agent.evals.limits` and `endstate limits suggest`: ceilings from successful runs, synthetic histories."""

from __future__ import annotations

import contextlib
import http.server
import json
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.cli.main import main
from agent.durable.store import Lease, NewRun, Outcome, open_store
from agent.evals.limits import (
    Headroom,
    LimitsError,
    Observed,
    PastRun,
    PrometheusHistory,
    RecordHistory,
    Suggestion,
    history_from_jsonl,
    history_from_results,
    nearest_rank,
    parse_window,
    render,
    round_up,
    suggest,
    suggest_ceiling,
)
from agent.result import LimitKind, RunResult, StopReason
from agent.usage import Usage

S, L = StopReason.SUCCESS, StopReason.LIMIT


def seed_runs() -> list[PastRun]:
    """The seed's numbers: 95 of 100 successful runs need at most 14 turns, the longest 19.

    Plus six limit stops at the "200 just in case" ceiling, two stopped by a 60 s
    time ceiling, a give-up after 30 turns and a quick no-progress stop.
    """
    turns = [6 + i % 9 for i in range(94)] + [14, 15, 16, 17, 18, 19]
    runs = [
        PastRun("research", S, None, t, 3.0 * t, 1000.0 * t, 0.01 * t, f"s{i}") for i, t in enumerate(turns)
    ]
    runs += [PastRun("research", L, LimitKind.TURNS, 200, 600, 200_000, 2.0, f"l{i}") for i in range(6)]
    runs += [PastRun("research", L, LimitKind.SECONDS, 12, 60, 12_000, 0.12, f"t{i}") for i in range(2)]
    runs += [PastRun("research", StopReason.GAVE_UP, None, 30, 90, 30_000, 0.3, "g1")]
    runs += [PastRun("research", StopReason.NO_PROGRESS, None, 3, 9, 3000, 0.03, "n1")]
    return runs


def test_the_seeds_example_comes_out_at_25_turns() -> None:
    (s,) = suggest(RecordHistory(seed_runs()))
    turns = next(c for c in s.ceilings if c.kind is LimitKind.TURNS)
    assert (turns.observed.count, turns.observed.quantile, turns.observed.longest) == (100, 14, 19)
    assert turns.suggested == 25
    assert s.ceiling(LimitKind.SECONDS) == 80  # p95 42 s, longest 57 s: max(63, 71.25) rounded up
    assert s.ceiling(LimitKind.TOKENS) == 25_000
    assert s.ceiling(LimitKind.COST) == pytest.approx(0.25)
    assert s.stops == {"success": 100, "limit": 8, "gave_up": 1, "no_progress": 1}
    assert s.notes == ()


def test_what_the_seed_suggestion_would_have_changed() -> None:
    (s,) = suggest(RecordHistory(seed_runs()))
    assert s.changes is not None
    assert (s.changes.limit_stops, s.changes.sooner, s.changes.more_room, s.changes.cut) == (8, 6, 2, 1)
    text = render([s], "test")
    assert (
        "past limit stops: 8; with these ceilings 6 would have stopped sooner and 2 would have had more room"
        in text
    )
    assert "other stops past these ceilings: 1" in text
    assert "as code: Budget(max_turns=25, max_seconds=80, max_tokens=25_000, max_cost_usd=0.25)" in text


@pytest.mark.parametrize(
    ("value", "rounded"),
    [(23.75, 25), (21, 25), (25, 25), (25.01, 30), (7.5, 8), (1, 1), (1.01, 1.2), (101, 120), (0.0275, 0.03),
     (0.00123, 0.0015), (61_000, 80_000), (0, 0), (1.1e-13, 1.2e-13), (1e-320, 1e-320),
     (3e300, 3e300)],
)  # fmt: skip
def test_round_up(value: float, rounded: float) -> None:
    assert round_up(value) == pytest.approx(rounded, rel=1e-9, abs=0)


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        (list(range(1, 101)), 0.95, 95),
        ([5], 0.95, 5),
        ([1, 2], 0.95, 2),
        ([3, 1, 2], 0.5, 2),
        ([1] * 19 + [50], 0.95, 1),
    ],
)
def test_nearest_rank(values: list[float], q: float, expected: float) -> None:
    assert nearest_rank(values, q) == expected


@pytest.mark.parametrize(
    ("kind", "observed", "expected"),
    [
        (LimitKind.TURNS, Observed(100, 14, 19), 25.0),
        (LimitKind.TURNS, Observed(1, 1, 1), 2.0),
        (LimitKind.TURNS, Observed(40, 9, 10), 15.0),  # 1.5 x p95 = 13.5 wins over 12.5
        (LimitKind.TOKENS, Observed(3, 1234, 1560), 2000.0),  # 1.25 x 1560 = 1950
        (LimitKind.TOKENS, Observed(3, 1560, 1560), 2500.0),
        (LimitKind.SECONDS, Observed(3, 0.005, 0.006), 1.0),  # never under a second
        (LimitKind.SECONDS, Observed(50, 210, 260), 400.0),
        (LimitKind.COST, Observed(5, 0.0062, 0.0065), 0.01),
        (LimitKind.COST, Observed(5, 0, 0), None),  # cost never recorded: nothing to suggest
    ],
)
def test_suggest_ceiling(kind: LimitKind, observed: Observed, expected: float | None) -> None:
    ceiling = suggest_ceiling(kind, observed)
    assert (ceiling.suggested if ceiling else None) == pytest.approx(expected)


def test_ceiling_is_above_the_longest_run_and_never_runaway() -> None:
    rng = random.Random(7)
    for _ in range(300):
        turns = [rng.randint(1, 60) for _ in range(rng.randint(1, 80))]
        observed = Observed(len(turns), nearest_rank(turns, 0.95), max(turns))
        ceiling = suggest_ceiling(LimitKind.TURNS, observed)
        assert ceiling is not None
        assert max(turns) < ceiling.suggested <= 2 * max(turns) + 1, turns
        assert ceiling.suggested >= 1.5 * observed.quantile


def test_headroom_is_configurable() -> None:
    ceiling = suggest_ceiling(
        LimitKind.TURNS, Observed(100, 14, 19), Headroom(over_quantile=1.0, over_longest=1.05)
    )
    assert ceiling is not None and ceiling.suggested == 20


def test_empty_history_suggests_nothing() -> None:
    assert suggest(RecordHistory([])) == []
    assert render([], "the run store at x.db").startswith("No ended runs in the run store at x.db")


def test_a_task_type_with_only_failures_gets_a_clear_message_and_no_suggestion() -> None:
    runs = [PastRun("migrate", L, LimitKind.TURNS, 25, run_id=f"m{i}") for i in range(3)]
    runs += [PastRun("migrate", StopReason.GAVE_UP, run_id="g"), *seed_runs()]
    migrate, research = suggest(RecordHistory(runs))
    assert migrate.task_type == "migrate" and migrate.ceilings == () and migrate.changes is None
    assert migrate.notes[0].startswith("no successful run among 4 (1 gave_up, 3 limit): ceilings are read")
    assert research.ceiling(LimitKind.TURNS) == 25
    assert "migrate: 4 runs ended (limit 3, gave_up 1)\n  note: no successful run among 4" in render(
        [migrate, research], "x"
    )


def test_one_outlying_success_is_named_as_what_sets_the_ceiling() -> None:
    runs = [PastRun("t", S, None, 10, 5, 1000, 0.01, f"s{i}") for i in range(99)]
    runs += [PastRun("t", S, None, 200, 6, 1100, 0.011, "far")]
    (s,) = suggest(RecordHistory(runs))
    assert s.ceiling(LimitKind.TURNS) == 250  # above every successful run, as promised
    [note] = [n for n in s.notes if "outlier" in n]
    assert note == (
        "turns: the longest successful run (200) is 20x the 95th percentile (10): an outlier sets "
        "this ceiling. Look at that run (`endstate review`); from the 95th percentile alone it would be 15"
    )
    (seed,) = suggest(RecordHistory(seed_runs()))
    assert not any("outlier" in n for n in seed.notes)


def test_few_successes_are_flagged() -> None:
    (s,) = suggest(RecordHistory([PastRun("t", S, None, 5, 2, 100, 0, "a")]))
    assert s.ceiling(LimitKind.TURNS) == 8
    assert "only 1 successful run(s): the 95th percentile is rough" in s.notes[0]
    assert "no suggestion for cost: not recorded in this history" in s.notes[1]


def test_a_run_counts_once_as_its_last_segment_and_unended_runs_not_at_all() -> None:
    runs = [
        PastRun("t", StopReason.NEED_HELP, None, 4, run_id="r1"),
        PastRun("t", S, None, 6, 1, 10, 0.1, run_id="r1"),
        PastRun("t", StopReason.NEED_HELP, None, 3, run_id="r2"),  # still waiting
        PastRun("t", StopReason.CANCELLED, None, 2, run_id="r3"),
    ]
    history = RecordHistory(runs)
    assert history.stops("t") == {"success": 1}
    assert history.observed("t", LimitKind.TURNS, 0.95) == Observed(1, 6, 6)


def test_history_from_results() -> None:
    results = [
        RunResult(f"r{i}", "a", "csv", S, turns=4 + i, active_seconds=1.0, usage=Usage(90)) for i in range(3)
    ]
    (s,) = suggest(history_from_results(results))
    assert s.ceiling(LimitKind.TURNS) == 10  # longest 6 x 1.25 = 7.5, p95 6 x 1.5 = 9 -> 10


def test_json_lines_of_demo_rows_and_eval_cases(tmp_path: Path) -> None:
    demo = {"agent": "a", "scenario": "x", "segment": 1, "run_id": "d1", "task_type": "csv"}
    demo |= {"reason": "limit", "limit": "turns", "turns": 15, "input_tokens": 10, "output_tokens": 5}
    case = {"case": "c", "task_type": "csv", "segments": [
        {"run_id": "e1", "reason": "need_help", "turns": 2},
        {"run_id": "e1", "reason": "success", "turns": 6, "active_seconds": 0.5, "cost_usd": 0.01},
    ]}  # fmt: skip
    lines = [json.dumps(demo), json.dumps(case), "", json.dumps({"summary": {"cases": 1}})]
    history = history_from_jsonl(lines)
    assert history.stops("csv") == {"limit": 1, "success": 1}
    assert history.observed("csv", LimitKind.COST, 0.95) == Observed(1, 0.01, 0.01)


def test_a_bad_json_line_is_named(tmp_path: Path) -> None:
    with pytest.raises(LimitsError, match=r"^runs.jsonl, line 2: not a run record"):
        history_from_jsonl(['{"summary": {}}', '{"reason": "success"}'], "runs.jsonl")
    with pytest.raises(LimitsError, match=r"^runs.jsonl, line 1: not a run record"):
        history_from_jsonl(["{not json"], "runs.jsonl")


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ('{"task_type": "a", "reason": "success", "turns": 1e400}', "turns must be a whole number from 0"),
        ('{"task_type": "a", "reason": "success", "turns": NaN}', "turns must be a whole number from 0"),
        ('{"task_type": "a", "reason": "success", "turns": -5}', "turns must be a whole number from 0"),
        ('{"task_type": "a", "reason": "success", "turns": true}', "turns must be a whole number from 0"),
        ('{"task_type": "a", "reason": "success", "active_seconds": -1}', "active_seconds must be"),
        ('{"task_type": "a", "reason": "success", "cost_usd": Infinity}', "cost_usd must be"),
        ('{"task_type": "a", "reason": "success", "input_tokens": "5"}', "input_tokens must be"),
        ('{"task_type": ["a"], "reason": "success", "turns": 3}', "task_type must be a non-empty string"),
        ('{"task_type": "a", "segments": 5}', "segments must be a list"),
        ('{"task_type": "a", "reason": "success", "input_tokens": 1e308}', "input_tokens must be a whole"),
    ],
)
def test_a_run_record_with_impossible_numbers_is_named_not_a_traceback(row: str, says: str) -> None:
    with pytest.raises(LimitsError, match=rf"^runs.jsonl, line 1: not a run record: .*{says}"):
        history_from_jsonl([row], "runs.jsonl")


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("12h", 43200), ("7d", 604800), ("2w", 1209600)]
)
def test_parse_window(text: str, seconds: float) -> None:
    assert parse_window(text) == seconds


def test_a_bad_window_says_how_to_write_one() -> None:
    with pytest.raises(LimitsError, match="use a number and a unit"):
        parse_window("7 days")


@pytest.mark.parametrize("source", ["--store", "--prometheus"])
def test_an_empty_window_is_refused_not_read_as_no_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str
) -> None:
    """`--window 0d` once suggested ceilings from every run in the store, as if no window was given
    (and sent Prometheus a range it refuses): a window with no time in it is an error."""
    url = str(tmp_path / "runs.db")
    open_store(url).close()
    where = url if source == "--store" else "http://127.0.0.1:1"
    assert main(["limits", "suggest", source, where, "--window", "0d"]) == 2
    assert "window '0d' is empty: give a length above 0" in capsys.readouterr().err


def test_a_json_lines_file_that_is_not_utf8_is_named_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"task_type": "t", "reason": "success", "turns": 3}\n\xff\xfe{"reason"\n')
    assert main(["limits", "suggest", "--jsonl", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}, line 2: not a run record: 'utf-8' codec can't decode byte 0xff" in err
    assert "Traceback" not in err


# -- the command ------------------------------------------------------------------------------


def write_jsonl(path: Path, runs: list[PastRun]) -> Path:
    rows = [
        {
            "run_id": r.run_id,
            "task_type": r.task_type,
            "reason": str(r.reason),
            "limit": r.limit and str(r.limit),
        }
        | {"turns": r.turns, "active_seconds": r.seconds, "input_tokens": r.tokens, "cost_usd": r.cost}
        for r in runs
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_command_from_a_json_lines_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", seed_runs())
    assert main(["limits", "suggest", "--jsonl", str(path)]) == 0
    out = capsys.readouterr().out
    assert "research: 110 runs ended (success 100, limit 8, gave_up 1, no_progress 1)" in out
    assert "  turns          100         14         19         25" in out
    assert main(["limits", "suggest", "--jsonl", str(path), "--json"]) == 0
    (data,) = json.loads(capsys.readouterr().out)
    assert data["ceilings"]["turns"] == {"suggested": 25, "successes": 100, "p95": 14, "longest": 19}
    assert data["changes"]["changed"] == 8
    assert main(["limits", "suggest", "--jsonl", str(path), "--task-type", "other"]) == 2
    assert "no runs of task type other in " in capsys.readouterr().err


def test_command_with_only_failures_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", [PastRun("t", L, LimitKind.TURNS, 25, run_id="x")])
    assert main(["limits", "suggest", "--jsonl", str(path)]) == 1
    assert "no successful run among 1 (1 limit)" in capsys.readouterr().out
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["limits", "suggest", "--jsonl", str(empty)]) == 1
    assert "No ended runs in" in capsys.readouterr().out


def test_command_needs_a_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ENDSTATE_STORE", raising=False)
    assert main(["limits", "suggest"]) == 2
    assert (
        "no run store at .endstate/runs.db; pass --store URL, --jsonl FILE or --prometheus URL"
        in capsys.readouterr().err
    )
    assert not (tmp_path / ".endstate").exists()
    assert main(["limits", "suggest", "--jsonl", "nope.jsonl"]) == 2
    assert "nope.jsonl: cannot read" in capsys.readouterr().err


def test_a_store_path_that_does_not_exist_is_an_error_and_nothing_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped --store made the folders and an empty store there, then said "No ended runs"."""
    typo = tmp_path / "typo" / "runs.db"
    assert main(["limits", "suggest", "--store", str(typo)]) == 2
    assert f"there is no run store at {typo} (nothing was created)" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def test_command_from_the_run_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    lease = Lease("w1", 4e9)
    now = 1.9e9  # runs recorded in the future of the test's clock stay inside any window
    for i, run in enumerate(seed_runs()):
        store.create(NewRun(run.run_id or str(i), "researcher", "task", run.task_type), lease, now)
        result = RunResult(
            run.run_id or str(i), "researcher", run.task_type, run.reason, run.limit, turns=int(run.turns),
            active_seconds=run.seconds, usage=Usage(int(run.tokens), cost_usd=run.cost),
        )  # fmt: skip
        store.record(result.run_id, Outcome.of(result), lease, now)
    store.create(NewRun("old", "researcher", "task", "research"), lease, 1.0)
    store.record("old", Outcome.of(RunResult("old", "researcher", "research", S, turns=90)), lease, 1.0)
    store.close()
    assert main(["limits", "suggest", "--store", url, "--window", "30d"]) == 0
    out = capsys.readouterr().out
    assert "research: 110 runs ended" in out and "as code: Budget(max_turns=25," in out
    assert f"(from the run store at {url}, last 30d)" in out
    assert main(["limits", "suggest", "--store", url]) == 0  # no window: the old 90-turn run counts
    assert "research: 111 runs ended" in capsys.readouterr().out


def test_the_prometheus_names_limits_reads_are_the_names_contracts() -> None:
    """agent/ may not import telemetry (its SDK), so limits.py spells the names out: keep them equal."""
    from agent.evals import limits
    from telemetry import names

    assert limits.HISTOGRAMS == {
        LimitKind.TURNS: names.METRIC_RUN_TURNS,
        LimitKind.SECONDS: names.METRIC_RUN_ACTIVE_SECONDS,
        LimitKind.TOKENS: names.METRIC_RUN_TOKENS,
    }
    assert limits.STOPS_TOTAL == names.METRIC_STOPS + "_total"
    assert limits.STOPS_TOTAL in names.EXPOSED_METRICS


# -- what a Prometheus (or something else at its URL) may answer ---------------------------------


@contextlib.contextmanager
def answering(status: int, body: bytes) -> Iterator[str]:
    """A loopback HTTP server at whose URL every query gets `body`: a stand-in for what sits there."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def vector(*samples: tuple[dict[str, str], Any]) -> bytes:
    result = [{"metric": m, "value": [1.9e9, v]} for m, v in samples]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (200, b"<html>a login page</html>", "with no JSON"),
        (200, b"[1, 2]", r"refused .*\[1, 2\]"),
        (200, vector(({"task_type": "t", "stop_reason": "success"}, "many")), "no instant vector of numbers"),
        (200, vector(({"task_type": "t", "stop_reason": "success"}, 3)), "no instant vector of numbers"),
        (200, json.dumps({"status": "success", "data": {"result": 5}}).encode(), "no instant vector"),
    ],
)
def test_an_answer_that_is_no_prometheus_vector_is_named_not_a_traceback(
    status: int, body: bytes, says: str
) -> None:
    """A JSON list, or a sample whose value is no number, was an AttributeError or ValueError."""
    with answering(status, body) as url, pytest.raises(LimitsError, match=rf"Prometheus at {url} .*{says}"):
        PrometheusHistory(url, "7d")


def test_nan_counts_from_prometheus_are_no_runs_not_a_traceback() -> None:
    """`increase()` over a series with no samples in the window can be NaN: round(NaN) raised."""
    nan = vector(({"task_type": "t", "stop_reason": "success", "le": "+Inf"}, "NaN"))
    with answering(200, nan) as url:
        history = PrometheusHistory(url, "7d")
    assert history.task_types() == [] and suggest(history) == []


def test_a_task_type_with_no_stop_in_what_was_read_says_so_not_zero_runs_and_empty_brackets() -> None:
    # Prometheus can hold a task type's histograms with no stop counted in the window (newcomer54).
    quiet = Suggestion("csv_clean", {})
    assert render([quiet], "x").startswith("csv_clean: no run ended in what was read\n")
