"""Red-team checks of Endstate on Temporal, against a real Temporal Server: a workflow run ends as
the same run in this process would, whatever the model answers and however the agent is set up."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from temporal_server import TemporalServer, completed_activities, serving, temporal_fixture
from temporalio.service import RPCError

from agent import Agent, Budget, HistoryPolicy, Image, RetryPolicy, RunContext, ToolOutput, tool
from agent.durable.runner import Catalog
from agent.durable.store import NotClaimable
from agent.errors import TransientModelError
from agent.journal import Result
from agent.models.base import ModelReply, record_cut_call
from agent.models.price import Price
from agent.models.scripted import ScriptedModel, Step, call, finish, reply, say
from agent.prices import PriceTable
from agent.result import RunResult
from agent.temporal import TemporalRuns
from agent.temporal import _activities as activities
from agent.temporal import _wire as w

pytestmark = pytest.mark.slow

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
BUILT: list[Agent] = []


temporal = temporal_fixture()


TOOLS = (w.TOOL, w.TOOL_CHUNKED)  # a tool that takes `ctx` is called chunked (`_remote.CALLS_CHUNKED`)


@tool
def dump(page: int) -> str:
    """Fetch a whole archive: 300,000 characters."""
    return f"archive {page}: " + "y" * 300_000


# Page 2 of `blob` waits until this is set (it is, but while a test holds it shut): a cancel lands
# while the page is fetched however slow the machine, with no window of time to land in.
BLOB_PAGE_2 = threading.Event()
BLOB_PAGE_2.set()


@tool
def blob(page: int) -> str:
    """Fetch a blob: 1,400,000 characters (a Temporal payload may hold 2 MiB)."""
    if page == 2:
        BLOB_PAGE_2.wait(timeout=600)  # set once the test's cancel is in (or at its end)
    return f"blob {page}: " + "z" * 1_400_000


@tool
def huge() -> str:
    """Fetch one text of 1,600,000 characters: more than an Endstate run sends in one Temporal payload."""
    return "h" * 1_600_000


@tool
def fetch(page: int) -> str:
    """Fetch a long page."""
    return f"page {page}: " + "x" * 41_000  # over the default cap of 40,000 characters


@tool
def save(text: str) -> str:
    """Save a text."""
    return f"saved {len(text)} characters"


@tool
def tally(ctx: RunContext) -> str:
    """Tally the run's earlier calls (reads `ctx.calls`)."""
    return json.dumps([[c.name, c.arguments, len(c.result), c.result[:12], c.is_error] for c in ctx.calls])


# A PNG whose base64 repeats `PIXELS` (its 33-byte head, signature and IHDR, is a whole number of base64
# quanta).
PNG_HEAD = b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sIIBBBBB", 13, b"IHDR", 640, 480, 8, 2, 0, 0, 0) + bytes(4)
PIXELS = b"/+7d" * 250


@tool
def photo(kilobytes: int) -> ToolOutput:
    """Take a photo of so many kilobytes."""
    return ToolOutput(
        f"a photo of {kilobytes} kB", Image.from_bytes(PNG_HEAD + b"\xff\xee\xdd" * (kilobytes * 341))
    )


def broken_stream(request: Any) -> Any:
    """A call whose stream broke after the API had counted 500 input tokens: recorded, then raised."""
    record_cut_call(ModelReply([], input_tokens=500, output_tokens=20, stop_reason="cut_off"))
    raise TransientModelError("the stream broke off", error_type="connection")


SCRIPTS: dict[str, list[Step]] = {
    "long-results": [[call("fetch", page=1)], [call("fetch", page=2)], [finish("done", "fetched")]],
    "full": [
        [call("fetch", page=1)],
        reply(say("Page 1 says"), input_tokens=199_000, stop_reason="model_context_window_exceeded"),
        [finish("done", "fetched")],
    ],
    "window": [
        *(reply(call("fetch", page=i), input_tokens=14_000) for i in range(5)),
        [finish("done", "fetched")],
    ],
    "archives": [*([call("dump", page=i)] for i in range(9)), [finish("done", "dumped")]],
    "blobs": [[call("blob", page=1)], [call("blob", page=2)], [finish("done", "fetched")]],
    "ask": [[finish("need_help", "Which page?")], [call("fetch", page=3)], [finish("done", "fetched")]],
    "broken": [broken_stream, [finish("done", "fetched")]],
    "tally": [[call("fetch", page=1)], [call("fetch", page=2)], [call("tally")], [finish("done", "tallied")]],
    "ask-then-tally": [
        [call("fetch", page=1)],
        [call("fetch", page=2)],
        [finish("need_help", "Go on?")],
        [call("tally")],
        [finish("done", "tallied")],
    ],
    "ask-then-fetch": [
        [call("fetch", page=1)],
        reply(say("Page 1 says: " + "w" * 600), call("fetch", page=2)),
        [finish("need_help", "Go on?")],
        [call("fetch", page=3)],
        [finish("done", "fetched")],
    ],
    "blocks": [
        [
            {"type": "thinking", "thinking": "t" * 800, "signature": "s" * 1_200},
            call("save", text="q" * 700),
        ],
        [finish("need_help", "Go on?")],
        [call("fetch", page=1)],
        [finish("done", "saved")],
    ],
    "pages": [*([call("fetch", page=i)] for i in range(1, 7)), [finish("done", "fetched")]],
    "ask-then-check": [
        [call("fetch", page=1)],
        [call("fetch", page=2)],
        [finish("need_help", "Go on?")],
        [finish("done", "fetched")],
        [finish("done", "fetched and checked")],
    ],
    "ask-then-huge": [[call("huge")], [finish("need_help", "Go on?")], [finish("done", "got it")]],
    "ask-then-photo": [
        [call("photo", kilobytes=200)],
        [finish("need_help", "Go on?")],
        [call("fetch", page=1)],
        [finish("done", "seen")],
    ],
    "huge-photo": [[call("photo", kilobytes=1_000)], [finish("done", "seen")]],
    "ask-then-check-archives": [
        *([call("dump", page=i)] for i in range(7)),  # 2.1 MB of results
        [finish("need_help", "Go on?")],
        [finish("done", "dumped")],
        [finish("done", "dumped and checked")],
    ],
    "ask-then-tally-archives": [
        *([call("dump", page=i)] for i in range(7)),
        [finish("need_help", "Go on?")],
        [call("tally")],
        [finish("done", "dumped, tallied and checked")],
    ],
    "thinking": [
        [
            {"type": "thinking", "thinking": "Page 2 first.", "signature": "c2ln\u00e9=="},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "x"}},
            {"type": "future_block", "payload": {"n": 1.5, "list": [None, True]}},
            call("fetch", page=2),
        ],
        [call("fetch", page=3)],
        [finish("need_help", "Go on?")],
        [finish("done", "fetched")],
    ],
    "gate": [[call("open_gate")], [finish("done", "opened")]],
    "refusal": [[call("fetch", page=1)], reply(say("I can't."), stop_reason="refusal")],
    "pause": [reply(say("Searching"), stop_reason="pause_turn"), [finish("done", "found")]],
    "cut": [reply(say("The first half"), stop_reason="max_tokens"), [finish("give_up", "too long")]],
}


