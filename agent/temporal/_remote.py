"""The agent as the workflow sees it: the same loop, with calls that leave the workflow as activities.

`workflow_agent` builds an `Agent` from a run's plan whose model, tools and
verifiers run activities, whose hooks stay quiet while the workflow replays,
and whose clock (when the agent takes one) is the workflow's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import inspect
import operator
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy as TemporalRetry
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    FailureError,
    TimeoutType,
    is_cancelled_exception,
)
from temporalio.exceptions import TimeoutError as ActivityTimeout
from temporalio.workflow import ActivityCancellationType

from agent._valid import is_text, is_whole
from agent.agent import Agent
from agent.content import ToolOutput
from agent.context import CallRecord, RunContext
from agent.errors import ModelError, TransientModelError
from agent.hooks import HumanWait, RunHooks, RunInfo, RunObserver, SegmentLink, guard, hook_failed
from agent.journal import Entry
from agent.models.base import ModelReply, ModelRequest, ToolCall, call_seconds, record_cut_call
from agent.policies import RetryPolicy
from agent.prices import PriceTable
from agent.progress import ProgressDetector
from agent.result import RunResult
from agent.stops import StopReason, TurnSignal
from agent.temporal import _wire as w
from agent.temporal._registry import WorkerSetup
from agent.tools import CLEANUP_GRACE, Tool, ToolOutcome
from agent.verify import JudgeRefused

# The workflow charges a model call cut off mid-way (the time budget, a cancel) with what the worker
# reports it used; runs started before replay their model calls as they were made (see `patched`).
CUT_USAGE = "endstate-cut-model-call-usage"
# The model activity's input names long texts by digest (`_wire.MODEL_BY_DIGEST`); runs started before
# replay their model calls with the whole request in the input, as they were made.
BY_DIGEST = "endstate-model-input-by-digest"
# The verifiers' input names long texts by digest too (`_wire.VERIFY_BY_DIGEST`); runs started before
# replay their checks with the whole journal, as they were made.
VERIFY_BY_DIGEST = "endstate-verify-input-by-digest"
# Texts a worker lacks go in parts that each fit in a payload (see `by_digest`); runs started before stop
# where they stopped, past a payload, as they did.
IN_PARTS = "endstate-missing-texts-in-parts"
# A reply's `finish` is judged after its other calls (`Agent.finish_last`); runs started before take a
# reply's calls in the model's order, as they did.
FINISH_LAST = "endstate-finish-after-other-calls"
# The activity's own end (the worker cut the call, with what it used) may come in the workflow task that
# the time budget's timer fires in: the handle settles before the cut cancels it, or it ends as cancelled
# and the usage it reported is lost (Temporal's SDK cancels a handle whose result came, unread). Runs
# started before lost it, as they did.
CUT_SETTLES = "endstate-cut-call-settles-first"
# Each activity says whether the run's catalog entry's `cancel` signal is set on its worker, and the loop
# stops before its next turn when it is, as the store's runner stops it. Runs started before ignored it.
CATALOG_CANCEL = "endstate-catalog-cancel"
# A tool with no timeout of its own (`timeout=None`) runs until the run's time budget cuts it; Temporal
# needs some bound on its activity all the same.
UNBOUNDED_TOOL = timedelta(days=365)
# A tool's error result on the worker reaches the model verbatim (see `Verbatim`); runs started before
# took it as an exception, its kind written in front again, as they did.
VERBATIM_ERRORS = "endstate-tool-errors-verbatim"
# An approved call's activity runs once (Temporal would start it again on another worker when its worker
# dies mid-call: the side effect twice, nobody asked); a lost call reads as `UNSURE`, and calling the tool
# again needs a new approval. Runs started before retry it, as they did.
APPROVED_ONCE = "endstate-approved-call-runs-once"
UNSURE = (
    "Outcome unknown: the approved call was started, but its worker stopped before it reported back, so it "
    "may or may not have taken effect. Check before you call it again (a new call needs a new approval)."
)
# A lost approved call suspends the run (`ToolOutcome.lost`): a person says whether it took effect, as the
# store's runner asks when it finds one in flight. Runs started before read `UNSURE`, as they did.
LOST_CALL_ASKS = "endstate-lost-approved-call-asks-a-person"
# A tool's timeout is the worker's: the workflow sets no timer of its own for it (only the run's time budget
# bounds the call there). Its timer could fire in the workflow task that brings the call's result (a loaded
# machine, a workflow task timed out), and Temporal's SDK then cancels the handle whose result came, unread:
# the call read as timed out and its change to the run's state was lost. It also counted the time the
# activity waited for a worker. Runs started before set it (the tool's timeout and `tool_grace`), as they did.
TOOL_TIMEOUT_ON_WORKER = "endstate-tool-timeout-on-the-worker"
# A segment's span ids are planned by the workflow (from its execution's id and the segment's place in
# it), for hooks that can give a span planned ids (`plans_spans`): a replay that builds the run's result,
# with no observer live, knows the run's trace, and the span is made when the segment ends, so a workflow
# that leaves a worker's cache mid-segment leaves no span begun and never ended. Runs started before take
# their span at the first live event, as they did.
PLANNED_TRACE = "endstate-trace-planned-by-the-workflow"
# The history policy counts the images and PDFs of the results since the last reply toward the context in
# use, and prices a PDF by its pages (`HistoryPolicy.media_in_context`): a run may shrink a turn earlier,
# and a prompt the API then refused as too long (recorded) may find nothing left to shrink, ending the run
# where it went on. Runs started before judge by the last reply's tokens and price a PDF as an image, as
# they did.
MEDIA_IN_CONTEXT = "endstate-media-counted-in-context"
# The history policy counts the text of the results since the last reply toward the context in use
# (`HistoryPolicy.results_in_context`): a run may shrink a turn earlier. Runs started before, as they did.
RESULTS_IN_CONTEXT = "endstate-result-text-counted-in-context"
# A run stops, named, before its history passes Temporal's event count limit (`_wire.MAX_HISTORY_EVENTS`),
# as it stops before the size limit; runs started before went on until Temporal ended them, as they did.
HISTORY_EVENTS = "endstate-history-event-count-checked"
# A call a model that declined made (a reply an older worker parsed keeping what came before the last
# `fallback` block) is not run, even approved (`Agent.skip_declined`). Asked when such a call is met, not at
# the start: a history whose worker ran it replays as it ran, and a run that waits for its approval now
# (an older worker suspended it) does not run it once approved.
DECLINED_NOT_RUN = "endstate-declined-calls-not-run"
# A call the run is stuck on already (`Agent.skip_repeats`: made `max_repeats` times in a row with no change
# in state, and made again in the same reply) is not run. Asked when such a call is met: a history whose
# worker ran it replays as it ran.
REPEATS_NOT_RUN = "endstate-repeated-calls-not-run"
# A denied call counts toward `no_progress` as a repeat (`Agent.count_denials`): the same call denied
# `max_repeats` times ends the run. Asked at each denial: a history whose worker asked again replays so.
DENIALS_REPEAT = "endstate-denied-calls-repeat"
# A run's active time is the time its calls ran on a worker (each activity says how long: `_wire.RAN`) and the
# workflow's own time between them, not the time a call or the workflow task after it waited for a worker
# (every worker down or redeploying, a backlog on the task queue), which the store's runner does not count
# either. Runs started before count the workflow's time, as they did.
# The same runs take a call's answer that came in the workflow task in which the loop's budget timer fired
# (the answer waited for a worker longer than the time left): it came before the budget ran out on a worker.
WORKER_TIME = "endstate-active-time-ran-on-workers"
# A reply a server-side fallback served counts every attempt's tokens (the usage's iterations: its top-level
# counts may give the answering attempt's alone), so a token budget may stop a run a turn earlier than it
# did. Runs started before count the reply's own counts, as they did.
EVERY_ATTEMPT = "endstate-every-fallback-attempt-counted"
# The model activity's input names the journal's settled prefix by the digests of a tree of chunks
# (`_wire.CHUNK`, `_wire.MODEL_CHUNKED`), not its entries: a run's history grew with every turn's whole
# journal. Runs started before replay their model calls with the whole journal, as they were made.
CHUNKED = "endstate-journal-prefix-in-chunks"
# A tool that takes the context names the run's earlier calls the same way (`_wire.TOOL_CHUNKED`); runs
# started before replay their tool calls with every call in the input, as they were made.
CALLS_CHUNKED = "endstate-calls-prefix-in-chunks"
# The verifiers' input names both so (`_wire.VERIFY_CHUNKED`): a long run's whole journal passed a payload.
# Runs started before replay their checks with every entry and call, as they were made.
VERIFY_CHUNKED = "endstate-verify-input-in-chunks"
# A verification's answer that came in the workflow task in which the loop's budget timer fired (the task
# waited for a worker past the time left) is taken, as a model or tool call's is (`WORKER_TIME`): it passed
# in time on its worker. Runs started before stop `limit`/`seconds` there, as they did.
VERIFY_TAKEN = "endstate-verify-answer-taken-at-the-budget"
# A call the loop's time budget cut while it had not run that long on a worker (it waited for one: every
# worker busy or away) is not cut there: the workflow asks Temporal whether and when it started (a local
# activity, `_wire.CALL_STATE`, only at such a cut) and waits on while it has run less than the time the run
# had left for it, as the time a call waits for a worker is not the run's (`WORKER_TIME`). A call past its
# first attempt (its worker died) is cut as before. Runs started before cut the call at the timer, as they
# did.
QUEUE_NOT_COUNTED = "endstate-time-queued-for-a-worker-not-counted"
# The time a retry's backoff timer, once fired, waited for a worker to take the workflow's next step is left
# out of the run's active time, as a call's wait is (`WORKER_TIME`); the backoff itself counts, as in one
# process. Runs started before count it, as they did.
BACKOFF_WAIT = "endstate-backoff-wait-for-a-worker-not-counted"
# A worker whose catalog lacks the run's agent (or task type) refuses its calls as retryable, until its
# `catalog_wait` is spent (`_wire.CATALOG_WAIT`), so that one that has it takes them (a rolling deploy): each
# call that builds the agent makes room in its retry policy for those refusals (`_wire.refusals_within`),
# besides its own attempts. Runs started before keep their attempts, a refusal spending one.
CATALOG_ROOM = "endstate-room-for-catalog-refusals"
CALL_STATE_TIMEOUT = timedelta(seconds=10)
MAX_ATTEMPTS = 2**31 - 1  # Temporal's bound on a retry policy's attempts (an int32)
ANSWER_GRACE = 5.0  # seconds to wait for an answer Temporal already has (no longer pending)
NO_TIME_LEFT = 0.001  # seconds: what a model call is sent when the run has no time left
MAX_SENDS = 3  # times one call sends a text its workers lack before the run stops (see `by_digest`)
LACKED = " with the texts the worker lacked"
_PY_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


@dataclasses.dataclass
class RunRef:
    """What every activity needs to find the run's agent on its worker."""

    run_id: str
    agent: str
    task: str
    task_type: str
    state: dict[str, Any]
    fingerprint: str | None = None  # the state fingerprint after the last tool call
    too_large: PayloadTooLarge | None = None  # why a call was not sent: the next model call stops the run
    digests: dict[str, str] = dataclasses.field(default_factory=dict)  # of each long text sent, by text
    sizes: dict[str, int] = dataclasses.field(default_factory=dict)  # of each long text in full, by digest
    cap: int | None = None  # the history policy's `max_result_chars`: the worker keeps results so cut too
    check_cancel: bool = False  # each activity says whether the catalog's cancel is set (`CATALOG_CANCEL`)
    cancelled: bool = False  # it was, at the last activity that said: the loop stops before its next turn
    worker_time: bool = False  # active time leaves out the time calls waited for a worker (`WORKER_TIME`)
    waited: float = 0.0  # seconds of the workflow's time the run's calls waited for a worker
    cut: bool = False  # the segment is being cut (a cancel's grace ran out): a call's answer is not taken
    leaves: dict[tuple[str, int], Leaf] = dataclasses.field(default_factory=dict)  # chunks (`chunked`)
    nodes_sent: set[str] = dataclasses.field(default_factory=set)  # the chunk tree's nodes sent to a worker

    def wire(self, state: dict[str, Any] | None = None) -> dict[str, Any]:
        fields = {"run_id", "agent", "task", "task_type"}
        asks = {"check_cancel": True} if self.check_cancel else {}
        sent = self.state if state is None else state  # a state a tool emptied goes empty, not as it began
        return {k: v for k, v in vars(self).items() if k in fields} | {"state": sent} | asks

    def active(self) -> float:
        """The run's clock for its active time: the workflow's, less the time its calls waited."""
        return workflow.time() - self.waited

    def timed(self, began: float, out: Any) -> Any:
        """An activity's answer (scheduled at `began`, the workflow's time) without `ran`; the time from
        `began` to now that it did not run on its worker is left out of active time (`WORKER_TIME`)."""
        if not isinstance(out, dict) or w.RAN not in out:
            return out
        out = dict(out)
        ran = out.pop(w.RAN)
        if self.worker_time and isinstance(ran, int | float) and not isinstance(ran, bool) and ran >= 0:
            self.waited += max(0.0, workflow.time() - began - ran)
        return out

    def told(self, out: dict[str, Any]) -> dict[str, Any]:
        """An activity's answer without its `cancel` (see `CATALOG_CANCEL`), which it keeps."""
        if "cancel" in out:
            self.cancelled = bool(out.pop("cancel"))
        return out

    def digested(self, item: dict[str, Any], key: str, inline: set[str] | None) -> dict[str, Any]:
        """`item` with its value at `key` (a text, or a provider's block as JSON), if long, sent by its
        digest (`key` None, `digest` set, `json` for a block), unless the digest is in `inline` (None:
        every value in full; a `Once`: at its first place only). A text's digest is computed once."""
        value = item.get(key)
        if inline is None or (text := w.kept_text(value)) is None or len(text) <= w.INLINE_RESULT:
            return item
        digest = self.digests.get(text)
        if digest is None:
            digest = self.digests[text] = w.result_digest(text)
            self.sizes[digest] = w.payload_size(value)
        if digest in inline:
            if isinstance(inline, Once):
                inline.discard(digest)
            return item
        return w.named_by(item, key, digest)

    def calls_wire(self, calls: list[CallRecord], inline: set[str] | None) -> list[dict[str, Any]]:
        """The run's calls for a tool's input, each long result by its digest (see `digested`)."""
        return [self.digested(vars(record), "result", inline) for record in calls]

    def journal_wire(self, journal: Sequence[Entry], inline: set[str] | None) -> list[dict[str, Any]]:
        """A journal for an activity's input, each long text (a tool result, a reply's text or provider
        block, the task, a note) by its digest (see `digested`)."""
        encoded = w.journal_json(journal)
        return w.texts_mapped(encoded, lambda item, key: self.digested(item, key, inline))

    def request_wire(self, request: ModelRequest, inline: set[str] | None) -> dict[str, Any]:
        """A model request for the model's input, its journal's long texts by digest."""
        return w.request_json(request, self.journal_wire(request.journal, inline))

    def chunked_request_wire(self, request: ModelRequest, inline: set[str] | None) -> dict[str, Any]:
        """A model request for the chunked model's input (`_wire.MODEL_CHUNKED`): its journal's whole
        chunks named by the roots of their tree (`prefix`), the rest as `request_wire` sends it; the
        definitions of the tree's nodes in `inline` or never sent (`nodes`; see `_sent`), those of chunks
        with their long texts in `inline` in full."""
        roots, nodes, settled = self.chunked("journal", request.journal, inline)
        tail = self.journal_wire(request.journal[settled:], inline)
        return w.request_json(request, tail) | {"prefix": roots, "nodes": nodes}

    def chunked_calls_wire(self, calls: list[CallRecord], inline: set[str] | None) -> dict[str, Any]:
        """The run's calls for a chunked tool's input (`_wire.TOOL_CHUNKED`), as `chunked_request_wire`
        sends a journal: `calls_prefix`, `nodes`, and the rest (`calls`) as `calls_wire` sends it."""
        roots, nodes, settled = self.chunked("calls", calls, inline)
        return {"calls": self.calls_wire(calls[settled:], inline), "calls_prefix": roots, "nodes": nodes}

    def chunked(
        self, kind: str, items: Sequence[Any], inline: set[str] | None
    ) -> tuple[list[str], dict[str, Any], int]:
        """The roots naming the whole chunks of `items` (journal entries, or calls: `kind`), the nodes'
        definitions to send (see `_sent`), and how many items the chunks hold."""
        settled = len(items) // w.CHUNK * w.CHUNK
        leaves = [self.leaf(kind, items, start) for start in range(0, settled, w.CHUNK)]
        roots, inner = w.chunk_tree([leaf.digest for leaf in leaves])
        nodes: dict[str, Any] = {}
        room = [w.MAX_PAYLOAD_BYTES // 4]  # for the nodes never sent (see `_sent`)
        for digest, children in inner.items():
            if self._sent(digest, {"chunks": children}, inline, room):
                nodes[digest] = {"chunks": children}
        for leaf in leaves:
            if self._sent(leaf.digest, {"entries": leaf.named}, inline, room):
                nodes[leaf.digest] = {"entries": self._mapped(kind, leaf.encoded, inline)}
        return roots, nodes, settled

    def _mapped(
        self, kind: str, encoded: list[dict[str, Any]], inline: set[str] | None
    ) -> list[dict[str, Any]]:
        """Encoded journal entries or calls, each long text by digest unless in `inline` (`digested`)."""
        if kind == "calls":
            return [self.digested(record, "result", inline) for record in encoded]
        return w.texts_mapped(encoded, lambda item, key: self.digested(item, key, inline))

    def leaf(self, kind: str, items: Sequence[Any], start: int) -> Leaf:
        """The chunk of `items` from `start`, kept while its items are the same objects."""
        chunk, leaf = tuple(items[start : start + w.CHUNK]), self.leaves.get((kind, start))
        if leaf is None or not all(map(operator.is_, leaf.entries, chunk)):  # a whole chunk: same length
            encoded = [dict(vars(c)) for c in chunk] if kind == "calls" else w.journal_json(chunk)
            named = self._mapped(kind, encoded, set())
            leaf = self.leaves[kind, start] = Leaf(chunk, encoded, named, w.node_digest({"entries": named}))
        return leaf

    def _sent(
        self, digest: str, definition: dict[str, Any], inline: set[str] | None, room: list[int]
    ) -> bool:
        """Whether a node's definition goes in the input: its digest is in `inline` (None: every one), or
        it was never sent and fits in what is left of `room` (bytes, a one-item list), so that a worker
        keeps it and the next call that names it needs no round trip; a run resumed in a new execution
        sends the rest as a worker asks for them, in parts. Its size is known from then on."""
        if digest not in self.sizes:
            self.sizes[digest] = w.payload_size(definition)
        if inline is not None and digest in inline:
            if isinstance(inline, Once):
                inline.discard(digest)
        elif inline is not None and (digest in self.nodes_sent or self.sizes[digest] > room[0]):
            return False
        elif inline is not None:
            room[0] -= self.sizes[digest]
        self.nodes_sent.add(digest)
        return True

    def part(self, lacking: list[str], room: int) -> set[str]:
        """The texts of `lacking` to send in full next: as many as fit in `room` bytes, in order. A text
        that alone does not fit is sent alone: its input is refused, naming its size."""
        part, used = set(), 0
        for digest in lacking:
            cost = self.sizes.get(digest, 0)
            if cost > room:
                return {digest}
            if used + cost <= room:
                part.add(digest)
                used += cost
        return part


@dataclasses.dataclass(frozen=True)
class Leaf:
    """A chunk of the journal or of the calls (`_wire.CHUNK` of them): the items, encoded, with long texts
    by digest (`named`, its definition's), and its digest."""

    entries: tuple[Any, ...]  # journal entries or calls
    encoded: list[dict[str, Any]]
    named: list[dict[str, Any]]
    digest: str


class Once(set[str]):
    """Digests whose texts an input sends in full at their first place only (`RunRef.digested`): the
    worker keeps a text it is sent, and takes it from there for the other places."""


Build = Callable[[set[str] | None], dict[str, Any]]
Send = Callable[[dict[str, Any], str | None], Awaitable[dict[str, Any]]]


async def by_digest(ref: RunRef, build: Build, send: Send, what: str) -> dict[str, Any]:
    """What an activity whose input names long texts by digest answered.

    `build(set())` is the input with every long text by digest, `build(inline)`
    with those in `inline` in full; `send(input, queue)` runs the activity on
    `queue` (None: the run's task queue). A worker that lacks texts (it did not
    make them, and was not sent them) answers `{"missing": [...], "worker": its
    own task queue}` without making the call; it is sent them on its own queue,
    in parts that each fit in one payload, keeping each, until it lacks none. If
    it does not take a part in time (it is gone), the parts go to the run's task
    queue. Every input is checked first (`too_large`); a text lacked again after
    `MAX_SENDS` sends stops the run too: `PayloadTooLarge`.
    """
    first = build(set())
    out = await send(_checked(first, what), None)
    if not out.get("missing"):
        return out
    if not workflow.patched(IN_PARTS):  # a run started before replays its calls as they were made
        return await _whole(build, send, what, out["missing"])
    room, queue = w.MAX_PAYLOAD_BYTES - w.payload_size(first), out.get("worker")
    named: dict[str, None] = {}  # every text a worker lacked in this call
    sent: Counter[str] = Counter()
    while missing := out.get("missing"):
        if lost := [d for d in missing if sent[d] >= MAX_SENDS]:
            raise _lost(what, len(lost), sum(ref.sizes.get(d, 0) for d in lost))
        named.update(dict.fromkeys(missing))
        part = ref.part(list(named), room)  # all of them if they fit: whichever worker takes it
        if len(part) < len(named):
            part = ref.part(missing, room)
        sent.update(part)
        try:
            out = await send(_checked(build(Once(part)), what + LACKED), queue)
        except NotTaken:  # that worker is gone: the same texts go to any worker of the run's queue
            queue = None
    return out


async def _whole(build: Build, send: Send, what: str, missing: list[str]) -> dict[str, Any]:
    """The texts a worker lacked as runs started before `IN_PARTS` sent them: all at once; if the
    worker then lacks others (another worker took the call), every text in full."""
    out = await send(_checked(build(set(missing)), what + LACKED), None)
    if out.get("missing"):
        out = await send(_checked(build(None), what), None)
    return out


class NotTaken(Exception):
    """No worker took an activity sent to one worker's own task queue in time: that worker is gone."""


def pinned(queue: str | None, setup: WorkerSetup) -> dict[str, Any]:
    """The activity options that send it to one worker's own task queue (None: the run's): taken within
    the heartbeat timeout, or `NotTaken`."""
    if queue is None:
        return {}
    return {"task_queue": queue, "schedule_to_start_timeout": timedelta(seconds=setup.heartbeat_seconds)}


def _not_taken(exc: ActivityError) -> bool:
    cause = exc.cause
    return isinstance(cause, ActivityTimeout) and cause.type == TimeoutType.SCHEDULE_TO_START


def _loop_error(exc: ActivityError) -> BaseException | None:
    """What an activity's failure is to the loop: the workflow's cancellation, or `NotTaken` (sent
    to a worker that is gone); None for any other failure."""
    if is_cancelled_exception(exc):
        return asyncio.CancelledError()
    if _not_taken(exc):
        return NotTaken()
    return None


def _checked(payload: dict[str, Any], what: str) -> dict[str, Any]:
    if (cannot := too_large(payload, what)) is not None:
        raise cannot
    return payload


def _lost(what: str, count: int, size: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"{what}{LACKED}: {count} of them ({size:,} bytes) were sent {MAX_SENDS} times, in parts of at "
        f"most {w.MAX_PAYLOAD_BYTES:,} bytes, and its workers still lacked them (each part went to a worker "
        "that did not keep it): cap what the model is sent (HistoryPolicy(max_result_chars=...)), keep "
        "tool results small, or run this agent on the PostgreSQL store",
        "payload_too_large",
    )


def workflow_agent(plan: dict[str, Any], ref: RunRef, setup: WorkerSetup) -> Agent:
    """The run's agent inside the workflow, from the plan it started with."""
    retry, history = w.retry_of(plan), w.history_of(plan)
    ref.worker_time = workflow.patched(WORKER_TIME)
    history = dataclasses.replace(
        history,
        media_in_context=workflow.patched(MEDIA_IN_CONTEXT),
        results_in_context=workflow.patched(RESULTS_IN_CONTEXT),
    )
    ref.cap = history.max_result_chars if history.enabled else None
    model = ActivityModel(plan["model"], plan["provider"], ref, setup, retry, plan.get("context_window"))
    price = w.planned_price(plan)
    prices = PriceTable(
        {plan["model"]: price} if price else None, every_attempt=workflow.patched(EVERY_ATTEMPT)
    )
    options: dict[str, Any] = {
        "name": plan["agent"],
        "model": model,
        "instructions": plan["instructions"],
        "tools": [_tool(spec, ref, setup, retry) for spec in plan["tools"]],
        "verifiers": [RemoteVerifier(ref, setup, plan.get("verify_seconds"))] if plan["verifiers"] else [],
        "budget": w.budget_of(plan),
        "task_type": plan["task_type"],
        "help": w.help_of(plan),
        "retry": retry,
        "prices": prices,
        "hooks": ReplaySafeHooks(setup.hooks),
        "history": history,
        "max_tokens": plan["max_tokens"],
        "finish_last": workflow.patched(FINISH_LAST) and plan.get("finish_last", True),
        "skip_declined": functools.partial(workflow.patched, DECLINED_NOT_RUN),  # asked when one is met
        "skip_repeats": functools.partial(workflow.patched, REPEATS_NOT_RUN),  # asked when one is met
        "count_denials": functools.partial(workflow.patched, DENIALS_REPEAT),  # asked at each denial
    }
    if plan["progress"] is not None:
        options["progress"] = functools.partial(ProgressDetector, **plan["progress"])
    if plan["fingerprint"]:
        options["fingerprint"] = lambda ctx: ref.fingerprint or ""
    return Agent(**options, clock=WorkflowClock(ref))


class WorkflowClock:
    """Time as the workflow knows it: the same on every replay. Its monotonic time, the run's active
    time, leaves out the time the run's calls waited for a worker, for a run started with
    `WORKER_TIME` (for one started before, `ref.waited` stays 0: the workflow's time, as it was)."""

    def __init__(self, ref: RunRef | None = None) -> None:
        self._ref = ref

    def time(self) -> float:
        return workflow.now().timestamp()

    def monotonic(self) -> float:
        return workflow.time() if self._ref is None else self._ref.active()

    async def sleep(self, seconds: float) -> None:
        """A durable timer of `seconds`; the time its end then waited for a worker to take the
        workflow's next step is left out of the run's active time (`BACKOFF_WAIT`)."""
        began = workflow.time()
        await asyncio.sleep(seconds)
        if self._ref is not None and self._ref.worker_time and workflow.patched(BACKOFF_WAIT):
            self._ref.waited += max(0.0, workflow.time() - began - seconds)


def now() -> float:
    return workflow.now().timestamp()


# -- retries and timeouts ---------------------------------------------------------------------------


def temporal_retry(retry: RetryPolicy) -> TemporalRetry:
    """Temporal retries what the loop cannot see (a worker gone mid-call), with the agent's backoff."""
    return TemporalRetry(
        initial_interval=_window(max(retry.base_delay, 0.001)),
        maximum_interval=_window(max(retry.max_delay, retry.base_delay, 0.001)),
        maximum_attempts=retry.max_attempts,
    )


def catalog_room(policy: TemporalRetry, setup: WorkerSetup) -> TemporalRetry:
    """`policy`, with room for the attempts workers lacking the run's agent refuse (`CATALOG_ROOM`)."""
    if not policy.maximum_attempts or not workflow.patched(CATALOG_ROOM):  # 0: no bound to make room in
        return policy
    more = w.refusals_within(setup.catalog_wait)
    return dataclasses.replace(policy, maximum_attempts=min(policy.maximum_attempts + more, MAX_ATTEMPTS))


async def settled(ref: RunRef, handle: workflow.ActivityHandle[Any]) -> Any:
    """The activity's answer. Cut by the loop's time budget (`WORKER_TIME`), it is taken all the same
    when it came in the workflow task the budget's timer fired in: the time the run waited for a worker
    is not the run's, and the call ran within its time (its worker measured it: `_wire.RAN`). Else the
    activity is cancelled, and the cut goes on up."""
    began = workflow.time()
    try:
        return await asyncio.shield(handle)
    except asyncio.CancelledError:
        if (came := await answer_came(ref, handle)) is not None:
            return came
        if await ran_in_time(ref, handle, began):
            return handle.result()
        handle.cancel()
        handle.add_done_callback(_read)  # its failure is the cut's: read, so none is logged as lost
        raise
    except ActivityError as exc:
        if (failure := _loop_error(exc)) is not None:
            raise failure from exc
        raise


def _read(handle: workflow.ActivityHandle[Any]) -> None:
    if not handle.cancelled():
        handle.exception()


async def answer_came(ref: RunRef, handle: workflow.ActivityHandle[Any]) -> Any:
    """The answer of a call the loop's budget cut, when it came in the workflow task the cut came in
    (see `WORKER_TIME`); None when it did not, or the segment itself is being cut (before, or while
    this waits: that cut is the caller's to carry on, once it has cancelled the call)."""
    if ref.cut:
        return None
    if not handle.done():
        try:
            await workflow.wait_condition(
                lambda: True
            )  # the answer in this task settles: no timer, no command
        except asyncio.CancelledError:  # the segment cut now (a cancel's grace ran out in this task too)
            return None
    if handle.done() and not handle.cancelled() and handle.exception() is None:
        return handle.result()
    return None


async def _activity_end(handle: workflow.ActivityHandle[Any]) -> Any:
    """A started activity's answer, as `_activity` gives it (a cut cancels the activity)."""
    try:
        return await handle
    except ActivityError as exc:
        if (failure := _loop_error(exc)) is not None:
            raise failure from exc
        raise


async def ran_in_time(
    ref: RunRef, handle: workflow.ActivityHandle[Any], began: float, budget: float | None = None
) -> bool:
    """At the budget's cut of a call not yet answered (`QUEUE_NOT_COUNTED`): wait on while the call has
    run on a worker less than `budget` seconds (None: as long as from `began`, when it was scheduled, to
    the cut). True once it answered in that time; False when it ran past it (the time it waited for a
    worker left out of the run's), or the segment is cut."""
    if ref.cut or not ref.worker_time or not workflow.patched(QUEUE_NOT_COUNTED):
        return False
    budget = workflow.time() - began if budget is None else budget
    if budget <= NO_TIME_LEFT:  # the call began with none left: cut at once, as in one process
        return False
    if (activity_id := _activity_id(handle)) is None:  # the SDK no longer shows it: cut, as documented
        workflow.logger.warning("could not read the id of a call the time budget cut (the SDK's): it is cut")
        return False
    try:
        started = await _run_on(handle, activity_id, budget)
    except asyncio.CancelledError:  # the segment is cut meanwhile: that cut is the caller's to carry on
        return False
    except FailureError:  # Temporal did not say (the worker may not describe workflows): cut, as before
        workflow.logger.warning("could not read whether a call the time budget cut had started: it is cut")
        return False
    if handle.done() and not handle.cancelled() and handle.exception() is None:
        return True  # its time waiting for a worker is left out with its answer (`RunRef.timed`)
    if started is not None:
        ref.waited += max(0.0, started - began)
    return False


async def _run_on(handle: workflow.ActivityHandle[Any], activity_id: str, budget: float) -> float | None:
    """Wait on the call while it has run on a worker less than `budget` seconds; when it started (None:
    not known to have)."""
    started: float | None = None
    while not handle.done():
        state = await _call_state(activity_id)
        if not state["pending"]:  # its answer is on the way
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(handle.done, timeout=ANSWER_GRACE)
            break
        started = state["started"]
        if (left := _time_to_run(state, budget)) <= 0:
            break
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(handle.done, timeout=left)
    return started


def _time_to_run(state: dict[str, Any], budget: float) -> float:
    """How long a pending call may still run within `budget`: all of it while it waits for a worker,
    nothing past its first attempt (the attempts before ran for a time not known here)."""
    if state["attempt"] > 1:
        return 0.0
    return budget if state["started"] is None else budget - (workflow.time() - state["started"])


async def _call_state(activity_id: str) -> dict[str, Any]:
    """Whether Temporal holds the call pending, its attempt, and when it started (None: not yet)."""
    state: dict[str, Any] = await workflow.execute_local_activity(
        w.CALL_STATE,
        {"activity_id": activity_id},
        start_to_close_timeout=CALL_STATE_TIMEOUT,
        retry_policy=TemporalRetry(maximum_attempts=3),
    )
    return state


def _activity_id(handle: workflow.ActivityHandle[Any]) -> str | None:
    """The id Temporal knows the activity by: the one it was given, else its sequence number in the
    workflow (as Temporal's SDK 1.x sets it); None when the handle no longer shows either. The SDK has
    no public way to read it (`ActivityHandle` is a bare task): these are its private fields, read so
    that an SDK that changes them makes the call cut at the budget, as documented, never a failed task."""
    given = getattr(getattr(handle, "_input", None), "activity_id", None)
    if is_text(given) and given:
        return given
    seq = getattr(handle, "_seq", None)
    return str(seq) if is_whole(seq) else None


async def _activity(name: str, arg: Any, **options: Any) -> Any:
    """Run an activity; its cancellation (the workflow's) reaches the loop as cancellation, and one sent
    to a worker that is gone (`pinned`) raises `NotTaken`."""
    try:
        return await workflow.execute_activity(name, arg, **options)
    except ActivityError as exc:
        if (failure := _loop_error(exc)) is not None:
            raise failure from exc
        raise


class PayloadTooLarge(Exception):
    """An activity's input that Temporal would refuse, or a workflow history near its limit."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def too_large(value: Any, what: str) -> PayloadTooLarge | None:
    """Why `value` cannot go out as an activity's input (too large, or the history too long), or None."""
    size = w.payload_size(value)
    if size > w.MAX_PAYLOAD_BYTES:
        return PayloadTooLarge(
            f"{what} is {size:,} bytes, over the {w.MAX_PAYLOAD_BYTES:,} an Endstate run sends in one "
            "Temporal payload (the server refuses more than its blob size limit, 2 MiB by default): "
            "cap what the model is sent (HistoryPolicy(max_result_chars=...)), keep tool results and "
            "state small, or run this agent on the PostgreSQL store",
            "payload_too_large",
        )
    return _history_too_large()


def _history_too_large() -> PayloadTooLarge | None:
    """Why the workflow's history cannot grow on (near Temporal's size or event count limit), or None."""
    history = workflow.info().get_current_history_size()
    if history > w.MAX_HISTORY_BYTES:
        return PayloadTooLarge(
            f"the workflow's history is {history:,} bytes, over the {w.MAX_HISTORY_BYTES:,} an Endstate "
            "run lets it reach (Temporal ends a workflow past its history size limit, 50 MB by "
            "default, with no result): cap what the model is sent and what tools return, lower "
            "max_turns, or run this agent on the PostgreSQL store",
            "history_too_large",
        )
    events = workflow.info().get_current_history_length()
    if events > w.MAX_HISTORY_EVENTS and workflow.patched(HISTORY_EVENTS):
        return PayloadTooLarge(
            f"the workflow's history has {events:,} events, over the {w.MAX_HISTORY_EVENTS:,} an Endstate "
            "run lets it reach (Temporal ends a workflow past its history count limit, 51,200 events by "
            "default, with no result; each turn takes about a dozen, more with more calls): lower "
            "max_turns, or run this agent on the PostgreSQL store",
            "history_too_large",
        )
    return None


def _cause(exc: ActivityError) -> ApplicationError | None:
    return exc.cause if isinstance(exc.cause, ApplicationError) else None


# -- the model ----------------------------------------------------------------------------------------


class ActivityModel:
    """A model whose every call is an activity; errors come back as the loop knows them."""

    def __init__(
        self,
        name: str,
        provider: str,
        ref: RunRef,
        setup: WorkerSetup,
        retry: RetryPolicy,
        context_window: int | None = None,
    ) -> None:
        self._name, self._provider, self._ref, self._setup, self._retry = name, provider, ref, setup, retry
        self.context_window = context_window  # the worker's model's, as planned

    @property
    def name(self) -> str:
        return self._name

    @property
    def provider(self) -> str:
        return self._provider

    async def complete(self, request: ModelRequest) -> ModelReply:
        if self._ref.too_large is not None:
            raise ModelError(str(self._ref.too_large), error_type=self._ref.too_large.error_type)
        if not workflow.patched(BY_DIGEST):  # a run started before replays its model calls as they were
            return await self._in_full(request)
        seconds, began = call_seconds(), self._ref.active()
        chunked = workflow.patched(CHUNKED)
        wire = self._ref.chunked_request_wire if chunked else self._ref.request_wire

        def build(inline: set[str] | None) -> dict[str, Any]:
            return {"run": self._ref.wire(), "request": wire(request, inline)}

        async def send(call: dict[str, Any], queue: str | None) -> dict[str, Any]:
            if seconds is not None:  # the worker cuts the call there too, and reports what it used
                call = {**call, "seconds": max(seconds - (self._ref.active() - began), NO_TIME_LEFT)}
            return await self._started(w.MODEL_CHUNKED if chunked else w.MODEL_BY_DIGEST, call, queue)

        try:
            return w.reply_from_json(await by_digest(self._ref, build, send, "the model call's input"))
        except PayloadTooLarge as cannot:
            raise ModelError(str(cannot), error_type=cannot.error_type) from None

    async def _in_full(self, request: ModelRequest) -> ModelReply:
        """The model call as the workflow made it before `BY_DIGEST`: the whole request in its input."""
        call: dict[str, Any] = {"run": self._ref.wire(), "request": w.request_json(request)}
        if (cannot := too_large(call, "the model call's input")) is not None:
            raise ModelError(str(cannot), error_type=cannot.error_type)
        if not workflow.patched(CUT_USAGE):  # a run started before cut calls were charged replays as it ran
            return await self._unpatched(call)
        if (seconds := call_seconds()) is not None:
            call["seconds"] = seconds  # the worker cuts the call there too, and reports what it used
        return w.reply_from_json(await self._started(w.MODEL, call))

    async def _started(self, name: str, call: dict[str, Any], queue: str | None = None) -> dict[str, Any]:
        """The model activity's answer (on `queue`: see `pinned`); a cut (the time budget) leaves it
        running, to report its usage."""
        began = workflow.time()
        handle = workflow.start_activity(
            name,
            call,
            start_to_close_timeout=timedelta(seconds=self._setup.model_timeout),
            heartbeat_timeout=timedelta(seconds=self._setup.heartbeat_seconds),
            retry_policy=catalog_room(temporal_retry(self._retry), self._setup),
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            **pinned(queue, self._setup),
        )
        try:
            answer: dict[str, Any] = self._ref.told(self._ref.timed(began, await asyncio.shield(handle)))
        except asyncio.CancelledError:
            if self._ref.worker_time and (came := await answer_came(self._ref, handle)) is not None:
                return self._ref.told(self._ref.timed(began, dict(came)))
            if await ran_in_time(self._ref, handle, began, call.get("seconds")):
                return self._ref.told(self._ref.timed(began, dict(handle.result())))
            await self._cut(handle)
            raise
        except ActivityError as exc:
            if (failure := _loop_error(exc)) is not None:
                raise failure from exc
            if (cause := _cause(exc)) is not None and cause.type == "CutOff":
                _record_cut(cause)  # the worker's deadline came first: the loop's own timer cuts it now
                await workflow.wait_condition(lambda: False)
            raise _model_error(exc) from exc
        return answer

    async def _cut(self, handle: workflow.ActivityHandle[Any]) -> None:
        """The call was cut (the time budget, or the workflow cancelled): cancel the activity and
        wait, at most `cut_grace` seconds, for the usage it reports, recorded for the loop to charge."""
        if not handle.done() and workflow.patched(CUT_SETTLES):
            await workflow.wait_condition(lambda: True)  # see `CUT_SETTLES`: no timer, no command
        if not handle.done():
            handle.cancel()
            try:
                await workflow.wait_condition(handle.done, timeout=self._setup.cut_grace)
            except TimeoutError:
                workflow.logger.warning("a cut model call did not report its usage: it is not charged")
                return
        if handle.cancelled():
            return
        # a reply that came as the budget ran out is dropped, as the loop drops it; its usage is kept
        if (exc := handle.exception()) is None:
            if "missing" not in handle.result():  # a worker lacking texts made no call
                record_cut_call(w.reply_from_json(self._ref.told(dict(handle.result()))))
        elif isinstance(exc, ActivityError) and (cause := _cause(exc)) is not None:
            _record_cut(cause)

    async def _unpatched(self, call: dict[str, Any]) -> ModelReply:
        """The model call as the workflow made it before `CUT_USAGE`: a cut call's usage was lost."""
        try:
            reply = await _activity(
                w.MODEL,
                call,
                start_to_close_timeout=timedelta(seconds=self._setup.model_timeout),
                heartbeat_timeout=timedelta(seconds=self._setup.heartbeat_seconds),
                retry_policy=temporal_retry(self._retry),
            )
        except ActivityError as exc:
            raise _model_error(exc) from exc
        return w.reply_from_json(reply)


def _record_cut(cause: ApplicationError) -> None:
    """Record the usage of the calls that broke off mid-way, for the loop to charge."""
    details = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
    for partial in details.get("cut") or ():
        record_cut_call(w.reply_from_json(partial))


def _model_error(exc: ActivityError) -> Exception:
    """The loop's error for a failed model activity; the usage of a call that broke off mid-way is
    recorded, so the loop charges it as it would in one process."""
    cause = _cause(exc)
    if cause is None:
        return TransientModelError(f"the model activity failed: {exc.cause or exc}", error_type="activity")
    details = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
    _record_cut(cause)
    if cause.type == "TransientModelError":
        retry_after = details.get("retry_after")
        return TransientModelError(
            cause.message, error_type=details.get("error_type"), retry_after=retry_after
        )
    if cause.type == "ModelError":
        return ModelError(cause.message, error_type=details.get("error_type"))
    return _named_error(cause.type or "Exception", cause.message)


def _named_error(name: str, message: str) -> Exception:
    """An exception whose type name is `name`, so the loop reports the worker's error as it was (a
    judge's refusal as itself: the loop ends the run on it as on its own model's refusal)."""
    if name == JudgeRefused.__name__:
        return JudgeRefused(message)
    return type(name, (Exception,), {})(message)


# -- tools ----------------------------------------------------------------------------------------


def _tool(spec: dict[str, Any], ref: RunRef, setup: WorkerSetup, retry: RetryPolicy) -> Tool:
    """A tool with the planned name, schema and approval, whose body is an activity.

    The activity applies the tool's own timeout, so the result (or the timeout)
    is the worker's: the workflow sets no timer for it (see
    `TOOL_TIMEOUT_ON_WORKER`), and bounds the call by the run's time budget
    only, as it bounds a tool with no timeout of its own (None). The activity
    outlives the tool's timeout by `2 * tool_grace`, and by the tool's
    `cleanup_seconds` past the default grace they hold: Temporal ending the
    activity mid-cleanup would start the tool again (`UNBOUNDED_TOOL` for None;
    heartbeats still find a dead worker).
    """
    timeout = None if spec["timeout"] is None else float(spec["timeout"])
    waited = UNBOUNDED_TOOL if timeout is None else _tool_window(timeout, spec, setup)
    timer = None  # the worker's timeout only (see `TOOL_TIMEOUT_ON_WORKER`), or as runs started before:
    if timeout is not None and not workflow.patched(TOOL_TIMEOUT_ON_WORKER):
        timer = timeout + setup.tool_grace
    # Only a tool that takes the context can read the run's earlier calls: another one's input leaves
    # them out, or each call's input would hold every result before it (a history quadratic in turns).
    reads_calls = spec.get("wants_ctx", True)

    def built(
        ctx: RunContext, arguments: dict[str, Any], chunked: bool, inline: set[str] | None
    ) -> dict[str, Any]:
        if chunked:  # the calls by chunks (see `CALLS_CHUNKED`)
            calls = ref.chunked_calls_wire(ctx.calls, inline)
        else:
            calls = {"calls": ref.calls_wire(ctx.calls, inline) if reads_calls else []}
        return {
            "run": ref.wire(ctx.state),
            "name": spec["name"],
            "arguments": arguments,
            **calls,
            "call_id": ctx.call_id,
            "cap": ref.cap,
        }

    async def send(payload: dict[str, Any], queue: str | None, once: bool, chunked: bool) -> dict[str, Any]:
        # an approved call runs once: a refusal (a worker lacking the agent) ends it as any failure does
        policy = TemporalRetry(maximum_attempts=1) if once else catalog_room(temporal_retry(retry), setup)
        options: dict[str, Any] = {
            "start_to_close_timeout": waited,
            "heartbeat_timeout": timedelta(seconds=setup.heartbeat_seconds),
            "retry_policy": policy,
            **pinned(queue, setup),
        }
        return await _tool_call(ref, payload, options, w.TOOL_CHUNKED if chunked else w.TOOL)

    async def call(**kwargs: Any) -> str | ToolOutput | Verbatim:
        ctx: RunContext = kwargs.pop("ctx")
        chunked = reads_calls and workflow.patched(CALLS_CHUNKED)
        build = functools.partial(built, ctx, kwargs, chunked)
        # an approved call runs at most once: Temporal does not start it again on another worker
        once = spec["needs_approval"] and workflow.patched(APPROVED_ONCE)
        try:
            out = await by_digest(
                ref,
                build,
                functools.partial(send, once=once, chunked=chunked),
                f"the input of the call of {spec['name']!r}",
            )
        except PayloadTooLarge as cannot:
            ref.too_large = ref.too_large or cannot  # not run; the next model call stops the run
            raise
        except ActivityError as exc:
            if once and _worker_lost(exc):
                asks = workflow.patched(LOST_CALL_ASKS)
                return Verbatim(ToolOutcome(UNSURE, True, "worker_lost", lost=asks))
            raise
        return _tool_answer(ref, ctx, out)

    call.__signature__ = _signature(spec)  # type: ignore[attr-defined]
    return Tool(
        name=spec["name"],
        fn=call,
        description=spec["description"],
        parameters=spec["parameters"],
        timeout=timer,  # None: the worker applies the tool's own (see `TOOL_TIMEOUT_ON_WORKER`)
        needs_approval=spec["needs_approval"],
        wants_ctx=True,  # the wrapper always takes the context: the call id, the state
    )


def _tool_answer(ref: RunRef, ctx: RunContext, out: dict[str, Any]) -> str | ToolOutput | Verbatim:
    """What the loop gets from a tool activity's answer `out`: its result (or error), with the run's
    state as the tool left it."""
    ref.told(out)
    ctx.state.clear()
    ctx.state.update(out["state"])
    ref.fingerprint = out.get("fingerprint")
    if isinstance(why := out.get(w.TOO_LARGE), str):  # the state the tool left was too large to carry
        ref.too_large = ref.too_large or PayloadTooLarge(why, "payload_too_large")
    if not out["is_error"]:
        return ToolOutput(*out["blocks"]) if out.get("blocks") else str(out["text"])
    if not workflow.patched(VERBATIM_ERRORS):  # a run started before replays its errors as they were
        raise _tool_error(out)
    return Verbatim(ToolOutcome(str(out["text"]), True, out.get("error_type")))


async def _tool_call(
    ref: RunRef, payload: dict[str, Any], options: dict[str, Any], name: str = w.TOOL
) -> dict[str, Any]:
    """The tool activity's (`name`) answer; its time waiting for a worker is not the run's (`WORKER_TIME`)."""
    began = workflow.time()
    if not ref.worker_time:  # a run started before: as it ran
        out = await _activity(name, payload, **options)
    else:
        out = await settled(ref, workflow.start_activity(name, payload, **options))
    return ref.timed(began, out)  # type: ignore[no-any-return]


def _tool_window(timeout: float, spec: dict[str, Any], setup: WorkerSetup) -> timedelta:
    """How long a tool call's activity may take: its timeout, its cleanup past the default grace (a
    plan from a worker before `cleanup_seconds` has none), and `2 * tool_grace` for the rest: at most
    the window of a tool with no timeout (`_window`)."""
    cleanup = max(0.0, float(spec.get("cleanup_seconds", CLEANUP_GRACE)) - CLEANUP_GRACE)
    return _window(timeout + cleanup + 2 * setup.tool_grace)


def _window(seconds: float) -> timedelta:
    """`seconds` as a Temporal duration (an activity's start-to-close timeout, a retry's interval), at
    most `UNBOUNDED_TOOL`: a longer one is no more bounded, and past some 1e14 s (a tool's timeout of
    `float("inf")`, a `max_delay` of 1e20) no `timedelta` holds it: the workflow code raised
    OverflowError (a tool's or a verifier's failed the workflow task for ever; a backoff's ended the
    run as error where one process ran it)."""
    return timedelta(seconds=seconds) if seconds < UNBOUNDED_TOOL.total_seconds() else UNBOUNDED_TOOL


def _worker_lost(exc: ActivityError) -> bool:
    """The activity's worker stopped reporting (its heartbeats, or its result, never came)."""
    cause = exc.cause
    return isinstance(cause, ActivityTimeout) and cause.type in (
        TimeoutType.HEARTBEAT,
        TimeoutType.START_TO_CLOSE,
    )


@dataclasses.dataclass(frozen=True)
class Verbatim:
    """A tool's outcome on the worker, which the loop takes as it is (see `WorkflowTools`): an
    error result reads to the model as it reads locally ("Error: tool 'x' timed out after 5 s.")."""

    outcome: ToolOutcome


def _tool_error(out: dict[str, Any]) -> Exception:
    """The worker's error result as runs started before `VERBATIM_ERRORS` took it: raised, so the loop
    wrote it again as `Error: {kind}: ...` (a timeout read "Error: timeout: tool 'x' timed out ...")."""
    kind = out.get("error_type") or "ToolError"
    prefix = f"Error: {kind}: "
    text = str(out["text"])
    return _named_error(
        kind, text[len(prefix) :] if text.startswith(prefix) else text.removeprefix("Error: ")
    )


def _signature(spec: dict[str, Any]) -> inspect.Signature:
    """The tool's parameters from its schema, so bad arguments are refused as the worker would."""
    schema = spec["parameters"]
    required = set(schema.get("required", []))
    params = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if name in required else None,
            annotation=_PY_TYPES.get(prop.get("type", ""), Any),
        )
        for name, prop in schema.get("properties", {}).items()
    ]
    params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY))
    return inspect.Signature(params)


