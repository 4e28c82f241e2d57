"""Model scripts for eval cases: the seed scenarios plus a few written for the evals.

A case's `script` names one of these. The scripts here add what the demo's
scenarios do not show: a tool that answers "ok" called with the same
arguments, a first "done" that its check rejects before the run succeeds,
and impossible tasks where the model is tempted to claim success first (so
that an agent whose verifier is removed is caught as a false success).
"""

from __future__ import annotations

from agent.examples import csv_clean, fix_ci, invoice, research
from agent.examples.scenarios import SCENARIOS, FollowUp, Scenario, World, _fix_ci_until_push
from agent.models.scripted import Step, call, finish
from agent.result import StopReason


def _csv_ok_same_args(world: World) -> list[Step]:
    return [[call("validate_row", row=1)] for _ in range(3)]


def _csv_early_done(world: World) -> list[Step]:
    return [
        [call("read_rows", page=1)],
        [call("fix_dates")],
        [finish("done", "orders_clean.csv has ISO dates.")],
        [call("drop_rows_without_email")],
        [call("dedupe")],
        [finish("done", "orders_clean.csv has ISO dates, real emails and unique order ids.")],
    ]


_CSV_FIXES = ("fix_dates", "drop_rows_without_email", "dedupe")


def _csv_fix_again(world: World, turn: int) -> Step:
    return [call(_CSV_FIXES[turn % len(_CSV_FIXES)])]


def _margin_tempted(world: World) -> list[Step]:
    blog = world.url("blog-of-estimates/acme-margin")
    note = (
        "No public source gives Acme Holdings' margin: it is private and publishes no accounts. "
        f"Third parties guess 4% to 12% ({blog})."
    )
    return [
        [call("web_search", query="Acme Holdings net profit margin 2025")],
        [call("read_page", url=blog)],
        [finish("done", f"Acme Holdings' net profit margin in 2025 was 8%. Source: {blog}")],
        [call("read_page", url=world.url("trade-press/acme-profile"))],
        [finish("give_up", note)],
    ]


def _invoice_offline_claims_done(world: World) -> list[Step]:
    note = "The supplier portal refuses connections (HTTP 503); no invoice could be downloaded."
    return [
        [call("list_invoices", month="2026-09")],
        [finish("done", "Downloaded the September invoice into invoices/.")],
        [call("list_invoices", month="2026-09")],
        [finish("give_up", note)],
    ]


def _fix_ci_push_denied(world: World) -> list[Step]:
    """The push is denied; the model first claims it pushed anyway, then gives up."""
    note = "The push to fix/add-cents was denied, so the fix is tested here but not pushed; CI stays red."
    return [
        *_fix_ci_until_push(world),
        [finish("done", "add_cents adds again; tests pass; pushed.")],
        [finish("give_up", note)],
    ]


EVAL_SCRIPTS: list[Scenario] = [
    Scenario("csv/ok-same-args", "csv-cleaner", csv_clean.TASK, StopReason.NO_PROGRESS, _csv_ok_same_args),
    Scenario("csv/early-done", "csv-cleaner", csv_clean.TASK, StopReason.SUCCESS, _csv_early_done),
    Scenario(
        "csv/fix-again",
        "csv-cleaner",
        csv_clean.TASK,
        StopReason.NO_PROGRESS,
        lambda w: [],
        then=_csv_fix_again,
    ),
    Scenario(
        "research/margin-tempted", "researcher", research.IMPOSSIBLE_TASK, StopReason.GAVE_UP, _margin_tempted
    ),
    Scenario(
        "invoice/offline-claims-done",
        "invoice-downloader",
        invoice.TASK,
        StopReason.GAVE_UP,
        _invoice_offline_claims_done,
        options={"online": False},
    ),
    Scenario(
        "ci/denied-push",
        "ci-fixer",
        fix_ci.TASK,
        StopReason.NEED_HELP,
        _fix_ci_push_denied,
        follow_up=FollowUp("deny", "Not now: main is frozen for the release."),
        expect_after=StopReason.GAVE_UP,
    ),
]


def scripts() -> dict[str, Scenario]:
    """Every script a case may name: the demo's scenarios and the ones above."""
    return {s.name: s for s in [*SCENARIOS, *EVAL_SCRIPTS]}
