"""fuzz: a real SQLite store whose rows (a run's row, its journal entries, its state) are changed at
random, as a hand edit, a bad migration or a disk error leaves them, then read back by every face.

Invariants: listings (`GET /runs`, `/pending`, the inbox, the review queue, `endstate runs` and
`pending`) never crash and still show the runs left alone; a damaged run read alone is a named error
(an EndstateError, a 4xx), never a 500 or a traceback; answering or approving it is taken or refused
by name, and a run taken ends in a named stop.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from test_service_defences import AUTH, LOCAL, TOKEN

from agent.cli.main import main
from agent.durable import review
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.errors import EndstateError
from agent.examples.scenarios import example_catalog
from agent.result import RunResult
from agent.service.app import Service, create_app
from agent.service.auth import COOKIE, Token
from agent.stops import StopReason

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")),  # more while hunting
    deadline=None,
    database=None,
    derandomize=os.environ.get("FUZZ_RANDOM") is None,  # FUZZ_RANDOM=1: new examples each run, while hunting
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
RUNS = {
    "question": ("invoice-downloader", "invoice/which-one"),
    "approval": ("ci-fixer", "ci/approved-push"),
    "finished": ("csv-cleaner", "csv/clean"),
}
COLUMNS = [
    "agent", "task", "task_type", "status", "state", "started_at", "updated_at", "ended_at", "stop_reason",
    "stop_limit", "turns", "input_tokens", "output_tokens", "cost_usd", "active_seconds", "waiting_seconds",
    "trace_id",
]  # fmt: skip

OTHER_COLUMNS = {
    "label": ["run_id", "agent", "task_type", "label", "note", "labelled_at", "labelled_by"],
    "audit": ["run_id", "agent", "task_type", "due_at", "outcome", "note", "checked_at"],
}
OTHER_TABLES = {"label": "endstate_reviews", "audit": "endstate_audits"}

# -- what is generated -----------------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.sampled_from(["waiting", "finished", "running", "cancelled", "success", "need_help", "limit", ""])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
CELLS = (  # what a column may hold in SQLite, whatever its declared type
    SCALARS
    | st.binary(max_size=20)
    | JSON.map(json.dumps)
    | st.sampled_from(["{", '{"v": 1', "[]", "null", '"x"', "\udcff", "a\udcf7+[", "NaN", '{"a": NaN}'])
)


@st.composite
def edits(draw: st.DrawFn, names: list[str]) -> tuple[str, str, Any]:
    """(run, where, how): a cell of the run's row, one of its journal entries, or a value in its JSON."""
    run = draw(st.sampled_from(names))
    kind = draw(
        st.sampled_from(["cell", "entry", "entry_json", "state_json", "drop_entry", "label", "audit"])
    )
    if kind == "cell":
        return run, f"cell:{draw(st.sampled_from(COLUMNS))}", draw(CELLS)
    if kind in ("label", "audit"):  # the finished run's label or audit row
        return "finished", f"{kind}:{draw(st.sampled_from(OTHER_COLUMNS[kind]))}", draw(CELLS)
    new = draw(CELLS) if kind == "entry" else draw(JSON)
    return run, kind, (draw(st.integers(0, 40)), draw(st.lists(st.integers(0, 8), max_size=4)), new)


def changed(value: Any, path: list[int], new: Any) -> Any:
    """`value` (decoded JSON) with the part `path` leads to replaced, or a key of it removed."""
    if not path or not isinstance(value, dict | list) or not value:
        return new
    keys = sorted(value) if isinstance(value, dict) else list(range(len(value)))
    key = keys[path[0] % len(keys)]
    if len(path) == 1 and isinstance(value, dict) and path[0] % 2:
        return {k: v for k, v in value.items() if k != key}
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[key] = changed(value[key], path[1:], new)  # type: ignore[index]
    return copy


def stored(value: Any) -> Any:
    """`value` as SQLite takes it: text with a lone surrogate as the bytes it stands for (no UTF-8)."""
    if isinstance(value, str) and any("\ud800" <= c <= "\udfff" for c in value):
        return value.encode("utf-8", "surrogateescape")
    return value


