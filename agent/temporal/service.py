"""`endstate serve --temporal`: the same HTTP API and help inbox, backed by Temporal.

The service (`agent.service.app`) drives a runner over a store; here a
runner and a store that speak to Temporal stand in for them. Starting,
answering, approving and denying hand the work to the workflow and return
202 at once (the workers run it); reads come from Temporal's visibility.
Deadlines and recovery are Temporal's own, so the sweeper has nothing to do.
Calls are made on a client loop of their own and waited for from the
service's loop (a few milliseconds each).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from temporalio.service import RPCError

from agent._within import beside
from agent.budget import Extension
from agent.clock import SYSTEM_CLOCK, Clock
from agent.durable.catalog import SEED_CATALOG, Catalog, load_catalog
from agent.durable.store import RunExists, RunRecord, RunStatus, StoreError
from agent.errors import ConfigError
from agent.service.auth import Token
from agent.service.config import Service
from agent.service.http import Problem
from agent.temporal.client import ElsewhereRun, TemporalRuns, TemporalUnavailable

T = TypeVar("T")
CALL_TIMEOUT_S = 30.0
_CALL = "endstate-temporal-call"  # the name of the thread a request's call to Temporal waits on


class Bridge:
    """Runs coroutines on a loop in a thread of its own and waits for them."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="endstate-temporal", daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], unanswered: StoreError | None = None) -> T:
        """The coroutine's result; when it has not come within `CALL_TIMEOUT_S`, the call is cancelled
        and `unanswered` raised (by default `TemporalUnavailable`: a 503, never a bare 500)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout=CALL_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise unanswered or TemporalUnavailable(
                f"Temporal did not answer within {CALL_TIMEOUT_S:g} s: it is down, restarting or out of "
                "reach. Waiting runs keep waiting; send it again once it is back"
            ) from None

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():  # stopped: its sockets are let go (none left to the collector)
            self.loop.close()


log = logging.getLogger("endstate.temporal")


class ReplyNotTaken(StoreError):
    """A reply handed to Temporal that no worker took in time: it may still be taken (a 503 with no
    `Retry-After`: a blind retry could answer the run's next question)."""


@dataclass(frozen=True)
class TemporalJob:
    """A run handed to Temporal; its workers carry it on. `note`: what the caller is told will happen,
    when it is not what a 202 says by itself (a worker has taken it)."""

    run_id: str
    note: str = ""


class TemporalStore:
    """The reads the service makes of a store, from Temporal's visibility."""

    def __init__(self, runs: TemporalRuns, bridge: Bridge) -> None:
        self.runs, self.bridge = runs, bridge
        self.shown = runs.shown

    def list_runs(
        self,
        status: RunStatus | None = None,
        limit: int | None = 50,
        agent: str | None = None,
        task_type: str | None = None,
    ) -> list[RunRecord]:
        records = self.bridge.call(self.runs.runs(status, limit, agent, task_type))
        if status is RunStatus.WAITING:
            records.sort(key=lambda r: r.suspended_at or 0.0)
        return records

    def get(self, run_id: str) -> RunRecord | None:
        return self.bridge.call(self.runs.record(run_id))

    def started(self, run_id: str) -> RunRecord | None:
        """`get`, with the state the run started with (one more call: what a start sent again with
        its run id is compared with)."""
        return self.bridge.call(self.runs.started(run_id))

    def snapshot(self, run_id: str) -> None:
        """A run's journal lives in its workflow's history, not in visibility: the inbox shows
        no tool history for runs on Temporal (yet)."""
        return None

    def schema_version(self) -> int:
        """Readiness: Temporal answers (`TemporalUnavailable` when it does not: /readyz's 503)."""
        try:
            self.bridge.call(self.runs.client.service_client.check_health())
        except RPCError as exc:
            raise TemporalUnavailable(f"Temporal is not answering: {exc.message}") from exc
        return 0


class TemporalRunner:
    """What the service asks of a runner, done by Temporal."""

    clock: Clock = SYSTEM_CLOCK  # what /pending and the inbox reckon waits by (as before: this host's)

    def __init__(self, runs: TemporalRuns, bridge: Bridge, catalog: Catalog | None = None) -> None:
        self.runs, self.bridge = runs, bridge
        self.store = TemporalStore(runs, bridge)
        self.catalog = catalog or Catalog()  # for the inbox's previews of pending calls

    def begin(self, agent: str, task: str, **options: Any) -> TemporalJob:
        try:
            run_id = self.bridge.call(self.runs.start(agent, task, wait=False, **options))
        except RunExists:
            if options.get("run_id"):
                self._taken_here(str(options["run_id"]))
            raise  # the service answers a retry of the same start with that run
        return TemporalJob(str(run_id))

    async def abegin(self, agent: str, task: str, *, calls: Any = None, **options: Any) -> TemporalJob:
        """`begin` on a thread of its own, not on the service's one thread for the runner's calls (a
        call Temporal is slow to answer waits up to `CALL_TIMEOUT_S`, and held every other request
        as long); Temporal orders what needs ordering (`calls` is not needed)."""
        job: TemporalJob = await beside(functools.partial(self.begin, agent, task, **options), _CALL)
        return job

    async def aclaim(
        self,
        run_id: str,
        answer: str | None = None,
        approved: bool | None = None,
        more: Extension | None = None,
        segments: int | None = None,
        by: str | None = None,
        *,
        calls: Any = None,
    ) -> TemporalJob:
        """`claim` on a thread of its own (see `abegin`): a reply no worker takes waits up to
        `CALL_TIMEOUT_S` for one, holding no other request."""
        claim = functools.partial(self.claim, run_id, answer, approved, more, segments, by)
        job: TemporalJob = await beside(claim, _CALL)
        return job

    def _taken_here(self, run_id: str) -> None:
        """A 409 when the taken id is another task queue's run: never the same start sent again. Any
        other failure to look it up leaves the `RunExists` as it is (the service's answer to a retry)."""
        try:
            self.bridge.call(self.runs.record(run_id))
        except ElsewhereRun as exc:
            raise Problem(409, f"run id {run_id!r} is taken: {exc}; use a new id") from exc
        except Exception:
            log.warning("run id %r is taken; looking up its task queue failed", run_id, exc_info=True)

    def claim(
        self,
        run_id: str,
        answer: str | None = None,
        approved: bool | None = None,
        more: Extension | None = None,
        segments: int | None = None,
        by: str | None = None,
    ) -> TemporalJob:
        """Hand a waiting run its reply (with `segments`, only while the run is still at the count read:
        checked by the workflow as it takes the reply); with neither, resume a cancelled run (with
        `more`: a limit stop). `by` names who replies: the run keeps it, as the store's runner does."""
        if answer is None and approved is None:
            if not self.bridge.call(self.runs.submit_resume(run_id, more)):
                return TemporalJob(run_id, self._unchecked(run_id))
        else:
            replied = self.runs.submit(run_id, answer, approved, segments, by)
            self.bridge.call(replied, self._not_taken(run_id))
        return TemporalJob(run_id)

    def _unchecked(self, run_id: str) -> str:
        """What a resume no worker has checked yet is told (its queue's worker stopped a moment ago)."""
        return (
            f"resumed, but no worker has taken it up yet: it waits on task queue {self.runs.task_queue!r} "
            "for a worker, which checks that it can go on with the run (if none can, the run ends as it "
            f"was, `not_resumed`, its note saying why). Read it: GET /runs/{run_id}"
        )

    def _not_taken(self, run_id: str) -> ReplyNotTaken:
        """What a reply no worker took in time is told: Temporal keeps it (an update cannot be taken
        back), so a worker that polls later may still take it; resending it blind could answer a
        later question. It keeps it in memory only (an update is written to the run's history once a
        worker takes it): a server restart may drop it, so the reader is told to read the run."""
        return ReplyNotTaken(
            f"no worker took the reply to run {run_id} within {CALL_TIMEOUT_S:g} s (is one polling task "
            f"queue {self.runs.task_queue!r}? one stopped a moment ago still counted as polling). Temporal "
            "holds it in memory, not in the run's history until a worker takes it: a worker that polls may "
            f"still take it, a server restart drop it. Read the run (GET /runs/{run_id}) before you send it "
            "again, with the `segments` read, so it never lands on a later question"
        )

    def spawn(self, job: TemporalJob) -> None:
        """Nothing to do here: the workflow goes on in the workers."""

    def recovery_jobs(self, limit: int | None = None) -> list[TemporalJob]:
        return []  # Temporal retries and moves runs whose worker died

    def expiry_jobs(self) -> list[TemporalJob]:
        return []  # each waiting run has its own timer at its deadline

    async def shutdown(self, grace: float = 10.0) -> None:
        """No run lives in this process."""

    async def audit_due(self) -> None:
        """Success audits of finished runs belong to the store's runner; none on Temporal yet."""


def _catalog(args: argparse.Namespace) -> Catalog:
    """The agents whose pending calls the inbox previews (the workers' catalog, when it loads here)."""
    try:
        return load_catalog(getattr(args, "catalog", None), default=SEED_CATALOG)
    except ConfigError as exc:
        log.warning("the inbox shows no previews: %s", exc)
        return Catalog()


def served(args: argparse.Namespace, runner: TemporalRunner, token: Token, metrics: Any) -> Service:
    """The service `serve --temporal` runs, with the settings of `serve` that apply to it (the
    others, such as --max-running or --retention, are the workers' and Temporal's own)."""
    from agent.service.app import allowed_hosts, reads_need_token
    from agent.service.server import _extra_hosts

    return Service(
        cast(Any, runner),  # duck-typed: the service's runner seam
        token,
        metrics=metrics,
        sweep_interval=3600.0,  # nothing to sweep: deadlines are the workflows' timers
        allowed_hosts=allowed_hosts(args.host, _extra_hosts(args)),
        reads_need_token=reads_need_token(args.host, args.read_auth),
        body_timeout=args.body_timeout,
        page_size=args.page_size,
        ready_timeout=args.ready_timeout,
    )


def serve(args: argparse.Namespace) -> int:
    """Serve the API and the inbox over the runs on `args.temporal` until SIGTERM or Ctrl-C."""
    import uvicorn

    from agent.service.app import create_app
    from agent.service.auth import load_token
    from agent.service.guard import accept_backlog, guarded_h11
    from agent.service.server import check_port_free, log_for_operators, run_until_stopped, say_serving
    from agent.temporal.pending import TemporalPending
    from telemetry import Telemetry

    check_port_free(args.host, args.port)  # said in one line, before Temporal is asked or a token made
    log_for_operators()
    bridge = Bridge()
    runs = bridge.call(TemporalRuns.connect(args.temporal, args.namespace, args.task_queue))
    pending = TemporalPending(args.temporal, args.namespace, args.task_queue)
    telemetry = Telemetry.from_env(pending=pending).for_service()  # /metrics shaped as `serve`'s
    try:
        token, source = load_token(args.token_file, Path(".endstate"))
        print(f"endstate serve: {runs.shown} at {args.temporal}; token from {source}", flush=True)
        service = served(args, TemporalRunner(runs, bridge, _catalog(args)), token, telemetry.exposition)
        say_serving(service, args)  # who may read, the hosts served, the inbox's address
        config = uvicorn.Config(
            create_app(service), host=args.host, port=args.port, lifespan="on", log_level="info",
            http=guarded_h11(args.header_timeout), backlog=accept_backlog(),
        )  # fmt: skip
        run_until_stopped(config)  # SIGTERM: closes all, then exits 0, as `serve` over a store
    finally:
        pending.close()
        telemetry.shutdown()
        bridge.close()
    return 0
