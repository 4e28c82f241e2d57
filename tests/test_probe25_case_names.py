"""Every case name given to `endstate eval` must match a case: a typo is refused, not dropped.

`endstate eval research/ invoce/which-one` ran the research cases, said "PASSED: 4 of 4" and exited
0: the mistyped name matched nothing and its case never ran. A CI job gating on it passed without
the case it named. Only when no name matched at all was it an error.
"""

from __future__ import annotations

import pytest

from agent.cli.main import main


def test_a_mistyped_name_beside_a_good_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "research/", "invoce/which-one", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no case matches invoce/which-one;" in err and "invoice/which-one" in err
    assert "research/" not in err.split(";")[0]


def test_names_that_all_match_still_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "invoice/portal-offline", "invoice/which-one", "--no-progress"]) == 0
    assert "PASSED: 2 of 2 cases" in capsys.readouterr().out
