"""`endstate review`, `label`, `promote`, `prune`, `recover` and `audit` with a missing store.

The runbooks send the on-call person to `endstate review --reason limit --store URL`. A mistyped
URL made a new, empty store there and answered "nothing to review ... every run there that needs a
look is labelled", exit 0: the queue looked done. `runs`, `pending` and `limits suggest` already
refuse a missing store and create nothing; these commands only read or change runs that exist.
`recover` (which the StopsVanishing runbook sends on-call to) and `audit` said "0 runs recovered or
swept" / "0 success audits made" over the new empty file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli.main import main


@pytest.mark.parametrize(
    "argv",
    [
        ["review", "--reason", "limit", "--store", "{store}"],
        ["review", "--json", "--store", "{store}"],
        ["review", "label", "RUN", "fine", "--store", "{store}"],
        ["review", "promote", "RUN", "--store", "{store}", "--out", "{out}"],
        ["prune", "--older-than", "30d", "--store", "{store}"],
        ["recover", "--store", "{store}"],
        ["audit", "--store", "{store}"],
    ],
    ids=["queue", "queue-json", "label", "promote", "prune", "recover", "audit"],
)
def test_a_mistyped_store_is_an_error_and_nothing_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    store = tmp_path / "typo" / "runs.db"
    filled = [a.format(store=store, out=tmp_path / "cases") for a in argv]

    assert main(filled) == 2

    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith(f"endstate: there is no run store at {store} (nothing was created)"), err
    assert "\n" not in err and "Traceback" not in err
    assert "nothing to review" not in captured.out
    assert not store.exists() and not store.parent.exists()


def test_an_existing_store_still_opens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fix refuses only a missing store: an empty one that exists is read as before."""
    from agent.durable.store import open_store

    store = tmp_path / "runs.db"
    open_store(str(store)).close()

    assert main(["review", "--store", str(store)]) == 0
    assert "nothing to review" in capsys.readouterr().out
