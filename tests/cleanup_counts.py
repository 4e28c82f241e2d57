"""A catalog entry's cancel signal and cleanup that tests can watch, through the run's folder
(`state["dir"]`): the run is cancelled while the folder holds `stop`, each cleanup adds a line."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class Stop:
    """A run's own cancel signal (its catalog entry's `cancel`): set while its folder holds `stop`."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.flag = Path(state["dir"]) / "stop"

    def is_set(self) -> bool:
        return self.flag.exists()


def count_cleanup(state: dict[str, Any]) -> None:
    with (Path(state["dir"]) / "cleanups").open("a") as f:
        f.write("cleaned\n")


def cleanups(folder: Path) -> int:
    """How many cleanups ran for the run of `folder`."""
    path = folder / "cleanups"
    return len(path.read_text().splitlines()) if path.exists() else 0
