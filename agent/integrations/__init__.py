"""Endstate's stop reasons, spans and metrics for runs of other agent frameworks.

Each framework has its own module, importable once its extra is installed
(`pip install 'endstate[openai-agents]'`, `[claude-agent-sdk]`, `[pydantic-ai]`,
`[langgraph]`): `run`/`arun` take the framework's own agent and input and
return Endstate's `RunResult`, with the framework's result at `result.raw`;
`resume`/`aresume` continue a `need_help` run from the framework's saved state.
Home-grown loops use `observe_run`. A catalog entry made with
`Catalog.register_foreign` is a `ForeignAgent`: its suspended runs are saved in
Endstate's store and answered with `endstate approve/deny/answer` or the inbox.
"""

from agent.integrations._durable import ForeignAgent, Framework
from agent.integrations._homegrown import ObservedRun, observe_run
from agent.integrations._observe import Recorder

__all__ = ["ForeignAgent", "Framework", "ObservedRun", "Recorder", "observe_run"]
