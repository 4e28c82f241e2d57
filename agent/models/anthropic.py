"""The Anthropic Messages API as an Endstate `Model`.

`AnthropicModel` makes one streamed Messages API call per attempt through the
official `anthropic` SDK (`messages.create(stream=True)`, its events gathered
into the final message as the SDK's `messages.stream()` gathers them, in time
linear in the reply's length: `_Events`), with the SDK's own retries off:
the loop retries transient failures itself, inside the run's budget.

Choices worth knowing:
- Streaming always: any `max_tokens` the model allows works (the SDK refuses
  large ones without streaming), the reply records its time to first token,
  and a time budget can cut a call mid-stream. A call cut off that way
  records what it had used (`agent.models.base.record_cut_call`): the input
  and cache tokens from the stream's start, and the output so far, counted
  from the text streamed (about 4 characters a token, at most the request's
  `max_tokens`: the API bills no more) when the API has not said. So does a
  call whose stream broke off, or that an `error` event ended (the loop
  retries it). A count no call could have (past 20 context windows of
  input, 20 times `max_tokens` of output, 1,000 server tool uses: `most_input_of`) is no count: a
  reply giving one is malformed (retried); the input of a call whose count is
  none is counted as 0 and its cost unknown (`COUNT_UNKNOWN`), never $0.
- Prompt caching is on by default (`cache="5m"`; `"1h"` or None): cache
  breakpoints sit on the last tool, the system prompt, the last message and
  the user message before the last reply, so each turn reads the prefix the
  turn before wrote (Anthropic's pattern for agent loops; four breakpoints,
  the API's maximum). Only a block whose type takes one carries one: never
  thinking, a `fallback` or an `mcp_tool_listing` block (the API refuses it),
  nor one of a type the SDK does not know yet (sent back as the API gave it).
- `input_tokens` counts every input token (uncached, cache reads, cache
  writes), as the GenAI semantic conventions ask; the cache parts are on the
  reply's own fields, so `PriceTable.cost_of` prices each at its rate.
- Options pass through: `thinking`, `tool_choice`, `parallel_tool_use=False`,
  server tools (`web_search()`, `web_fetch()`, `code_execution()`), request
  `metadata`, `betas` (the `anthropic-beta` header), `container` (Agent
  Skills), and any other request field in `extra_body` (effort and structured
  outputs in `output_config`, `speed`, `inference_geo`, `service_tier`,
  `stop_sequences`, a beta's `context_management`); `tool_options` adds fields
  to the definitions of the agent's tools (`allowed_callers`, `defer_loading`,
  `strict`, `input_examples`). Thinking and other
  provider blocks are kept verbatim so they can be sent back unchanged. What
  the API refuses of thinking is refused when the model is built: a
  `tool_choice` forcing a call while it thinks (with `thinking` left out too,
  on a model whose row says `thinking = "always"` or `"default"`), and, on one
  that always thinks, thinking disabled.
- A tool may not take the name of another tool of the request (the API refuses repeated names,
  and a server tool's name is fixed: `web_search`, `web_fetch`, `code_execution`): an agent's tool
  named like one of `server_tools` is a `ConfigError` when the agent is built, a request holding
  two tools of one name one before it is sent (`check_tool_names`).
- A server-side compaction (a beta: `context_management` in `extra_body`)
  gives a `compaction` block, kept whole with the summary it streams (which
  the SDK's stream drops), and sent back; a reply that paused after one
  (`stop_reason: "compaction"`) is a `pause_turn` (`extra["api_stop_reason"]`
  says which), sent back within the same turn to go on.
- A block of a type the SDK does not know is kept whole (and sent back as the
  SDK sends a reply's content back), with what it streams in deltas of a type
  the SDK drops: a string is the next piece of the field of its name, as in
  every delta the API streams; any other value replaces the field's.
- A reply a server-side fallback model finished holds what the declining model wrote before the
  last `fallback` block: its thinking, `connector_text` and tool calls there (and a server tool's
  call without its result) are left out, as the API wants the turn sent back, so a call of the
  model that declined is never run (`extra["fallback_left_out"]` names what was left out). A journal
  an older release wrote keeps them: each request leaves them out, with their calls' results, and the
  loop runs none of those calls, even approved (`Reply.declined`).
- A refusal before any output (no content) is not billed, unless its category is one Anthropic
  bills (`bio`, `frontier_llm`, `reasoning_extraction`): `extra["not_billed"]`, its cost $0. A
  reply a fallback model finished counts every attempt's tokens from the usage's `iterations` (its
  top-level counts may give the answer's alone), and an attempt that declined before any output
  is billed by the same rule, its category the `trigger` of its `fallback` block. The rule is the
  Claude API's: through Bedrock, Vertex AI or Foundry such a refusal is priced as any call.
- A thinking block with no signature (a reply cut off by `max_tokens` while
  thinking) is left out of the reply (`extra["unsigned_thinking_dropped"]`):
  the API refuses it sent back, which ended the run as an error.
- A reply cut off (`max_tokens`, `model_context_window_exceeded`) while
  writing a tool call (or a server tool's call, which then has no result)
  has that call replaced by a text note saying so
  (`extra["truncated_tool_use"]` names the tool): a call with cut-off
  arguments is never run, nor sent back.
- A stream that sends nothing but `ping` keep-alives (which the SDK drops, and which reset its
  read timeout), or events of a type a later API adds (which nothing reads), for longer than the
  client's read timeout (`timeout`, else the SDK's 600 s) is a transient `timeout`, as a silent
  stall is: without a time budget it was waited on for ever.
  From the call of a tool the API runs until the model writes again (the API sends pings while the
  tool works, for minutes maybe, and while the model reads its result) the bound is that timeout or
  the SDK's default 600 s, whichever is longer. A reply is whole at its `message_stop`: what follows
  it is read for 5 s at most (the body's end, which the API sends at once), then the stream is let
  go, so a connection kept open after it does not make a whole reply a stall to retry.
- Events out of the API's order are a `malformed_reply` (below), not gathered anyway: a second
  message in one stream, a block begun at another index than the next, a call's input streamed to
  a text block, events before `message_start`.
- A client the adapter builds follows no redirect (the SDK would, taking the conversation wherever
  one points; the API sends none): a 3xx is a `ModelError` (`redirect`) naming where it pointed.
  An error quotes what the API (or a proxy) said cut to 500 characters, with what a terminal would
  not show as itself escaped (`agent.text.visible`), and the reply's `request-id` (what Anthropic's
  support asks for), a 200 reply's that could not be read or whose stream broke off too.
- One SDK client per event loop, closed when the loop shuts down (the sync
  `Agent.run` gives each run its own loop): connections are reused across
  the calls of a run and across runs in one loop, and never carried into
  another loop, where they would be re-sent or leaked. An injected client
  is used as given: inject one only for use in a single event loop.
- A 200 reply whose body cannot be read (not a stream, bad JSON, a stream
  that stops early or with no `message_delta`, a call whose streamed input
  stops before its JSON ends: the SDK would keep what it could parse, and the
  call run with the arguments it had so far; a call whose id the API would
  refuse sent back: one an earlier call of the conversation has, or of other
  characters than its pattern) is a transient `malformed_reply`: retried, then
  `error`. So is a stream that never ends, whatever it repeats, cut once it
  has streamed more output than `max_tokens` can hold (`_MOST_CHARS_PER_TOKEN`)
  or carried more besides (blocks, signatures, citations, a compaction's
  summary, deltas of a type the SDK does not know) than a request can send
  back (`_MOST_CARRIED`): the SDK would hold all of it until the time budget.
  So is one event that never ends (its `data:` lines, or one `data:` line,
  going on), cut once it holds more than any event of a reply can
  (`_MOST_EVENT_BYTES`, 64 MiB) or has cost the SDK's decoder more copying
  than eight such events (`_MOST_EVENT_COPIES`: it copies all it holds of an
  event for each line), when the adapter builds the client (`_bound_events`):
  the SDK gathered it until the read timeout, which bytes trickled in reset.
  An injected client reads as its HTTP client was built, without this.
- What a later request needs is kept: a text's `citations`, a call's `caller`
  and `toolset_name` (sent back as the API gave them), and the code execution
  `container` of the last reply (`extra["provider_data"]`, kept by the
  journal), whose id every later request names: the API refuses the results
  of calls made by code it runs without it, and each turn would otherwise get
  a new container. A container lasts 30 days; its `expires_at` is a shorter,
  rolling time after which the API checkpoints it and a later request restores
  it, so it is not checked. A request the API refuses because its container
  has expired is sent again at once without it (the API starts a new one) and
  the model is told its files are gone; when code in the expired container
  waits for tool results, they can no longer reach it, and the call fails
  (`error_type` `container_expired`).
- A reply's `request_id` is the id of the HTTP request behind it (`request-id`; Amazon Bedrock's
  `x-amzn-requestid`: `request_id_of`), bounded and escaped, for the chat span: what support asks for.
  The parts of its usage naming a model the request did not name for their kind (a fallback's: not the model
  asked nor a model of its `fallbacks` list; an advisor's answer: nor its advisor tool's) are marked
  `NAMED_UNASKED` (`with_unasked_marked`), so that they are priced by the model asked, never at a cheaper
  model a server named; when the request asked for no fallback, an attempt said to have declined before any
  output is billed all the same.
- `extra["rate_limit"]` holds the reply's rate-limit headers (`anthropic-ratelimit-*`,
  fast mode's `anthropic-fast-*`, the priority tier's `anthropic-priority-*`),
  `extra["stop_details"]` the API's details of a refusal (kept in the journal too, and said in the
  run's note: its category and explanation), `extra["inference_geo"]`
  where the call ran (the usage's `inference_geo`; "us" costs 1.1x), `extra["speed"]` its speed
  (`"fast"`: fast mode, priced from the model table row's `fast` prices), `extra["service_tier"]`
  the tier that served it (`"priority"`: priced from the row's `priority` prices, else unknown;
  `"batch"`: half price), `extra[THINKING_TOKENS]` the output tokens the usage says went to thinking
  (`output_tokens_details.thinking_tokens`: a part of `output_tokens`, for the chat span).
- A stream that broke off, or ended in an `error` event worth a retry, after 200 headers saying
  `x-should-retry: false` is a `ModelError`, not sent again (as the SDK heeds the header).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import math
import re
import ssl
import threading
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

import anthropic
import httpx2
import pydantic
from anthropic import types

from agent._extras import require_extra
from agent._valid import is_count, is_number, is_whole
from agent.errors import ConfigError, ModelError, TransientModelError
from agent.history import CONTEXT_FULL
from agent.journal import CONTEXT_TOKENS, Entry, Reply
from agent.models._messages import CALL_FIELDS, TEXT_FIELDS, with_known_references
from agent.models.base import (
    BILLED_APART,
    BILLED_BY_MODEL,
    COUNT_UNKNOWN,
    NAMED_UNASKED,
    NOT_BILLED,
    PRICED_AT_LEAST,
    PROVIDER_DATA,
    THINKING_TOKENS,
    Message,
    ModelReply,
    ModelRequest,
    record_cut_call,
    shown_id,
)
from agent.models.catalog import ModelInfo, ModelTable, Thinking, default_model, partner_id
from agent.models.claude_limits import (
    CLAUDE_API,
    PAGES_REFUSED,
    PAGES_REFUSED_HINT,
    MediaLimits,
    limits_for,
    within_limits,
)
from agent.stops import MESSAGES_API_STOPS
from agent.text import visible

_sdk_stream: Any  # the SDK's private module of its stream helper: `accumulate_event` (see `_events_of`)
try:
    from anthropic.lib.streaming import _messages as _sdk_stream
except ImportError:  # a later SDK may move it: its own stream helper reads the stream then
    _sdk_stream = None

PROVIDER = "anthropic"
CacheTTL = Literal["5m", "1h"]

# Statuses worth retrying, and the error_type each gets; other 5xx are `server_error`. A 504 is the
# API's `timeout_error`, as the same error inside a stream is (`_STREAM_ERRORS`).
_TRANSIENT: dict[int, str] = {
    408: "timeout",
    409: "conflict",
    429: "rate_limit",
    504: "timeout",
    529: "overloaded",
}

# Statuses that retrying will not fix; other 4xx are `api_error`.
_PERMANENT: dict[int, str] = {
    400: "bad_request",
    401: "authentication",
    402: "billing",
    403: "permission",
    404: "not_found",
    413: "request_too_large",
    422: "unprocessable",
}

# How a 400 says the prompt does not fit the context window (older models also count max_tokens;
# Amazon Bedrock says it in words of its own: "Input is too long for requested model.").
_WINDOW_FULL = ("prompt is too long", "exceed context limit", "input is too long for requested model")

# Causes (the error's `details.error_code`) that come with a status worth a retry, 429, but that no
# retry within a run lifts: a spend limit stays reached until someone raises it or the period ends.
_SPEND_LIMITS: dict[str, str] = {
    "enforced_spend_limit_reached": "the organization has crossed the monthly spend limit of its API tier",
    "contract_spend_limit_reached": "the organization has reached the spend limit of its contract",
}
_SPEND_FIX = (
    ": a retry will not lift this spend limit: raise it in the Claude Console (Settings, Limits) "
    "or wait for the next billing period"
)

# What to do about a refusal a retry will not fix.
_KEY = "the API key (AnthropicModel(api_key=...), else ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN)"
_FIXES: dict[int, str] = {
    401: f"{_KEY} was refused: check that it is set, whole and not revoked",
    402: "the organization's credit or billing stops the call: check Billing in the Claude Console",
    403: f"{_KEY} has no permission for this model or feature: check the key's workspace and the model id",
    404: "check the model id (a retired model is not found) and the base URL",
    413: "the request is over the API's size limit: send smaller tool results, images or documents",
}
# A refusal whose cause (`details.error_code`) says more than its status (SDK 2.17's new error types).
_CODE_FIXES: dict[str, str] = {
    "organization_url_fetch_disabled": (
        "Anthropic has turned off URL image and document sources, the web_fetch tool and mcp_servers "
        "for this organization: send images and documents as base64 (Image.from_bytes, "
        "Document.from_pdf: Endstate sends no Files API ids), and take "
        "web_fetch and mcp_servers out of the agent's server tools and extra_body"
    ),
}

# An `event: error` inside a 200 stream names its kind in the body, not the status: the status each
# kind stands for when a retry will not fix it, and the error_type of the kinds worth a retry. The
# SDK's Amazon Bedrock client gives an exception of Bedrock's stream such an event, of its code
# (`validationException`: "Input is too long for requested model."; `throttlingException`).
_STATUS_OF_ERROR: dict[str, int] = {
    "validationException": 400,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
}
_STREAM_ERRORS: dict[str, str] = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "api_error": "server_error",
    "timeout_error": "timeout",
    "throttlingException": "rate_limit",
    "modelTimeoutException": "timeout",
}

# What the SDK raises on a reply it cannot read: bad JSON, missing fields, events out of order.
_UNREADABLE = (
    ValueError,
    pydantic.ValidationError,
    LookupError,  # KeyError, and IndexError: a delta for a block that never started
    TypeError,
    AttributeError,
    AssertionError,
    RuntimeError,
)

# The delta types the SDK merges into its blocks itself; `_StreamWatch` merges any other.
_SDK_DELTAS = frozenset(
    {"text_delta", "input_json_delta", "citations_delta", "thinking_delta", "signature_delta"}
)
# The blocks whose streamed input the SDK gathers itself.
_GATHERED = (types.ToolUseBlock, types.ServerToolUseBlock)
# The block types that take a cache breakpoint: those whose request type in the SDK (`*BlockParam`,
# beta ones too) has a `cache_control` field. The API refuses one on any other (thinking, a `fallback`,
# an `mcp_tool_listing`, which a paused reply sent back may end with), and a block of a type the SDK
# does not know yet goes back as the API gave it: the breakpoint goes on an earlier block.
_BREAKPOINT_TYPES = frozenset(
    {
        "text",
        "image",
        "document",
        "search_result",
        "tool_use",
        "tool_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "advisor_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
        "compaction",
        "tool_addition",
        "tool_removal",
    }
)
# The events of a message (a `ping` and an event type of a later API are none): each in the API's order.
_MESSAGE_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)
# The block types the SDK knows, and those each delta it merges itself is for: such a delta for a block
# of another of these types is a stream out of order (the SDK dropped it, or, a call's input, `_gather`
# put it on the block). A block of a type the SDK does not know keeps what it streams (`_merge`).
_SDK_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use", "server_tool_use"})
_DELTA_FOR: dict[str, frozenset[str]] = {
    "text_delta": frozenset({"text"}),
    "citations_delta": frozenset({"text"}),
    "thinking_delta": frozenset({"thinking"}),
    "signature_delta": frozenset({"thinking"}),
    "input_json_delta": frozenset({"tool_use", "server_tool_use"}),
}
# The most seconds a stream is read on after its `message_stop`, for the end of its body (what the
# API sends at once): a reply is whole at `message_stop`, and a connection left open is let go.
_AFTER_STOP = 5.0
# Stop reasons that cut the reply off where it was: a tool call it ends with may be incomplete.
_CUT_STOPS = ("max_tokens", "model_context_window_exceeded")
# ...and those after which a call's streamed input may have stopped short (a refusal ends the run).
_SHORT_STOPS = (*_CUT_STOPS, "refusal")
_CHARS_PER_TOKEN = 4  # to estimate the output of a call cut off before the API counted it
# The most characters one output token streams, far past any real one: English averages about 4, and
# a tokenizer's longest entries (runs of spaces or punctuation) are a few dozen; a character a call's
# input JSON may escape (`\uXXXX`: 6) is one a token holds few of. A stream of more characters than
# this many for each token its call can write (`max_tokens` in each of `_MOST_SAMPLINGS` samplings,
# a bound itself 20 times a call without server tools) is no reply the API could send (a broken proxy,
# an endpoint streaming deltas for ever): it is cut there, before the SDK holds more of it in memory.
_MOST_CHARS_PER_TOKEN = 64
# Each delta of the output counts this many characters besides its own toward that bound: the piece
# it is held as costs memory even when empty (a pointer, a string's header), so a stream of empty
# deltas is cut too. A real reply streams a token or more a delta: far below the bound still.
_DELTA_CHARS = 16
# What a stream carries besides its output (each block begun and stopped, the deltas of a signature, a
# citation, a compaction's summary, a delta of a type the SDK does not know, its message_delta) is
# kept too, by the SDK or `_merge`, or, repeated, keeps the stream going. Each such event counts the
# characters of its JSON (what the SDK and `_merge` keep is its strings; the bytes as sent are the
# SDK's to read), and `_EVENT_CHARS` more for the object it is kept as (an empty block or citation
# costs 300 to 1,200 bytes, measured), so that a stream of empty ones is cut too. `max_tokens` does
# not bound any of it (a fetched page, a search's results, a compaction's summary are no output); a
# request does: every block of a reply goes back in the next one, which the API refuses past 32 MB.
# Past twice that (room for the events' own fields, and for 131,072 events' `_EVENT_CHARS`) the stream
# is no reply the API could send: it is cut there, having held 170 MB at the most (measured: a stream
# of empty citations; empty blocks 70 MB).
_EVENT_CHARS = 256
_MOST_CARRIED = 2 * CLAUDE_API.request_bytes
# Those bounds count events; the SDK's decoder gathers an event's bytes before it reaches them, so one
# event that never ends (its `data:` lines with no blank line after them, or one `data:` line with no
# end) it gathered until the read timeout (which bytes trickled in reset), its memory and CPU growing.
# No event of a reply holds more than a request can send back (what it carries goes back in the next
# request, which the API refuses past 32 MB): past twice that (room for its own fields and escapes) one
# event is cut. The decoder copies all it holds of an event for each line it adds: an event as the API
# sends it (one `data:` line) costs it about twice its bytes, a run of short lines their square. An
# event is cut too once its copying passes eight times `_MOST_EVENT_BYTES` (a fraction of a second):
# after 93 KB of lines of 8 bytes, 33 MB of lines of 1 MB. Lines reach the decoder whole
# (`_event_bytes`): the pieces the network sends of a line cost no copy each.
_MOST_EVENT_BYTES = 2 * CLAUDE_API.request_bytes
_MOST_EVENT_COPIES = 8 * _MOST_EVENT_BYTES
# What ends an event to the SDK's decoder (`SSEDecoder._aiter_chunks`): what it holds ending so.
_EVENT_ENDS = (b"\r\r", b"\n\n", b"\r\n\r\n")

# One call reads at most this many context windows, and writes at most this many times its max_tokens:
# the API's server-side loop (server tools) samples up to 10 times before it pauses the turn
# (`pause_turn`), each time within the window; a server-side fallback adds an attempt. A count past
# that is no count (a gateway's or the API's bug): its call's cost is unknown, never a false number.
_MOST_SAMPLINGS = 20
_LARGEST_WINDOW = 2_000_000  # taken for a model whose context window the model table does not know
_MOST_TOOL_USES = 1_000  # server tool uses (web searches, fetches) in one call: 20 samplings of 50


def most_input_of(context_window: int | None) -> int:
    """The most input tokens (uncached, cache reads and writes) one call of a model of
    `context_window` tokens can read (`_MOST_SAMPLINGS` windows)."""
    return _MOST_SAMPLINGS * (context_window or _LARGEST_WINDOW)


# -- server tools -------------------------------------------------------------


def web_search(max_uses: int | None = None, **options: Any) -> dict[str, Any]:
    """The API's web search tool, run by Anthropic; uses are counted on the reply."""
    return _server_tool("web_search_20260318", "web_search", max_uses, options)