class SmallWindow(ScriptedModel):
    """A scripted model with a 20,000-token context window."""

    context_window = 20_000


class Slow(SmallWindow):
    """Answers after 30 s: the run's time budget cuts the call."""

    async def complete(self, request: Any) -> Any:
        self.requests.append(request)
        await asyncio.sleep(30)
        raise AssertionError("the time budget should have cut this call")


class Streaming(SmallWindow):
    """Streams a reply for 30 s: cut off, it records what the stream had counted (as the Claude adapter)."""

    async def complete(self, request: Any) -> Any:
        self.requests.append(request)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            record_cut_call(ModelReply([], input_tokens=1234, output_tokens=56, stop_reason="cut_off"))
            raise
        raise AssertionError("the time budget should have cut this call")


class Stubborn(SmallWindow):
    """Ignores being cut off and replies after 6 s anyway (a stuck adapter), with what it used."""

    async def complete(self, request: Any) -> Any:
        self.requests.append(request)
        until = asyncio.get_running_loop().time() + 6
        while (left := until - asyncio.get_running_loop().time()) > 0:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(left)
        return ModelReply([say("Late.")], input_tokens=777, output_tokens=7, stop_reason="end_turn")


MUTE_LET_GO = threading.Event()  # set by the test once the run ended: `Mute` replies only then


class Mute(SmallWindow):
    """Ignores being cut off and replies, with what it used, only once the test lets it go (at most 120 s)."""

    async def complete(self, request: Any) -> Any:
        self.requests.append(request)
        until = asyncio.get_running_loop().time() + 120
        while not MUTE_LET_GO.is_set() and asyncio.get_running_loop().time() < until:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.05)
        return ModelReply([say("Late.")], input_tokens=777, output_tokens=7, stop_reason="end_turn")


class ByTurn(SmallWindow):
    """Plays the step of the request's turn, whichever steps this instance played before: the workers
    of one run each build its agent, and each plays some of its turns."""

    async def complete(self, request: Any) -> Any:
        self._cursor = None
        return await super().complete(request)


MODELS: dict[str, type[SmallWindow]] = {
    "slow": Slow,
    "streaming": Streaming,
    "stubborn": Stubborn,
    "mute": Mute,
}
PRICES = PriceTable({"scripted": Price(input_per_mtok=3.0, output_per_mtok=15.0)})


def build(state: dict[str, Any]) -> Agent:
    history = HistoryPolicy.off() if state.get("history") == "off" else HistoryPolicy(max_result_chars=300)
    script, model = state["script"], ByTurn if state.get("by_turn") else SmallWindow
    agent = Agent(
        name="fetcher",
        model=MODELS[script]() if script in MODELS else model(SCRIPTS[script]),
        prices=PRICES,
        instructions="Fetch pages.",
        tools=[fetch, dump, blob, open_gate, tally, save, huge, photo],
        budget=Budget(max_turns=int(state.get("max_turns", 6)), max_seconds=float(state.get("seconds", 120))),
        retry=FAST_RETRY,
        history=history,
        verifiers=[checked] if state.get("verify") else [],
    )
    BUILT.append(agent)
    return agent


SEEN: list[tuple[Any, ...]] = []  # what each verifier call saw: the task, journal, calls and note
TIMES = ("at", "deadline", "suspended_at")  # when a person was asked and answered: the clock's, not the run's


def checked(ctx: RunContext) -> list[str]:
    """A verifier that reads the run's results: until the note says they were checked, it answers
    with the length and the ends of each, from the calls and from the journal."""
    journal = json.loads(json.dumps(w.journal_json(list(ctx.journal))), object_hook=timeless)
    SEEN.append((ctx.task, journal, [vars(c) for c in ctx.calls], ctx.note))
    if "checked" in ctx.note:
        return []
    results = [e.text for e in ctx.journal if isinstance(e, Result)]
    return [f"{c.name}: {len(c.result)} characters, {c.result[:12]}...{c.result[-3:]}" for c in ctx.calls] + [
        f"the journal holds {len(results)} results, {sum(map(len, results))} characters"
    ]


def timeless(item: dict[str, Any]) -> dict[str, Any]:
    return {k: None if k in TIMES else v for k, v in item.items()}


CLEANING, CLEANUP_GATE = threading.Event(), threading.Event()


def slow_cleanup(state: dict[str, Any]) -> None:
    """Say it began, then block (as a real cleanup may) until the test opens its gate, at most 30 s."""
    CLEANING.set()
    CLEANUP_GATE.wait(30)


GATE = threading.Event()
GATE_OPENED: list[bool] = []


@tool
def open_gate() -> str:
    """Open the gate another run's cleanup waits at."""
    GATE.set()
    return "opened"


def gated_cleanup(state: dict[str, Any]) -> None:
    """Wait (blocking, as a real cleanup may) until another run opens the gate, at most 20 s."""
    GATE_OPENED.append(GATE.wait(20))


def catalog() -> Catalog:
    c = Catalog()
    c.register("fetcher", build)
    c.register("tidy", build, cleanup=slow_cleanup)
    c.register("gated", build, cleanup=gated_cleanup)
    return c


@contextlib.asynccontextmanager
async def worker(
    server: TemporalServer, queue: str | None = None, **options: Any
) -> AsyncIterator[TemporalRuns]:
    async with serving(server, catalog(), queue, **options) as runs:
        yield runs


def on_temporal(server: TemporalServer, state: dict[str, Any], **options: Any) -> tuple[RunResult, Agent]:
    async def go() -> RunResult:
        async with worker(server, **options) as runs:
            result = await asyncio.wait_for(runs.start("fetcher", "Fetch the pages.", state=state), 60)
            assert isinstance(result, RunResult)
            ended = await asyncio.wait_for(runs.result(result.run_id), 60)  # the workflow's own result
            assert (ended.reason, ended.turns, ended.usage) == (result.reason, result.turns, result.usage)
            return ended

    BUILT.clear()
    result = asyncio.run(go())
    return result, BUILT[-1]


