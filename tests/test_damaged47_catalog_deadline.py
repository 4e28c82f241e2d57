"""A catalog module whose import hangs (it waits on a server that never answers) hung `endstate eval
--catalog module:attr` before any case ran, and a case file naming it (for a judge it registers)
hung when the cases loaded: neither had a deadline. Both now give up after
`$ENDSTATE_CATALOG_TIMEOUT` seconds (default `CATALOG_TIMEOUT`) with an error naming the module, the
deadline and how to raise it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hang import hanging_import

from agent.errors import ConfigError
from agent.evals.case import CaseError, load_file
from agent.evals.loading import ENV_CATALOG_TIMEOUT, catalog_timeout

HANGS = """
import damaged47_gate
from agent.durable.catalog import Catalog
from agent.evals.judges import judge

damaged47_gate.GATE.wait()  # the import hangs until the test opens the gate


@judge
def damaged47_judge(run):
    return True, "fine"


catalog = Catalog()
"""

CASE = """
cases:
  - name: hangs/1
    agent: s
    catalog: damaged47_hangs:catalog
    task: Sync.
    task_type: sync
    expect: success
    judge: [damaged47_judge]
"""


@pytest.fixture
def hanging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """A module `damaged47_hangs` whose import waits on the returned gate."""
    with hanging_import(tmp_path, monkeypatch, "damaged47_hangs", HANGS, gate="damaged47_gate") as gate:
        yield gate


def test_a_case_file_whose_catalog_import_hangs_is_refused_at_the_deadline(
    tmp_path: Path, hanging: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_CATALOG_TIMEOUT, "1")
    path = tmp_path / "hangs.yaml"
    path.write_text(CASE)
    found: list[BaseException] = []

    def load() -> None:
        try:
            load_file(path)
        except BaseException as exc:
            found.append(exc)

    loader = threading.Thread(target=load, daemon=True)
    loader.start()
    loader.join(timeout=120)  # the deadline is 1 s: long over, unless the load hangs
    assert not loader.is_alive(), "loading the cases never ended"
    (error,) = found
    assert isinstance(error, CaseError), error
    said = str(error)
    assert "'damaged47_hangs'" in said and "1 s" in said and f"${ENV_CATALOG_TIMEOUT}" in said


def test_eval_with_a_catalog_whose_import_hangs_ends_with_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "damaged47_gate.py").write_text("import threading\n\nGATE = threading.Event()\n")
    (tmp_path / "damaged47_hangs.py").write_text(textwrap.dedent(HANGS))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), ENV_CATALOG_TIMEOUT: "1"}
    env.pop("ENDSTATE_CATALOG", None)
    cmd = [sys.executable, "-m", "agent.cli", "eval", "--catalog", "damaged47_hangs:catalog", "--list"]
    with subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as p:
        try:
            _, err = p.communicate(timeout=120)  # the deadline is 1 s: long over, unless it hangs
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            pytest.fail("endstate eval --catalog never ended")
    assert p.returncode == 2, err
    assert "'damaged47_hangs'" in err and "1 s" in err and f"${ENV_CATALOG_TIMEOUT}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("value", ["soon", "0", "-3", "nan", "inf", "1e9"])
def test_a_bad_catalog_timeout_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(ENV_CATALOG_TIMEOUT, value)
    with pytest.raises(ConfigError, match=rf"\${ENV_CATALOG_TIMEOUT}"):
        catalog_timeout()
