"""The scripted model: the offline default and the test double of every loop test."""

from __future__ import annotations

import asyncio

import pytest

from agent import ConfigError, ModelError, TransientModelError
from agent.errors import ScriptExhausted
from agent.models.base import Model, ModelReply, ModelRequest, StopKind
from agent.models.scripted import ScriptedModel, call, finish, reply, say


def request(*assistant_turns: int) -> ModelRequest:
    """A request whose history holds `len(assistant_turns)` assistant messages."""
    messages = [{"role": "user", "content": "task"}]
    for _ in assistant_turns:
        messages += [{"role": "assistant", "content": [say("...")]}, {"role": "user", "content": "ok"}]
    return ModelRequest.of_messages("", messages, [], 1024)


def play(model: ScriptedModel, req: ModelRequest) -> ModelReply:
    return asyncio.run(model.complete(req))


def test_blocks():
    assert say("hi") == {"type": "text", "text": "hi"}
    assert call("search", query="x") == {"type": "tool_use", "name": "search", "input": {"query": "x"}}
    assert finish("done", "ok") == {
        "type": "tool_use",
        "name": "finish",
        "input": {"kind": "done", "note": "ok"},
    }


def test_it_is_a_model():
    model = ScriptedModel()
    assert isinstance(model, Model)
    assert (model.name, model.provider) == ("scripted", "scripted")
    assert ScriptedModel(name="claude-sonnet-4-5").name == "claude-sonnet-4-5"


def test_plays_steps_in_order_and_records_requests():
    model = ScriptedModel([[say("looking"), call("search", query="x")], [finish("done", "ok")]])
    first = play(model, request())
    second = play(model, request(1))

    assert first.text == "looking"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("toolu_001_1", "search", {"query": "x"})
    ]
    assert first.stop_reason == "tool_use"
    assert first.model == "scripted"
    assert first.response_id == "msg_001"
    assert second.tool_calls[0].id == "toolu_002_0"
    assert len(model.requests) == 2
    model.assert_used_up()


def test_a_text_only_reply_ends_the_turn():
    model = ScriptedModel([[say("done talking")]])
    assert play(model, request()).stop_reason == "end_turn"


def test_token_counts_default_to_an_estimate_or_are_given():
    model = ScriptedModel([[say("a")], reply(say("b"), input_tokens=7, output_tokens=3)])
    estimated = play(model, request())
    given = play(model, request(1))
    assert estimated.input_tokens == 100 + 20 * 1
    assert estimated.output_tokens == 30 + 10 * 1
    assert (given.input_tokens, given.output_tokens) == (7, 3)


def test_given_ids_are_kept():
    block = {"type": "tool_use", "id": "toolu_custom", "name": "x", "input": {}}
    assert play(ScriptedModel([[block]]), request()).tool_calls[0].id == "toolu_custom"


def test_assert_used_up():
    model = ScriptedModel([[say("1")], [say("2")], [say("3")]])
    play(model, request())
    with pytest.raises(AssertionError, match="2 of 3 steps were never played"):
        model.assert_used_up()
    with pytest.raises(AssertionError, match="3 of 3 steps were never played"):
        ScriptedModel([[say("1")], [say("2")], [say("3")]]).assert_used_up()


def test_a_fresh_model_finds_its_place_from_the_history():
    steps = [[say("one")], [say("two")], [say("three")]]
    model = ScriptedModel(steps)
    assert play(model, request(1, 2)).text == "three"
    model.assert_used_up()
    assert play(ScriptedModel(steps), request(1)).text == "two"


def test_exceptions_in_the_script_are_raised_and_are_not_replies():
    steps = [
        [say("one")],
        TransientModelError("529", error_type="overloaded"),
        [say("two")],
        ModelError("bad request", error_type="bad_request"),
    ]
    model = ScriptedModel(steps)
    assert play(model, request()).text == "one"
    with pytest.raises(TransientModelError, match="529"):
        play(model, request(1))
    assert play(model, request(1)).text == "two"  # the retry of turn 2
    with pytest.raises(ModelError, match="bad request"):
        play(model, request(1, 2))
    model.assert_used_up()

    resumed = ScriptedModel(steps)  # after one reply, the next step is the transient error
    with pytest.raises(TransientModelError):
        play(resumed, request(1))
    with pytest.raises(ModelError, match="bad request"):
        play(ScriptedModel(steps), request(1, 2))


def test_a_fresh_model_skips_played_exceptions_before_a_reply():
    steps = [TransientModelError("429"), [say("one")], [say("two")]]
    assert play(ScriptedModel(steps), request(1)).text == "two"


