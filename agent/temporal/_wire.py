"""What crosses the wire between client, workflow and activities: names and JSON shapes.

A run's *plan* is the part of an agent's definition that the loop's decisions
depend on (budget, help, retry and history policies, progress thresholds, the
model's context window, the tools and
whether they need approval, how many verifiers, the model and its price). It
is taken once, by an activity, when the run starts, and lives in the
workflow's history: a worker restarted with a changed agent replays a running
workflow with the plan the run started with, so its decisions come out the same.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from temporalio.common import SearchAttributeKey

from agent._codec import decode_entry, encode_entry
from agent.agent import Agent
from agent.budget import Budget, at_bounds, bounded
from agent.content import api_block
from agent.history import HistoryPolicy
from agent.journal import Entry, Reply
from agent.models._messages import part_of
from agent.models.base import PROVIDER_DATA, ModelReply, ModelRequest
from agent.models.price import Price
from agent.policies import MAX_WAIT_SECONDS, HelpPolicy, RetryPolicy
from agent.progress import ProgressDetector
from agent.result import LimitKind, PendingAction, RunResult, StopCause, StopReason, Suspension
from agent.snapshot import Snapshot
from agent.stops import kind_named, kind_to_keep
from agent.tools import ToolOutcome
from agent.usage import Usage
from agent.verify import seconds_for

TASK_QUEUE = "endstate"
NAMESPACE = "default"
WORKFLOW = "EndstateRun"
ENV_TEMPORAL = "ENDSTATE_TEMPORAL"

# activity names
PREPARE = "endstate.prepare"
MODEL = "endstate.model"
MODEL_BY_DIGEST = "endstate.model.by-digest"  # its input names long texts by digest (see `INLINE_RESULT`)
MODEL_CHUNKED = "endstate.model.chunked"  # by digest, and the journal's settled prefix by chunks (`CHUNK`)
TOOL = "endstate.tool"
TOOL_CHUNKED = "endstate.tool.chunked"  # the run's earlier calls named as the model's journal (`CHUNK`)
VERIFY = "endstate.verify"
VERIFY_BY_DIGEST = "endstate.verify.by-digest"  # its input names long texts by digest, as the model's
VERIFY_CHUNKED = "endstate.verify.chunked"  # and the journal's and calls' whole chunks, as theirs (`CHUNK`)
CLEANUP = "endstate.cleanup"
READY = (
    "endstate.ready"  # a worker can go on with a waiting run: it has the run's agent (and the approved tool)
)
# a local activity: whether one of the run's activities has started on a worker, and when
# (`_remote.QUEUE_NOT_COUNTED`)
CALL_STATE = "endstate.call-state"
# a local activity: the settings of the worker that begins an execution that change what commands it makes
# (`RECORDED_SETUP`), kept in its history (`workflow.SETUP_RECORDED`)
WORKER_SETUP = "endstate.worker-setup"
RECORDED_SETUP = ("continue_after_events", "cancel_grace", "cut_grace")

# the key under which the model, tool and verify activities say how long they ran on their worker, in seconds
# (`_remote.WORKER_TIME`)
RAN = "ran"

# the error type of a resumed execution that a worker refused to carry on (`workflow.RESUME_CHECKED`): its
# result is the run's stop as it was, resumable, and the note says why
NOT_RESUMED = "not_resumed"
# the error type of a reply that no worker can go on with (`workflow.REPLY_CHECKED`: the run's agent, its task
# type or the approved call's tool is not deployed): the client raises `NotInCatalog`, as the store's runner
# does (workers from before said "ConfigError": a `ConfigError`)
NOT_IN_CATALOG = "NotInCatalog"
# the error type of a segment read, or a reply's wait, on an execution that continued as new (past its
# history bound): its details name the segment of the run's next execution to read instead
CONTINUED = "ContinuedAsNew"

# update and query names
ANSWER, APPROVE, DENY, SEGMENT = "answer", "approve", "deny", "segment"
END = "end"  # an operator ends a waiting run (`TemporalRuns.end`); its input: [NOTE]
# the start key of an execution that ends a cancelled run as an operator asked (`TemporalRuns.end`):
# `{"note": TEXT, "plan": the run's plan or null}`. Such a start's own `plan` is `{}`: a worker from before
# `end`, which reads no `ENDED`, fails its workflow task on it (no command made: no agent run, no resume),
# and Temporal gives the task to another worker until one that ends the run takes it.
ENDED = "ended_by_operator"
STATUS = "status"

# Temporal refuses a payload over its blob size limit (2 MiB by default), retrying the workflow task
# for ever, and ends a workflow whose history passes its size limit (50 MB by default) with no
# result: a run stops, named, before it would ask for either (see `_remote.too_large`). It ends one
# whose history passes 51,200 events too (each turn takes about a dozen: a run of thousands of turns, or
# of many calls a turn, reaches it): the run stops before that as well.
MAX_PAYLOAD_BYTES = 1_500_000
MAX_KEYWORD_BYTES = 2048  # of a keyword search attribute's value (agent, task type): Temporal's default
MAX_HISTORY_BYTES = 40_000_000
MAX_HISTORY_EVENTS = 40_000
# A tool activity's answer, whole (`fitted_answer`): under the server's blob size limit (2 MiB by default,
# 2,097,152 bytes), which refuses a larger one, the tool then run again
MAX_ANSWER_BYTES = 2_000_000
MAX_BLOCK_BYTES = 1_000_000  # a tool result's content blocks: room left in its payload for the run's state


def keyword_fits(value: str) -> bool:
    """Whether Temporal takes `value` as a keyword search attribute (an agent, a task type): it counts the
    value's JSON payload, as the SDK writes it (`é` is six bytes there, `\\u00e9`, and the quotes two)."""
    return len(json.dumps(value)) <= MAX_KEYWORD_BYTES


