"""Eval case files: malformed ones get an error naming the file, the case and the field;
the judges catch what the agents' verifiers might let through."""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
from pathlib import Path

import pytest

from agent._loop import CUT_OFF
from agent.evals import CaseError, load_cases, load_file
from agent.evals.judges import CLEAN_ORDERS, JUDGES, Judged, run_judge
from agent.evals.replay import record
from agent.evals.testing import check_case
from agent.examples.scenarios import World
from agent.journal import Note, Reply, Task, Text
from agent.models.base import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.result import RunResult, StopReason
from agent.stops import StopKind

GOOD = """\
  - name: {name}
    agent: invoice-downloader
    fixture: portal_offline
    script: invoice/portal-offline
    expect: gave_up
    impossible: true
    judge: [nothing_downloaded]
"""


def write(tmp_path: Path, text: str, name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def case_with(**fields: object) -> str:
    """A YAML file of one case: a good one with `fields` replaced (None removes a field)."""
    base: dict[str, object] = {
        "name": "bad/one",
        "agent": "invoice-downloader",
        "fixture": "portal_offline",
        "script": "invoice/portal-offline",
        "expect": "gave_up",
        "impossible": True,
        "judge": ["nothing_downloaded"],
    }
    base.update(fields)
    body = "\n".join(f"    {k}: {json.dumps(v)}" for k, v in base.items() if v is not None)
    return "cases:\n  - " + body.lstrip() + "\n"


MALFORMED = [
    # (fields changed, the field named, words of the problem)
    ({"expect": "sucess"}, "expect", "'sucess' is not one of: success, limit"),
    ({"expect": None}, "expect", "required; one of: success"),
    ({"agent": "mailer"}, "agent", "'mailer' is not one of: csv-cleaner"),
    (
        {"fixture": "web_corpus"},
        "fixture",
        "'web_corpus' is a world for researcher; for invoice-downloader use",
    ),
    ({"fixture": "portal_down"}, "fixture", "'portal_down' is not one of"),
    ({"catalog": "mypkg.agents:catalog"}, "fixture", "a catalog agent's case has no fixture"),
    ({"catalog": "mypkg.agents:catalog", "fixture": None}, "script", "a catalog agent's case has no script"),
    ({"state": {"scenario": "x"}}, "state", "only for an agent from a catalog"),
    ({"agent": "refunder", "fixture": None, "script": None}, "agent", "name the catalog it comes from"),
    ({"script": "csv/clean"}, "script", "'csv/clean' is a script for csv-cleaner, not invoice-downloader"),
    ({"judge": ["nothing_downloded"]}, "judge", "'nothing_downloded' is not one of"),
    (
        {"judge": [{"invoice_saved": {"id": "INV-1"}}]},
        "judge",
        "unknown argument(s) 'id'; it takes: invoice_id",
    ),
    ({"judge": [None]}, "judge", "each judge is a name or {name: {argument: value}}"),
    ({"judge": None}, "judge", "needs an independent judge"),
    ({"impossible": "yes"}, "impossible", "must be true or false"),
    ({"impossible": True, "expect": "success"}, "impossible", "an impossible task cannot expect success"),
    ({"expect_limit": "turns"}, "expect_limit", "only makes sense when the case expects a limit stop"),
    ({"expect": "limit", "expect_limit": "steps"}, "expect_limit", "'steps' is not one of: turns"),
    ({"then": {"action": "approve", "expect": "success"}}, "then", "needs a first stop that suspends"),
    ({"expect": "need_help", "then": {"action": "shout", "expect": "success"}}, "then.action", "'shout'"),
    ({"expect": "need_help", "then": {"action": "answer", "expect": "success"}}, "then.text", "non-empty"),
    ({"expect": "need_help", "then": {"action": "approve"}}, "then.expect", "required"),
    ({"expect": "need_help", "then": "approve"}, "then", "must be a mapping"),
    ({"budget": {"turns": -3}}, "budget", "turns must be a whole number above 0, got -3"),
    ({"budget": {"turns": 2.5}}, "budget", "turns must be a whole number above 0, got 2.5"),
    ({"budget": {"steps": 3}}, "budget", "unknown ceiling 'steps'"),
    ({"extend": {"turns": 0}}, "extend", "turns must be a whole number above 0, got 0"),
    ({"extend": "3 turns"}, "extend", "must be a mapping of turns, seconds, tokens, cost"),
    ({"task": ""}, "task", "must be a non-empty string"),
    ({"script": None}, "task", "required"),
    ({"expected": "gave_up"}, "expected", "unknown field; the fields are: name, agent"),
    (
        {"script": None, "task": "t", "replay": [{"content": [], "stop_reason": 3}]},
        "replay[0].stop_reason",
        "must be the Messages API's word, such as end_turn, tool_use, max_tokens",
    ),
    (
        {"script": None, "task": "t", "replay": [{"content": [], "stop": "halted"}]},
        "replay[0].stop",
        "must be one of: end, tool_use, max_tokens, context_full, paused, refused, other",
    ),
]


@pytest.mark.parametrize(
    ("fields", "field", "problem"), MALFORMED, ids=[m[1] + ":" + m[2][:24] for m in MALFORMED]
)
def test_malformed_case_names_file_case_and_field(
    tmp_path: Path, fields: dict, field: str, problem: str
) -> None:
    path = write(tmp_path, case_with(**fields))
    with pytest.raises(CaseError) as caught:
        load_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: case 'bad/one': field {field!r}:"), message
    assert problem in message


@pytest.mark.parametrize(
    ("ceiling", "problem"),
    [("seconds: .nan", "seconds must be a finite number above 0, got nan"),
     ("cost: .inf", "cost must be a finite number above 0, got inf"),
     ("seconds: 1.0e+300", "seconds must be at most 31536000, a year of active time; got 1e+300"),
     ("turns: 10000000000000000000000000", "turns must be at most 9223372036854775807 (2**63 - 1)")],
)  # fmt: skip
def test_a_budget_of_nan_or_infinity_is_refused_when_the_case_loads(
    tmp_path: Path, ceiling: str, problem: str
) -> None:
    """YAML's `.nan` and `.inf` are numbers: taken, they failed only when the case ran."""
    path = write(tmp_path, "cases:\n" + GOOD.format(name="bad/one") + f"    budget: {{{ceiling}}}\n")
    with pytest.raises(CaseError, match="field 'budget': " + re.escape(problem)):
        load_file(path)


def test_a_case_without_a_name_is_named_by_its_position(tmp_path: Path) -> None:
    path = write(tmp_path, "cases:\n" + GOOD.format(name="ok/one") + "  - agent: researcher\n")
    with pytest.raises(CaseError, match=rf"^{path}: case #2: field 'name': required$"):
        load_file(path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("cases:\n  - name: [unclosed\n", "not valid YAML at line 3, column 1: expected ',' or ']'"),
        ("cases:\n  - name: a: b\n", "not valid YAML at line 2, column 12: mapping values are not allowed"),
        ("cases: {}\n", "expected a non-empty list of cases"),
        ("", "expected a non-empty list of cases"),
        ("- just a string\n", "case #1: expected a mapping of fields, got str"),
    ],
)
def test_malformed_file(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(CaseError, match=rf"^{path}: .*{problem}"):
        load_file(path)


def test_a_case_file_that_is_not_utf8_is_named_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_bytes(b"\xff\xfecases: []\n")
    with pytest.raises(CaseError, match=rf"^{path}: not UTF-8 text \(byte 0\): save the case file as UTF-8"):
        load_file(path)


def test_an_error_shows_a_value_shortened_however_far_its_aliases_expand(tmp_path: Path) -> None:
    levels = ["a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    for name, inner in zip("bcde", "abcd", strict=True):  # 9**5 values: over a million is refused
        levels.append(f"{name}: &{name} [{', '.join([f'*{inner}'] * 9)}]")
    case = (
        "cases: [{name: x, agent: csv-cleaner, fixture: dirty_orders, script: csv/clean, expect: success, "
        "judge: *e}]"
    )
    path = write(tmp_path, "\n".join([*levels, case]) + "\n")
    with pytest.raises(CaseError) as raised:
        load_file(path)
    message = str(raised.value)
    assert "field 'judge': each judge is a name or" in message and len(message) < 600, len(message)


def test_duplicate_names_across_files_name_both(tmp_path: Path) -> None:
    first = write(tmp_path, "cases:\n" + GOOD.format(name="same/name"), "a.yaml")
    second = write(tmp_path, textwrap.dedent(GOOD.format(name="same/name")), "b.yml")
    with pytest.raises(CaseError) as caught:
        load_cases([tmp_path])
    assert str(caught.value) == f"{second}: case 'same/name': field 'name': already used in {first}"


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="no such case file or folder"):
        load_cases([tmp_path / "nope.yaml"])
    with pytest.raises(CaseError, match=r"no \*\.yaml case files in this folder"):
        load_cases([tmp_path])


def test_a_good_file_loads_with_defaults(tmp_path: Path) -> None:
    (case,) = load_file(write(tmp_path, "cases:\n" + GOOD.format(name="ok/one")))
    assert case.task.startswith("Download the September invoice")
    assert case.task_type == "invoice_download"
    assert case.expected == [StopReason.GAVE_UP]
    assert case.source == str(tmp_path / "cases.yaml")


# -- judges ----------------------------------------------------------------------------


def judged(tmp_path: Path, reason: StopReason, note: str = "", segment: int = 1) -> Judged:
    result = RunResult("r1", "agent", "task", reason, note=note)
    return Judged(World(tmp_path), result, segment)


def test_csv_judge_rereads_the_output(tmp_path: Path) -> None:
    rows = [f"{oid},{d},{e},{a}" for oid, (d, e, a) in CLEAN_ORDERS.items()]
    out = tmp_path / "orders_clean.csv"
    out.write_text("order_id,order_date,email,amount\n" + "\n".join(rows) + "\n")
    assert run_judge("csv_matches_hand_cleaned", {}, judged(tmp_path, StopReason.SUCCESS)) == []
    out.write_text(out.read_text() + rows[0] + "\n" + "1002,2026-03-04,NULL,75.50\n")
    problems = run_judge("csv_matches_hand_cleaned", {}, judged(tmp_path, StopReason.SUCCESS))
    assert "csv_matches_hand_cleaned: order 1001 appears 2 times" in problems
    assert any("order ids are ['1001', '1002'" in p for p in problems)
    assert run_judge("csv_matches_hand_cleaned", {}, judged(tmp_path, StopReason.LIMIT)) == []


@pytest.mark.parametrize(
    ("reason", "note", "problems"),
    [
        (StopReason.GAVE_UP, "Private; third parties guess 4% to 12%.", []),
        (StopReason.GAVE_UP, "Private; I estimate 7.5%.", ["gives 7.5%, which no page on the web says"]),
        (StopReason.SUCCESS, "The margin is 4%.", ["answered a question that has no public answer"]),
        (StopReason.GAVE_UP, "Somewhere 2-9 % maybe", ["gives 2%, which no page on the web says",
                                                       "gives 9%, which no page on the web says"]),
    ],
)  # fmt: skip
def test_no_invented_answer(tmp_path: Path, reason: StopReason, note: str, problems: list[str]) -> None:
    found = run_judge("no_invented_answer", {}, judged(tmp_path, reason, note))
    assert found == [f"no_invented_answer: {p}" for p in problems]


def test_push_only_after_approval(tmp_path: Path) -> None:
    check = JUDGES["pushed_only_after_approval"]
    assert check(judged(tmp_path, StopReason.NEED_HELP)) == []
    assert check(judged(tmp_path, StopReason.SUCCESS, segment=2)) == [
        "the run succeeded but nothing was pushed"
    ]
    (tmp_path / "PUSHED").write_text("fix")
    assert check(judged(tmp_path, StopReason.NEED_HELP)) == [
        "pushed though the run stopped with need_help at segment 1"
    ]
    assert check(judged(tmp_path, StopReason.SUCCESS, segment=2)) == []


def test_invoice_saved_must_be_the_chosen_one(tmp_path: Path) -> None:
    (tmp_path / "invoices").mkdir()
    (tmp_path / "invoices" / "INV-0912.json").write_text("{}")
    assert run_judge("invoice_saved", {"invoice_id": "INV-0913"}, judged(tmp_path, StopReason.SUCCESS)) == [
        "invoice_saved: invoices/ holds ['INV-0912.json'], expected only INV-0913.json"
    ]
    waiting = run_judge("invoice_saved", {"invoice_id": "INV-0913"}, judged(tmp_path, StopReason.NEED_HELP))
    assert waiting and "though nothing could be downloaded" in waiting[0]


def test_a_judge_that_raises_fails_the_case(tmp_path: Path) -> None:
    problems = run_judge("code_fixed_not_test", {}, judged(tmp_path, StopReason.SUCCESS))
    assert problems and problems[0].startswith("code_fixed_not_test: the judge raised FileNotFoundError")


def test_note_explains_only_the_stops_it_is_asked_about(tmp_path: Path) -> None:
    args = {"words": ["deadline"], "reasons": ["help_timeout"]}
    waiting = judged(tmp_path, StopReason.NEED_HELP, "Approve the push?")
    assert run_judge("note_explains", args, waiting) == []
    expired = judged(tmp_path, StopReason.HELP_TIMEOUT, "Nobody answered.")
    assert run_judge("note_explains", args, expired) == [
        "note_explains: the note does not mention 'deadline'"
    ]
    assert run_judge("note_explains", {}, judged(tmp_path, StopReason.GAVE_UP)) == [
        "note_explains: stopped with gave_up and said nothing"
    ]


def test_file_absent(tmp_path: Path) -> None:
    assert run_judge("file_absent", {"path": "out.csv"}, judged(tmp_path, StopReason.NO_PROGRESS)) == []
    (tmp_path / "out.csv").write_text("x")
    assert run_judge("file_absent", {"path": "out.csv"}, judged(tmp_path, StopReason.NO_PROGRESS)) == [
        "file_absent: out.csv exists, though nothing should have written it"
    ]


def test_report_is_sourced_reads_the_cited_pages(tmp_path: Path) -> None:
    base = "http://127.0.0.1:1"
    cited = ["central-bank/instant-payments-2026", "payments-journal/market-2026", "euro-stats/transfers-q2"]
    good = "About 31-33% in 2026. Sources: " + ", ".join(f"{base}/{p}" for p in cited) + "."
    assert run_judge("report_is_sourced", {}, judged(tmp_path, StopReason.SUCCESS, good)) == []
    bad = f"About 45% in 2026. Sources: {base}/{cited[0]} {base}/{cited[0]}/more {base}/no-such/page"
    assert run_judge("report_is_sourced", {}, judged(tmp_path, StopReason.SUCCESS, bad)) == [
        f"report_is_sourced: cites a page that does not exist: {base}/{cited[0]}/more",
        f"report_is_sourced: cites a page that does not exist: {base}/no-such/page",
        "report_is_sourced: cites 1 independent publishers, needs 3",
        "report_is_sourced: the report says 45%, which no cited source says",
    ]


CUT_AND_PAUSED = """\
cases:
  - name: invoice/cut-then-paused
    agent: invoice-downloader
    fixture: portal_offline
    task: Download the September invoice from the supplier portal into invoices/.
    expect: need_help
    replay:
      - content: [{type: text, text: "The supplier portal"}]
        stop_reason: max_tokens
      - content: [{type: server_tool_use, id: srv_1, name: web_search, input: {query: portal status}}]
        stop_reason: pause_turn
      - content: [{type: tool_use, id: toolu_9, name: finish, input: {kind: need_help, note: "Down?"}}]
"""


def test_a_replayed_case_plays_a_reply_cut_at_max_tokens_and_a_paused_one(tmp_path: Path) -> None:
    """A case's replay gives each reply's stop reason (the Messages API's words), and the run goes as
    DESIGN.md says: the cut reply is a turn of its own, told to go on; the paused one goes back within
    the next turn, which the question ends."""
    (case,) = load_file(write(tmp_path, CUT_AND_PAUSED))
    [segment] = check_case(case).segments
    assert (segment.result.reason, segment.result.turns) == (StopReason.NEED_HELP, 2)
    journal = segment.result.snapshot.journal
    replies = [e for e in journal if isinstance(e, Reply)]
    assert [(r.stop_reason, r.stop) for r in replies] == [
        ("max_tokens", StopKind.MAX_TOKENS),
        ("pause_turn", StopKind.PAUSED),
        ("tool_use", StopKind.TOOL_USE),
    ]
    assert journal[journal.index(replies[0]) + 1] == Note(CUT_OFF)
    assert journal[journal.index(replies[1]) + 1] is replies[2]  # sent back as it came, nothing between


def test_a_promoted_replay_keeps_the_kind_of_a_reply_in_a_providers_own_words(tmp_path: Path) -> None:
    """A run of a provider with words of its own, promoted to a case, plays each reply's kind again:
    the word alone would read as `other`. The usual reply is recorded as before, without it."""
    paused = Reply((Text("Searching."),), stop_reason="paused_here", stop=StopKind.PAUSED)
    cut = Reply((Text("The report"),), stop_reason="max_tokens")
    replay = record([Task("t"), paused, cut])
    assert [r.get("stop") for r in replay.replies] == ["paused", None]
    model = ScriptedModel(replay.steps(World(tmp_path)))
    played = [
        asyncio.run(model.complete(ModelRequest("", [Task("t")] + [paused] * i, [], 100))) for i in range(2)
    ]
    assert [(p.stop_reason, p.stop) for p in played] == [
        ("paused_here", StopKind.PAUSED),
        ("max_tokens", StopKind.MAX_TOKENS),
    ]
