"""red40: an empty task type given to a start is refused, as an empty run id is, not taken as none."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_service_defences import AUTH, Build, build  # noqa: F401 (the fixture)

from agent import Agent, Catalog
from agent.errors import ConfigError
from agent.models.scripted import ScriptedModel

SAYS = "the task type must not be empty: name one the agent runs, or leave it out for its own"
CLEAN = {"agent": "csv-cleaner", "task": "Clean it", "state": {"scenario": "csv/clean"}}


def test_post_runs_refuses_an_empty_task_type(build: Build) -> None:  # noqa: F811
    """Before: {"task_type": ""} started a run under the agent's own task type (202), where a script
    whose variable was unset meant another one."""
    api = build()
    for blank in ("", "   "):
        refused = api.post("/runs", json={**CLEAN, "task_type": blank}, headers=AUTH)
        assert refused.status_code == 400 and refused.json()["error"] == SAYS, refused.text
    assert api.get("/runs").json()["runs"] == []
    assert api.post("/runs", json={**CLEAN, "task_type": "csv_clean"}, headers=AUTH).status_code == 202


def test_start_refuses_an_empty_task_type(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "agent.cli", "start", "csv-cleaner", "Clean it", "--scenario", "csv/clean"]
    env = {**os.environ, "ENDSTATE_WORLDS": str(tmp_path / "worlds")}
    done = subprocess.run(
        [*argv, "--task-type", "", "--store", str(tmp_path / "runs.db")],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert SAYS in done.stderr


@pytest.mark.parametrize(
    ("task_types", "says"),
    [
        ("fix_ci", "task_types must be a tuple of task type names, such as ('fix_ci',), not 'fix_ci'"),
        (("fix_ci", ""), "task_types must hold non-empty strings"),
        (None, "task_types must be a tuple of task type names"),
    ],
)
def test_a_catalog_entry_refuses_task_types_that_are_no_names(task_types: object, says: str) -> None:
    """Before: `register(..., task_types=("fix_ci"))` (the comma forgotten) took the string letter by
    letter: a start could ask for task type "f", and one for "fix_ci" was refused."""
    catalog = Catalog()
    with pytest.raises(ConfigError, match=re.escape(says)):
        catalog.register(
            "fixer", lambda state: Agent(name="fixer", model=ScriptedModel([])), task_types=task_types
        )
    catalog.register(
        "fixer", lambda state: Agent(name="fixer", model=ScriptedModel([])), task_types=["fix_ci"]
    )
    assert catalog.entry("fixer").task_types == ("fix_ci",)
