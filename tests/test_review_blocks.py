"""A run whose tools returned content blocks (an image, a PDF), promoted to an eval case: the case keeps
the blocks (the bytes beside it, by digest), loads them back as they were, and `endstate eval` passes
it while the tool answers as recorded, and fails it when only the blocks differ."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import review_agents
import yaml
from media_files import pdf, png

from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.evals import load_cases
from agent.journal import Result
from agent.result import StopReason
from agent.snapshot import Snapshot

CATALOG = "review_agents:catalog"


@pytest.fixture
def cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """The inspector's run, recorded through a Runner, labelled and promoted into `cases/`."""
    monkeypatch.delenv("ENDSTATE_CATALOG", raising=False)
    monkeypatch.delenv("INSPECTOR_CONTEXT", raising=False)
    path = tmp_path / "runs.db"
    store = open_store(str(path))
    try:
        runner = Runner(store, review_agents.catalog())
        done = asyncio.run(runner.start("inspector", "Look at the home page.", run_id="r-shot"))
        assert done.reason is StopReason.SUCCESS, done.note
    finally:
        store.close()
    out = tmp_path / "cases"
    assert cli(capsys, "review", "label", "r-shot", "fine", "--store", str(path))[0] == 0
    code, text = cli(
        capsys, "review", "promote", "r-shot", "--out", str(out), "--catalog", CATALOG, "--store", str(path)
    )
    assert code == 0, text
    yield out


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def test_a_promoted_case_keeps_the_blocks_by_digest_with_the_bytes_beside_it_once(cases: Path) -> None:
    [case] = yaml.safe_load((cases / "r-shot.yaml").read_text())["cases"]
    first, second = case["results"][:2]
    assert first == second  # the same page twice
    assert first["blocks"] == [
        {"type": "text", "text": "the page home"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "sha256": digest(png(4, 3))},
        },
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "sha256": digest(pdf(2))},
            "title": "Page home",
            "context": "printed by the browser",
        },
    ]
    blobs = sorted(p.name for p in (cases / "blobs").iterdir())
    assert blobs == sorted([f"{digest(png(4, 3))}.png", f"{digest(pdf(2))}.pdf"])  # each once
    assert (cases / "blobs" / f"{digest(pdf(2))}.pdf").read_bytes() == pdf(2)


def test_the_case_loads_the_blocks_back_as_the_run_recorded_them(cases: Path) -> None:
    store = open_store(str(cases.parent / "runs.db"))
    snapshot: Snapshot | None = store.snapshot("r-shot")
    store.close()
    assert snapshot is not None
    recorded = [e.blocks for e in snapshot.journal if isinstance(e, Result) and e.blocks]
    [case] = load_cases([cases])
    assert case.replay is not None
    assert [r.blocks for r in case.replay.results if r.blocks] == recorded and len(recorded) == 2


def test_eval_passes_the_case_and_fails_it_when_only_the_blocks_differ(
    cases: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, text = cli(capsys, "eval", str(cases), "--no-progress")
    assert code == 0 and "PASSED: 1 of 1" in text, text
    monkeypatch.setenv("INSPECTOR_CONTEXT", "printed by another browser")  # not in the result's text
    code, text = cli(capsys, "eval", str(cases), "--no-progress")
    assert code == 1, text
    assert "replay: call 1 (screenshot) answered with other content blocks: block 3 differs" in text


def test_a_case_whose_bytes_are_missing_or_changed_is_refused_naming_the_file(
    cases: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = cases / "blobs" / f"{digest(png(4, 3))}.png"
    blob.write_bytes(png(5, 3))
    code, text = cli(capsys, "eval", str(cases), "--no-progress")
    assert code == 2 and f"{blob} does not hold the bytes of sha256" in text, text
    blob.unlink()
    code, text = cli(capsys, "eval", str(cases), "--no-progress")
    assert code == 2 and "field 'results[0].blocks[1]'" in text and "copy that folder along" in text, text