def apply(db_path: Path, run_id: str, where: str, how: Any) -> None:
    """Change the stored run as `where` and `how` say."""
    with sqlite3.connect(db_path) as db:
        if (kind := where.partition(":")[0]) in OTHER_TABLES:
            cell = "CAST(? AS TEXT)" if isinstance(how, str) else "?"
            db.execute(f"UPDATE {OTHER_TABLES[kind]} SET {where.partition(':')[2]} = {cell}", (stored(how),))
            return
        if where.startswith("cell:"):
            cell = "CAST(? AS TEXT)" if isinstance(how, str) else "?"  # text that is no UTF-8 stays text
            update = f"UPDATE endstate_runs SET {where[5:]} = {cell} WHERE run_id = ?"
            db.execute(update, (stored(how), run_id))
            return
        seq_pick, path, new = how
        if where == "state_json":
            (state,) = db.execute("SELECT state FROM endstate_runs WHERE run_id = ?", (run_id,)).fetchone()
            value = json.dumps(changed(json.loads(state), path, new))
            db.execute("UPDATE endstate_runs SET state = ? WHERE run_id = ?", (value, run_id))
            return
        seqs = [
            s
            for (s,) in db.execute(
                "SELECT seq FROM endstate_entries WHERE run_id = ? ORDER BY seq", (run_id,)
            )
        ]
        seq = seqs[seq_pick % len(seqs)]
        if where == "drop_entry":
            db.execute("DELETE FROM endstate_entries WHERE run_id = ? AND seq = ?", (run_id, seq))
            return
        (entry,) = db.execute(
            "SELECT entry FROM endstate_entries WHERE run_id = ? AND seq = ?", (run_id, seq)
        ).fetchone()
        value = json.dumps(changed(json.loads(entry), path, new)) if where == "entry_json" else new
        update = "UPDATE endstate_entries SET entry = CAST(? AS TEXT) WHERE run_id = ? AND seq = ?"
        db.execute(update, (stored(value), run_id, seq))


# -- the store -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A store with a question, an approval and a finished run (labelled, audited); their ids."""
    folder = tmp_path_factory.mktemp("template")
    store = open_store(str(folder / "runs.db"))
    runner = Runner(store, example_catalog(folder / "worlds"))
    ids = {}
    for name, (agent, scenario) in RUNS.items():
        ids[name] = asyncio.run(
            runner.start(agent, "Go", state={"scenario": scenario}, run_id=f"run-{name}")
        ).run_id
    review.label(store, ids["finished"], "fine", "looks right", by="ann")
    runner.catalog.close()
    store.close()
    with sqlite3.connect(folder / "runs.db") as db:  # an audit made of it, as `endstate audit` records one
        db.execute(
            "INSERT INTO endstate_audits (run_id, agent, task_type, due_at, outcome, note, checked_at) "
            "VALUES (?, 'csv-cleaner', 'csv_clean', 1.0, 'passed', '', 2.0)",
            (ids["finished"],),
        )
    return folder / "runs.db", ids


class Damaged:
    """A copy of the template store, one of its runs changed, and the faces over it."""

    def __init__(self, template: Path, tmp: Path) -> None:
        self.path = tmp / "runs.db"
        shutil.copy(template, self.path)
        self.url = str(self.path)
        self.worlds = tmp / "worlds"

    def pages(self, ids: list[str]) -> dict[str, Any]:
        """Every listing and page of the service; each response by its path."""
        return self.pages_at([], ids)

    def pages_at(self, more: list[str], ids: list[str] | None = None) -> dict[str, Any]:
        """`pages(ids)`, or with `ids` None only the pages `more` names."""
        store = open_store(self.url)
        runner = Runner(store, example_catalog(self.worlds))
        service = Service(runner, Token(TOKEN), sweep_interval=3600)
        paths = (
            ["/runs", "/pending", "/inbox", "/inbox/review", "/inbox/review/labelled"]
            if ids is not None
            else []
        )
        paths += [p for i in ids or () for p in (f"/runs/{i}", f"/inbox/review/runs/{i}")] + more
        paths += [f"/inbox/review/runs/{i}/case.yaml" for i in ids or ()]
        ids = ids or []
        try:
            with TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False) as api:
                api.cookies.set(COOKIE, Token(TOKEN).cookie_value)
                got = {p: api.get(p) for p in paths}
                for i in ids:  # a reply through each face, with an answer that does not fit too
                    for face, form in (
                        ("/inbox/{}/answer", {"answer": "the first one"}),
                        ("/inbox/{}/approve", {}),
                    ):
                        got[face.format(i)] = api.post(face.format(i), data=form, headers={"Origin": LOCAL})
                    for kind, body in (
                        ("answer", {"answer": "the first one"}),
                        ("approve", {}),
                        ("resume", {}),
                    ):
                        got[f"/runs/{i}/{kind}"] = api.post(f"/runs/{i}/{kind}", json=body, headers=AUTH)
                return got
        finally:
            runner.catalog.close()
            store.close()

    def reply(self, run_id: str, answer: str | None, approved: bool | None) -> str:
        """Answer or approve the run through a runner: taken (its stop) or refused (by name)."""
        store = open_store(self.url)
        runner = Runner(store, example_catalog(self.worlds))
        try:
            job = runner.claim(run_id, answer, approved)
        except EndstateError as exc:
            return f"refused: {type(exc).__name__}"
        else:
            result = asyncio.run(runner.drive(job))
            assert isinstance(result, RunResult) and isinstance(result.reason, StopReason)
            return str(result.reason)
        finally:
            runner.catalog.close()
            store.close()


