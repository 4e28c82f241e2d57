"""A run on Temporal names its journal's settled prefix by chunk digests (`_wire.CHUNK`,
`_remote.CHUNKED`): a long run's model input stays small, a new worker is sent the chunks it lacks, the
model is sent what it was sent before, and histories made before replay."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from messages_api import MessagesAPI, message, tool_use
from temporal_server import TemporalServer, serving, temporal_fixture
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agent import Agent, Budget, RetryPolicy, RunContext, RunResult, StopReason, tool
from agent.durable.runner import Catalog
from agent.journal import Result
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelRequest
from agent.temporal import _remote
from agent.temporal import _wire as w
from agent.temporal._activities import KeptResults
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun

pytestmark = pytest.mark.slow
temporal = temporal_fixture()

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
BEFORE, AFTER = 70, 70  # look calls before the question, and after the answer: 2, then 4 whole chunks
FIXTURE = Path(__file__).parent / "fixtures" / "temporal_v9_whole_journal_history.json.gz"


@tool
def look(ctx: RunContext, q: str) -> str:
    """Look something up (what it found depends on every call before it: it reads the run's calls)."""
    seen = sum(len(c.result) + len(c.arguments["q"]) for c in ctx.calls)
    return f"{q} after {len(ctx.calls)} calls, {seen} characters: " + "x" * 400  # long: by digest as well


def read_all(ctx: RunContext) -> list[str]:
    """Every look made, each seen whole, in the calls and in the journal (on the worker, from chunks)."""
    results = [e.text for e in ctx.journal if isinstance(e, Result) and e.text.startswith("q")]  # looks'
    if [c.result for c in ctx.calls] != results or len(results) != BEFORE + AFTER:
        return [f"saw {len(ctx.calls)} calls and {len(results)} results"]
    return [] if all(r.endswith("x" * 400) for r in results) else ["a result was cut"]


def catalog(url: str, models: list[AnthropicModel]) -> Catalog:
    """The reader's catalog; each model it makes goes to `models`, for the test to close."""

    def build(state: Any) -> Agent:
        model = AnthropicModel("claude-opus-4-6", api_key="sk-ant-test", base_url=url)
        models.append(model)
        budget = Budget(max_turns=BEFORE + AFTER + 5, max_seconds=600)
        return Agent("reader", model, tools=[look], verifiers=[read_all], budget=budget, retry=FAST)

    found = Catalog()
    found.register("reader", build)
    return found


def replies() -> list[Any]:
    looks = [message(tool_use("look", {"q": f"q{i}"}, id=f"toolu_{i:04d}")) for i in range(BEFORE + AFTER)]
    ask = message(tool_use("finish", {"kind": "need_help", "note": "Go on?"}, id="toolu_ask"))
    done = message(tool_use("finish", {"kind": "done", "note": "Read."}, id="toolu_done"))
    return [*looks[:BEFORE], ask, *looks[BEFORE:], done]


async def run_across_workers(server: TemporalServer) -> tuple[RunResult, Any, list[Any]]:
    """The run's result, history and the model's requests: the first segment on one worker, the one after
    the answer on a new worker (nothing kept) on the same task queue; in one execution (never continued
    as new), so that its whole history can be weighed."""
    queue = f"test-chunks-{id(server)}-{asyncio.get_running_loop().time():.0f}"
    models: list[AnthropicModel] = []
    with MessagesAPI(*replies()) as api:
        try:
            async with serving(server, catalog(api.url, models), queue, continue_after_events=None) as runs:
                asked = await runs.start("reader", "Read everything.")
                assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP, asked
            async with serving(server, catalog(api.url, models), queue, continue_after_events=None) as runs:
                result = await runs.answer(asked.run_id, "Go on.")
                history = await runs.client.get_workflow_handle(asked.run_id).fetch_history()
        finally:
            for model in models:
                await model.aclose()
        return result, history, api.bodies


def chunked_calls(
    history: Any, name: str = w.MODEL_CHUNKED
) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each `name` activity's input and its answer (None: none recorded)."""
    inputs: dict[int, dict[str, Any]] = {}
    answers: dict[int, dict[str, Any]] = {}
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            a = event.activity_task_scheduled_event_attributes
            if a.activity_type.name == name:
                inputs[event.event_id] = json.loads(a.input.payloads[0].data)
        elif event.HasField("activity_task_completed_event_attributes"):
            a = event.activity_task_completed_event_attributes
            if a.scheduled_event_id in inputs:
                answers[a.scheduled_event_id] = json.loads(a.result.payloads[0].data)
    return [(call, answers.get(i)) for i, call in inputs.items()]


def replay_failure(history: WorkflowHistory | Any) -> Exception | None:
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


def test_a_long_run_names_its_prefix_by_chunks_across_a_new_worker_and_the_model_sees_the_same(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    patched = _remote.workflow.patched

    async def both() -> list[tuple[RunResult, Any, list[Any]]]:
        chunked = await run_across_workers(temporal)
        with monkeypatch.context() as before:  # the code before: the whole journal in each input
            gates = (_remote.CHUNKED, _remote.CALLS_CHUNKED, _remote.VERIFY_CHUNKED)
            before.setattr(_remote.workflow, "patched", lambda p: p not in gates and patched(p))
            return [chunked, await run_across_workers(temporal)]

    (result, history, sent), (before, whole, sent_before) = asyncio.run(both())
    assert (result.reason, result.turns) == (StopReason.SUCCESS, BEFORE + AFTER + 2), result.note
    calls = chunked_calls(history)
    last = calls[-1][0]["request"]
    assert len(last["journal"]) < w.CHUNK and 1 <= len(last["prefix"]) <= 3  # the rest by a few digests
    lacked = [answer["missing"] for _, answer in calls if answer and "missing" in answer]
    assert lacked, "the new worker kept no chunk: it must have asked for them"
    assert replay_failure(history) is None
    assert (before.reason, before.turns, before.usage) == (result.reason, result.turns, result.usage)
    assert [b["messages"] for b in sent] == [b["messages"] for b in sent_before]  # the model saw the same
    assert not chunked_calls(whole) and not chunked_calls(whole, w.TOOL_CHUNKED)
    tools = chunked_calls(history, w.TOOL_CHUNKED)
    assert len(tools[-1][0]["calls"]) < w.CHUNK and 1 <= len(tools[-1][0]["calls_prefix"]) <= 3
    assert any(answer and "missing" in answer for _, answer in tools[BEFORE:])  # the new worker asked
    [(check, answer)] = chunked_calls(history, w.VERIFY_CHUNKED)
    assert answer and answer["failures"] == [] and check["prefix"] and check["calls_prefix"]
    assert result.verified
    assert sum(e.ByteSize() for e in history.events) < sum(e.ByteSize() for e in whole.events) / 2


def test_a_history_recorded_before_the_prefix_went_in_chunks_still_replays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run of the code before `CHUNKED` (this file's reader: 35 looks, need_help, answered on a new
    worker, 35 looks, done: 140 entries; `fetch_history().to_json()`) replays; with the gate gone it would
    not."""
    history = WorkflowHistory.from_json("before-chunks", gzip.decompress(FIXTURE.read_bytes()).decode())
    assert replay_failure(history) is None
    patched = _remote.workflow.patched
    monkeypatch.setattr(_remote.workflow, "patched", lambda patch: patch == _remote.CHUNKED or patched(patch))
    assert "Nondeterminism" in str(replay_failure(history))


@pytest.mark.parametrize("gate", [_remote.CALLS_CHUNKED, _remote.VERIFY_CHUNKED])
def test_a_history_with_a_ctx_tool_and_a_check_recorded_before_chunks_still_replays(
    gate: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of an older release whose tool takes `ctx` and whose finish is checked
    (`temporal_v3_finish_first_history.json`: count with the run's calls in the tool's input, then
    `endstate.verify.by-digest`) replays; with either gate taken it would not."""
    recorded = (Path(__file__).parent / "fixtures" / "temporal_v3_finish_first_history.json").read_text()
    history = WorkflowHistory.from_json("ctx-tool", recorded)
    assert replay_failure(history) is None
    patched = _remote.workflow.patched
    monkeypatch.setattr(_remote.workflow, "patched", lambda p: p == gate or patched(p))
    assert "Nondeterminism" in str(replay_failure(history))


def test_a_prefix_never_sent_goes_a_bounded_part_per_input_as_after_a_resume() -> None:
    """A run whose chunks no worker was sent (a resumed run's new execution): each input defines at most
    a quarter payload of them, the rest left for later inputs (or for a worker that asks), so the first
    input of a long run fits in a payload where the whole prefix (1.7 MB) would not."""
    ref = _remote.RunRef("run-1", "reader", "Read.", "default", {})
    journal = [Result(f"c{i}", "y" * 250) for i in range(w.CHUNK * 100)]
    request = ModelRequest("", journal, [], 100)
    inputs = [ref.chunked_request_wire(request, set()) for _ in range(8)]
    sizes = [w.payload_size(i) for i in inputs]
    assert all(size < w.MAX_PAYLOAD_BYTES // 2 for size in sizes)
    assert all(i["prefix"] == inputs[0]["prefix"] and len(i["prefix"]) == 3 for i in inputs)  # 64 + 32 + 4
    defined = [{d for d, node in i["nodes"].items() if "entries" in node} for i in inputs]
    assert 0 < len(defined[0]) < 100 and not set.intersection(*defined[:2])
    assert len(set().union(*defined)) == 100 and not defined[-1]  # each once, all in a few inputs


def test_the_chunk_tree_names_a_prefix_by_a_root_per_bit_and_keeps_the_older_roots() -> None:
    leaves = [f"leaf{i}" for i in range(7)]
    roots, inner = w.chunk_tree(leaves[:4])
    assert len(roots) == 1 and len(inner) == 3  # one tree of four: two pairs and their root
    grown, _ = w.chunk_tree(leaves[:7])
    assert len(grown) == 3 and grown[0] == roots[0] and grown[2] == "leaf6"  # 4 + 2 + 1; the 4's root kept
    assert w.chunk_tree([]) == ([], {})
    assert len(w.chunk_tree([f"l{i}" for i in range(1_000)])[0]) == bin(1_000).count("1")


def test_a_worker_keeps_chunks_with_the_runs_texts_within_its_limit() -> None:
    kept = KeptResults(limit=2_500)
    node = json.dumps({"entries": [{"type": "task", "text": "t" * 900}]})
    kept.keep_as("run-1", "n1", node)
    kept.keep_as("run-2", "n2", node)
    kept.keep_as("run-1", "n1", node)  # kept once; run-1 is now the most recently used
    kept.keep_as("run-3", "n3", node)  # over the limit: run-2's go, with its texts
    assert kept.get("run-1", "n1") == node and kept.get("run-3", "n3") == node
    assert kept.get("run-2", "n2") is None
    kept.keep_as("run-4", "small", "{}")  # a node of any size is kept (an inner node names two digests)
    assert kept.get("run-4", "small") == "{}"
