"""The Anthropic Messages API as an Endstate `Model`.

`AnthropicModel` makes one `messages.create` call per attempt through the
official `anthropic` SDK, with the SDK's own retries off: the loop retries
transient failures itself, inside the run's budget (`RetryPolicy`).

Choices worth knowing:
- `input_tokens` counts every input token the request used: uncached input
  plus cache reads plus cache writes, as the GenAI semantic conventions ask.
  The cache parts are also in `reply.extra` (`cache_read_input_tokens`,
  `cache_creation_input_tokens`). A cost budget therefore prices cache reads
  at the full input price: it may stop a run early, never late.
- A reply cut off by `max_tokens` while writing a tool call has that call
  replaced by a text note saying so (`extra["truncated_tool_use"]` names the
  tool): a call with cut-off arguments is never run. The loop then sees a
  reply with no tool call and asks the model to go on.
- Messages with empty content (the API sometimes answers a turn with no
  blocks) are left out of the request, since the API refuses them; the run's
  history keeps them as they were.
- A client this class builds has the SDK's own OpenTelemetry spans off, since
  Endstate's telemetry makes the `chat {model}` span, and keeps no idle
  connections: the sync `Agent.run` gives each run a new event loop, and a
  connection kept from a closed loop gets requests sent twice or leaked. An
  injected client keeps its own settings: inject one only to use it in a
  single event loop (`await agent.arun(...)`).
- A request the SDK refuses to send (a `max_tokens` that needs streaming
  under the default timeout) is a `ModelError("bad_request")`.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

import anthropic
import httpx2
from anthropic import types

from agent.errors import ConfigError, ModelError, TransientModelError
from agent.models.base import Message, ModelReply, ModelRequest

PROVIDER = "anthropic"

# Statuses worth retrying, and the error_type each gets; other 5xx are `server_error`.
_TRANSIENT: dict[int, str] = {408: "timeout", 409: "conflict", 429: "rate_limit", 529: "overloaded"}

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


class AnthropicModel:
    """A Claude model behind the Messages API.

    Pass an `anthropic.AsyncAnthropic` as `client` (its retries are turned off
    in a copy), or `api_key`, `base_url` and `timeout` (seconds) to build one;
    unset, the SDK reads `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`.
    """

    def __init__(
        self,
        model: str,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
    ) -> None:
        if not model:
            raise ConfigError("AnthropicModel needs a model id, e.g. 'claude-sonnet-4-6'")
        if client is not None and (api_key is not None or base_url is not None or timeout is not None):
            raise ConfigError("AnthropicModel: pass either client= or api_key/base_url/timeout, not both")
        self._model = model
        self._owns_client = client is None
        self._client = _new_client(api_key, base_url, timeout) if client is None else _without_retries(client)

    @property
    def name(self) -> str:
        return self._model

    @property
    def provider(self) -> str:
        return PROVIDER

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client the calls go through (retries off)."""
        return self._client

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One Messages API call; SDK failures become `ModelError`/`TransientModelError`."""
        try:
            message = await self._client.messages.create(**self.params(request))
        except anthropic.AnthropicError as exc:
            raise to_model_error(exc) from exc
        except ValueError as exc:  # refused before sending: a max_tokens that needs streaming
            hint = "lower the agent's max_tokens or give AnthropicModel an explicit timeout="
            text = f"Anthropic SDK refused the request ({hint}): {exc}"
            raise ModelError(text, error_type="bad_request") from exc
        return to_reply(message)

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for `request`."""
        params: dict[str, Any] = {
            "model": self._model,
            "max_tokens": request.max_tokens,
            "messages": outgoing_messages(request.messages),
        }
        if request.system:
            params["system"] = request.system
        if request.tools:
            params["tools"] = [dict(spec) for spec in request.tools]
        return params

    async def aclose(self) -> None:
        """Close the HTTP client if this model built it; an injected client is its owner's to close."""
        if self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> AnthropicModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model!r})"


