"""The layers hold: `agent/` imports only the OpenTelemetry API (never the SDK, exporters or
prometheus_client); the core loop at the top of `agent/` imports none of the packages built on
it (durable runs, the faces, evals, examples, integrations, Temporal); no module imports itself
through others."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_AGENT = ("opentelemetry.sdk", "opentelemetry.exporter", "prometheus_client")
FACES = ("agent.cli.", "agent.service.server", "agent.temporal.service")  # they wire telemetry/ in
ABOVE_THE_CORE = tuple(
    f"agent.{p}" for p in ("durable", "cli", "service", "evals", "examples", "integrations", "temporal")
)


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
    assert {name for name in wiring if not name.startswith(FACES)} == set()


def test_no_two_modules_import_each_other() -> None:
    mods = modules()
    edges = {name: {i for i in imports_of(path) if i in mods and i != name} for name, path in mods.items()}
    pairs = sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges[b])
    assert pairs == []


def test_the_core_imports_nothing_built_on_it() -> None:
    """`agent/*.py` (the loop and its small objects) never reaches up; `agent/__init__` re-exports."""
    core = {
        name: path
        for name, path in modules().items()
        if name.count(".") == 1 and name.startswith("agent.") and not name.startswith(ABOVE_THE_CORE)
    }
    reaching = {
        name: sorted(i for i in imports_of(path) if i.startswith(ABOVE_THE_CORE))
        for name, path in core.items()
    }
    assert {k: v for k, v in reaching.items() if v} == {}


PROVIDER_FORMATS = ("agent.models._messages", "agent.models.anthropic", "agent.models.scripted", "anthropic")


def test_the_core_speaks_no_provider_format() -> None:
    """Provider formats live at the edge: the loop and its small objects read a model's reply through
    `agent.models.base` (`ModelReply.parts`), never a provider's layout, adapter or SDK."""
    reaching = {
        name: sorted(i for i in imports_of(path) if i.startswith(PROVIDER_FORMATS))
        for name, path in modules().items()
        if name.count(".") == 1
        and name.startswith("agent.")
        and not name.startswith(ABOVE_THE_CORE)
        and name != "agent.models"  # the adapters' package, which re-exports the scripted model
    }
    assert {k: v for k, v in reaching.items() if v} == {}


def test_no_import_cycles() -> None:
    """No chain of module-level imports leads back to where it started: relative imports, and a
    package's `__init__` when a module imports from the package itself, count."""
    top, _ = import_graph(ROOT)
    assert _cycle(top) == []


def test_no_import_cycles_through_imports_inside_functions() -> None:
    """Nor when the imports made inside functions (run later, at their first call) are added: a
    function-level import that breaks a cycle only hides it."""
    top, nested = import_graph(ROOT)
    assert _cycle({m: top[m] | nested[m] for m in top}) == []


@pytest.mark.parametrize(
    ("files", "found_at_top", "found_nested"),
    [
        ({"a.py": "from pkg import b", "b.py": "from pkg.a import x"}, True, True),
        ({"a.py": "from . import b", "b.py": "from .a import x"}, True, True),  # relative
        ({"__init__.py": "from pkg.a import x", "a.py": "from pkg import y"}, True, True),  # via __init__
        ({"a.py": "import pkg.b", "b.py": "def f():\n    from pkg import a"}, False, True),
        ({"a.py": "from pkg import b", "b.py": "if TYPE_CHECKING:\n    from pkg.a import x"}, True, True),
        (
            {"__init__.py": "from pkg.a import x", "a.py": "from pkg.b import y", "b.py": "y = 1"},
            False,
            False,
        ),
    ],
)
def test_the_cycle_check_finds_a_cycle_however_it_is_imported(
    files: dict[str, str], found_at_top: bool, found_nested: bool, tmp_path: Path
) -> None:
    (tmp_path / "pkg").mkdir()
    for name, text in {"__init__.py": "", **files}.items():
        (tmp_path / "pkg" / name).write_text(text + "\n")
    top, nested = import_graph(tmp_path, ("pkg",))
    assert (bool(_cycle(top)), bool(_cycle({m: top[m] | nested[m] for m in top}))) == (
        found_at_top,
        found_nested,
    )


def import_graph(root: Path, packages: tuple[str, ...] = ("agent", "telemetry")) -> tuple[Graph, Graph]:
    """The modules under `packages` and what each imports of them: at module level (a `TYPE_CHECKING`
    block too: a checker follows it) and inside functions, apart. `import p.m` and `from p.m import x`
    count as importing `p.m` (Python runs `p`'s `__init__` first, but that is no choice of the
    module's); `from p import x` counts `p` itself unless `x` is a module of it."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            found[".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")] = path
    top: Graph = {name: set() for name in found}
    nested: Graph = {name: set() for name in found}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        _collect(ast.parse(path.read_text()), name, package, found.keys(), top[name], nested[name])
    return top, nested


Graph = dict[str, set[str]]


def _collect(node: ast.AST, name: str, package: str, known: Any, here: set[str], nested: set[str]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            here |= {a.name for a in child.names if a.name in known and a.name != name}
        elif isinstance(child, ast.ImportFrom):
            here |= _imported_from(child, package, known) - {name}
        inner = nested if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) else here
        _collect(child, name, package, known, inner, nested)


def _imported_from(node: ast.ImportFrom, package: str, known: Any) -> set[str]:
    base = node.module or ""
    if node.level:  # relative: from the module's package, one level up for each dot past the first
        parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        base = f"{parent}.{base}" if base else parent
    subs = {f"{base}.{a.name}" for a in node.names} & set(known)
    whole = {base} if len(subs) < len(node.names) and base in known else set()
    return subs | whole


def _cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import cycle as a path of module names, or [] when there is none (depth-first search)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for start in sorted(edges):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_nothing_but_a_face_imports_a_face() -> None:
    """The command line is a face: durable runs, the service's pages and the evals never import
    from it (what two faces share lives below them)."""
    reaching = {
        name: sorted(i for i in imports_of(path) if i.startswith("agent.cli"))
        for name, path in modules().items()
        if not name.startswith("agent.cli")
    }
    assert {k: v for k, v in reaching.items() if v} == {}


def test_no_cancel_parameter_says_any() -> None:
    """A cancel signal is typed by its protocol (`agent.clock.CancelSignal`), never `Any`."""
    untyped = sorted(
        f"{name}:{node.lineno}"
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.arg)
        and node.arg.endswith("cancel")
        and node.annotation is not None
        and ast.unparse(node.annotation) in ("Any", "object")
    )
    assert untyped == []
