"""Review: the runs a person should look at, the labels they give, and the cases they promote.

The queue holds the finished runs no one has labelled yet that stopped as
`gave_up`, `limit`, `no_progress` or `error`, plus a stable sample of the
successes (a success can be false too), oldest first (newest first on
request: `order="newest"`). A label says what the
person found (`LABELS`); `endstate limits suggest` reads the labels, and
`promote` turns a labelled run into an eval case that replays its recorded
model replies and expects the exit the person chose.

Retention (`prune`) and counting labels for `/metrics` (`Upkeep`) live here
too: the service runs both on a schedule.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, Protocol

import yaml

from agent.budget import MAX_COUNT, MAX_FLOAT, MAX_SECONDS
from agent.durable.catalog import ENV_CATALOG, SEED_CATALOG, load_catalog
from agent.durable.store import NotClaimable, RunRecord, RunStatus, RunStore, UnknownRun
from agent.durable.store.base import ANSWERER_CHARS, Review, unplain
from agent.errors import ConfigError
from agent.finish import FINISH_TOOL
from agent.journal import Answer, Answered, Approval, Denial, Entry, Extended, Reply, Stopped, Suspended
from agent.result import StopReason
from agent.stops import FinishKind
from agent.summary import plural
from agent.text import escaped

log = logging.getLogger("endstate.review")

QUEUE_REASONS = (StopReason.GAVE_UP, StopReason.LIMIT, StopReason.NO_PROGRESS, StopReason.ERROR)
DEFAULT_SUCCESS_SHARE = 0.05  # one success in twenty is looked at too
DEFAULT_OUT = Path("evals") / "promoted"
PRUNE_EVERY = 3600.0  # seconds between prunes in the service
UPKEEP_EVERY = 30.0  # seconds between label counts in the service
NAME_CHARS = ANSWERER_CHARS  # the longest name a label is given under: an answerer's
NOTE_CHARS = 2000  # the longest note a label carries


class Label(StrEnum):
    """What a person found when they reviewed a run."""

    CORRECT_GIVE_UP = "correct_give_up"  # it was right to stop
    SHOULD_HAVE_SUCCEEDED = "should_have_succeeded"  # the task was possible: a regression to fix
    LIMIT_TOO_LOW = "limit_too_low"  # it was on its way: the ceiling cut it off
    FALSE_SUCCESS = "false_success"  # it said success, but the work is wrong
    FINE = "fine"  # nothing to act on


EXPECT_OF = {  # the exit a promoted case expects, by label; the others expect the exit the run had
    Label.SHOULD_HAVE_SUCCEEDED: StopReason.SUCCESS,
    Label.LIMIT_TOO_LOW: StopReason.SUCCESS,
    Label.FALSE_SUCCESS: StopReason.GAVE_UP,
}
KEEPS_ITS_EXIT = (Label.CORRECT_GIVE_UP, Label.FINE)

_FAILED = frozenset(StopReason) - {StopReason.SUCCESS, StopReason.NEED_HELP}
# The runs a label is for, by how they stopped, and what to call them (a label not here: any run).
# A success that should have given up is a false success; a success did not fail.
FOR_STOPS: dict[Label, tuple[frozenset[StopReason], str]] = {
    Label.CORRECT_GIVE_UP: (_FAILED, "did not succeed"),
    Label.SHOULD_HAVE_SUCCEEDED: (_FAILED, "did not succeed"),
    Label.LIMIT_TOO_LOW: (frozenset({StopReason.LIMIT}), "stopped as limit"),
    Label.FALSE_SUCCESS: (frozenset({StopReason.SUCCESS}), "stopped as success"),
}


def labels_for(stop: StopReason | None) -> list[Label]:
    """The labels for a run that stopped as `stop`."""
    return [lab for lab in Label if lab not in FOR_STOPS or stop in FOR_STOPS[lab][0]]


class ReviewError(ConfigError):
    """A review command that cannot be done; the message says why and what to do instead."""


class LabelMismatch(ReviewError):
    """A label that is not for a run that stopped as this one did (the service answers 422)."""


def misfit(record: RunRecord, chosen: Label) -> str:
    """Why `chosen` is no label for `record` (how it stopped), with the labels that are; "" if it is."""
    stop = record.stop_reason
    if chosen not in FOR_STOPS or stop in FOR_STOPS[chosen][0]:
        return ""
    fitting = ", ".join(labels_for(stop))
    runs = FOR_STOPS[chosen][1]
    why = f"{chosen} is a label for runs that {runs}; for a run that stopped as {stop}: {fitting}"
    if stop is StopReason.SUCCESS:
        why += "; if it should have given up, its success is false: false_success"
    return why


MAX_AGE = 100 * 365 * 86400.0  # an age to prune at: older than any run (a larger one made no date)


def duration(flag: str, text: str) -> float:
    """Seconds in an age such as `30d`, above 0 and at most `MAX_AGE`; the error names the flag."""
    from agent.evals.limits import LimitsError, parse_duration

    try:
        seconds = parse_duration(text)
    except LimitsError:
        raise ReviewError(f"{flag} {text!r}: use a number and a unit: s, m, h, d or w (e.g. 30d)") from None
    if seconds == 0:  # every finished run is older than that: all would go
        raise ReviewError(f"{flag} {text!r}: give an age above 0 (e.g. 30d): 0 is every finished run")
    if seconds > MAX_AGE:
        raise ReviewError(f"{flag} {text!r}: at most 100 years (36500d), older than any run")
    return seconds


# -- the queue and the labels -------------------------------------------------------------------


def queue(
    store: RunStore,
    reasons: Sequence[StopReason] = QUEUE_REASONS,
    success_share: float = DEFAULT_SUCCESS_SHARE,
    limit: int | None = 100,
    **page: Any,
) -> list[RunRecord]:
    """The runs to review, oldest first (`page`: `offset`, `agent`, `task_type`, `order="newest"` for the
    newest first, as the store takes them)."""
    _check_share(success_share)
    return store.review_queue(reasons, success_share, limit, **page)


def queue_counts(
    store: RunStore,
    reasons: Sequence[StopReason] = QUEUE_REASONS,
    success_share: float = DEFAULT_SUCCESS_SHARE,
) -> list[tuple[str, str, int]]:
    """How many runs the queue holds, by (agent, task type)."""
    _check_share(success_share)
    return store.review_counts(reasons, success_share)


def _check_share(success_share: float) -> None:
    if not 0.0 <= success_share <= 1.0:
        raise ReviewError(f"the share of successes to review must be between 0 and 1, not {success_share}")


def label(
    store: RunStore, run_id: str, value: str, note: str = "", now: float | None = None, by: str = ""
) -> Review:
    """Store a person's label for a finished run, with who gave it (`by`, see `labeller`) and a note
    of at most `NOTE_CHARS` characters."""
    try:
        chosen = Label(value)
    except ValueError:
        shown = repr(value[:40]) + ("..." if len(value) > 40 else "")
        raise ReviewError(f"{shown} is not a label; use one of: {', '.join(Label)}") from None
    name = labeller(by)
    if len(note) > NOTE_CHARS:
        raise ReviewError(
            f"the note is {len(note)} characters long; at most {NOTE_CHARS} are kept: shorten it (the "
            "label's own record is the run; a longer account belongs in a ticket the note names)"
        )
    record = store.get(run_id)
    if record is not None and record.status is RunStatus.FINISHED and (why := misfit(record, chosen)):
        raise LabelMismatch(f"run {run_id} stopped as {record.stop_reason}: {why}")
    return store.add_review(run_id, chosen, note, time.time() if now is None else now, name)


def labeller(by: str) -> str:
    """The name a label is given under, trimmed: as an answer's (`answerer`), plain text on one line
    of at most `NAME_CHARS` characters, and never blank: the review page requires one (`ReviewError`
    says why not)."""
    name = by.strip()
    if not name:
        raise ReviewError(
            "say who gives the label: a name (such as 'ana'), kept with it and shown to whoever reads it "
            "next; nothing was labelled"
        )
    if len(name) > NAME_CHARS:
        raise ReviewError(
            f"the labeller's name is {len(name)} characters long; at most {NAME_CHARS} characters are kept: "
            "give a shorter name"
        )
    if unplain(name):  # as an answer's name: a line break or an escape is no name to show
        raise ReviewError(
            f"the labeller's name {name!r} holds control or invisible characters (a line break, an escape, "
            "a bidi mark): give the name as plain text on one line"
        )
    return name


def latest_labels(store: RunStore, run_ids: Sequence[str] | None = None) -> dict[str, Review]:
    """The label that counts for each run: its latest."""
    return {r.run_id: r for r in store.reviews(run_ids=run_ids)}


# -- promote --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Promoted:
    """A case written from a reviewed run."""

    path: Path
    name: str
    expected: list[str]


def promote(
    store: RunStore,
    run_id: str,
    expect: str | None = None,
    out: Path = DEFAULT_OUT,
    *,
    catalog: str | None = None,
    overwrite: bool = True,
) -> Promoted:
    """Write an eval case that replays the run's recorded replies and expects the chosen exit; the
    bytes of the images and PDFs its tools returned go beside it, in `blobs/` (agent.evals.replay).

    `catalog` (module:attr) is where the run's agent comes from, for an agent other than the
    seed ones; without `overwrite`, an existing case file is refused (`CaseExists`).
    """
    record, journal = _reviewable(store, run_id)
    case = _promoted(store, record, journal, expect, catalog)
    if case.get("catalog"):
        _check_catalog(case["catalog"], case["agent"])
    path = out / case_file(run_id)
    if path.exists() and not overwrite:
        raise CaseExists(
            f"{path} exists already: a case was promoted from run {run_id} before. Delete or move that "
            "file to promote the run again"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        _write_blobs(out, journal)
    except OSError as exc:  # a file where the folder goes, a read-only file system
        what = "a file, not a folder" if out.is_file() else str(exc.strerror or exc)
        raise ReviewError(f"cannot write eval cases into {out}: {what}; name a folder with --out") from exc
    try:
        if overwrite:  # a new file renamed over the old: never half written, nor written through a link
            _write_new(path, case_yaml(case).encode())
        else:
            _write_once(path, case_yaml(case).encode())
    except FileExistsError:
        raise CaseExists(f"{path} exists already (written just now by someone else)") from None
    except OSError as exc:
        raise ReviewError(f"cannot write the case file {path}: {exc.strerror or exc}") from exc
    then = case.get("then")
    return Promoted(path, case["name"], [case["expect"]] + ([then["expect"]] if then else []))


class CaseExists(ReviewError):
    """The case file a promote would write is there already."""


def _write_blobs(out: Path, journal: Sequence[Entry]) -> None:
    """The bytes of the run's images and PDFs, each once, in `out/blobs/`, named by their digest.
    Written before the case, so no case lacks them. A file there already is kept when it holds the
    bytes its name says, and replaced when it does not (changed or cut short since: a case that reads
    it would be refused); each is written to a file of its own first, then renamed into place, so
    two promotes at once never leave one half written."""
    from agent.evals.replay import blob_path, blobs_of, holds

    for digest, (media_type, raw) in blobs_of(journal).items():
        path = blob_path(out, digest, media_type)
        if holds(path, digest):
            continue
        if path.exists() or path.is_symlink():
            log.warning("%s does not hold the bytes its name says: written again", path)
        try:
            path.parent.mkdir(exist_ok=True)
            _write_new(path, raw)
        except OSError as exc:
            raise ReviewError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _write_new(path: Path, raw: bytes) -> None:
    """`raw` at `path`, whole or not at all: written to a new file beside it (never one there, nor
    through a link), then renamed over `path`."""
    handle, part = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(raw)
        os.chmod(part, 0o644)
        os.replace(part, path)
    except BaseException:
        Path(part).unlink(missing_ok=True)
        raise


def _write_once(path: Path, raw: bytes) -> None:
    """`raw` in a new file at `path` (FileExistsError when one is there), removed again when it cannot
    be written whole: a half-written case (a full disk) would be taken for the promoted one, refused
    by `endstate eval`, and keep every later promote out."""
    with path.open("xb") as stream:
        try:
            stream.write(raw)
            stream.flush()
        except BaseException:
            path.unlink(missing_ok=True)
            raise


@dataclass(frozen=True)
class CaseFiles:
    """An eval case as the files that make it: the case (its YAML mapping), named after its run, and
    the bytes of the images and PDFs its results hold, by SHA-256 with their media type, which go in
    `blobs/` beside it (agent.evals.replay)."""

    run_id: str
    case: dict[str, Any]
    blobs: dict[str, tuple[str, bytes]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The case file's name."""
        return case_file(self.run_id)

    @property
    def archive(self) -> str:
        """The name of the zip that carries the case and its blobs."""
        return f"{self.name.removesuffix('.yaml')}.zip"

    def held(self) -> str:
        """What the blobs are, in words ("2 images and 1 PDF"); "" when there are none."""
        pdfs = sum(1 for media, _ in self.blobs.values() if media == "application/pdf")
        counts = [(len(self.blobs) - pdfs, "image"), (pdfs, "PDF")]
        return " and ".join(plural(n, what) for n, what in counts if n)

    def write_zip(self, stream: IO[bytes]) -> None:
        """The case file and `blobs/` as a zip: unzipped into a folder, `endstate eval FOLDER` runs it.
        The same case gives the same bytes (entries in a fixed order, with a fixed date)."""
        from agent.evals.replay import blob_path

        with zipfile.ZipFile(stream, "w") as archive:
            archive.writestr(_entry(self.name, zipfile.ZIP_DEFLATED), case_yaml(self.case))
            for digest, (media_type, raw) in sorted(self.blobs.items()):
                where = blob_path(Path(), digest, media_type).as_posix()
                archive.writestr(_entry(where, zipfile.ZIP_STORED), raw)  # PNG, JPEG, PDF: compressed


