"""A judge's name is one judge's: a team module registering another function under a name already
taken (a shipped judge's, another team's) is refused, naming both. Before, the last module imported
silently replaced the judge of every case naming it: a module with its own `report_is_sourced` that
passes everything made the shipped research cases' false successes pass unseen."""

from __future__ import annotations

import importlib
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.cli.main import main
from agent.errors import ConfigError
from agent.evals.judges import JUDGES, report_is_sourced

LENIENT = """
from agent.evals.judges import judge


@judge("{name}")
def lenient(run, **anything):
    return []
"""


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("evals49_lenient", "evals49_team_a", "evals49_team_b"):
        sys.modules.pop(name, None)
    JUDGES.pop("evals49_shared", None)


def test_a_module_registering_a_shipped_judges_name_is_refused(modules: Path) -> None:
    (modules / "evals49_lenient.py").write_text(textwrap.dedent(LENIENT.format(name="report_is_sourced")))
    with pytest.raises(ConfigError) as refused:
        importlib.import_module("evals49_lenient")
    said = str(refused.value)
    assert "'report_is_sourced' is already registered by agent.evals.judges.report_is_sourced" in said
    assert "evals49_lenient.lenient" in said and "name of its own" in said
    assert JUDGES["report_is_sourced"] is report_is_sourced


def test_two_teams_one_name_is_refused_and_a_reimport_is_not(modules: Path) -> None:
    for team in ("evals49_team_a", "evals49_team_b"):
        (modules / f"{team}.py").write_text(textwrap.dedent(LENIENT.format(name="evals49_shared")))
    importlib.import_module("evals49_team_a")
    first = JUDGES["evals49_shared"]
    with pytest.raises(ConfigError, match=re.escape("evals49_team_a.lenient, and evals49_team_b.lenient")):
        importlib.import_module("evals49_team_b")
    assert JUDGES["evals49_shared"] is first
    sys.modules.pop("evals49_team_a")
    importlib.import_module("evals49_team_a")  # the same module loaded again replaces its own judge
    assert JUDGES["evals49_shared"] is not first and JUDGES["evals49_shared"].__module__ == "evals49_team_a"


def test_the_eval_naming_such_a_catalog_says_so_in_one_line_and_exits_2(
    modules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (modules / "evals49_lenient.py").write_text(
        textwrap.dedent(LENIENT.format(name="report_is_sourced")) + "\ncatalog = None\n"
    )
    (modules / "cases.yaml").write_text(
        "cases:\n  - {name: r/one, agent: researcher, catalog: 'evals49_lenient:catalog', task: t,\n"
        "     task_type: research, expect: gave_up, judge: [evals49_nothing]}\n"
    )
    assert main(["eval", str(modules / "cases.yaml")]) == 2
    err = capsys.readouterr().err
    assert "'report_is_sourced' is already registered" in err and len(err.splitlines()) == 1
    assert JUDGES["report_is_sourced"] is report_is_sourced


def test_one_file_imported_under_two_module_names_is_one_judge(modules: Path) -> None:
    """A test suite's path can import a team's module twice (`pkg.agents` and `agents`): the same
    code, so the same judge, not two."""
    (modules / "evals49_pkg").mkdir()
    (modules / "evals49_pkg" / "__init__.py").write_text("")
    (modules / "evals49_pkg" / "evals49_team_a.py").write_text(
        textwrap.dedent(LENIENT.format(name="evals49_shared"))
    )
    sys.path.insert(0, str(modules / "evals49_pkg"))
    try:
        importlib.import_module("evals49_pkg.evals49_team_a")
        importlib.import_module("evals49_team_a")  # the same file, by another name
    finally:
        sys.path.remove(str(modules / "evals49_pkg"))
        sys.modules.pop("evals49_pkg.evals49_team_a", None)
        sys.modules.pop("evals49_pkg", None)
    assert JUDGES["evals49_shared"].__module__ == "evals49_team_a"
