"""red41a: Ctrl-C (SIGINT) at any moment of a command ends it quietly with exit 130: no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

# `endstate ARGS` as its console script runs it, with a real SIGINT sent to the process the moment it
# imports `module` (the modules a command line is built from load after `run` began)
CTRL_C_AT_IMPORT = """
import os, signal, sys
MODULE, sys.argv = sys.argv[1], ["endstate", *sys.argv[2:]]
class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, CtrlC())
from agent.cli.main import run
run()
"""


@pytest.mark.parametrize("module", ["agent.cli.evals", "agent.cli.temporal"])
def test_ctrl_c_while_the_command_line_is_built_exits_130_without_a_traceback(
    tmp_path: Path, module: str
) -> None:
    """Before: a Ctrl-C pressed as `endstate eval` started printed a traceback of the import it cut."""
    argv = [sys.executable, "-c", CTRL_C_AT_IMPORT, module, "eval", "csv/clean"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert (done.returncode, done.stderr) == (130, ""), done.stderr