def web_fetch(max_uses: int | None = None, **options: Any) -> dict[str, Any]:
    """The API's web fetch tool, run by Anthropic; uses are counted on the reply."""
    return _server_tool("web_fetch_20260318", "web_fetch", max_uses, options)


def code_execution(**options: Any) -> dict[str, Any]:
    """The API's code execution tool (a sandbox run by Anthropic)."""
    return _server_tool("code_execution_20260521", "code_execution", None, options)


def _server_tool(kind: str, name: str, max_uses: int | None, options: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": kind, "name": name, **options}
    if max_uses is not None:
        spec["max_uses"] = max_uses
    return spec


# -- the model ----------------------------------------------------------------


class AnthropicModel:
    """A Claude model behind the Messages API.

    `model` defaults to `ENDSTATE_MODEL`, else the current default model.
    Pass an `anthropic.AsyncAnthropic` as `client` (its retries are turned off
    in a copy; it reads replies as its HTTP client was built, so one event that
    never ends is bounded by its read timeout alone), or `api_key`, `base_url`
    and `timeout` (seconds) to build one per event loop (`_new_client`); unset,
    the SDK reads `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`. The other
    options are sent with every request.
    `container` is the code execution container to begin in: its id, or
    `{"id": ..., "skills": [...]}` (Agent Skills to load, e.g. `{"type":
    "anthropic", "skill_id": "xlsx", "version": "latest"}`; either key may be
    left out). Once a reply names a container, later requests name that one,
    with the skills; once the API says the one given has expired, none is named
    until a reply names a new one. `extra_body` holds more request fields, sent as given:
    `output_config` (`effort`, a structured output `format`), `speed`,
    `inference_geo`, `service_tier`, `stop_sequences`, a beta's fields such as
    `context_management` (with its `betas`). `tool_options` adds fields to the
    definitions of the agent's tools, by tool name: `allowed_callers` (calls
    from code the code execution tool runs: programmatic tool calling),
    `defer_loading` (found by a tool search tool), `strict`, `input_examples`;
    a `type` makes the tool one the API defines, run by the agent's tool of
    that name (`{"memory": {"type": "memory_20250818"}}`: the memory tool).
    `media_limits` is what one request may carry of images and PDFs
    (`agent.models.claude_limits`); by default the Claude API's, or Amazon
    Bedrock's and Vertex AI's for their clients or base URLs (5 MB an image,
    20 MB a request), with the PDF pages of the model's context window.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        cache: CacheTTL | None = "5m",
        thinking: Mapping[str, Any] | None = None,
        tool_choice: Mapping[str, Any] | None = None,
        parallel_tool_use: bool = True,
        server_tools: Sequence[Mapping[str, Any]] = (),
        metadata: Mapping[str, Any] | None = None,
        betas: Sequence[str] = (),
        container: str | Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        tool_options: Mapping[str, Mapping[str, Any]] | None = None,
        media_limits: MediaLimits | None = None,
    ) -> None:
        model = _model_id(default_model() if model is None else model, from_env=model is None)
        _check_timeout(timeout)
        if client is not None and (api_key is not None or base_url is not None or timeout is not None):
            raise ConfigError("AnthropicModel: pass either client= or api_key/base_url/timeout, not both")
        if cache not in ("5m", "1h", None):
            raise ConfigError(f"AnthropicModel: cache must be '5m', '1h' or None, got {cache!r}")
        self._model = model
        info = ModelTable.load().get(model)
        self._max_output = info.max_output if info is not None else None
        self._context_window = info.context_window if info is not None else None
        self._retired = _retired_note(model, info)
        self._cache: CacheTTL | None = cache
        by_row = info.thinking if info is not None else None
        self._options = _options(thinking, tool_choice, parallel_tool_use, metadata, model, by_row)
        self._server_tools = [dict(spec) for spec in server_tools]
        check_tool_names(self._server_tools, "server_tools=", "leave one of them out")
        self._container = _container_option(container, self._server_tools)
        self._extra_body = _extra_body(extra_body)
        _check_sampling(self._extra_body, model, by_row)
        self._tool_options = _tool_options(tool_options)
        self._models_named = models_named(model, self._server_tools, self._extra_body)
        self._fallbacks = bool((self._extra_body or {}).get("fallbacks"))  # asked for: "default" or a list
        _check_json(
            {"server_tools": self._server_tools, "tool_options": self._tool_options}
            | self._options
            | (self._extra_body or {})
        )
        self._headers = {"anthropic-beta": ",".join(betas)} if betas else {}
        if client is None:
            self._clients: _LoopClients | None = _LoopClients(lambda: _new_client(api_key, base_url, timeout))
            self._injected: anthropic.AsyncAnthropic | None = None
        else:
            _check_extra(client)
            self._clients, self._injected = None, _without_retries(client)
        platform = media_limits or limits_for(self.client)
        self._media_limits = platform.for_window(self._context_window)
        self._priced_as = priced_as(model, self.client)
        self._refusals_as_claude_api = not bills_by_own_rules(self.client)
        self._provider = provider_of(self.client)

    @property
    def name(self) -> str:
        return self._model

    @property
    def provider(self) -> str:
        """`gen_ai.provider.name`: the platform its client sends to (`provider_of`)."""
        return self._provider

    @property
    def context_window(self) -> int | None:
        """The model's context window in tokens, from the model table (None when unknown)."""
        return self._context_window

    @property
    def retired(self) -> str:
        """What the model table says of this model when the Claude API has retired it (every call of it
        fails: its date, and what to move to), else ""; "" for a Bedrock or Vertex AI id too."""
        return self._retired

    @property
    def max_output(self) -> int | None:
        """The most output tokens one call can ask for (`max_tokens`), from the model table (None
        when unknown)."""
        return self._max_output

    @property
    def server_tool_names(self) -> frozenset[str]:
        """The names of the tools it adds to every request (`server_tools`): the API refuses a request
        whose tool names repeat, so no tool of an agent may take one (`check_tool_names`)."""
        return frozenset(str(spec["name"]) for spec in self._server_tools if "name" in spec)

    @property
    def priced_as(self) -> str:
        """The id its calls are priced by: its name, or for a Vertex AI client in the `global` region
        the model's path on the global endpoint (priced as the Claude API; a regional one is not)."""
        return self._priced_as

    @property
    def speed(self) -> str | None:
        """The speed its requests ask for (`extra_body`'s `speed`: "fast" is fast mode, priced apart)."""
        return self._extra_body.get("speed") if self._extra_body else None

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client calls go through in the running loop (or the next one), retries off."""
        if self._injected is not None:
            return self._injected
        assert self._clients is not None
        return self._clients.peek()

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One streamed Messages API call; SDK failures become `ModelError`/`TransientModelError`.

        A request refused because the container it names has expired is sent again at once in a new
        container (the API's advice), with a note telling the model its files are gone; unless code
        in the old container waits for tool results, which then cannot reach it: a `ModelError`.
        A request refused because a thinking block in it no longer follows what it was written after
        (preserved thinking: the history policy changed the history) is sent again at once asking the
        API to drop such blocks, and so is every later request of the run (`with_drop_block`)."""
        self._check_max_tokens(request.max_tokens)
        client = self._injected or await self._loop_client()
        params = self.params(request)
        try:
            return await self._complete(client, params, request)
        except ModelError as exc:
            if exc.error_type == "not_found" and self._retired:  # the model table says why
                raise ModelError(f"{exc}; {self._retired}", error_type="not_found") from exc
            if not _bound_elsewhere(exc) or dropping(params) or _thinking_off(params):
                raise
        return await self._complete(client, with_drop_block(params), request)

    async def _complete(
        self, client: anthropic.AsyncAnthropic, params: dict[str, Any], request: ModelRequest
    ) -> ModelReply:
        named = named_container(params)
        try:
            return await self._stream(client, params, container_of(request.journal))
        except ModelError as exc:
            if named is None or not _container_gone(exc):
                raise
            self._container.expired(named)
            if _code_waits(request.messages):
                raise _expired_while_waiting(named, exc) from exc
            fresh = in_new_container(params, named)
        reply = await self._stream(client, fresh, None)
        return _replace_reply(reply, extra={**reply.extra, "container_expired": named})

    async def _stream(
        self, client: anthropic.AsyncAnthropic, params: dict[str, Any], container: dict[str, Any] | None
    ) -> ModelReply:
        """One streamed call with `params`; the reply carries on `container`, the one they name."""
        stream = _StreamWatch(
            time.monotonic(),
            params.get("max_tokens"),
            _read_timeout(client),
            most_input_of(self._context_window),
            self._cache,
        )
        try:
            options = {"extra_headers": _headers_for(self._headers, params), "extra_body": self._extra_body}
            async with _events_of(client, {**params, **options}) as events:
                stream.headers = events.response.headers
                message = await stream.follow(events)
            streamed, unfinished = stream.fields(), stream.unfinished()
            reply = to_reply(
                message,
                stream.first_token,
                events.response.headers,
                streamed,
                stream.late,
                unfinished,
                self._provider,
            )
            _check_new_calls(reply.content, params["messages"])
            reply = with_unasked_marked(reply, self._models_named, self._fallbacks)
            reply = with_asked_ttl(reply, message.usage, self._cache)
            reply = reply if self._refusals_as_claude_api else billed_as_any_call(reply)
            return with_binding(with_container(reply, container), params)
        except asyncio.CancelledError:
            stream.record_cut()
            raise
        except anthropic.AnthropicError as exc:
            stream.record_cut()  # an `error` event ended a stream that began: as a break, below
            if isinstance(exc.__cause__, EndlessEventError):  # as the SDK (2.17 on) wraps it
                raise self._said_by(_malformed(exc.__cause__, stream.headers), stream.headers) from exc
            if isinstance(exc, anthropic.APIConnectionError) and stream.headers is not None:
                broke = _broke_off(exc.__cause__ or exc, stream.headers)  # SDK >= 2.17 wraps it
                raise self._said_by(broke, stream.headers) from exc
            answered = exc.response.headers if isinstance(exc, anthropic.APIStatusError) else stream.headers
            raise self._said_by(to_model_error(exc), answered) from exc
        except httpx2.HTTPError as exc:  # the connection failed or stalled after the stream began
            stream.record_cut()  # the API took the input and began the reply: charged
            raise self._said_by(_broke_off(exc, stream.headers), stream.headers) from exc
        except _UNREADABLE as exc:
            stream.record_cut()  # the API took the input and began the reply: charged
            raise self._said_by(_malformed(exc, stream.headers), stream.headers) from exc
        except Exception as exc:  # client middleware's own error, maybe raised from one the SDK retries
            if (cause := _sdk_cause(exc)) is None:
                raise
            raise to_model_error(cause) from exc

    def _said_by(self, error: ModelError, headers: Mapping[str, str] | None) -> ModelError:
        """`error`, with the id of the request that failed (`request_id_of` its reply's `headers`, none
        when no reply came) for its chat span."""
        error.request_id = request_id_of(headers, self._provider)
        return error

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for `request` (cache breakpoints included)."""
        tools = self._with_tool_options(request.tools) + [dict(spec) for spec in self._server_tools]
        check_tool_names(
            tools,
            "the request's tools (the agent's, then server_tools=)",
            "rename the agent's tool (@tool(name=...)), or leave the server tool out of server_tools=",
        )
        messages = with_known_references(
            without_declined(outgoing_messages(request.messages)), (str(t.get("name")) for t in tools)
        )
        messages = within_limits(messages, request.journal, self._media_limits)
        params: dict[str, Any] = {"model": self._model, "max_tokens": request.max_tokens}
        if self._cache is None:
            params["messages"] = messages
            if request.system:
                params["system"] = request.system
        else:
            marker = cache_control(self._cache)
            params["messages"] = with_message_breakpoints(messages, marker)
            if request.system:
                params["system"] = [{"type": "text", "text": request.system, "cache_control": marker}]
            if tools:
                tools[-1] = {**tools[-1], "cache_control": marker}
        if tools:
            params["tools"] = tools
        run_container = container_of(request.journal)  # the code execution container the run works in
        if (container := self._container.named(run_container["id"] if run_container else None)) is not None:
            params["container"] = container
        params |= self._options
        return with_drop_block(params) if drops_blocks(request.journal) else params

    def _with_tool_options(self, specs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The request's tool definitions with their `tool_options` (a request of other tools, such as
        an evaluator's through the same model, has none of them)."""
        if not self._tool_options:
            return [dict(spec) for spec in specs]
        return [_with_options(spec, self._tool_options.get(str(spec.get("name")), {})) for spec in specs]

    def _check_max_tokens(self, max_tokens: int) -> None:
        """Refuse, before any paid call, a `max_tokens` above the model table's maximum output."""
        if self._max_output is not None and max_tokens > self._max_output:
            raise ModelError(
                f"max_tokens {max_tokens:,} is above {self._model}'s maximum output of {self._max_output:,} "
                "tokens (model table): lower the agent's max_tokens",
                error_type="bad_request",
            )

    async def aclose(self) -> None:
        """Close the running loop's HTTP client if this model built it; an injected one is its owner's."""
        if self._clients is not None:
            await self._clients.close_current()

    async def __aenter__(self) -> AnthropicModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model!r})"

    async def _loop_client(self) -> anthropic.AsyncAnthropic:
        assert self._clients is not None
        return await self._clients.get()


