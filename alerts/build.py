"""Write the rule files with runbook links built from a base you set.

    python -m alerts.build --runbook-base https://wiki.example.com/runbooks/ --out deploy/rules
    python -m alerts.build --check        # the committed rules carry the placeholder base

Every `runbook_url` in alerts/rules/*.yml becomes `<base><Alertname>.md` (or the base with
`{alertname}` filled in); nothing else changes, comments and layout included. Without
`--out` the files in alerts/rules/ are rewritten in place.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from alerts.runbooks import PLACEHOLDER, RunbookBaseError, check_base, runbook_url

RULES = Path(__file__).resolve().parent / "rules"
_ALERT = re.compile(r"^\s*- alert:\s*(\w+)\s*$")
_RUNBOOK = re.compile(r"^(\s*runbook_url:\s*)\S.*$")


def with_base(text: str, base: str) -> str:
    """A rule file's text with the `runbook_url` of every alert built from `base`."""
    alert, out = "", []
    for line in text.splitlines(keepends=True):
        if found := _ALERT.match(line):
            alert = found.group(1)
        elif (link := _RUNBOOK.match(line)) and alert:
            line = f"{link.group(1)}{runbook_url(base, alert)}\n"
        out.append(line)
    return "".join(out)


def rendered(base: str, rules: Path = RULES) -> dict[str, str]:
    """File name -> text of every rule file, with links from `base`."""
    return {path.name: with_base(path.read_text(), base) for path in sorted(rules.glob("*.yml"))}


def stale(base: str, rules: Path = RULES) -> list[str]:
    """Rule files whose runbook links are not built from `base`."""
    return [name for name, text in rendered(base, rules).items() if (rules / name).read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m alerts.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--runbook-base", default=PLACEHOLDER, help="runbook link prefix (default: %(default)s)"
    )
    parser.add_argument("--out", type=Path, default=RULES, help="directory to write (default: alerts/rules/)")
    parser.add_argument("--check", action="store_true", help="fail if alerts/rules/ has other runbook links")
    args = parser.parse_args(argv)
    try:
        check_base(args.runbook_base)
        if args.check:
            return _report(stale(args.runbook_base), args.runbook_base)
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in rendered(args.runbook_base).items():
            (args.out / name).write_text(text)
    except RunbookBaseError as error:
        parser.error(str(error))
    return 0


def _report(outdated: list[str], base: str) -> int:
    for name in outdated:
        print(f"alerts/rules/{name}: runbook links are not built from {base}: run "
              f"python -m alerts.build --runbook-base {base}", file=sys.stderr)  # fmt: skip
    return 1 if outdated else 0


if __name__ == "__main__":
    sys.exit(main())
