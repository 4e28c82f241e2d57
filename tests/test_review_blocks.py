"""A run whose tools returned content blocks (an image, a PDF), promoted to an eval case: the case keeps
the blocks (the bytes beside it, by digest), loads them back as they were, and `endstate eval` passes
it while the tool answers as recorded, and fails it when only the blocks differ."""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import review_agents
import yaml
from media_files import pdf, png
from test_service_support import TOKEN, Server

from agent.cli.main import main
from agent.content import ContentError
from agent.durable.review import CaseFiles
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.evals import load_cases
from agent.evals.replay import block_of_case
from agent.journal import Result
from agent.result import StopReason
from agent.service import review_pages
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


def test_the_inbox_download_of_a_case_with_blocks_is_a_zip_that_evals_as_the_promoted_case(
    cases: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run's page offers a zip (the case and its blobs), says so, and the zip unpacked into an
    empty folder is a case that `endstate eval` passes as it passes the promoted one."""
    with (
        Server(str(cases.parent / "runs.db"), tmp_path, catalog=CATALOG) as server,
        httpx.Client(base_url=server.url, timeout=30) as browser,
    ):
        assert browser.post("/inbox/login", data={"token": TOKEN}).status_code == 303
        page = browser.get("/inbox/review/runs/r-shot")
        download = browser.get("/inbox/review/runs/r-shot/case.zip")
        yaml_only = browser.get("/inbox/review/runs/r-shot/case.yaml")
    assert page.status_code == 200
    link = 'href="/inbox/review/runs/r-shot/case.zip" download="r-shot.zip">Download r-shot.zip</a>'
    assert link in page.text
    assert "r-shot.yaml and, in <code>blobs/</code>, the 1 image and 1 PDF its tools returned" in page.text
    assert download.status_code == 200 and download.headers["content-type"] == "application/zip"
    assert download.headers["content-disposition"] == 'attachment; filename="r-shot.zip"'
    folder = tmp_path / "unpacked"
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        names = sorted(archive.namelist())
        archive.extractall(folder)
    assert names == sorted(["r-shot.yaml", f"blobs/{digest(png(4, 3))}.png", f"blobs/{digest(pdf(2))}.pdf"])
    assert (folder / "r-shot.yaml").read_text() == (cases / "r-shot.yaml").read_text() == yaml_only.text
    verdicts = [cli(capsys, "eval", str(where), "--no-progress") for where in (cases, folder)]
    assert [code for code, _ in verdicts] == [0, 0], verdicts
    assert all("PASSED: 1 of 1" in text for _, text in verdicts), verdicts
    (folder / f"blobs/{digest(pdf(2))}.pdf").unlink()  # the zip's blobs are what made it pass
    code, text = cli(capsys, "eval", str(folder), "--no-progress")
    assert code == 2 and "copy that folder along" in text, text


def test_a_case_without_blocks_downloads_as_its_yaml_and_says_so() -> None:
    files = CaseFiles("r-1", {"name": "review/r-1"})
    link = review_pages._download_link(files)
    assert 'href="/inbox/review/runs/r-1/case.yaml" download="r-1.yaml">Download r-1.yaml</a>' in link
    assert "zip" not in link and files.held() == ""


def test_promote_writes_each_blob_whole_under_blobs_and_mends_one_that_does_not_hold_its_digest(
    cases: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file in blobs/ whose bytes are not those its name says (damaged, cut short) is written
    again on the next promote, through a new file renamed into place (never through a link
    there, nor is the case file it overwrites); one that holds its bytes is left as it is, and no
    part file stays behind."""
    blobs = cases / "blobs"
    shot, printed = blobs / f"{digest(png(4, 3))}.png", blobs / f"{digest(pdf(2))}.pdf"
    elsewhere = tmp_path / "elsewhere.png"
    elsewhere.write_bytes(b"not to be overwritten")
    shot.unlink()
    shot.symlink_to(elsewhere)
    (cases / "r-shot.yaml").unlink()
    (cases / "r-shot.yaml").symlink_to(elsewhere)  # the case file too: promote --force replaces it
    printed_inode = printed.stat().st_ino
    code, text = cli(
        capsys, "review", "promote", "r-shot", "--out", str(cases), "--catalog", CATALOG,
        "--store", str(cases.parent / "runs.db"), "--force",
    )  # fmt: skip
    assert code == 0, text
    assert not shot.is_symlink() and shot.read_bytes() == png(4, 3)
    assert elsewhere.read_bytes() == b"not to be overwritten"
    assert not (cases / "r-shot.yaml").is_symlink() and "review/r-shot" in (cases / "r-shot.yaml").read_text()
    assert printed.stat().st_ino == printed_inode  # it held its bytes: not written again
    assert sorted(p.name for p in blobs.iterdir()) == sorted([shot.name, printed.name])
    assert cli(capsys, "eval", str(cases), "--no-progress")[0] == 0


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ({"media_type": "image/png", "sha256": "../" * 21 + "a"}, "must be 64 hexadecimal digits"),
        ({"media_type": "image/../../../etc/passwd", "sha256": "a" * 64}, "is not one of an image or a PDF"),
        ({"media_type": "image/png\x00", "sha256": "a" * 64}, "is not one of an image or a PDF"),
        ({"media_type": "text/plain", "sha256": "a" * 64}, "is not one of an image or a PDF"),
    ],
)
def test_a_case_block_naming_a_blob_outside_blobs_is_refused(
    tmp_path: Path, source: dict[str, str], problem: str
) -> None:
    shape = {"type": "image", "source": {"type": "base64", **source}}
    with pytest.raises(ContentError, match=re.escape(problem)):
        block_of_case(shape, tmp_path)
