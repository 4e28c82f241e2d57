"""No-progress detection against DESIGN.md's "the same tool call (name plus canonical arguments)":
one value written two ways in JSON, or one text in two Unicode forms, is the same call (probe17b)."""

from __future__ import annotations

import unicodedata

import pytest

from agent import StopReason, tool
from agent.models.scripted import call
from agent.progress import call_signature

COMPOSED = unicodedata.normalize("NFC", "café")
DECOMPOSED = unicodedata.normalize("NFD", "café")


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        ({"page": 1}, {"page": 1.0}, True),  # one JSON number: `1` and `1.0`
        ({"at": 0.0}, {"at": -0.0}, True),
        ({"n": [1.0, {"m": 2.0}]}, {"n": [1, {"m": 2}]}, True),
        ({"q": COMPOSED}, {"q": DECOMPOSED}, True),  # one text, composed or decomposed
        ({DECOMPOSED: 1}, {COMPOSED: 1}, True),
        ({"q": [DECOMPOSED]}, {"q": [COMPOSED]}, True),
        ({"n": (1.0, DECOMPOSED)}, {"n": [1, COMPOSED]}, True),  # a tuple, as Python code may pass
        # what differs stays apart
        ({"page": 1.5}, {"page": 1}, False),
        ({"page": True}, {"page": 1}, False),
        ({"page": "1"}, {"page": 1.0}, False),
        ({"q": "cafe"}, {"q": COMPOSED}, False),
        ({COMPOSED: 1, DECOMPOSED: 2}, {COMPOSED: 2, DECOMPOSED: 1}, False),  # two keys never made one
    ],
)
def test_one_value_written_two_ways_is_one_call(left, right, same):
    assert (call_signature("read", left) == call_signature("read", right)) is same


def test_nan_and_the_infinities_stay_apart_and_never_raise():
    assert call_signature("t", {"x": float("nan")}) != call_signature("t", {"x": float("inf")})
    assert call_signature("t", {"x": 1e300}) == call_signature("t", {"x": 1e300})


@tool
def read_page(url: str, page: int) -> str:
    """Read one page of a document."""
    return f"{url} page {int(page)}: nothing new"


def test_a_model_that_writes_the_same_page_as_1_and_1_0_is_stopped_after_three(make_agent):
    steps = [
        [call("read_page", url="u", page=1)],
        [call("read_page", url="u", page=1.0)],
        [call("read_page", url="u", page=1)],
    ]
    result = make_agent(*steps, tools=[read_page]).run("task")
    assert result.reason is StopReason.NO_PROGRESS
    assert result.turns == 3
    assert "read_page called 3 times" in result.note


def test_the_same_text_in_two_unicode_forms_is_stopped_after_three(make_agent):
    steps = [
        [call("read_page", url=COMPOSED, page=2)],
        [call("read_page", url=DECOMPOSED, page=2)],
        [call("read_page", url=COMPOSED, page=2)],
    ]

    @tool(name="read_page")
    def read_same(url: str, page: int) -> str:
        """Read one page of a document."""
        return f"{unicodedata.normalize('NFC', url)} page {page}: nothing new"

    result = make_agent(*steps, tools=[read_same]).run("task")
    assert result.reason is StopReason.NO_PROGRESS
    assert result.turns == 3
