"""Endstate: agent runs that end in a known, named state, decided and checked by code."""

import importlib
from typing import TYPE_CHECKING

from agent.agent import Agent
from agent.budget import Budget, Extension, Price, PriceTable, Spent
from agent.checks import TurnCheck, TurnVerdict, goal, invariant
from agent.clock import CancelSignal, Clock, SystemClock
from agent.content import ContentError, Document, Image, SearchResult, ToolOutput, ToolReference
from agent.context import CallRecord, RunContext
from agent.durable.catalog import Catalog
from agent.errors import ConfigError, EndstateError, ModelError, SnapshotError, TransientModelError
from agent.history import HistoryPolicy, ModelSummary
from agent.hooks import CompositeHooks, HumanWait, NoHooks, RunHooks, RunInfo, RunObserver
from agent.integrations._homegrown import observe_run
from agent.journal import Answer, Approval, Denial, HumanReply, Journal
from agent.models.base import UnreadableReply
from agent.policies import HelpPolicy, RetryPolicy
from agent.progress import ProgressDetector
from agent.result import FinishKind, LimitKind, PendingAction, RunResult, StopCause, StopReason, Suspension
from agent.snapshot import Snapshot, SnapshotKind
from agent.stops import StopKind, TurnSignal
from agent.tools import Tool, tool
from agent.usage import Usage
from agent.verify import Verifier, all_of, command, predicate, within

if TYPE_CHECKING:
    from agent.durable.runner import Runner
    from agent.durable.store import open_store

__all__ = [
    "ToolReference",
    "ToolOutput",
    "SearchResult",
    "Image",
    "Document",
    "ContentError",
    "Agent",
    "Answer",
    "Approval",
    "Budget",
    "CallRecord",
    "CancelSignal",
    "Catalog",
    "Clock",
    "CompositeHooks",
    "ConfigError",
    "Denial",
    "EndstateError",
    "Extension",
    "FinishKind",
    "HelpPolicy",
    "HistoryPolicy",
    "HumanReply",
    "HumanWait",
    "Journal",
    "LimitKind",
    "ModelError",
    "ModelSummary",
    "NoHooks",
    "PendingAction",
    "Price",
    "PriceTable",
    "ProgressDetector",
    "RetryPolicy",
    "RunContext",
    "RunHooks",
    "RunInfo",
    "RunObserver",
    "RunResult",
    "Runner",
    "Snapshot",
    "SnapshotError",
    "SnapshotKind",
    "Spent",
    "StopCause",
    "StopKind",
    "StopReason",
    "Suspension",
    "SystemClock",
    "Tool",
    "TransientModelError",
    "TurnSignal",
    "TurnCheck",
    "TurnVerdict",
    "UnreadableReply",
    "Usage",
    "Verifier",
    "all_of",
    "command",
    "goal",
    "invariant",
    "observe_run",
    "open_store",
    "predicate",
    "tool",
    "within",
]


_DURABLE = {"Runner": "agent.durable.runner", "open_store": "agent.durable.store"}


def __getattr__(name: str) -> object:
    """Durable runs' entry points (`from agent import Runner, open_store`), imported when first asked
    for: `import agent` alone loads no store driver."""
    if name in _DURABLE:
        return getattr(importlib.import_module(_DURABLE[name]), name)
    raise AttributeError(f"module 'agent' has no attribute {name!r}")