def _entry(name: str, compression: int) -> zipfile.ZipInfo:
    entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    entry.compress_type = compression
    entry.external_attr = 0o644 << 16  # a file anyone may read, as the promote writes it
    return entry


def case_files(
    store: RunStore, run_id: str, expect: str | None = None, catalog: str | None = None
) -> CaseFiles:
    """The eval case for a stored run (the exit from `expect` or its label) with its blobs."""
    from agent.evals.replay import blobs_of

    record, journal = _reviewable(store, run_id)
    case = _promoted(store, record, journal, expect, catalog)
    return CaseFiles(run_id, case, blobs_of(journal))


def case_yaml(case: dict[str, Any]) -> str:
    """A case file holding `case`; a character a reader would not see as itself is an escape in it."""
    text: str = yaml.dump(
        {"cases": [case]}, Dumper=_CaseDumper, sort_keys=False, allow_unicode=True, width=110
    )
    return _HIDDEN.sub(lambda found: escaped(found.group()), text)


# What YAML writes as it is but a reader does not see as itself: bidi overrides and isolates, zero-
# width and other format characters, tag characters, private-use and unassigned code points. A
# case file is read in editors, terminals and code review, where a model's U+202E reorders a line.
# Every text holding one is double-quoted (`_text`), where `\uXXXX` is an escape YAML reads back.
_HIDDEN = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\ue000-\uf8ff\U000e0000-\U000e0fff]"
)


