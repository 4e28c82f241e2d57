"""Preserved thinking (Claude Fable 5.1 and later: Opus 5.5, Sonnet 5.5, Haiku 5.5): a thinking block
sent back is bound to the system prompt, tools and messages before it, and the API refuses a request
whose history changed before one (400 "The block is bound to a different conversation"), unless the
request asks it to drop such blocks (`thinking.block_binding.prefix_mismatch_behavior: "drop_block"`,
beta header `thinking-binding-controls-2026-08-01`). Endstate's history policy edits the history by
design (it clears old tool results and compacts): a run on the default model must not end `error`
the first time it does. Anthropic's pages:
https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/fix-bound-to-a-different-conversation
"""

from __future__ import annotations

import itertools
import json

from messages_api import BINDING_BETA, MessagesAPI, error, message, tool_use

from agent import Agent, Answer, Budget, HistoryPolicy, Snapshot, StopReason, tool
from agent.models.anthropic import AnthropicModel

MODEL = "claude-sonnet-5-5"  # the default model: thinks always, and binds its thinking blocks
PAGE = "lorem ipsum " * 1_700  # about 5,100 tokens
_n = itertools.count()


@tool
def read(page: int) -> str:
    """Read one page of a long document."""
    return f"page {page}: {PAGE}"


def thought() -> dict[str, str]:
    return {"type": "thinking", "thinking": f"Next page ({next(_n)}).", "signature": "set-by-the-server"}


def script(pages: int) -> list[object]:
    reads = [message(thought(), tool_use("read", {"page": i}), input_tokens=None) for i in range(pages)]
    done = tool_use("finish", {"kind": "done", "note": "read it all"})
    return [*reads, message(thought(), done, input_tokens=None)]


def reader(api: MessagesAPI, history: HistoryPolicy, **options: object) -> Agent:
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url, **options)  # type: ignore[arg-type]
    budget = Budget(max_turns=40, max_seconds=None)
    return Agent("reader", model, tools=[read], history=history, budget=budget)


# Clearing starts at 1% of the 1M window (10k tokens): after two pages, and again and again.
CLEARING = HistoryPolicy(clear_at=0.01, compact_at=0.9, keep_last=1)


def test_the_test_api_refuses_a_thinking_block_sent_back_after_its_history_changed() -> None:
    with MessagesAPI(*script(12)) as api:  # type: ignore[arg-type]
        api.bind_thinking = True
        result = reader(api, HistoryPolicy.off()).run("Read the whole document, one page a turn.")
        assert result.reason is StopReason.SUCCESS, result.note  # append-only: every block is still bound
        assert api.dropped_thinking == 0


def test_a_run_whose_history_policy_clears_old_results_goes_on_dropping_the_thinking_it_unbound() -> None:
    with MessagesAPI(*script(12)) as api:  # type: ignore[arg-type]
        api.bind_thinking = True
        result = reader(api, CLEARING).run("Read the whole document, one page a turn.")
        assert result.reason is StopReason.SUCCESS, result.note
        assert result.turns == 13
        assert api.dropped_thinking > 0  # the API dropped the blocks the clearing unbound...
        kept = [r.body for r in api.requests if r.body.get("thinking")]
        assert kept and all(
            b["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"} for b in kept
        )
        assert all(
            BINDING_BETA in r.headers["anthropic-beta"] for r in api.requests if r.body.get("thinking")
        )
        # ...and the request refused for it was sent again at once, once per run: every later request
        # asks for it from the start (the journal's last reply carries it, so a resumed run does too).
        assert len(api.requests) == 13 + 1
        first = next(i for i, r in enumerate(api.requests) if r.body.get("thinking"))
        assert all(r.body.get("thinking") for r in api.requests[first:])


def test_the_users_betas_and_thinking_settings_are_kept_when_blocks_are_dropped() -> None:
    with MessagesAPI(*script(12)) as api:  # type: ignore[arg-type]
        api.bind_thinking = True
        thinking = {"type": "between_tools", "display": "summarized"}
        agent = reader(api, CLEARING, thinking=thinking, betas=["context-management-2025-06-27"])
        result = agent.run("Read the whole document, one page a turn.")
        assert result.reason is StopReason.SUCCESS, result.note
        last = api.requests[-1]
        assert last.body["thinking"] == {
            **thinking,
            "block_binding": {"prefix_mismatch_behavior": "drop_block"},
        }
        assert last.headers["anthropic-beta"].split(",") == ["context-management-2025-06-27", BINDING_BETA]


def test_another_400_is_not_sent_again() -> None:
    with MessagesAPI(error(400, "messages.1.content.0: Invalid `signature` in `thinking` block")) as api:
        result = reader(api, CLEARING).run("Read.")
        assert result.reason is StopReason.ERROR
        assert len(api.requests) == 1


def test_a_resumed_run_asks_to_drop_unbound_blocks_from_its_first_request() -> None:
    ask = tool_use("finish", {"kind": "need_help", "note": "Which page next?"})
    first = [*script(6)[:-1], message(thought(), ask, input_tokens=None)]
    with MessagesAPI(*first) as api:  # type: ignore[arg-type]
        api.bind_thinking = True
        paused = reader(api, CLEARING).run("Read the document, one page a turn.")
        assert paused.reason is StopReason.NEED_HELP, paused.note
        assert paused.snapshot is not None
        refused_before = len(api.requests) - paused.turns
        snap = Snapshot.from_json(json.loads(json.dumps(paused.snapshot.to_json())))
        api.enqueue(
            message(thought(), tool_use("finish", {"kind": "done", "note": "read"}), input_tokens=None)
        )
        resumed = reader(api, CLEARING).resume(snap, Answer("That was all."))
        assert resumed.reason is StopReason.SUCCESS, resumed.note
        assert refused_before == 1  # the one refusal of the run, before the suspension
        last = api.requests[-1]
        assert last.body["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
        assert len(api.requests) == paused.turns + 1 + 1  # no refusal after the resume
