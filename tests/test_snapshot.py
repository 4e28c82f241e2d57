"""Snapshots: JSON round trips, resuming in a fresh process, and bad snapshots refused clearly."""

from __future__ import annotations

import dataclasses
import enum
import json
import subprocess
import sys
import typing
import uuid
from pathlib import Path

import pytest
import resume_worker
import v1_agents

from agent import Agent, PendingAction, Snapshot, SnapshotError, Spent, StopReason
from agent.journal import (
    Answer,
    Answered,
    Approval,
    Call,
    Denial,
    Entry,
    Extended,
    Note,
    Opaque,
    Reply,
    Result,
    Shrunk,
    Started,
    Stopped,
    Suspended,
    Task,
    Text,
)
from agent.models.scripted import ScriptedModel, finish
from agent.result import LimitKind, Suspension
from agent.snapshot import SNAPSHOT_VERSION, SnapshotKind
from agent.stops import StopKind

WORKER = Path(__file__).with_name("resume_worker.py")
FIXTURES = Path(__file__).with_name("fixtures")


def suspended() -> tuple[Agent, Snapshot]:
    agent = resume_worker.build_agent()
    result = agent.run("Instant payments market share in 2026", run_id="run-fresh-process")
    assert result.reason is StopReason.NEED_HELP
    return agent, result.snapshot


def test_snapshot_round_trips_through_json():
    _, snap = suspended()
    text = snap.to_json()
    again = Snapshot.from_json(text)
    assert again == snap
    assert again.to_json() == text
    assert isinstance(again.usage, Spent)
    assert isinstance(again.journal[0], Task) and isinstance(again.journal[-1], Suspended)
    assert isinstance(again.suspension, Suspension)
    assert again.kind is SnapshotKind.SUSPENDED
    assert again.reason is StopReason.NEED_HELP
    assert json.loads(text)["version"] == SNAPSHOT_VERSION


def test_a_pending_action_round_trips():
    pending = PendingAction("toolu_1", "pay", {"amount": 5})
    snap = Snapshot(
        run_id="r",
        agent="a",
        task_type="default",
        kind=SnapshotKind.SUSPENDED,
        segment=1,
        journal=[
            Task("t"),
            Reply(
                (Text("paying"), Call("toolu_1", "pay", {"amount": 5}), Opaque({"type": "thinking", "x": 1}))
            ),
            Suspended(Suspension("Approve?", 200.0, 100.0, pending, "toolu_1")),
        ],
        usage=Spent(turns=1),
    )
    again = Snapshot.from_json(snap.to_json())
    assert again == snap
    assert again.suspension is not None and again.suspension.pending == pending


def test_every_entry_type_round_trips():
    journal = [
        Task("t"),
        Reply((Text("x"),), input_tokens=3, output_tokens=4, cache_read_tokens=5, cache_write_tokens=6),
        Note("Use a tool or call finish."),
        Reply(
            (Call("c1", "pay", {"a": [1, {"b": None}]}),), stop_reason="tool_use", model="m", response_id="r"
        ),
        Suspended(Suspension("Approve?", 2.0, 1.0, PendingAction("c1", "pay", {"a": 1}), "c1")),
        Answered(Approval(), 1.5),
        Started("c1"),
        Result("c1", "paid \x00 with a NUL", is_error=False, ran="pay"),
        Answered(Denial("no"), 1.6, "policy"),
        Answered(Answer("EU"), 1.7),
        Shrunk(3, "what the first turns did"),
        Extended(turns=5, seconds=60.0, tokens=1000, cost_usd=0.5, at=1.8),
        Stopped(StopReason.LIMIT, LimitKind.CONTEXT, "full"),
    ]
    assert {type(e) for e in journal} == set(typing.get_args(Entry))  # a new entry type is added here
    snap = Snapshot("r", "a", "default", SnapshotKind.CANCELLED, 2, journal, Spent(turns=2))
    assert Snapshot.from_json(snap.to_json()) == snap


