"""`endstate review` (the queue, `label`, `promote`) and `endstate prune`: after the runs end."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent._args import given, given_path
from agent.budget import MAX_COUNT
from agent.cli._help import above_zero, current_user
from agent.cli.runs import (
    STORE_HELP,
    add_filter_args,
    catalog_needed,
    local_time,
    of_filter,
    plain,
    store_on,
)
from agent.durable import review
from agent.durable._storetime import StoreClock
from agent.durable.catalog import ENV_CATALOG
from agent.durable.store import RunStore, default_url, open_store
from agent.durable.store.urls import shown_url
from agent.result import StopReason
from agent.summary import plural
from agent.text import json_text, one_line


def register(sub: Any) -> None:
    """Add `review` and `prune` to the `endstate` parser."""
    add_review(sub)
    add_prune(sub)


def add_review(sub: Any) -> None:
    p = sub.add_parser(
        "review",
        help="list the runs to review; label them; promote them to eval cases",
        description="Without a subcommand: the finished runs no one has labelled yet that stopped as "
        "gave_up, limit, no_progress or error, and a sample of the successes, oldest first (--order "
        "newest: the latest first); each with its trace id.",
    )
    _store_arg(p)
    p.add_argument(
        "--reason",
        action="append",
        choices=[str(r) for r in review.QUEUE_REASONS],
        help="only runs that stopped for this reason (repeatable; default: all four)",
    )
    p.add_argument(
        "--success-share",
        type=float,
        default=None,
        help="share of successes sampled into the queue (0 to 1; the same runs each time; default "
        f"{review.DEFAULT_SUCCESS_SHARE}, and 0 with --reason)",
    )
    p.add_argument("--limit", type=above_zero(int, most=MAX_COUNT), default=50, help="at most this many runs")
    p.add_argument(
        "--order",
        choices=("oldest", "newest"),
        default="oldest",
        help="oldest: the runs that ended longest ago first, a queue to work through (default); newest: "
        "the latest first, as in an incident (the inbox's review page: ?order=newest)",
    )
    add_filter_args(p)
    p.add_argument("--json", action="store_true", help="one JSON object per run")
    p.set_defaults(handler=run_queue)
    rsub = p.add_subparsers(dest="review_command")
    add_label(rsub)
    add_promote(rsub)


def add_label(sub: Any) -> None:
    p = sub.add_parser("label", help="label a finished run", description=_label_help())
    _store_arg(p, argparse.SUPPRESS)  # given before `label` or after it
    p.add_argument("run_id", help="the finished run's id, as `endstate review` lists it")
    labels = [str(label) for label in review.Label]
    p.add_argument("label", choices=labels, metavar="LABEL", help=f"one of {', '.join(labels)} (see above)")
    p.add_argument("--note", default=None, help="what you found, for whoever reads the label next")
    p.add_argument("--by", default=None, help="who gives the label (default: the user running this)")
    p.set_defaults(handler=run_label)


def add_promote(sub: Any) -> None:
    p = sub.add_parser(
        "promote",
        help="write an eval case that replays a run and expects the exit you chose",
        description="Write an eval case that replays the run's recorded model replies through the scripted "
        "model and expects the exit you chose (by default from its label: "
        + ", ".join(f"{k} -> {v}" for k, v in review.EXPECT_OF.items())
        + ", "
        + " and ".join(review.KEEPS_ITS_EXIT)
        + " -> the exit it had). `endstate eval DIR` runs it.",
    )
    _store_arg(p, argparse.SUPPRESS)
    p.add_argument("run_id", help="the finished run's id, as `endstate review` lists it")
    p.add_argument(
        "--expect", metavar="REASON", help="the stop reason the case expects (default: from the label)"
    )
    p.add_argument(
        "--out", type=given_path, default=review.DEFAULT_OUT, help="folder to write the case file into"
    )
    p.add_argument(
        "--catalog",
        type=given,
        default=os.environ.get(ENV_CATALOG) or None,
        metavar="MODULE:ATTR",
        help="the catalog the run's agent comes from, as `serve --catalog` named it; written into the "
        f"case for `endstate eval` (default: ${ENV_CATALOG}, else the seed agents)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace the run's case file in --out when one is there (without it, as the inbox's Promote, "
        "it is kept and the promote refused)",
    )
    p.set_defaults(handler=run_promote)


def add_prune(sub: Any) -> None:
    p = sub.add_parser(
        "prune",
        help="delete finished runs older than an age, with their journals",
        description="Delete finished runs (and their journal entries) that ended longer ago than "
        "--older-than. Running, waiting and cancelled runs are never deleted; labels stay.",
    )
    _store_arg(p)
    p.add_argument(
        "--older-than",
        required=True,
        metavar="DURATION",
        help="an age such as 30d, 12h or 2w (at most 36500d)",
    )
    p.set_defaults(handler=run_prune)


def _store_arg(p: argparse.ArgumentParser, default: Any = None) -> None:
    p.add_argument(
        "--store", type=given, default=default, help=STORE_HELP.format(default=shown_url(default_url()))
    )


def _label_help() -> str:
    def runs(label: review.Label) -> str:
        return f" (runs that {review.FOR_STOPS[label][1]})" if label in review.FOR_STOPS else " (any run)"

    return (
        "Label a finished run with what you found: "
        + "; ".join(f"{label}{runs(label)}" for label in review.Label)
        + ". A later label of the same run replaces the earlier one."
    )


# -- handlers -------------------------------------------------------------------------------------


def run_queue(args: argparse.Namespace) -> int:
    reasons = [StopReason(r) for r in args.reason] if args.reason else list(review.QUEUE_REASONS)
    share = args.success_share
    if share is None:  # `--reason limit` lists limit stops, as the inbox's ?reason=limit: no success
        share = 0.0 if args.reason else review.DEFAULT_SUCCESS_SHARE
    only = {"agent": args.agent, "task_type": args.task_type}
    with _store(args) as store:
        runs = review.queue(store, reasons, share, args.limit, order=args.order, **only)
        counts = review.queue_counts(store, reasons, share)
        total = sum(n for a, t, n in counts if args.agent in (None, a) and args.task_type in (None, t))
        where = store.shown
    if args.json:
        for r in runs:
            print(json_text(r.to_dict()))
        return 0
    if not runs:
        print(f"nothing to review in {where}: {nothing_left(args, reasons, share)}")
        return 0
    for r in runs:
        print(queue_line(r))
    shown = (
        plural(total, "run") if total <= len(runs) else f"{len(runs)} of {total} runs (--limit {args.limit})"
    )
    print(
        f"\n{shown} to review, {args.order} first. "
        f"Label one: endstate review label RUN_ID {{{','.join(review.Label)}}}{store_on(args)}"
    )
    return 0


def nothing_left(args: argparse.Namespace, reasons: list[StopReason], share: float) -> str:
    """Why the queue is empty, in what was asked: no run of those stops (a sampled success too) is left
    unlabelled. "Every run is labelled" was said of a store whose runs had never stopped so."""
    named = list(dict.fromkeys(reasons))  # a reason given twice is said once
    stops = ", ".join(named[:-1]) + (" or " if len(named) > 1 else "") + named[-1]
    sampled = " (nor a sampled success)" if share > 0 else ""
    return f"no run{of_filter(args)} that stopped as {stops}{sampled} is waiting for a label"


def run_label(args: argparse.Namespace) -> int:
    with _store(args) as store:
        by = current_user() if args.by is None else args.by  # a blank --by is refused, not taken as you
        given = review.label(store, args.run_id, args.label, args.note or "", by=by)
    print(f"run {given.run_id} ({given.agent}, {given.task_type}): labelled {given.label} by {given.by}")
    promote = f"endstate review promote {given.run_id}{store_on(args)}{catalog_needed(given.agent)}"
    print(f"    -> {promote}   turns it into an eval case")
    return 0


def run_promote(args: argparse.Namespace) -> int:
    with _store(args) as store:
        try:
            done = review.promote(
                store, args.run_id, args.expect, args.out, catalog=args.catalog, overwrite=args.force
            )
        except review.CaseExists as exc:
            raise review.CaseExists(f"{exc}, or give --force to replace it") from None
    print(f"wrote {done.path}: case {done.name!r}, expects {' -> '.join(done.expected)}")
    print(f"    -> endstate eval {done.path.parent}")
    return 0


def run_prune(args: argparse.Namespace) -> int:
    age = review.duration("--older-than", args.older_than)
    with _store(args) as store:
        now = StoreClock(store).time()  # the store's clock, which stamped when each run ended
        pruned = review.prune(store, age, now)
        where = store.shown
    before = local_time(now - age)
    print(f"pruned {plural(pruned, 'finished run')} that ended before {before} from {where}")
    return 0


def queue_line(r: Any) -> str:
    """One run to review: id, agent, how it stopped, when (local time and its offset from UTC, as `runs`
    and `pending` say it), its trace id (`-`: none), and its note."""
    reason = f"{r.stop_reason}" + (f"/{r.stop_limit}" if r.stop_limit else "")
    ended = local_time(r.ended_at or r.updated_at)
    note = one_line(r.note or r.output or r.summary)
    note = note if len(note) <= 80 else note[:77] + "..."
    turns = "turn " if r.turns == 1 else "turns"  # aligned with "turns"
    trace = plain(r.trace_id or "-")  # as the store holds it: 32 hex digits, or anything
    return (
        f"{plain(r.run_id):32}  {plain(r.agent):20} {plain(r.task_type):16} {reason:16} "
        f"{r.turns:>3} {turns}  {ended}  {trace:32}  {note}"
    )


@contextmanager
def _store(args: argparse.Namespace) -> Iterator[RunStore]:
    """The store these commands read or change: one that exists (a mistyped path makes none). With
    `$ENDSTATE_TEMPORAL` set, one named: the runs on Temporal are in none (`refuse_without_store`)."""
    from agent.cli.temporal import refuse_without_store

    if args.handler is not run_prune:
        refuse_without_store(args, "review")
    store = open_store(args.store, create=False)
    try:
        yield store
    finally:
        store.close()
