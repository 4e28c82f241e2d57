"""What each integration reads of its framework, checked once when the integration is imported.

The integrations hook into the frameworks' own callbacks (Pydantic AI's capability hooks, the
OpenAI Agents SDK's run hooks) and read fields of their results (the Claude Agent SDK's
`terminal_reason`). A release that renames one does not fail: the framework simply never calls the
hook, or the field reads as absent, and the run is recorded wrong or not at all (no turns, a stop
taken for a success). So each integration names what it relies on, and importing it with a
framework that lacks any of it is a `ConfigError` saying what is missing and which version
Endstate is tested with.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterable, Mapping

from agent.errors import ConfigError


def require(dist: str, extra: str, needed: Mapping[object, Iterable[str]]) -> None:
    """A clear `ConfigError` when an attribute in `needed` (owner -> attribute names: methods,
    class attributes, or declared fields) is not on the installed `dist`."""
    missing = [
        f"{_name(owner)}.{attr}" for owner, attrs in needed.items() for attr in attrs if not has(owner, attr)
    ]
    if missing:
        raise ConfigError(
            f"{dist} {_installed(dist)} has no {', '.join(missing)}, which Endstate's integration relies "
            "on to see its runs (without it they would be recorded wrong or not at all): install a "
            f"version Endstate is tested with, pip install '{tested_with(dist, extra)}' "
            f"(the endstate[{extra}] extra)"
        )


def has(owner: object, attr: str) -> bool:
    """Whether `owner` has `attr`: an attribute, or a field its class declares (a dataclass field or
    a pydantic model field with no default is no class attribute)."""
    if hasattr(owner, attr):
        return True
    kinds = owner.__mro__ if isinstance(owner, type) else type(owner).__mro__
    return any(attr in getattr(kind, "__annotations__", {}) for kind in kinds)


def tested_with(dist: str, extra: str) -> str:
    """The requirement on `dist` of Endstate's `extra` (`pydantic-ai-slim>=2.68.0,<2.79`), else `dist`
    alone."""
    try:
        requires = importlib.metadata.requires("endstate") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    for line in requires:
        spec, _, marker = line.partition(";")
        found = re.match(r"[A-Za-z0-9._-]+", spec.strip())
        if found and _normal(found.group()) == _normal(dist) and f'extra == "{extra}"' in marker:
            return found.group() + _lower_first(spec.strip()[found.end() :])
    return dist


def _lower_first(specifiers: str) -> str:
    """`<2.79,>=2.68.0` (as installed metadata orders a range) as `>=2.68.0,<2.79` (as pyproject.toml
    writes it)."""
    parts = [p.strip() for p in specifiers.split(",") if p.strip()]
    return ",".join(sorted(parts, key=lambda p: p.startswith("<")))


def _installed(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(owner: object) -> str:
    return getattr(owner, "__qualname__", None) or type(owner).__qualname__