# A model call, a verification, and a tool call that reads the run's calls, name each text longer than this
# (a tool result, the task, a reply's text, a call's arguments, a provider block) by its digest only: the
# worker keeps the texts it made or was sent, and answers `{"missing": [...]}` for those it lacks, which
# the workflow then sends, in parts that each fit in a payload (see `_remote.by_digest`).
INLINE_RESULT = 256

# A model call names its journal's settled prefix (whole chunks of `CHUNK` entries, each in the form
# `texts_mapped` sends by digest) by the digests of a binary tree of chunks (`chunk_tree`): O(log n)
# digests, not the entries. A worker keeps each node it is sent ({"entries": [...]} or {"chunks": [left,
# right]}) with the run's long texts, and answers `missing` for those it lacks, as for texts: the
# workflow then sends their definitions (`nodes`), and the round trip goes on down the tree.
CHUNK = 64

# What of a journal entry, and of a reply's part, the model's input may send by digest (see `kept_text`);
# a result of content blocks (an image...) sends its `blocks` so, as their JSON (it has no `text`).
DIGESTED = {"task": "text", "note": "text", "result": "text"}
PART_DIGESTED = {"text": "text", "call": "arguments", "opaque": "data"}

# A worker whose catalog lacks a run's agent (or task type) refuses its calls as retryable: Temporal tries
# each again after `refusal_delay` (1, 2, 4, 8, then every 10 s), on whichever worker of the queue takes it,
# until the worker's `catalog_wait` (seconds since the call was first scheduled) is spent: a rolling deploy
# that adds an agent has the run reach a worker that has it. Then the refusal is final, and the run ends
# `error` saying what is missing. 0 by default: refused at once, as a store's runner refuses an agent its
# catalog lacks (a mistyped name is said at once); a fleet that deploys workers one by one sets a wait
# (`--catalog-wait 300`).
CATALOG_WAIT = 0.0
MAX_REFUSAL_DELAY = 10.0


def refusal_delay(attempt: int) -> float:
    """Seconds before Temporal tries again a call refused at `attempt` (from 1) for a catalog that lacks
    its agent."""
    return min(2.0 ** min(attempt - 1, 10), MAX_REFUSAL_DELAY)