def test_fields_at_their_defaults_are_left_out_and_read_back_the_same():
    """A store keeps thousands of heads and journals: zeros, empties and nulls are not written."""
    journal = [
        Task("t"),
        Reply((Text("x"),)),
        Result("c1", "ok"),
        Suspended(Suspension("Which?", 2.0, 1.0)),
        Stopped(StopReason.SUCCESS),
    ]
    snap = Snapshot("r", "a", "default", SnapshotKind.FINISHED, 1, journal, Spent())
    data = json.loads(snap.to_json())
    assert data["usage"] == {} and not {"state", "verifier_failures", "trace_id", "span_id"} & set(data)
    assert data["journal"][1:] == [
        {"type": "reply", "parts": [{"type": "text", "text": "x"}]},
        {"type": "result", "call_id": "c1", "text": "ok"},
        {"type": "suspended", "suspension": {"question": "Which?", "deadline": 2.0, "suspended_at": 1.0}},
        {"type": "stopped", "reason": "success"},
    ]
    assert Snapshot.from_json(snap.to_json()) == snap
    spent = Snapshot("r", "a", "default", SnapshotKind.FINISHED, 1, journal, Spent(turns=1, cost_usd=0.0))
    assert json.loads(spent.to_json())["usage"] == {"turns": 1}