def locally(state: dict[str, Any]) -> tuple[RunResult, Agent]:
    agent = build(state)
    return agent.run("Fetch the pages.", state=state), agent


def same_run(a: RunResult, b: RunResult) -> None:
    fields = ("reason", "limit", "cause", "verified", "turns", "output", "note", "error_type", "last_text")
    assert {f: getattr(a, f) for f in fields} == {f: getattr(b, f) for f in fields}
    assert (a.input_tokens, a.output_tokens, a.cost_usd) == (b.input_tokens, b.output_tokens, b.cost_usd)


def requests_of(agents: list[Agent], task: str | None = None) -> list[tuple[Any, ...]]:
    """What the agents' models were sent (system, messages, tools, max_tokens) for `task` (None: any),
    in the order of turns."""
    sent = [
        r
        for a in agents
        for r in a.model.requests  # type: ignore[attr-defined]
        if task is None or r.messages[0]["content"] == task
    ]
    sent.sort(key=lambda r: r.replies)
    return [(r.system, r.messages, r.tools, r.max_tokens) for r in sent]


def sent_results(agent: Agent) -> list[str]:
    model = agent.model
    assert isinstance(model, ScriptedModel)
    return [
        b["content"]
        for r in model.requests
        for m in r.messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


@pytest.mark.parametrize("history", ["capped", "off"])
def test_the_agents_history_policy_holds_on_temporal(temporal: TemporalServer, history: str) -> None:
    state = {"script": "long-results", "history": history}
    here, local_agent = locally(state)
    there, worker_agent = on_temporal(temporal, state)
    same_run(here, there)
    assert sent_results(worker_agent) == sent_results(local_agent)
    capped = all(len(text) < 1_000 for text in sent_results(local_agent))
    assert capped is (history == "capped")


@pytest.mark.parametrize("script", ["full", "refusal", "pause", "cut"])
@pytest.mark.parametrize("history", ["capped", "off"])
def test_each_api_stop_reason_ends_the_workflow_as_it_ends_a_local_run(
    temporal: TemporalServer, script: str, history: str
) -> None:
    state = {"script": script, "history": history}
    here, local_agent = locally(state)
    there, worker_agent = on_temporal(temporal, state)
    same_run(here, there)
    assert [r.messages for r in worker_agent.model.requests] == [  # type: ignore[attr-defined]
        r.messages
        for r in local_agent.model.requests  # type: ignore[attr-defined]
    ]


def test_the_models_context_window_holds_on_temporal(temporal: TemporalServer) -> None:
    state = {"script": "window"}
    here, local_agent = locally(state)
    there, worker_agent = on_temporal(temporal, state)
    same_run(here, there)
    assert any("was cleared to save context" in text for text in sent_results(local_agent))
    assert sent_results(worker_agent) == sent_results(local_agent)


def test_a_run_whose_conversation_outgrows_a_temporal_payload_runs_on_temporal_as_it_runs_locally(
    temporal: TemporalServer,
) -> None:
    # 9 results of 300,000 characters, sent whole (history off): 2.7 MB of conversation, which went in
    # every model call's input (payload_too_large from the 5th); now the model is sent them by digest.
    state = {"script": "archives", "history": "off", "max_turns": 12}
    here, local_agent = locally(state)
    there, worker_agent = on_temporal(temporal, state)
    assert here.reason == "success"
    same_run(here, there)
    assert requests_of([worker_agent]) == requests_of([local_agent])


def test_a_model_input_the_worker_must_be_sent_whole_stops_named_past_a_temporal_payload(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker that keeps no text answers each model call with every long text missing, which the
    # workflow then sends: past 1.5 MB (Temporal refuses 2 MiB and retries the workflow task for ever)
    # in parts, which this worker does not keep; the run stops, named, once a part was sent 3 times.
    monkeypatch.setattr(activities, "MAX_KEPT_CHARS", 0)
    state = {"script": "archives", "history": "off", "max_turns": 12}
    there, _ = on_temporal(temporal, state)
    assert (there.reason, there.error_type) == ("error", "payload_too_large")
    assert "with the texts the worker lacked" in there.note and "HistoryPolicy(max_result_chars" in there.note
    assert "were sent 3 times" in there.note
    assert there.turns >= 4


def test_a_run_whose_workflow_history_nears_temporals_limit_stops_named(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Temporal ends a workflow whose history passes 50 MB without a result; the run stops first.
    monkeypatch.setattr(w, "MAX_HISTORY_BYTES", 1_000_000)
    state = {"script": "archives", "history": "capped", "max_turns": 12}
    there, _ = on_temporal(temporal, state)
    assert (there.reason, there.error_type) == ("error", "history_too_large")
    assert "history" in there.note


def test_a_result_whose_journal_no_payload_can_hold_still_ends_the_workflow(temporal: TemporalServer) -> None:
    # The journal passes 2 MiB with the last tool result: the result keeps its snapshot packed (probe40e:
    # it went without it, and the run could not be extended).
    state = {"script": "blobs", "history": "off", "max_turns": 2}
    assert locally(state)[0].snapshot is not None  # a limit keeps one: the run can be extended
    there, _ = on_temporal(temporal, state)
    assert (there.reason, there.limit) == ("limit", "turns")
    assert there.snapshot is not None and "kept zlib-compressed" in there.note, there.note


def test_a_cancelled_run_whose_snapshot_was_too_large_is_not_started_over(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Starting it over from its task would run again every tool it ran; it says so instead. (Its snapshot
    # is too large even packed: a result that holds it either way is counted so.)
    size = w.payload_size
    monkeypatch.setattr(
        w,
        "payload_size",
        lambda v: 10**9 if isinstance(v, dict) and (v.get("snapshot") or w.PACKED in v) else size(v),
    )

    async def scenario() -> None:
        async with worker(temporal) as runs:
            state = {"script": "blobs", "history": "off", "max_turns": 5}
            run_id = await runs.start("fetcher", "Fetch the blobs.", state=state, wait=False)
            assert isinstance(run_id, str)
            for _ in range(1200):  # the second blob is being fetched: the second reply is recorded
                if await completed_activities(runs.client, run_id, w.MODEL_CHUNKED) >= 2:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"run {run_id}'s second reply was not recorded within a minute")
            await runs.cancel(run_id)
            BLOB_PAGE_2.set()  # the cancel is in: the fetch may end
            cancelled = await asyncio.wait_for(runs.result(run_id), 60)
            assert cancelled.reason == "cancelled" and cancelled.turns == 2
            assert cancelled.snapshot is None and "cannot be resumed" in cancelled.note
            with pytest.raises(NotClaimable, match="no snapshot"):
                await runs.resume(run_id)

    BUILT.clear()
    BLOB_PAGE_2.clear()
    try:
        asyncio.run(scenario())
    finally:
        BLOB_PAGE_2.set()


@pytest.mark.parametrize(
    ("update", "args"),
    [
        ("answer", [123]),
        ("answer", [{"text": "3"}]),
        ("answer", [None]),
        ("answer", []),
        ("answer", ["3", "not a bool", "extra"]),
        ("approve", []),
        ("deny", [["no"]]),
        ("segment", ["1"]),
        ("no-such-update", ["3"]),
    ],
)
def test_hostile_updates_are_refused_and_the_run_still_takes_a_real_answer(
    temporal: TemporalServer, update: str, args: list[Any]
) -> None:
    async def scenario() -> None:
        async with worker(temporal) as runs:
            asking = runs.start("fetcher", "Fetch a page.", state={"script": "ask", "history": "capped"})
            asked = await asyncio.wait_for(asking, 60)
            assert isinstance(asked, RunResult) and asked.reason == "need_help"
            handle = runs.client.get_workflow_handle(asked.run_id)
            with contextlib.suppress(Exception):  # refused, one way or another
                await asyncio.wait_for(handle.execute_update(update, args=args), 10)
            done = await asyncio.wait_for(runs.answer(asked.run_id, "Page 3."), 30)
            assert done.reason == "success" and done.turns == 3
            sent = json.dumps(BUILT[-1].model.requests[-2].messages)  # type: ignore[attr-defined]
            assert "Page 3." in sent and "123" not in sent

    asyncio.run(scenario())


def test_a_broken_streams_tokens_are_charged_on_temporal_as_they_are_locally(
    temporal: TemporalServer,
) -> None:
    state = {"script": "broken"}
    here, _ = locally(state)
    assert here.reason == "success" and here.input_tokens >= 500
    there, _ = on_temporal(temporal, state)
    same_run(here, there)


def test_provider_blocks_go_back_verbatim_through_activities_and_a_wait(temporal: TemporalServer) -> None:
    state = {"script": "thinking", "history": "capped"}
    local_agent = build(state)
    asked = local_agent.run("Fetch the pages.", state=state)
    here = local_agent.resume(asked.snapshot, "Yes.")  # type: ignore[arg-type]

    async def go() -> RunResult:
        async with worker(temporal) as runs:
            waiting = await runs.start("fetcher", "Fetch the pages.", state=state)
            assert isinstance(waiting, RunResult) and waiting.reason == "need_help"
            return await asyncio.wait_for(runs.answer(waiting.run_id, "Yes."), 30)

    BUILT.clear()
    there = asyncio.run(go())
    same_run(here, there)
    sent = [r.messages for r in BUILT[-1].model.requests]  # type: ignore[attr-defined]
    assert sent == [r.messages for r in local_agent.model.requests]  # type: ignore[attr-defined]
    assert sent[-1][1]["content"][:4] == SCRIPTS["thinking"][0][:4]  # type: ignore[index]


def test_a_run_cancelled_while_its_world_is_cleaned_up_keeps_its_result(temporal: TemporalServer) -> None:
    CLEANING.clear()
    CLEANUP_GATE.clear()

    async def scenario() -> None:
        async with worker(temporal) as runs:
            done = await runs.start("tidy", "Fetch the pages.", state={"script": "long-results"})
            assert isinstance(done, RunResult) and done.reason == "success"
            assert await asyncio.to_thread(CLEANING.wait, 30), "the cleanup did not begin within 30 s"
            await runs.cancel(done.run_id)  # while the cleanup activity runs
            CLEANUP_GATE.set()
            ended = await asyncio.wait_for(runs.result(done.run_id), 30)
            assert (ended.reason, ended.turns) == ("success", 3)

    asyncio.run(scenario())


def test_a_blocking_cleanup_does_not_stop_the_workers_other_runs(temporal: TemporalServer) -> None:
    # A team's prepare and cleanup are plain functions that may block (clone a repo, drop a
    # database): they must not hold up the activities of every other run on the worker.
    async def scenario() -> None:
        async with worker(temporal) as runs:
            first = await runs.start("gated", "Fetch the pages.", state={"script": "long-results"})
            assert isinstance(first, RunResult) and first.reason == "success"  # its cleanup now waits
            second = await asyncio.wait_for(runs.start("fetcher", "Open.", state={"script": "gate"}), 60)
            assert isinstance(second, RunResult) and second.reason == "success"
            await asyncio.wait_for(runs.result(first.run_id), 60)

    GATE.clear()
    GATE_OPENED.clear()
    asyncio.run(scenario())
    assert GATE_OPENED == [True]  # the second run opened the gate while the first cleanup waited


@pytest.mark.parametrize("address", ["not an address", "127.0.0.1:1", "http://[::1"])
def test_a_bad_temporal_address_is_a_clear_error_not_a_traceback(address: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "runs", "--temporal", address],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    # one that is not HOST:PORT is a usage error (audit12), one that is but answers nothing is unreachable
    said = "cannot reach Temporal at" if address == "127.0.0.1:1" else "give HOST:PORT"
    assert said in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["runs"],
        ["pending"],
        ["start", "fetcher", "Fetch.", "--no-wait"],
        ["worker", "--catalog", "temporal_agents:catalog"],
    ],
)
def test_a_namespace_the_server_lacks_is_a_clear_error_not_a_traceback(
    temporal: TemporalServer, command: list[str]
) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent), "OTEL_SDK_DISABLED": "true"}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", *command, "--temporal", temporal.address, "--namespace", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert "has no namespace 'nope'" in done.stderr and "Traceback" not in done.stderr


