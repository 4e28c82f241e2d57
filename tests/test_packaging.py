"""Packaging as users meet it: declared dependencies, bounds, the license, the sdist, and evals that
close the research corpus promptly."""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.metadata as md
import importlib.util
import os
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agent.cli._help import DefaultsFormatter
from agent.cli.main import build_parser, main
from agent.examples import research

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
OWN = {"agent", "telemetry", "dashboards", "alerts", "benchmarks", "tests"} | {
    p.stem for p in (ROOT / "tests").glob("*.py")
}


def requirements(group: str | None = None) -> list[str]:
    project = PYPROJECT["project"]
    if group is None:
        return list(project["dependencies"])
    return list(project["optional-dependencies"][group])


def name_of(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert found, requirement
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def declared() -> set[str]:
    groups = [None, *PYPROJECT["project"]["optional-dependencies"]]
    return {name_of(r) for g in groups for r in requirements(g)}


def imported_modules(folder: Path) -> dict[str, str]:
    """Every absolute import in the folder's Python files: module -> the first file importing it."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*.py")):
        if ".venv" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name.split(".")[0] not in OWN and name.split(".")[0] not in sys.stdlib_module_names:
                    found.setdefault(name, str(path.relative_to(ROOT)))
    return found


@functools.cache
def installed_files() -> dict[str, str]:
    """Every installed file (its normalised path) -> the distribution that installed it."""
    return {
        os.path.normpath(str(dist.locate_file(file))): name_of(dist.metadata["Name"])
        for dist in md.distributions()
        for file in dist.files or []
    }


def distributions_of(module: str) -> set[str]:
    """The installed distributions that hold `module`: one, or several for a namespace package."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:  # its parent package is not installed
        return set()
    if spec is None:
        return set()
    files = installed_files()
    if spec.origin not in (None, "namespace"):
        found = files.get(os.path.normpath(str(spec.origin)))
        return {found} if found else set()
    folders = [os.path.normpath(f) + os.sep for f in spec.submodule_search_locations or []]
    return {d for path, d in files.items() if path.startswith(tuple(folders))}


@pytest.mark.parametrize("folder", ["agent", "telemetry", "dashboards", "tests"])
def test_every_module_the_code_imports_comes_from_a_declared_distribution(folder: str) -> None:
    wanted = declared() | {"endstate"}
    missing = []
    for module, where in imported_modules(ROOT / folder).items():
        dists = distributions_of(module)
        if not dists & wanted:
            missing.append(
                f"{module} (imported by {where}) comes from {sorted(dists) or 'nothing installed'}"
            )
    assert not missing, "declare these in pyproject.toml:\n" + "\n".join(missing)


def test_httpx2_is_declared_because_the_anthropic_adapter_imports_it() -> None:
    assert "httpx2" in {name_of(r) for r in requirements()}
    assert distributions_of("httpx2") == {"httpx2"}


def test_runtime_and_dev_dependencies_have_upper_bounds() -> None:
    unbounded = [r for g in (None, "dev") for r in requirements(g) if "<" not in r and "==" not in r]
    unbounded = [r for r in unbounded if not r.startswith("endstate[")]
    assert unbounded == []


def test_the_otlp_exporters_for_grpc_and_http_are_dependencies(monkeypatch: pytest.MonkeyPatch) -> None:
    from telemetry.setup import exporter_from_env

    assert "opentelemetry-exporter-otlp" in {name_of(r) for r in requirements()}
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    for key in env:
        monkeypatch.setenv(key, env[key])
    grpc = exporter_from_env(env)
    assert grpc is not None and "grpc" in type(grpc).__module__
    grpc.shutdown()
    http = exporter_from_env({**env, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    assert http is not None and "http" in type(http).__module__


def test_the_license_file_is_the_declared_license() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the whole text, not a pointer to it


@pytest.mark.slow
def test_the_sdist_holds_the_packages_and_license_and_no_part_of_the_test_suite(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    [sdist] = tmp_path.glob("endstate-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "agent/durable/store/migrations/sqlite/0005_reviews.sql",
    } <= names
    assert "agent/evals/cases/research.yaml" in names and "agent/service/inbox.html" in names
    assert [n for n in names if n.startswith(("tests/", "benchmarks/"))] == []


def test_an_eval_closes_the_research_corpus_through_a_short_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing waits for the server's next poll: a short one keeps `endstate eval` from idling."""
    seen: list[tuple[str, Any]] = []

    class Spy(research.ThreadingHTTPServer):
        def serve_forever(self, poll_interval: float = 0.5) -> None:
            seen.append(("serve", poll_interval))
            super().serve_forever(poll_interval)

        def shutdown(self) -> None:
            super().shutdown()
            seen.append(("shutdown", None))

    monkeypatch.setattr(research, "ThreadingHTTPServer", Spy)
    assert main(["eval", "research/private-margin", "--no-progress"]) == 0
    assert ("shutdown", None) in seen  # closed before the eval returned
    polls = [p for kind, p in seen if kind == "serve"]
    assert polls and all(p <= 0.1 for p in polls)
    assert research.POLL_SECONDS <= 0.1


# -- for newcomers ---------------------------------------------------------------------------------


def all_parsers() -> list[argparse.ArgumentParser]:
    """The `endstate` parser and every subcommand's, nested ones too."""
    found, todo = [], [build_parser()]
    while todo:
        parser = todo.pop()
        found.append(parser)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
    return found


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"endstate {md.version('endstate')}"


def test_every_help_shows_the_defaults_and_the_environment_it_reads() -> None:
    parsers = all_parsers()
    assert len(parsers) > 15
    for parser in parsers:
        text = parser.format_help()
        assert "environment variables read: " in text, f"{parser.prog} --help names no environment variables"
        for action in parser._actions:
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
                shown = DefaultsFormatter(parser.prog)._get_help_string(action)
                assert "default" in shown, (
                    f"{parser.prog} {action.option_strings[0]} does not show its default"
                )
    serve = next(p for p in parsers if p.prog == "endstate serve").format_help()
    assert "ENDSTATE_PORT" in serve and "ENDSTATE_TOKEN" in serve and "(default: 30.0)" in serve


def test_one_run_is_one_run_not_one_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(tmp_path / "runs.db")
    from agent.durable.store import open_store

    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    open_store(store).close()
    assert main(["recover", "--store", store]) == 0
    assert "0 runs recovered or swept" in capsys.readouterr().out
    assert (
        main(["start", "csv-cleaner", "Clean orders.csv", "--store", store, "--scenario", "csv/shutdown"])
        == 3  # cancelled: not a success's 0
    )
    assert "cancelled after 2 turns" in capsys.readouterr().out
    s = open_store(store)  # a shutdown-cancelled run is recovered; mark this one as one
    s._rows("UPDATE endstate_runs SET interrupted = 1")  # type: ignore[attr-defined]
    s.close()
    assert main(["recover", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "1 run recovered or swept" in out and "1 runs" not in out


def test_the_pending_hints_carry_the_store_they_were_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(tmp_path / "my runs.db")
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    args = ["start", "invoice-downloader", "Get the invoice", "--scenario", "invoice/which-one"]
    assert main([*args, "--store", store, "--run-id", "asks"]) == 0
    args = ["start", "ci-fixer", "Fix CI", "--scenario", "ci/approved-push"]
    assert main([*args, "--store", store, "--run-id", "pushes"]) == 0
    capsys.readouterr()
    assert main(["pending", "--store", store]) == 0
    out = capsys.readouterr().out
    assert f"-> endstate answer asks --store '{store}' \"your answer\"" in out
    assert (
        f"-> endstate approve pushes --store '{store}'   or   endstate deny pushes --store '{store}'" in out
    )


def extras_modules() -> set[str]:
    """The top-level modules that only the optional extras install (not the runtime dependencies)."""
    own = {re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0].lower() for r in PYPROJECT["project"]["dependencies"]}
    extra = (
        {
            re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0].lower()
            for reqs in PYPROJECT["project"]["optional-dependencies"].values()
            for r in reqs
        }
        - own
        - {"endstate"}
    )
    by_module = md.packages_distributions()
    return {
        m for m, dists in by_module.items() if {d.lower() for d in dists} <= extra and not m.startswith("_")
    }


def test_the_readme_first_command_runs_with_no_extra_installed(tmp_path: Path) -> None:
    # `pip install -e . && endstate eval`: a CLI module importing an extra (temporalio) at import time
    # broke every command of an install without it. Here each extra's modules cannot be imported.
    blocked = extras_modules()
    assert {"temporalio", "langgraph", "pydantic_ai"} <= blocked
    script = (
        "import sys\n"
        f"for m in {sorted(blocked)!r}: sys.modules[m] = None\n"
        "from agent.cli.main import main\n"
        "sys.exit(main(['eval']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PASSED: 17 of 17" in done.stdout, done.stdout[-2000:]
