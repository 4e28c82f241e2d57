"""The activities: everything a run does outside its decisions (model, tools, verifiers, its world).

They run on a worker with the catalog, build the run's agent from its name and
state (one agent per execution of a run's workflow and worker, kept while it is
active, so a model that keeps state across calls, like the scripted one, stays
in place; a resume, a new execution, builds it again), and
return plain JSON. Failures that the loop handles itself (a model error, a tool
error) are returned or raised as non-retryable errors: Temporal retries only
what the loop cannot see, such as a worker that died mid-call.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, timedelta
from typing import Any, TypeVar

from temporalio import activity
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from agent._codec import encode_entry
from agent.agent import Agent
from agent.clock import CancelSignal, check_cancel, unanswered
from agent.context import CallRecord, RunContext
from agent.durable.catalog import (
    AgentEntry,
    AgentUnavailable,
    Catalog,
    PrepareHangs,
    check_prepared,
    named_as_entry,
    prepare_timeout,
    prepare_within,
    retired_model,
)
from agent.errors import ConfigError, ModelError, SnapshotError, TransientModelError
from agent.history import HistoryPolicy
from agent.journal import Entry, Journal, Result
from agent.models.base import ModelReply, recording_cut_calls
from agent.temporal import _registry
from agent.temporal import _wire as w
from agent.temporal._attempts import Attempts
from agent.tools import UNKNOWN_TOOL, _in_daemon_thread, execute, plain_error, said_soon
from agent.verify import run_verifiers

log = logging.getLogger("endstate.temporal")
Call = TypeVar("Call", bound=Callable[..., Awaitable[dict[str, Any]]])
BENIGN = ApplicationErrorCategory.BENIGN  # failures the loop handles: no worker traceback in the log
MAX_CACHED_AGENTS = 1024
Execution = tuple[str, str]  # a run id and the id of one execution of its workflow
MAX_KEPT_CHARS = 64_000_000  # of long texts kept for calls that name them by digest
DECODED_COST = 8  # a chunk kept decoded counts as 8 times its JSON's characters (measured: about so)


def _timed(fn: Call) -> Call:
    """An activity whose answer says how long it ran on this worker (`ran`, seconds): the workflow counts
    that as the run's active time, not the time the call or its result waited for a worker (see
    `_remote.WORKER_TIME`). A model call an earlier attempt made counts as long as it ran."""

    @functools.wraps(fn)
    async def timed(*args: Any, **kwargs: Any) -> dict[str, Any]:
        began = time.monotonic()
        out = await fn(*args, **kwargs)
        return {**out, w.RAN: max(time.monotonic() - began, out.get(w.RAN, 0.0))}  # a shared call's

    return timed  # type: ignore[return-value]


class EndstateActivities:
    """The activities of one worker, over its catalog."""

    def __init__(
        self, catalog: Catalog, queue: str | None = None, catalog_wait: float = w.CATALOG_WAIT
    ) -> None:
        self.catalog = catalog
        self.queue = queue  # this worker's own task queue: a run sends there the texts it lacks
        # seconds a call is tried again when this catalog lacks its agent (`_refusal`)
        self.catalog_wait = catalog_wait
        self._agents: OrderedDict[Execution, Agent] = OrderedDict()
        self._cancels: OrderedDict[Execution, CancelSignal | None] = OrderedDict()  # the catalog's `cancel`
        self._results = KeptResults(MAX_KEPT_CHARS)
        self._attempts = Attempts(MAX_CACHED_AGENTS)  # a model activity tried again takes its reply

    def all(self) -> list[Any]:
        return [
            self.prepare,
            self.model,
            self.model_by_digest,
            self.model_chunked,
            self.tool,
            self.tool_chunked,
            self.verify,
            self.verify_by_digest,
            self.verify_chunked,
            self.cleanup,
            self.ready,
            call_state,
            worker_setup,
        ]

    @activity.defn(name=w.PREPARE)
    async def prepare(self, run: dict[str, Any]) -> dict[str, Any]:
        """Make the run's world (`prepare`) and take its plan."""
        try:
            entry = self._entry(run["agent"])
            state = dict(run.get("state") or {})
            if entry.prepare is not None and not run.get("prepared"):  # in a thread: it may block
                async with _heartbeats():
                    state = await asyncio.to_thread(
                        prepare_within, run["agent"], entry, state, run["run_id"], _prepare_seconds()
                    )
                check_prepared(run["agent"], state)  # as the store's runner names it
            agent = await self._build({**run, "state": state})
        except ConfigError as exc:
            raise self._refusal(run, exc) from exc
        except PrepareHangs as exc:  # tried again, it would hang again (and hold one more thread)
            raise ApplicationError(str(exc), type="PrepareHangs", non_retryable=True) from None
        except AgentUnavailable as exc:  # a prepare's state no run can keep: final, as a ConfigError is
            raise _refused(str(exc)) from None
        return self._told(run, {"state": state, "plan": w.plan_of(agent)}, state)

    @activity.defn(name=w.MODEL)
    @_timed
    async def model(self, call: dict[str, Any]) -> dict[str, Any]:
        """One model call; the loop retries transient failures with its own policy. Temporal's attempts
        of one scheduled call share its model call on this worker (see `_attempts`).

        A call cut off (by the run's time budget, `call["seconds"]`, or by the
        workflow's cancel) fails with what it used, for the workflow to charge.
        """
        return await self._answer(call)

    async def _answer(self, call: dict[str, Any], settled: Sequence[Entry] = ()) -> dict[str, Any]:
        """`model`'s answer to `call`, its journal the entries `settled` (already decoded) and then the
        call's own."""
        agent = await self._agent(call["run"])
        async with _heartbeats():
            with recording_cut_calls() as cut:  # a call that broke off mid-way, with what it used
                shared = self._attempts.call(lambda: _complete(agent, call, settled), cut)  # once for all
                cut = shared.cut
                try:
                    reply = await shared.reply()
                except _CutOff as exc:
                    raise _failure(str(exc), "CutOff", {"cut": _dicts(cut)}) from None
                except asyncio.CancelledError:
                    if not _cancel_requested():  # the worker stops: Temporal runs the call again elsewhere
                        raise
                    raise _failure("the model call was cancelled", "CutOff", {"cut": _dicts(cut)}) from None
                except TransientModelError as exc:
                    details = {
                        "error_type": exc.error_type,
                        "retry_after": exc.retry_after,
                        "cut": _dicts(cut),
                    }
                    raise _failure(str(exc), "TransientModelError", details) from exc
                except ModelError as exc:
                    details = {"error_type": exc.error_type, "cut": _dicts(cut)}
                    raise _failure(str(exc), "ModelError", details) from exc
                except Exception as exc:  # an adapter bug: the run ends as error, not retried
                    cause = exc if plain_error(exc) else None  # Temporal reads a cause's message on the loop
                    raise _failure(await said_soon(exc), type(exc).__name__) from cause
        if (why := w.model_reply_too_large(reply, agent.max_tokens)) is not None:
            details = {"error_type": w.PAYLOAD_TOO_LARGE, "cut": [w.usage_only(reply)]}  # its usage charged
            raise _failure(why, "ModelError", details)
        return self._told(call["run"], {**reply, w.RAN: shared.seconds()})

    @activity.defn(name=w.MODEL_BY_DIGEST)
    @_timed
    async def model_by_digest(self, call: dict[str, Any]) -> dict[str, Any]:
        """`model`, its input naming long texts by digest: `{"missing": [...]}` (no call made) when
        this worker does not keep some of them; the workflow then sends those in full."""
        run = call["run"]
        await self._agent(run)  # refused first: a worker that lacks it asks for no texts (see `_agent`)
        self._results.keep(run["run_id"], run["task"])  # every input carries it: a task entry needs no asking
        missing: list[str] = []
        journal = self._journal(run["run_id"], call["request"]["journal"], missing)
        if missing:
            return self._lacking(missing)
        return await self._replied(call, journal)

    @activity.defn(name=w.MODEL_CHUNKED)
    @_timed
    async def model_chunked(self, call: dict[str, Any]) -> dict[str, Any]:
        """`model_by_digest`, its input naming the journal's settled prefix by the roots of a tree of
        chunks (`_wire.CHUNK`): `{"missing": [...]}` names the nodes and texts this worker lacks."""
        request = call["request"]
        await self._agent(call["run"])  # refused first, as in `model_by_digest`
        missing: list[str] = []
        run_id = call["run"]["run_id"]
        self._results.keep(run_id, call["run"]["task"])
        self._keep_nodes(run_id, request.get("nodes") or {}, missing)
        tail = self._journal(run_id, request["journal"], missing)  # first: it keeps the texts it sends
        try:
            settled = self._prefix(run_id, request["prefix"], missing)  # each chunk decoded once
        except SnapshotError as exc:  # as `_complete` fails on a tail it cannot read: the run ends error
            raise _failure(str(exc), type(exc).__name__) from None
        if missing:
            return self._lacking(missing)
        bare = {k: v for k, v in request.items() if k not in ("prefix", "nodes")}
        return await self._replied({**call, "request": bare}, tail, settled)

    async def _replied(
        self, call: dict[str, Any], journal: list[dict[str, Any]], settled: Sequence[Entry] = ()
    ) -> dict[str, Any]:
        """The model's answer to `call` with the journal `settled` (decoded) and then `journal`, keeping
        its reply's long texts, which the next request holds."""
        run = call["run"]
        reply = await self._answer({**call, "request": {**call["request"], "journal": journal}}, settled)
        for part in w.reply_parts_json(reply["content"]):  # the next request holds the reply's parts
            if (text := w.kept_text(part[w.PART_DIGESTED[part["type"]]])) is not None:
                self._results.keep(run["run_id"], text)
        return reply

    @activity.defn(name=w.TOOL)
    @_timed
    async def tool(self, call: dict[str, Any]) -> dict[str, Any]:
        """One tool call with its own timeout; a failure is a result for the model, never raised."""
        return await self._tool(call)

    @activity.defn(name=w.TOOL_CHUNKED)
    @_timed
    async def tool_chunked(self, call: dict[str, Any]) -> dict[str, Any]:
        """`tool`, its input naming the run's earlier calls as `model_chunked`'s names the journal."""
        return await self._tool(call)

    async def _tool(self, call: dict[str, Any]) -> dict[str, Any]:
        run = call["run"]
        agent = await self._agent(run)
        found = agent.tool_named(call["name"])
        if found is None:
            text = f"Error: this worker's agent {agent.name!r} has no tool {call['name']!r}."
            return {"text": text, "is_error": True, "error_type": UNKNOWN_TOOL, "state": run["state"]}
        missing: list[str] = []
        self._keep_nodes(run["run_id"], call.get("nodes") or {}, missing, calls=True)  # `tool_chunked`'s
        run_id = run["run_id"]
        calls = self._calls(run_id, call.get("calls", []), missing)  # before the prefix: it keeps texts
        calls = self._prefix(run_id, call.get("calls_prefix", []), missing, calls=True) + calls
        if missing:  # not run: the workflow sends these results and asks again
            return self._lacking(missing)
        ctx = _context(run, calls, call_id=call.get("call_id", ""))
        async with _heartbeats():
            outcome = await execute(found, call["arguments"], ctx)
        fingerprint = _fingerprint(agent, ctx) if agent.fingerprint is not None else None
        answer = {**w.outcome_json(outcome, found.name), "state": ctx.state, "fingerprint": fingerprint}
        out = w.fitted_answer(answer, found.name, run["state"])
        blocks = outcome.blocks if "blocks" in out else ()  # not when refused as too large
        for text in _as_sent(
            Result("", out["text"], blocks=blocks), call.get("cap")
        ):  # a later call holds it
            self._results.keep(run["run_id"], text)
        return self._told(run, out)

    @activity.defn(name=w.VERIFY)
    async def verify(self, check: dict[str, Any]) -> list[str]:
        """Every verifier of the agent, in order; one that raises ends the run as error."""
        calls = [CallRecord(**c) for c in check.get("calls", [])]
        return await self._verified(check["run"], calls, check.get("journal", []), check.get("note", ""))

    @activity.defn(name=w.VERIFY_BY_DIGEST)
    @_timed
    async def verify_by_digest(self, check: dict[str, Any]) -> dict[str, Any]:
        """`verify`, its input naming long texts by digest: `{"missing": [...]}` (no verifier run) when
        this worker does not keep some of them; else `{"failures": [...]}`."""
        run = check["run"]
        await self._agent(run)  # refused first, as in `model_by_digest`
        self._results.keep(run["run_id"], run["task"])  # every input carries it: a task entry needs no asking
        missing: list[str] = []
        calls = self._calls(run["run_id"], check["calls"], missing)
        journal = self._journal(run["run_id"], check["journal"], missing)
        if missing:
            return self._lacking(missing)
        return self._told(run, {"failures": await self._verified(run, calls, journal, check.get("note", ""))})

    @activity.defn(name=w.VERIFY_CHUNKED)
    @_timed
    async def verify_chunked(self, check: dict[str, Any]) -> dict[str, Any]:
        """`verify_by_digest`, its input naming the calls' and the journal's whole chunks as `tool_chunked`
        and `model_chunked` do; read in the order the workflow built it (calls, then journal)."""
        run = check["run"]
        run_id = run["run_id"]
        await self._agent(run)  # refused first, as in `model_by_digest`
        self._results.keep(run_id, run["task"])
        missing: list[str] = []
        self._keep_nodes(run_id, check.get("call_nodes") or {}, missing, calls=True)
        calls = self._calls(run_id, check["calls"], missing)
        self._keep_nodes(run_id, check.get("nodes") or {}, missing)
        journal = self._journal(run_id, check["journal"], missing)
        calls = self._prefix(run_id, check["calls_prefix"], missing, calls=True) + calls
        settled = self._prefix(run_id, check["prefix"], missing)
        if missing:
            return self._lacking(missing)
        note = check.get("note", "")
        return self._told(run, {"failures": await self._verified(run, calls, journal, note, settled)})

    async def _verified(
        self,
        run: dict[str, Any],
        calls: list[CallRecord],
        journal: list[dict[str, Any]],
        note: str,
        settled: Sequence[Entry] = (),
    ) -> list[str]:
        agent = await self._agent(run)
        ctx = _context(run, calls, journal, note, settled=settled)
        async with _heartbeats():
            try:
                failures = (await run_verifiers(agent.verifiers, ctx)).failures  # each within its timeout
                return w.fitted_failures(failures)
            except Exception as exc:  # its message read off the loop; a cause Temporal could not read dropped
                raise ApplicationError(
                    await said_soon(exc), type=type(exc).__name__, non_retryable=True, category=BENIGN
                ) from (exc if plain_error(exc) else None)

    @activity.defn(name=w.CLEANUP)
    async def cleanup(self, run: dict[str, Any]) -> None:
        """The run ended for good: let its world go. A worker whose catalog lacks the run's agent cannot
        know its cleanup: it refuses the call (`_refusal`, so another worker of the queue may take it
        within `catalog_wait`) and says so in its log, rather than skip the cleanup unseen."""
        for cache in (self._agents, self._cancels):
            for key in [k for k in cache if k[0] == run["run_id"]]:  # of each of its executions
                del cache[key]
        self._results.drop(run["run_id"])
        self._attempts.drop(run["run_id"])  # a run's id is its workflow's
        try:
            entry = self._entry(run["agent"])
        except Lacking as exc:
            log.warning("run %s: %s; its cleanup is not run on this worker", run["run_id"], exc.what)
            raise self._refusal(run, exc) from exc
        if entry.cleanup is not None:
            try:
                async with _heartbeats():
                    await asyncio.to_thread(entry.cleanup, run["state"])  # in a thread: it may block
            except Exception:
                log.warning("cleanup of run %s failed", run["run_id"], exc_info=True)

    @activity.defn(name=w.READY)
    async def ready(self, check: dict[str, Any]) -> None:
        """Refuse (a `ConfigError` failure) to go on with a run that this worker could not carry on: it
        has no agent of the run's name (a redeploy dropped or renamed it), or the approved call's tool
        (`check["tool"]`) is gone. The workflow then leaves the run as it was (see `workflow.REPLY_CHECKED`),
        as the store's runner gives such a run back."""
        run = check["run"]
        try:
            agent = self._agents.get(_execution(run["run_id"])) or await self._build(run)
        except ConfigError as exc:
            said = (
                f"this worker cannot go on with run {run['run_id']}: {exc}. Deploy a worker whose catalog "
                f"has agent {run['agent']!r} on this task queue"
            )
            raise self._refusal(run, exc, said) from exc
        except (Exception, SystemExit) as exc:  # the entry's build raised: a redeploy broke it, refused at
            # once, as the store's runner refuses it (tried again, it failed the check's whole 20 s)
            log.warning(
                "run %s: the catalog's build of agent %r raised", run["run_id"], run["agent"], exc_info=True
            )
            raise _refused(
                f"agent {run['agent']!r} could not be set up on this worker: its catalog entry's build "
                f"raised {type(exc).__name__}: {await said_soon(exc)}. Fix the build and deploy the "
                "worker again"
            ) from exc
        if retired := retired_model(agent):
            raise _refused(
                f"agent {run['agent']!r} cannot call its model: {retired}; every call of it fails, so the "
                "run would end as error. Deploy a worker whose agent calls a model that is served"
            )
        tool = check.get("tool")
        if tool is not None and agent.tool_named(tool) is None:
            raise _refused(
                f"agent {run['agent']!r} has no tool {tool!r} any more, so the approved call cannot run. "
                "Deploy a worker whose agent has that tool, or deny the call"
            )

    # -- the run's calls -----------------------------------------------

    def _keep_nodes(
        self, run_id: str, nodes: dict[str, Any], missing: list[str], calls: bool = False
    ) -> None:
        """Keep the chunk tree's nodes an input defines (see `_wire.CHUNK`), a chunk's entries with their
        long texts by digest, keeping those sent in full; a chunk that names a text this worker lacks is
        not kept, and goes to `missing` with the text, to be sent again with it."""
        for digest, node in nodes.items():
            lacked: list[str] = []
            if "entries" in node and calls:
                for record in node["entries"]:  # each long text sent in full is kept (decoded when read)
                    self._results.resolved(run_id, record, "result", lacked)
                node = {"entries": [w.digest_form(record, "result") for record in node["entries"]]}
            elif "entries" in node:
                self._journal(run_id, node["entries"], lacked)
                node = {"entries": w.texts_mapped(node["entries"], w.digest_form)}
            if lacked:
                missing.extend([*lacked, digest])
            else:
                self._results.keep_as(run_id, digest, json.dumps(node, separators=(",", ":")))

    def _prefix(self, run_id: str, roots: list[str], missing: list[str], calls: bool = False) -> list[Any]:
        """The items a chunked input names by `roots`, decoded: journal entries, or with `calls` the run's
        calls; the nodes and texts this worker does not keep go to `missing`."""
        items: list[Any] = []
        for root in roots:
            self._expanded(run_id, root, items, missing, calls)
        return items

    def _expanded(self, run_id: str, digest: str, out: list[Any], missing: list[str], calls: bool) -> None:
        """Add the items of the chunk tree's node `digest` to `out`, decoded; a node not kept goes to
        `missing`. A chunk is decoded once, at its first call, and kept decoded beside its definition
        (`KeptResults.chunk`): a long run's every call decoded its whole journal again, so a turn's cost
        grew with the run (a turn of a 2,000-turn run took 2.6 times one at its start)."""
        kind = "calls" if calls else "journal"
        if (decoded := self._results.chunk(run_id, kind, digest)) is not None:
            out.extend(decoded)
            return
        kept = self._results.get(run_id, digest)
        if kept is None:
            missing.append(digest)
            return
        node = json.loads(kept)
        for child in node.get("chunks", ()):
            self._expanded(run_id, child, out, missing, calls)
        if "entries" not in node:
            return
        lacked: list[str] = []
        if calls:
            items: list[Any] = self._calls(run_id, node["entries"], lacked)
        else:
            items = w.journal_from_json(self._journal(run_id, node["entries"], lacked), start=len(out))
        if lacked:
            missing.extend(lacked)
            return
        self._results.keep_chunk(run_id, kind, digest, tuple(items), len(kept))
        out.extend(items)

    def _lacking(self, missing: list[str]) -> dict[str, Any]:
        """The answer of a call that names texts this worker does not keep: the workflow sends them to
        this worker's own queue (see `_remote.by_digest`)."""
        return {"missing": list(dict.fromkeys(missing))} | ({"worker": self.queue} if self.queue else {})

    def _calls(self, run_id: str, sent: list[dict[str, Any]], missing: list[str]) -> list[CallRecord]:
        """The run's calls as the workflow sent them (see `KeptResults.resolved`); the digests this
        worker does not keep go to `missing`."""
        records = [self._results.resolved(run_id, record, "result", missing) for record in sent]
        return [
            CallRecord(r["name"], r["arguments"], r["result"], r.get("is_error", False)) for r in records if r
        ]

    def _journal(self, run_id: str, sent: list[dict[str, Any]], missing: list[str]) -> list[dict[str, Any]]:
        """A journal as the workflow sent it, each text sent by digest taken from those this worker keeps
        (see `KeptResults.resolved`); the digests it does not keep go to `missing`."""
        return w.texts_mapped(sent, lambda item, key: self._results.resolved(run_id, item, key, missing))

    # -- the catalog's cancel ------------------------------------------

    def _told(
        self, run: dict[str, Any], out: dict[str, Any], state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`out`, with `cancel`: whether the run's catalog entry's `cancel` signal is set, when the
        workflow asks (`check_cancel`): the loop then stops before its next turn, as the store's runner
        stops it. The signal is made once per execution of the run on this worker, from its state
        (`state`, if given)."""
        if not run.get("check_cancel"):
            return out
        run_id, key = run["run_id"], _execution(run["run_id"])
        if key not in self._cancels:
            self._cancels[key] = _cancel_signal(self.catalog, run["agent"], state or run["state"], run_id)
            while len(self._cancels) > MAX_CACHED_AGENTS:
                self._cancels.popitem(last=False)
        return {**out, "cancel": _is_set(self._cancels[key], run_id)}

    # -- agents --------------------------------------------------------

    async def _agent(self, run: dict[str, Any]) -> Agent:
        """The run's agent on this worker, built once per execution of the run."""
        key = _execution(run["run_id"])
        found = self._agents.get(key)
        if found is not None:
            self._agents.move_to_end(key)
            return found
        try:
            return await self._build(run)
        except ConfigError as exc:
            raise self._refusal(run, exc) from exc

    def _refusal(self, run: dict[str, Any], exc: ConfigError, said: str | None = None) -> ApplicationError:
        """The failure of a call this worker cannot build the run's agent for (`said`, else `exc`'s words).
        When its catalog lacks the agent or task type (`Lacking`), another worker of the queue may have it
        (a rolling deploy): Temporal tries the call again after `_wire.refusal_delay`, until `catalog_wait`
        seconds since it was first scheduled (or its own schedule-to-close timeout) would pass. One line in
        the log each time; only then, or for any other `ConfigError`, is the refusal final."""
        said = said or str(exc)
        try:
            info = activity.info()
        except RuntimeError:  # not in an activity (a worker's calls made by hand): refused at once
            return _refused(said)
        wait = self.catalog_wait
        if info.schedule_to_close_timeout:  # the call's own bound (a reply's check: `workflow.READY_TIMEOUT`)
            wait = min(wait, info.schedule_to_close_timeout.total_seconds())
        if not isinstance(exc, Lacking) or not wait:
            return _refused(said)
        delay = w.refusal_delay(info.attempt)
        waited = _waited(info)
        if waited + delay > wait or _last_attempt(info):
            log.warning(
                "run %s: %s; its %s call is refused for good", run["run_id"], exc.what, info.activity_type
            )
            if info.attempt == 1:
                return _refused(said)
            tried = f"It was tried {info.attempt} times, by any worker of the queue, within {wait:g} s"
            return _refused(f"{said}. {tried} (--catalog-wait)")
        log.warning(
            "run %s: %s; Temporal tries its %s call again in %g s (attempt %d)",
            run["run_id"],
            exc.what,
            info.activity_type,
            delay,
            info.attempt + 1,
        )
        return ApplicationError(
            said, type="ConfigError", category=BENIGN, next_retry_delay=timedelta(seconds=delay)
        )

    def _entry(self, agent: str) -> AgentEntry:
        """The catalog's entry for `agent`; `Lacking`, saying why every worker of a task queue needs it,
        when this worker's catalog lacks it."""
        try:
            return self.catalog.entry(agent)
        except ConfigError as exc:
            raise Lacking(f"{exc}{ONE_CATALOG}", f"this worker's catalog has no agent {agent!r}") from exc

    async def _build(self, run: dict[str, Any]) -> Agent:
        """The run's agent from the catalog, built on a daemon thread (as a sync tool runs): a build
        that waits (a server, a lock, a prompt) holds up no other run's activities on the worker's
        loop, nor a thread of its default executor for good. Kept in the worker's cache of the run's
        execution."""
        entry = self._entry(run["agent"])
        built = await _in_daemon_thread(functools.partial(entry.build, dict(run["state"])), {})
        agent = named_as_entry(run["agent"], built)
        if not isinstance(agent, Agent):
            raise ConfigError(
                f"agent {run['agent']!r} is a foreign ({agent.framework}) agent: Temporal runs Endstate "
                "agents only; run it with the store's runner (`endstate start`, `endstate serve`)"
            )
        task_type = run.get("task_type")
        if task_type and task_type != agent.task_type:
            if task_type not in entry.task_types:
                allowed = ", ".join(sorted({agent.task_type, *entry.task_types}))
                raise Lacking(
                    f"agent {run['agent']!r} does not run task type {task_type!r}; use one of: {allowed}"
                    f"{ONE_CATALOG}",
                    f"this worker's agent {run['agent']!r} does not run task type {task_type!r}",
                )
            agent = dataclasses.replace(agent, task_type=task_type)
        self._agents[_execution(run["run_id"])] = agent
        while len(self._agents) > MAX_CACHED_AGENTS:
            self._agents.popitem(last=False)
        return agent


class Lacking(ConfigError):
    """This worker's catalog lacks the run's agent (or task type): another worker of the queue may have
    it. `what` says what is missing, in a few words for the log."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


# Temporal hands a run's tasks to whichever worker polls its task queue, however their catalogs differ: a
# worker that lacks the run's agent (or task type) refuses its calls, Temporal tries them again on whichever
# worker takes them, and once the worker's `catalog_wait` is spent the run ends `error` saying so.
ONE_CATALOG = (
    " (on this worker: Temporal hands a run's work to any worker polling its task queue, so every one"
    " of them needs the same catalog. Give workers of another catalog a task queue of their own"
    " (`--task-queue`); in a deploy that adds an agent or task type, start its runs once every worker"
    " has it)"
)


def _execution(run_id: str) -> Execution:
    """The key of a run's agent and cancel signal on this worker: one per execution of its workflow.
    A resume is a new execution, so the resumed run's agent and cancel signal are asked of the catalog
    again, as the store's runner asks for each segment: a signal that cancelled the run before (the
    seed's shutdown scenario sets its world's) does not cancel the resumed run at once."""
    try:
        return run_id, activity.info().workflow_run_id or ""
    except RuntimeError:  # not in an activity (a worker's calls made by hand, in tests)
        return run_id, ""


def _cancel_signal(catalog: Catalog, agent: str, state: dict[str, Any], run_id: str) -> CancelSignal | None:
    """The catalog entry's cancel signal for a run (None when it has none, or failed to make one: logged)."""
    entry = catalog.entries.get(agent)
    if entry is None or entry.cancel is None:
        return None
    what = f"the cancel signal that the catalog's cancel(state) of agent {agent!r} returned"
    try:
        return check_cancel(entry.cancel(dict(state)), what)
    except ConfigError as exc:  # as the store's runner says it; here the run goes on uncancellable
        log.warning("run %s: %s; the run goes on", run_id, exc)
    except Exception:
        log.warning(
            "run %s: the catalog's cancel for agent %r failed; the run goes on", run_id, agent, exc_info=True
        )
    return None


