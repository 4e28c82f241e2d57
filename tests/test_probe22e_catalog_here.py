"""The README's own catalog, `mypkg/agents.py` with `--catalog mypkg.agents:catalog`, run with the
`endstate` command from the folder that holds `mypkg/`.

The console script puts its own folder on `sys.path`, not the working directory (as `python -m`
does), so every command said "No module named 'mypkg'" unless the user knew to set PYTHONPATH.
The working directory now goes last on the path: the catalog is found, and a file there named like
an installed package (`agent.py`) shadows nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

AGENTS = """
from agent import Agent, Catalog
from agent.models.scripted import ScriptedModel, finish

catalog = Catalog()
catalog.register(
    "ci-fixer", lambda state: Agent(name="ci-fixer", model=ScriptedModel([[finish("done", "ok")]]))
)
"""


def endstate(here: Path, scripts: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`endstate ARGV` run from `here` as its console script runs: from a file in another folder."""
    script = scripts / "endstate"
    script.write_text("from agent.cli.main import run\nrun()\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ENDSTATE_WORLDS": str(here / "worlds")}
    env.pop("ENDSTATE_CATALOG", None)
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    return subprocess.run(
        [sys.executable, str(script), *argv], cwd=here, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_catalog_beside_the_working_directory_is_found(tmp_path: Path) -> None:
    here, scripts = tmp_path / "project", tmp_path / "bin"
    (here / "mypkg").mkdir(parents=True)
    scripts.mkdir()
    (here / "mypkg" / "__init__.py").write_text("")
    (here / "mypkg" / "agents.py").write_text(AGENTS)
    (here / "agent.py").write_text("raise SystemExit('a file here shadowed the agent package')\n")
    done = endstate(here, scripts, "start", "ci-fixer", "Fix CI", "--catalog", "mypkg.agents:catalog")
    assert done.returncode == 0, done.stderr
    assert "success after 1 turn" in done.stdout
    assert "shadowed" not in done.stderr
