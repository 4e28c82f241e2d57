"""Write (or check) the generated dashboard JSON.

    python -m dashboards.build                       # dashboards/json/, placeholder runbook links
    python -m dashboards.build --check               # fail if dashboards/json/ is out of date
    python -m dashboards.build --runbook-base https://wiki.example.com/runbooks/ --out deploy/dashboards
    python -m dashboards.build --tempo-uid P214B5B846CF3925F --out deploy/dashboards

Panels that show an alert link to its runbook, `<base><Alertname>.md` (or the base with
`{alertname}` filled in), as the alert rules do (`python -m alerts.build --runbook-base`).
Trace links open the Tempo data source whose uid is `tempo` unless `--tempo-uid` names another.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from alerts.runbooks import PLACEHOLDER, RunbookBaseError, check_base

NO_SDK = (
    "python -m dashboards.build: the Grafana Foundation SDK is not installed; "
    "install it with: pip install -e '.[dashboards]'"
)

try:
    from grafana_foundation_sdk.builders.dashboard import Dashboard
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    from dashboards import agent_stops
    from dashboards._kit import TEMPO_UID, retarget_traces
except ModuleNotFoundError as missing:  # `pip install -e .` has no SDK: say how to get it, no traceback
    if __name__ != "__main__" or not (missing.name or "").startswith("grafana_foundation_sdk"):
        raise
    print(NO_SDK, file=sys.stderr)
    raise SystemExit(2) from None

OUT = Path(__file__).resolve().parent / "json"

DASHBOARDS: dict[str, Callable[[str], Dashboard]] = {
    "agent-stops.json": agent_stops.build,
}


def render(
    make: Callable[[str], Dashboard], runbook_base: str = PLACEHOLDER, tempo_uid: str = TEMPO_UID
) -> str:
    """The dashboard as Grafana JSON, stable across runs (sorted keys, newline at the end)."""
    text = JSONEncoder(sort_keys=True, indent=2).encode(make(runbook_base).build()) + "\n"
    return text if tempo_uid == TEMPO_UID else with_tempo_uid(text, tempo_uid)


def with_tempo_uid(text: str, tempo_uid: str) -> str:
    """Dashboard JSON whose trace links open the Tempo data source `tempo_uid`."""
    dashboard = json.loads(text)
    for panel in dashboard["panels"]:
        for shown in [panel, *panel.get("panels", [])]:
            for link in shown.get("fieldConfig", {}).get("defaults", {}).get("links", []):
                if link["url"].startswith("/explore?"):
                    link["url"] = retarget_traces(link["url"], tempo_uid)
    return json.dumps(dashboard, sort_keys=True, indent=2) + "\n"


def rendered(runbook_base: str = PLACEHOLDER, tempo_uid: str = TEMPO_UID) -> dict[str, str]:
    return {name: render(make, runbook_base, tempo_uid) for name, make in DASHBOARDS.items()}


def stale(out: Path = OUT, runbook_base: str = PLACEHOLDER, tempo_uid: str = TEMPO_UID) -> list[str]:
    """Names of committed files that differ from what the code generates."""
    return [
        name
        for name, text in rendered(runbook_base, tempo_uid).items()
        if not (out / name).exists() or (out / name).read_text() != text
    ]


def write(out: Path = OUT, runbook_base: str = PLACEHOLDER, tempo_uid: str = TEMPO_UID) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in rendered(runbook_base, tempo_uid).items():
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
    parser.add_argument(
        "--tempo-uid", default=TEMPO_UID, help="uid of the Tempo data source (default: %(default)s)"
    )
    parser.add_argument("--out", type=Path, default=OUT, help="where to write (default: dashboards/json/)")
    args = parser.parse_args(argv)
    try:
        check_base(args.runbook_base)
    except RunbookBaseError as error:
        parser.error(str(error))
    if not re.fullmatch(r"[\w.-]{1,40}", args.tempo_uid):
        parser.error(
            f"--tempo-uid {args.tempo_uid!r} is no Grafana uid: letters, digits, '-', '_', '.', up to 40"
        )
    if not args.check:
        write(args.out, args.runbook_base, args.tempo_uid)
        return 0
    outdated = stale(args.out, args.runbook_base, args.tempo_uid)
    for name in outdated:
        print(f"{args.out / name} is out of date: run python -m dashboards.build", file=sys.stderr)
    return 1 if outdated else 0


if __name__ == "__main__":
    sys.exit(main())
