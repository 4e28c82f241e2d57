"""A team's own catalog module, loaded by the `endstate` console script as a team runs it: each way
its import can fail is said in one line (exit 2) that tells what to do, never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs the console script

CATALOG = """
from agent import Agent, Catalog
from agent.models import ScriptedModel, finish, reply


def build(state):
    return Agent(name="triage", model=ScriptedModel([reply(finish("give_up", "no tickets"))]))


catalog = Catalog()
catalog.register("triage", build)
"""


def console_script() -> str:
    """The `endstate` console script of this Python (its path is not the working directory's, as
    `python -m agent.cli`'s is), else the one on PATH."""
    beside = Path(sys.executable).with_name("endstate")
    found = str(beside) if beside.exists() else shutil.which("endstate")
    assert found, "the endstate console script is not installed: pip install -e ."
    return found


def endstate(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ENDSTATE_", "OTEL_"))}
    environ.pop("PYTHONPATH", None)
    environ |= {"ENDSTATE_TRACES_FILE": str(cwd / "traces.jsonl"), **env}
    return subprocess.run(
        [console_script(), *argv], cwd=cwd, env=environ, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """`app/helpdesk/agents.py`, a package of the team's own beside which `endstate` may not run."""
    package = tmp_path / "app" / "helpdesk"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "agents.py").write_text(CATALOG)
    return tmp_path / "app"


def start(cwd: Path, catalog: str, **env: str) -> subprocess.CompletedProcess[str]:
    store = str(cwd / "runs.db")
    return endstate(cwd, "start", "triage", "Triage T-1", "--catalog", catalog, "--store", store, **env)


def test_a_catalog_not_on_the_path_says_where_python_looked_and_how_to_add_it(app: Path) -> None:
    elsewhere = app.parent
    done = start(elsewhere, "helpdesk.agents:catalog")
    assert done.returncode == 2, done.stderr
    said = done.stderr.strip()
    assert "Traceback" not in said and len(said.splitlines()) == 1
    assert "no module named 'helpdesk'" in said
    assert str(elsewhere) in said  # the working directory it looked in
    assert "$PYTHONPATH" in said and "pip install" in said
    fixed = start(elsewhere, "helpdesk.agents:catalog", PYTHONPATH=str(app))
    assert fixed.returncode == 0, fixed.stderr
    assert "gave_up" in fixed.stdout


def test_a_misspelt_module_of_a_found_package_is_named_as_such(app: Path) -> None:
    done = start(app, "helpdesk.agnets:catalog")
    assert done.returncode == 2
    assert "the package 'helpdesk'" in done.stderr and "has no module 'agnets'" in done.stderr
    assert "$PYTHONPATH" not in done.stderr  # the path is fine: the name is wrong


def test_a_catalog_whose_dependency_is_missing_says_to_install_it(app: Path) -> None:
    (app / "helpdesk" / "agents.py").write_text("import zendesk_client_not_here\n" + CATALOG)
    done = start(app, "helpdesk.agents:catalog")
    assert done.returncode == 2
    assert "imports 'zendesk_client_not_here', which is not installed" in done.stderr
    assert sys.executable.rsplit("/", 1)[0] in done.stderr  # for which Python


def test_a_catalog_that_raises_as_it_loads_is_one_line_naming_the_line(app: Path) -> None:
    (app / "helpdesk" / "agents.py").write_text('import os\n\nos.environ["HELPDESK_URL"]\n' + CATALOG)
    for argv in (
        ["start", "triage", "T", "--catalog", "helpdesk.agents:catalog", "--store", str(app / "r.db")],
        ["serve", "--catalog", "helpdesk.agents:catalog", "--store", str(app / "r.db"), "--port", "1"],
    ):
        done = endstate(app, *argv, ENDSTATE_TOKEN="a-token-of-some-length")
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert "importing 'helpdesk.agents' raised KeyError: 'HELPDESK_URL'" in done.stderr
        assert f"{app / 'helpdesk' / 'agents.py'}:3" in done.stderr


def test_an_eval_case_naming_a_catalog_off_the_path_says_how_to_add_it(app: Path) -> None:
    cases = app / "evals" / "triage.yaml"
    cases.parent.mkdir()
    cases.write_text(
        "cases:\n  - name: triage/none\n    agent: triage\n    catalog: helpdesk.agents:catalog\n"
        "    task: Triage T-1.\n    task_type: default\n    expect: gave_up\n"
    )
    done = endstate(app.parent, "eval", str(cases))
    assert done.returncode != 0
    said = done.stdout + done.stderr  # the case's failure, in the report
    assert "no module named 'helpdesk'" in said and "$PYTHONPATH" in said
    assert endstate(app, "eval", str(cases)).returncode == 0


def test_a_catalog_that_exits_as_it_loads_is_refused_not_obeyed(app: Path) -> None:
    """An argparse config read at import exits with the usage of a program that is not running."""
    (app / "helpdesk" / "agents.py").write_text('raise SystemExit("no config file")\n' + CATALOG)
    done = start(app, "helpdesk.agents:catalog")
    assert done.returncode == 2
    assert "cannot load the agent catalog" in done.stderr
    assert "raised SystemExit: no config file" in done.stderr
