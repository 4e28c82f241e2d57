"""A promote that cannot write its case whole leaves no case behind.

Before, a promote that failed while writing the case (a full disk; here a file-size limit) left the
half-written file: the inbox then said "Promoted: cases/offline.yaml", `endstate eval` could not load
it, and every later promote was refused because the file "exists already". Now the file is removed
when it cannot be written whole, and the next promote writes a case that loads.
"""

from __future__ import annotations

import contextlib
import resource
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_review import play

from agent.durable import review
from agent.durable.store import RunStore, open_store
from agent.evals.case import load_file

LIMIT = 300  # bytes a process may write to a file: less than the case holds


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    opened = open_store(str(tmp_path / "runs.db"))
    try:
        assert (
            play(opened, tmp_path, "invoice-downloader", "invoice/portal-offline", "offline").reason
            == "gave_up"
        )
        review.label(opened, "offline", "correct_give_up", "", None, "on-call")
        yield opened
    finally:
        opened.close()


@contextlib.contextmanager
def small_files() -> Iterator[None]:
    """Writes past `LIMIT` bytes fail with EFBIG (SIGXFSZ ignored), as on a full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    before = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, before)


def test_a_promote_that_cannot_write_its_case_whole_leaves_none_and_the_next_one_works(
    store: RunStore, tmp_path: Path
) -> None:
    out = tmp_path / "cases"
    out.mkdir()
    with (
        small_files(),
        pytest.raises(review.ReviewError, match=r"cannot write the case file .*offline\.yaml"),
    ):
        review.promote(store, "offline", None, out, overwrite=False)
    assert not (out / "offline.yaml").exists()  # was a 300-byte file, the start of the case

    done = review.promote(store, "offline", None, out, overwrite=False)  # was refused: "exists already"
    (case,) = load_file(done.path)
    assert case.name == "review/offline"