def _is_set(signal: CancelSignal | None, run_id: str) -> bool:
    try:
        asked = signal is not None and signal.is_set()
    except Exception:
        log.warning("run %s: its cancel signal failed; the run goes on", run_id, exc_info=True)
        return False
    if asked is not True and asked is not False:  # a Mock, "no": a failing signal, not a cancel
        log.warning("run %s: %s; the run goes on", run_id, unanswered(asked))
        return False
    return asked


class _CutOff(Exception):
    """The run's time budget ran out during the model call."""


async def _complete(agent: Agent, call: dict[str, Any], settled: Sequence[Entry] = ()) -> dict[str, Any]:
    """The model's reply, the call cut off when the run's time budget (`seconds`, if sent) runs out.

    The workflow's own timer cuts the call at the same moment; this deadline,
    counted from the activity's start, lets the worker end the call and report
    what it used without waiting for the cancel to reach it with a heartbeat.
    """
    request = w.request_from_json(call["request"], settled)
    if (seconds := call.get("seconds")) is None:  # time not budgeted: no timer
        return w.reply_json(await agent.model.complete(request))
    budget = asyncio.timeout(seconds)
    try:
        async with budget:
            return w.reply_json(await agent.model.complete(request))
    except TimeoutError:
        if budget.expired():
            raise _CutOff("the model call was cut off when the run's time budget ran out") from None
        raise