def test_the_time_budget_cuts_a_model_call_on_temporal_as_it_does_locally(temporal: TemporalServer) -> None:
    state = {"script": "slow", "seconds": 2}
    here, _ = locally(state)
    assert (here.reason, here.limit) == ("limit", "seconds")
    there, _ = on_temporal(temporal, state)
    same_run(here, there)


def test_a_model_call_the_time_budget_cuts_is_charged_on_temporal_as_it_is_locally(
    temporal: TemporalServer,
) -> None:
    state = {"script": "streaming", "seconds": 2}
    here, _ = locally(state)
    assert (here.reason, here.limit, here.input_tokens, here.output_tokens) == ("limit", "seconds", 1234, 56)
    assert here.cost_usd is not None and here.cost_usd > 0
    # the cut call's usage comes back once the worker hears of the cancel (at a heartbeat): a loaded
    # machine took over the default 5 s grace (1 run in 6), so this test gives it 30 s
    there, worker_agent = on_temporal(temporal, state, cut_grace=30.0)
    assert worker_agent.model.requests, "the worker's model was never called: the budget ran out first"  # type: ignore[attr-defined]
    same_run(here, there)


def scheduled_model_call(event: Any) -> bool:
    return str(event.activity_task_scheduled_event_attributes.activity_type.name).startswith(w.MODEL)


