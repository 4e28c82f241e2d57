"""Write the rule files with runbook and dashboard links built from bases you set, and inbox
links that a person can click.

    python -m alerts.build --runbook-base https://wiki.example.com/runbooks/ \
        --grafana-base https://grafana.example.com --inbox-base https://agents.example.com --out deploy/rules
    python -m alerts.build --check        # the committed rules carry the placeholder bases and paths

Every `runbook_url` in alerts/rules/*.yml becomes `<base><Alertname>.md` (or the base with
`{alertname}` filled in). Every `dashboard_url` (the "Agent stops" dashboard, filtered to the
alert's agent and task type where it has them) becomes `<grafana base>/d/<uid>/...`. The inbox
links in the descriptions (`/inbox?agent=...`, `/inbox/review?...`) are paths in the committed
rules: with `--inbox-base` they become `<inbox base>/inbox...`, the address where people open the
service's inbox. Nothing else changes, comments and layout included. Without `--out` the files
in alerts/rules/ are rewritten in place.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from alerts.runbooks import (
    GRAFANA_PLACEHOLDER,
    PLACEHOLDER,
    RunbookBaseError,
    check_base,
    check_grafana_base,
    check_inbox_base,
    runbook_url,
)

RULES = Path(__file__).resolve().parent / "rules"
_ALERT = re.compile(r"^\s*- alert:\s*(\w+)\s*$")
_RUNBOOK = re.compile(r"^(\s*runbook_url:\s*)\S.*$")
_DASHBOARD = re.compile(r"^(\s*dashboard_url:\s*')[^']*(/d/[^']*')\s*$")  # the base: all before the last /d/
_INBOX_PATH = re.compile(r"(?<![\w/.:-])/inbox(?=[/?\s]|$)")  # a path that starts a link, not a URL's


def with_base(
    text: str, base: str, inbox_base: str | None = None, grafana_base: str = GRAFANA_PLACEHOLDER
) -> str:
    """A rule file's text with the `runbook_url` of every alert built from `base`, its
    `dashboard_url` from `grafana_base`, and its inbox paths under `inbox_base` when given."""
    alert, out = "", []
    for line in text.splitlines(keepends=True):
        if found := _ALERT.match(line):
            alert = found.group(1)
        elif (link := _RUNBOOK.match(line)) and alert:
            line = f"{link.group(1)}{runbook_url(base, alert)}\n"
        elif (dashboard := _DASHBOARD.match(line)) and alert:
            line = f"{dashboard.group(1)}{grafana_base.rstrip('/')}{dashboard.group(2)}\n"
        elif inbox_base and not line.lstrip().startswith("#"):
            line = _INBOX_PATH.sub(inbox_base.rstrip("/") + "/inbox", line)
        out.append(line)
    return "".join(out)


def rendered(
    base: str, rules: Path = RULES, inbox_base: str | None = None, grafana_base: str = GRAFANA_PLACEHOLDER
) -> dict[str, str]:
    """File name -> text of every rule file, with links from `base`, `grafana_base` (and `inbox_base`)."""
    return {
        path.name: with_base(path.read_text(), base, inbox_base, grafana_base)
        for path in sorted(rules.glob("*.yml"))
    }


def stale(
    base: str, rules: Path = RULES, inbox_base: str | None = None, grafana_base: str = GRAFANA_PLACEHOLDER
) -> list[str]:
    """Rule files whose links are not built from `base`, `grafana_base` (and `inbox_base`)."""
    found = rendered(base, rules, inbox_base, grafana_base)
    return [name for name, text in found.items() if (rules / name).read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m alerts.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--runbook-base", default=PLACEHOLDER, help="runbook link prefix (default: %(default)s)"
    )
    parser.add_argument(
        "--grafana-base",
        default=GRAFANA_PLACEHOLDER,
        help="the address people open Grafana at, such as https://grafana.example.com: each alert's "
        "dashboard_url opens the Agent stops dashboard there (default: %(default)s)",
    )
    parser.add_argument(
        "--inbox-base",
        help="the address people open the service's inbox at, such as https://agents.example.com: "
        "the alerts' inbox links become URLs under it (default: paths, /inbox?...)",
    )
    parser.add_argument("--out", type=Path, default=RULES, help="directory to write (default: alerts/rules/)")
    parser.add_argument("--check", action="store_true", help="fail if alerts/rules/ has other links")
    args = parser.parse_args(argv)
    try:
        check_base(args.runbook_base)
        check_grafana_base(args.grafana_base)
        if args.inbox_base is not None:
            check_inbox_base(args.inbox_base)
        if args.check:
            inbox = f" --inbox-base {args.inbox_base}" if args.inbox_base else ""
            command = f"--runbook-base {args.runbook_base} --grafana-base {args.grafana_base}{inbox}"
            return _report(
                stale(args.runbook_base, inbox_base=args.inbox_base, grafana_base=args.grafana_base), command
            )
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in rendered(
            args.runbook_base, inbox_base=args.inbox_base, grafana_base=args.grafana_base
        ).items():
            (args.out / name).write_text(text)
    except RunbookBaseError as error:
        parser.error(str(error))
    return 0


def _report(outdated: list[str], options: str) -> int:
    for name in outdated:
        print(f"alerts/rules/{name}: links are not built with {options}: run "
              f"python -m alerts.build {options}", file=sys.stderr)  # fmt: skip
    return 1 if outdated else 0


if __name__ == "__main__":
    sys.exit(main())
