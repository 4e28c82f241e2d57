"""Write (or check) the generated dashboard JSON: `python -m dashboards.build [--check]`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from grafana_foundation_sdk.builders.dashboard import Dashboard
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from dashboards import agent_stops

OUT = Path(__file__).resolve().parent / "json"

DASHBOARDS: dict[str, Callable[[], Dashboard]] = {
    "agent-stops.json": agent_stops.build,
}


def render(make: Callable[[], Dashboard]) -> str:
    """The dashboard as Grafana JSON, stable across runs (sorted keys, newline at the end)."""
    return JSONEncoder(sort_keys=True, indent=2).encode(make().build()) + "\n"


def rendered() -> dict[str, str]:
    return {name: render(make) for name, make in DASHBOARDS.items()}


def stale(out: Path = OUT) -> list[str]:
    """Names of committed files that differ from what the code generates."""
    return [
        name
        for name, text in rendered().items()
        if not (out / name).exists() or (out / name).read_text() != text
    ]


def write(out: Path = OUT) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, text in rendered().items():
        (out / name).write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if dashboards/json/ is out of date")
    args = parser.parse_args(argv)
    if not args.check:
        write()
        return 0
    outdated = stale()
    for name in outdated:
        print(f"dashboards/json/{name} is out of date: run python -m dashboards.build", file=sys.stderr)
    return 1 if outdated else 0


if __name__ == "__main__":
    sys.exit(main())