async def in_history(runs: TemporalRuns, run_id: str, wanted: Any, count: int = 1) -> None:
    """Wait (at most 60 s) until `count` events of the run's history are `wanted`."""
    handle = runs.client.get_workflow_handle(run_id)
    for _ in range(600):
        with contextlib.suppress(RPCError):  # not started yet
            if sum(1 for e in (await handle.fetch_history()).events if wanted(e)) >= count:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id}: the events waited for never came")


@contextlib.asynccontextmanager
async def split_workers(
    temporal: TemporalServer, agents: Catalog, setup: Any
) -> AsyncIterator[tuple[TemporalRuns, Callable[[], Any]]]:
    """A client on a new task queue, with its activity workers running (the queue's and its `@own`
    queue's) and a maker of its workflow worker: a test runs that one alone and stops it, as a workflow
    task that timed out on a loaded machine, so that what happens meanwhile reaches the workflow at once."""
    from temporalio.worker import Worker

    from agent.temporal import _registry
    from agent.temporal._activities import EndstateActivities, worker_setup
    from agent.temporal.worker import ensure_search_attributes, workflow_runner
    from agent.temporal.workflow import EndstateRun

    queue = f"red-{uuid.uuid4().hex[:8]}"
    runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
    await ensure_search_attributes(runs.client, runs.client.namespace)
    _registry.register(queue, setup)
    acts = EndstateActivities(agents, f"{queue}@own").all()
    tasks = [Worker(runs.client, task_queue=q, activities=acts) for q in (queue, f"{queue}@own")]

    def workflows() -> Worker:
        return Worker(  # with the local activity each execution asks its worker's setup with
            runs.client,
            task_queue=queue,
            workflows=[EndstateRun],
            activities=[worker_setup],
            no_remote_activities=True,  # its activities are local: the queue's activity workers run the rest
            workflow_runner=workflow_runner(),
        )

    async with tasks[0], tasks[1]:
        yield runs, workflows


def test_a_cut_calls_usage_is_charged_when_its_failure_and_the_budget_come_in_one_workflow_task(
    temporal: TemporalServer,
) -> None:
    """The run's time budget and the worker's own cut of the model call (with what it used) reach the
    workflow together, as on a loaded machine: no workflow worker polls while both happen. The
    activity's failure settles before the cut cancels it (cancelled, its usage was lost)."""
    from temporalio.api.enums.v1 import EventType

    from agent.temporal._registry import WorkerSetup

    state = {"script": "streaming", "seconds": 3}

    async def scenario() -> RunResult:
        setup = WorkerSetup(heartbeat_seconds=10.0, cut_grace=30.0)
        async with split_workers(temporal, catalog(), setup) as (runs, workflows):
            run_id = uuid.uuid4().hex
            async with workflows():
                start = runs.start("fetcher", "Fetch the pages.", state=state, run_id=run_id)
                started = asyncio.create_task(start)
                await in_history(runs, run_id, scheduled_model_call)
            both = {EventType.EVENT_TYPE_TIMER_FIRED, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED}
            await in_history(runs, run_id, lambda e: e.event_type in both, count=2)
            async with workflows():  # the budget's timer fired and the worker cut the call: both at once
                await asyncio.wait_for(started, 60)
                return await asyncio.wait_for(runs.result(started.result().run_id), 60)

    here, _ = locally(state)
    BUILT.clear()
    there = asyncio.run(scenario())
    same_run(here, there)


def test_a_tool_that_reads_the_runs_calls_sees_the_same_records_on_temporal(temporal: TemporalServer) -> None:
    state = {"script": "tally"}
    here, local_agent = locally(state)
    there, worker_agent = on_temporal(temporal, state)
    same_run(here, there)
    tallied = sent_results(local_agent)[-1]
    assert json.loads(tallied)[1] == ["fetch", {"page": 2}, 41_008, "page 2: xxxx", False]
    assert sent_results(worker_agent)[-1] == tallied


def test_a_tool_that_takes_no_context_is_not_sent_the_runs_earlier_calls(temporal: TemporalServer) -> None:
    """Each call's input would otherwise hold every result before it: a history quadratic in turns."""

    async def scenario() -> list[int]:
        async with worker(temporal) as runs:
            result = await runs.start("fetcher", "Fetch the pages.", state={"script": "long-results"})
            assert result.reason == "success"
            history = await runs.client.get_workflow_handle(result.run_id).fetch_history()
        return [
            e.activity_task_scheduled_event_attributes.input.ByteSize()
            for e in history.events
            if e.activity_task_scheduled_event_attributes.activity_type.name in TOOLS
        ]

    sizes = asyncio.run(scenario())
    assert len(sizes) == 2 and sizes[1] < sizes[0] + 100  # not the first call's 41,000 characters again


def tool_inputs(history: Any) -> list[tuple[int, int]]:
    """Each tool activity's (input bytes, long results sent in full) in `history`."""
    inputs = [
        e.activity_task_scheduled_event_attributes.input
        for e in history.events
        if e.activity_task_scheduled_event_attributes.activity_type.name in TOOLS
    ]
    return [(i.ByteSize(), i.SerializeToString().count(b"x" * 41_000)) for i in inputs]


def test_a_tool_that_reads_the_calls_is_sent_long_results_once_and_a_new_worker_asks_for_them(
    temporal: TemporalServer,
) -> None:
    """Results travel by digest; a worker that did not make them (here: a restarted one) gets them once."""

    async def scenario() -> tuple[RunResult, list[tuple[int, int]]]:
        queue = f"red-{uuid.uuid4().hex[:8]}"
        async with worker(temporal, queue) as runs:
            asked = await runs.start("fetcher", "Fetch the pages.", state={"script": "ask-then-tally"})
            assert asked.reason == "need_help"
        async with worker(temporal, queue) as runs:  # a new worker: it keeps none of the run's results
            done = await runs.answer(asked.run_id, "Go on.")
            history = await runs.client.get_workflow_handle(asked.run_id).fetch_history()
        return done, tool_inputs(history)

    BUILT.clear()
    done, inputs = asyncio.run(scenario())
    assert done.reason == "success"
    tallied = json.loads(sent_results(BUILT[-1])[-1])
    assert [r[:4] for r in tallied] == [
        ["fetch", {"page": 1}, 41_008, "page 1: xxxx"],
        ["fetch", {"page": 2}, 41_008, "page 2: xxxx"],
    ]
    fetch_1, fetch_2, tally_by_digest, tally_in_full = inputs
    assert (fetch_1[1], fetch_2[1], tally_by_digest[1], tally_in_full[1]) == (0, 0, 0, 2)
    assert tally_by_digest[0] < 2_000  # the digests, not the 82,000 characters