def refusals_within(wait: float) -> int:
    """How many refusals of one call (for a catalog that lacks its agent) Temporal tries again before
    `wait` seconds are spent: the room a call's retry policy makes for them."""
    count, spent = 0, 0.0
    while (delay := refusal_delay(count + 1)) < MAX_REFUSAL_DELAY and spent + delay <= wait:
        count, spent = count + 1, spent + delay
    if spent + refusal_delay(count + 1) > wait:
        return count
    return count + int((wait - spent) // MAX_REFUSAL_DELAY)  # the rest every `MAX_REFUSAL_DELAY`


# search attributes: visible and queryable in Temporal's list views
SA_AGENT = SearchAttributeKey.for_keyword("EndstateAgent")
SA_TASK_TYPE = SearchAttributeKey.for_keyword("EndstateTaskType")
SA_STOP_REASON = SearchAttributeKey.for_keyword("EndstateStopReason")
SA_WAITING = SearchAttributeKey.for_bool("EndstateWaiting")
SA_SUSPENDED_AT = SearchAttributeKey.for_datetime("EndstateSuspendedAt")
SEARCH_ATTRIBUTES: tuple[SearchAttributeKey[Any], ...] = (
    SA_AGENT,
    SA_TASK_TYPE,
    SA_STOP_REASON,
    SA_WAITING,
    SA_SUSPENDED_AT,
)


def runs_query(task_queue: str | None) -> str:
    """Temporal's list filter for Endstate's runs on `task_queue` (None: on every task queue). A name
    with a quote or a backslash, which the server's filter does not match even escaped, is left out of
    the filter: the caller keeps only that queue's executions (`on_queue`)."""
    query = f"WorkflowType = '{WORKFLOW}'"
    if task_queue is None or any(c in task_queue for c in "'\"\\"):
        return query
    return f"{query} AND TaskQueue = '{task_queue}'"


def on_queue(execution_queue: str, task_queue: str | None) -> bool:
    """An execution listed by `runs_query(task_queue)` is on that queue (None: any)."""
    return task_queue is None or execution_queue == task_queue


def plan_of(agent: Agent) -> dict[str, Any]:
    """The decision-relevant part of `agent`, JSON-ready."""
    detector = agent.progress()
    progress = (
        {"max_repeats": detector.max_repeats, "max_idle_turns": detector.max_idle_turns}
        if type(detector) is ProgressDetector
        else None
    )
    price = agent.prices.price(agent.model.name)
    return {
        "agent": agent.name,
        "task_type": agent.task_type,
        "instructions": agent.instructions,
        "model": agent.model.name,
        "provider": agent.model.provider,
        "price": price_plan(price) if price else None,
        "price_fast": price_plan(price.fast) if price and price.fast else None,
        "max_tokens": agent.max_tokens,
        "finish_last": agent.finish_last,
        "budget": dataclasses.asdict(agent.budget),
        "help": dataclasses.asdict(agent.help),
        "retry": dataclasses.asdict(agent.retry),
        "progress": progress,
        "history": history_plan(agent.history),
        "context_window": agent.context_window,
        "verifiers": len(agent.verifiers),
        "verify_seconds": seconds_for(agent.verifiers),  # the verify activity lasts long enough for them
        "fingerprint": agent.fingerprint is not None,
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "timeout": t.timeout,
                "cleanup_seconds": t.cleanup_seconds,  # the tool's activity lasts long enough for it
                "needs_approval": t.needs_approval,
                "wants_ctx": t.wants_ctx,
            }
            for t in agent.tools
        ],
    }


def history_plan(policy: HistoryPolicy) -> dict[str, Any]:
    """The history policy's settings (a custom `summarize` stays on the worker: see the README; the
    workflow sets `media_in_context` and `results_in_context`, and a worker from before them would refuse
    the keywords)."""
    left_out = ("summarize", "media_in_context", "results_in_context")
    return {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy) if f.name not in left_out}


