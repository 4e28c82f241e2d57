"""The history policy: a long run never overflows the context window into an error."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from media_files import pdf, png

from agent import (
    Agent,
    Budget,
    ConfigError,
    Document,
    HistoryPolicy,
    Image,
    LimitKind,
    ModelError,
    ModelSummary,
    Price,
    PriceTable,
    StopReason,
    tool,
)  # fmt: skip
from agent.content import text_of
from agent.history import CLEARED, SUMMARIZE, Compaction, account, summary_in
from agent.journal import Call, Entry, Note, Reply, Result, Shrunk, Task, Text
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import call, finish

WINDOW = 200_000
PAGE = "lorem ipsum " * 1_700  # about 20,400 characters: some 5,100 tokens a page


@tool
def read(page: int) -> str:
    """Read one page of a long document."""
    return f"page {page}: {PAGE}"


def tokens(request: ModelRequest) -> int:
    return len(json.dumps(request.messages)) // 4


class WindowedModel:
    """Reads 60 pages, one a turn, then finishes; refuses a prompt longer than its window, as the API does."""

    provider = "test"
    name = "windowed"
    context_window = WINDOW

    def __init__(self, pages: int = 60) -> None:
        self.pages = pages
        self.sizes: list[int] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        size = tokens(request)
        self.sizes.append(size)
        if size > WINDOW:
            raise ModelError(
                f"prompt is too long: {size} tokens > {WINDOW} maximum", error_type="context_window_exceeded"
            )
        turn = request.replies + 1
        blocks = [call("read", page=turn)] if turn <= self.pages else [finish("done", "read it all")]
        content = [{**b, "id": f"toolu_{turn}"} if b["type"] == "tool_use" else b for b in blocks]
        return ModelReply(content, input_tokens=size, output_tokens=20, stop_reason="tool_use")


def reader(history: HistoryPolicy) -> Agent:
    return Agent("reader", WindowedModel(), tools=[read], history=history, budget=Budget(max_turns=80))


def test_a_60_turn_run_that_would_overflow_the_window_succeeds_under_the_default_policy():
    agent = reader(HistoryPolicy())
    result = agent.run("Read the whole document.")
    assert result.reason is StopReason.SUCCESS
    assert result.turns == 61
    assert max(agent.model.sizes) < WINDOW  # the API never had to refuse a prompt
    assert sum(agent.model.sizes[:61]) > 0
    sent = agent.model  # the last request still holds the last pages whole
    assert sent.sizes[-1] < HistoryPolicy().clear_at * WINDOW + 4 * 5_200


def test_the_same_run_with_the_policy_off_stops_at_the_context_limit_not_an_error():
    agent = reader(HistoryPolicy.off())
    result = agent.run("Read the whole document.")
    assert result.reason is StopReason.LIMIT
    assert result.limit is LimitKind.CONTEXT
    assert "context window is full" in result.note
    assert result.turns < 60


def test_a_refused_prompt_is_shrunk_and_asked_again_in_the_same_turn():
    # never shrinks ahead (nor counts the results since the last reply): only when the API refuses
    policy = HistoryPolicy(clear_at=1.0, compact_at=1.0, results_in_context=False)
    agent = reader(policy)
    result = agent.run("Read the whole document.")
    assert result.reason is StopReason.SUCCESS
    assert any(size > WINDOW for size in agent.model.sizes)  # refused at least once...
    assert result.turns == 61  # ...and asked again within the same turn


def test_a_long_result_is_cut_and_the_model_is_told_how_to_get_the_rest():
    policy = HistoryPolicy(max_result_chars=1_000)
    [shown] = [
        e for e in policy.view([Task("t"), Result("c1", "x" * 5_000, ran="read")]) if isinstance(e, Result)
    ]
    assert shown.text.startswith("x" * 1_000)
    assert "cut from 5000 to 1000 characters" in shown.text and "Ask for less at a time" in shown.text


def test_clearing_keeps_the_last_results_and_says_what_was_cleared():
    journal = [Task("t")]
    for i in range(6):
        journal += [Reply((Call(f"c{i}", "read", {"page": i}),)), Result(f"c{i}", f"page {i}", ran="read")]
    journal.append(Shrunk(upto=len(journal)))
    shown = [e.text for e in HistoryPolicy(keep_last=2).view(journal) if isinstance(e, Result)]
    assert shown[-2:] == ["page 4", "page 5"]
    assert all(t == CLEARED.format(held="6 characters") for t in shown[:4])


def test_compaction_replaces_older_turns_with_a_summary_and_keeps_whole_turns():
    journal = [Task("t")]
    for i in range(6):
        journal += [
            Reply((Text(f"step {i}"), Call(f"c{i}", "read", {"page": i}))),
            Result(f"c{i}", "p", ran="read"),
        ]
    policy = HistoryPolicy(keep_last=2, summarize=lambda older: f"{len(older)} entries summarized")
    journal.append(Shrunk(upto=len(journal)))  # already cleared: the next step is compaction
    step = policy.stronger(journal)
    assert step is not None and step.summary == "9 entries summarized"  # the task and four whole turns
    view = policy.view([*journal, step])
    assert view[0] == Task("t")
    assert isinstance(view[1], Note) and "9 entries summarized" in view[1].text
    assert isinstance(view[2], Reply) and view[2].text == "step 4"  # the last two turns, whole


def test_the_default_summary_is_a_plain_account_of_the_calls():
    text = account([Task("t"), Reply((Text("looking"), Call("c1", "read", {"page": 1})))])
    assert "1 tool calls were made" in text and "read(page=1)" in text and "looking" in text


@pytest.mark.parametrize(
    "kwargs",
    [
        {"clear_at": 0.9, "compact_at": 0.5},
        {"keep_last": -1},
        {"max_result_chars": 10},
        {"max_result_chars": 1000.5},  # was taken: the first long tool result ended the run with a TypeError
        {"keep_last": 2.0},
    ],
)
def test_a_bad_policy_is_refused_with_what_to_fix(kwargs):
    from agent import ConfigError

    with pytest.raises(ConfigError, match="HistoryPolicy"):
        HistoryPolicy(**kwargs)


# -- compaction by a model -----------------------------------------------------------------------


def _turns(n: int, result: str = "p", reply_tokens: int = 0) -> list[Entry]:
    journal: list[Entry] = [Task("t")]
    for i in range(n):
        journal += [
            Reply((Text(f"step {i}"), Call(f"c{i}", "read", {"page": i})), input_tokens=reply_tokens),
            Result(f"c{i}", result, ran="read"),
        ]
    return journal


def test_past_compact_at_the_policy_compacts_at_once_when_clearing_would_not_free_enough():
    small = _turns(6, result="p", reply_tokens=180_000)  # the model's own turns fill the window
    assert isinstance(HistoryPolicy(keep_last=2).due(small, WINDOW), Shrunk)
    assert HistoryPolicy(keep_last=2).due(small, WINDOW).summary is not None  # type: ignore[union-attr]
    calls = tuple(Call(f"c{i}", "read", {"page": i}) for i in range(5))  # one turn: nothing to compact,
    one = [Task("t"), Reply(calls, input_tokens=180_000), *(Result(c.id, "p", ran="read") for c in calls)]
    assert HistoryPolicy(keep_last=2).due(one, WINDOW) == Shrunk(upto=len(one))  # so it clears what it can
    big = _turns(10, result="r" * 400_000, reply_tokens=180_000)  # clearing 8 results (capped) frees enough
    step = HistoryPolicy(keep_last=2).due(big, WINDOW)
    assert isinstance(step, Shrunk) and step.summary is None


def test_a_model_summary_policy_asks_for_the_older_turns_as_the_model_saw_them():
    policy = HistoryPolicy(keep_last=2, summarize=ModelSummary(max_tokens=1000))
    journal = [*_turns(6), Shrunk(upto=13)]
    step = policy.stronger(journal)
    assert isinstance(step, Compaction) and step.upto == 9  # the task and four whole turns
    request = step.request("be brief", [], 8000)
    assert request.journal[:-1] == tuple(policy.view(journal[:9])) and request.max_tokens == 1000
    assert dataclasses.replace(step, how=ModelSummary()).request("", [], 8000).max_tokens == 8000
    assert request.journal[-1] == Note(SUMMARIZE)
    reply = ModelReply([{"type": "text", "text": "Thinking.\n<summary>pages 0-3 read</summary>"}])
    assert step.done(reply) == Shrunk(9, "pages 0-3 read")
    empty = step.done(ModelReply([call("read", page=9) | {"id": "x"}]))  # a tool call, no summary
    assert empty.summary is not None and "it wrote no summary" in empty.summary
    assert "4 tool calls were made" in empty.summary


@pytest.mark.parametrize(
    ("text", "summary"),
    [("<summary>a</summary>", "a"), ("b", "b"), ("x <summary> c\n d", "c\n d"), ("  ", "")],
)
def test_the_summary_is_read_from_its_tags_or_the_whole_reply(text, summary):
    assert summary_in(text) == summary


class _Summarizer:
    """A second model that only writes summaries, and counts its calls."""

    provider = "test"
    name = "summarizer-1"
    context_window = WINDOW

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        return ModelReply(
            [{"type": "text", "text": "<summary>read so far</summary>"}], 1_000, 100, "end_turn"
        )


@tool
def glance(page: int) -> str:
    """Glance at one page."""
    return f"page {page}: fine"


class NotesModel(WindowedModel):
    """Like `WindowedModel`, but its own long notes fill the window, not the tool results."""

    turn = 0  # its own count: a compacted request holds fewer replies

    async def complete(self, request: ModelRequest) -> ModelReply:
        size = tokens(request)
        self.sizes.append(size)
        if size > WINDOW:
            raise ModelError(f"prompt is too long: {size} tokens", error_type="context_window_exceeded")
        self.turn += 1
        block = call("glance", page=self.turn) if self.turn <= self.pages else finish("done", "read it all")
        content = [{"type": "text", "text": "note " * 5_000}, {**block, "id": f"toolu_{self.turn}"}]
        return ModelReply(content, input_tokens=size, output_tokens=20, stop_reason="tool_use")


def test_a_given_summary_model_writes_the_summary_and_its_price_is_charged():
    summarizer = _Summarizer()
    policy = HistoryPolicy(clear_at=1.0, compact_at=1.0, summarize=ModelSummary(summarizer))
    price = Price(input_per_mtok=1.0, output_per_mtok=5.0)
    prices = PriceTable({"windowed": Price(3.0, 15.0), "summarizer-1": price})
    agent = Agent(
        "reader", NotesModel(), tools=[glance], history=policy, budget=Budget(max_turns=80), prices=prices
    )
    result = agent.run("Read the whole document.")
    assert result.reason is StopReason.SUCCESS and summarizer.calls >= 1
    assert any(size > WINDOW for size in agent.model.sizes)  # compacted when the API refused
    own = sum(3.0 * s + 15.0 * 20 for s in agent.model.sizes if s <= WINDOW) / 1e6
    assert result.cost_usd == pytest.approx(own + summarizer.calls * (1_000 + 5 * 100) / 1e6, abs=1e-6)


def test_a_cost_budget_needs_the_summary_models_price_too():
    policy = HistoryPolicy(summarize=ModelSummary(_Summarizer()))
    prices = PriceTable({"windowed": Price(3.0, 15.0)})
    with pytest.raises(ConfigError, match="summarizer-1"):
        Agent(
            "reader",
            WindowedModel(),
            tools=[read],
            history=policy,
            budget=Budget(max_cost_usd=1.0),
            prices=prices,
        )


def test_a_summary_model_needs_room_to_write():
    with pytest.raises(ConfigError, match="max_tokens"):
        ModelSummary(max_tokens=10)


# -- the pricing of images and PDFs before 2026-12-02 (`media_in_context=False`) --------------------


def _media_turns(n: int, last: tuple[Any, ...], reply_tokens: int) -> list[Entry]:
    """`n` turns of a short text result each, then one whose result is the blocks `last`."""
    journal = _turns(n, reply_tokens=reply_tokens)
    journal += [Reply((Call("cn", "look", {}),), input_tokens=reply_tokens)]
    return [*journal, Result("cn", text_of(last), blocks=last, ran="look")]


def test_runs_started_before_judge_the_context_by_the_last_reply_alone() -> None:
    """11 screenshots since the last reply (some 17,600 tokens) pass compact_at of a 20,000-token window
    with the reply's 1,000: compacted now (clearing the short older results frees too little). Judged
    as before, by the reply's 1,000 tokens alone, nothing is shrunk until the next reply counts them."""
    shots = tuple(Image.from_bytes(png()) for _ in range(11))
    journal = _media_turns(4, shots, reply_tokens=1_000)
    now = HistoryPolicy().due(journal, 20_000)
    assert isinstance(now, Shrunk) and now.summary is not None  # a compaction
    assert HistoryPolicy(media_in_context=False).due(journal, 20_000) is None


def test_runs_started_before_price_a_pdf_as_one_image() -> None:
    """Past compact_at, 4 old 30-page PDFs cleared free some 370,000 tokens (priced by their pages):
    a clear is enough. Priced as before, an image each, they free 6,400, and the older turns are
    compacted."""
    manual = Document.from_pdf(pdf(30), title="Manual")
    journal: list[Entry] = [Task("t")]
    for i in range(6):
        journal += [Reply((Call(f"c{i}", "read", {"part": i}),), input_tokens=360_000)]
        journal += [Result(f"c{i}", text_of((manual,)), blocks=(manual,))]
    assert HistoryPolicy(keep_last=2).due(journal, 400_000) == Shrunk(upto=len(journal))  # a clear
    before = HistoryPolicy(keep_last=2, media_in_context=False).due(journal, 400_000)
    assert isinstance(before, Shrunk) and before.summary is not None  # a compaction
