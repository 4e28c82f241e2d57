"""Runbook and dashboard links: one of each per alert, built from bases that whoever deploys chooses.

The committed rules and dashboards carry `PLACEHOLDER`, which leads nowhere on
purpose; `python -m alerts.build --runbook-base URL` and
`python -m dashboards.build --runbook-base URL` write them with yours. The rules'
dashboard links likewise carry `GRAFANA_PLACEHOLDER` until
`python -m alerts.build --grafana-base URL` writes them with your Grafana's address.
"""

from __future__ import annotations

import re

PLACEHOLDER = "https://runbooks.example.invalid/set-with--runbook-base/"
GRAFANA_PLACEHOLDER = "https://grafana.example.invalid/set-with--grafana-base"
ALERTNAME = "{alertname}"
_SAFE = re.compile(r"https?://[^\s\"'<>\\{}]+")
_INBOX = re.compile(r"https?://[^\s\"'<>\\{}?#&]+")


class RunbookBaseError(ValueError):
    """A runbook base that cannot make a link; the message says how to fix it."""


def check_base(base: str) -> str:
    """`base` if it can make links, else a RunbookBaseError saying what is wrong."""
    if not _SAFE.fullmatch(base.replace(ALERTNAME, "x")):
        raise RunbookBaseError(
            f"--runbook-base {base!r} is not an http(s) URL without spaces, quotes or braces: give a "
            "prefix such as https://wiki.example.com/runbooks/ (links become <base><Alertname>.md) or "
            f"a template with {ALERTNAME}, such as https://wiki.example.com/runbooks/{ALERTNAME}"
        )
    return base


def check_inbox_base(base: str) -> str:
    """`base` if the inbox links can be built on it, else a RunbookBaseError saying what is wrong."""
    return _site_base(
        base,
        "--inbox-base",
        "give the address people open the service at, such as https://agents.example.com "
        "(links become https://agents.example.com/inbox?agent=...) or https://example.com/endstate",
    )


def check_grafana_base(base: str) -> str:
    """`base` if the dashboard links can be built on it, else a RunbookBaseError saying what is wrong."""
    return _site_base(
        base,
        "--grafana-base",
        "give the address people open Grafana at, such as https://grafana.example.com "
        "(links become https://grafana.example.com/d/endstate-agent-stops/...) or "
        "https://example.com/grafana (Grafana served under a path)",
    )


def _site_base(base: str, flag: str, fix: str) -> str:
    """`base` if it is an http(s) address links can be built under (`_INBOX`), else a RunbookBaseError
    naming `flag` and saying how to fix it (`fix`)."""
    if not _INBOX.fullmatch(base):
        raise RunbookBaseError(
            f"{flag} {base!r} is not an http(s) URL without spaces, quotes, braces, a query or a "
            f"fragment: {fix}"
        )
    return base


def runbook_url(base: str, alert: str) -> str:
    """The runbook link of `alert`: `base` with {alertname} filled in, or `<base>/<alert>.md`."""
    check_base(base)
    if ALERTNAME in base:
        return base.replace(ALERTNAME, alert)
    return f"{base.rstrip('/')}/{alert}.md"
