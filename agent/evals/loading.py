"""A deadline for loading a catalog: its module's import may wait on a server that never answers.

A per-case catalog is cut at its case's deadline (`agent.evals.runner.Catalogs`); a catalog loaded
before any case runs (`endstate eval --catalog`, and a case file's catalog imported for the judges it
registers when the cases load) is cut at `$ENDSTATE_CATALOG_TIMEOUT` seconds, `CATALOG_TIMEOUT` unless
set. The load runs on a daemon thread: one that hangs is left behind and never keeps the process from
exiting (an import cannot be killed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from agent._env import seconds_variable
from agent._within import Overdue, call_within
from agent.errors import ConfigError

T = TypeVar("T")

ENV_CATALOG_TIMEOUT = "ENDSTATE_CATALOG_TIMEOUT"
CATALOG_TIMEOUT = 120.0  # seconds a catalog's module may take to load, unless set
MAX_CATALOG_TIMEOUT = 86400.0  # a day


class CatalogHangs(ConfigError):
    """A catalog's module did not load within its deadline."""


def catalog_timeout() -> float:
    """The seconds a catalog may take to load: `$ENDSTATE_CATALOG_TIMEOUT`, else `CATALOG_TIMEOUT`."""
    return seconds_variable(
        ENV_CATALOG_TIMEOUT, CATALOG_TIMEOUT, MAX_CATALOG_TIMEOUT, "what a catalog module may take to load"
    )


def load_within(module: str, load: Callable[[], T], seconds: float | None = None) -> T:
    """`load()` (which imports `module`), given `seconds` (default `catalog_timeout()`); past them a
    `CatalogHangs` naming the module, the deadline and how to raise it."""
    seconds = catalog_timeout() if seconds is None else seconds
    try:
        return call_within(load, seconds, f"catalog-load {module[:60]}")
    except Overdue:
        raise CatalogHangs(
            f"the catalog module {module!r} did not finish loading within {seconds:g} s (does its import "
            "wait on a server, a lock or a prompt?); nothing ran. Make its import return, or give it "
            f"longer: ${ENV_CATALOG_TIMEOUT}=SECONDS (at most {MAX_CATALOG_TIMEOUT:g})"
        ) from None