# -- verifiers --------------------------------------------------------------------------------------


WHAT_VERIFY = "the verifiers' input (the journal and the calls)"


class RemoteVerifier:
    """Stands for all of the agent's verifiers; the workflow runs them as one activity.

    The loop calls verifiers on a daemon thread; `WorkflowTools.offload`
    routes that call to the activity.
    """

    bounded_elsewhere = True  # no timeout of its own: the activity runs each verifier within its own

    def __init__(self, ref: RunRef, setup: WorkerSetup, seconds: float | None = None) -> None:
        self._ref, self._setup = ref, setup
        # the activity lasts as long as the verifiers may (each to its own timeout), at least as long
        # as a model call; a plan made before it said (None) keeps the model call's, as those runs had
        window = setup.model_timeout
        if seconds is not None:
            window = max(window, seconds + setup.tool_grace)
        self._window = _window(window)

    def bounded(self, seconds: float) -> RemoteVerifier:
        """The loop's time budget left: the activity's own timeouts already bound it."""
        return self

    def __call__(self, ctx: RunContext) -> list[str]:
        raise RuntimeError("RemoteVerifier runs only inside an Endstate workflow")

    async def check(self, ctx: RunContext) -> list[str]:
        """The verifiers' failures; their input names the journal's and the calls' long texts by digest."""
        if not workflow.patched(VERIFY_BY_DIGEST):  # a run started before replays its checks as they were
            return await self._in_full(ctx)
        ref, chunked = self._ref, workflow.patched(VERIFY_CHUNKED)

        def build(inline: set[str] | None) -> dict[str, Any]:
            if chunked:
                return {"run": ref.wire(ctx.state), **_chunked_check(ref, ctx, inline), "note": ctx.note}
            calls = ref.calls_wire(ctx.calls, inline)  # first: a text sent `Once` goes where the worker
            journal = ref.journal_wire(list(ctx.journal), inline)  # looks first, in the calls
            return {"run": ref.wire(ctx.state), "calls": calls, "journal": journal, "note": ctx.note}

        name = w.VERIFY_CHUNKED if chunked else w.VERIFY_BY_DIGEST
        out = await by_digest(ref, build, functools.partial(self._verified, name), WHAT_VERIFY)
        return list(ref.told(out)["failures"])

    async def _in_full(self, ctx: RunContext) -> list[str]:
        """The check as runs started before `VERIFY_BY_DIGEST` made it: the whole journal and calls."""
        payload = {
            "run": self._ref.wire(ctx.state),
            "calls": [vars(c) for c in ctx.calls],
            "journal": w.journal_json(list(ctx.journal)),
            "note": ctx.note,
        }
        failures: list[str] = await self._verified(w.VERIFY, _checked(payload, WHAT_VERIFY))
        return failures

    async def _verified(self, name: str, payload: dict[str, Any], queue: str | None = None) -> Any:
        """The verify activity's answer (on `queue`: see `pinned`); the verifier's own error comes back
        as it was raised."""
        began = workflow.time()
        handle = workflow.start_activity(
            name,
            payload,
            start_to_close_timeout=self._window,
            heartbeat_timeout=timedelta(seconds=self._setup.heartbeat_seconds),
            retry_policy=catalog_room(TemporalRetry(maximum_attempts=3), self._setup),
            **pinned(queue, self._setup),
        )
        try:
            out = await (settled(self._ref, handle) if self._takes_late_answer() else _activity_end(handle))
        except ActivityError as exc:
            cause = _cause(exc)
            raise _named_error(cause.type or "Exception", cause.message) if cause else exc from exc
        return self._ref.timed(began, out)

    def _takes_late_answer(self) -> bool:
        """Whether an answer that came with the budget's cut is taken (`VERIFY_TAKEN`)."""
        return self._ref.worker_time and workflow.patched(VERIFY_TAKEN)


