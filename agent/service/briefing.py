"""What the person answering a waiting run is told: what the agent did before asking, and what
the pending call would do.

A briefing is read from the run's journal (the last tool calls that ran, with their arguments
and results shortened) and, for an approval, from the tool's own `preview`. To get that
preview the service builds the run's agent from the catalog, as it does to resume the run;
a preview that fails or takes too long is said so, never an error page.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool

from agent._state import calls_of
from agent.durable.catalog import Catalog
from agent.durable.store import RunRecord
from agent.errors import EndstateError
from agent.journal import Entry, Journal, Reply, Result
from agent.service.visible import visible_json
from agent.snapshot import Snapshot
from agent.text import flat_clip
from agent.tools import _in_daemon_thread  # the tools' daemon pool: a hung preview never blocks exit

log = logging.getLogger("endstate.service")

STEPS_SHOWN = 5  # the last tool calls a briefing lists
TAIL_ENTRIES = 64  # the journal entries read first for them (see `journal_end`)
ARGUMENTS_CHARS = 300
RESULT_CHARS = 300
PREVIEW_CHARS = 20_000
PREVIEW_SECONDS = 5.0


def waited_seconds(record: RunRecord, now: float) -> float:
    """How long the run has waited for a person: to now, or to its deadline once that has passed
    (the wait ended there, as the run's `waiting_seconds` will say once the sweep expires it)."""
    end, asked = now if record.deadline is None else min(now, record.deadline), record.asked_at
    return 0.0 if asked is None else max(0.0, end - asked)


@dataclass(frozen=True)
class Step:
    """One tool call that ran: its name, its arguments as JSON and its result, both shortened."""

    name: str
    arguments: str
    result: str
    is_error: bool


@dataclass(frozen=True)
class Preview:
    """What the pending call would do (`text`), or why that cannot be shown (`missing`); `length`,
    when `text` is only the start of a longer preview, is how long the whole one is."""

    text: str = ""
    missing: str = ""
    length: int = 0


@dataclass(frozen=True)
class Briefing:
    """A waiting run and what a person needs to answer it."""

    record: RunRecord
    steps: list[Step]
    preview: Preview | None  # None when the run asks a question rather than an approval
    expired: bool
    unreadable: str = ""  # why the run's journal cannot be read (the others are shown all the same)


async def brief(records: list[RunRecord], store: Any, catalog: Catalog, now: float) -> list[Briefing]:
    """A briefing per record: journals read off the event loop, the approvals' previews at once
    (a page of slow previews takes PREVIEW_SECONDS, not that for each)."""
    read = await run_in_threadpool(lambda: [steps_of(store, r) for r in records])
    shown = await asyncio.gather(*(_preview_if_pending(r, catalog) for r in records))
    return [
        Briefing(r, steps, shown_, _expired(r, now), why)
        for r, (steps, why), shown_ in zip(records, read, shown, strict=True)
    ]


async def _preview_if_pending(record: RunRecord, catalog: Catalog) -> Preview | None:
    return await preview(record, catalog) if record.pending else None


def steps_of(store: Any, record: RunRecord) -> tuple[list[Step], str]:
    """The run's last steps; none, and why, when its journal cannot be read (a damaged row)."""
    try:
        return last_steps(journal_end(store, record.run_id)), ""
    except EndstateError as exc:
        log.warning("run %s: its journal cannot be read for the inbox: %s", record.run_id, exc)
        return [], f"Its journal cannot be read ({clip(str(exc), 200)}): the store row is damaged."


def _expired(r: RunRecord, now: float) -> bool:
    return r.deadline is not None and r.deadline <= now


def journal_end(store: Any, run_id: str, n: int = STEPS_SHOWN) -> Snapshot | None:
    """The run's snapshot with as much of its journal's end as its last `n` tool calls need (each
    with the reply that made it): read from the end, `TAIL_ENTRIES` entries first, twice as many each
    time they are not enough. A page of 50 waiting runs read each whole journal for its last 5
    calls, at a cost that grew with each run's length (and held each whole in memory); a store with
    no `journal_tail` (Temporal's) is asked for the snapshot."""
    tail = getattr(store, "journal_tail", None)
    if tail is None:
        snapshot: Snapshot | None = store.snapshot(run_id)
        return snapshot
    count = TAIL_ENTRIES
    while True:
        snapshot = tail(run_id, count)
        if snapshot is None or len(snapshot.journal) < count or _holds_calls(snapshot.journal, n):
            return snapshot
        count *= 2


def _holds_calls(journal: list[Entry], n: int) -> bool:
    """True when `journal` (the end of a run's) holds its last `n` calls that ran and the replies
    that made them."""
    made: set[str] = set()
    ran: list[str] = []
    for entry in journal:
        if isinstance(entry, Reply):
            made.update(c.id for c in entry.calls)
        elif isinstance(entry, Result) and entry.ran:
            ran.append(entry.call_id)
    return len(ran) >= n and all(call_id in made for call_id in ran[-n:])


def last_steps(snapshot: Snapshot | None, n: int = STEPS_SHOWN) -> list[Step]:
    """The last `n` tool calls that ran in the snapshot's journal, oldest first."""
    if snapshot is None:
        return []
    journal = snapshot.journal
    return [
        Step(c.name, clip(_json(c.arguments), ARGUMENTS_CHARS), clip(c.result, RESULT_CHARS), c.is_error)
        for c in calls_of(Journal(list(journal)))[-n:]
    ]


async def preview(record: RunRecord, catalog: Catalog) -> Preview:
    """The pending call's preview, from the tool as the run's agent has it. The agent is built, and
    the preview made, on the tools' daemon threads within PREVIEW_SECONDS in all: a build that waits
    (on a server, a lock, a prompt) holds up no other run of the service, as it did on the loop."""
    assert record.pending is not None
    key = (record.run_id, record.pending.tool_use_id)
    if key in _RUNNING:  # a refresh while the last one still runs: no second thread for it
        return Preview(missing="No preview: the tool's preview of this call, started earlier, still runs.")
    step: list[str] = []  # how far the thread got: "built" once the agent was
    try:
        whole = await asyncio.wait_for(_in_thread(key, _previewed(record, catalog, step)), PREVIEW_SECONDS)
    except TimeoutError:
        if not step:
            return Preview(
                missing=f"No preview: the agent could not be built here within {PREVIEW_SECONDS:g} s."
            )
        return Preview(missing=f"No preview: the tool's preview took longer than {PREVIEW_SECONDS:g} s.")
    except _Unbuilt as exc:  # a catalog that cannot build the agent here: say so
        return Preview(missing=f"No preview: the agent could not be built here ({_why(exc.exc)}).")
    except _NoPreview:
        return Preview(missing="This tool gives no preview: the arguments above are all the call gets.")
    except Exception as exc:  # the tool's own code: its failure is shown, not raised
        failed = exc.exc if isinstance(exc, _Exited) else exc
        return Preview(missing=f"No preview: the tool's preview failed ({_why(failed)}).")
    cut = len(whole) > PREVIEW_CHARS
    return Preview(text=whole[:PREVIEW_CHARS] if cut else whole, length=len(whole) if cut else 0)


class _Unbuilt(Exception):
    """The catalog could not build the run's agent here (`SystemExit` of an argparse config too)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


class _NoPreview(Exception):
    """The pending call's tool gives no preview (or the agent built here has no such tool)."""


def _previewed(record: RunRecord, catalog: Catalog, step: list[str]) -> Callable[[], object]:
    """What the preview's thread runs: build the run's agent (`step` says once it is built), then
    the pending call's preview."""
    assert record.pending is not None
    pending = record.pending

    def made() -> object:
        try:
            agent = catalog.entry(record.agent).build(record.state)
        except (Exception, SystemExit) as exc:
            raise _Unbuilt(exc) from exc
        step.append("built")
        found = agent.tool_named(pending.name)
        if found is None or found.preview is None:
            raise _NoPreview
        return found.preview(dict(pending.arguments))

    return made


class _Exited(Exception):
    """A preview's `SystemExit` or `KeyboardInterrupt` (an argparse-based helper), carried as an
    `Exception`: a task that raises either stops its event loop, and with it the whole service."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


_RUNNING: set[tuple[str, str]] = set()  # (run id, call id) of the previews running now


async def _in_thread(key: tuple[str, str], make: Callable[[], object]) -> str:
    """`make()` as text on the tools' daemon threads, marked running under `key` until it
    returns. The value is printed there too: its `__str__` is the tool's own code, which may fail
    (`SystemExit` too) or hang like the preview itself, and on the loop it would stop the service.

    Not the default executor: a preview that hangs would hold one of its few threads for good
    (each inbox refresh another), and with them the service's own work there (lease heartbeats,
    audits), and keep the process from exiting.
    """

    def job() -> str:
        try:
            return str(make())
        except Exception:
            raise
        except BaseException as exc:  # raised in `wait_for`'s task, it would stop the service's loop
            raise _Exited(exc) from exc
        finally:
            _RUNNING.discard(key)

    _RUNNING.add(key)  # and the job submitted before any await: the mark always comes off
    return await _in_daemon_thread(job, {})


def clip(text: str, limit: int, flat: bool = True) -> str:
    """`text` cut to `limit` characters (with `...`); `flat` folds whitespace onto one line, reading
    only the start of a long text (`flat_clip`)."""
    if flat:
        return flat_clip(text, limit)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json(arguments: object) -> str:
    return visible_json(arguments, sort_keys=True, default=str)


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {clip(str(exc), 200)}"