@pytest.mark.slow
def test_a_suspended_run_resumes_in_a_fresh_process(tmp_path):
    _, snap = suspended()
    first_active = snap.usage.active_seconds
    data = json.loads(snap.to_json())
    data["journal"][-1]["suspension"]["suspended_at"] -= 600  # the person took ten minutes to answer
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data))

    done = subprocess.run(
        [sys.executable, str(WORKER), str(path), "EU"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)

    assert result["reason"] == "success"
    assert result["verified"] is True
    assert result["run_id"] == "run-fresh-process"
    assert result["turns"] == 3  # two before the question, one after
    assert "Instant payments share in EU" in result["output"]  # the answer reached the model
    assert result["waiting_seconds"] >= 600
    assert first_active <= result["active_seconds"] < 600  # the wait is not active time
    assert result["input_tokens"] > snap.usage.input_tokens  # usage carried over and grew


def test_a_cancelled_run_resumes_from_json(make_agent):
    import threading

    cancel = threading.Event()
    cancel.set()
    agent = make_agent([finish("done", "ok")])
    first = agent.run("task", cancel=cancel)
    again = Snapshot.from_json(first.snapshot.to_json())
    result = make_agent([finish("done", "ok")]).resume(again)
    assert result.reason is StopReason.SUCCESS
    assert result.run_id == first.run_id


# -- bad snapshots -------------------------------------------------------------------------


def good() -> dict:
    _, snap = suspended()
    return json.loads(snap.to_json())


def without(key: str) -> str:
    data = good()
    del data[key]
    return json.dumps(data)


def with_field(key: str, value: object) -> str:
    return json.dumps({**good(), key: value})


@pytest.mark.parametrize(
    ("make_text", "message"),
    [
        (lambda: "not json at all", "snapshot is not JSON"),
        (lambda: "", "snapshot is not JSON"),
        (lambda: '{"state": ' + "[" * 100_000 + "]" * 100_000 + "}", "snapshot is not JSON"),  # too deep
        (lambda: '{"segment": ' + "9" * 5000 + "}", "snapshot is not JSON"),  # past int()'s digit limit
        (lambda: b'{"run_id": "\xff"}', "snapshot is not JSON"),
        (lambda: "[1, 2]", "snapshot must be a JSON object"),
        (lambda: '"a string"', "snapshot must be a JSON object"),
        (
            lambda: with_field("version", 99),
            "snapshot version 99 is not supported; this Endstate reads versions 1, 2",
        ),
        (lambda: without("version"), "snapshot version None is not supported"),
        (lambda: without("run_id"), "snapshot is missing the field 'run_id'"),
        (lambda: without("usage"), "snapshot is missing the field 'usage'"),
        (lambda: without("kind"), "snapshot is missing the field 'kind'"),
        (lambda: with_field("kind", "sleeping"), "'kind' must be one of checkpoint, suspended, cancelled"),
        (lambda: with_field("kind", "success"), "'kind' must be one of checkpoint, suspended, cancelled"),
        (lambda: with_field("usage", {"turns": 1, "dollars": 3}), "'usage' must be an object of turns"),
        (lambda: with_field("usage", {"turns": -1}), "'usage.turns' must be a number >= 0"),
        (lambda: with_field("usage", {"turns": "1"}), "'turns' must be int"),
        (lambda: with_field("surprise", 1), r"unknown fields \['surprise'\]"),
        (
            lambda: with_field("progress", {}),
            r"unknown fields \['progress'\]",
        ),  # rebuilt from the journal now
        (lambda: with_field("segment", "2"), "'segment' must be int"),
        (lambda: with_field("segment", 2**63), "'segment' must be a count from 0 to 2\\*\\*63 - 1"),
        (lambda: with_field("usage", {"turns": 2**64}), "'usage.turns' must be a count from 0 to 2"),
        (
            lambda: with_field("journal", [{"type": "reply", "parts": [], "input_tokens": 2**63}]),
            r"'input_tokens' must be a count from 0 to 2",
        ),
        (lambda: with_field("segment", True), "'segment' must be int"),
        (lambda: with_field("state", []), "'state' must be dict"),
        (lambda: with_field("journal", "x"), "'journal' must be list"),
        (lambda: with_field("journal", [1]), r"'journal\[0\]' must be an object"),
        (lambda: with_field("journal", [{"type": "nap"}]), r"'journal\[0\].type' must be one of task"),
        (
            lambda: with_field("journal", [{"type": "task", "text": 5}]),
            r"journal\[0\] \(task\).*'text' must be str",
        ),
        (
            lambda: with_field(
                "journal", [{"type": "reply", "parts": [{"type": "call", "id": "1", "name": "x"}]}]
            ),
            "missing the field 'arguments'",
        ),
        (
            lambda: with_field("journal", [{"type": "suspended", "suspension": "tomorrow"}]),
            "'suspension' must be dict",
        ),
        (lambda: with_field("verifier_failures", [1]), "'verifier_failures' must be a list of strings"),
    ],
)
def test_bad_snapshots_give_a_clear_snapshot_error(make_text, message):
    text = make_text()
    with pytest.raises(SnapshotError, match=message):
        Snapshot.from_json(text)


@pytest.mark.parametrize(
    ("field", "value"),
    [("progress", []), ("segment", "1"), ("state", []), ("messages", {}), ("open_results", 3), ("reason", 7)],
)
def test_a_version_1_snapshot_with_wrong_field_types_is_refused_clearly(field, value):
    data = json.loads(V1["v1-question"])
    data[field] = value
    with pytest.raises(SnapshotError):
        Snapshot.from_json(json.dumps(data))


def test_a_snapshot_of_another_agent_is_refused():
    _, snap = suspended()
    other = Agent("billing", ScriptedModel([finish("done", "x")]))
    with pytest.raises(SnapshotError, match="belongs to agent 'research', not 'billing'"):
        other.resume(snap, "EU")


# -- version 1: snapshots written before the journal -----------------------------------------

V1 = {
    run_id: json.dumps(data)
    for run_id, data in json.loads((FIXTURES / "v1_snapshots.json").read_text()).items()
}


def test_a_version_1_question_is_upgraded_and_answered():
    snap = Snapshot.from_json(V1["v1-question"])
    assert snap.version == SNAPSHOT_VERSION and snap.kind is SnapshotKind.SUSPENDED
    assert snap.suspension is not None and snap.suspension.question == "Which region: EU or US?"
    assert snap.task == "Market share" and snap.usage.turns == 2
    agent = dataclasses.replace(v1_agents.question(), clock=v1_agents.AsWritten())  # before the deadline
    result = agent.resume(snap, Answer("EU"))
    assert result.reason is StopReason.SUCCESS and result.output == "EU share: 40%"
    assert result.turns == 3
    assert agent.model.requests[-1].messages[-1]["content"][0]["content"] == "Answer from a person: EU"


def test_a_version_1_approval_keeps_the_result_that_landed_and_runs_the_approved_call_once():
    snap = Snapshot.from_json(V1["v1-approval"])
    assert snap.suspension is not None and snap.suspension.pending is not None
    assert snap.suspension.pending.name == "send_invoice"
    v1_agents.COUNTS.clear()
    agent = dataclasses.replace(v1_agents.approval(), clock=v1_agents.AsWritten())
    result = agent.resume(snap, approved=True)
    assert result.reason is StopReason.SUCCESS
    assert v1_agents.COUNTS == {"send_invoice": 1}  # the lookup that landed before is not run again
    lookup, invoice = agent.model.requests[-1].messages[-1]["content"]
    assert (lookup["content"], invoice["content"]) == ("ACME: net 30", "invoice of 120.00 sent to ACME")


def test_a_version_1_checkpoint_mid_turn_runs_only_the_calls_without_a_result():
    snap = Snapshot.from_json(V1["v1-crashed"])
    assert snap.suspension is None
    v1_agents.COUNTS.clear()
    result = v1_agents.ledger().resume(snap)
    assert result.reason is StopReason.SUCCESS
    assert v1_agents.COUNTS == {"lookup": 2}  # BETA, then GAMMA: ACME's result was recorded


def test_a_version_1_cancelled_run_resumes():
    snap = Snapshot.from_json(V1["v1-cancelled"])
    assert snap.kind is SnapshotKind.CANCELLED
    assert v1_agents.ledger().resume(snap).reason is StopReason.SUCCESS


def test_an_upgraded_snapshot_is_written_as_version_2():
    snap = Snapshot.from_json(V1["v1-approval"])
    again = Snapshot.from_json(snap.to_json())
    assert json.loads(snap.to_json())["version"] == 2
    assert again == snap


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda call: call.pop("id"), r"messages\[1\].*tool_use.*'id'"),
        (lambda call: call.pop("name"), r"messages\[1\].*tool_use.*'name'"),
        (lambda call: call.update(id=7), r"messages\[1\].*tool_use.*'id'"),
        (lambda call: call.update(input="s"), r"messages\[1\].*tool_use.*'input'"),
        (lambda call: call.update(input=[1]), r"messages\[1\].*tool_use.*'input'"),
    ],
)
def test_a_version_1_tool_call_of_the_wrong_shape_is_refused_clearly(change, message):
    data = json.loads(V1["v1-approval"])
    change(data["messages"][1]["content"][0])
    with pytest.raises(SnapshotError, match=message):
        Snapshot.from_json(json.dumps(data))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "result", "call_id": "c1", "text": "ok", "is_error": 1}, "'is_error' must be bool"),
        ({"type": "shrunk", "upto": True}, "'upto' must be int"),
        ({"type": "shrunk", "upto": 2.0}, "'upto' must be int"),
        ({"type": "task", "text": None}, "'text' must be str"),
    ],
)
def test_an_entry_field_of_a_near_type_is_refused(entry: dict[str, object], message: str) -> None:
    """A bool is not a count, a float not an index, 1 not True: what a hand-edited row may hold."""
    with pytest.raises(SnapshotError, match=message):
        Snapshot.from_parts(suspended()[1].head(), [{"type": "task", "text": "t"}, entry])