class _CaseDumper(yaml.SafeDumper):
    """YAML that reads back as written: a text holding NEL (U+0085, a Windows-1252 ellipsis read
    as Latin-1) is double-quoted, where it is escaped; in the style PyYAML picks otherwise it is
    read back as a line break or not at all, and the replay then saw a tool answer differently."""


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    quoted = "\x85" in text or _HIDDEN.search(text)
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style='"' if quoted else None)


_CaseDumper.add_representer(str, _text)


def case_file(run_id: str) -> str:
    """The name of the case file promoted from `run_id`."""
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', run_id)}.yaml"


def _promoted(
    store: RunStore, record: RunRecord, journal: Sequence[Entry], expect: str | None, catalog: str | None
) -> dict[str, Any]:
    """The case for a labelled run: a give-up a person found right is an impossible task's case, so
    the report counts it under correct give-up and flags a success of it as a false success."""
    exit_ = _expected(store, record, expect)
    review = latest_labels(store, [record.run_id]).get(record.run_id)
    right = review is not None and review.label == Label.CORRECT_GIVE_UP and exit_ is StopReason.GAVE_UP
    return case_for(record, journal, exit_, catalog, impossible=right and _agent_gave_up(journal))


def _agent_gave_up(journal: Sequence[Entry]) -> bool:
    """The run's last reply asked to give up: the agent found the task impossible (not the API's
    refusal or a guardrail, which an impossible task's case counts as no sign of it)."""
    last = next((e for e in reversed(journal) if isinstance(e, Reply)), None)
    return last is not None and any(
        c.name == FINISH_TOOL and c.arguments.get("kind") == FinishKind.GIVE_UP for c in last.calls
    )


