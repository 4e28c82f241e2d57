"""A script step that is not made of content blocks is said to be one, not met with an
AttributeError: `reply("hello")` (a bare string for `reply(say("hello"))`) is refused where it is
written, and a hand-made `ModelReply` whose content holds a non-block ends the run as
`invalid_reply`, saying what the block is, as the loop says of any adapter's bad content."""

from __future__ import annotations

import pytest

from agent import Agent, ConfigError
from agent.models.base import ModelReply
from agent.models.scripted import ScriptedModel, finish, reply


def test_reply_refuses_a_bare_string_and_says_how_to_write_a_block() -> None:
    with pytest.raises(ConfigError, match=r"reply\(\) takes content blocks: say\('text'\).*not str 'hello'"):
        reply("hello")  # type: ignore[arg-type]


def test_a_non_block_in_a_scripted_model_reply_ends_the_run_as_invalid_reply() -> None:
    agent = Agent(name="odd", model=ScriptedModel([ModelReply(content=["hello"]), reply(finish("done"))]))
    result = agent.run("say hello")
    assert (result.reason, result.error_type) == ("error", "invalid_reply")
    assert "a content block is str, not a dict" in result.note