def _cancel_requested() -> bool:
    details = activity.cancellation_details()
    return details is not None and details.cancel_requested


def _waited(info: activity.Info) -> float:
    """Seconds since the call was first scheduled, to when this attempt started: both times Temporal's,
    so a worker whose own clock runs ahead does not find the wait spent at once (ten minutes ahead,
    a `--catalog-wait 300` refusal was final at its first attempt, the run ended `error`), nor one
    behind never spent."""
    return max(0.0, (info.started_time - info.scheduled_time).total_seconds())


def _last_attempt(info: activity.Info) -> bool:
    """Whether the call's retry policy allows it no more attempts (an approved call runs once; a run started
    before `_remote.CATALOG_ROOM` has its few)."""
    most = info.retry_policy.maximum_attempts if info.retry_policy else 0
    return bool(most) and info.attempt >= most


def _refused(message: str) -> ApplicationError:
    return ApplicationError(message, type="ConfigError", non_retryable=True, category=BENIGN)


def _failure(message: str, kind: str, details: dict[str, Any] | None = None) -> ApplicationError:
    """A failure the loop handles (not retried by Temporal), with what the workflow needs of it."""
    args = (details,) if details is not None else ()
    return ApplicationError(message, *args, type=kind, non_retryable=True, category=BENIGN)


