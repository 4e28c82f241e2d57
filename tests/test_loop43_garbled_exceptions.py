"""An exception whose message cannot be read never escapes `run`.

A checkpointer (or any callback the loop calls) that raised an exception whose `__str__` raises
made `Agent.run` raise `RuntimeError`: the catch-all that turns a failure into the `error` stop
wrote the exception into its note, and writing it raised again. Now the run ends `error`, named
after the exception's type, with its message marked unreadable.
"""

from __future__ import annotations

from agent import Agent, StopReason, tool
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Checkpoint


class Garbled(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str")


class GarbledExit(SystemExit):
    def __str__(self) -> str:
        raise RuntimeError("str")


@tool
def look() -> str:
    """Look."""
    return "seen"


def test_a_checkpointer_raising_an_unreadable_exception_ends_the_run_as_error() -> None:
    for raised in (Garbled, GarbledExit):

        def checkpoint(new: Checkpoint, raised: type[BaseException] = raised) -> None:
            raise raised()

        model = ScriptedModel([[call("look")], [finish("done", "ok")]])
        result = Agent(name="a", model=model, tools=[look], checkpoint=checkpoint).run("t")  # type: ignore[list-item]

        assert (result.reason, result.error_type) == (StopReason.ERROR, raised.__name__)
        assert result.note.startswith(f"{raised.__name__}: (its message could not be read")


def test_a_verifier_exiting_with_an_unreadable_message_is_a_verifier_error() -> None:
    def verifier(ctx: object) -> list[str]:
        raise GarbledExit()

    model = ScriptedModel([[finish("done", "ok")]])
    result = Agent(name="a", model=model, verifiers=[verifier]).run("t")

    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "GarbledExit: (its message could not be read" in result.note