def test_a_cut_model_call_that_never_reports_does_not_hold_the_run_past_the_grace(
    temporal: TemporalServer,
) -> None:
    """The worker's model ignores the cut and replies only once the run has ended: the workflow waited
    only `cut_grace` (1 s) for its report, so the run has stopped, at the seconds limit, without it.
    (It replied 4 s past the budget: a workflow task late by 3 s on a loaded machine would see it.)"""

    async def scenario() -> RunResult:
        MUTE_LET_GO.clear()
        async with worker(temporal, cut_grace=1.0) as runs:
            try:
                started = runs.start("fetcher", "Fetch the pages.", state={"script": "mute", "seconds": 2})
                return await asyncio.wait_for(started, 60)
            finally:
                MUTE_LET_GO.set()  # the worker's stop waits for the call, which ignores being cancelled

    result = asyncio.run(scenario())
    assert (result.reason, result.limit, result.input_tokens) == ("limit", "seconds", 0)


def test_a_cut_call_whose_late_reply_comes_within_the_grace_is_charged_what_it_used(
    temporal: TemporalServer,
) -> None:
    """The worker's model ignores the cut and replies 4 s past the budget, within `cut_grace`: the reply
    is dropped, as the loop drops it, and its usage charged. (The reply's activity answer carries whether
    the catalog's cancel is set, which the charge must leave out.)"""

    async def scenario() -> RunResult:
        async with worker(temporal, cut_grace=30.0) as runs:
            started = runs.start("fetcher", "Fetch the pages.", state={"script": "stubborn", "seconds": 2})
            return await asyncio.wait_for(started, 60)

    result = asyncio.run(scenario())
    assert (result.reason, result.limit, result.input_tokens, result.output_tokens) == (
        "limit",
        "seconds",
        777,
        7,
    )


def activity_inputs(history: Any, name: str, long: bytes) -> list[tuple[int, int]]:
    """Each `name` activity's (input bytes, times `long` is in it) in `history`."""
    inputs = [
        e.activity_task_scheduled_event_attributes.input
        for e in history.events
        if e.activity_task_scheduled_event_attributes.activity_type.name == name
    ]
    return [(i.ByteSize(), i.SerializeToString().count(long)) for i in inputs]


def across_a_restart(
    temporal: TemporalServer, state: dict[str, Any], after: int = 1
) -> tuple[RunResult, RunResult, Any]:
    """A run that asks a question, answered with `after` new workers on its queue (keeping none of the
    run's texts), and the same run in this process: (here, there, there's history). The model's requests
    are checked equal."""
    local_agent = build(state)
    asked_here = local_agent.run("Fetch the pages.", state=state)
    here = local_agent.resume(asked_here.snapshot, "Go on.")  # type: ignore[arg-type]

    async def scenario() -> tuple[RunResult, Any]:
        queue = f"red-{uuid.uuid4().hex[:8]}"
        # one execution, whose history is weighed: a run of 2.1 MB of results continues as new (packed)
        async with worker(temporal, queue, continue_after_events=None) as runs:
            asked = await runs.start("fetcher", "Fetch the pages.", state=state)
            assert isinstance(asked, RunResult) and asked.reason == "need_help"
        async with contextlib.AsyncExitStack() as workers:  # new workers: they keep none of the run's texts
            for _ in range(after):
                runs = await workers.enter_async_context(worker(temporal, queue, continue_after_events=None))
            done = await asyncio.wait_for(runs.answer(asked.run_id, "Go on."), 60)
            history = await runs.client.get_workflow_handle(asked.run_id).fetch_history()
        return done, history

    BUILT.clear()
    there, history = asyncio.run(scenario())
    same_run(here, there)
    assert requests_of(BUILT) == requests_of([local_agent])
    return here, there, history


def test_the_model_is_sent_what_it_is_sent_locally_across_a_worker_restart_its_long_texts_by_digest(
    temporal: TemporalServer,
) -> None:
    """A restarted worker keeps none of the run's texts: it asks for them once."""
    _, _, history = across_a_restart(temporal, {"script": "ask-then-fetch", "history": "off"})
    inputs = activity_inputs(history, w.MODEL_CHUNKED, b"x" * 41_000)
    said = activity_inputs(history, w.MODEL_CHUNKED, b"w" * 600)
    # turns 1-3 on the first worker, which made each text: by digest only; turn 4 on the new worker:
    # by digest (it answers missing), then the two results and the reply's text in full; turn 5: digests
    assert [n for _, n in inputs] == [0, 0, 0, 0, 2, 0]
    assert [n for _, n in said] == [0, 0, 0, 0, 1, 0]
    assert all(size < 5_000 for size, n in inputs if n == 0)


def test_a_replys_long_provider_blocks_and_arguments_go_by_digest_and_come_back_verbatim(
    temporal: TemporalServer,
) -> None:
    """A thinking block with a long signature and a call's long argument are sent back each turn:
    by digest, the block rebuilt from its JSON, across a worker restart as well."""
    _, _, history = across_a_restart(temporal, {"script": "blocks", "history": "off"})
    signed = activity_inputs(history, w.MODEL_CHUNKED, b"s" * 1_200)
    saved = activity_inputs(history, w.MODEL_CHUNKED, b"q" * 700)
    # turn 2 on the worker that got the reply: digests; turn 3 on a new one: missing, then in full
    assert [n for _, n in signed] == [0, 0, 0, 1, 0]
    assert [n for _, n in saved] == [0, 0, 0, 1, 0]


