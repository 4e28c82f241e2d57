"""`pip install endstate` has no extra: a module or command built on one says which extra to install
(`pip install 'endstate[temporal]'`), never a bare `No module named 'temporalio'` traceback.

Each check runs in a subprocess in which every module only an extra installs cannot be imported, as in
an install without any extra (`test_packaging.extras_modules`).
"""

from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from test_packaging import all_parsers, extras_modules

from agent._extras import EXTRA_MODULES

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

# each module of Endstate built on an extra, and that extra
MODULES = {
    "agent.temporal": "temporal",
    "agent.temporal.worker": "temporal",
    "agent.temporal.service": "temporal",
    "agent.integrations.openai_agents": "openai-agents",
    "agent.integrations.claude_agent_sdk": "claude-agent-sdk",
    "agent.integrations.pydantic_ai": "pydantic-ai",
    "agent.integrations.langgraph": "langgraph",
    "agent.integrations.langgraph_calls": "langgraph",
    "agent.integrations._lg_saver": "langgraph",
}


def without_extras(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `code` in a Python whose extras' modules cannot be imported."""
    script = f"import sys\nfor m in {sorted(extras_modules())!r}: sys.modules[m] = None\n{code}"
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", script, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_each_module_built_on_an_extra_names_the_extra_when_it_is_missing() -> None:
    code = (
        "import importlib, json\n"
        "seen = {}\n"
        f"for name in {sorted(MODULES)!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "        seen[name] = 'imported'\n"
        "    except ModuleNotFoundError as exc:\n"
        "        seen[name] = [type(exc).__name__, str(exc)]\n"
        "print(json.dumps(seen))\n"
    )
    done = without_extras(code)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    for name, extra in MODULES.items():
        kind, text = seen[name]
        assert kind == "MissingExtra", (name, kind, text)
        assert f"pip install 'endstate[{extra}]'" in text, (name, text)


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "--temporal", "127.0.0.1:9"],
        ["runs", "--temporal", "127.0.0.1:9"],
        ["start", "csv_clean", "clean it", "--temporal", "127.0.0.1:9", "--no-wait"],
        ["serve", "--temporal", "127.0.0.1:9", "--port", "9"],
    ],
)
def test_a_temporal_command_without_the_extra_says_what_to_install(
    command: list[str], tmp_path: Path
) -> None:
    done = without_extras(
        "from agent.cli.main import main\nsys.exit(main(sys.argv[1:]))", *command, cwd=tmp_path
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "pip install 'endstate[temporal]'" in done.stderr, done.stderr


def test_the_base_install_imports_with_warnings_as_errors() -> None:
    done = without_extras("import agent, agent.integrations, agent.service, telemetry, telemetry.setup")
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_extras_named_are_pyprojects_and_install_the_modules_named() -> None:
    """`EXTRA_MODULES` follows pyproject.toml: a renamed extra would send users to one that is not."""
    by_module = md.packages_distributions()
    for extra, modules in EXTRA_MODULES.items():
        assert extra in EXTRAS, extra
        wanted = {Requirement(r).name.lower() for r in EXTRAS[extra]}
        for module in modules:
            assert {d.lower() for d in by_module[module]} & wanted, (extra, module, by_module[module])


def test_an_anthropic_model_on_bedrock_without_the_extra_says_what_to_install() -> None:
    """The SDK's Bedrock client imports botocore at its first call: each run ended `error` saying only
    "No module named 'botocore'"."""
    code = (
        "from anthropic import AsyncAnthropicBedrock\n"
        "from agent.errors import MissingExtra\n"
        "from agent.models.anthropic import AnthropicModel\n"
        "client = AsyncAnthropicBedrock(aws_region='us-east-1', aws_access_key='a', aws_secret_key='b')\n"
        "try:\n"
        "    AnthropicModel('anthropic.claude-sonnet-4-5', client=client)\n"
        "except MissingExtra as exc:\n"
        "    print(exc)\n"
    )
    done = without_extras(code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "pip install 'endstate[bedrock]'" in done.stdout, done.stdout


def test_the_help_says_temporal_needs_its_extra() -> None:
    """`endstate --help` and each --temporal say what to install before the command fails for want of it."""
    parsers = {p.prog: p for p in all_parsers()}
    assert "endstate[temporal]" in " ".join(parsers["endstate"].format_help().split())
    for prog in ("endstate worker", "endstate start", "endstate runs", "endstate serve"):
        assert "(the temporal extra)" in " ".join(parsers[prog].format_help().split()), prog
