"""A SQLite store file deleted or replaced under a live process was found by a look at its path every
quarter of a second: a write in between went to the old file, which no other process reads and which
is gone once the process exits, and was said to be stored. Now a write looks as it commits (an
`fstat` of the file it opened: about a microsecond), and fails saying so. (A file moved away keeps
its name there: found at the next look at the path, the writes until then are in the moved file.)
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NOW = 1_800_000_000.0


def child_writes(path: Path, then: str, looks: float = 3600.0) -> str:
    """Run, in a process of its own: open the store at `path` (looking at its paths every `looks`
    seconds: by default, the file only as a write commits), write run "before", do `then`, write run
    "after", and die without closing anything (kill -9). What it printed: whether "after" was stored
    or refused (and the message)."""
    script = textwrap.dedent(
        f"""
        import os, shutil
        from pathlib import Path
        from agent.durable.store import Lease, NewRun, StoreError, open_store, sqlite
        sqlite.FILE_CHECK_SECONDS = {looks}
        path = Path({str(path)!r})
        store = open_store(str(path))
        store.create(NewRun("before", "test-agent", "t", "default"), Lease("a", 30.0), {NOW})
        {then}
        try:
            store.create(NewRun("after", "test-agent", "t", "default"), Lease("a", 30.0), {NOW})
            print("stored")
        except StoreError as exc:
            print("refused:", exc)
        os._exit(0)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    "then",
    [
        "path.unlink()",  # rm runs.db
        "shutil.copy(path, path.with_name('b.db')); path.with_name('b.db').rename(path)",  # a backup over it
    ],
    ids=["deleted", "replaced"],
)
def test_a_write_right_after_the_store_file_went_is_not_said_to_be_stored(tmp_path: Path, then: str) -> None:
    """Within the quarter of a second between two looks at the path (here never): the commit finds it."""
    said = child_writes(tmp_path / "runs.db", then)
    assert said.startswith("refused:"), said
    assert "while this process had it open, so this write was not stored" in said, said
    assert "restart this process" in said, said