def history_of(plan: dict[str, Any]) -> HistoryPolicy:
    """The planned history policy; a plan made before it was planned gets the default one."""
    return HistoryPolicy(**plan.get("history", {}))


def price_plan(price: Price) -> dict[str, Any]:
    """A price, JSON-ready, without its unset fields (nested prices too): a worker of a release
    whose `Price` lacks a newer field still reads a plan that does not set it (a rolling deploy).
    Its fast-mode price is planned apart (`price_fast`, see `planned_price`), for the same reason."""
    return {
        k: price_plan(v) if isinstance(v, Price) else v
        for k, v in vars(price).items()
        if v is not None and k != "fast"
    }


def price_of(data: dict[str, Any]) -> Price:
    """A planned price back (a long-prompt or Priority Tier price nests one more)."""
    nested = {
        k: price_of(data[k]) for k in ("long_prompt", "priority", "fast") if isinstance(data.get(k), dict)
    }
    return Price(**{**data, **nested})


def planned_price(plan: dict[str, Any]) -> Price | None:
    """The model's price a plan carries, with its fast-mode price when the plan has one."""
    if not plan.get("price"):
        return None
    price = price_of(plan["price"])
    fast = plan.get("price_fast")
    return dataclasses.replace(price, fast=price_of(fast)) if fast else price


def budget_of(plan: dict[str, Any]) -> Budget:
    """The plan's budget; one planned before ceilings had bounds is read at the bounds (`bounded`)."""
    return bounded(plan["budget"])


def help_of(plan: dict[str, Any]) -> HelpPolicy:
    """The plan's help policy; a wait planned before waits had a bound (`MAX_WAIT_SECONDS`) is read
    at the bound, so that such a run is never stranded by a ConfigError on replay."""
    return HelpPolicy(**at_bounds(plan["help"], most={"wait_seconds": MAX_WAIT_SECONDS}))


def retry_of(plan: dict[str, Any]) -> RetryPolicy:
    return RetryPolicy(**plan["retry"])


def result_json(result: RunResult) -> dict[str, Any]:
    """A result with its snapshot, as the workflow returns it."""
    snapshot = result.snapshot.to_json() if result.snapshot is not None else None
    return {**result.to_dict(), **result.usage.flat(), "snapshot": snapshot}


def result_from_json(data: dict[str, Any]) -> RunResult:
    """The inverse of `result_json`."""
    fields = {f.name for f in dataclasses.fields(RunResult)}
    values = {k: v for k, v in data.items() if k in fields}
    values["usage"] = Usage.from_flat(data)
    values["reason"] = StopReason(data["reason"])
    values["limit"] = LimitKind(data["limit"]) if data.get("limit") else None
    values["cause"] = StopCause(data["cause"]) if data.get("cause") else None
    values["verifier_failures"] = tuple(data.get("verifier_failures") or ())
    values["suspension"] = suspension_from_json(data.get("suspension"))
    snapshot, problem = _snapshot_of(data)
    values["snapshot"] = Snapshot.from_json(snapshot) if snapshot else None
    if problem:
        values["note"] = f"{values.get('note') or ''}\n[Endstate: {problem}]".strip()
    return RunResult(**values)


def _snapshot_of(data: dict[str, Any]) -> tuple[str | None, str | None]:
    """A result's snapshot JSON, unpacked when the workflow kept it packed (`PACKED`: one over a payload),
    and why a packed one could not be read (then None)."""
    try:
        return unpacked(data).get("snapshot"), None
    except (ValueError, zlib.error) as exc:
        return None, f"the result's packed snapshot ({PACKED}) could not be read: {exc!s:.200}"


def suspension_from_json(data: dict[str, Any] | None) -> Suspension | None:
    if not data:
        return None
    pending = data.get("pending")
    return Suspension(
        question=data["question"],
        deadline=float(data["deadline"]),
        suspended_at=float(data["suspended_at"]),
        pending=PendingAction(**pending) if pending else None,
        call_id=str(data.get("call_id", "")),
    )


