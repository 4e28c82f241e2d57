"""svc42: `endstate eval --catalog` refuses a catalog it cannot load, whichever agents the cases name.

Before, `endstate eval --catalog nope:x csv/clean` ran and passed: the catalog was loaded only for a
case whose agent is no seed agent, so a mistyped catalog (in CI, `--catalog "$CATALOG"` with a typo)
was never said while the seed cases passed. Now it is a usage error (exit 2) naming the catalog.
"""

from __future__ import annotations

import pytest

from agent.cli.main import main


@pytest.mark.parametrize("listing", [[], ["--list"]])
def test_an_unknown_catalog_is_refused_before_any_case_runs(
    listing: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "--catalog", "nope:x", "csv/clean", *listing]) == 2
    captured = capsys.readouterr()
    assert "--catalog (or $ENDSTATE_CATALOG): cannot load the agent catalog 'nope:x'" in captured.err
    assert "PASSED" not in captured.out and "csv/clean" not in captured.out


def test_a_catalog_that_loads_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--catalog", "agent.examples.scenarios:example_catalog", "csv/clean"]) == 0
    assert "PASSED: 1 of 1" in capsys.readouterr().out