def no_traceback(text: str) -> None:
    assert "Traceback" not in text and 'File "' not in text, text[:3000]


@FUZZ
@given(data=st.data())
def test_a_run_damaged_at_random_is_named_and_the_others_are_still_shown(
    template: tuple[Path, dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    data: st.DataObject,
) -> None:
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))  # a run whose state lost its workdir works here
    path, ids = template
    damaged = Damaged(path, tmp_path_factory.mktemp("damaged"))
    name, where, how = data.draw(edits(list(ids)))
    try:
        apply(damaged.path, ids[name], where, how)
    except sqlite3.IntegrityError:  # a null in a NOT NULL column: SQLite keeps none
        reject()
    others = [i for n, i in ids.items() if n != name]
    for page, response in damaged.pages(list(ids.values())).items():
        event(f"{page.split('/run-')[0]} {response.status_code}")
        # a 503 is named (a damaged run read alone, its agent that cannot be set up from its state)
        assert response.status_code != 500, (page, response.text[:3000])
        no_traceback(response.text)
        if page == "/runs":  # lists every run (the review queue only samples successes: not checked)
            assert all(i in response.text for i in others), response.text[:3000]
    for argv in (
        ["runs"],
        ["runs", "--json"],
        ["pending"],
        ["review"],
        ["audit", "--list"],
        ["limits", "suggest"],
    ):
        code = cli(damaged.url, argv)
        assert code in (0, 1, 2), (argv, code)
    if name != "finished":
        answer, approved = ("the first one", None) if name == "question" else (None, True)
        event(damaged.reply(ids[name], answer, approved))


def cli(url: str, argv: list[str]) -> int:
    """`endstate ARGV --store URL` in this process: its exit status (an exception fails the test)."""
    try:
        return main([*argv, "--store", url])
    except SystemExit as exit_:
        return int(exit_.code or 0)


# -- the defects the fuzzing found, each as its shrunk example ----------------------------------------


def damaged_alone(
    template: tuple[Path, dict[str, str]], tmp: Path, column: str, sql: str, value: Any
) -> None:
    """With the question's `column` set to `sql` (of `value`): every listing shows the other runs and
    names this one damaged, reading it alone is a named refusal, and answering it is refused by name."""
    path, ids = template
    damaged = Damaged(path, tmp)
    with sqlite3.connect(damaged.path) as db:
        db.execute(f"UPDATE endstate_runs SET {column} = {sql} WHERE run_id = 'run-question'", (value,))
    pages = damaged.pages(list(ids.values()))
    listed, pending = pages["/runs"].json(), pages["/pending"].json()
    assert pages["/inbox"].status_code == 200 and ids["approval"] in pages["/inbox"].text
    if column != "snapshot":  # a listing reads no snapshot: the run is listed (and its page refused)
        assert {r["run_id"] for r in listed["runs"]} == {ids["approval"], ids["finished"]}
        assert listed["damaged"] == pending["damaged"] == [ids["question"]]
    for page in ("/runs/run-question", "/inbox/review/runs/run-question"):
        assert pages[page].status_code == 409, pages[page].text  # no retry mends it: not a 503
        assert f"its {column} column is damaged" in pages[page].text
    for argv in (["runs"], ["runs", "--json"], ["pending"]):
        assert cli(damaged.url, argv) == 0
    assert damaged.reply(ids["question"], "the first one", None) == "refused: DamagedRun"


@pytest.mark.parametrize(
    "column", ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]
)
def test_a_token_count_stored_as_infinity_is_a_damaged_run_not_a_crash(
    template: tuple[Path, dict[str, str]], tmp_path: Path, column: str
) -> None:
    """Before: GET /runs, /pending and the inbox were a 500, `endstate runs` and `pending` a traceback
    (OverflowError), for every run, and answering the run raised out of the runner."""
    damaged_alone(template, tmp_path, column, "?", float("inf"))