def _new_client(api_key: str | None, base_url: str | None, timeout: float | None) -> anthropic.AsyncAnthropic:
    # No idle connections are kept: a sync `Agent.run` gives each run its own event loop,
    # and a connection kept from a loop that has closed can neither be reused nor closed.
    http = anthropic.DefaultAsyncHttpxClient(limits=httpx2.Limits(max_keepalive_connections=0))
    options: dict[str, Any] = {"max_retries": 0, "open_telemetry": False, "http_client": http}
    if timeout is not None:
        options["timeout"] = timeout
    try:
        client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, **options)
    except anthropic.AnthropicError as exc:  # e.g. a configured profile that cannot be read
        raise ConfigError(f"AnthropicModel cannot build its client: {exc}") from exc
    if not (client.api_key or client.auth_token or client.credentials):
        raise ConfigError("AnthropicModel has no credentials: pass api_key= or set ANTHROPIC_API_KEY")
    return client


def _without_retries(client: anthropic.AsyncAnthropic) -> anthropic.AsyncAnthropic:
    return client if client.max_retries == 0 else client.with_options(max_retries=0)


# -- request -----------------------------------------------------------------


def outgoing_messages(messages: list[Message]) -> list[Message]:
    """The history as the API takes it: messages with empty content are left out."""
    return [m for m in messages if m.get("content")]


# -- reply -------------------------------------------------------------------


def to_reply(message: types.Message) -> ModelReply:
    """A `ModelReply` from an SDK `Message`."""
    content = [content_block(b) for b in message.content]
    extra: dict[str, Any] = {}
    stop_reason = message.stop_reason or "end_turn"
    if stop_reason == "max_tokens" and content and content[-1].get("type") == "tool_use":
        cut = content.pop()
        content.append({"type": "text", "text": _truncation_note(cut["name"])})
        extra["truncated_tool_use"] = cut["name"]
    usage = message.usage
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    if cache_read or cache_write:
        extra |= {"cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write}
    if message.stop_sequence:
        extra["stop_sequence"] = message.stop_sequence
    return ModelReply(
        content=content,
        input_tokens=usage.input_tokens + cache_read + cache_write,
        output_tokens=usage.output_tokens,
        stop_reason=stop_reason,
        model=message.model,
        response_id=message.id,
        extra=extra,
    )


def content_block(block: types.ContentBlock) -> dict[str, Any]:
    """A reply block as a plain dict that can be sent back as is.

    Text and tool calls keep only what the loop needs; thinking blocks keep
    their signature (the API wants them back unchanged); anything else is kept
    whole as JSON.
    """
    if isinstance(block, types.TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, types.ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
    if isinstance(block, types.ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, types.RedactedThinkingBlock):
        return {"type": "redacted_thinking", "data": block.data}
    dumped: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    return dumped


def _truncation_note(tool: str) -> str:
    return (
        f"[Endstate: this reply reached max_tokens while writing a call of {tool!r}; "
        "the call was cut off and was not run. Make the call again with shorter input, "
        "or split the work into smaller calls.]"
    )


# -- errors ------------------------------------------------------------------


def to_model_error(exc: anthropic.AnthropicError) -> ModelError:
    """The Endstate error for an SDK failure: transient ones are worth a retry."""
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
    return ModelError(f"Anthropic SDK: {type(exc).__name__}: {exc}", error_type="api_error")


def _status_error(exc: anthropic.APIStatusError) -> ModelError:
    status = exc.status_code
    api_type = f" {exc.type}" if exc.type else ""
    detail = exc.api_message or exc.message
    request_id = f" (request-id {exc.request_id})" if exc.request_id else ""
    text = f"Anthropic API returned HTTP {status}{api_type}: {detail}{request_id}"
    if status in _TRANSIENT or status >= 500:
        error_type = _TRANSIENT.get(status, "server_error")
        return TransientModelError(text, error_type=error_type, retry_after=retry_after(exc.response.headers))
    return ModelError(text, error_type=_PERMANENT.get(status, "api_error"))


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date), if given."""
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    when = email.utils.parsedate_tz(value)
    return None if when is None else max(0.0, email.utils.mktime_tz(when) - time.time())


def _where(exc: anthropic.APIError) -> str:
    return f"{exc.request.method} {exc.request.url}"
