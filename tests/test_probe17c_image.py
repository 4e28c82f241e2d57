"""The agent image of docker-compose.yml is built from what Docker sends it: the build context
that `.dockerignore` leaves, copied in by the Dockerfile's COPY lines. Every file pyproject.toml
names (the readme, the license files) must reach `pip install .` there, or the installed package
goes without its license and setuptools warns that the build will stop working."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ignore_rules() -> list[tuple[bool, str]]:
    """`.dockerignore` as (excluded, pattern) pairs, in order: the last pattern that matches wins."""
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            negated = line.startswith("!")
            rules.append((not negated, line.lstrip("!").strip("/")))
    return rules


def matches(pattern: str, path: str) -> bool:
    """Docker's matching, as far as this file uses it: a pattern matches a path or any of its
    parents; a leading `**/` matches any number of folders (none included)."""
    parts = path.split("/")
    ends = range(1, len(parts) + 1)
    if pattern.startswith("**/"):
        pattern = pattern.removeprefix("**/")
        candidates = ["/".join(parts[i:j]) for j in ends for i in range(j)]
    else:
        candidates = ["/".join(parts[:j]) for j in ends]
    return any(fnmatch.fnmatchcase(c, pattern) for c in candidates)


def in_context(path: str, rules: list[tuple[bool, str]]) -> bool:
    excluded = False
    for exclude, pattern in rules:
        if matches(pattern, path):
            excluded = exclude
    return not excluded


def copied_before_install() -> list[str]:
    """The sources of the Dockerfile's COPY lines before its `pip install .`."""
    sources: list[str] = []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if re.match(r"RUN pip install \.", line):
            return sources
        if m := re.match(r"COPY\s+(?!--)(.+)", line):
            sources += m.group(1).split()[:-1]
    raise AssertionError("the Dockerfile has no `RUN pip install .`")


def build_context(to: Path) -> Path:
    """What `pip install .` sees in the image: the context's files the COPY lines bring in."""
    rules = ignore_rules()
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    for source in copied_before_install():
        for path in tracked.stdout.splitlines():
            if (path == source or path.startswith(source.rstrip("/") + "/")) and in_context(path, rules):
                (to / path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / path, to / path)
    return to


def test_the_matcher_reads_dockerignore_as_docker_does() -> None:
    rules = ignore_rules()
    assert in_context("agent/loop.py", rules) and in_context("pyproject.toml", rules)
    assert not in_context("tests/test_loop.py", rules)
    assert not in_context("agent/__pycache__/x.pyc", rules)
    assert not in_context("agent/cli/__pycache__/main.cpython-311.pyc", rules)


def test_every_file_pyproject_names_is_sent_to_the_image_and_copied() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = [project["readme"], *project.get("license-files", [])]
    rules = ignore_rules()
    copied = copied_before_install()
    for path in named:
        assert (ROOT / path).is_file(), path
        assert in_context(path, rules), f"{path} is left out of the build context by .dockerignore"
        assert path in copied, f"the Dockerfile does not COPY {path} before `pip install .`"


@pytest.mark.slow
def test_the_image_installs_a_wheel_that_carries_the_license(tmp_path: Path) -> None:
    """Build the wheel the image installs, from the image's context alone (offline, with the
    setuptools the tests run with): its metadata carries the LICENSE the project declares."""
    context = build_context(tmp_path / "context")
    out = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(context)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert "did not match any files" not in built.stdout + built.stderr
    (wheel,) = out.glob("endstate-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(re.fullmatch(r"endstate-[^/]+\.dist-info/licenses/LICENSE", n) for n in names), names[-10:]
