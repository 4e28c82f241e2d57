"""`python -m dashboards.build` on the README's install (`pip install -e .`), which has no SDK.

The Grafana Foundation SDK is the `dashboards` extra, and the README said nothing of it, so the
build was a `ModuleNotFoundError` traceback. It now says which package is missing and how to
install it, exit 2; with the SDK it builds as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WITHOUT_SDK = (
    "import runpy, sys; sys.modules['grafana_foundation_sdk'] = None; "  # as if never installed
    "sys.argv = ['dashboards.build', '--check']; runpy.run_module('dashboards.build', run_name='__main__')"
)


def build(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_without_the_sdk_the_build_says_how_to_install_it() -> None:
    done = build("-c", WITHOUT_SDK)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "pip install -e '.[dashboards]'" in done.stderr
    assert "pip install -e '.[dashboards]'" in (ROOT / "README.md").read_text()


def test_with_the_sdk_it_builds() -> None:
    done = build("-m", "dashboards.build", "--check")
    assert done.returncode == 0, done.stderr