def case_for(
    record: RunRecord,
    journal: Sequence[Entry],
    expect: StopReason,
    catalog: str | None = None,
    *,
    impossible: bool = False,
) -> dict[str, Any]:
    """The eval case (as its YAML mapping) for a recorded run: of a seed agent in its fixture's
    world, or, with `catalog`, of that catalog's agent with the run's state; `impossible` marks the
    task as one to give up (`impossible: true`)."""
    from agent.evals.replay import record as replay_of
    from agent.examples.scenarios import AGENTS

    catalog = None if catalog == SEED_CATALOG else catalog
    if catalog is None and record.agent not in AGENTS:
        raise ReviewError(
            f"run {record.run_id} is of agent {record.agent!r}, not a seed agent ({', '.join(AGENTS)}): "
            "say which catalog it comes from (`endstate review promote RUN_ID --catalog module:attr`, "
            f"or ${ENV_CATALOG}; `endstate serve --catalog` does it for the inbox)"
        )
    seed = catalog is None
    workdir = str(record.state.get("workdir", ""))
    replay = replay_of(journal, workdir, corpus=seed and record.agent == "researcher")
    if not replay.replies:
        raise ReviewError(f"run {record.run_id} holds no model reply to replay (it ended before any)")
    case: dict[str, Any] = {
        "name": f"review/{record.run_id}",
        "description": _description(record, expect),
        "agent": record.agent,
        **({"fixture": fixture_for(record)} if seed else {"catalog": catalog, "state": record.state}),
        "task": record.task,
        "task_type": record.task_type,
        **({"impossible": True} if impossible else {}),
        **({"offline_only": True} if replay.cancels else {}),  # only the replay cancels it: not --model
    }
    case |= _expectations(record, journal, expect) | _extension(journal)
    return case | {"replay": list(replay.replies), "results": [r.to_dict() for r in replay.results]}