@pytest.mark.parametrize("column", ["agent", "question", "trace_id", "summary", "snapshot"])
def test_a_text_column_stored_as_a_blob_is_a_damaged_run_not_a_crash(
    template: tuple[Path, dict[str, str]], tmp_path: Path, column: str
) -> None:
    """Before: bytes where text belongs (`UPDATE ... SET agent = X'f72b5b'`) made GET /runs, /pending or
    the inbox a 500 and `endstate runs --json` or `pending` a traceback, for every run."""
    damaged_alone(template, tmp_path, column, "?", b"\xf7+[")


@pytest.mark.parametrize("column", ["agent", "question", "state", "pending", "turns", "snapshot"])
def test_a_column_holding_text_that_is_no_utf8_is_a_damaged_run_not_a_refused_listing(
    template: tuple[Path, dict[str, str]], tmp_path: Path, column: str
) -> None:
    """Before: SQLite's 'Could not decode to UTF-8 column' failed the whole query: GET /runs, /pending
    and the inbox were a 503 showing no run at all, and `endstate runs` listed none."""
    damaged_alone(template, tmp_path, column, "CAST(? AS TEXT)", b"\xf7+[")


@pytest.mark.parametrize(
    ("column", "sql", "value"),
    [
        ("labelled_at", "?", "soon"),
        ("labelled_at", "CAST(? AS TEXT)", b"\xf7+["),
        ("note", "?", b"\xf7+["),
        ("labelled_by", "CAST(? AS TEXT)", b"\xf7+["),
        ("label", "?", b"\xf7+["),
    ],
)
def test_a_label_stored_with_a_column_of_another_type_is_left_out_not_a_crash(
    template: tuple[Path, dict[str, str]], tmp_path: Path, column: str, sql: str, value: Any
) -> None:
    """Before: the labelled page and the run's review page were a 500, and `endstate limits suggest` a
    traceback (ValueError), for a label whose row a hand edit left with bytes or text in a number."""
    path, ids = template
    damaged = Damaged(path, tmp_path)
    store = open_store(damaged.url)
    review.label(store, ids["finished"], "fine", "looks right", by="ann")
    store.close()
    with sqlite3.connect(damaged.path) as db:
        db.execute(f"UPDATE endstate_reviews SET {column} = {sql}", (value,))
    store = open_store(damaged.url)
    try:
        assert store.reviews() == [] and store.labelled(10) == []  # left out (and logged)
    finally:
        store.close()
    pages = damaged.pages([ids["finished"]])
    for page in ("/inbox/review/labelled", f"/inbox/review/runs/{ids['finished']}"):
        assert pages[page].status_code == 200, pages[page].text[-2000:]
    for argv in (["limits", "suggest"], ["review", "--json"]):
        assert cli(damaged.url, argv) in (0, 1)


def test_a_label_this_release_does_not_know_is_said_on_the_run_s_review_page_not_a_500(
    template: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Before: a label edited by hand (or written by a newer release) made the run's review page and its
    case.yaml a 500 (ValueError: 'soon' is not a valid Label)."""
    path, ids = template
    damaged = Damaged(path, tmp_path)
    store = open_store(damaged.url)
    review.label(store, ids["finished"], "fine", "looks right", by="ann")
    store.close()
    with sqlite3.connect(damaged.path) as db:
        db.execute("UPDATE endstate_reviews SET label = 'soon'")
    run = f"/inbox/review/runs/{ids['finished']}"
    pages = damaged.pages([ids["finished"]])
    assert pages[run].status_code < 500, pages[run].text[-2000:]
    assert "no label this Endstate knows" in pages[run].text
    file = damaged.pages_at([f"{run}/case.yaml"])[f"{run}/case.yaml"]
    assert 400 <= file.status_code < 500 and "no label this Endstate knows" in file.text


@pytest.mark.parametrize(("column", "value"), [("stop_reason", None), ("stop_limit", "soon")])
def test_a_finished_run_left_with_no_stop_reason_is_left_out_of_limits_suggest_not_a_traceback(
    template: tuple[Path, dict[str, str]],
    tmp_path: Path,
    column: str,
    value: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: `endstate limits suggest` over a store with such a run was a traceback (ValueError: None is
    not a valid StopReason), whatever the other runs."""
    path, ids = template
    damaged = Damaged(path, tmp_path)
    with sqlite3.connect(damaged.path) as db:
        db.execute(f"UPDATE endstate_runs SET {column} = ? WHERE run_id = ?", (value, ids["finished"]))
    assert cli(damaged.url, ["limits", "suggest"]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err