class KeptResults:
    """Long texts (tool results, replies' texts, tasks) by run and digest, for the calls that name them by
    digest (`_wire.INLINE_RESULT`).

    Past `limit` characters, the least recently used runs' results go: a call
    that names one then has the workflow send it again.
    """

    def __init__(self, limit: int) -> None:
        self._runs: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._chunks: dict[str, dict[tuple[str, str], tuple[tuple[Any, ...], int]]] = {}  # decoded, cost
        self._chars = 0
        self._limit = limit

    def get(self, run_id: str, digest: str) -> str | None:
        return self._runs.get(run_id, {}).get(digest)

    def chunk(self, run_id: str, kind: str, digest: str) -> tuple[Any, ...] | None:
        """The items of the chunk `digest` (journal entries or calls: `kind`), as decoded when first read."""
        found = self._chunks.get(run_id, {}).get((kind, digest))
        return None if found is None else found[0]

    def keep_chunk(self, run_id: str, kind: str, digest: str, items: tuple[Any, ...], chars: int) -> None:
        """Keep a chunk's items decoded, counted as `DECODED_COST` times its definition's `chars` within
        the limit (they go with the run's texts). A digest names its chunk's content, and the texts it
        names by digest, for good: what a call decodes is what it would decode again."""
        if run_id not in self._runs:  # its texts went (the limit), its chunk's definition with them
            return
        chunks = self._chunks.setdefault(run_id, {})
        if (kind, digest) not in chunks:
            chunks[kind, digest] = items, chars * DECODED_COST
            self._chars += chars * DECODED_COST
        self._within(run_id)

    def keep(self, run_id: str, text: str) -> None:
        if len(text) > w.INLINE_RESULT:
            self.keep_as(run_id, w.result_digest(text), text)

    def keep_as(self, run_id: str, digest: str, text: str) -> None:
        """Keep `text` by `digest` (a chunk tree's node by its own: see `_wire.CHUNK`), within the limit."""
        texts = self._runs.setdefault(run_id, {})
        if digest not in texts:
            texts[digest] = text
            self._chars += len(text)
        self._within(run_id)

    def _within(self, run_id: str) -> None:
        """`run_id` the most recently used run; the least recently used go while over the limit."""
        self._runs.move_to_end(run_id)
        while self._chars > self._limit:
            self.drop(next(iter(self._runs)))

    def resolved(
        self, run_id: str, item: dict[str, Any], key: str, missing: list[str]
    ) -> dict[str, Any] | None:
        """`item` as sent, its value at `key` taken by its `digest` from those kept (a provider's block
        from its JSON); None, the digest added to `missing`, when not kept. A long value sent in full is
        kept, for the calls after."""
        digest = item.get("digest")
        if digest is None:
            if (text := w.kept_text(item.get(key))) is not None:
                self.keep(run_id, text)
            return item
        text = self.get(run_id, str(digest))
        if text is None:
            missing.append(str(digest))
            return None
        value = json.loads(text) if item.get("json") else text
        return {k: v for k, v in item.items() if k not in ("digest", "json")} | {key: value}

    def drop(self, run_id: str) -> None:
        texts = self._runs.pop(run_id, None) or {}
        chunks = self._chunks.pop(run_id, None) or {}
        self._chars -= sum(len(t) for t in texts.values()) + sum(cost for _, cost in chunks.values())