def _extension(journal: Sequence[Entry]) -> dict[str, Any]:
    """`extend:`, the budget people added after limit stops (without it the replay stopped at the
    first of those limits, and the case failed on the unchanged agent). A sum past a bound is the
    bound, as a ceiling extended past it stops there (`Budget.plus`): a case past it cannot load."""
    more = [e for e in journal if isinstance(e, Extended)]
    added = {
        "turns": min(sum(e.turns for e in more), MAX_COUNT),
        "seconds": min(sum(e.seconds for e in more), MAX_SECONDS),
        "tokens": min(sum(e.tokens for e in more), MAX_COUNT),
        "cost": min(sum(e.cost_usd for e in more), MAX_FLOAT),
    }
    found = {key: value for key, value in added.items() if value}
    return {"extend": found} if found else {}


def _check_catalog(spec: str, agent: str) -> None:
    """The catalog loads and has `agent` (so `endstate eval` can build it)."""
    found = load_catalog(spec)
    try:
        found.entry(agent)
    finally:
        found.close()


def fixture_for(record: RunRecord) -> str:
    """The eval fixture that builds the world the run's scenario had."""
    from agent.evals.fixtures import FIXTURES
    from agent.examples.scenarios import SCENARIOS

    named = {s.name: s for s in SCENARIOS}.get(str(record.state.get("scenario")))
    options = named.options if named else {}
    fits = [f for f in FIXTURES.values() if f.agent == record.agent]
    same = [f for f in fits if all(options.get(k) == v for k, v in f.options.items()) and not f.patch]
    return (same or fits)[0].name


