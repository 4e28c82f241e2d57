"""Sync entry points for the integrations' async runs."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from agent.errors import ConfigError

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end; inside a running event loop, say to await the async form instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise ConfigError("run/resume were called inside a running event loop: await arun/aresume instead")
