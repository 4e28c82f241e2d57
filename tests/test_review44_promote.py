"""Review, label, promote as a team walks it, with the runs that do not fit: each step works or
refuses saying why."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from foreign_agents import ENV_CHECKPOINTS, catalog

from agent.cli.main import main
from agent.durable import review
from agent.durable.runner import Runner
from agent.durable.store import open_store


def test_a_foreign_run_is_refused_at_promote_not_written_as_a_case_that_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the promote wrote a case (from a journal holding only the suspension) that every
    `endstate eval` failed with "a foreign agent: evals replay Endstate agents only"."""
    monkeypatch.setenv(ENV_CHECKPOINTS, str(tmp_path / "lg.db"))
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    try:
        res = asyncio.run(Runner(store, catalog()).start("oa-remover", "clean up a"))
        assert main(["deny", res.run_id, "no", "--store", url, "--catalog", "foreign_agents:catalog"]) == 0
        assert main(["review", "label", res.run_id, "false_success", "--store", url]) == 0  # labels count
        capsys.readouterr()
        out = tmp_path / "cases"
        code = main(
            [
                "review",
                "promote",
                res.run_id,
                "--store",
                url,
                "--out",
                str(out),
                "--catalog",
                "foreign_agents:catalog",
            ]
        )
        err = capsys.readouterr().err
        assert code == 2
        assert (
            f"run {res.run_id} of agent 'oa-remover' ran on another framework (openai_agents)" in err
            and "cannot be promoted" in err
        )
        assert not list(out.glob("*.yaml")) if out.exists() else True
        with pytest.raises(review.ReviewError, match="replay Endstate agents only"):  # the inbox's case too
            review.case_files(store, res.run_id, catalog="foreign_agents:catalog")
    finally:
        store.close()
