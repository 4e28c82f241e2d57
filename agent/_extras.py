"""The optional extras: the modules each installs, and the error naming the extra a module needs.

`pip install endstate` has none of them. A module of Endstate built on one (`agent.temporal`,
`agent.integrations.openai_agents`, ...) imports its framework inside `needs_extra`, so that
importing it without the extra says what to install instead of `No module named 'temporalio'`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

from agent.errors import MissingExtra

# extra -> the top-level modules its distributions install (what a module of Endstate imports)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "temporal": ("temporalio",),
    "openai-agents": ("agents", "openai"),
    "claude-agent-sdk": ("claude_agent_sdk",),
    "pydantic-ai": ("pydantic_ai",),
    "langgraph": ("langgraph", "langchain_core"),
    "bedrock": ("boto3", "botocore"),
}


@contextmanager
def needs_extra(extra: str, what: str) -> Iterator[None]:
    """Imports of `what` (a module of Endstate) from `extra`: one of the extra's modules missing is
    `MissingExtra` naming it; any other missing module is raised as it was (a broken install)."""
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").partition(".")[0]
        if isinstance(exc, MissingExtra) or top not in EXTRA_MODULES[extra]:
            raise
        raise missing_extra(extra, what, exc.name or top) from exc


def require_extra(extra: str, what: str) -> None:
    """`MissingExtra` naming `extra` when one of its modules is not installed (for a feature that
    imports them only when used, as the Anthropic SDK's Bedrock client does at its first call)."""
    for module in EXTRA_MODULES[extra]:
        if importlib.util.find_spec(module) is None:
            raise missing_extra(extra, what, module)


def missing_extra(extra: str, what: str, module: str) -> MissingExtra:
    """The error for `what` without `extra` (its `module` missing), with the command that installs it."""
    return MissingExtra(
        f"{what} needs the {extra} extra, which is not installed (no module {module!r}): "
        f"pip install 'endstate[{extra}]'",
        name=module,
    )