def _chunked_check(ref: RunRef, ctx: RunContext, inline: set[str] | None) -> dict[str, Any]:
    """The calls and the journal for the chunked verifiers' input (`VERIFY_CHUNKED`): the calls first,
    in the order the worker reads them (a text sent `Once` goes where it looks first)."""
    calls = ref.chunked_calls_wire(ctx.calls, inline)
    calls["call_nodes"] = calls.pop("nodes")
    journal = list(ctx.journal)
    roots, nodes, settled = ref.chunked("journal", journal, inline)
    return calls | {"nodes": nodes, "prefix": roots, "journal": ref.journal_wire(journal[settled:], inline)}


class WorkflowTools:
    """`agent.tools`' host (`ToolHost`) on a Temporal worker, set by `worker.workflow_runner`.

    Inside a workflow, a `RemoteVerifier` (the loop calls verifiers on a daemon
    thread; a workflow has none) is awaited as its activity, and a tool's
    `Verbatim` outcome (made by the worker's `execute` already) is taken as it
    is: the loop would write an error again from an exception, and turn any
    other value into text. Every other call goes as in a plain process.
    """

    def outcome(self, value: Any) -> ToolOutcome | None:
        return value.outcome if isinstance(value, Verbatim) else None

    def threadless(self) -> bool:
        """In a workflow no thread is started (`agent.tools.said` reads a message where it is)."""
        return workflow.in_workflow()

    def offload(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Awaitable[Any] | None:
        if (
            workflow.in_workflow()
            and isinstance(fn, functools.partial)
            and isinstance(fn.func, RemoteVerifier)
        ):
            return fn.func.check(*fn.args)
        return None


WORKFLOW_TOOLS = WorkflowTools()


# -- telemetry that replay does not repeat ------------------------------------------------------------


class ReplaySafeHooks:
    """The worker's hooks, called only for what happens now, never for what is replayed.

    A segment whose start is replayed (its worker stopped, or the workflow left
    the cache) gets its observer at its first live event, told so
    (`RunInfo.replayed`): the history says the segment started before, on
    whichever worker, so it is not counted as started again, and its span and
    duration run from the segment's start (`RunInfo.started_at`, the
    workflow's time), not from that event.

    Its span's ids are planned (see `PLANNED_TRACE`) when the hooks can take
    them: the observer reports them from the start, replayed or live.

    A workflow task that re-does one a reset dropped (`temporal workflow reset`
    to the run's last workflow task: the worker that ran it first observed it,
    its stop counted) is taken as replayed too: Temporal gives the workflow a
    new random seed there (only a reset does), in the activation of the task
    that re-does the reset one. That task is marked within its activation,
    whether or not it observes anything: a later, live task is never taken
    for it.
    """

    def __init__(self, inner: RunHooks) -> None:
        self._inner = inner
        self._segments = 0  # observed in this execution, in the workflow's (deterministic) order
        self._reset = False  # a reset's new seed came in this activation, and its task is not marked yet
        self._reset_at: int | None = None  # the history length of the task that re-does a reset one
        self._loop = asyncio.get_running_loop()  # the workflow's own event loop
        workflow.register_random_seed_callback(self._reseeded)

    def _reseeded(self, seed: int) -> None:
        # called as the activation's jobs are applied, outside the workflow's event loop: the task is
        # marked as the loop runs this activation (before, by `replaying`, if an event comes first)
        self._reset = True
        self._loop.call_soon(self.replaying)

    def replaying(self) -> bool:
        """Whether what happens now happened before: replayed, or re-done after a reset. True too
        for a call from outside this workflow's event loop: a dropped workflow's coroutine (evicted
        from a worker's cache) closed by the collector while another workflow runs, whose history is
        not this run's (it may not even be set up yet): nothing of it is observed."""
        if not self._in_own_loop():
            return True
        length = workflow.info().get_current_history_length()
        if self._reset:  # this activation's task re-does the reset one
            self._reset, self._reset_at = False, length
        return workflow.unsafe.is_replaying() or length == self._reset_at

    def _in_own_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:  # no loop runs
            return False

    def run_started(self, info: RunInfo) -> RunObserver:
        self._segments += 1
        if workflow.patched(PLANNED_TRACE) and getattr(self._inner, "plans_spans", False) is True:
            info = dataclasses.replace(info, planned=_planned(self._segments))
        return _ReplaySafeObserver(self._inner, info, self.replaying)


def _planned(segment: int) -> SegmentLink:
    """The span ids of the execution's `segment`-th observed segment: the same in every replay."""
    digest = hashlib.sha256(f"{workflow.info().run_id}/{segment}".encode()).digest()
    return SegmentLink(digest[:16].hex(), digest[16:24].hex())


class _ReplaySafeObserver(RunObserver):
    """Forwards to the worker's (guarded) observer what happens live; drops what is replayed."""

    guarded = True

    def __init__(self, hooks: RunHooks, info: RunInfo, replaying: Callable[[], bool]) -> None:
        self._hooks, self._info, self._replaying = hooks, info, replaying
        self._inner: RunObserver | None = None
        self._tell: Callable[[str, str | None], None] | None = None
        if info.planned is not None:
            self._report_planned(info)
        if replaying():
            self._info = dataclasses.replace(info, replayed=True)
        else:
            self._live()

    def _live(self) -> RunObserver | None:
        # outside the workflow: a stopped worker's dropped workflow, its coroutine closed by the collector
        if not workflow.in_workflow() or self._replaying():
            return None
        if self._inner is None:
            self._inner = guard(self._hooks, self._info)
            if self._info.planned is None or self.trace_id is None:  # else reported from the start
                # (planned, but no hook reported planned ids: a user's span, if any, is the run's)
                self.trace_id, self.span_id = self._inner.trace_id, self._inner.span_id
                if self._tell is not None and self.trace_id:
                    self._tell(self.trace_id, self.span_id)
        return self._inner

    def _report_planned(self, info: RunInfo) -> None:
        """The planned span's ids, as the hooks will record it (None: not sampled)."""
        try:
            ids = self._hooks.planned_ids(info)  # type: ignore[attr-defined]  # with `plans_spans`
        except BaseException:  # a `SystemExit` too (`hook_failed` lets a framework's control flow by)
            hook_failed("planned_ids")
            return
        if isinstance(ids, SegmentLink):
            self.trace_id, self.span_id = ids.trace_id, ids.span_id

    def ids_later(self, tell: Callable[[str, str | None], None]) -> None:
        self._tell = tell  # a replayed segment's span begins at its first live event

    def turn_started(self, index: int, continued: bool = False) -> None:
        if live := self._live():
            live.turn_started(index, continued)

    def turn_ended(self, index: int, signal: TurnSignal | StopReason) -> None:
        if live := self._live():
            live.turn_ended(index, signal)

    def model_started(self, request: ModelRequest, attempt: int) -> None:
        if live := self._live():
            live.model_started(request, attempt)

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None:
        if live := self._live():
            live.model_ended(reply, error)

    def tool_started(self, call: ToolCall) -> None:
        if live := self._live():
            live.tool_started(call)

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        if live := self._live():
            live.tool_ended(call, outcome)

    def verified(self, failures: list[str]) -> None:
        if live := self._live():
            live.verified(failures)

    def human_waited(self, wait: HumanWait) -> None:
        if live := self._live():
            live.human_waited(wait)

    def run_ended(self, result: RunResult) -> None:
        if live := self._live():
            live.run_ended(result)

    def run_taken_over(self, result: RunResult) -> None:
        if live := self._live():
            live.run_taken_over(result)