def journal_json(entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """The entries as they cross: a result of content blocks without its text (made again from the
    blocks when read; the blocks go by digest, the text would go whole)."""
    return [_without_text(encode_entry(e)) for e in entries]


def _without_text(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "text"} if "blocks" in entry else entry


def journal_from_json(data: list[dict[str, Any]], start: int = 0) -> list[Entry]:
    """Entries from their JSON; `start`: the index of the first in its journal (a `SnapshotError` names
    the entry by its index)."""
    return [decode_entry(d, start + i) for i, d in enumerate(data)]


def request_json(request: ModelRequest, journal: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A model request, JSON-ready; with `journal`, that (the request's journal already encoded)."""
    return {
        "system": request.system,
        "journal": journal_json(request.journal) if journal is None else journal,
        "tools": request.tools,
        "max_tokens": request.max_tokens,
    }


def request_from_json(data: dict[str, Any], settled: Sequence[Entry] = ()) -> ModelRequest:
    """A model request from its JSON; its journal the entries `settled` (already decoded: a chunked
    input's prefix) and then those `data` holds."""
    journal = [*settled, *journal_from_json(data["journal"], start=len(settled))]
    return ModelRequest(data["system"], journal, data["tools"], data["max_tokens"])


def result_digest(text: str) -> str:
    """The name a tool result travels by instead of its text (see `INLINE_RESULT`). A lone surrogate
    (a path read with `surrogateescape`) is hashed as it is: a result is any Python text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def reply_parts_json(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A reply's content blocks as its journal entry's parts, as a later model input holds them."""
    parts: list[dict[str, Any]] = encode_entry(Reply(tuple(map(part_of, content))))["parts"]
    return parts


def texts_mapped(journal: list[dict[str, Any]], change: Callable[[dict[str, Any], str], Any]) -> list[Any]:
    """A journal as JSON with `change(item, key)` in place of each entry and reply part that may hold a
    long text, at `key` (`DIGESTED`, `PART_DIGESTED`): sent by digest, or taken back from one."""
    out: list[Any] = []
    for entry in journal:
        if entry["type"] == "reply":
            entry = {**entry, "parts": [change(p, PART_DIGESTED[p["type"]]) for p in entry["parts"]]}
        elif entry["type"] in DIGESTED:
            entry = change(entry, "blocks" if "blocks" in entry else DIGESTED[entry["type"]])
        out.append(entry)
    return out


def digest_form(item: dict[str, Any], key: str) -> dict[str, Any]:
    """`item` with its long value at `key` named by digest (`key` None, `digest` set, `json` for a block or
    blocks), as an input names a text the worker keeps; a short value, or one already named, as it is."""
    text = kept_text(item.get(key))
    if "digest" in item or text is None or len(text) <= INLINE_RESULT:
        return item
    return named_by(item, key, result_digest(text))


def named_by(item: dict[str, Any], key: str, digest: str) -> dict[str, Any]:
    """`item` with its value at `key` named by `digest` (`key` None, `json` for a block or blocks): the one
    form the workflow (`RunRef.digested`) and a worker (`digest_form`) both write, so a chunk's digest is
    the same on either side."""
    json_flag = {"json": True} if isinstance(item.get(key), dict | list) else {}
    return {**item, key: None, "digest": digest} | json_flag


def node_digest(definition: dict[str, Any]) -> str:
    """The digest a node of the chunk tree (see `CHUNK`) is named by: of its definition's JSON."""
    return result_digest(json.dumps(definition, ensure_ascii=False, separators=(",", ":"), sort_keys=True))


def chunk_tree(leaves: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The roots that name chunks `leaves` (their digests, in order): one perfect binary tree per bit of
    their count, largest first; and each inner node's children, by its digest."""
    roots: list[str] = []
    inner: dict[str, list[str]] = {}
    start, size = 0, 1 << max(len(leaves).bit_length() - 1, 0)
    while start < len(leaves):
        if start + size <= len(leaves):
            roots.append(_subtree(leaves[start : start + size], inner))
            start += size
        size //= 2
    return roots, inner


def _subtree(leaves: Sequence[str], inner: dict[str, list[str]]) -> str:
    if len(leaves) == 1:
        return leaves[0]
    half = len(leaves) // 2
    children = [_subtree(leaves[:half], inner), _subtree(leaves[half:], inner)]
    digest = node_digest({"chunks": children})
    inner[digest] = children
    return digest


def kept_text(value: Any) -> str | None:
    """What a value travels by digest as: a text itself, a provider's block (a dict) or a result's content
    blocks (a list) its JSON with sorted keys (as Temporal's converter sends it: a block that crossed the
    wire has them so); None for anything else (sent as it is)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict | list):
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def outcome_json(outcome: ToolOutcome, tool: str) -> dict[str, Any]:
    """A tool call's outcome as the tool activity returns it: its content blocks in the Messages API's
    shape. Blocks too large for one Temporal payload are refused as the tool's error, naming the size:
    the activity's result would be refused (and retried for ever), and it lives in the history."""
    out = {k: v for k, v in vars(outcome).items() if k != "blocks"}
    if not outcome.blocks:
        return out
    blocks = [api_block(b) for b in outcome.blocks]
    if (size := payload_size(blocks)) > MAX_BLOCK_BYTES:
        text = (
            f"Error: tool {tool!r} returned content blocks of {size:,} bytes, over the {MAX_BLOCK_BYTES:,} a "
            "Temporal run carries in one payload: return a smaller image (downscale it, or send it as JPEG) "
            "or a URL"
        )
        return out | {"text": text, "is_error": True, "error_type": "payload_too_large"}
    return out | {"blocks": blocks}


def fitted_answer(answer: dict[str, Any], tool: str, state_before: dict[str, Any]) -> dict[str, Any]:
    """A tool activity's `answer` (its outcome and the run's state) that fits one payload. A result too
    large for one (a 3 MB export) was refused by the server, and Temporal ran the tool again, 5 times in
    all, before the run went on without it: it is the tool's error (`payload_too_large`), the tool having
    run once. When the state is what is too large, the run cannot go on without it: the answer keeps the
    state as it was and says why under `TOO_LARGE` (the workflow stops the run `payload_too_large`)."""
    if payload_size(answer) <= MAX_ANSWER_BYTES:
        return answer
    size = payload_size(answer.get("text")) + (payload_size(answer["blocks"]) if "blocks" in answer else 0)
    text = (
        f"Error: tool {tool!r} ran, but its result is {size:,} bytes, over the {MAX_ANSWER_BYTES:,} a "
        "Temporal run carries in one payload, so it was not kept: return less at a time (a page, a range, a "
        "filter), or write it to a file and return the file's path"
    )
    kept = {k: v for k, v in answer.items() if k != "blocks"}
    small = kept | {"text": text, "is_error": True, "error_type": "payload_too_large"}
    if payload_size(small) <= MAX_ANSWER_BYTES:
        return small
    why = (
        f"the run's state is {payload_size(answer.get('state')):,} bytes after the call of {tool!r}, over "
        f"the {MAX_ANSWER_BYTES:,} an Endstate run sends in one Temporal payload: keep the state small (a "
        "path or an id, not the data), or run this agent on the PostgreSQL store"
    )
    return small | {"state": state_before, "fingerprint": None, TOO_LARGE: why}


PAYLOAD_TOO_LARGE = "payload_too_large"  # the error type of a run stopped for a payload Temporal would refuse


def model_reply_too_large(reply: dict[str, Any], max_tokens: int) -> str | None:
    """Why a model activity's answer, `reply`, cannot go back to the workflow (None when it can). One over
    the server's blob size limit was refused, Temporal tried the call again, 5 times in all, and the run ended
    `error`, `PayloadsTooLarge`: the worker fails the call instead, at once, as `payload_too_large`."""
    if (size := payload_size(reply)) <= MAX_ANSWER_BYTES:
        return None
    return (
        f"the model's reply is {size:,} bytes, over the {MAX_ANSWER_BYTES:,} a Temporal run carries in one "
        "payload (the server refuses more than its blob size limit, 2 MiB by default), so it was not kept: "
        f"lower the agent's max_tokens (now {max_tokens:,}), have the model write long output with a tool "
        "(to a file) rather than in its reply, or run this agent on the PostgreSQL store"
    )


def usage_only(reply: dict[str, Any]) -> dict[str, Any]:
    """A model activity's `reply` without its content (nor its provider data): what it used, to charge."""
    extra = {k: v for k, v in reply.get("extra", {}).items() if k != PROVIDER_DATA}
    kept = {k: v for k, v in reply.items() if k != "content"} | {"content": [], "extra": extra}
    return kept if payload_size(kept) <= MAX_BLOCK_BYTES else kept | {"extra": {}}


MAX_FAILURES = 1_000  # a verification's failures a Temporal run keeps (`fitted_failures`)


def fitted_failures(failures: list[str]) -> list[str]:
    """A verification's failures cut to fit the verify activity's answer (`MAX_ANSWER_BYTES`, at most
    `MAX_FAILURES` of them). One over the server's limit (a test suite's whole output) was refused, the
    verifiers run again, 3 times in all, and the run ended `error` saying a verifier raised
    PayloadsTooLarge. The model is sent at most `max_result_chars` of them anyway (40,000 by default)."""
    if payload_size(failures) <= MAX_ANSWER_BYTES and len(failures) <= MAX_FAILURES:
        return failures
    kept = failures[:MAX_FAILURES]
    most = MAX_ANSWER_BYTES // (2 * 6 * len(kept))  # characters each: JSON writes one in 6 bytes at most
    cut = [f if len(f) <= most else f"{f[:most]} [Endstate: cut from {len(f):,} characters]" for f in kept]
    more = len(failures) - len(kept)
    return cut + ([f"[Endstate: and {more:,} more failures]"] if more else [])


TOO_LARGE = "too_large"  # a tool activity's answer: why the run stops `payload_too_large` (`fitted_answer`)


def payload_size(value: Any) -> int:
    """About the bytes `value` takes as a Temporal payload (the JSON converter's compact JSON)."""
    return len(json.dumps(value, separators=(",", ":"), default=str).encode())


# A hand-over whose snapshot is too large for its execution's input carries it zlib-compressed, base64, under
# PACKED (`workflow.PACKED_HAND_OVER`), as does a resumed execution's start (`TemporalRuns.resume`), and this
# in place of the snapshot: an older worker that takes the
# execution reads it as a snapshot of a version it does not know and fails its workflow task (tried again
# until a worker that reads PACKED takes it), never as a start without a snapshot, which would run the task
# anew. Tool results are text: the start of 300 turns of 5 kB packs from 1.73 MB to 0.48 MB (benchmarks/).
# A workflow's result keeps such a snapshot under PACKED too (`workflow.PACKED_RESULT`), `snapshot` None: a
# client from before reads a result without a snapshot (it ignores the key), as it did.
PACKED = "snapshot_zlib"
MAX_UNPACKED_BYTES = 2 * MAX_HISTORY_BYTES
PACKED_IN_PLACE = json.dumps(
    {"version": "packed", "journal": [], "note": f"zlib-compressed, base64, in the start's {PACKED!r}"}
)


def packed(text: str) -> str:
    """`text` (a snapshot's JSON) compressed with zlib, as base64 (ASCII: JSON carries it unescaped)."""
    return base64.b64encode(zlib.compress(text.encode("utf-8", "surrogatepass"))).decode("ascii")


def packed_start(start: dict[str, Any]) -> dict[str, Any]:
    """A start whose snapshot is packed (`PACKED`), `PACKED_IN_PLACE` left in `snapshot` (see above)."""
    return {**start, "snapshot": PACKED_IN_PLACE, PACKED: packed(start["snapshot"])}


def unpacked(start: Any) -> Any:
    """A workflow start with its `PACKED` snapshot back in `snapshot` (any other start as it is); a
    `ValueError` or `zlib.error` when it does not unpack."""
    if not isinstance(start, dict) or PACKED not in start:
        return start
    rest = {k: v for k, v in start.items() if k != PACKED}
    if not isinstance(start[PACKED], str):
        raise ValueError(f"{PACKED} must be base64 text, not {type(start[PACKED]).__name__}")
    unpacking = zlib.decompressobj()
    data = unpacking.decompress(base64.b64decode(start[PACKED], validate=True), MAX_UNPACKED_BYTES)
    if unpacking.unconsumed_tail:  # no run's snapshot is that large: its history would be past its limit
        raise ValueError(f"{PACKED} unpacks to over {MAX_UNPACKED_BYTES:,} bytes")
    if not unpacking.eof:
        raise ValueError(f"{PACKED} is cut short")
    return {**rest, "snapshot": data.decode("utf-8", "surrogatepass")}


def reply_too_large(what: str, text: str) -> str | None:
    """Why a person's reply is too large for a run on Temporal (None when it is not): one over
    `MAX_PAYLOAD_BYTES` could never reach the model (`payload_too_large`), and one over Temporal's
    blob size limit failed every workflow task once taken, every later reply refused."""
    size = payload_size(text)
    if size <= MAX_PAYLOAD_BYTES:
        return None
    return (
        f"{what} is {size:,} bytes, over the {MAX_PAYLOAD_BYTES:,} a run on Temporal takes in one text: "
        "send a shorter one (a reference to the document, not the document)"
    )


# the memo's key of the last reply a run took, with who gave it (`workflow.ANSWERER_KEPT`)
ANSWERED = "answered"
# The run's own state as its last segment ended (from its snapshot: a run that waits, was cancelled or stopped
# at a limit), in the memo when at most MEMO_STATE_BYTES, where readers take it (`runs --json`, `/runs`, the
# inbox, which builds the run's agent from it to preview a pending call). A finished run keeps none.
STATE = "state"
MEMO_STATE_BYTES = 64 * 1024
ANSWERED_FIELDS = ("last_answer_by", "last_answer_at", "last_answer_kind", "last_answer")


def answered_of(kept: Any) -> dict[str, Any]:
    """The `last_answer_*` fields of a run from its memo's `ANSWERED` (as `RunRecord` holds them), read
    fail-safe: {} when none was kept, or it is not what a workflow keeps."""
    if not isinstance(kept, dict):
        return {}
    by, at, kind, text = (kept.get(k) for k in ANSWERED_FIELDS)
    if not isinstance(at, int | float) or isinstance(at, bool) or not isinstance(kind, str):
        return {}
    return dict(zip(ANSWERED_FIELDS, (_str(by), float(at), kind, _str(text)), strict=True))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


_REPLY_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelReply))


def reply_json(reply: ModelReply) -> dict[str, Any]:
    """A model reply as an activity returns it. Its `stop` goes only when its `stop_reason` would not
    give it (`kind_to_keep`): a workflow worker of a release before `stop` (a rolling deploy) builds
    the reply from the rest, and reads the same kind from the word. A journal's `Reply` crosses the
    same way (`journal_json`: `encode_entry`)."""
    out = dataclasses.asdict(reply)
    if kind_to_keep(reply.stop_reason, reply.stop) is None:
        out.pop("stop", None)
    return out


def reply_from_json(data: dict[str, Any]) -> ModelReply:
    """A reply an activity returned, its `stop` a `StopKind` again; the fields a newer release's worker
    added are left out, and a kind this release does not know, so a rolling deploy never ends a run on
    a reply this release cannot build (the kind is then its stop reason's)."""
    fields = {k: v for k, v in data.items() if k in _REPLY_FIELDS}
    if "stop" in fields:
        fields["stop"] = kind_named(fields["stop"])
    return ModelReply(**fields)
