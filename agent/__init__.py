"""Endstate: agent runs that end in a known, named state, decided and checked by code."""

from agent.agent import Agent
from agent.budget import Budget, Price, PriceTable, Usage
from agent.context import CallRecord, RunContext
from agent.errors import ConfigError, EndstateError, ModelError, SnapshotError, TransientModelError
from agent.hooks import CompositeHooks, HumanWait, NoHooks, RunHooks, RunInfo, RunObserver
from agent.policies import HelpPolicy, RetryPolicy
from agent.progress import ProgressDetector
from agent.result import FinishKind, LimitKind, PendingAction, RunResult, StopReason, Suspension
from agent.snapshot import Snapshot
from agent.tools import Tool, tool
from agent.verify import Verifier, all_of, command, predicate

__all__ = [
    "Agent",
    "Budget",
    "CallRecord",
    "CompositeHooks",
    "ConfigError",
    "EndstateError",
    "FinishKind",
    "HelpPolicy",
    "HumanWait",
    "LimitKind",
    "ModelError",
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
    "Snapshot",
    "SnapshotError",
    "StopReason",
    "Suspension",
    "Tool",
    "TransientModelError",
    "Usage",
    "Verifier",
    "all_of",
    "command",
    "predicate",
    "tool",
]