def _reviewable(store: RunStore, run_id: str) -> tuple[RunRecord, list[Entry]]:
    record = store.get(run_id)
    if record is None:
        raise UnknownRun(f"no run with id {run_id!r} in {store.shown}")
    if record.status is not RunStatus.FINISHED:
        raise NotClaimable(f"run {run_id} is {record.status}: only finished runs are promoted")
    snap = store.snapshot(run_id)
    if snap is not None and snap.foreign is not None:  # its journal holds the suspension, no replies
        raise ReviewError(
            f"run {run_id} of agent {record.agent!r} ran on another framework ({snap.foreign.framework}): "
            "eval cases replay Endstate agents only, so it cannot be promoted (its label still counts: "
            "`limits suggest`, the review metric)"
        )
    if snap is None or not snap.journal:
        raise ReviewError(f"run {run_id} has no recorded journal in {store.shown}: nothing to replay")
    return record, snap.journal


def _expected(store: RunStore, record: RunRecord, expect: str | None) -> StopReason:
    if expect is not None:
        try:
            return StopReason(expect)
        except ValueError:
            known = ", ".join(StopReason)
            raise ReviewError(f"--expect {expect!r} is not a stop reason; use one of: {known}") from None
    review = latest_labels(store, [record.run_id]).get(record.run_id)
    if review is None:
        raise ReviewError(
            f"run {record.run_id} has no label yet: label it (`endstate review label {record.run_id} LABEL`) "
            "or say the exit the case expects with --expect REASON"
        )
    try:
        chosen = Label(review.label)
    except ValueError:  # a label this release does not know: written by hand, or by a newer release
        raise LabelMismatch(
            f"run {record.run_id} is labelled {review.label!r:.60}, which is no label this Endstate knows "
            f"({', '.join(Label)}). Label it again (`endstate review label {record.run_id} LABEL`) or say "
            "the exit the case expects with --expect REASON"
        ) from None
    if why := misfit(record, chosen):  # a label given before such labels were refused
        raise LabelMismatch(
            f"run {record.run_id} stopped as {record.stop_reason} and is labelled {chosen}, which a case "
            f"cannot expect: {why}. Label it again (`endstate review label {record.run_id} LABEL`) or say "
            "the exit the case expects with --expect REASON"
        )
    return expected_exit(chosen, record.stop_reason)


def expected_exit(chosen: Label, stop: StopReason | None) -> StopReason:
    """The exit a case promoted from a run that stopped as `stop` expects once labelled `chosen`.

    A correct give-up expects the stop the run had (gave_up, limit, no_progress, error,
    help_timeout): the person found it right to stop there, so the same agent passes the case.
    """
    if chosen in KEEPS_ITS_EXIT:
        return stop or StopReason.ERROR
    return EXPECT_OF[chosen]