def _model_id(model: object, from_env: bool) -> str:
    """`model` when it is a model id; `ConfigError` naming where it came from when it is not."""
    where = f"ENDSTATE_MODEL is {model!r:.60}" if from_env else f"got {model!r:.60}"
    if isinstance(model, str) and model.strip() and model != model.strip():
        raise ConfigError(f"AnthropicModel: the model id has blanks around it ({where}): remove them")
    if isinstance(model, str) and model.strip():
        return model
    raise ConfigError(f"AnthropicModel needs a model id, e.g. 'claude-sonnet-5-5' ({where})")


def _check_timeout(timeout: object) -> None:
    """`ConfigError` for a `timeout` that is no number of seconds above 0 (None: the SDK's own; an
    `httpx.Timeout` is the SDK's to check)."""
    if timeout is None or isinstance(timeout, httpx2.Timeout) or (is_number(timeout) and timeout > 0):
        return
    raise ConfigError(f"AnthropicModel: timeout must be a number of seconds above 0, got {timeout!r:.60}")


def _check_json(options: Mapping[str, Any]) -> None:
    """`ConfigError` naming a request field of the options that no JSON request can carry (NaN or an
    infinity): every call would fail before it is sent."""
    for field, value in options.items():
        if not _carried(value):
            raise ConfigError(
                f"AnthropicModel: {field} holds a number no JSON request can carry (NaN or infinite): "
                f"{value!r:.80}"
            )


def check_tool_names(tools: Sequence[Mapping[str, Any]], where: str, fix: str) -> None:
    """`ConfigError` for `tools` (`where`) of which two take one name, saying what to do (`fix`). The
    API refuses such a request with a 400 ("tools: Tool names must be unique."), and a server tool's
    name is fixed by its type (the SDK's `WebSearchTool*Param`: `name: Literal["web_search"]`; so are
    web_fetch, code_execution, the tool search tools, and the client tools the API defines: bash,
    str_replace_based_edit_tool, memory), so an agent's tool named `web_search` beside `web_search()`
    failed the run at its first call (as users of other frameworks report of that very pair:
    https://github.com/danny-avila/LibreChat/issues/13162).
    A name is refused only when it repeats: Anthropic's tool reference lists these tools as ones that
    "appear in your request's tools array alongside any user-defined tools"
    (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-reference), and neither it nor
    the API's errors say that a name on its own is reserved. A tool with no name (an `mcp_toolset`)
    is the API's to check: the names of its tools come from its MCP server."""
    seen: dict[str, Mapping[str, Any]] = {}
    for spec in tools:
        name = spec.get("name")
        if not isinstance(name, str):
            continue
        if name in seen:
            raise ConfigError(
                f"AnthropicModel: {where} hold two tools named {name!r} ({_kind_of(seen[name])} and "
                f'{_kind_of(spec)}), and the API refuses a request whose tool names repeat ("tools: Tool '
                f'names must be unique."): {fix}'
            )
        seen[name] = spec


def _kind_of(spec: Mapping[str, Any]) -> str:
    """What a tool definition is, in words: a server tool (or one the API defines) by its type."""
    kind = spec.get("type")
    return f"the tool of type {kind!r}" if isinstance(kind, str) and kind != "custom" else "an agent's tool"


def _retired_note(model: str, info: ModelInfo | None) -> str:
    """What the model table says of `model` when it is retired on the Claude API, else "" (also for a
    Bedrock or Vertex AI id: those platforms may serve a model the Claude API has retired)."""
    if info is None or info.status != "retired" or partner_id(model) is not None:
        return ""
    when = f": retired on {info.retires.isoformat()}" if info.retires else ""
    note = f"; {info.note}" if info.note else ""
    return f"{model} is retired (model table{when}{note})"


# The request fields the adapter writes itself, and the option to use instead of `extra_body`.
_OWN_FIELDS = {
    "model": "the model id",
    "max_tokens": "the agent's max_tokens",
    "messages": "the run's journal",
    "system": "the agent's system prompt",
    "tools": "the agent's tools and server_tools=",
    "stream": "the adapter (it always streams)",
    "cache_control": "cache= (the adapter places the breakpoints)",
    "thinking": "thinking=",
    "tool_choice": "tool_choice= or parallel_tool_use=",
    "metadata": "metadata=",
    "container": "container=",
}


# The fields of a tool's definition that `tool_options` may not replace: the tool itself gives them.
_TOOL_OWN = frozenset({"name", "description", "input_schema", "cache_control"})


