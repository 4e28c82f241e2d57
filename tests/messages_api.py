"""A local HTTP server that speaks the Anthropic Messages API, for tests.

`MessagesAPI` serves `POST /v1/messages` on 127.0.0.1 from a queue of scripted
responses and records every request it receives. Build responses with
`message` (a reply, from `text` and `tool_use` blocks), `error` (an API error
with the API's JSON error shape) and `hang` (a response that never comes in
time). Like the real API, it answers a malformed request with a 400 (or a
401 without credentials) and does not consume a scripted response for it.

    with MessagesAPI() as api:
        api.enqueue(message(tool_use("search", {"q": "x"})), error(529))
        client = anthropic.AsyncAnthropic(base_url=api.url, api_key="test")
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]

# The API's `error.type` for each status it uses.
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class Response:
    """One scripted answer: a status, a JSON body, headers, and a delay before sending."""

    status: int
    body: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request as the server saw it: path, lowercased headers, parsed JSON body."""

    path: str
    headers: dict[str, str]
    body: Any


def text(value: str) -> Block:
    """A text content block."""
    return {"type": "text", "text": value}


_tool_ids = itertools.count(1)


def tool_use(name: str, input: dict[str, Any] | None = None, id: str | None = None) -> Block:
    """A tool_use content block; the id is made up when not given."""
    tool_id = id or f"toolu_{next(_tool_ids):04d}"
    return {"type": "tool_use", "id": tool_id, "name": name, "input": input or {}}


def message(
    *content: Block,
    stop_reason: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read_input_tokens: int | None = None,
    cache_creation_input_tokens: int | None = None,
    model: str | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """A 200 reply. `stop_reason` defaults to `tool_use` when a block calls a tool, else `end_turn`;
    `model` defaults to the model the request named; the server fills in the message id."""
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if cache_read_input_tokens is not None:
        usage["cache_read_input_tokens"] = cache_read_input_tokens
    if cache_creation_input_tokens is not None:
        usage["cache_creation_input_tokens"] = cache_creation_input_tokens
    body = {
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }
    return Response(200, body, dict(headers or {}))


def error(
    status: int, message: str | None = None, *, type: str | None = None, headers: dict[str, str] | None = None
) -> Response:
    """An error reply in the API's shape: `{"type": "error", "error": {"type", "message"}}`."""
    kind = type or ERROR_TYPES.get(status, "api_error")
    body = {"type": "error", "error": {"type": kind, "message": message or HTTPStatus(status).phrase}}
    return Response(status, body, dict(headers or {}))


def hang(seconds: float = 30.0) -> Response:
    """A reply that comes only after `seconds` (or never, once the server stops)."""
    return Response(200, message(text("too late")).body, delay=seconds)


class MessagesAPI:
    """A threaded Messages API server on a free loopback port; use as a context manager.

    `then` is the response given once the queue is empty (for persistent
    failures); without it, an empty queue answers 400 with a message saying so.
    """

    def __init__(self, *responses: Response, then: Response | None = None, validate: bool = True) -> None:
        self._queue: deque[Response] = deque(responses)
        self.then = then
        self.validate = validate
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    # -- lifecycle -------------------------------------------------------

    def start(self) -> MessagesAPI:
        server = self._server = _Server(self)
        serve = threading.Thread(target=server.serve_forever, args=(0.05,), name="messages-api", daemon=True)
        self._thread = serve
        serve.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still waiting (see `hang`) are released without an answer."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for conn in list(self._connections):  # wake handlers waiting on kept-alive connections
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> MessagesAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL to give the SDK (`base_url=`)."""
        assert self._server is not None, "start the server first"
        return f"http://127.0.0.1:{self._server.server_port}"

    # -- script and record -----------------------------------------------

    def enqueue(self, *responses: Response) -> None:
        with self._lock:
            self._queue.extend(responses)

    @property
    def pending(self) -> int:
        """Scripted responses not yet given."""
        with self._lock:
            return len(self._queue)

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the requests received, in order."""
        return [r.body for r in self.requests]

    def _answer(self, received: Received) -> Response:
        with self._lock:
            self.requests.append(received)
            problem = _problem(received) if self.validate else None
            if problem is not None:
                return problem
            if self._queue:
                return self._queue.popleft()
            if self.then is not None:
                return self.then
            return error(400, f"messages_api: no scripted response left for request #{len(self.requests)}")

    def _finished(self, response: Response, request_body: Any) -> dict[str, Any] | None:
        """The body to send, with the message id and model filled in."""
        if response.body is None or response.body.get("type") != "message":
            return response.body
        body = dict(response.body)
        body["id"] = body.get("id") or f"msg_test_{next(self._ids):04d}"
        if body.get("model") is None and isinstance(request_body, dict):
            body["model"] = request_body.get("model", "unknown")
        return body


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, api: MessagesAPI) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.api = api

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up is no error
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "messages-api-test/1"
    protocol_version = "HTTP/1.1"  # keep-alive, as the real API does

    def setup(self) -> None:
        super().setup()
        self.server.api._connections.add(self.connection)

    def finish(self) -> None:
        self.server.api._connections.discard(self.connection)
        super().finish()

    def do_POST(self) -> None:
        api = self.server.api
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw or b"null")
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        response = api._answer(Received(self.path.split("?")[0], headers, body))
        if response.delay and api._stopping.wait(response.delay):
            self.close_connection = True
            return  # stopped while waiting: never answer
        self._send(response.status, api._finished(response, body), response.headers)

    def do_GET(self) -> None:
        self._send(404, error(404, f"messages_api: no route GET {self.path}").body, {})

    def _send(self, status: int, body: dict[str, Any] | None, headers: dict[str, str]) -> None:
        payload = json.dumps(body).encode() if body is not None else b""
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", f"req_test_{len(self.server.api.requests):04d}")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client gave up (its timeout): nothing to answer
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet


