"""The README's own words, tried as a new user reads them.

- The CI fixer's tools, as the README lists them, are the tools the seed agent has (`run_lint`
  was left out, and done needs the linter quiet too).
- `endstate review` says "1 turn", as `endstate runs` does, not "1 turns".
- "Success audits": the README showed `audit=SuccessAudit(...)` with no import, and
  `from agent import SuccessAudit` fails; the line now says where it comes from and where it goes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent import Agent
from agent.cli.main import main
from agent.examples import fix_ci
from agent.models.scripted import ScriptedModel

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def bullet(title: str) -> str:
    """The text of the README's bullet `- **title**: ...` up to the next bullet."""
    match = re.search(rf"^- \*\*{re.escape(title)}\*\*:(.*?)(?=^- |^$)", README, flags=re.S | re.M)
    assert match, f"no bullet {title!r} in the README"
    return match.group(1)


def test_ci_fixer_tools_are_those_the_readme_lists(tmp_path: Path) -> None:
    listed = set(re.findall(r"`([a-z_]+)`", bullet("CI fixer")))
    tools = {t.name for t in fix_ci.tools_for(fix_ci.make_world(tmp_path))}
    assert listed == tools


def test_success_audit_line_runs_as_written() -> None:
    text = bullet("Success audits")
    imports = re.findall(r"`(from agent[\w.]* import \w+)`", text)
    assert imports, "the line says where SuccessAudit comes from"
    call = re.search(r"`Agent\(\.\.\., audit=(SuccessAudit\([^)]*\))\)`", text)
    assert call, text
    namespace: dict[str, object] = {"check": lambda ctx: []}
    for line in imports:
        exec(line, namespace)
    audit = eval(call.group(1), namespace)
    agent = Agent(name="audited", model=ScriptedModel([]), audit=audit)
    assert agent.audit is not None
    assert (agent.audit.share, agent.audit.after) == (0.1, 3600)


def test_the_review_queue_says_1_turn_not_1_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`endstate review` listed the seed's API-down run as "1 turns" (`endstate runs` says "1 turn")."""
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    store = str(tmp_path / "runs.db")
    assert main(["start", "ci-fixer", "Fix CI", "--store", store, "--scenario", "ci/api-down"]) == 0
    capsys.readouterr()
    assert main(["review", "--store", store]) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if "ci-fixer" in x]
    assert " 1 turn  " in line and "1 turns" not in line
