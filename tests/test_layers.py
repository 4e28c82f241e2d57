"""The layers hold: `agent/` imports only the OpenTelemetry API (never the SDK, exporters or
prometheus_client), and no two modules import each other."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_AGENT = ("opentelemetry.sdk", "opentelemetry.exporter", "prometheus_client")
FACES = (
    "agent.cli",
    "agent.cli_store",
    "agent.service.server",
    "agent.cli_temporal",
    "agent.temporal.service",
)  # they wire telemetry/ in; the rest never


def modules() -> dict[str, Path]:
    found = {}
    for package in ("agent", "telemetry"):
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imports_of(path: Path) -> set[str]:
    """What a module imports: `from p import m` counts as importing `p.m` when that is a module."""
    known = modules()
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            subs = {f"{node.module}.{a.name}" for a in node.names}
            names |= (subs & known.keys()) or {node.module}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return names


def test_agent_imports_no_telemetry_sdk_exporter_or_prometheus() -> None:
    offenders = {
        name: sorted(i for i in imports_of(path) if i.startswith(FORBIDDEN_IN_AGENT))
        for name, path in modules().items()
        if name.startswith("agent")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_only_the_faces_wire_telemetry_in() -> None:
    wiring = {
        name
        for name, path in modules().items()
        if name.startswith("agent")
        and any(i == "telemetry" or i.startswith("telemetry.") for i in imports_of(path))
    }
    assert wiring <= set(FACES)


def test_no_two_modules_import_each_other() -> None:
    mods = modules()
    edges = {name: {i for i in imports_of(path) if i in mods and i != name} for name, path in mods.items()}
    pairs = sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges[b])
    assert pairs == []
