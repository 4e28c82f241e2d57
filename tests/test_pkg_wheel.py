"""The wheel as `pip install endstate` installs it, not the checkout CI installs editable: every file the
packages read at run time is in it, it says it is typed, and the README's first command runs from it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from test_packaging import extras_modules

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "telemetry")
NOT_READ = {"agent/evals/README.md"}  # notes for the repository's readers, read by no code


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the sources (a build in the checkout would share its build/ with
    the sdist test's)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, src / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [found] = out.glob("endstate-*.whl")
    return found


def data_files() -> set[str]:
    """The files of the packages other than modules: what the code opens (migrations, models.toml, the
    inbox page, the eval cases, the collector config, the typed markers)."""
    return {
        p.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for p in (ROOT / package).rglob("*")
        if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts
    } - NOT_READ


@pytest.mark.slow
def test_the_wheel_holds_every_file_the_packages_read_and_says_they_are_typed(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "agent/models/models.toml",
        "agent/service/inbox.html",
        "telemetry/collector.yaml",
    } <= data_files()
    assert sorted(data_files() - names) == []
    # without the marker a user's mypy skips `agent` ("missing library stubs or py.typed marker")
    assert {"agent/py.typed", "telemetry/py.typed"} <= names


@pytest.mark.slow
def test_the_readme_first_command_runs_from_the_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    """Unpacked as pip installs it, run from elsewhere with no extra: `endstate eval`, a store's
    migrations, the model table and the inbox page all read the wheel's files, not the checkout's."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "work"
    work.mkdir()
    script = (
        "import sys\n"
        f"for m in {sorted(extras_modules())!r}: sys.modules[m] = None\n"
        "import agent, telemetry\n"
        f"assert agent.__file__.startswith({str(site)!r}), agent.__file__\n"
        "from agent.durable.store import open_store\n"
        "open_store('runs.db').close()\n"
        "from agent.models.catalog import ModelTable, default_model\n"
        "assert default_model({}) in ModelTable.builtin()\n"
        "import agent.service.inbox\n"
        "from agent.cli.main import main\n"
        "sys.exit(main(['eval']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=work,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASSED: 17 of 17" in done.stdout, done.stdout[-2000:]