def _expectations(record: RunRecord, journal: Sequence[Entry], expect: StopReason) -> dict[str, Any]:
    """`expect` (and `then:` for a run a person answered, or one resumed after a shutdown)."""
    breaks = _interruptions(journal)
    if len(breaks) > 1:
        raise ReviewError(
            f"run {record.run_id} was suspended or cancelled {len(breaks)} times; a case replays at most "
            "one follow-up: write the case by hand from `endstate review promote` of a simpler run"
        )
    found: dict[str, Any] = {"expect": str(expect)}
    if breaks:
        first, action, text = breaks[0]
        then = {"action": action, **({"text": text} if text else {}), "expect": str(expect)}
        found = {"expect": str(first), "then": then}
    if expect is StopReason.LIMIT and record.stop_reason is StopReason.LIMIT and record.stop_limit:
        found["expect_limit"] = record.stop_limit
    return found


def _interruptions(journal: Sequence[Entry]) -> list[tuple[StopReason, str, str]]:
    """Each segment end before the last: (its stop, what came next, the text of that)."""
    found: list[tuple[StopReason, str, str]] = []
    for i, entry in enumerate(journal):
        if isinstance(entry, Suspended):
            answered = next((e for e in journal[i + 1 :] if isinstance(e, Answered)), None)
            found.append((StopReason.NEED_HELP, *_action(answered)))
        elif isinstance(entry, Stopped) and entry.reason is StopReason.CANCELLED and i < len(journal) - 1:
            found.append((StopReason.CANCELLED, "resume", ""))
    return found


def _action(answered: Answered | None) -> tuple[str, str]:
    if answered is None or answered.by == "policy":
        return "expire", ""
    reply = answered.reply
    if isinstance(reply, Answer):
        return "answer", reply.text
    if isinstance(reply, Approval):
        return "approve", ""
    assert isinstance(reply, Denial)
    return "deny", reply.reason


def _description(record: RunRecord, expect: StopReason) -> str:
    replies = "its recorded model replies"
    return (
        f"Promoted from run {record.run_id} ({record.stop_reason}"
        f"{'/' + record.stop_limit if record.stop_limit else ''}): replays {replies} and expects {expect}."
    )


# -- retention and counting, for the service -----------------------------------------------------


class LabelCounter(Protocol):
    """Where label counts go (`telemetry.MetricsHooks`)."""

    def record_review_label(self, agent: str, task_type: str, label: str) -> None: ...


def prune(store: RunStore, older_than: float, now: float | None = None) -> int:
    """Delete the finished runs that ended more than `older_than` seconds ago; how many went."""
    if older_than <= 0:
        raise ReviewError(f"the age to prune at must be above 0 seconds, not {older_than}")
    return store.prune((time.time() if now is None else now) - older_than)


class Upkeep:
    """What the service does on a schedule: count new labels into `/metrics`, prune old runs.

    Labels are counted from the store, not where they are given: `endstate review label`
    runs in a process that serves no `/metrics`. A service starts from the store's first
    label, so each replica shows the store's totals (use `max`, not `sum`, across replicas).
    """

    def __init__(
        self,
        store: RunStore,
        retention: float | None = None,
        counter: LabelCounter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`clock`: the time runs are pruned by (a service's: its runner's, the store's clock, which
        stamped when each run ended; this host's, a day ahead, pruned a day's runs early for good)."""
        self.store, self.retention, self.counter, self.clock = store, retention, counter, clock
        self.counted = 0  # the id of the last label counted
        self.pruned_at: float | None = None

    def once(self, now: float | None = None) -> int:
        """Count labels given since the last call; prune when a prune is due. Returns runs pruned."""
        now = self.clock() if now is None else now
        if self.counter is not None:
            for review in self.store.reviews(after=self.counted):
                self.counter.record_review_label(review.agent, review.task_type, review.label)
                self.counted = review.id
        if self.retention is None or (self.pruned_at is not None and now - self.pruned_at < PRUNE_EVERY):
            return 0
        self.pruned_at = now
        pruned = prune(self.store, self.retention, now)
        if pruned:
            log.info("pruned %s (finished, older than %.0f s)", plural(pruned, "run"), self.retention)
        return pruned
