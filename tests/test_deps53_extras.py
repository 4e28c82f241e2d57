"""The framework extras are ranges, and CI's constraints lie inside them (deps53).

Each extra pinned its framework to one exact version (`pydantic-ai-slim==2.68.0`): a team whose
agent runs on a newer release could not install `endstate[pydantic-ai]` beside it. A later exact
pin, or a constraint (the version CI tests) drifting outside the range users install, fails here.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from agent.integrations import _framework

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = {  # the distribution -> the extra that brings it
    "openai-agents": "openai-agents",
    "claude-agent-sdk": "claude-agent-sdk",
    "pydantic-ai-slim": "pydantic-ai",
    "langgraph": "langgraph",
    "langchain-core": "langgraph",
}


def extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found: dict[str, list[str]] = project["optional-dependencies"]
    return found


def specifier(dist: str, extra: str) -> SpecifierSet:
    (found,) = [Requirement(r) for r in extras()[extra] if Requirement(r).name == dist]
    return found.specifier


def constrained() -> dict[str, Version]:
    """scripts/constraints.txt's `name==version` lines, by name."""
    lines = (ROOT / "scripts" / "constraints.txt").read_text().splitlines()
    pairs = (line.split("==", 1) for line in lines if line and not line.startswith("#"))
    return {_normal(name): Version(version) for name, version in pairs}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.mark.parametrize("dist", sorted(FRAMEWORKS))
def test_each_framework_extra_is_a_range_not_one_version(dist: str) -> None:
    spec = specifier(dist, FRAMEWORKS[dist])
    operators = sorted(s.operator for s in spec)
    assert operators == ["<", ">="], f"{dist}: {spec} (a range: a tested lower bound, a cap)"
    lower = next(Version(s.version) for s in spec if s.operator == ">=")
    upper = next(Version(s.version) for s in spec if s.operator == "<")
    assert lower < upper and upper.release[:2] > lower.release[:2]  # at least every patch release


@pytest.mark.parametrize("dist", sorted(FRAMEWORKS))
def test_the_constrained_version_lies_within_its_extras_range(dist: str) -> None:
    version = constrained()[_normal(dist)]
    spec = specifier(dist, FRAMEWORKS[dist])
    assert spec.contains(version), f"scripts/constraints.txt has {dist}=={version}, outside {spec}"


@pytest.mark.parametrize("dist", sorted(FRAMEWORKS))
def test_the_readme_names_each_range_as_pyproject_writes_it(dist: str) -> None:
    readme = " ".join((ROOT / "README.md").read_text().split())
    (written,) = [r for r in extras()[FRAMEWORKS[dist]] if Requirement(r).name == dist]
    assert f"`{written}`" in readme, f"README.md's integrations paragraph names no `{written}`"


def test_the_bench_extra_allows_what_the_pydantic_ai_extra_does() -> None:
    assert specifier("pydantic-ai-slim", "bench") == specifier("pydantic-ai-slim", "pydantic-ai")


def test_the_range_named_in_the_error_reads_as_pyproject_writes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed metadata lists a range cap first (`pydantic-ai-slim<2.79,>=2.68.0`); the error's
    `pip install '...'` names it lower bound first, as pyproject.toml and the README write it."""
    written = [
        'pydantic-ai-slim<2.79,>=2.68.0; extra == "pydantic-ai"',
        'langgraph==1.2.24; extra == "langgraph"',
    ]
    monkeypatch.setattr(importlib.metadata, "requires", lambda dist: written)
    assert _framework.tested_with("pydantic-ai-slim", "pydantic-ai") == "pydantic-ai-slim>=2.68.0,<2.79"
    assert _framework.tested_with("langgraph", "langgraph") == "langgraph==1.2.24"
