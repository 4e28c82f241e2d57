"""Endstate runs as Temporal workflows: for a fleet of workers on an engine the team already runs.

See DESIGN.md, "Past one machine: Temporal". `build_worker` runs a catalog's
agents; `TemporalRuns` starts, answers, resumes and lists runs; `TemporalPending`
feeds the pending-help gauges from Temporal's visibility.
"""

from agent._extras import needs_extra

with needs_extra("temporal", "agent.temporal"):  # each of its modules imports temporalio
    from agent.temporal._wire import ENV_TEMPORAL, NAMESPACE, TASK_QUEUE, WORKFLOW
    from agent.temporal.client import TemporalRuns
    from agent.temporal.worker import build_worker, ensure_search_attributes

__all__ = [
    "ENV_TEMPORAL",
    "NAMESPACE",
    "TASK_QUEUE",
    "WORKFLOW",
    "TemporalRuns",
    "build_worker",
    "ensure_search_attributes",
]