# -- the checks the real API makes before answering --------------------------


def _problem(req: Received) -> Response | None:
    """The error the API would answer for this request, or None when it is well formed."""
    if req.path != "/v1/messages":
        return error(404, f"messages_api: no route POST {req.path}")
    if "x-api-key" not in req.headers and "authorization" not in req.headers:
        return error(401, "x-api-key header is required")
    if "anthropic-version" not in req.headers:
        return error(400, "anthropic-version: header is required")
    reason = _body_problem(req.body)
    return error(400, reason) if reason else None


def _body_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: Field required (an integer >= 1)"
    if "system" in body and not isinstance(body["system"], str | list):
        return "system: Input should be a string or a list of text blocks"
    return _tools_problem(body.get("tools", [])) or _messages_problem(body.get("messages"))


def _tools_problem(tools: Any) -> str | None:
    if not isinstance(tools, list):
        return "tools: Input should be a valid list"
    for i, spec in enumerate(tools):
        if not (isinstance(spec, dict) and spec.get("name") and isinstance(spec.get("input_schema"), dict)):
            return f"tools.{i}: a tool needs a name and an input_schema object"
    return None


def _messages_problem(messages: Any) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: the first message must use the user role"
    open_calls: set[str] = set()  # ids of the previous message's tool_use blocks
    for i, msg in enumerate(messages):
        content = msg.get("content")
        if msg.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if not content:
            return f"messages.{i}: all messages must have non-empty content"
        blocks = [content] if isinstance(content, str) else content
        results = {str(b.get("tool_use_id")) for b in _typed(blocks, "tool_result")}
        if unknown := results - open_calls:
            return f"messages.{i}: unexpected tool_use_id found in tool_result blocks: {sorted(unknown)[0]}"
        if msg["role"] == "user" and open_calls - results:
            missing = sorted(open_calls - results)[0]
            return f"messages.{i}: tool_use ids were found without tool_result blocks: {missing}"
        open_calls = {str(b.get("id")) for b in _typed(blocks, "tool_use")}
    return None


def _typed(blocks: list[Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == kind]
