"""Write (or check) the generated dashboard JSON.

    python -m dashboards.build                       # dashboards/json/, placeholder runbook links
    python -m dashboards.build --check               # fail if dashboards/json/ is out of date
    python -m dashboards.build --runbook-base https://wiki.example.com/runbooks/ --out deploy/dashboards

Panels that show an alert link to its runbook, `<base><Alertname>.md` (or the base with
`{alertname}` filled in), as the alert rules do (`python -m alerts.build --runbook-base`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from grafana_foundation_sdk.builders.dashboard import Dashboard
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from alerts.runbooks import PLACEHOLDER, RunbookBaseError, check_base
from dashboards import agent_stops

OUT = Path(__file__).resolve().parent / "json"

DASHBOARDS: dict[str, Callable[[str], Dashboard]] = {
    "agent-stops.json": agent_stops.build,
}


def render(make: Callable[[str], Dashboard], runbook_base: str = PLACEHOLDER) -> str:
    """The dashboard as Grafana JSON, stable across runs (sorted keys, newline at the end)."""
    return JSONEncoder(sort_keys=True, indent=2).encode(make(runbook_base).build()) + "\n"


def rendered(runbook_base: str = PLACEHOLDER) -> dict[str, str]:
    return {name: render(make, runbook_base) for name, make in DASHBOARDS.items()}


def stale(out: Path = OUT, runbook_base: str = PLACEHOLDER) -> list[str]:
    """Names of committed files that differ from what the code generates."""
    return [
        name
        for name, text in rendered(runbook_base).items()
        if not (out / name).exists() or (out / name).read_text() != text
    ]


def write(out: Path = OUT, runbook_base: str = PLACEHOLDER) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in rendered(runbook_base).items():
        (out / name).write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dashboards.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--check", action="store_true", help="fail if the JSON in --out is out of date")
    parser.add_argument(
        "--runbook-base", default=PLACEHOLDER, help="runbook link prefix (default: %(default)s)"
    )
    parser.add_argument("--out", type=Path, default=OUT, help="where to write (default: dashboards/json/)")
    args = parser.parse_args(argv)
    try:
        check_base(args.runbook_base)
    except RunbookBaseError as error:
        parser.error(str(error))
    if not args.check:
        write(args.out, args.runbook_base)
        return 0
    outdated = stale(args.out, args.runbook_base)
    for name in outdated:
        print(f"{args.out / name} is out of date: run python -m dashboards.build", file=sys.stderr)
    return 1 if outdated else 0


if __name__ == "__main__":
    sys.exit(main())
