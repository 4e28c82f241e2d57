"""The fix-CI agent: read the logs, fix the code, run the real tests, push with approval."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from agent.agent import Agent
from agent.budget import Budget
from agent.models.base import Model
from agent.tools import Tool, tool
from agent.verify import CommandVerifier

TASK_TYPE = "fix_ci"
TASK = "CI is red on main. Find the failing test, fix the code (not the test), and push the fix."
INSTRUCTIONS = (
    "You fix failing CI. Read the logs, read and edit files, run the tests, then push. "
    "Call finish(kind='done') once the tests pass and the fix is pushed."
)

FILES = {
    "calc/__init__.py": "",
    "calc/money.py": (
        'def add_cents(a: int, b: int) -> int:\n    """Add two amounts in cents."""\n    return a - b\n'
    ),
    "tests/__init__.py": "",
    "tests/test_money.py": (
        "import unittest\n\n"
        "from calc.money import add_cents\n\n\n"
        "class AddCentsTest(unittest.TestCase):\n"
        "    def test_adds(self):\n"
        "        self.assertEqual(add_cents(150, 250), 400)\n"
    ),
    "ci.log": (
        "$ python -m pytest -q\n"
        "F\n"
        "FAILED tests/test_money.py::AddCentsTest::test_adds - AssertionError: -100 != 400\n"
        "1 failed in 0.02s\n"
    ),
}


def make_world(repo: Path) -> Path:
    """Write the small repository with its failing test into `repo`."""
    for name, text in FILES.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return repo


def test_command() -> list[str]:
    """Real pytest when installed; the standard library's runner otherwise."""
    if importlib.util.find_spec("pytest"):
        return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    return [sys.executable, "-m", "unittest", "-q"]


def tools_for(repo: Path) -> list[Tool]:
    def inside(path: str) -> Path:
        full = (repo / path).resolve()
        if not full.is_relative_to(repo.resolve()):
            raise ValueError(f"{path!r} is outside the repository")
        return full

    @tool
    def read_logs() -> str:
        """Read the log of the last CI run."""
        return (repo / "ci.log").read_text()

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return inside(path).read_text()

    @tool
    def edit_file(path: str, old: str, new: str) -> str:
        """Replace the text `old` with `new` in a file (old must occur exactly once)."""
        full = inside(path)
        text = full.read_text()
        if text.count(old) != 1:
            raise ValueError(f"`old` occurs {text.count(old)} times in {path}; it must occur once")
        full.write_text(text.replace(old, new))
        return f"edited {path}"

    @tool(timeout=120)
    def run_tests() -> str:
        """Run the test suite; returns the tail of its output."""
        done = subprocess.run(test_command(), cwd=repo, capture_output=True, text=True, timeout=110)
        return f"exit {done.returncode}\n{(done.stdout + done.stderr)[-1500:]}"

    @tool(needs_approval=True)
    def push(branch: str) -> str:
        """Push the working tree to `branch`. A person must approve every push."""
        (repo / "PUSHED").write_text(branch)
        return f"pushed to {branch}"

    return [read_logs, read_file, edit_file, run_tests, push]


def make_agent(model: Model, repo: Path, budget: Budget | None = None, **options: object) -> Agent:
    """The fix-CI agent over `repo`; success means the real test suite passes."""
    return Agent(
        name="ci-fixer",
        model=model,
        instructions=INSTRUCTIONS,
        tools=tools_for(repo),
        verifiers=[CommandVerifier(test_command(), cwd=repo, timeout=120)],
        budget=budget or Budget(max_turns=20, max_seconds=900),
        task_type=TASK_TYPE,
        **options,  # type: ignore[arg-type]
    )