def test_an_entry_field_that_is_a_float_reads_an_int_as_a_float() -> None:
    extended = {"type": "extended", "turns": 1, "seconds": 5, "tokens": 0, "cost_usd": 1, "at": 7}
    snap = Snapshot.from_parts(suspended()[1].head(), [{"type": "task", "text": "t"}, extended])
    entry = snap.journal[1]
    assert (entry.seconds, entry.cost_usd, entry.at) == (5.0, 1.0, 7.0)
    assert all(type(v) is float for v in (entry.seconds, entry.cost_usd, entry.at))


CITED = Text(
    "The West leads.", {"citations": [{"type": "char_location", "document_title": None, "cited_text": "x"}]}
)
BY_CODE = Call(
    "toolu_P", "lookup", {"r": "w"}, {"caller": {"type": "code_execution_20260120", "tool_id": "s"}}
)
CONTAINER = {"container": {"id": "container_1", "expires_at": "2026-12-01T18:33:00Z"}}


def test_provider_data_of_replies_and_parts_round_trips_and_is_written_only_when_there_is_some() -> None:
    journal: list[Entry] = [Task("t"), Reply((CITED, BY_CODE, Text("plain")), provider_data=CONTAINER)]
    snap = Snapshot("r", "a", "default", SnapshotKind.FINISHED, 1, journal, Spent())
    again = Snapshot.from_json(snap.to_json())
    assert again == snap
    reply = again.journal[1]
    assert isinstance(reply, Reply) and reply.provider_data == CONTAINER
    assert [p.provider_data for p in reply.parts] == [CITED.provider_data, BY_CODE.provider_data, {}]
    written = json.loads(snap.to_json())["journal"][1]
    assert written["provider_data"] == CONTAINER and "provider_data" not in written["parts"][2]


