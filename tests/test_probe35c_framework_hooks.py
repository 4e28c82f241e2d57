"""Probe 35c: a framework release without a hook or field an integration relies on fails at import.

The integrations hook into the frameworks' callbacks and read their results' fields. A release
that renames one fails nowhere: the framework never calls the hook, the field reads as absent, and
runs are recorded wrong or not at all (a Pydantic AI capability whose `wrap_model_request` is never
called records no turn, and the run is a success of 0 tokens). Importing the integration with such
a release is a `ConfigError` naming what is missing, the installed version and the tested pin.

Each case imports the integration in a fresh interpreter, the framework's hook removed first.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agent.integrations import _framework

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent

CASES = {  # integration: (code removing one thing it relies on, the name the error must give)
    "pydantic_ai": (
        "from pydantic_ai.capabilities import AbstractCapability as C\ndel C.wrap_model_request",
        "AbstractCapability.wrap_model_request",
    ),
    "openai_agents": (
        "from agents.lifecycle import RunHooksBase as H\ndel H.on_llm_end",
        "RunHooksBase.on_llm_end",
    ),
    "langgraph": (
        "from langgraph.types import StateSnapshot as S\n"
        "del S.interrupts\nS.__annotations__.pop('interrupts')",
        "StateSnapshot.interrupts",
    ),
    "claude_agent_sdk": (  # a dataclass field: gone from the class and from its annotations
        "from claude_agent_sdk import ResultMessage as R\n"
        "del R.terminal_reason\nR.__annotations__.pop('terminal_reason')",
        "ResultMessage.terminal_reason",
    ),
}
DISTS = {  # integration: its framework's distribution
    "pydantic_ai": "pydantic-ai-slim",
    "openai_agents": "openai-agents",
    "claude_agent_sdk": "claude-agent-sdk",
    "langgraph": "langgraph",
}
EXTRAS = {module: module.replace("_", "-") for module in DISTS}  # endstate's extra of each


def imported_after(removal: str, module: str) -> subprocess.CompletedProcess[str]:
    code = f"{removal}\nimport agent.integrations.{module}\n"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )


@pytest.mark.parametrize("module", sorted(CASES))
def test_an_integration_imported_with_a_framework_missing_a_hook_says_what_and_which_version(
    module: str,
) -> None:
    removal, name = CASES[module]
    done = imported_after(removal, module)
    assert done.returncode != 0, "the integration imported as if nothing were missing"
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("agent.errors.ConfigError: "), done.stderr[-2000:]
    assert name in last
    assert f"pip install '{pyproject_pin(DISTS[module], EXTRAS[module])}'" in last


@pytest.mark.parametrize("module", sorted(CASES))
def test_with_the_tested_framework_the_integration_imports(module: str) -> None:
    done = imported_after("", module)
    assert done.returncode == 0, done.stderr[-2000:]


def pyproject_pin(dist: str, extra: str) -> str:
    """The requirement on `dist` in pyproject.toml's `extra`."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (pin,) = [r for r in extras[extra] if re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0] == dist]
    return pin


def test_the_pin_named_is_the_extras() -> None:
    for module, dist in DISTS.items():
        assert _framework.tested_with(dist, EXTRAS[module]) == pyproject_pin(dist, EXTRAS[module])
    assert _framework.tested_with("no-such-dist", "pydantic-ai") == "no-such-dist"


def test_a_declared_field_with_no_default_counts_as_there() -> None:
    class Declared:
        field: int

    assert _framework.has(Declared, "field") and _framework.has(Declared(), "field")
    assert not _framework.has(Declared, "other")
