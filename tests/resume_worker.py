"""Resume a suspended research run in a fresh process (used by tests/test_snapshot.py).

    python tests/resume_worker.py SNAPSHOT.json ANSWER

builds the agent with `build_agent()`, the same factory the test used for the
first segment, loads the snapshot from the file, resumes it with ANSWER and
prints the result as one JSON line.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from agent import Agent, Budget, RunContext, Snapshot, tool
from agent.models.base import ModelRequest
from agent.models.scripted import ScriptedModel, call, finish, say

SOURCES = ("https://bis.example/fps", "https://ecb.example/tips", "https://fed.example/fednow")


@tool
def web_search(query: str) -> str:
    """Search the web; returns one URL per hit."""
    return "\n".join(SOURCES)


def three_sources(ctx: RunContext) -> list[str]:
    hosts = set(re.findall(r"https?://([\w.-]+)", ctx.note))
    return [] if len(hosts) >= 3 else [f"{3 - len(hosts)} independent source(s) missing"]


def report_for_the_answer(request: ModelRequest) -> list[dict[str, Any]]:
    """The last step: write the report for the region the person named."""
    answer = request.messages[-1]["content"][0]["content"]
    region = answer.removeprefix("Answer from a person: ")
    return [finish("done", f"Instant payments share in {region}: 41%. Sources: {' '.join(SOURCES)}")]


def build_agent() -> Agent:
    model = ScriptedModel(
        [
            [call("web_search", query="instant payments market share 2026")],
            [say("The question does not say which market."), finish("need_help", "Which region: EU or US?")],
            report_for_the_answer,
        ]
    )
    return Agent(
        "research",
        model,
        tools=[web_search],
        verifiers=[three_sources],
        budget=Budget(max_turns=10),
        task_type="research",
    )


def main(argv: list[str]) -> int:
    snapshot_path, answer = argv
    snapshot = Snapshot.from_json(Path(snapshot_path).read_text())
    agent = build_agent()
    result = agent.resume(snapshot, answer)
    agent.model.assert_used_up()
    print(json.dumps(result.to_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