def test_an_image_result_goes_by_digest_and_a_restarted_worker_sends_the_model_the_same_blocks(
    temporal: TemporalServer,
) -> None:
    """A tool's image is in the history once, as the tool activity's result: each model input names it
    by digest, and the new worker, which lacks it, is sent it once; the model is sent what it is locally."""
    _, there, history = across_a_restart(temporal, {"script": "ask-then-photo"})
    assert there.reason == "success"
    inputs = activity_inputs(history, w.MODEL_CHUNKED, PIXELS)
    # turn 2 on the worker that made it: a digest; turn 3 on a new one: missing, then in full; turn 4: digest
    assert [n > 0 for _, n in inputs] == [False, False, False, True, False]
    assert all(size < 5_000 for size, n in inputs if n == 0)
    (_, messages, _, _) = requests_of(BUILT)[-1]
    sent = [
        b
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert sent[0]["content"][1]["source"]["media_type"] == "image/png"


def test_an_image_no_temporal_payload_can_carry_is_the_tools_error_naming_it_and_the_run_goes_on(
    temporal: TemporalServer,
) -> None:
    there, agent = on_temporal(temporal, {"script": "huge-photo"})
    assert there.reason == "success"
    (_, messages, _, _) = requests_of([agent])[-1]
    (sent,) = [
        b
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert sent["is_error"] is True and "tool 'photo' returned content blocks of 1,36" in sent["content"]
    assert "over the 1,000,000 a Temporal run carries in one payload" in sent["content"]


def test_two_workers_on_one_queue_send_the_model_what_it_is_sent_locally(temporal: TemporalServer) -> None:
    """Each worker keeps the texts it made or was sent and asks for those it lacks. Three runs at once
    on two workers that take one activity at a time: each run's calls go to both."""
    state = {"script": "pages", "history": "off", "max_turns": 8, "by_turn": True}
    tasks = [f"Fetch the pages ({i})." for i in range(3)]
    local = {task: build(state) for task in tasks}
    here = {task: agent.run(task, state=state) for task, agent in local.items()}

    async def scenario() -> list[Any]:
        queue, one = f"red-{uuid.uuid4().hex[:8]}", {"max_concurrent_activities": 1}
        async with worker(temporal, queue, **one), worker(temporal, queue, **one) as runs:
            started = [runs.start("fetcher", task, state=state) for task in tasks]
            return await asyncio.wait_for(asyncio.gather(*started), 180)

    BUILT.clear()
    there = asyncio.run(scenario())
    for task, result in zip(tasks, there, strict=True):
        same_run(here[task], result)
        assert requests_of(BUILT, task) == requests_of([local[task]], task)


def test_a_result_the_history_policy_cuts_is_kept_cut_so_no_model_call_asks_for_it(
    temporal: TemporalServer,
) -> None:
    """The model is sent each 41,000-character result cut to 300 characters: the worker that made it
    keeps it so cut too, and each turn is one model activity, with no text in full."""

    async def scenario() -> tuple[RunResult, Any]:
        async with worker(temporal) as runs:
            done = await runs.start("fetcher", "Fetch the pages.", state={"script": "pages", "max_turns": 8})
            assert isinstance(done, RunResult)
            return done, await runs.client.get_workflow_handle(done.run_id).fetch_history()

    done, history = asyncio.run(scenario())
    assert (done.reason, done.turns) == ("success", 7)
    inputs = activity_inputs(history, w.MODEL_CHUNKED, b"x" * 290)
    assert [n for _, n in inputs] == [0] * 7


def test_an_old_worker_handed_the_chunked_model_call_fails_it_as_unknown_and_the_run_ends_named(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rolling deploy: a worker from before `endstate.model.chunked` (here: one without it) fails the
    call as an unregistered activity; Temporal retries it, and with no new worker the run ends as error
    naming it, rather than a worker misreading the input."""
    every = activities.EndstateActivities.all

    def old(self: activities.EndstateActivities) -> list[Any]:
        return [a for a in every(self) if a != self.model_chunked]

    monkeypatch.setattr(activities.EndstateActivities, "all", old)

    async def scenario() -> RunResult:
        async with worker(temporal) as runs:
            ended = await runs.start("fetcher", "Fetch the pages.", state={"script": "long-results"})
            assert isinstance(ended, RunResult)
            return ended

    ended = asyncio.run(scenario())
    assert (ended.reason, ended.error_type) == ("error", "NotFoundError")
    assert w.MODEL_CHUNKED in ended.note and "not registered" in ended.note


def checked_across_a_restart(
    temporal: TemporalServer, state: dict[str, Any], after: int = 1
) -> tuple[RunResult, list[tuple[Any, ...]], Any]:
    """`across_a_restart` for an agent whose verifier reads the results, checking that the verifier saw
    on the workers what it saw in this process: (there, what it saw, there's history)."""
    SEEN.clear()
    _, there, history = across_a_restart(temporal, state, after)  # here first, then there
    half = len(SEEN) // 2
    assert half and SEEN[:half] == SEEN[half:]
    return there, SEEN[:half], history


def test_a_verifier_on_a_worker_lacking_the_results_sees_the_run_a_local_verifier_sees(
    temporal: TemporalServer,
) -> None:
    """The verifiers' input names long texts by digest: the restarted worker, sent only the results cut
    as the model sees them, lacks the whole ones, is sent them once, and then checks them as here."""
    there, seen, history = checked_across_a_restart(
        temporal, {"script": "ask-then-check", "verify": True, "history": "capped"}
    )
    assert (there.reason, there.verified) == ("success", True)
    assert seen[0][2][1]["result"] == "page 2: " + "x" * 41_000  # the whole result, not the cut one
    inputs = activity_inputs(history, w.VERIFY_CHUNKED, b"x" * 41_000)
    # the first check on the new worker: by digest (it answers missing), then the two results in full,
    # once each (the calls and the journal name them); the second check: digests only
    assert [n for _, n in inputs] == [0, 2, 0]
    assert inputs[0][0] < 5_000 and inputs[2][0] < 5_000


@pytest.mark.parametrize(
    ("script", "history", "lacking"),
    [
        ("ask-then-check-archives", "off", w.MODEL_CHUNKED),
        ("ask-then-check-archives", "capped", w.VERIFY_CHUNKED),
        ("ask-then-tally-archives", "capped", w.TOOL_CHUNKED),
    ],
)
def test_a_worker_lacking_more_than_a_payload_of_texts_is_sent_them_in_parts_and_the_run_succeeds(
    temporal: TemporalServer, script: str, history: str, lacking: str
) -> None:
    """7 results of 300,000 characters (2.1 MB), then a question; the worker restarted before the answer
    keeps none. History off: the next model call needs them all; capped: the model is sent them cut, and
    the verifier (or a tool that reads the calls) needs them whole. Each is sent them in parts under
    1.5 MB, and the run ends as here."""
    state = {"script": script, "verify": True, "history": history, "max_turns": 14}
    there, seen, events = checked_across_a_restart(temporal, state)
    assert (there.reason, there.verified) == ("success", True)
    assert [len(c["result"]) for c in seen[0][2]][:7] == [300_011] * 7
    inputs = activity_inputs(events, lacking, b"y" * 300_000)
    parts = [(size, n) for size, n in inputs if n]
    assert len(parts) == 2 and sum(n for _, n in parts) == 7  # each text once, though the verifier's
    # input names each result twice (in the calls and in the journal)
    assert all(size < w.MAX_PAYLOAD_BYTES for size, _ in parts)


def test_a_single_text_a_restarted_worker_lacks_past_a_payload_stops_the_run_named(
    temporal: TemporalServer,
) -> None:
    """One result of 1,600,000 characters: the worker that made it keeps it, but a restarted one must be
    sent it, in one input over 1.5 MB, which no part can split: the run stops, saying how to fix it."""

    async def scenario() -> RunResult:
        queue = f"red-{uuid.uuid4().hex[:8]}"
        state = {"script": "ask-then-huge", "history": "off"}
        async with worker(temporal, queue) as runs:
            asked = await runs.start("fetcher", "Fetch the pages.", state=state)
            assert isinstance(asked, RunResult) and asked.reason == "need_help"
        async with worker(temporal, queue) as runs:  # a new worker: it keeps none of the run's texts
            return await asyncio.wait_for(runs.answer(asked.run_id, "Go on."), 60)

    ended = asyncio.run(scenario())
    assert (ended.reason, ended.error_type) == ("error", "payload_too_large")
    assert "the model call's input with the texts the worker lacked is 1,6" in ended.note
    assert "over the 1,500,000" in ended.note and "HistoryPolicy(max_result_chars" in ended.note


def scheduled(history: Any, name: str, long: bytes) -> list[tuple[str, int]]:
    """Each `name` activity's (task queue, times `long` is in its input) in `history`."""
    return [
        (a.task_queue.name, a.input.SerializeToString().count(long))
        for e in history.events
        if (a := e.activity_task_scheduled_event_attributes).activity_type.name == name
    ]


def test_the_parts_go_to_the_worker_that_lacked_them_whichever_of_two_takes_the_call(
    temporal: TemporalServer,
) -> None:
    """Two new workers on the queue: the model call after the answer lacks 2.1 MB of results. Each part
    goes to the own task queue of the worker that answered `missing`, so the parts add up on one worker
    (on the shared queue, each could go to the other one, which keeps none of them)."""
    state = {"script": "ask-then-check-archives", "history": "off", "max_turns": 14, "by_turn": True}
    _, there, history = across_a_restart(temporal, state, after=2)
    assert there.reason == "success"
    calls = scheduled(history, w.MODEL_CHUNKED, b"y" * 300_000)
    parts = [(queue, n) for queue, n in calls if n]
    assert len(parts) == 2 and sum(n for _, n in parts) == 7
    own = {queue for queue, _ in parts}
    assert len(own) == 1 and own.pop().startswith(calls[0][0] + "@")  # one worker's own queue


def test_parts_a_gone_worker_does_not_take_go_to_the_runs_queue(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker that lacked the texts is gone (here: it names a queue nobody polls): its part is not
    taken within the heartbeat timeout (2 s), and the parts go to the run's queue, to any worker."""
    lacking = activities.EndstateActivities._lacking

    def gone(self: activities.EndstateActivities, missing: list[str]) -> dict[str, Any]:
        return {**lacking(self, missing), "worker": "nobody-polls-this"}

    monkeypatch.setattr(activities.EndstateActivities, "_lacking", gone)
    state = {"script": "ask-then-check-archives", "history": "off", "max_turns": 14}
    _, there, history = across_a_restart(temporal, state)
    assert there.reason == "success"
    calls = scheduled(history, w.MODEL_CHUNKED, b"y" * 300_000)
    parts = [(queue, n) for queue, n in calls if n]
    shared = calls[0][0]
    # the first part is sent to the gone worker, then again to the run's queue, then the second part
    assert [queue for queue, _ in parts] == ["nobody-polls-this", shared, shared]
    assert sum(n for _, n in parts[1:]) == 7


def scheduled_tool_call(event: Any) -> bool:
    return str(event.activity_task_scheduled_event_attributes.activity_type.name) in TOOLS


def tool_done_and_its_timers_fired(events: list[Any]) -> bool:
    """The tool's activity completed, and each short timer (not the run's time budget's) has fired."""
    from temporalio.api.enums.v1 import EventType

    done = {
        e.activity_task_completed_event_attributes.scheduled_event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    }
    tool = [e.event_id for e in events if scheduled_tool_call(e)]
    if not tool or tool[0] not in done:
        return False
    fired = {e.timer_fired_event_attributes.started_event_id for e in events}
    short = [
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED
        and e.timer_started_event_attributes.start_to_fire_timeout.ToSeconds() < 60
    ]
    return all(t in fired for t in short)


async def until_history(runs: TemporalRuns, run_id: str, check: Any) -> None:
    """Wait (at most 60 s) until the run's history meets `check`."""
    handle = runs.client.get_workflow_handle(run_id)
    for _ in range(600):
        with contextlib.suppress(RPCError):  # not started yet
            if check(list((await handle.fetch_history()).events)):
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id}: its history never came to the state waited for")


def test_a_tools_result_is_kept_when_it_and_the_tools_timer_come_in_one_workflow_task(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    """The tool's activity completes in time, but no workflow worker polls (a workflow task timed out on
    a loaded machine) until the workflow's own timer for the call has fired too: both come at once. The
    worker's result settles first: the call counted, and its change to the run's state is kept (it was
    read as timed out, and the verifier then rejected the finish for a state without the change)."""
    import temporal_agents

    from agent.temporal._registry import WorkerSetup

    async def scenario() -> RunResult:
        setup = WorkerSetup(heartbeat_seconds=10.0, tool_grace=0.5)  # a 5.5 s timer
        async with split_workers(temporal, temporal_agents.catalog(), setup) as (runs, workflows):
            run_id = uuid.uuid4().hex
            state = {"script": "many", "dir": str(tmp_path), "sleep": 2}  # the worker stops meanwhile
            async with workflows():
                start = runs.start("counter", "count", state=state, run_id=run_id)
                started = asyncio.create_task(start)
                await in_history(runs, run_id, scheduled_tool_call)
            await until_history(runs, run_id, tool_done_and_its_timers_fired)
            async with workflows():  # the tool's result and its timer (old code), in one workflow task
                await asyncio.wait_for(started, 60)
                return await asyncio.wait_for(runs.result(run_id), 60)

    result = asyncio.run(scenario())
    assert (result.reason, result.verified) == ("success", True), result.note
    assert (tmp_path / f"{result.run_id}.log").read_text().splitlines() == ["start 1", "end 1"]