def test_a_step_may_be_a_function_of_the_request():
    def echo(req: ModelRequest) -> list[dict]:
        return [say(f"{len(req.messages)} messages so far")]

    assert play(ScriptedModel([echo]), request()).text == "1 messages so far"
    model = ScriptedModel([[say("first")], echo])
    assert play(model, request(1)).text == "3 messages so far"
    assert model.requests[0].messages[-1] == {"role": "user", "content": "ok"}


def test_then_follows_the_steps_with_the_turn_number():
    model = ScriptedModel([[say("scripted")]], then=lambda turn: [say(f"turn {turn}")])
    assert play(model, request()).text == "scripted"
    assert play(model, request(1)).text == "turn 2"
    assert play(model, request(1, 2)).text == "turn 3"


def test_running_out_raises_script_exhausted():
    model = ScriptedModel([[say("only")]], name="demo")
    play(model, request())
    with pytest.raises(ScriptExhausted, match="scripted model 'demo' has no step for turn 2") as info:
        play(model, request(1))
    assert info.value.error_type == "script_exhausted"
    assert isinstance(info.value, ModelError)


# -- the offline guard (tests/conftest.py) ---------------------------------------------


def test_a_real_anthropic_call_is_refused(no_real_model_calls):
    import os

    import anthropic

    assert os.environ["ANTHROPIC_API_KEY"] == ""
    message = {"model": "claude-haiku-4-5", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(anthropic.APIConnectionError) as sync_error:
        anthropic.Anthropic(api_key="sk-test", max_retries=0).messages.create(**message)

    async def async_call() -> None:
        async with anthropic.AsyncAnthropic(api_key="sk-test", max_retries=0) as client:
            await client.messages.create(**message)

    with pytest.raises(anthropic.APIConnectionError) as async_error:
        asyncio.run(async_call())

    assert "refused" not in str(sync_error.value)  # the SDK wraps it; the cause is ours
    assert "a test tried to call https://api.anthropic.com/v1/messages" in str(sync_error.value.__cause__)
    assert "a test tried to call" in str(async_error.value.__cause__)
    assert no_real_model_calls == ["https://api.anthropic.com/v1/messages"] * 2
    no_real_model_calls.clear()  # expected here; anywhere else the fixture fails the test


@pytest.mark.parametrize(
    ("stop_reason", "kind"),
    [
        ("end_turn", StopKind.END),
        ("stop_sequence", StopKind.END),
        ("tool_use", StopKind.TOOL_USE),
        ("max_tokens", StopKind.MAX_TOKENS),
        ("model_context_window_exceeded", StopKind.CONTEXT_FULL),
        ("pause_turn", StopKind.PAUSED),
        ("refusal", StopKind.REFUSED),
        ("a_reason_of_tomorrow", StopKind.OTHER),
    ],
)
def test_a_scripted_stop_reason_has_the_kind_the_messages_api_gives_it(stop_reason: str, kind: StopKind):
    played = play(ScriptedModel([reply(say("hi"), stop_reason=stop_reason)]), request())
    assert (played.stop_reason, played.stop) == (stop_reason, kind)


@pytest.mark.parametrize(
    ("stop_reason", "kind"),
    [
        ("max_tokens", StopKind.MAX_TOKENS),
        ("pause_turn", StopKind.PAUSED),
        ("refusal", StopKind.REFUSED),
        ("model_context_window_exceeded", StopKind.CONTEXT_FULL),
    ],
)
def test_a_model_reply_step_plays_its_own_stop_reason(stop_reason: str, kind: StopKind):
    """A step written as a `ModelReply` gives its stop reason as the reply's own field, as a test of
    an adapter would write it; it is played, and its kind is the Messages API's."""
    played = play(ScriptedModel([ModelReply([call("search", q="x")], stop_reason=stop_reason)]), request())
    assert (played.stop_reason, played.stop) == (stop_reason, kind)


@pytest.mark.parametrize("stop_reason", [3, ["max_tokens"]])
def test_a_stop_reason_that_is_no_text_is_refused_naming_it(stop_reason: object):
    model = ScriptedModel([reply(say("hi"), stop_reason=stop_reason)])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"a script step's stop_reason must be a Messages API stop reason"):
        play(model, request())


def test_a_scripted_reply_without_a_stop_reason_ends_or_uses_tools():
    model = ScriptedModel([[say("hi")], [call("search", q="x")]])
    assert play(model, request()).stop is StopKind.END
    assert play(model, request(1)).stop is StopKind.TOOL_USE


def test_a_scripted_reply_keeps_the_stop_kind_it_was_given():
    played = play(ScriptedModel([ModelReply([say("hm")], stop=StopKind.REFUSED)]), request())
    assert played.stop is StopKind.REFUSED