def _with_options(spec: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's definition with its options. With a `type`, the tool is one the API defines and the
    agent's tool of that name runs (the memory tool, bash, the text editor): the API knows its
    description and input, and refuses them given."""
    if "type" in options:
        return {"name": spec.get("name"), **options}
    return {**spec, **options}


def _tool_options(options: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """The `tool_options` option checked: a mapping of fields per tool name, none of the tool's own."""
    checked: dict[str, dict[str, Any]] = {}
    for name, fields in (options or {}).items():
        if not isinstance(fields, Mapping):
            raise ConfigError(
                f"AnthropicModel: tool_options[{name!r}] must be a mapping of fields, got {fields!r}"
            )
        if own := sorted(set(fields) & _TOOL_OWN):
            raise ConfigError(
                f"AnthropicModel: tool_options[{name!r}] may not set {own}: the tool gives them "
                "(cache breakpoints come from cache=)"
            )
        checked[name] = dict(fields)
    return checked


def _extra_body(fields: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The `extra_body` option checked: none of the fields the adapter writes itself."""
    if fields is None:
        return None
    for field in fields:
        if field in _OWN_FIELDS:
            raise ConfigError(
                f"AnthropicModel: extra_body may not set {field!r}: it comes from {_OWN_FIELDS[field]}"
            )
    return dict(fields) or None


# The sampling parameters the models that think adaptively by default refuse set to other than their
# defaults (a 400: the 5.x models' migration guides say to remove them); temperature's default is 1.
_SAMPLING = {"temperature": 1, "top_p": None, "top_k": None}


def _check_sampling(extra_body: Mapping[str, Any] | None, model: str, by_row: Thinking | None) -> None:
    """Refuse what the API refuses: sampling parameters on a model that thinks adaptively by default."""
    if by_row is None or not extra_body:
        return
    for field, default in _SAMPLING.items():
        if field in extra_body and extra_body[field] != default:
            raise ConfigError(
                f"AnthropicModel: {model} refuses {field} set to other than its default (the API answers "
                f"400 for temperature, top_p or top_k on a model that thinks adaptively): drop {field} from "
                "extra_body, and steer the model with output_config's effort instead"
            )


def _options(
    thinking: Mapping[str, Any] | None,
    tool_choice: Mapping[str, Any] | None,
    parallel_tool_use: bool,
    metadata: Mapping[str, Any] | None,
    model: str = "",
    by_row: Thinking | None = None,
) -> dict[str, Any]:
    """The request options given, checked against what the model does (`_check_thinking`)."""
    options: dict[str, Any] = {}
    if thinking is not None:
        options["thinking"] = dict(thinking)
    choice = dict(tool_choice) if tool_choice is not None else None
    _check_thinking(thinking, choice, model, by_row)
    if not parallel_tool_use:
        choice = {"type": "auto", **(choice or {}), "disable_parallel_tool_use": True}
    if choice is not None:
        options["tool_choice"] = choice
    if metadata is not None:
        options["metadata"] = dict(metadata)
    return options


_LEAST_THINKING_BUDGET = 1024  # extended thinking's budget_tokens: "Must be ≥1024 and less than max_tokens"


def _check_thinking(
    thinking: Mapping[str, Any] | None, choice: Mapping[str, Any] | None, model: str, by_row: Thinking | None
) -> None:
    """Refuse what the API refuses: a `tool_choice` forcing a call while the model thinks, thinking
    disabled on a model that always thinks, and a thinking budget on one that thinks adaptively by
    default (every such model: the 5.x models' migration guides). `by_row` is the model table's
    `thinking`: when the model thinks with no `thinking` asked for ("always", "default"; "adaptive":
    only when asked, and only adaptively)."""
    kind = thinking.get("type") if thinking is not None else None
    if by_row is not None and kind == "enabled":
        raise ConfigError(
            f"AnthropicModel: {model} thinks adaptively (the API refuses thinking 'enabled' with a "
            "budget_tokens): use thinking={'type': 'adaptive'} or leave thinking out, and steer how much it "
            "thinks with output_config's effort in extra_body"
        )
    budget = thinking.get("budget_tokens") if thinking is not None else None
    if kind == "enabled" and not (is_whole(budget) and budget >= _LEAST_THINKING_BUDGET):
        raise ConfigError(
            f"AnthropicModel: thinking 'enabled' needs budget_tokens, a whole number of tokens from "
            f"{_LEAST_THINKING_BUDGET:,} up (the API's minimum), got {budget!r:.40}"
        )
    if by_row == "always" and kind == "disabled":
        raise ConfigError(
            f"AnthropicModel: {model} always thinks (the API refuses thinking 'disabled'): drop thinking=, "
            "and steer how much it thinks with output_config's effort in extra_body"
        )
    thinks = by_row == "always" or (kind != "disabled" if thinking is not None else by_row == "default")
    if thinks and choice is not None and choice.get("type") not in ("auto", "none"):
        fix = {
            "always": f" ({model} always thinks)",
            "default": f", or turn thinking off: thinking={{'type': 'disabled'}} ({model} thinks by default)",
        }.get(by_row or "", ", or turn thinking off")
        raise ConfigError(
            f"AnthropicModel: thinking allows tool_choice 'auto' or 'none' only (the API refuses "
            f"{choice.get('type')!r} with thinking on): drop tool_choice{fix}"
        )


# -- clients, one per event loop ----------------------------------------------


class _LoopClients:
    """An SDK client per running event loop, closed as that loop shuts down.

    The client is closed by an async generator parked in the loop: the loop's
    `shutdown_asyncgens` (run by `asyncio.run` before it closes the loop)
    finalizes it, which closes the client's connections inside their loop.
    """

    def __init__(self, build: Callable[[], anthropic.AsyncAnthropic]) -> None:
        self._build = build
        self._spare: anthropic.AsyncAnthropic | None = build()  # built now: bad credentials fail early
        self._taking = threading.Lock()  # loops on two threads never take the same spare client
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Held] = (
            weakref.WeakKeyDictionary()
        )

    def peek(self) -> anthropic.AsyncAnthropic:
        """The running loop's client, or the one the next loop will take."""
        try:
            held = self._by_loop.get(asyncio.get_running_loop())
        except RuntimeError:
            held = None
        if held is not None:
            return held.client
        with self._taking:
            if self._spare is None:
                self._spare = self._build()
            return self._spare

    async def get(self) -> anthropic.AsyncAnthropic:
        loop = asyncio.get_running_loop()
        held = self._by_loop.get(loop)
        if held is None or held.client.is_closed():
            with self._taking:
                self._forget_closed()
                client, self._spare = self._spare or self._build(), None
                held = self._by_loop[loop] = _Held(client, _closer(client))
            await anext(held.closer)  # parked: the loop's shutdown_asyncgens closes the client
        return held.client

    def _forget_closed(self) -> None:
        """Drop the clients of loops that closed (their shutdown closed them). A weak key alone never
        lets one go: its parked closer holds the loop (the generator's finalizer is the loop's), so
        each `agent.run()`, a loop of its own, kept its loop and client (a TLS context: 0.8 MB)."""
        for loop in [loop for loop in self._by_loop if loop.is_closed()]:
            del self._by_loop[loop]

    async def close_current(self) -> None:
        with self._taking:
            held = self._by_loop.pop(asyncio.get_running_loop(), None)
        if held is not None:
            await held.closer.aclose()


class _Held:
    def __init__(self, client: anthropic.AsyncAnthropic, closer: AsyncIterator[None]) -> None:
        self.client = client
        self.closer: Any = closer


async def _closer(client: anthropic.AsyncAnthropic) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await client.close()


def _check_extra(client: Any) -> None:
    """The SDK's Amazon Bedrock client signs its requests and reads Bedrock's stream with boto3 and botocore,
    which only the bedrock extra installs: without them each run ended `error` ("No module named
    'botocore'") at its first call."""
    if "Bedrock" in type(client).__name__:
        require_extra("bedrock", f"AnthropicModel with {type(client).__name__}")


def priced_as(model: str, client: Any) -> str:
    """The id `model`'s calls through `client` are priced by: a Vertex AI id called through the SDK's
    Vertex AI client in the `global` region (its URL names no region) is the model on Vertex AI's
    global endpoint, which the Claude API's list price applies to; any other, `model` itself."""
    partner = partner_id(model)
    if partner is None or partner.platform != "Vertex AI" or "/" in model:
        return model
    if getattr(client, "region", None) != "global" or "Vertex" not in type(client).__name__:
        return model
    project = getattr(client, "project_id", None) or "-"
    return f"projects/{project}/locations/global/publishers/anthropic/models/{model}"


# The platforms that bill Claude calls by rules of their own: Amazon Bedrock, Vertex AI, Microsoft
# Foundry (by the SDK client's class, or the host it sends to). The rule that a refusal before any
# output is not billed is the Claude API's (its release notes: "On the Claude API, you are no longer
# billed for a request when it returns stop_reason: "refusal" without Claude having generated any
# output"); these platforms do not say they follow it, so such a refusal is priced as any call there.
_OWN_BILLING_CLIENTS = ("Bedrock", "Vertex", "Foundry")
_OWN_BILLING_HOSTS = ("amazonaws.com", "aiplatform.googleapis.com", "services.ai.azure.com")


# `gen_ai.provider.name` as the GenAI conventions name the platforms that serve Claude under their
# own API: Amazon Bedrock and Vertex AI (Google managed), by the SDK client's class or its host.
# Everything else (the Claude API, Claude on Google Cloud, Microsoft Foundry) is `anthropic`.
_PLATFORM_PROVIDERS = (
    ("Bedrock", "amazonaws.com", "aws.bedrock"),
    ("Vertex", "aiplatform.googleapis.com", "gcp.vertex_ai"),
)


def provider_of(client: Any) -> str:
    """The GenAI provider name of the platform `client` sends to (`_PLATFORM_PROVIDERS`)."""
    host = str(getattr(getattr(client, "base_url", None), "host", "") or "")
    for cls, domain, provider in _PLATFORM_PROVIDERS:
        if cls in type(client).__name__ or host == domain or host.endswith("." + domain):
            return provider
    return PROVIDER


def bills_by_own_rules(client: Any) -> bool:
    """Whether `client` sends to a platform that bills by its own rules (`_OWN_BILLING_CLIENTS`)."""
    if any(name in type(client).__name__ for name in _OWN_BILLING_CLIENTS):
        return True
    host = str(getattr(getattr(client, "base_url", None), "host", "") or "")
    return host.endswith(_OWN_BILLING_HOSTS)


def billed_as_any_call(reply: ModelReply) -> ModelReply:
    """`reply` without the Claude API's refusal rule: priced by its tokens (`NOT_BILLED` dropped)."""
    if not reply.extra.get(NOT_BILLED):
        return reply
    return _replace_reply(reply, extra={k: v for k, v in reply.extra.items() if k != NOT_BILLED})


def _new_client(api_key: str | None, base_url: str | None, timeout: float | None) -> anthropic.AsyncAnthropic:
    """A client with the SDK's own HTTP defaults, its retries off, and redirects not followed: the SDK
    follows them, and so sent the conversation wherever a redirect pointed, its key left off (the
    API refused it: "check the API key"), or sent it as a GET ("check the model id"). A reply's body is
    read through `_event_bytes`, so that no event of it holds more than a reply's could (`_bound_events`)."""
    http = anthropic.DefaultAsyncHttpxClient(
        follow_redirects=False, event_hooks={"response": [_bound_events]}, verify=_tls()
    )
    options: dict[str, Any] = {"max_retries": 0, "open_telemetry": False, "http_client": http}
    if timeout is not None:
        options["timeout"] = timeout
    try:
        client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, **options)
    except anthropic.AnthropicError as exc:  # e.g. a configured profile that cannot be read
        raise ConfigError(f"AnthropicModel cannot build its client: {exc}") from exc
    if not (client.api_key or client.auth_token or client.credentials):
        raise ConfigError("AnthropicModel has no credentials: pass api_key= or set ANTHROPIC_API_KEY")
    if client.base_url.scheme not in ("http", "https") or not client.base_url.host:
        named = "base_url" if base_url is not None else "ANTHROPIC_BASE_URL"
        raise ConfigError(
            f"AnthropicModel: {named} {str(client.base_url).rstrip('/')!r} is no http(s) URL: "
            "give it whole, e.g. 'https://api.anthropic.com'"
        )
    return client


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS context of every client this process builds, as the SDK's HTTP client makes its own
    (certifi's roots, or `SSL_CERT_FILE`/`SSL_CERT_DIR`, read once). One each, it was 0.8 MB of
    memory a model: a catalog builds an agent, and so a model, for every run, and a Temporal worker
    keeps up to 1,024 agents of runs not ended there (waiting for a person, say): 850 MB."""
    return httpx2.create_ssl_context()


async def _bound_events(response: httpx2.Response) -> None:
    """An httpx response hook: the body of a reply (2xx), as `aiter_bytes` gives it to the SDK (what was
    sent, decompressed), read through `_event_bytes`. Error bodies are the SDK's to read."""
    if not response.is_success:
        return
    read = response.aiter_bytes

    def bounded(chunk_size: int | None = None) -> AsyncGenerator[bytes, None]:
        return _event_bytes(read(chunk_size))

    response.aiter_bytes = bounded  # type: ignore[method-assign]


class EndlessEventError(ValueError):
    """One server-sent event of a reply went on past what any event of a reply holds: a `malformed_reply`."""


async def _event_bytes(chunks: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    """`chunks` as the SDK's decoder is to get them: whole lines only, a line not ended yet held here (in
    linear time) until it ends, so the decoder copies each line once, not each piece the network sent of
    it; cut (`EndlessEventError`) once one event, as the decoder gathers it (`_Gathered`), with what is
    held here, passes `_MOST_EVENT_BYTES` or `_MOST_EVENT_COPIES`."""
    line = bytearray()  # the start of a line not ended yet
    gathered = _Gathered(_MOST_EVENT_BYTES, _MOST_EVENT_COPIES)
    async for chunk in chunks:
        if not line and gathered.whole(chunk):  # as the API streams: whole events, of a few lines each
            yield chunk
            continue
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
        if not end:  # no line ends in it
            line += chunk
            gathered.check(len(line))
            continue
        lines = bytes(line) + chunk[:end] if line else chunk[:end]
        line = bytearray(chunk[end:])
        gathered.take(lines, len(line))
        yield lines
    if line:  # what follows the body's last line end
        gathered.take(bytes(line), 0)
        yield bytes(line)


class _Gathered:
    """What the SDK's decoder holds of the event it gathers, tallied as it gathers it
    (`SSEDecoder._aiter_chunks`): each line of each piece it gets is added to what it holds, copying
    that, until what it holds ends as an event ends (`_EVENT_ENDS`)."""

    def __init__(self, most_bytes: int, most_copies: int) -> None:
        self.most_bytes, self.most_copies = most_bytes, most_copies
        # A piece of this many bytes holds as many lines at the most: no event of it costs more copying.
        self._small = min(most_bytes, math.isqrt(most_copies))
        self.held = 0  # bytes of the event so far
        self.lines = 0
        self.copied = 0  # bytes copied gathering it
        self._end = b""  # its last bytes (4 at most: the longest of `_EVENT_ENDS`)

    def whole(self, piece: bytes) -> bool:
        """Whether the decoder, holding nothing, gathers `piece` within the bounds (it is small) and ends
        it holding nothing: it ends with a blank line after one that is not, and no line of it ends in
        a carriage return (which `_EVENT_ENDS` reads in other ways)."""
        return (
            not self.held
            and len(piece) <= self._small
            and piece.endswith(b"\n\n")
            and not piece.endswith(b"\n\n\n")
            and b"\r" not in piece
        )

    def take(self, piece: bytes, waiting: int) -> None:
        """Tally `piece` as the decoder gathers it, line by line; `waiting` more bytes of a line are held
        before it."""
        for line in piece.splitlines(keepends=True):
            self.held, self.lines = self.held + len(line), self.lines + 1
            self.copied += self.held
            self._end = (self._end + line)[-4:]
            if self._end.endswith(_EVENT_ENDS):
                self.held = self.lines = self.copied = 0
                self._end = b""
            else:
                self.check(0)
        self.check(waiting)

    def check(self, waiting: int) -> None:
        """`EndlessEventError` once the event, with the `waiting` bytes of a line held before the
        decoder gets it, holds more than `most_bytes`, or has cost the decoder more than `most_copies`."""
        if self.held + waiting > self.most_bytes:
            raise EndlessEventError(
                f"one server-sent event of the stream went on for over {self.most_bytes:,} bytes, more than "
                f"any event of a reply holds (what it carries goes back in a request, which the API refuses "
                f"past {CLAUDE_API.request_bytes:,} bytes): cut as an event that never ends"
            )
        if self.copied > self.most_copies:
            raise EndlessEventError(
                f"one server-sent event of the stream went on for {self.lines:,} lines ({self.held:,} "
                "bytes) with no end, more than the SDK's decoder can gather (it copies all it holds of an "
                "event for each line; the API sends an event in one data line): cut as an event that never "
                "ends"
            )


def _read_timeout(client: anthropic.AsyncAnthropic) -> float | None:
    """The seconds the client waits for each read of a reply (None: for ever)."""
    timeout = getattr(client, "timeout", None)
    read = timeout.read if isinstance(timeout, httpx2.Timeout) else timeout
    return float(read) if isinstance(read, int | float) and math.isfinite(read) else None


def _without_retries(client: anthropic.AsyncAnthropic) -> anthropic.AsyncAnthropic:
    return client if client.max_retries == 0 else client.with_options(max_retries=0)


# -- request -----------------------------------------------------------------


def outgoing_messages(messages: list[Message]) -> list[Message]:
    """The history as the API takes it: messages with empty content are left out."""
    return [m for m in messages if m.get("content")]


# What stands in for a user message that held only the results of calls `without_declined` left out:
# the API wants the roles to alternate, and a message with no content is not sent.
DECLINED_RESULTS = (
    "[Endstate: the results of calls made by a model that declined this turn were left out: "
    "that model's calls are not part of the conversation.]"
)


def without_declined(messages: list[Message]) -> list[Message]:
    """`messages` without what a declining model wrote before a turn's last `fallback` block
    (`_declined_before_fallback`) and without the results of its calls left out (the API refuses a
    `tool_result` whose call is not sent). `to_reply` leaves such blocks out of a reply, but a journal
    an older release wrote (a run suspended, checkpointed or snapshotted before) keeps them: without
    this they went back to the API, which wants them left out, and its calls' results with them.
    A user message left with nothing gets `DECLINED_RESULTS` instead. `messages` itself when there is
    nothing to leave out (every journal written since)."""
    if not _any_fallback(messages):  # nearly every request: one look at each block
        return messages
    out, dropped = messages, set[Any]()
    for i, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        if message.get("role") == "assistant":
            declined = _fallen_back(content)
            if declined:
                out = out if out is not messages else list(messages)
                out[i] = {**message, "content": [b for j, b in enumerate(content) if j not in declined]}
                dropped |= {content[j].get("id") for j in declined if content[j].get("type") == "tool_use"}
        elif dropped and (kept := _without_results(content, dropped)) is not content:
            out = out if out is not messages else list(messages)
            out[i] = {**message, "content": kept or [{"type": "text", "text": DECLINED_RESULTS}]}
    return out


def _any_fallback(messages: list[Message]) -> bool:
    """Whether an assistant message of `messages` holds a `fallback` block."""
    for message in messages:
        if message.get("role") == "assistant" and isinstance(content := message.get("content"), list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "fallback":
                    return True
    return False


def _fallen_back(content: list[Any]) -> set[int]:
    """`_declined_before_fallback` of an assistant message's blocks; none without a `fallback` block."""
    if not any(isinstance(block, dict) and block.get("type") == "fallback" for block in content):
        return set()
    return _declined_before_fallback([block if isinstance(block, dict) else {} for block in content])


def _without_results(content: list[Any], calls: set[Any]) -> list[Any]:
    """A user message's blocks without the `tool_result`s of `calls` (`content` itself when it has none)."""
    kept = [block for block in content if not _result_of(block, calls)]
    return content if len(kept) == len(content) else kept


def _result_of(block: Any, calls: set[Any]) -> bool:
    """Whether `block` is the result of one of `calls`."""
    is_result = isinstance(block, dict) and block.get("type") == "tool_result"
    return is_result and block.get("tool_use_id") in calls


def cache_control(ttl: CacheTTL) -> dict[str, str]:
    """The breakpoint marker; the 5-minute TTL is the API's default and is left implicit."""
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}


def with_message_breakpoints(messages: list[Message], marker: dict[str, str]) -> list[Message]:
    """Copies of `messages` with breakpoints on the last message and on the user message before the
    last reply: this turn writes the prefix up to its end, and reads what the last turn wrote."""
    marked = list(messages)
    for index in _breakpoint_messages(marked):
        marked[index] = _marked(marked[index], marker)
    return marked


def _breakpoint_messages(messages: list[Message]) -> list[int]:
    if not messages:
        return []
    last = len(messages) - 1
    earlier = [i for i in range(last) if messages[i].get("role") == "user" and i < last - 1]
    return [earlier[-1], last] if earlier else [last]


def _marked(message: Message, marker: dict[str, str]) -> Message:
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    for i in range(len(blocks) - 1, -1, -1):
        block = blocks[i]
        if isinstance(block, dict) and block.get("type") in _BREAKPOINT_TYPES and block.get("text", "x"):
            blocks[i] = {**block, "cache_control": marker}
            return {**message, "content": blocks}
    return message


# -- the stream ----------------------------------------------------------------


# The most seconds a step of a tool the API runs (code execution, web fetch, an advisor) may show
# nothing but `ping`s: the API keeps the stream open with them while the tool works, which can take
# minutes, and while the model then reads its result (a fetched page can be long) before it writes the
# next block. At least the SDK's default read timeout: a shorter `timeout` bounds the pauses of the
# model's own output, not a tool's run.
_SERVER_STEP = float(anthropic.DEFAULT_TIMEOUT.read or 600)


class _Watchdog:
    """Ends the task reading a stream, as a read timeout, when no event of the message (`_MESSAGE_EVENTS`:
    not a ping, nor an event of a type a later API adds, which nothing reads) has come for `idle` seconds,
    or, while a tool the API runs is at work (`working`), for `max(idle, _SERVER_STEP)` seconds.

    The SDK's timeout bounds each read, and the API's `ping` keep-alives (which the SDK drops) reset
    it, so a stream stalled behind them would be waited on for ever (but for the run's time budget).
    One timer, moved on only when it fires: feeding it costs a clock read an event."""

    def __init__(self, idle: float | None) -> None:
        self.idle = idle
        self.working = False  # a server tool's step: the tool runs, then the model reads its result
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._last = self._loop.time()
        self._timer: asyncio.TimerHandle | None = None
        self._bit = False

    def fed(self) -> None:
        self._last = self._loop.time()

    def step(self, working: bool) -> None:
        """A step of a tool the API runs began (`working`) or ended: once it ends, the timer set for
        the step's longer bound is set again for the client's timeout."""
        self.working = working
        if not working and self._timer is not None and self.idle is not None:
            self._timer.cancel()
            self._timer = self._loop.call_at(self._last + self.idle, self._check)

    def __enter__(self) -> _Watchdog:
        if self.idle is not None and self._task is not None:
            self._timer = self._loop.call_at(self._last + self.idle, self._check)
        return self

    def bound(self) -> float:
        """The seconds without an event after which the stream is cut, now."""
        assert self.idle is not None
        return max(self.idle, _SERVER_STEP) if self.working else self.idle

    def _check(self) -> None:
        assert self._task is not None
        if self._loop.time() - self._last < (bound := self.bound()):
            self._timer = self._loop.call_at(self._last + bound, self._check)
            return
        self._bit = True
        self._task.cancel()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if not (self._bit and kind is asyncio.CancelledError and self._task is not None):
            return
        if self._task.uncancel() == 0:  # its own cancel only: the run's budget did not cancel too
            raise httpx2.ReadTimeout(self._said()) from exc

    def _said(self) -> str:
        if self.working:
            return (
                f"no progress for {self.bound():g} s while a tool the API runs was at work: the stream "
                "sent nothing of the reply (keep-alive pings, events of a type a later API adds); raise "
                "AnthropicModel(timeout=...) if its tools run longer"
            )
        return (
            f"no progress for {self.bound():g} s (the client's read timeout): the stream sent nothing "
            "of the reply (keep-alive pings, events of a type a later API adds); raise "
            "AnthropicModel(timeout=...) if replies pause longer"
        )


# The deltas whose pieces `_Events` hands to the SDK's accumulation joined, once a block ends: the field
# of the delta that carries the piece, and the delta made of the joined pieces. The SDK's stream helper
# merges each as it comes, which copies the block's whole text (or thinking) again on every delta, and
# parses the whole input JSON again on every `input_json_delta` (`from_json(..., partial_mode=True)`): a
# long reply took time that grew with the square of its length.
_HELD_DELTAS: dict[str, tuple[str, Callable[[str], types.RawContentBlockDelta]]] = {
    "text_delta": ("text", lambda text: types.TextDelta(type="text_delta", text=text)),
    "thinking_delta": ("thinking", lambda text: types.ThinkingDelta(type="thinking_delta", thinking=text)),
    "input_json_delta": (
        "partial_json",
        lambda text: types.InputJSONDelta(type="input_json_delta", partial_json=text),
    ),
}


@contextlib.asynccontextmanager
async def _events_of(client: anthropic.AsyncAnthropic, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
    """The events of one streamed call with `kwargs`, and the message they make: read by `_Events`
    (linear in the reply's length) when the SDK has the accumulation it feeds (`accumulate_event`, of
    a private module: 2.14 to 2.17 have it), else by the SDK's own stream helper, as before."""
    if _accumulate_event() is None:
        async with client.messages.stream(**kwargs) as events:
            yield events
        return
    raw = await client.messages.create(**kwargs, stream=True)
    async with raw:
        yield _Events(raw)


def _accumulate_event() -> Callable[..., Any] | None:
    """The SDK's `accumulate_event`, None when this SDK has no such function (a later one may move it)."""
    found = getattr(_sdk_stream, "accumulate_event", None)
    return found if callable(found) else None


class _Events:
    """A raw Messages API event stream, read as the SDK's `messages.stream()` reads it: the events
    as they come, and the message they make (`current_message_snapshot`, `get_final_message`) built
    by the SDK's own `accumulate_event`. The pieces of a text, a thinking or a call's input JSON are
    held, and handed to it joined as one delta when their block ends (`_HELD_DELTAS`), so the whole
    read takes time linear in the reply's length. The message is the same; an input JSON that is
    not JSON raises the SDK's `ValueError` when its block ends, not at the delta that broke it."""

    def __init__(self, raw: anthropic.AsyncStream[types.RawMessageStreamEvent]) -> None:
        accumulate = _accumulate_event()
        assert accumulate is not None  # `_events_of` reads with `_Events` only when the SDK has it
        self._raw, self._accumulate_event = raw, accumulate
        self._snapshot: types.ParsedMessage[None] | None = None
        self._json_bufs: dict[int, bytes] = {}  # the SDK's record of each block's input JSON
        self._held: dict[int, dict[str, list[str]]] = {}  # pieces not yet handed over, by index and type
        _sdk_spans("share_message_snapshot", raw, self._so_far)

    @property
    def response(self) -> httpx2.Response:
        return self._raw.response

    @property
    def current_message_snapshot(self) -> types.Message:
        """The message so far, as the SDK builds it (the pieces held are not in it yet)."""
        assert self._snapshot is not None
        return self._snapshot

    async def __aiter__(self) -> AsyncIterator[types.RawMessageStreamEvent]:
        async for event in self._raw:
            try:
                self._take(event)
            except Exception:  # the message lacks this event: no span of the SDK's may show it as whole
                _sdk_spans("withhold_message_snapshot", self._raw)
                raise
            yield event

    async def get_final_message(self) -> types.Message:
        """The whole message, once the stream has been read to its end."""
        self._hand_over(*self._held)
        return self.current_message_snapshot

    def _so_far(self) -> types.Message | None:
        """The message so far, every piece held handed over: what the SDK's span of the call shows of
        its output (in content mode), read once the stream has ended."""
        self._hand_over(*self._held)
        return self._snapshot

    def _take(self, event: types.RawMessageStreamEvent) -> None:
        if self._snapshot is None and event.type != "message_start":
            return  # as the SDK's helper: passed on, not gathered (its message has not begun)
        if event.type == "content_block_delta" and (kind := getattr(event.delta, "type", "")) in _HELD_DELTAS:
            self._hold(event.index, kind, getattr(event.delta, _HELD_DELTAS[kind][0]))
            return
        if event.type == "content_block_stop":
            self._hand_over(event.index)
        self._accumulate(event)

    def _hold(self, index: int, kind: str, piece: str) -> None:
        """Keep a piece of block `index`, which must have begun (else the SDK's `IndexError`)."""
        _ = self.current_message_snapshot.content[index]
        self._held.setdefault(index, {}).setdefault(kind, []).append(piece)

    def _hand_over(self, *indexes: int) -> None:
        """Give the SDK the pieces held of blocks `indexes`, joined: one delta per block and type."""
        for index in indexes:
            for kind, pieces in self._held.pop(index, {}).items():
                delta = _HELD_DELTAS[kind][1]("".join(pieces))
                self._accumulate(
                    types.RawContentBlockDeltaEvent(type="content_block_delta", index=index, delta=delta)
                )

    def _accumulate(self, event: types.RawMessageStreamEvent) -> None:
        self._snapshot = self._accumulate_event(
            event=event, current_snapshot=self._snapshot, json_bufs=self._json_bufs
        )


def _sdk_spans(name: str, *args: Any) -> None:
    """Call `name` of the SDK's tracing of streams, as its stream helper does, when the SDK has it: a
    client given `open_telemetry` then shows the helper's message as its span's output content."""
    try:
        from anthropic.lib._tracing import _streaming
    except ImportError:  # an SDK without tracing of its own
        return
    if callable(call := getattr(_streaming, name, None)):
        call(*args)


class _StreamWatch:
    """What a stream has shown so far: first-token time, usage, and text length for a cut call."""

    def __init__(
        self,
        started: float,
        max_tokens: int | None = None,
        idle: float | None = None,
        most_input: int = 0,
        ttl: CacheTTL | None = None,
    ) -> None:
        self.started = started
        self.max_tokens = max_tokens  # the most output the API bills for the call
        self.most_input = most_input or most_input_of(None)  # the most input tokens a call can read
        self.ttl = ttl  # the TTL every cache breakpoint of the request asks for
        self.idle = idle  # the most seconds between two events the SDK gives (None: no bound)
        self.first_token: float | None = None
        self.working = False  # a server tool's step: from its call's end to the next block not its result
        self._block = ""  # the type of the block streaming now
        self.headers: Mapping[str, str] | None = None  # the response's, once it began
        self.snapshot: types.Message | None = None
        self.streamed_chars = 0  # of the output (text, thinking, a call's input JSON)
        self.output_deltas = 0  # the deltas that streamed it
        self.carried = 0  # characters counted of the other events (`_EVENT_CHARS`)
        self.stopped = False
        self.counted = False
        self.late: dict[str, Any] = {}  # usage fields the SDK's stream drops (see `_LATE`)
        self._json: dict[int, list[str]] = {}  # the pieces of input JSON streamed to each block, by index
        self._gathered: set[int] = set()  # the blocks whose input the SDK gathers itself
        self._merged: dict[int, dict[str, Any]] = {}  # fields streamed in deltas the SDK drops, by index

    async def follow(self, events: Any) -> types.Message:
        """Read the stream to its `message_stop`, then what follows it (`_after_stop`); the final message."""
        stream = aiter(events)
        with _Watchdog(self.idle) as watchdog:
            async for event in stream:
                if getattr(event, "type", "") in _MESSAGE_EVENTS:  # a later API's event is none, as a ping
                    watchdog.fed()
                self._see(event, events)
                if self.working is not watchdog.working:  # a server tool's step began or ended
                    watchdog.step(self.working)
                if self.stopped:
                    break
        if not self.stopped:
            raise ValueError("the stream ended before message_stop")
        await self._after_stop(stream, events)
        if not self.counted:  # the API always says why the reply ended, and its output, before it stops
            raise ValueError("the stream stopped with no message_delta giving the output count")
        message: types.Message = await events.get_final_message()
        if problem := self._implausible(message.usage):
            raise ValueError(problem)
        return message

    def _implausible(self, usage: Any) -> str | None:
        """What in a whole reply's usage no call could have (`most_input`, `_MOST_SAMPLINGS` times
        the request's `max_tokens`), or None; counts that are no counts are `_check_usage`'s."""
        read = sum(
            _tokens(usage, f)
            for f in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        )
        if read > self.most_input:
            return f"its usage counts {read:,} input tokens, more than a call can read ({self.most_input:,})"
        output = _tokens(usage, "output_tokens")
        if self.max_tokens and output > self.max_tokens * _MOST_SAMPLINGS:
            return f"its usage counts {output:,} output tokens for a max_tokens of {self.max_tokens:,}"
        if problem := self._implausible_iteration(self.late.get("iterations")):
            return problem
        tools = getattr(usage, "server_tool_use", None)
        for field in _SERVER_TOOL_COUNTS:  # each use billed apart: $10 per 1,000 web searches
            if (uses := _tokens(tools, field)) > _MOST_TOOL_USES:
                return f"its usage counts {uses:,} {field}, more than a call makes ({_MOST_TOOL_USES:,})"
        return None

    async def _after_stop(self, stream: AsyncIterator[Any], events: Any) -> None:
        """Read the stream on from its `message_stop` to its end (its connection is then reused), for
        at most `_AFTER_STOP` seconds (or the client's read timeout, when shorter). The reply is whole:
        a stream kept open after it (pings, silence) or broken then is let go, not waited on for ever
        nor retried as a stall; an event of a message after it is a second message (`_check_order`)."""
        bound = min(self.idle, _AFTER_STOP) if self.idle is not None else _AFTER_STOP
        with contextlib.suppress(TimeoutError, httpx2.HTTPError, anthropic.APIConnectionError):
            async with asyncio.timeout(bound):
                async for event in stream:
                    self._see(event, events)

    def _see(self, event: Any, events: Any) -> None:
        kind = getattr(event, "type", "")
        self._check_order(kind, event)
        if kind == "message_start":
            if problem := _start_problem(event.message):  # nothing of it counted: the usage is unknown
                raise ValueError(problem)
            self.snapshot = events.current_message_snapshot
            self._late(event.message.usage)
        elif kind == "content_block_delta":
            if self.first_token is None:
                self.first_token = time.monotonic() - self.started
            self._tally(kind, event)
            self._gather(event.index, event.delta)
        elif kind == "message_delta":
            self._tally(kind, event)
            output = getattr(getattr(event, "usage", None), "output_tokens", None)
            self.counted = output is not None  # the API's own count of the output, final (else malformed)
            self._late(event.usage)
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "content_block_start":  # the API's step goes on through the tool's result
            self._tally(kind, event)
            self._block = getattr(event.content_block, "type", "")
            self.working = self.working and self._block.endswith("_tool_result")
        elif kind == "content_block_stop":  # the API runs the call that just ended: it may take minutes
            self._tally(kind, event)
            self.working = self.working or (self._block.endswith("tool_use") and self._block != "tool_use")

    def _tally(self, kind: str, event: Any) -> None:
        """Count an event of the message (but its start and stop) toward the stream's bounds, then
        check them (`_check_length`): a delta of the output by its characters (and `_DELTA_CHARS`),
        a block's stop by `_EVENT_CHARS` (it keeps nothing; the SDK's own stream helper gives it the
        whole block, counted at its start), any other event by its JSON's (and `_EVENT_CHARS`)."""
        chars = _output_chars(event.delta) if kind == "content_block_delta" else None
        if kind == "content_block_stop":
            self.carried += _EVENT_CHARS
        elif chars is None:
            self.carried += _json_chars(event) + _EVENT_CHARS
        else:
            self.streamed_chars += chars
            self.output_deltas += 1
        self._check_length()

    def _check_length(self) -> None:
        """`ValueError` once the stream has sent more output than any reply within the request's
        `max_tokens` can hold (`_MOST_CHARS_PER_TOKEN`), or carried more besides than a reply can send
        back (`_MOST_CARRIED`): a stream that never ends, whatever it repeats, is cut there."""
        output = self.streamed_chars + self.output_deltas * _DELTA_CHARS
        if self.max_tokens and output > (most := self.max_tokens * _MOST_SAMPLINGS * _MOST_CHARS_PER_TOKEN):
            raise ValueError(
                f"the stream sent over {most:,} characters of output ({_DELTA_CHARS} counted for each "
                f"of its {self.output_deltas:,} deltas besides its own), more than a reply of "
                f"max_tokens {self.max_tokens:,} can hold: cut as a stream that never ends"
            )
        if self.carried > _MOST_CARRIED:
            raise ValueError(
                f"the stream sent over {_MOST_CARRIED:,} characters of blocks and deltas besides its "
                f"output ({_EVENT_CHARS} counted for each event besides its JSON), more than a reply can "
                "send back in a request: cut as a stream that never ends"
            )

    def _check_order(self, kind: str, event: Any) -> None:
        """`ValueError` for an event of the message out of the API's order, which the SDK's
        accumulation would take anyway: one before `message_start` (its content lost), a second
        `message_start` or any event after `message_stop` (a second message: its usage replaced the
        first's, its blocks were added to the first's), and a block event out of order (`_check_block`)."""
        if kind not in _MESSAGE_EVENTS:
            return  # a ping, or an event of a later API: the SDK and `_see` leave it
        if self.stopped:
            raise ValueError(f"the stream sent {kind} after message_stop: a second message")
        if self.snapshot is None:
            if kind != "message_start":
                raise ValueError(f"the stream sent {kind} before message_start")
        elif kind == "message_start":
            raise ValueError("the stream sent a second message_start before message_stop")
        else:
            self._check_block(kind, event, self.snapshot)

    @staticmethod
    def _check_block(kind: str, event: Any, snapshot: types.Message) -> None:
        """`ValueError` for a block begun at another index than the reply's next (its deltas went to
        the block at that index: a call ran with no input, a text block took the call's), or a delta
        for a block of another type (`_DELTA_FOR`: a call's input on a text block went back to the
        API on it; a call's input sent as text was dropped, and the call ran with none)."""
        if kind == "content_block_start" and (index := event.index) != (began := len(snapshot.content) - 1):
            raise ValueError(f"a block began at index {index!r}, where the reply's next block is {began}")
        if kind == "content_block_delta" and (delta := getattr(event.delta, "type", None)) in _DELTA_FOR:
            within = isinstance(event.index, int) and 0 <= event.index < len(snapshot.content)
            block = getattr(snapshot.content[event.index], "type", "") if within else ""
            if block in _SDK_BLOCKS and block not in _DELTA_FOR[delta]:
                raise ValueError(f"a {delta} was streamed to block {event.index}, a {block} block")

    def _late(self, usage: Any) -> None:
        """Keep the usage fields of `message_start` or `message_delta` that the SDK's stream does
        not carry to its final message (a `message_delta` never, `iterations` at all)."""
        untyped = getattr(usage, "model_extra", None) or {}
        for field in _LATE:
            value = untyped.get(field, getattr(usage, field, None))
            if value is not None:
                self.late[field] = value

    def _gather(self, index: int, delta: Any) -> None:
        """Keep the input JSON streamed to a block the SDK leaves alone (one of a type it does not
        know, such as `mcp_tool_use`): the SDK gathers it for tool_use and server_tool_use only;
        and the fields streamed in deltas of a type the SDK drops (`_merge`)."""
        kind = getattr(delta, "type", None)
        if kind not in _SDK_DELTAS:
            self._merge(index, delta)
        if kind != "input_json_delta" or self.snapshot is None:
            return
        if index < len(self.snapshot.content) and isinstance(self.snapshot.content[index], _GATHERED):
            self._gathered.add(index)  # the SDK keeps what it can parse of it: checked in `unfinished`
        self._json.setdefault(index, []).append(delta.partial_json)

    def _merge(self, index: int, delta: Any) -> None:
        """Merge a delta of a type the SDK drops (a compaction's `compaction_delta`, the deltas of a
        block type a later API adds) into its block's fields, as the API's deltas all stream: a string
        is the next piece of the field of its name (after what the block began with), any other value
        replaces it. A string's pieces are joined once, when `fields` reads them."""
        is_model = isinstance(delta, pydantic.BaseModel)
        sent = delta.model_dump(mode="json", exclude_unset=True) if is_model else {}
        fields = self._merged.setdefault(index, {})
        for field, value in sent.items():
            if field == "type" or value is None:
                continue
            if isinstance(value, str):
                before = fields[field] if field in fields else self._began_with(index, field)
                if not isinstance(before, _Pieces):
                    before = _Pieces([before if isinstance(before, str) else ""])
                before.append(value)
                value = before
            fields[field] = value

    def _began_with(self, index: int, field: str) -> Any:
        """The value of `field` that block `index` began with (its `content_block_start`)."""
        content = self.snapshot.content if self.snapshot is not None else []
        return getattr(content[index], field, None) if index < len(content) else None

    def fields(self) -> dict[int, dict[str, Any]]:
        """The fields of blocks that `_gather` kept, by index: inputs parsed (a `ValueError` when one
        is not JSON), the fields streamed in deltas the SDK drops (a compaction's summary)."""
        fields: dict[int, dict[str, Any]] = {
            index: {field: _joined(value) for field, value in kept.items()}
            for index, kept in self._merged.items()
        }
        unfinished = self.unfinished()
        for index, text in self._inputs().items():
            if index not in self._gathered and index not in unfinished:
                fields.setdefault(index, {})["input"] = json.loads(text) if text.strip() else {}
        return fields

    def unfinished(self) -> set[int]:
        """The blocks whose streamed input is no whole JSON value: cut off (the SDK reads what it
        can of it, so a call would run with the arguments it had so far) or broken."""
        cut = set()
        for index, text in self._inputs().items():
            try:
                json.loads(text) if text.strip() else None
            except ValueError:
                cut.add(index)
        return cut

    def _inputs(self) -> dict[int, str]:
        """The input JSON streamed to each block that `_gather` kept, whole."""
        return {index: "".join(pieces) for index, pieces in self._json.items()}

    def _implausible_iteration(self, iterations: Any) -> str | None:
        """What in the usage's `iterations` (a server-side compaction, an advisor, a fallback's
        attempts: each priced) is no count or more than a call can read or write, or None."""
        for item in iterations if isinstance(iterations, list) else ():
            if not isinstance(item, dict):
                continue
            for field in _USAGE_COUNTS:
                if field in item and not is_count(item[field]):
                    return f"its usage's iterations give {field} {item[field]!r:.40}, not a count of tokens"
            read = sum(_count(item, f) for f in _USAGE_COUNTS if f != "output_tokens")
            output = _count(item, "output_tokens")  # the model's steps write within max_tokens; a
            bound = self.max_tokens if item.get("type") in _SAMPLED else None  # compaction may not
            if read > self.most_input or output > (bound or self.most_input) * _MOST_SAMPLINGS:
                return f"its usage's iterations count {read:,} input and {output:,} output tokens in one step"
        return None

    def record_cut(self) -> None:
        """Record what the call used (`partial`) as a call cut off, once the API said anything."""
        if (partial := self.partial()) is not None:
            record_cut_call(partial)

    def partial(self) -> ModelReply | None:
        """The usage of a call cut off mid-stream (or read whole but unusable), or None before the
        API said anything."""
        if self.snapshot is None:
            return None
        usage = self.snapshot.usage
        output = _tokens(usage, "output_tokens")  # a count that is no count is none: estimated
        if self.max_tokens and output > self.max_tokens * _MOST_SAMPLINGS:
            output = 0  # no count a call could have
        if not self.counted or output != usage.output_tokens:  # from the text streamed, but never past
            output = max(output, -(-self.streamed_chars // _CHARS_PER_TOKEN))  # what the API bills
            output = min(output, self.max_tokens) if self.max_tokens else output
        reply = _usage_reply(usage, [], "cut_off", self.snapshot.model or "", self.snapshot.id or "")
        extra: dict[str, Any] = {"cut_off": True, "output_tokens_estimated": output != usage.output_tokens}
        extra |= _geo(usage) | _geo(self.late)
        if not self._input_counted(usage, reply.input_tokens):  # counted as none, its cost unknown
            reply = _replace_reply(
                reply, input_tokens=0, cache_read_input_tokens=0, cache_creation_input_tokens=0
            )
            extra = extra | {COUNT_UNKNOWN: True}
        reply = _replace_reply(reply, output_tokens=output, time_to_first_token=self.first_token, extra=extra)
        return with_asked_ttl(reply, usage, self.ttl)

    def _input_counted(self, usage: Any, read: int) -> bool:
        """Whether `usage` counts the input (`read` in all) as a call can: each count a count (the
        cache ones may be left out), and no more than a call can read."""
        if not is_count(getattr(usage, "input_tokens", None)) or read > self.most_input:
            return False
        cached = (getattr(usage, f, None) for f in ("cache_read_input_tokens", "cache_creation_input_tokens"))
        return all(value is None or is_count(value) for value in cached)


class _Pieces(list[str]):
    """The pieces of a string field streamed in deltas, in order: joined once, by `_joined` (adding each
    to the string so far copied it all again, a time that grew with the square of its length)."""


def _joined(value: Any) -> Any:
    """`value`, its pieces joined when it is `_Pieces`."""
    return "".join(value) if isinstance(value, _Pieces) else value


def _start_problem(message: Any) -> str | None:
    """What makes a stream's `message_start` unreadable (the API always gives the usage of the input
    first; an id or model it gives is a string: a gateway that leaves them out is read as naming
    none, the model asked for), or None."""
    if not isinstance(getattr(message, "usage", None), pydantic.BaseModel):
        return "the stream's message_start gives no usage: no count of the input"
    for field in ("id", "model"):
        if not isinstance(value := getattr(message, field, None), str | None):
            return f"the stream's message_start gives {field} {value!r}, not a string"
    return None


def _output_chars(delta: Any) -> int | None:
    """The characters of a delta of the output the model writes (text, thinking, a call's input JSON:
    `_HELD_DELTAS`), None for a delta of any other type."""
    held = _HELD_DELTAS.get(str(getattr(delta, "type", "")))
    if held is None:
        return None
    value = getattr(delta, held[0], None)
    return len(value) if isinstance(value, str) else 0


def _json_chars(event: Any) -> int:
    """The characters of an event's JSON, as the SDK read it (its fields of a type the SDK does not
    know too, and any of another type than the SDK's: no warning, which tests make errors)."""
    if isinstance(event, pydantic.BaseModel):
        return len(event.model_dump_json(warnings=False))
    return len(json.dumps(event, default=str))


def _malformed(exc: BaseException, headers: Mapping[str, str] | None = None) -> TransientModelError:
    """What could not be read of a 200 reply, its words cut and shown (`_shown`: the SDK's words may
    quote all the input JSON a call streamed), and the kind of body it was when that was no stream
    of events (`headers`, the reply's): a proxy's or a portal's page answers 200 too, and a gateway
    that does not stream answers with the whole message as JSON."""
    said = f"{type(exc).__name__}: {_shown(str(exc))}"
    kind = (headers or {}).get("content-type", "").partition(";")[0].strip().lower()
    who = _NOT_A_STREAM.get(kind)
    page = f"; the body was {kind}, not the API's event stream{who}" if who else ""
    return TransientModelError(
        f"Anthropic API: a 200 reply whose body could not be read ({said}){page}{_request_id(headers)}",
        error_type="malformed_reply",
    )


# The response header that names the HTTP request, by platform (`gen_ai.provider.name`): Anthropic's
# `request-id` (the Claude API's `req_...`; Vertex AI passes it on as `req_vrtx_...`), and Amazon
# Bedrock's own `x-amzn-requestid`, what AWS support asks for (Anthropic's, should Bedrock pass it on,
# after it). The SDK reads `request-id` alone (`_request_id`, a stream's `request_id`).
_REQUEST_ID_HEADERS: dict[str, tuple[str, ...]] = {"aws.bedrock": ("x-amzn-requestid", "request-id")}
_REQUEST_ID_HEADER = ("request-id",)


def request_id_of(headers: Mapping[str, str] | None, provider: str = PROVIDER) -> str:
    """The id of the HTTP request that a reply with `headers` answered, as its platform (`provider`)
    names it, bounded and escaped (`shown_id`: a header comes from outside); "" when none is given."""
    for name in _REQUEST_ID_HEADERS.get(provider, _REQUEST_ID_HEADER):
        if said := shown_id((headers or {}).get(name)):
            return said
    return ""


def _request_id(headers: Mapping[str, str] | None) -> str:
    """The reply's `request-id` header as an error quotes it (what Anthropic's support asks for), or ""."""
    said = (headers or {}).get("request-id", "").strip()
    return f" (request-id {visible(_clipped(said, 100))})" if said else ""


# The kinds of body a page is sent as (a proxy's, a captive portal's, a login's), never the API's reply.
_PAGES = frozenset({"text/html", "application/xhtml+xml", "text/plain", "text/xml", "application/xml"})
# What a 200 reply's body was, when it was no stream of events, says of who sent it: a page (a proxy's or a
# captive portal's), or JSON (the whole message, from a gateway that does not stream).
_NOT_A_STREAM: dict[str, str] = {
    **dict.fromkeys(
        _PAGES, " (a proxy's or a captive portal's page?): check the base URL and any proxy between"
    ),
    "application/json": (
        " (a gateway or proxy that does not stream, answering with the whole message?): the adapter streams "
        "every call; check the base URL, and that what serves it streams a request with stream: true"
    ),
}


# -- reply -------------------------------------------------------------------


def to_reply(
    message: types.Message,
    time_to_first_token: float | None = None,
    headers: Mapping[str, str] | None = None,
    streamed: Mapping[int, Mapping[str, Any]] | None = None,
    late: Mapping[str, Any] | None = None,
    unfinished: Collection[int] = (),
    provider: str = PROVIDER,
) -> ModelReply:
    """A `ModelReply` from an SDK `Message`; `streamed` are fields of blocks streamed that the SDK did
    not gather (inputs, a compaction's summary), `late` usage fields streamed that it did not keep
    (`iterations`, the usage's breakdown: see `ModelReply.billed_apart`; `speed`, `inference_geo`),
    `unfinished` the indexes of blocks whose streamed input is no whole JSON value. Its `request_id`
    is read from the reply's `headers` as the platform `provider` names it (`request_id_of`).

    A reply no run could keep (a call with no id or name, or an id the API refuses back, or whose
    input is no JSON object or was cut off before its JSON ended, two calls with one id) raises
    `ValueError`: `complete` makes it a transient `malformed_reply` (so does a call whose id an
    earlier call of the request has: `_check_new_calls`). The last call of a reply cut off where it
    was (`max_tokens`) is replaced by a note instead; that of a refusal, which ends the run, is never
    run.
    """
    content = [content_block(b) for b in message.content]
    for index, fields in (streamed or {}).items():
        content[index] = {**content[index], **fields}
    stop_reason = _checked_stop(message)
    content, unfinished, extra = _served_part(content, unfinished)
    _check_finished(content, unfinished, stop_reason in _SHORT_STOPS)
    _check_calls(content)
    if stop_reason == "compaction":  # paused after a server-side compaction: sent back to go on
        stop_reason, extra["api_stop_reason"] = "pause_turn", "compaction"
    if unsigned := [b for b in content if b.get("type") == "thinking" and not b.get("signature")]:
        content = [b for b in content if b not in unsigned]  # cut off before its signature: the API
        extra["unsigned_thinking_dropped"] = len(unsigned)  # refuses it back, and it ends unfinished
    if stop_reason in _CUT_STOPS and content and _is_call(content[-1]):
        cut = content.pop()
        tool = str(cut.get("name", cut["type"]))
        content.append({"type": "text", "text": _truncation_note(tool, stop_reason)})
        extra["truncated_tool_use"] = tool
    extra |= _stop_extra(message, stop_reason)
    if limits := rate_limit_headers(headers or {}):
        extra["rate_limit"] = limits
    late = late or {}
    extra |= _geo(message.usage) | _geo(late) | _billed(late.get("iterations"), content)
    extra |= _thinking_tokens(message.usage)
    if kept := _kept(message, stop_reason, extra) | _context_of(late.get("iterations")):
        extra[PROVIDER_DATA] = kept
    reply = _usage_reply(message.usage, content, stop_reason, message.model or "", message.id or "")
    if reply.cache_read_input_tokens or reply.cache_creation_input_tokens:  # as before the fields existed
        extra["cache_read_input_tokens"] = reply.cache_read_input_tokens
        extra["cache_creation_input_tokens"] = reply.cache_creation_input_tokens
    return _replace_reply(
        reply,
        extra=extra,
        time_to_first_token=time_to_first_token,
        server_tool_use=server_tool_uses(message),
        request_id=request_id_of(headers, provider),
    )


# The blocks a turn sent back leaves out when they come before its last `fallback` block (Anthropic's
# server-side fallback: what the declining model wrote; the refusals-and-fallback guide, "Continuing
# the conversation"), with a `server_tool_use` whose result is not in the turn.
_DECLINED = frozenset({"thinking", "redacted_thinking", "connector_text", "tool_use"})


def _declined_before_fallback(content: list[dict[str, Any]]) -> set[int]:
    """The indexes of the blocks of `content` the API wants left out when the turn is sent back: those
    of `_DECLINED` before its last `fallback` block, and a `server_tool_use` there with no result in
    the turn. The declining model's calls among them are never run: no `tool_result` goes back for a
    call left out. None when the reply holds no `fallback` block."""
    last = max((i for i, block in enumerate(content) if block.get("type") == "fallback"), default=0)
    answered = {
        block.get("tool_use_id") for block in content if str(block.get("type", "")).endswith("_result")
    }
    return {
        i
        for i, block in enumerate(content[:last])
        if block.get("type") in _DECLINED
        or (block.get("type") == "server_tool_use" and block.get("id") not in answered)
    }


def _served_part(
    content: list[dict[str, Any]], unfinished: Collection[int]
) -> tuple[list[dict[str, Any]], Collection[int], dict[str, Any]]:
    """`content` without what `_declined_before_fallback` leaves out (never run, nor sent back),
    `unfinished` reindexed to match, and the reply's `extra` naming the types left out
    (`fallback_left_out`)."""
    declined = _declined_before_fallback(content)
    if not declined:
        return content, unfinished, {}
    left_out = [str(content[i].get("type")) for i in sorted(declined)]
    kept = [block for i, block in enumerate(content) if i not in declined]
    return kept, _reindexed(unfinished, declined), {"fallback_left_out": left_out}


def _reindexed(indexes: Collection[int], removed: Collection[int]) -> set[int]:
    """`indexes` of a list once the items at `removed` are taken out (those removed are gone)."""
    return {i - sum(1 for r in removed if r < i) for i in indexes if i not in removed}


# The categories of a refusal before any output that Anthropic bills (the refusals-and-fallback
# guide, "How refusals are billed", since 2026-09-24: low in false positives); one before any output
# in another category, or none, is not billed, though its usage gives token counts.
_BILLED_REFUSALS = frozenset({"bio", "frontier_llm", "reasoning_extraction"})


def _stop_extra(message: types.Message, stop_reason: str) -> dict[str, Any]:
    """What `ModelReply.extra` says of why the reply stopped: its stop sequence, its `stop_details`,
    and that a refusal before any output is not billed (`NOT_BILLED`), when it is not."""
    extra: dict[str, Any] = {}
    if message.stop_sequence:
        extra["stop_sequence"] = message.stop_sequence
    if message.stop_details is not None:
        extra["stop_details"] = message.stop_details.model_dump(mode="json", exclude_none=True)
    if stop_reason == "refusal" and not message.content and not _billed_refusal(message.stop_details):
        extra[NOT_BILLED] = True  # declined before any output: its tokens count, its cost is $0
    return extra


def _billed_refusal(details: Any) -> bool:
    """Whether a refusal before any output, with these `stop_details`, is billed."""
    return getattr(details, "category", None) in _BILLED_REFUSALS


def _kept(message: types.Message, stop_reason: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    """What the journal keeps of a reply (`Reply.provider_data`): the code execution container it ran
    in, and a refusal's `stop_details` (why: the run's note says it)."""
    kept: dict[str, Any] = {}
    if message.container is not None:
        kept["container"] = message.container.model_dump(mode="json", exclude_none=True)
    if stop_reason == "refusal" and "stop_details" in extra:
        kept["stop_details"] = extra["stop_details"]
    return kept


def _context_of(iterations: Any) -> dict[str, int]:
    """`{CONTEXT_TOKENS: n}`, the context a reply ended with, when its server-side loop took more than
    one step: the last sampling step's input (cache reads and writes too) and output; the top-level
    usage sums every step's input (the SDK's `usage.iterations`: "calculate the context window size
    from the last `message` entry"). Empty for a reply of one step, whose usage says it."""
    listed = iterations if isinstance(iterations, list) else []
    steps = [i for i in listed if isinstance(i, dict) and i.get("type") in _SAMPLED]
    if len(steps) < 2:
        return {}
    last = _part(steps[-1])
    return {CONTEXT_TOKENS: last["input_tokens"] + last["output_tokens"]}


def container_of(journal: Sequence[Entry]) -> dict[str, Any] | None:
    """The code execution container of the run: the one its last reply ran in (or carried on, see
    `with_container`), whose id the next request names. The API refuses a request that leaves it out
    while code it runs waits for tool results (programmatic tool calling), and without it each turn
    would get a new container, without the files and state of the last."""
    for entry in reversed(journal):
        if isinstance(entry, Reply):
            container = entry.provider_data.get("container")
            return container if isinstance(container, dict) and isinstance(container.get("id"), str) else None
    return None


# How the API refuses a container it no longer has (its words are not documented: these are matched).
_GONE = ("expired", "not found", "no longer")

_SKILL = {"type": "anthropic", "skill_id": "xlsx", "version": "latest"}  # an example, for errors


class _Container:
    """The `container` option: the id to begin in, and the skills every request loads."""

    def __init__(self, id: str | None, skills: list[dict[str, Any]]) -> None:
        self.id = id
        self.skills = skills

    def expired(self, container_id: str) -> None:
        """Begin in no container once the API says the one given has expired (it is never usable
        again): a later turn whose reply named no container would name it again, refused each time."""
        if self.id == container_id:
            self.id = None

    def named(self, run_container: str | None) -> str | dict[str, Any] | None:
        """The request's `container`: the run's (else the one to begin in) by id, with the skills."""
        container_id = run_container or self.id
        if not self.skills:
            return container_id
        return {"id": container_id, "skills": self.skills} if container_id else {"skills": self.skills}


def _container_option(
    option: str | Mapping[str, Any] | None, server_tools: list[dict[str, Any]]
) -> _Container:
    """The `container` option checked: an id, or a mapping of `id` and `skills` (each a skill's
    `type` and `skill_id`, maybe its `version`); skills need the code execution tool."""
    if option is None or isinstance(option, str):
        return _Container(option or None, [])
    if not isinstance(option, Mapping) or set(option) - {"id", "skills"}:
        raise ConfigError(
            f"AnthropicModel: container must be an id or a mapping of 'id' and 'skills', got {option!r}"
        )
    container_id, skills = option.get("id"), [dict(skill) for skill in option.get("skills") or ()]
    if container_id is not None and not isinstance(container_id, str):
        raise ConfigError(f"AnthropicModel: container['id'] must be a container id, got {container_id!r}")
    for skill in skills:
        if skill.get("type") not in ("anthropic", "custom") or not isinstance(skill.get("skill_id"), str):
            raise ConfigError(
                "AnthropicModel: each of container['skills'] needs a type ('anthropic' or 'custom') and "
                f"a skill_id, e.g. {_SKILL}; got {skill!r}"
            )
    if skills and not any(str(spec.get("type", "")).startswith("code_execution") for spec in server_tools):
        raise ConfigError(
            "AnthropicModel: Agent Skills run in the code execution container: "
            "add server_tools=[code_execution()]"
        )
    return _Container(container_id, skills)


def named_container(params: Mapping[str, Any]) -> str | None:
    """The id of the container a request's `params` name, if any."""
    container = params.get("container")
    named = container.get("id") if isinstance(container, dict) else container
    return named if isinstance(named, str) else None


def _container_gone(exc: ModelError) -> bool:
    """Whether `exc` is the API refusing the container a request named: a 4xx about the container."""
    cause = exc.__cause__
    if not isinstance(cause, anthropic.APIStatusError) or not 400 <= cause.status_code < 500:
        return False
    words = api_words(cause).lower()
    return "container" in words and any(gone in words for gone in _GONE)


def _code_waits(messages: Sequence[Message]) -> bool:
    """Whether code the code execution tool ran waits for the results of tool calls it made (their
    `caller` names it): the last reply holds such a call, and the request carries its results."""
    replies = [m for m in messages if m.get("role") == "assistant"]
    content = replies[-1].get("content") if replies else None
    blocks = content if isinstance(content, list) else []
    return any(
        isinstance(block, dict)
        and block.get("type") == "tool_use"
        and str((block.get("caller") or {}).get("type", "")).startswith("code_execution")
        for block in blocks
    )


def _expired_while_waiting(container: str, exc: ModelError) -> ModelError:
    return ModelError(
        f"the code execution container {container} expired while code in it waited for the results "
        f"of tool calls it made (programmatic tool calling), which can no longer reach it ({exc}). "
        "Answer such calls sooner: tools that take long, or approvals, do not fit calls made by code",
        error_type="container_expired",
    )


def in_new_container(params: dict[str, Any], expired: str) -> dict[str, Any]:
    """`params` without the expired container (the API starts a new one; the skills stay), the model
    told so in a text block after the last user message's own blocks (this request only: the journal
    is unchanged; a paused reply sent back to go on is left as it is)."""
    fresh = {k: v for k, v in params.items() if k != "container"}
    if isinstance(skills := params["container"], dict) and skills.get("skills"):
        fresh["container"] = {"skills": skills["skills"]}
    messages = list(fresh["messages"])
    if not messages or messages[-1].get("role") != "user":
        return fresh
    note = {
        "type": "text",
        "text": f"[Endstate: the code execution container {expired} has expired. Code now runs "
        "in a new container: the files and state of the old one are gone.]",
    }
    last = messages[-1]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    messages[-1] = {**last, "content": [*blocks, note]}
    return fresh | {"messages": messages}


def with_container(reply: ModelReply, sent: dict[str, Any] | None) -> ModelReply:
    """`reply`, carrying on the container its request named when it did not use one itself (the API
    names a container only when a container tool ran): the last reply always holds the container, so
    one reply is all a later request reads, and compacting older turns away does not lose it."""
    kept = reply.extra.get(PROVIDER_DATA) or {}
    if sent is None or "container" in kept:
        return reply
    return _replace_reply(reply, extra={**reply.extra, PROVIDER_DATA: {**kept, "container": sent}})


# Preserved thinking (Claude Fable 5.1 and later models): a thinking block sent back is bound to the
# system prompt, tools and messages before it. A history policy that clears, caps or compacts earlier
# turns changes them, and the API then refuses the request ("The block is bound to a different
# conversation"), unless it is asked to drop such blocks, under a beta header:
# https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/fix-bound-to-a-different-conversation
BINDING_BETA = "thinking-binding-controls-2026-08-01"
DROP_BLOCK = "drop_block"
_BINDING = "thinking_binding"  # the key in a reply's provider_data: the run's requests drop such blocks
_BOUND_ELSEWHERE = "bound to a different conversation"


def _bound_elsewhere(exc: ModelError) -> bool:
    """Whether `exc` is the API refusing a thinking block whose history changed (a 400)."""
    cause = exc.__cause__
    return (
        isinstance(cause, anthropic.APIStatusError)
        and cause.status_code == 400
        and _BOUND_ELSEWHERE in api_words(cause).lower()
    )


def dropping(params: Mapping[str, Any]) -> bool:
    """Whether a request's `params` ask the API to drop the thinking blocks whose history changed."""
    thinking = params.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, Mapping) else None
    return isinstance(binding, Mapping) and binding.get("prefix_mismatch_behavior") == DROP_BLOCK


def _thinking_off(params: Mapping[str, Any]) -> bool:
    thinking = params.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") == "disabled"


def with_drop_block(params: dict[str, Any]) -> dict[str, Any]:
    """`params` asking the API to drop the thinking blocks whose history changed, not to refuse the
    request: the thinking asked for (adaptive when none was: these models think by default) with a
    `block_binding`; the beta header comes with it (`_headers_for`)."""
    thinking = dict(params.get("thinking") or {"type": "adaptive"})
    thinking["block_binding"] = {"prefix_mismatch_behavior": DROP_BLOCK}
    return {**params, "thinking": thinking}


def _headers_for(headers: Mapping[str, str], params: Mapping[str, Any]) -> dict[str, str]:
    """The request's headers: the `betas` given, and the one a `block_binding` needs."""
    if not dropping(params):
        return dict(headers)
    betas = [b for b in headers.get("anthropic-beta", "").split(",") if b]
    return {**headers, "anthropic-beta": ",".join(betas if BINDING_BETA in betas else [*betas, BINDING_BETA])}


def drops_blocks(journal: Sequence[Entry]) -> bool:
    """Whether the run's requests ask the API to drop unbound thinking blocks: its last reply says so
    (once the API refused one, the history stays changed)."""
    for entry in reversed(journal):
        if isinstance(entry, Reply):
            return entry.provider_data.get(_BINDING) == DROP_BLOCK
    return False


def with_binding(reply: ModelReply, params: Mapping[str, Any]) -> ModelReply:
    """`reply`, saying (for the next request) that its request asked to drop unbound thinking blocks."""
    if not dropping(params):
        return reply
    kept = reply.extra.get(PROVIDER_DATA) or {}
    return _replace_reply(reply, extra={**reply.extra, PROVIDER_DATA: {**kept, _BINDING: DROP_BLOCK}})


def _is_call(block: dict[str, Any]) -> bool:
    """A call block: `tool_use`, or one the API runs itself (`server_tool_use`, `mcp_tool_use`), whose
    result block the API wants right after it; a reply cut off after one has no result for it."""
    return str(block.get("type", "")).endswith("tool_use")


def _check_finished(content: list[dict[str, Any]], unfinished: Collection[int], cut_off: bool) -> None:
    """Raise `ValueError` for a block whose streamed input never became whole JSON, but the last call
    of a reply `cut_off` where it was (it is replaced by a note): a proxy or a broken stream that
    stopped it short would have the call run with the arguments it had so far."""
    last = len(content) - 1
    for index in sorted(unfinished):
        if cut_off and index == last and _is_call(content[index]):
            continue
        name = content[index].get("name", content[index].get("type")) if index < len(content) else index
        raise ValueError(f"the input of the call of {name!r} stopped before its JSON ended")


def _check_calls(content: list[dict[str, Any]]) -> None:
    """Raise `ValueError` for a tool call the journal could not keep, nor the API take back."""
    seen: set[str] = set()
    for block in content:
        if block.get("type") != "tool_use":
            continue
        for field in ("id", "name"):
            if not (isinstance(block.get(field), str) and block[field]):
                raise ValueError(f"a tool call's {field} is {block.get(field)!r}, not a name")
        if not _CALL_ID.fullmatch(block["id"]):
            raise ValueError(
                f"a tool call's id {block['id']!r:.80} has characters the API refuses in a call sent "
                "back (letters, digits, _ and - only)"
            )
        if not isinstance(block.get("input"), dict):
            kind = type(block.get("input")).__name__
            raise ValueError(f"the input of the call of {block.get('name')!r} is a {kind}, not a JSON object")
        if block.get("id") in seen:
            raise ValueError(f"two tool calls share the id {block.get('id')!r}")
        seen.add(block["id"])
    _check_sendable(content)


# The API's pattern for a tool call's id: a request sending back a call whose id does not match it is
# refused ("tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'").
_CALL_ID = re.compile(r"[a-zA-Z0-9_-]+")


def _check_new_calls(content: Sequence[Mapping[str, Any]], sent: Sequence[Message]) -> None:
    """Raise `ValueError` for a tool call whose id a call of the request's messages (`sent`) already
    has: the API refuses a request holding both ("`tool_use` ids must be unique"), so the request
    after the call ran would fail, and every later one of the run."""
    ids = {block.get("id") for block in content if block.get("type") == "tool_use"}
    if not ids:
        return
    for message in sent:
        blocks = message.get("content") if message.get("role") == "assistant" else None
        for block in blocks if isinstance(blocks, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id") in ids:
                raise ValueError(
                    f"a tool call's id {block.get('id')!r:.80} is that of an earlier call of the "
                    "conversation: the API refuses a request holding both (tool_use ids must be unique)"
                )


def _check_sendable(content: list[dict[str, Any]]) -> None:
    """Raise `ValueError` for a reply holding a number no JSON request can carry back to the API (a
    call's input of `1e999`, which is read as infinity, or `NaN`): kept, the next request could not
    be written, and a tool would run with it."""
    if not _carried(content):
        raise ValueError("it holds a number JSON cannot carry (NaN or infinite, such as 1e999)")


def _carried(value: Any) -> bool:
    """Whether a JSON request can carry `value`'s numbers (none NaN or infinite; only they are checked)."""
    try:
        json.dumps(value, allow_nan=False, default=str)
    except ValueError:
        return False
    return True


_USAGE_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_SERVER_TOOL_COUNTS = ("web_search_requests", "web_fetch_requests")  # uses, billed per use
_BREAKDOWN_COUNTS = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")  # the cache writes by TTL
# The counts the API always gives (the cache counts may be left out).
_REQUIRED_COUNTS = ("input_tokens", "output_tokens")


def _checked_stop(message: types.Message) -> str:
    """The reply's stop reason (`end_turn` when it gives none); `ValueError` for a stop reason or
    token counts no run could keep (`_check_usage`): the reply is then malformed, retried, as the
    API never sends them."""
    _check_usage(message.usage)
    stop_reason = message.stop_reason or "end_turn"
    if not isinstance(stop_reason, str):
        raise ValueError(f"its stop_reason {stop_reason!r} is not a string")
    return stop_reason


def _check_usage(usage: Any) -> None:
    """`ValueError` for a usage whose counts no run could keep: input or output missing, a count
    (the cache writes by TTL and the server tool uses too) negative, fractional, too large or no
    number."""
    breakdown = getattr(usage, "cache_creation", None)
    counts: list[tuple[Any, str, str]] = [(usage, field, f"usage's {field}") for field in _USAGE_COUNTS]
    counts += [(breakdown, field, f"usage's cache_creation.{field}") for field in _BREAKDOWN_COUNTS]
    tools = getattr(usage, "server_tool_use", None)
    counts += [(tools, field, f"usage's server_tool_use.{field}") for field in _SERVER_TOOL_COUNTS]
    for where, field, named in counts:
        value = getattr(where, field, None)
        if value is None and field in _REQUIRED_COUNTS:
            raise ValueError(f"its usage gives no {field}")
        if value is not None and _tokens(where, field) != value:
            raise ValueError(f"its {named} is {value!r}, not a count of tokens")


def _usage_reply(usage: Any, content: list[dict[str, Any]], stop: str, model: str, msg_id: str) -> ModelReply:
    """A reply of `usage`'s counts, each missing or no count read as 0 (`_checked_stop` refuses such a
    usage in a reply; a call cut off or unreadable records what it can)."""
    cache_read = _tokens(usage, "cache_read_input_tokens")
    breakdown = getattr(usage, "cache_creation", None)
    write_1h = _tokens(breakdown, "ephemeral_1h_input_tokens")  # either may be missing
    write_5m = _tokens(breakdown, "ephemeral_5m_input_tokens")
    # the total, else its parts
    cache_write = _tokens(usage, "cache_creation_input_tokens") or (write_5m + write_1h)
    return ModelReply(
        content=content,
        input_tokens=_tokens(usage, "input_tokens") + cache_read + cache_write,
        output_tokens=_tokens(usage, "output_tokens"),
        stop_reason=stop,
        stop=MESSAGES_API_STOPS[stop],
        model=model,
        response_id=msg_id,
        cache_read_input_tokens=cache_read,
        cache_creation_input_tokens=cache_write,
        cache_creation_1h_input_tokens=write_1h,
    )


def with_asked_ttl(reply: ModelReply, usage: Any, ttl: CacheTTL | None) -> ModelReply:
    """`reply` with the cache writes its usage does not split by TTL taken as 1-hour ones when every
    breakpoint asked for that TTL (`ttl`): priced at 2x input, not at the 5-minute 1.25x. Unsplit are
    all the writes of a usage without `cache_creation` (a gateway that leaves it out), and in a stream
    those a `message_delta` added to the total after `message_start` split it: the SDK keeps that
    first split and the last total (a server tool's later samplings write more). What the usage
    splits is taken as it says."""
    if ttl != "1h" or not reply.cache_creation_input_tokens:
        return reply
    breakdown = getattr(usage, "cache_creation", None)
    split = sum(_tokens(breakdown, field) for field in _BREAKDOWN_COUNTS)
    unsplit = reply.cache_creation_input_tokens - split
    if unsplit <= 0:
        return reply
    hour = reply.cache_creation_1h_input_tokens + unsplit
    return _replace_reply(reply, cache_creation_1h_input_tokens=hour)


def _thinking_tokens(usage: Any) -> dict[str, int]:
    """`{THINKING_TOKENS: n}`, the output tokens a reply's usage says went to thinking
    (`output_tokens_details.thinking_tokens`, a part of `output_tokens`); empty when it says none, or
    gives no count within its output."""
    thinking = getattr(getattr(usage, "output_tokens_details", None), "thinking_tokens", None)
    if not is_count(thinking) or thinking > _tokens(usage, "output_tokens"):
        return {}
    return {THINKING_TOKENS: thinking}


def _tokens(usage: Any, field: str) -> int:
    """`usage`'s count `field` (an SDK object's attribute), or 0 when it is missing or no count."""
    value = getattr(usage, field, None)
    return value if is_count(value) else 0


# The usage's iterations billed apart from its top-level counts: a server-side compaction (the
# SDK's types: "A compaction entry's tokens are not included in the top-level usage fields") and an
# advisor model's answer (Anthropic's advisor tool: billed at the advisor model's rates).
_APART = ("compaction", "advisor_message")


# The sampling iterations the top-level usage sums: a model's turns, and the fallback model's last.
_SAMPLED = ("message", "fallback_message")


def _billed(iterations: Any, content: Sequence[Mapping[str, Any]] = ()) -> dict[str, list[dict[str, Any]]]:
    """What of a reply's usage `ModelReply.extra` holds apart: the iterations its top-level counts
    leave out (`BILLED_APART`) and, when a fallback model served the reply (a `fallback_message`
    iteration: Anthropic's server-side fallback), its sampling iterations, each with the model that
    ran it (`BILLED_BY_MODEL`): the declining model's too, which the top-level counts may leave out
    (they can give the answering attempt's alone). An attempt that declined before any output is
    billed as a refusal before any output is (`_declined_unbilled`), by its `fallback` block's trigger."""
    listed = [i for i in iterations if isinstance(i, dict)] if isinstance(iterations, list) else []
    billed = {BILLED_APART: [_part(i) for i in listed if i.get("type") in _APART]}
    if any(i.get("type") == "fallback_message" for i in listed):
        hops = [block for block in content if block.get("type") == "fallback"]
        billed[BILLED_BY_MODEL] = [
            _part(i) | ({NOT_BILLED: True} if _declined_unbilled(i, hops) else {})
            for i in listed
            if i.get("type") in _SAMPLED
        ]
    return {key: parts for key, parts in billed.items() if parts}


def models_named(
    model: str, server_tools: Sequence[Mapping[str, Any]], extra_body: Mapping[str, Any] | None
) -> dict[str, frozenset[str]]:
    """The models a request of `model` names, by the kind of usage part each vouches for: a fallback's
    parts (`BILLED_BY_MODEL`), `model` and each model of its `fallbacks` list (its string form,
    "default", leaves the choice to the API and names none); the parts billed apart (`BILLED_APART`: an
    advisor's answer, a compaction), `model` and each advisor tool's `model`. A part naming another is
    the server's word alone (`with_unasked_marked`): an advisor's model does not vouch for a fallback
    said to be by it, nor a fallback's model for an advisor's answer."""
    fallbacks = (extra_body or {}).get("fallbacks")
    listed = fallbacks if isinstance(fallbacks, list) else []
    tools = [spec for spec in server_tools if str(spec.get("type", "")).startswith("advisor_")]

    def named(models: list[Any]) -> frozenset[str]:
        return frozenset({model, *(m for m in models if isinstance(m, str) and m)})

    return {
        BILLED_BY_MODEL: named([_field(entry, "model") for entry in listed]),
        BILLED_APART: named([spec.get("model") for spec in tools]),
    }


def with_unasked_marked(
    reply: ModelReply, named: Mapping[str, frozenset[str]], fallbacks: bool = True
) -> ModelReply:
    """`reply` with each part of its usage (`BILLED_BY_MODEL`, `BILLED_APART`) that names a model not in
    `named` for its kind (`models_named`: a dated id of one is that one) marked `NAMED_UNASKED`: priced
    by the model asked, as a reply naming another model is, never at a cheaper model a server named; one
    billed apart when an advisor tool names a model, at no less than any model named for it
    (`PRICED_AT_LEAST`: an advisor's answer said to be by a cheap model costs what the advisor asked does).
    When the request asked for no fallback (`fallbacks` False), none can have happened: an attempt said
    to have declined before any output is billed all the same (its `NOT_BILLED` dropped), so that no
    server's word leaves a call's tokens out of the cost ceiling."""
    extra = reply.extra
    if not extra or not (BILLED_BY_MODEL in extra or BILLED_APART in extra):  # most replies
        return reply
    marked = {
        key: [
            _unasked_marked(part, named.get(key, frozenset()), fallbacks or key != BILLED_BY_MODEL)
            for part in extra[key]
        ]
        for key in (BILLED_BY_MODEL, BILLED_APART)
        if key in extra
    }
    if len(asked := sorted(named.get(BILLED_APART, ()))) > 1:  # an advisor tool names a model
        marked[BILLED_APART] = [  # an advisor's answer said to be by another model costs what one asked does
            part | {PRICED_AT_LEAST: asked} if part.get(NAMED_UNASKED) is True else part
            for part in marked.get(BILLED_APART, [])
        ]
    return _replace_reply(reply, extra=extra | marked)


def _unasked_marked(part: dict[str, Any], named: frozenset[str], declined_unbilled: bool) -> dict[str, Any]:
    """`part`, marked `NAMED_UNASKED` when its model is not in `named`, and billed when it says it is not
    (`NOT_BILLED`) unless `declined_unbilled` (the request asked for the fallback it declined before)."""
    model = part.get("model")
    if not declined_unbilled and NOT_BILLED in part:
        part = {k: v for k, v in part.items() if k != NOT_BILLED}
    if not model or any(_same_id(model, asked) for asked in named):
        return part
    return part | {NAMED_UNASKED: True}


def _declined_unbilled(iteration: Mapping[str, Any], hops: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a sampling iteration of a reply a fallback model served is an attempt that declined
    before any output (a `message` with no output: a model that answered, or ran a server tool, wrote
    some) in a category Anthropic does not bill (the refusal billing rule, applied to each attempt).
    Its category is the trigger of the `fallback` block of the model that declined (the only one, or
    the one `from` that model); unknown, the attempt is billed, so a cost is never understated."""
    wrote = _count(iteration, "output_tokens") or "output_tokens" not in iteration
    if iteration.get("type") != "message" or wrote:
        return False
    model = iteration.get("model")
    named = [hop for hop in hops if _same_id(model, _field(hop.get("from"), "model"))]
    hop = named[0] if named else hops[0] if len(hops) == 1 else None
    trigger = hop.get("trigger") if hop is not None else None
    return isinstance(trigger, Mapping) and trigger.get("category") not in _BILLED_REFUSALS


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else None


def _same_id(model: Any, named: Any) -> bool:
    """Whether an iteration's `model` is the one a `fallback` block names (which may be the alias the
    request gave, where the iteration gives the dated id: "claude-opus-4-6", "claude-opus-4-6-20260205")."""
    if not (isinstance(model, str) and isinstance(named, str) and model and named):
        return False
    return _DATE.sub("", model) == _DATE.sub("", named)


_DATE = re.compile(r"-\d{8}$")  # a model id's date


def _part(item: Mapping[str, Any]) -> dict[str, Any]:
    """An iteration's usage as `ModelReply` fields (`input_tokens` counting cache reads and writes
    too, as the reply's own); counts that are no counts are 0."""
    read, write = _count(item, "cache_read_input_tokens"), _count(item, "cache_creation_input_tokens")
    breakdown = item.get("cache_creation")
    part = {
        "input_tokens": _count(item, "input_tokens") + read + write,
        "output_tokens": _count(item, "output_tokens"),
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "cache_creation_1h_input_tokens": _count(
            breakdown if isinstance(breakdown, dict) else {}, "ephemeral_1h_input_tokens"
        ),
    }
    model = item.get("model")
    return part | {"model": model} if isinstance(model, str) and model else part


def _count(item: Mapping[str, Any], field: str) -> int:
    value = item.get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# Usage fields the SDK's stream drops when a `message_delta` gives them (or, `iterations`, always).
_LATE = ("iterations", "speed", "inference_geo", "service_tier")


def _geo(usage: Any) -> dict[str, str]:
    """Where and how fast the call ran, when the usage (an SDK object or a mapping) says: a call run
    US-only (`inference_geo` "us"), in fast mode (`speed` "fast") or by another service tier than
    the standard one (`service_tier` "priority" or "batch") is priced apart (see `Price`)."""
    fields = ("inference_geo", "speed", "service_tier")
    said = {f: usage.get(f) if isinstance(usage, Mapping) else getattr(usage, f, None) for f in fields}
    return {field: value for field, value in said.items() if isinstance(value, str) and value}


def _replace_reply(reply: ModelReply, **changes: Any) -> ModelReply:
    return replace(reply, **changes)


def server_tool_uses(message: types.Message) -> dict[str, int]:
    """Server tool uses by tool name: web searches and fetches as the usage counts them (what is
    billed: a search that failed, or that a cut-off reply never ran, is not), the other tools
    (code execution) by the reply's server_tool_use blocks. A usage that gives no `server_tool_use`
    (a gateway that leaves it out) has its searches and fetches counted by the results that came
    back whole: they ran, and are billed."""
    counts: dict[str, int] = {}
    for block in message.content:
        if isinstance(block, types.ServerToolUseBlock):
            counts[block.name] = counts.get(block.name, 0) + 1
    usage = message.usage.server_tool_use
    if usage is None:
        counts["web_search"], counts["web_fetch"] = _results_back(message.content)
    else:
        counts["web_search"], counts["web_fetch"] = (
            usage.web_search_requests or 0,
            usage.web_fetch_requests or 0,
        )
    return {name: used for name, used in counts.items() if used}


def _results_back(content: Sequence[Any]) -> tuple[int, int]:
    """The web searches and fetches whose results a reply holds (not an error's)."""
    searches = sum(
        1 for b in content if isinstance(b, types.WebSearchToolResultBlock) and isinstance(b.content, list)
    )
    fetches = sum(
        1
        for b in content
        if isinstance(b, types.WebFetchToolResultBlock)
        and getattr(b.content, "type", "") == "web_fetch_result"
    )
    return searches, fetches


# The rate-limit headers' prefixes: the standard limits, fast mode's own, the priority tier's.
_LIMIT_HEADERS = ("anthropic-ratelimit-", "anthropic-fast-", "anthropic-priority-")


def rate_limit_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The rate-limit headers (standard, fast mode, priority tier) and `retry-after` of a reply."""
    return {
        name.lower(): value
        for name, value in headers.items()
        if name.lower().startswith(_LIMIT_HEADERS) or name.lower() == "retry-after"
    }


def content_block(block: types.ContentBlock) -> dict[str, Any]:
    """A reply block as a plain dict that can be sent back as is.

    Text and tool calls keep their own fields and the others the API sent
    (`citations`; `caller`, `toolset_name`), which go back with them; thinking
    blocks keep their signature (the API wants them back unchanged); anything
    else is kept whole as JSON, as the SDK would send it back. The block's `type`
    decides, not its class: the SDK reads a block type it does not know as a
    text block with no text.
    """
    kind = getattr(block, "type", None)
    if kind == "text" and isinstance(block, types.TextBlock):
        text = {"type": "text", "text": block.text}
        return text | _others(block, TEXT_FIELDS) if block.citations or block.model_extra else text
    if kind == "tool_use" and isinstance(block, types.ToolUseBlock):
        arguments = dict(block.input) if isinstance(block.input, dict) else block.input  # checked later
        call = {"type": "tool_use", "id": block.id, "name": block.name, "input": arguments}
        more = block.caller is not None or block.toolset_name is not None or block.model_extra
        return call | _others(block, CALL_FIELDS) if more else call
    if kind == "thinking" and isinstance(block, types.ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if kind == "redacted_thinking" and isinstance(block, types.RedactedThinkingBlock):
        return {"type": "redacted_thinking", "data": block.data}
    return _as_sent(block)


def _as_sent(block: types.ContentBlock) -> dict[str, Any]:
    """A block as the SDK sends a reply's content back (`Message.to_param`): every field the API
    sent, a null too (the API may require one back, as it does a citation's `document_title`)."""
    exclude = getattr(block, "__api_exclude__", None)
    dumped: dict[str, Any] = block.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude=exclude)
    return dumped


def _others(block: types.ContentBlock, known: frozenset[str]) -> dict[str, Any]:
    """The fields of a text or tool_use block besides those the journal types (`citations`;
    `caller`, `toolset_name`; any the SDK does not know yet), to be sent back with it: as the API
    sent them (a citation's `document_title: null` too, which the API requires back), but those
    that say nothing (null, an empty list)."""
    skip = set(known) | set(getattr(block, "__api_exclude__", None) or ())  # what the SDK never sends
    others: dict[str, Any] = block.model_dump(mode="json", exclude_unset=True, exclude=skip)
    return {k: v for k, v in others.items() if v is not None and v != []}


def _truncation_note(tool: str, stop_reason: str) -> str:
    return (
        f"[Endstate: this reply reached {stop_reason} while writing a call of {tool!r}; "
        "the call was cut off and was not run. Make the call again with shorter input, "
        "or split the work into smaller calls.]"
    )


# -- errors ------------------------------------------------------------------


def to_model_error(exc: anthropic.AnthropicError) -> ModelError:
    """The Endstate error for an SDK failure: transient ones are worth a retry."""
    if isinstance(exc, anthropic.RetryableError):  # client middleware asks for another attempt
        return TransientModelError(
            f"Anthropic SDK: another attempt was asked for: {exc}", error_type="retryable"
        )
    if isinstance(exc, anthropic.APITimeoutError):
        return TransientModelError(
            f"Anthropic API: no response within the client timeout ({_where(exc)})", error_type="timeout"
        )
    if isinstance(exc, anthropic.APIConnectionError):
        cause = f": {exc.__cause__}" if exc.__cause__ else ""
        return TransientModelError(
            f"Anthropic API: cannot connect ({_where(exc)}){cause}", error_type="connection"
        )
    if isinstance(exc, anthropic.APIStatusError):
        return _status_error(exc)
    if isinstance(exc, anthropic.APIResponseValidationError):
        return _malformed(exc)
    return ModelError(f"Anthropic SDK: {type(exc).__name__}: {exc}", error_type="api_error")


def _broke_off(exc: BaseException, headers: Mapping[str, str] | None = None) -> ModelError:
    """A stream that began and then failed (its connection broke or stalled): worth a retry, unless its
    `headers` say `x-should-retry: false` (`_told_not_to_retry`). Its `headers`, when it had any, give
    the request id to quote."""
    timed_out = isinstance(exc, httpx2.TimeoutException | anthropic.APITimeoutError)
    text = f"Anthropic API: the stream broke off: {exc!r}{_request_id(headers)}"
    error_type = "timeout" if timed_out else "connection"
    if _told_not_to_retry(headers):
        return ModelError(text + _NOT_RETRIED, error_type=error_type)
    return TransientModelError(text, error_type=error_type)


# What a failure of a stream whose headers said `x-should-retry: false` adds to its note.
_NOT_RETRIED = ": not sent again, as the reply's headers said (x-should-retry: false)"


def _told_not_to_retry(headers: Mapping[str, str] | None) -> bool:
    """Whether a reply's `headers` (a stream that began: its 200's) say not to send the request again
    (`x-should-retry: false`), which the SDK heeds for a body that failed after its headers came (2.17:
    `_should_retry_failure`): a stream that then broke off or sent an `error` event is not retried."""
    return (headers or {}).get("x-should-retry", "").strip().lower() == "false"


def _sdk_cause(exc: BaseException) -> anthropic.AnthropicError | None:
    """The error in `exc`'s chain of causes that the SDK's retry policy reads, as client middleware
    may raise it wrapped: a `RetryableError`, an API status or connection error."""
    seen: set[int] = set()
    cause = exc.__cause__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(
            cause, anthropic.RetryableError | anthropic.APIStatusError | anthropic.APIConnectionError
        ):
            return cause
        cause = cause.__cause__
    return None


def _status_error(exc: anthropic.APIStatusError) -> ModelError:
    status, code, kind = exc.status_code, exc.error_code, _error_kind(exc)
    detail = _clipped(_without_keys(api_words(exc), exc.request))
    text = _status_text(exc, kind, detail)
    if code in _SPEND_LIMITS:  # a 429 that no retry lifts
        return ModelError(f"{text}: {_SPEND_LIMITS[code]}{_SPEND_FIX}", error_type="billing")
    if 300 <= status < 400:
        return ModelError(text + _redirect_fix(exc.response.headers), error_type="redirect")
    if status < 300:  # an error event inside a stream that began well: its type says what it stands for
        status = _STATUS_OF_ERROR.get(kind, 0)
        if not status:  # overloaded, rate limited, a server error: worth a retry, unless told not to
            said = _STREAM_ERRORS.get(kind, "server_error")
            if _told_not_to_retry(exc.response.headers):
                return ModelError(text + _NOT_RETRIED, error_type=said)
            return TransientModelError(text, error_type=said)
    if status == 400 and any(words in detail.lower() for words in _WINDOW_FULL):
        return ModelError(text, error_type=CONTEXT_FULL)  # the loop's history policy shrinks and asks again
    if status == 400 and PAGES_REFUSED in detail.lower():  # a PDF by URL longer than counted: shrink too
        return ModelError(text + PAGES_REFUSED_HINT, error_type=CONTEXT_FULL)
    error_type = _TRANSIENT.get(status) or _PERMANENT.get(status)
    error_type = error_type or ("server_error" if status >= 500 else "api_error")
    if _should_retry(status, exc.response.headers):
        return TransientModelError(text, error_type=error_type, retry_after=retry_after(exc.response.headers))
    return ModelError(text + _how_to_fix(status, code, _sdk_words(exc)), error_type=error_type)


def _redirect_fix(headers: Mapping[str, str]) -> str:
    """What to do about a redirect, which a client the adapter builds does not follow."""
    where = f" to {_clipped(headers.get('location', ''), 200)!r}" if headers.get("location") else ""
    return (
        f": a redirect{where}, not followed (it would take the conversation elsewhere): give base_url "
        "(or ANTHROPIC_BASE_URL) as the URL the API is served at"
    )


def api_words(exc: anthropic.APIStatusError) -> str:
    """What the API said: its error's message, else the body as sent (a proxy's page, JSON without a
    message), else that there was none. Not the SDK's `message`, whose form changes between releases
    (2.17 adds the status, the request id and the path)."""
    if isinstance(exc.api_message, str) and exc.api_message.strip():
        return exc.api_message
    body = exc.body
    if isinstance(body, str | bytes):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return text.strip() or "the API sent no body"
    return "the API sent no body" if body is None else json.dumps(body, ensure_ascii=False, default=str)


# The request headers that carry its credentials: the API key, or the bearer token of an auth token.
_KEY_HEADERS = ("x-api-key", "authorization")
_SHORTEST_KEY = 8  # a header value shorter than this is no secret worth looking for


def _without_keys(words: str, request: httpx2.Request | None) -> str:
    """`words` with the credentials `request` sent written `[REDACTED]`: a proxy's error page may echo
    the headers it got, and an error's words reach the run's note and the log lines that quote it."""
    for name in _KEY_HEADERS:
        secret = (
            (request.headers.get(name, "") if request is not None else "").removeprefix("Bearer ").strip()
        )
        if len(secret) >= _SHORTEST_KEY:
            words = words.replace(secret, "[REDACTED]")
    return words


def _error_kind(exc: anthropic.APIStatusError) -> str:
    """The error's `type` ("" when it gives none, or one that is no string: a proxy's body)."""
    return exc.type if isinstance(exc.type, str) else ""


def _status_text(exc: anthropic.APIStatusError, kind: str, detail: str) -> str:
    """What the API said: the status, the error's type and cause (`details.error_code`), its message."""
    said = " ".join(filter(None, [kind, f"({exc.error_code})" if exc.error_code else ""]))
    request_id = f" (request-id {_clipped(exc.request_id, 100)})" if exc.request_id else ""
    text = f"Anthropic API returned HTTP {exc.status_code}{' ' + said if said else ''}: {detail}{request_id}"
    return visible(text + " (inside the stream)" if exc.status_code < 300 else text)


def _clipped(detail: str, most: int = 500) -> str:
    """An error's text, cut to `most` characters: a proxy's HTML error page can be many kilobytes."""
    return detail if len(detail) <= most else f"{detail[:most]}... ({len(detail) - most:,} more characters)"


def _shown(words: str) -> str:
    """Words from outside (an API's or a proxy's) as an error may quote them: cut (`_clipped`), and
    what a terminal would not show as itself escaped (`visible`): they reach the run's note, the log
    lines that quote the error and the terminals that print them, where an escape sequence could
    rewrite what is shown."""
    return visible(_clipped(words))


def _should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a retry may help: the API's `x-should-retry` header when it says, else the status."""
    said = headers.get("x-should-retry", "").strip().lower()
    if said in ("true", "false"):
        return said == "true"
    return status in _TRANSIENT or status >= 500


def _how_to_fix(status: int, code: str | None = None, sdk_words: str = "") -> str:
    """What to do about a refusal a retry will not fix: for its cause (ours, else the SDK's words for
    it), else for its status. A cause we have no words for gets none: the status's would mislead (a
    404 `file_expired` is no model id to check)."""
    fix = (_CODE_FIXES.get(code) or sdk_words) if isinstance(code, str) else _FIXES.get(status, "")
    return f": {fix}" if fix else ""


def _sdk_words(exc: anthropic.APIStatusError) -> str:
    """What the SDK's class for the error's cause says of it (SDK 2.17 has a class, with a docstring
    that names the cause and often what to do, per `error_code`), in one line; "" for a status's own
    class, which says only the status (a cause's class names its `error_code` itself)."""
    kind = type(exc)
    if "error_code" not in vars(kind).get("__annotations__", {}) or not kind.__doc__:
        return ""
    words = " ".join(kind.__doc__.split())
    return words[:1].lower() + words[1:].rstrip(".")


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date), if given.
    A value that is no number of seconds (negative, `inf`, `nan`, a date past the year 9999) is not
    given. An HTTP date is reckoned from the response's own `date` (the sender's clock, as the date
    was), else from this host's clock: a host whose clock ran a minute ahead of the API's cut a wait
    of 30 s to none, and one a minute behind waited 90 s."""
    try:
        return _seconds(float(headers["retry-after-ms"]) / 1000)
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return _seconds(float(value))
    except ValueError:
        pass
    when = email.utils.parsedate_tz(value)
    try:
        return None if when is None else max(0.0, email.utils.mktime_tz(when) - _sent_at(headers))
    except (ValueError, OverflowError):  # a date no clock holds (the year 99999): no wait given
        return None


def _sent_at(headers: Mapping[str, str]) -> float:
    """When the response was sent, by the clock of its sender: its `date`; this host's time when it
    has none that reads as a time."""
    sent = email.utils.parsedate_tz(headers.get("date") or "")
    try:
        return time.time() if sent is None else float(email.utils.mktime_tz(sent))
    except (ValueError, OverflowError):
        return time.time()


def _seconds(value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"not a number of seconds: {value!r}")
    return value


def _where(exc: anthropic.APIError) -> str:
    return f"{exc.request.method} {exc.request.url}"