def _as_sent(result: Result, cap: int | None) -> set[str]:
    """A tool result as a later call holds it: whole (`ctx.calls`), and cut as the model is sent it;
    content blocks as their JSON (`_wire.kept_text`), whole and cut, beside their text."""
    shown = HistoryPolicy(max_result_chars=cap).shown(result) if cap is not None else []
    sent = [result, *(e for e in shown if isinstance(e, Result))]
    if not result.blocks:
        return {e.text for e in sent}
    blocks = [encode_entry(e).get("blocks") for e in sent]
    return {result.text} | {t for b in blocks if (t := w.kept_text(b)) is not None}


def _dicts(replies: list[ModelReply]) -> list[dict[str, Any]]:
    return [w.reply_json(r) for r in replies]


def _context(
    run: dict[str, Any],
    calls: list[CallRecord],
    journal: list[dict[str, Any]] | None = None,
    note: str = "",
    call_id: str = "",
    settled: Sequence[Entry] = (),
) -> RunContext:
    """The context a tool or verifier is given; its journal the entries `settled` (decoded) and then
    `journal`."""
    return RunContext(
        run_id=run["run_id"],
        agent=run["agent"],
        task=run["task"],
        task_type=run.get("task_type") or "",
        journal=Journal([*settled, *w.journal_from_json(journal or [], start=len(settled))]),
        calls=calls,
        state=dict(run["state"]),
        note=note,
        call_id=call_id,
    )


