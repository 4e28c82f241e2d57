"""README, "Tool results beyond text": each block is checked when made, and a block dict's
`cache_control` is refused when made: a `ToolOutput` of the Messages API's own block dicts is held to
that too, not only once the tool has returned it."""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, ContentError, Image, ToolOutput, tool
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish

BAD_DICTS = [
    ({"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}, "cache_control"),
    ({"type": "video", "url": "https://example.com/a.mp4"}, "video"),
    ({"type": "text"}, "'text' is missing"),
    ({"type": "image", "source": {"type": "file", "file_id": "file_1"}}, "file"),
]


@pytest.mark.parametrize(("block", "said"), BAD_DICTS)
def test_a_bad_block_dict_is_refused_when_the_tool_output_is_made(block: dict[str, Any], said: str) -> None:
    with pytest.raises(ContentError, match=said):
        ToolOutput("a note", block)


def test_an_item_that_is_no_block_is_refused_when_made() -> None:
    with pytest.raises(ContentError, match="block 1 is a int"):
        ToolOutput("a note", 5)


def test_good_block_dicts_are_taken_and_read_as_blocks() -> None:
    out = ToolOutput(
        "a note",
        {"type": "text", "text": "more"},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
    )
    assert out.blocks[0] == "a note"
    assert isinstance(out.blocks[2], Image) and out.blocks[2].url == "https://example.com/a.png"


def test_a_tool_that_makes_a_bad_block_dict_gets_its_bad_content_result_and_the_run_goes_on() -> None:
    @tool
    def page(url: str) -> ToolOutput:
        """The page."""
        return ToolOutput(
            f"the page at {url}", {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
        )

    model = ScriptedModel([[call("page", url="https://example.com")], [finish("done")]])
    result = Agent(name="pages", model=model, tools=[page]).run("read the page")
    assert result.reason == "success"
    results = [e for e in model.requests[1].journal if isinstance(e, Result)]
    assert results[0].is_error and "returned a content block the API would refuse" in results[0].text
    assert "cache_control" in results[0].text
