"""`ModelRequest.message_count` is the number of Messages-API messages without building them: the
scripted model counts a request's messages for its made-up input tokens every turn, and building the
whole history's messages for that made a long scripted run quadratic (3,000 turns: 114 s)."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from agent.journal import Call, Entry, Note, Reply, Result, Started, Stopped, Task, Text
from agent.models.base import ModelRequest
from agent.models.scripted import ScriptedModel, call
from agent.result import StopReason

PARTS = st.one_of(
    st.builds(Text, st.sampled_from(["", "  ", "look", "\n"])),
    st.builds(Call, st.sampled_from(["c1", "c2", "c3"]), st.just("look"), st.just({"path": "a"})),
)
ENTRIES: st.SearchStrategy[Entry] = st.one_of(
    st.builds(Task, st.just("do it")),
    st.builds(Note, st.just("Use a tool or call finish.")),
    st.builds(Reply, st.lists(PARTS, max_size=3).map(tuple)),
    st.builds(Result, st.sampled_from(["c1", "c2", "c3", "c9"]), st.just("ok")),
    st.builds(Started, st.just("c1")),
    st.just(Stopped(StopReason.SUCCESS)),
)


@given(st.lists(ENTRIES, max_size=30))
def test_message_count_is_the_number_of_messages(journal: list[Entry]) -> None:
    request = ModelRequest("", journal, [], 1024)
    assert request.message_count == len(request.messages)


def test_the_scripted_model_counts_messages_without_building_them() -> None:
    journal: list[Entry] = [Task("go")]
    for i in range(3):
        journal += [Reply((Text("looking"), Call(f"c{i}", "look", {"path": "a"}))), Result(f"c{i}", "ok")]
    request = ModelRequest("", journal, [], 1024)
    model = ScriptedModel([[call("look", path="b")]] * 4)
    reply = asyncio.run(model.complete(request))
    assert reply.input_tokens == 100 + 20 * 7  # the task, then a reply and its results three times
    assert "messages" not in vars(request)  # the cached messages were never built
