"""The fix-CI agent: read the logs, fix the code, run the real tests, push with approval.

Done means the whole goal, checked by code: the tests pass, the linter is
quiet, and the fix was pushed (the very code that was tested: a change after
the push needs another push). A denied push is therefore never a success.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

from agent.agent import Agent
from agent.budget import Budget
from agent.models.base import Model
from agent.tools import Tool, tool
from agent.verify import AllOf, CommandVerifier, PredicateVerifier, Verifier, run_as_group

TASK_TYPE = "fix_ci"
TASK = "CI is red on main. Find the failing test, fix the code (not the test), and push the fix."
INSTRUCTIONS = (
    "You fix failing CI. Read the logs, read and edit files, run the tests and the linter, then push. "
    "Call finish(kind='done') once the tests pass, the linter is quiet and the fix is pushed. "
    "If the push is denied, the task cannot be done: give up and say so."
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


def lint_command() -> list[str]:
    """Ruff (its default rules, ignoring any config around the repository) when installed;
    else the compiler's own check of every file."""
    if importlib.util.find_spec("ruff"):
        return [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--quiet", "."]
    return [sys.executable, "-m", "compileall", "-q", "."]


def tree_digest(repo: Path) -> str:
    """A digest of the repository's Python files: what a push sends."""
    h = hashlib.sha256()
    for path in sorted(repo.rglob("*.py")):
        h.update(f"{path.relative_to(repo)}\0".encode() + path.read_bytes() + b"\0")
    return h.hexdigest()


def changes(repo: Path) -> str:
    """The unified diff of the repository against the files it started with (what a push publishes)."""
    current = {str(p.relative_to(repo)): p for p in repo.rglob("*.py")}
    diff: list[str] = []
    for name in sorted(set(FILES) | set(current)):
        before = FILES.get(name, "").splitlines(keepends=True)
        path = repo / name
        after = path.read_text().splitlines(keepends=True) if path.is_file() else []
        diff += difflib.unified_diff(before, after, f"a/{name}", f"b/{name}")
    return "".join(diff)


def push_preview(repo: Path, arguments: dict[str, object]) -> str:
    """What a push would publish: the branch, and the diff against the original files."""
    diff = changes(repo)
    where = f"Push to {arguments.get('branch')!s}"
    return f"{where}, publishing:\n{diff}" if diff else f"{where}: no change from the original files."


def pushed(repo: Path) -> dict[str, str] | None:
    """What the last push sent (branch and tree digest), or None when nothing was pushed."""
    marker = repo / "PUSHED"
    return json.loads(marker.read_text()) if marker.exists() else None


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
        done = run_as_group(test_command(), repo, 110)  # past it, what the tests started is killed too
        return f"exit {done.returncode}\n{(done.stdout + done.stderr)[-1500:]}"

    @tool(timeout=120)
    def run_lint() -> str:
        """Run the linter; returns the tail of its output."""
        done = run_as_group(lint_command(), repo, 110)
        return f"exit {done.returncode}\n{(done.stdout + done.stderr)[-1500:]}"

    @tool(needs_approval=True, preview=functools.partial(push_preview, repo))
    def push(branch: str) -> str:
        """Push the working tree to `branch`. A person must approve every push."""
        (repo / "PUSHED").write_text(json.dumps({"branch": branch, "tree": tree_digest(repo)}))
        return f"pushed to {branch}"

    return [read_logs, read_file, edit_file, run_tests, run_lint, push]


def verifier(repo: Path) -> Verifier:
    """The whole goal: tests pass, linter quiet, and the tested code pushed."""
    return AllOf(
        (
            CommandVerifier(test_command(), cwd=repo, timeout=120),
            CommandVerifier(lint_command(), cwd=repo, timeout=120),
            PredicateVerifier(lambda ctx: _tested_code_pushed(repo), NOT_PUSHED),
        )
    )


NOT_PUSHED = (
    "the fix is not pushed (a denied push pushes nothing, and a change after a push needs another "
    "push): the task is done only when the tested code is pushed"
)


def _tested_code_pushed(repo: Path) -> bool:
    sent = pushed(repo)
    return sent is not None and sent.get("tree") == tree_digest(repo)


def make_agent(model: Model, repo: Path, budget: Budget | None = None, **options: object) -> Agent:
    """The fix-CI agent over `repo`; success means tests pass, the linter is quiet and the fix is pushed."""
    return Agent(
        name="ci-fixer",
        model=model,
        instructions=INSTRUCTIONS,
        tools=tools_for(repo),
        verifiers=[verifier(repo)],
        budget=budget or Budget(max_turns=20, max_seconds=900),
        task_type=TASK_TYPE,
        **options,  # type: ignore[arg-type]
    )