def _fingerprint(agent: Agent, ctx: RunContext) -> str:
    assert agent.fingerprint is not None
    try:
        return agent.fingerprint(ctx)
    except Exception as exc:  # the loop would have ended the run; here the state reads as unknown
        log.warning("fingerprint of run %s failed: %s", ctx.run_id, exc)
        return f"fingerprint failed: {type(exc).__name__}"


@contextlib.asynccontextmanager
async def _heartbeats() -> AsyncIterator[None]:
    """Heartbeat while the call runs, so a dead worker is noticed within the heartbeat timeout."""
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        yield
        return
    every = max(timeout.total_seconds() / 3, 0.1)

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@activity.defn(name=w.CALL_STATE)
async def call_state(ask: dict[str, Any]) -> dict[str, Any]:
    """Where the workflow's activity `ask["activity_id"]` is, as Temporal knows it: `pending` (not yet
    answered), its `attempt`, and `started` (when that attempt began on a worker, Temporal's time; None
    while it waits for one). A local activity of the workflow that waits on it (`_remote.QUEUE_NOT_COUNTED`).
    """
    info = activity.info()
    if info.workflow_id is None:  # not a workflow's activity: nothing it waits on
        return {"pending": False}
    handle = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
    for pending in (await handle.describe()).raw_description.pending_activities:
        if pending.activity_id == ask["activity_id"]:
            began = pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
            started = pending.last_started_time.ToDatetime(tzinfo=UTC).timestamp() if began else None
            return {"pending": True, "attempt": pending.attempt, "started": started}
    return {"pending": False}


@activity.defn(name=w.WORKER_SETUP)
async def worker_setup(ask: dict[str, Any]) -> dict[str, Any]:
    """This worker's settings for the runs of `ask["task_queue"]` that change what commands a run makes
    (`_wire.RECORDED_SETUP`). A local activity, so that the execution that asks keeps the answer in its
    history (`workflow.SETUP_RECORDED`)."""
    setup = _registry.lookup(ask["task_queue"])
    return {name: getattr(setup, name) for name in w.RECORDED_SETUP}


PREPARE_HEADROOM = 5.0  # seconds kept short of the activity's start-to-close timeout: the worker says why


def _prepare_seconds() -> float:
    """How long a catalog's `prepare` may take on this worker: `$ENDSTATE_PREPARE_TIMEOUT` (else 300 s),
    ended a little before the activity's own start-to-close timeout, so that the run ends naming the
    hung `prepare` (`PrepareHangs`), not with a timeout Temporal would try again."""
    seconds = prepare_timeout()
    whole = activity.info().start_to_close_timeout
    if whole is not None and whole.total_seconds() > 2 * PREPARE_HEADROOM:
        seconds = min(seconds, whole.total_seconds() - PREPARE_HEADROOM)
    return seconds
