"""The seed `ci/approved-push` scenario answered with `endstate deny`, as the README's commands allow.

Its script covered the approval only: after a denial its `done` ("pushed") was rejected by the
verifiers and the scripted model had no step left, so the run ended `error` ("scripted model has no
step for turn 7"). It now gives up, saying the push was denied.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.cli.main import main


def test_a_denied_push_gives_up_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    store = str(tmp_path / "runs.db")
    start = ["start", "ci-fixer", "Fix CI", "--scenario", "ci/approved-push", "--store", store]
    assert main(start) == 0
    run_id = re.findall(r"^run (\w+): need_help", capsys.readouterr().out, re.M)[0]
    assert main(["deny", run_id, "Not now: main is frozen", "--store", store, "--json"]) == 0
    out = capsys.readouterr().out
    assert '"reason": "gave_up"' in out, out
    assert "denied" in out