def test_a_journal_written_before_provider_data_was_kept_reads_with_none() -> None:
    entry = {
        "type": "reply",
        "parts": [{"type": "text", "text": "x"}, {"type": "call", "id": "c", "name": "n", "arguments": {}}],
    }
    reply = Snapshot.from_parts(suspended()[1].head(), [{"type": "task", "text": "t"}, entry]).journal[1]
    assert isinstance(reply, Reply) and reply.provider_data == {}
    assert all(p.provider_data == {} for p in reply.parts if isinstance(p, Text | Call))


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "reply", "parts": [], "provider_data": "container_1"},
        {"type": "reply", "parts": [{"type": "text", "text": "x", "provider_data": ["citations"]}]},
    ],
)
def test_provider_data_that_is_no_object_is_refused(entry: dict[str, object]) -> None:
    with pytest.raises(SnapshotError, match="'provider_data' must be dict"):
        Snapshot.from_parts(suspended()[1].head(), [{"type": "task", "text": "t"}, entry])


def test_a_reply_whose_provider_data_is_not_json_is_not_kept() -> None:
    from agent._codec import unkept

    assert unkept(Reply((CITED, BY_CODE), provider_data=CONTAINER)) is None
    assert "which JSON cannot hold" in str(unkept(Reply((Text("x", {"citations": {1, 2}}),))))
    assert "tool call 'lookup'" in str(unkept(Reply((Call("c", "lookup", {}, {"caller": object()}),))))
    assert "the reply's provider data" in str(unkept(Reply((), provider_data={"container": b"id"})))


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        (Reply((Text("x"), Call("c", "f", {"a": "null", "n": [1, 2.5, True]}))), True),  # "null" in text
        (Reply((Call("c", "f", {"big": 2**70}),)), True),  # JSON, past what orjson writes
        (Reply((Opaque({"type": "thinking"}), Call("c", "f", {}))), True),
        (Reply((Text("x"),), provider_data={}), True),
        (Reply((Call("c", "f", {}), Call("c", "f", {}))), False),  # two calls of one id
        (Reply((Call(1, "f", {}),)), False),  # type: ignore[arg-type]
        (Reply((Call("c", "f", {"x": float("nan")}),)), True),  # orjson writes null; the store, NaN
        (Reply((Call("c", "f", {"x": {1, 2}}),)), False),
        (Reply((Text(5),)), False),  # type: ignore[arg-type]
        (Reply((Text("x"),), stop_reason=None), False),  # type: ignore[arg-type]
    ],
)
def test_the_quick_check_of_a_usual_reply_says_what_the_full_check_says(reply: Reply, kept: bool) -> None:
    """`unkept` passes the usual reply in one quick pass and checks any other in full: replies that look
    usual but are not (a null, a big integer, a shared id, names that are no text) get the full
    check's verdict, whichever path they take."""
    from agent._codec import _reply_problem, unkept

    assert unkept(reply) == _reply_problem(reply)
    assert (unkept(reply) is None) is kept


class Color(enum.Enum):
    RED = "red"


@pytest.mark.parametrize("value", [Color.RED, uuid.UUID(int=7)], ids=["enum", "uuid"])
def test_a_reply_that_no_writer_could_keep_is_refused_whatever_its_text_says(value: object) -> None:
    """orjson writes an enum or a UUID, so a reply with one in its arguments was kept; but a
    snapshot's `to_json` (the standard library's encoder) refuses it, and so does the store when
    anything in the entry is written as null (a text that says "null"): a run that kept it failed
    later, at a checkpoint or a suspension. Both paths of `unkept` now refuse it, saying what it is."""
    from agent._codec import _reply_problem, unkept

    for reply in (
        Reply((Text("the field is null"), Call("c", "f", {"p": value}))),
        Reply((Call("c", "f", {"p": value}),)),
    ):
        assert unkept(reply) == _reply_problem(reply)
        assert type(value).__name__ in str(unkept(reply))
    kept = Reply((Text("the field is null"), Call("c", "f", {"p": "red", "t": (1, 2)})))
    assert unkept(kept) is None  # a tuple, read back as a list, is JSON all the same
    snap = Snapshot("r", "a", "default", SnapshotKind.FINISHED, 1, [Task("t"), kept], Spent())
    assert json.loads(snap.to_json())["journal"][1]["parts"][1]["arguments"] == {"p": "red", "t": [1, 2]}


@pytest.mark.parametrize("value", [Color.RED, uuid.UUID(int=7)], ids=["enum", "uuid"])
def test_a_state_that_to_json_cannot_write_is_not_called_writable(value: object) -> None:
    """The same for the run's state: orjson wrote it, so it passed as writable, and a suspended run's
    `to_json` (Temporal's and the integrations' way of handing a snapshot on) raised TypeError."""
    from agent._codec import unwritable

    assert type(value).__name__ in str(unwritable({"colour": value}))
    assert unwritable({"colour": "red", "pair": (1, 2)}) is None
    with pytest.raises(TypeError):  # what the check now says beforehand
        Snapshot("r", "a", "default", SnapshotKind.FINISHED, 1, [Task("t")], Spent(), {"c": value}).to_json()


# -- a reply's kind (`Reply.stop`) ----------------------------------------------------------------


def test_a_replys_kind_is_written_only_when_its_stop_reason_does_not_give_it() -> None:
    """The usual reply (the Messages API's words) is written as it always was, byte for byte; a reply
    in a provider's own words keeps its kind, and both read back the same."""
    own_words = Reply((Text("Searching."),), stop_reason="paused_here", stop=StopKind.PAUSED)
    journal: list[Entry] = [
        Task("t"),
        Reply((Text("The report begins"),), stop_reason="max_tokens"),
        own_words,
    ]
    snap = Snapshot("r", "a", "default", SnapshotKind.FINISHED, 1, journal, Spent())
    written = json.loads(snap.to_json())["journal"]
    assert written[1] == {"type": "reply", "stop_reason": "max_tokens", "parts": [PART]}
    assert written[2] == {
        "type": "reply",
        "stop_reason": "paused_here",
        "parts": [SEARCHING],
        "stop": "paused",
    }
    again = Snapshot.from_json(snap.to_json())
    assert again == snap
    assert [e.stop for e in again.journal if isinstance(e, Reply)] == [StopKind.MAX_TOKENS, StopKind.PAUSED]


PART = {"type": "text", "text": "The report begins"}
SEARCHING = {"type": "text", "text": "Searching."}


@pytest.mark.parametrize(
    ("word", "kind"),
    [
        (None, StopKind.END),  # a reply written at its default stop reason
        ("end_turn", StopKind.END),
        ("tool_use", StopKind.TOOL_USE),
        ("max_tokens", StopKind.MAX_TOKENS),
        ("model_context_window_exceeded", StopKind.CONTEXT_FULL),
        ("pause_turn", StopKind.PAUSED),
        ("compaction", StopKind.PAUSED),
        ("refusal", StopKind.REFUSED),
        ("tool_calls", StopKind.OTHER),  # a provider's own word, written before entries kept the kind
    ],
)
def test_a_reply_written_before_entries_kept_their_kind_reads_the_kind_of_its_stop_reason(
    word: str | None, kind: StopKind
) -> None:
    entry = {"type": "reply", "parts": [PART]} | ({"stop_reason": word} if word else {})
    reply = Snapshot.from_parts(suspended()[1].head(), [{"type": "task", "text": "t"}, entry]).journal[1]
    assert isinstance(reply, Reply) and reply.stop is kind


def test_a_kind_of_a_later_release_reads_as_the_kind_of_its_stop_reason() -> None:
    """A rolling deploy: a newer worker may write a kind this release does not know."""
    entry = {"type": "reply", "parts": [], "stop_reason": "pause_turn", "stop": "a_kind_of_tomorrow"}
    reply = Snapshot.from_parts(suspended()[1].head(), [{"type": "task", "text": "t"}, entry]).journal[1]
    assert isinstance(reply, Reply) and reply.stop is StopKind.PAUSED


def test_a_kind_that_is_no_text_is_refused() -> None:
    entry = {"type": "reply", "parts": [], "stop": 3}
    with pytest.raises(
        SnapshotError, match=r"journal\[1\] \(reply\): snapshot field 'stop' must be str, not 3"
    ):
        Snapshot.from_parts(suspended()[1].head(), [{"type": "task", "text": "t"}, entry])
