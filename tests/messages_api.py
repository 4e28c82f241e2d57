"""A local HTTP server that speaks the Anthropic Messages API, for tests.

`MessagesAPI` serves `POST /v1/messages` on 127.0.0.1 from a queue of scripted
responses and records every request it receives. Build responses with
`message` (a reply, from `text` and `tool_use` blocks), `error` (an API error
with the API's JSON error shape), `hang` (a response that never comes in
time), `malformed` (a 200 whose body cannot be read), `not_streamed` (a reply
sent whole as JSON to a request that asked for a stream), `dropped` (a stream whose
connection breaks mid-way), `stream_error` (a stream that begins, then
sends an error event), `flood` (a well-formed stream of as many deltas as
asked, of text or another kind, or of empty blocks, as fast as read, counted in
`flood_sent`) and `endless_event` (a stream one of whose events never ends: its
`data:` lines, or one `data:` line, go on as fast as read, counted in
`endless_sent`). Like the real API, it answers
a malformed request with a 400 (or a 401 without credentials) and does not
consume a scripted response for it.

A request with `"stream": true` is answered with server-sent events, as the
API streams. A reply built with `input_tokens=None` gets the usage the real
API would report: input tokens counted from the request (about 4 characters
a token, a base64 PDF by its pages as the API counts it), and prompt-cache
reads and writes computed from the cache breakpoints and the prefixes this
server has seen. The server counts the TCP connections it accepts
(`connections`), and serves `GET /v1/models/{id}` for the ids in `models`.
A request naming a container in `expired_containers` is refused
(`container_expired`); so is a body over 32 MB (413), an image of more than
10 MB of base64, or more than 100 PDF pages in a request
(`max_request_bytes`, `max_image_base64`, `pdf_pages`; the pages of a PDF at
a URL, which the API fetches and this server cannot, are the test's to give
in `url_pdf_pages`, else one). A compaction block streams its summary as
`compaction_delta` events, and the usage's `iterations` come at the end.

    with MessagesAPI() as api:
        api.enqueue(message(tool_use("search", {"q": "x"})), error(529))
        client = anthropic.AsyncAnthropic(base_url=api.url, api_key="test")
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import itertools
import json
import re
import socket
import sys
import threading
import time
import urllib.parse
import zlib
from collections import deque
from collections.abc import Callable, Iterator
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
    """One scripted answer: a status, a JSON body, headers, and a delay before sending.

    `stream_delay` is a pause between the events of a streamed reply;
    `malformed` names a way to break a 200 reply (see `malformed`);
    `usage_from_request` has the server compute the usage (see `message`).
    """

    status: int
    body: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    stream_delay: float = 0.0
    malformed: str | None = None
    usage_from_request: bool = False
    events: tuple[tuple[str, Any], ...] | None = None
    chunk_bytes: int | None = None
    flood: tuple[int, int] | None = None  # (deltas, characters each): see `flood`
    flood_kind: str = "text_delta"  # what a flood streams: one of `FLOOD_KINDS`
    endless: tuple[int | None, int] | None = None  # (bytes a data line, most bytes): see `endless_event`


@dataclass(frozen=True)
class Received:
    """One request as the server saw it: path, lowercased headers, parsed JSON body."""

    path: str
    headers: dict[str, str]
    body: Any
    size: int = 0  # bytes of the body as sent


def text(value: str) -> Block:
    """A text content block."""
    return {"type": "text", "text": value}


_tool_ids = itertools.count(1)


def tool_use(name: str, input: dict[str, Any] | None = None, id: str | None = None) -> Block:
    """A tool_use content block; the id is made up when not given."""
    tool_id = id or f"toolu_{next(_tool_ids):04d}"
    return {"type": "tool_use", "id": tool_id, "name": name, "input": input or {}}


def fallback_block(declined: str, serving: str, category: str | None = "cyber") -> Block:
    """The `fallback` block a server-side fallback writes where `serving` took over from `declined`."""
    return {
        "type": "fallback",
        "from": {"model": declined},
        "to": {"model": serving},
        "trigger": {"type": "refusal", "category": category},
    }


def iteration(kind: str, input_tokens: int, output_tokens: int, **more: Any) -> dict[str, Any]:
    """One entry of `usage.iterations` (no cache tokens); `more` adds fields such as `model`."""
    counts = {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    return {"type": kind, "input_tokens": input_tokens, "output_tokens": output_tokens, **counts, **more}


def message(
    *content: Block,
    stop_reason: str | None = None,
    input_tokens: int | None = 10,
    output_tokens: int = 5,
    cache_read_input_tokens: int | None = None,
    cache_creation_input_tokens: int | None = None,
    model: str | None = None,
    headers: dict[str, str] | None = None,
    usage: dict[str, Any] | None = None,
    stop_details: dict[str, Any] | None = None,
    stream_delay: float = 0.0,
    container: dict[str, Any] | None = None,
) -> Response:
    """A 200 reply. `stop_reason` defaults to `tool_use` when a block calls a tool, else `end_turn`;
    `model` defaults to the model the request named; the server fills in the message id.
    `container` is the code execution container the reply ran in (`{"id", "expires_at"}`), which
    the API reports when a container tool ran.

    `input_tokens=None` has the server compute the input and cache usage from
    the request, as the API would; `usage` adds fields to the reported usage.
    """
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    reported: dict[str, Any] = {"input_tokens": input_tokens or 0, "output_tokens": output_tokens}
    if cache_read_input_tokens is not None:
        reported["cache_read_input_tokens"] = cache_read_input_tokens
    if cache_creation_input_tokens is not None:
        reported["cache_creation_input_tokens"] = cache_creation_input_tokens
    body = {
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": reported | (usage or {}),
    }
    if stop_details is not None:
        body["stop_details"] = stop_details
    if container is not None:
        body["container"] = container
    return Response(
        200, body, dict(headers or {}), stream_delay=stream_delay, usage_from_request=input_tokens is None
    )


def error(
    status: int, message: str | None = None, *, type: str | None = None, headers: dict[str, str] | None = None
) -> Response:
    """An error reply in the API's shape: `{"type": "error", "error": {"type", "message"}}`."""
    kind = type or ERROR_TYPES.get(status, "api_error")
    body = {"type": "error", "error": {"type": kind, "message": message or HTTPStatus(status).phrase}}
    return Response(status, body, dict(headers or {}))


def container_expired(container_id: str) -> Response:
    """The refusal of a request naming an expired code execution container. The docs say such a
    container cannot be reused, not the error's words: these are made up, in the API's shape."""
    return error(400, f"container: {container_id} has expired and can no longer be used")


def hang(seconds: float = 30.0) -> Response:
    """A reply that comes only after `seconds` (or never, once the server stops)."""
    return Response(200, message(text("too late")).body, delay=seconds)


MALFORMED_KINDS = ("not_json", "bad_event", "cut_short", "wrong_shape")


def malformed(kind: str = "not_json") -> Response:
    """A 200 reply whose body cannot be read.

    `not_json`: the body is not JSON (nor events); `bad_event`: a streamed
    event's data is not JSON; `cut_short`: the stream ends after
    `message_start`; `wrong_shape`: `message_start` carries no message.
    """
    if kind not in MALFORMED_KINDS:
        raise ValueError(f"malformed: kind must be one of {MALFORMED_KINDS}")
    return Response(200, message(text("unreadable")).body, malformed=kind)


def html_error(status: int, size: int = 60_000) -> Response:
    """An HTML error page (a proxy's or load balancer's, not the API's JSON), `size` bytes long."""
    return Response(
        status,
        {"html": "<html><body>" + "bad gateway " * (size // 12) + "</body></html>"},
        malformed="not_json",
    )


def not_streamed(response: Response) -> Response:
    """`response` (a `message`) sent whole as JSON even to a request that asked for a stream, as a
    gateway that does not stream answers."""
    return dataclasses.replace(response, malformed="not_streamed")


def dropped() -> Response:
    """A stream whose connection breaks after the first block's text (no closing chunk)."""
    return Response(200, message(text("the first half of a reply " * 8)).body, malformed="dropped")


def stream_error(kind: str = "overloaded_error", message_text: str = "Overloaded") -> Response:
    """A stream that begins well, then sends an `error` event (as the API does when overloaded mid-way)."""
    body = {"type": "error", "error": {"type": kind, "message": message_text}}
    return Response(200, message(text("partial")).body, malformed="error_event:" + json.dumps(body))


def streamed(*events: tuple[str, Any], chunk_bytes: int | None = None) -> Response:
    """A 200 stream of exactly these server-sent events (`(event, data)`; see `events_of`), its
    bytes sent in pieces of `chunk_bytes` when given (cut anywhere: mid-line, mid-UTF-8)."""
    return Response(200, None, events=tuple(events), chunk_bytes=chunk_bytes)


def flood(deltas: int, size: int, output_tokens: int = 5, kind: str = "text_delta") -> Response:
    """A well-formed streamed reply of one text block of `deltas` text deltas of `size` characters
    each (made as they are sent, never held whole), then its end, counting `output_tokens`: a broken
    proxy or a hostile endpoint streaming for ever, fast. `MessagesAPI.flood_sent` counts the deltas
    sent (to a client that cut the stream: about those it read, and what the sockets buffered).

    `kind` streams another delta into the block it is for (`FLOOD_KINDS`): a thinking block's
    `signature_delta`, a text block's `citations_delta` (each citing `size` characters), a
    compaction block's `compaction_delta`, a `later_delta` into a `later_block` (types the SDK does
    not know, as a later API may add); `blocks` streams `deltas` empty text blocks after the first
    (each begun and stopped), `message_delta` repeats the reply's `message_delta` `deltas` times,
    `later_event` sends `deltas` events of a type a later API might add before the first block."""
    if kind not in FLOOD_KINDS:
        raise ValueError(f"flood: kind must be one of {sorted(FLOOD_KINDS)}")
    block = FLOOD_KINDS[kind][0]
    body = message(block, output_tokens=output_tokens).body
    return Response(200, body, flood=(deltas, size), flood_kind=kind)


def endless_event(line: int | None, most: int) -> Response:
    """A reply that begins well (its `message_start`, a text block begun), then sends a
    `content_block_delta` event that never ends: `data:` lines of `line` bytes each (their newline
    counted; at least 8) with no blank line after them, or with `line=None` one `data:` line that never
    ends, as fast as read, until `most` bytes of it have gone (then the body ends): a broken proxy or a
    hostile endpoint. `MessagesAPI.endless_sent` counts the bytes of it sent (to a client that cut the
    stream: about those it read, and what the sockets buffered)."""
    if line is not None and line < 8:
        raise ValueError("endless_event: a data line takes at least 8 bytes ('data: x' and its newline)")
    return Response(200, message(text("")).body, endless=(line, most))


def _citation(cited: str) -> Block:
    return {
        "type": "char_location",
        "cited_text": cited,
        "document_index": 0,
        "document_title": None,
        "start_char_index": 0,
        "end_char_index": len(cited),
    }


# What each kind of `flood` streams: the block it streams into, and the delta made of a piece (None:
# not a delta, see `flood`).
FLOOD_KINDS: dict[str, tuple[Block, Callable[[str], Block] | None]] = {
    "text_delta": (text(""), lambda piece: _delta("text_delta", text=piece)),
    "signature_delta": (
        {"type": "thinking", "thinking": "", "signature": "sig"},
        lambda piece: _delta("signature_delta", signature=piece),
    ),
    "citations_delta": (text(""), lambda piece: _delta("citations_delta", citation=_citation(piece))),
    "compaction_delta": (
        {"type": "compaction", "content": None},
        lambda piece: _delta("compaction_delta", content=piece),
    ),
    "later_delta": ({"type": "later_block"}, lambda piece: _delta("later_delta", data=piece)),
    "blocks": (text(""), None),
    "message_delta": (text(""), None),
    "later_event": (text(""), None),
}


def events_of(
    response: Response, model: str = "claude-test", id: str = "msg_scripted"
) -> list[tuple[str, Any]]:
    """The events the server would stream for `response` (a `message`), to change before `streamed`."""
    assert response.body is not None
    return stream_events({**response.body, "id": id, "model": response.body.get("model") or model})


class MessagesAPI:
    """A threaded Messages API server on a free loopback port; use as a context manager.

    `then` is the response given once the queue is empty (for persistent
    failures); without it, an empty queue answers 400 with a message saying so.
    `intercept(body)` may answer a request before the queue does (say, the one
    request of a run that asks for a summary): a response, or None to go on.
    """

    def __init__(
        self,
        *responses: Response,
        then: Response | None = None,
        validate: bool = True,
        models: dict[str, dict[str, Any]] | None = None,
        context_window: int | None = None,
        intercept: Callable[[Any], Response | None] | None = None,
    ) -> None:
        self._queue: deque[Response] = deque(responses)
        self.intercept = intercept
        self.context_window = context_window  # a longer prompt is refused, as the API refuses it
        self.then = then
        self.validate = validate
        self.models = dict(models or {})
        self.keys: set[str] | None = None  # when set, only these API keys are accepted
        self.expired_containers: set[str] = set()  # a request naming one is refused (`container_expired`)
        self.max_request_bytes = MAX_REQUEST_BYTES  # a larger body is refused (413), as the API refuses it
        self.max_image_base64 = MAX_IMAGE_BASE64  # a longer image is refused (Bedrock and Vertex: 5 MB)
        self.pdf_pages = PDF_PAGES  # more PDF pages in a request are refused (600 on larger windows)
        # The pages of the PDFs at these URLs, which the API would fetch and this server cannot (a PDF
        # at another URL counts as one page; a URL's PDF is not priced in tokens, only its JSON is).
        self.url_pdf_pages: dict[str, int] = {}
        self.requests: list[Received] = []
        self.bedrock: list[Received] = []  # Amazon Bedrock's requests as sent (`as_messages_api` read them)
        self.usages: list[dict[str, Any]] = []  # the usage reported for each reply, in order
        self.connections = 0  # TCP connections accepted since start
        self.clock_off = 0.0  # seconds the server's clock (its responses' `date`) is off this host's
        self.cache = PromptCache()
        # As Claude Fable 5.1 and the later models check (preserved thinking): a thinking block is
        # bound to the system prompt, tools and messages it was written after, and a request that
        # sends it back after any of them changed is refused, unless it asks the API to drop such
        # blocks (`thinking.block_binding`, with its beta header); `dropped_thinking` counts them.
        self.bind_thinking = False
        self.dropped_thinking = 0
        self.flood_sent = 0  # text deltas of `flood` replies sent, all streams together
        self.endless_sent = 0  # bytes of `endless_event` replies' endless events sent, all streams together
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

    @property
    def open_connections(self) -> int:
        """Connections accepted and not yet closed."""
        return len(self._connections)

    def settled_connections(self, within: float = 10.0) -> int:
        """Open connections once the server has seen the client's closes: a handler notices a
        closed connection on its own thread, a moment after the client closed it. Waits up to
        `within` seconds for none to be open, then returns how many still are."""
        deadline = time.monotonic() + within
        while self._connections and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(self._connections)

    def received(self, count: int, within: float = 60.0) -> int:
        """How many requests the server has read once it has read `count` (or `within` seconds passed):
        a handler reads a request on its own thread, maybe after the client that sent it gave up."""
        deadline = time.monotonic() + within
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(self.requests)

    def _answer(self, received: Received) -> Response:
        with self._lock:
            self.requests.append(received)
            problem = _problem(received) if self.validate else None
            problem = problem or self._key_problem(received) or self._too_long(received)
            problem = problem or self._media_problem(received)
            problem = problem or self._container_gone(received)
            problem = problem or self._binding_problem(received)
            if problem is not None:
                return problem
            if self.intercept is not None and (answer := self.intercept(received.body)) is not None:
                return answer
            if self._queue:
                return self._queue.popleft()
            if self.then is not None:
                return self.then
            return error(400, f"messages_api: no scripted response left for request #{len(self.requests)}")

    def _too_long(self, req: Received) -> Response | None:
        if self.context_window is None or not isinstance(req.body, dict):
            return None
        prompt = count_tokens({k: req.body.get(k) for k in ("system", "tools", "messages")})
        if prompt <= self.context_window:
            return None
        return error(400, f"prompt is too long: {prompt} tokens > {self.context_window} maximum")

    def _media_problem(self, req: Received) -> Response | None:
        """The API's refusal of a request over its size, of an image over its size, or of more PDF
        pages than a request takes."""
        if req.size > self.max_request_bytes:
            return error(413, "Request exceeds the maximum allowed number of bytes.")
        messages = req.body.get("messages") if isinstance(req.body, dict) else None
        if not (isinstance(messages, list) and all(isinstance(m, dict) for m in messages)):
            return None
        blocks = list(_all_blocks(messages))
        for block in blocks:
            size = len(_base64_data(block))
            if block.get("type") == "image" and size > self.max_image_base64:
                most = self.max_image_base64
                return error(400, f"image exceeds {most // 2**20} MB maximum: {size} bytes > {most} bytes")
        pages = sum(self._pages(b) for b in blocks if b.get("type") == "document")
        if pages > self.pdf_pages:
            return error(400, f"A maximum of {self.pdf_pages} PDF pages may be provided.")
        return None

    def _pages(self, document: dict[str, Any]) -> int:
        """A PDF document's pages: a base64 one's counted, a URL's from `url_pdf_pages`."""
        source = document.get("source")
        if isinstance(source, dict) and source.get("type") == "url":
            return self.url_pdf_pages.get(str(source.get("url")), 1)
        return _pdf_page_objects(document)

    def _container_gone(self, req: Received) -> Response | None:
        """The refusal of a request naming a container that has expired (Anthropic's docs: "A container
        that has expired can't be reused. Send the request again without the `container` parameter")."""
        container = req.body.get("container") if isinstance(req.body, dict) else None
        named = container.get("id") if isinstance(container, dict) else container
        if named is None or named not in self.expired_containers:
            return None
        return container_expired(named)

    def _binding_problem(self, req: Received) -> Response | None:
        """The API's refusal of a thinking block sent back after what came before it changed (or of a
        `block_binding` without its beta header); with `drop_block` asked for, such blocks are dropped."""
        if not self.bind_thinking or not isinstance(req.body, dict):
            return None
        thinking = req.body.get("thinking")
        binding = thinking.get("block_binding") if isinstance(thinking, dict) else None
        drop = isinstance(binding, dict) and binding.get("prefix_mismatch_behavior") == "drop_block"
        if binding is not None and BINDING_BETA not in req.headers.get("anthropic-beta", ""):
            return error(
                400,
                f"thinking.block_binding: requires the `{BINDING_BETA}` value in the `anthropic-beta` header",
            )
        mismatched = _mismatched_thinking(req.body)
        if mismatched and not drop:
            return error(400, f"{mismatched[0]}: {BOUND_ELSEWHERE}")
        self.dropped_thinking += len(mismatched)
        return None

    def _key_problem(self, req: Received) -> Response | None:
        key = req.headers.get("x-api-key") or req.headers.get("authorization", "").removeprefix("Bearer ")
        if self.keys is not None and key not in self.keys:
            return error(401, "invalid x-api-key")
        return None

    def _finished(self, response: Response, request_body: Any) -> dict[str, Any] | None:
        """The body to send, with the message id, model and (when asked) usage filled in."""
        if response.body is None or response.body.get("type") != "message":
            return response.body
        body = dict(response.body)
        body["id"] = body.get("id") or f"msg_test_{next(self._ids):04d}"
        if body.get("model") is None and isinstance(request_body, dict):
            body["model"] = request_body.get("model", "unknown")
        if self.bind_thinking and isinstance(request_body, dict):
            body["content"] = _bound(body["content"], request_body)
        if response.usage_from_request and isinstance(request_body, dict):
            with self._lock:
                body["usage"] = {**body["usage"], **self.cache.usage(request_body)}
        with self._lock:  # a usage that is no object (a test's broken reply) is sent as it is, not counted
            self.usages.extend([dict(body["usage"])] if isinstance(body.get("usage"), dict) else [])
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
        with self.server.api._lock:
            self.server.api.connections += 1
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
        received = Received(self.path.split("?")[0], headers, body, len(raw))
        bedrock = as_messages_api(received)
        if bedrock is not None:
            with api._lock:
                api.bedrock.append(received)
            received, body = bedrock, bedrock.body
        response = api._answer(received)
        if response.delay and api._stopping.wait(response.delay):
            self.close_connection = True
            return  # stopped while waiting: never answer
        streamed = isinstance(body, dict) and body.get("stream") is True and response.status == 200
        if response.malformed == "not_json":
            self._send_raw(response.status, _html(response), "text/html", response.headers)
        elif response.malformed == "not_streamed":  # a gateway that answers every request whole, as JSON
            self._send(response.status, api._finished(response, body), response.headers)
        elif streamed:
            self._send_events(response, api._finished(response, body) or {}, aws=bedrock is not None)
        else:
            self._send(response.status, api._finished(response, body), response.headers)

    def do_GET(self) -> None:
        api = self.server.api
        path = self.path.split("?")[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        received = Received(path, headers, None)
        with api._lock:
            api.requests.append(received)
        model_id = path.removeprefix("/v1/models/")
        if (refused := api._key_problem(received)) is not None:
            self._send(refused.status, refused.body, {})
        elif path.startswith("/v1/models/") and model_id in api.models:
            self._send(200, model_info(model_id, **api.models[model_id]), {})
        elif path.startswith("/v1/models/"):
            self._send(404, error(404, f"model: {model_id}", type="not_found_error").body, {})
        else:
            self._send(404, error(404, f"messages_api: no route GET {self.path}").body, {})

    def _send_events(self, response: Response, body: dict[str, Any], aws: bool = False) -> None:
        """The reply as the API streams it: message_start, each block, message_delta, message_stop (as
        Amazon Bedrock streams them with `aws`: each event's JSON in a frame of AWS's event stream)."""
        encode = _aws_frame if aws else _sse
        try:
            self.send_response(200)
            self.send_header(
                "content-type", "application/vnd.amazon.eventstream" if aws else "text/event-stream"
            )
            self.send_header("request-id", f"req_test_{len(self.server.api.requests):04d}")
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("transfer-encoding", "chunked")  # so the connection stays open after it
            self.end_headers()
            scripted = list(response.events) if response.events is not None else None
            sent: Any = scripted if scripted is not None else stream_events(body, response.malformed)
            if response.flood is not None:
                sent = self._flood_events(sent, *response.flood, response.flood_kind)
            if response.endless is not None:  # the events up to the first block's start, then the endless one
                sent = sent[: 1 + next(i for i, (e, _) in enumerate(sent) if e == "content_block_start")]
            if response.chunk_bytes:  # the same bytes, cut into pieces anywhere (mid-line, mid-UTF-8)
                self._chunked(b"".join(encode(e, d) for e, d in sent), response.chunk_bytes)
                sent = []
            for i, (event, data) in enumerate(sent):
                if i and response.stream_delay and self.server.api._stopping.wait(response.stream_delay):
                    self.close_connection = True
                    return
                if response.malformed == "dropped" and event == "content_block_stop":
                    self.close_connection = True  # the connection breaks mid-stream: no closing chunk
                    return
                self._chunk(encode(event, data))
            if response.endless is not None:
                self._endless_event(*response.endless)
            self._chunk(b"")
        except OSError:  # the client went away mid-stream (its time budget)
            self.close_connection = True

    def _endless_event(self, line: int | None, most: int) -> None:
        """A `content_block_delta` event that never ends (`endless_event`): `most` bytes of it after its
        `event:` line, in writes of about 64 KiB, each counted in `endless_sent` once written."""
        self._chunk(b"event: content_block_delta\n")
        if line is None:
            self._chunk(b"data: ")
            piece = b"x" * 2**16
        else:
            piece = (b"data: " + b"x" * (line - 7) + b"\n") * max(1, 2**16 // line)
        sent = 0
        while sent < most:
            part = piece[: most - sent]
            self._chunk(part)
            sent += len(part)
            with self.server.api._lock:
                self.server.api.endless_sent += len(part)

    def _flood_events(
        self, events: list[tuple[str, Any]], deltas: int, size: int, kind: str = "text_delta"
    ) -> Iterator[tuple[str, Any]]:
        """`events` (a message of one block, empty) with `deltas` deltas of `kind` (`FLOOD_KINDS`) of
        `size` characters streamed into that block, each made as it is sent and counted in
        `flood_sent`; or as many empty blocks after it, `message_delta` events or events of a later
        API, as `flood` says."""
        piece = ("all work and no play " * (size // 21 + 1))[:size]
        make = FLOOD_KINDS[kind][1]
        for event, data in events:
            if make is not None and event == "content_block_stop":
                for _ in range(deltas):
                    delta = make(piece)
                    yield ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
                    self._flooded()
            if kind == "blocks" and event == "message_delta":
                for index in range(1, deltas + 1):
                    yield (
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": text("")},
                    )
                    yield ("content_block_stop", {"type": "content_block_stop", "index": index})
                    self._flooded()
            if kind == "message_delta" and event == "message_delta":
                for _ in range(deltas):
                    yield event, data
                    self._flooded()
            if kind == "later_event" and event == "content_block_start":
                for _ in range(deltas):
                    yield ("later_event", {"type": "later_event", "data": piece})
                    self._flooded()
            yield event, data

    def _flooded(self) -> None:
        with self.server.api._lock:
            self.server.api.flood_sent += 1

    def _chunked(self, data: bytes, size: int) -> None:
        for i in range(0, len(data), size):
            self._chunk(data[i : i + size])

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_raw(self, status: int, payload: bytes, content_type: str, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

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

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The `date` of a response: by the server's clock (`MessagesAPI.clock_off`)."""
        now = time.time() + self.server.api.clock_off if timestamp is None else timestamp
        return super().date_time_string(now)


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
    problem = _tools_problem(body.get("tools", [])) or _messages_problem(body.get("messages"))
    messages = body["messages"]
    problem = problem or _container_problem(body) or _citations_problem(messages) or _images_problem(messages)
    return problem or _references_problem(body)


def _references_problem(body: dict[str, Any]) -> str | None:
    """The API's refusal (`tool_reference_unresolved`) of a tool_reference to a tool the request does
    not define."""
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    for block in _all_blocks(body["messages"]):
        if block.get("type") == "tool_reference" and block.get("tool_name") not in names:
            return (
                f"tool_reference: no tool named {block.get('tool_name')!r} is defined in the request's tools"
            )
    return None


# The API's words for a request that leaves out the container while code in it waits for tool results.
PENDING_WITHOUT_CONTAINER = (
    "container_id is required when there are pending tool uses generated by code execution with tools."
)


def _container_problem(body: dict[str, Any]) -> str | None:
    """The API's refusal of a request that answers tool calls made by code the code execution tool
    runs (programmatic tool calling: a `caller` of a code execution type) without naming the
    container that code waits in (the `container` parameter: its id, or `{"id": ...}`)."""
    container = body.get("container")
    if container is not None and not isinstance(container, str | dict):
        return "container: Input should be a valid string or an object"
    named = container if isinstance(container, str) else (container or {}).get("id")
    skills = container.get("skills") if isinstance(container, dict) else None
    if skills and not any(
        str(t.get("type", "")).startswith("code_execution") for t in body.get("tools") or []
    ):
        return "container.skills: skills require the code execution tool"
    assistant = [m for m in body["messages"] if m.get("role") == "assistant"]
    content = assistant[-1].get("content") if assistant else None
    blocks = content if isinstance(content, list) else []
    if not named and any(_programmatic(b) for b in _typed(blocks, "tool_use")):
        return PENDING_WITHOUT_CONTAINER
    return None


def _programmatic(block: dict[str, Any]) -> bool:
    """A tool call made by code the code execution tool runs, not by the model itself."""
    caller = block.get("caller")
    return isinstance(caller, dict) and str(caller.get("type", "")).startswith("code_execution")


def _tools_problem(tools: Any) -> str | None:
    if not isinstance(tools, list):
        return "tools: Input should be a valid list"
    for i, spec in enumerate(tools):
        if not (isinstance(spec, dict) and spec.get("name")):
            return f"tools.{i}: a tool needs a name"
        server_tool = spec.get("type") not in (None, "custom")
        if not server_tool and not isinstance(spec.get("input_schema"), dict):
            return f"tools.{i}: a tool needs a name and an input_schema object"
    names = [spec["name"] for spec in tools]
    if len(set(names)) < len(names):  # a server tool's name is fixed by its type: "web_search", ...
        return "tools: Tool names must be unique."
    return None


def _messages_problem(messages: Any) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: the first message must use the user role"
    open_calls: set[str] = set()  # ids of the previous message's tool_use blocks
    call_ids: set[str] = set()  # ids of every tool_use block so far
    for i, msg in enumerate(messages):
        content = msg.get("content")
        if msg.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if not content:
            return f"messages.{i}: all messages must have non-empty content"
        blocks = [content] if isinstance(content, str) else content
        if problem := _blocks_problem(blocks, i) or _call_ids_problem(blocks, i, call_ids):
            return problem
        paused = i == len(messages) - 1  # a reply paused (pause_turn) mid-call is sent back to go on
        if not paused and (unanswered := _server_calls_without_results(blocks)):
            return (
                f"messages.{i}: server tool use ids were found without result blocks after them: {unanswered}"
            )
        results = {str(b.get("tool_use_id")) for b in _typed(blocks, "tool_result")}
        if unknown := results - open_calls:
            return f"messages.{i}: unexpected tool_use_id found in tool_result blocks: {sorted(unknown)[0]}"
        if msg["role"] == "user" and open_calls - results:
            missing = sorted(open_calls - results)[0]
            return f"messages.{i}: tool_use ids were found without tool_result blocks: {missing}"
        open_calls = {str(b.get("id")) for b in _typed(blocks, "tool_use")}
    return None


# The API's pattern for a tool_use block's id (its words for one that does not match it).
CALL_ID = re.compile(r"[a-zA-Z0-9_-]+")


def _call_ids_problem(blocks: list[Any], i: int, seen: set[str]) -> str | None:
    """The API's refusal of a tool_use id of other characters than its pattern allows, or of one an
    earlier tool_use block of the request has (in any message); `seen` gathers the ids."""
    for j, block in enumerate(blocks):
        if not (isinstance(block, dict) and block.get("type") == "tool_use"):
            continue
        call_id = block.get("id")
        if not (isinstance(call_id, str) and CALL_ID.fullmatch(call_id)):
            return f"messages.{i}.content.{j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
        if call_id in seen:
            return f"messages.{i}.content.{j}: `tool_use` ids must be unique"
        seen.add(call_id)
    return None


# The fields the API requires of each kind of citation sent back on a text block (null allowed for
# `document_title` and `title`; the SDK's `*LocationParam` types).
_CITATION_FIELDS: dict[str, tuple[str, ...]] = {
    "char_location": ("cited_text", "document_index", "document_title", "start_char_index", "end_char_index"),
    "page_location": (
        "cited_text",
        "document_index",
        "document_title",
        "start_page_number",
        "end_page_number",
    ),
    "content_block_location": (
        "cited_text",
        "document_index",
        "document_title",
        "start_block_index",
        "end_block_index",
    ),
    "web_search_result_location": ("cited_text", "encrypted_index", "title", "url"),
    "search_result_location": (
        "cited_text",
        "search_result_index",
        "source",
        "title",
        "start_block_index",
        "end_block_index",
    ),
}


# The message blocks whose request type (the SDK's `*BlockParam`) has no `cache_control` field.
_NO_CACHE_CONTROL = ("thinking", "redacted_thinking", "fallback", "mcp_tool_listing")


def _blocks_problem(blocks: list[Any], i: int) -> str | None:
    """The API's refusal of a blank text block, of a cache breakpoint on a block that takes none, or of
    a text block's citations or a tool call's caller not as the API gave them."""
    if any(not str(b.get("text", "")).strip() for b in _typed(blocks, "text")):
        return f"messages.{i}: text content blocks must contain non-whitespace text"
    if any(not b.get("signature") for b in _typed(blocks, "thinking")):
        return f"messages.{i}: Invalid `signature` in `thinking` block"
    for j, block in enumerate(blocks):
        if isinstance(block, dict) and (problem := _block_problem(block, f"messages.{i}.content.{j}")):
            return problem
    return None


def _block_problem(block: dict[str, Any], where: str) -> str | None:
    """The API's refusal of one block of a message (see `_blocks_problem`)."""
    citations = block.get("citations") if block.get("type") == "text" else None
    for k, citation in enumerate(citations or []):
        kind = citation.get("type") if isinstance(citation, dict) else None
        if kind not in _CITATION_FIELDS:
            return f"{where}.citations.{k}.type: Input tag {kind!r} does not match any of the expected tags"
        if missing := [f for f in _CITATION_FIELDS[kind] if f not in citation]:
            return f"{where}.citations.{k}.{kind}.{missing[0]}: Field required"
    if "cache_control" in block and block.get("type") in _NO_CACHE_CONTROL:
        return f"{where}.{block['type']}.cache_control: Extra inputs are not permitted"
    if block.get("type") == "tool_result" and (problem := _result_content_problem(block, where)):
        return problem
    caller = block.get("caller") if block.get("type") in ("tool_use", "server_tool_use") else None
    if caller is not None and not _valid_caller(caller):
        return f"{where}.caller: Input should be a direct caller or a code execution caller with a tool_id"
    return None


# What a tool_result's content list takes: each block's type and the fields it requires (the SDK's
# `ToolResultBlockParam` content: text, image, search_result, document, tool_reference).
_RESULT_BLOCK_FIELDS = {
    "text": ("text",),
    "image": ("source",),
    "document": ("source",),
    "search_result": ("source", "title", "content"),
    "tool_reference": ("tool_name",),
}
_IMAGE_MEDIA = ("image/jpeg", "image/png", "image/gif", "image/webp")
_OPTIONAL = {  # the fields each also takes (besides `cache_control`)
    "text": ("citations",),
    "image": ("transformations",),
    "document": ("title", "context", "citations"),
    "search_result": ("citations",),
    "tool_reference": (),
}
_MAGIC = {
    "image/png": b"\x89PNG",
    "image/jpeg": b"\xff\xd8",
    "image/gif": b"GIF8",
    "application/pdf": b"%PDF",
}


def _data_problem(data: str, media: str) -> str | None:
    """Why the API cannot read base64 data of this media type: no base64, or bytes of another type."""
    try:
        head = base64.b64decode(data[:64], validate=True)
    except ValueError:
        return "invalid base64 data"
    magic = _MAGIC.get(media, b"RIFF")
    return None if head.startswith(magic) else f"the data does not match the media type {media}"


def _result_content_problem(block: dict[str, Any], where: str) -> str | None:
    """The API's refusal of a tool_result whose content blocks are not as it documents them."""
    content = block.get("content")
    if content is None or isinstance(content, str):
        return None
    for k, item in enumerate(content):
        if problem := _result_item_problem(item, f"{where}.content.{k}"):
            return problem
    return None


def _result_item_problem(item: Any, at: str) -> str | None:
    kind = item.get("type") if isinstance(item, dict) else None
    if kind not in _RESULT_BLOCK_FIELDS:
        return f"{at}.type: Input tag {kind!r} does not match any of the expected tags"
    if missing := [f for f in _RESULT_BLOCK_FIELDS[kind] if f not in item]:
        return f"{at}.{kind}.{missing[0]}: Field required"
    if extra := sorted(set(item) - {"type", "cache_control", *_RESULT_BLOCK_FIELDS[kind], *_OPTIONAL[kind]}):
        return f"{at}.{kind}.{extra[0]}: Extra inputs are not permitted"
    if kind == "text" and not (isinstance(item["text"], str) and item["text"].strip()):
        return f"{at}: text content blocks must be non-empty"
    if kind == "search_result" and not all(
        isinstance(p, dict) and p.get("type") == "text" and p.get("text") for p in item["content"]
    ):
        return f"{at}.search_result.content: Input should be a list of text blocks"
    source = item.get("source") if kind in ("image", "document") else None
    if isinstance(source, dict) and source.get("type") == "base64":
        return _base64_problem(source, f"{at}.{kind}.source.base64", kind)
    return None


def _base64_problem(source: dict[str, Any], at: str, kind: str) -> str | None:
    media = source.get("media_type")
    if kind == "image" and media not in _IMAGE_MEDIA:
        return f"{at}.media_type: Input should be one of {_IMAGE_MEDIA}"
    if kind == "document" and media != "application/pdf":
        return f"{at}.media_type: Input should be 'application/pdf'"
    if not isinstance(source.get("data"), str):
        return f"{at}.data: Field required"
    problem = _data_problem(source["data"], str(media))
    return f"{at}: {problem}" if problem else None


def _citations_problem(messages: list[dict[str, Any]]) -> str | None:
    """The API's refusal of a request whose search results, or whose documents, do not all have
    citations enabled or all disabled ("Citations are all-or-nothing"; off when not given)."""
    for kind in ("search_result", "document"):
        settings = {_citations_on(b) for b in _all_blocks(messages) if b.get("type") == kind}
        if len(settings) > 1:
            return f"citations must be enabled on all or none of the {kind} blocks in a request"
    return None


# The API's limits on a request's images: how many (models with a 200k-token window), and past how
# many the sides shrink from 8000 to 2000 pixels (the vision guide's "Basics and limits").
MOST_IMAGES, MANY_IMAGES, MANY_IMAGES_SIDE = 100, 20, 2000


def _images_problem(messages: list[dict[str, Any]]) -> str | None:
    """The API's refusal of a request with too many images, or with an image too large for many."""
    images = [b for b in _all_blocks(messages) if b.get("type") == "image"]
    if len(images) > MOST_IMAGES:
        return f"messages: too many images in the request ({len(images)}): at most {MOST_IMAGES} are taken"
    sides = [_png_size(b) for b in images] if len(images) > MANY_IMAGES else []
    if any(max(size) > MANY_IMAGES_SIDE for size in sides if size):
        return (
            "messages: An image in the conversation exceeds the dimension limit for many-image requests "
            f"({MANY_IMAGES_SIDE}px). Start a new session with fewer images."
        )
    return None


# The API's limits on a request's bytes, an image's base64 and a request's PDF pages (Anthropic's
# docs: API overview "Request size limits", vision "General limits", PDF support "PDF requirements").
MAX_REQUEST_BYTES, MAX_IMAGE_BASE64, PDF_PAGES = 32 * 2**20, 10 * 2**20, 100
# What a PDF page costs (PDF support, "Estimate your costs": 1,500 to 3,000 tokens of text a page, and
# an image of each page): the middle of that range and the most an image costs. Not Endstate's own
# estimate, which takes the least text a page.
PDF_PAGE_TOKENS = 2_250 + 1_600


def _base64_data(block: dict[str, Any]) -> str:
    source = block.get("source")
    data = source.get("data") if isinstance(source, dict) and source.get("type") == "base64" else ""
    return data if isinstance(data, str) else ""


def _pdf_page_objects(block: dict[str, Any]) -> int:
    """A base64 PDF's pages, counted as its page objects (`/Type /Page`; the tests' PDFs keep them
    uncompressed): another way than Endstate's, which reads the page tree's count."""
    data = _base64_data(block)
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", base64.b64decode(data))) if data else 0


def _png_size(block: dict[str, Any]) -> tuple[int, int] | None:
    """A base64 PNG's width and height, from its IHDR chunk (the tests send PNGs)."""
    source = block.get("source") or {}
    data = source.get("data") if source.get("type") == "base64" else None
    head = base64.b64decode(data[:32]) if isinstance(data, str) else b""
    if not head.startswith(b"\x89PNG") or head[12:16] != b"IHDR":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _citations_on(block: dict[str, Any]) -> bool:
    citations = block.get("citations")
    return isinstance(citations, dict) and citations.get("enabled") is True


def _all_blocks(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every content block of the messages, and those in their tool results."""
    for msg in messages:
        content = msg.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict):
                yield block
                inner = block.get("content") if block.get("type") == "tool_result" else None
                yield from (b for b in inner if isinstance(b, dict)) if isinstance(inner, list) else ()


def _valid_caller(caller: Any) -> bool:
    if not isinstance(caller, dict):
        return False
    if caller.get("type") == "direct":
        return True
    return str(caller.get("type", "")).startswith("code_execution_") and isinstance(
        caller.get("tool_id"), str
    )


def _server_calls_without_results(blocks: list[Any]) -> str:
    """The first server_tool_use id in an assistant message with no `*_tool_result` block after it
    (but a code execution whose code waits for the results of tool calls it made: those calls name
    it as their caller)."""
    waiting = {b["caller"].get("tool_id") for b in _typed(blocks, "tool_use") if _programmatic(b)}
    for i, block in enumerate(blocks):
        if (
            isinstance(block, dict)
            and block.get("type") == "server_tool_use"
            and block.get("id") not in waiting
        ):
            later = blocks[i + 1 :]
            if not any(
                str(b.get("type", "")).endswith("_tool_result") and b.get("tool_use_id") == block.get("id")
                for b in later
                if isinstance(b, dict)
            ):
                return str(block.get("id"))
    return ""


BINDING_BETA = "thinking-binding-controls-2026-08-01"
BOUND_ELSEWHERE = (
    "Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the "
    'block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)


def _prefix_signature(body: dict[str, Any], messages: list[Any], before: list[Any]) -> str:
    """A thinking block's signature, bound to what came before it (cache breakpoints aside: moving them
    is no change; nor is a string content sent as its one text block)."""
    system = body.get("system")
    as_blocks = [
        {**m, "content": [{"type": "text", "text": m["content"]}]} if isinstance(m.get("content"), str) else m
        for m in messages
        if isinstance(m, dict)
    ]
    system = [{"type": "text", "text": system}] if isinstance(system, str) else system
    prefix = {"system": system, "tools": body.get("tools"), "messages": as_blocks, "before": before}
    digest = hashlib.sha256(json.dumps(_without_breakpoints(prefix), sort_keys=True).encode()).hexdigest()
    return f"bound:{digest[:24]}"


def _without_breakpoints(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_breakpoints(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_breakpoints(v) for v in value]
    return value


def _bound(content: list[Any], request: dict[str, Any]) -> list[Any]:
    """A reply's blocks with each thinking block signed for the request's prefix."""
    messages = request.get("messages") if isinstance(request.get("messages"), list) else []
    return [
        {**b, "signature": _prefix_signature(request, messages, content[:j])}
        if isinstance(b, dict) and b.get("type") == "thinking"
        else b
        for j, b in enumerate(content)
    ]


def _mismatched_thinking(body: dict[str, Any]) -> list[str]:
    """Where the thinking blocks sent back no longer follow the prefix they were written after."""
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    found = []
    for i, msg in enumerate(messages):
        blocks = msg.get("content") if isinstance(msg, dict) and msg.get("role") == "assistant" else None
        for j, block in enumerate(blocks if isinstance(blocks, list) else []):
            thinking = isinstance(block, dict) and block.get("type") == "thinking"
            if thinking and block.get("signature") != _prefix_signature(body, messages[:i], blocks[:j]):
                found.append(f"messages.{i}.content.{j}")
    return found


def _typed(blocks: list[Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == kind]


# -- streaming -----------------------------------------------------------------


def _html(response: Response) -> bytes:
    page = (response.body or {}).get("html")
    return page.encode() if isinstance(page, str) else b"<html>upstream proxy error</html>"


BEDROCK_STREAM = re.compile(r"/model/([^/]+)/invoke-with-response-stream")


def as_messages_api(received: Received) -> Received | None:
    """Amazon Bedrock's streamed InvokeModel (`POST /model/{id}/invoke-with-response-stream`, the model in
    the path, `anthropic_version` and `anthropic_beta` in the body, signed by SigV4) as the Messages API
    request it stands for; None for any other request. Unsigned, it is refused as Bedrock refuses it."""
    found = BEDROCK_STREAM.fullmatch(received.path)
    if found is None or not isinstance(received.body, dict):
        return None
    body = {k: v for k, v in received.body.items() if k not in ("anthropic_version", "anthropic_beta")}
    body |= {"model": urllib.parse.unquote(found.group(1)), "stream": True}
    headers = {k: v for k, v in received.headers.items() if k not in ("authorization", "x-api-key")}
    if received.headers.get("authorization", "").startswith("AWS4-HMAC-SHA256 Credential="):
        headers["x-api-key"] = "sigv4"  # the signature is not checked: its form is
    if version := received.body.get("anthropic_version"):
        headers["anthropic-version"] = str(version)
    if betas := received.body.get("anthropic_beta"):
        headers["anthropic-beta"] = ",".join(betas)
    return Received("/v1/messages", headers, body, received.size)


def _aws_frame(event: str, data: Any) -> bytes:
    """One event as Bedrock streams it: a message of AWS's event stream (a prelude and its CRC32, string
    headers, the payload and the message's CRC32) whose payload carries the event's JSON, base64'd."""
    payload = json.dumps({"bytes": base64.b64encode(json.dumps(data).encode()).decode()}).encode()
    fields = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    headers = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + len(v).to_bytes(2, "big") + v.encode()
        for k, v in fields.items()
    )
    prelude = (12 + len(headers) + len(payload) + 4).to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    message = prelude + zlib.crc32(prelude).to_bytes(4, "big") + headers + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


def _sse(event: str, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"event: {event}\ndata: {payload}\n\n".encode()


def stream_events(body: dict[str, Any], broken: str | None = None) -> list[tuple[str, Any]]:
    """The server-sent events of a message, as the API sends them (or broken as `malformed` says)."""
    usage = dict(body.get("usage") or {})
    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {k: v for k, v in usage.items() if k != "iterations"} | {
        "output_tokens": 1
    }  # told at the end
    start.pop("stop_details", None)
    start.pop("container", None)  # told at the end, with the stop reason
    events: list[tuple[str, Any]] = [("message_start", {"type": "message_start", "message": start})]
    if broken == "cut_short":
        return events
    if broken == "wrong_shape":
        return [("message_start", {"type": "message_start"}), ("message_stop", {"type": "message_stop"})]
    if broken == "bad_event":
        return [*events, ("content_block_start", "{not json")]
    events.append(("ping", {"type": "ping"}))
    if broken and broken.startswith("error_event:"):
        return [*events, ("error", broken.removeprefix("error_event:"))]
    for index, block in enumerate(body.get("content") or []):
        events.extend(_block_events(index, block))
    delta = {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")}
    if body.get("stop_details") is not None:
        delta["stop_details"] = body["stop_details"]
    if body.get("container") is not None:
        delta["container"] = body["container"]
    final_usage = {k: v for k, v in usage.items() if k != "cache_creation"}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": final_usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _block_events(index: int, block: Block) -> list[tuple[str, Any]]:
    kind = block.get("type")
    start: Block
    deltas: list[Block]
    if kind == "text":  # its citations come as deltas, its other fields at the start
        start, deltas = (
            {k: v for k, v in block.items() if k != "citations"} | {"text": ""},
            [_delta("text_delta", text=t) for t in _pieces(block["text"])],
        )
        deltas += [_delta("citations_delta", citation=c) for c in block.get("citations") or []]
    elif kind in ("tool_use", "server_tool_use"):
        start = {**block, "input": {}}
        deltas = [_delta("input_json_delta", partial_json=p) for p in _pieces(json.dumps(block["input"]))]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [_delta("thinking_delta", thinking=t) for t in _pieces(block["thinking"])]
        deltas.append(_delta("signature_delta", signature=block["signature"]))
    elif kind == "compaction":  # a server-side compaction: its summary comes as deltas
        start = {k: v for k, v in block.items() if k not in ("content", "encrypted_content")} | {
            "content": None
        }
        deltas = [_delta("compaction_delta", content=c) for c in _pieces(block.get("content") or "")]
        if block.get("encrypted_content") is not None:
            deltas.append(_delta("compaction_delta", encrypted_content=block["encrypted_content"]))
    else:  # results of server tools, redacted thinking: whole at the start
        start, deltas = block, []
    events: list[tuple[str, Any]] = [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
    ]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def _delta(kind: str, **fields: Any) -> Block:
    return {"type": kind, **fields}


def _pieces(value: str, size: int = 40) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


# -- the models API --------------------------------------------------------------


def model_info(
    model_id: str,
    *,
    max_input_tokens: int | None = 1_000_000,
    max_tokens: int | None = 128_000,
    lifecycle: str = "active",
    display_name: str | None = None,
) -> dict[str, Any]:
    """A `GET /v1/models/{id}` answer."""
    return {
        "type": "model",
        "id": model_id,
        "display_name": display_name or model_id,
        "created_at": "2026-06-30T00:00:00Z",
        "lifecycle": lifecycle,
        "max_input_tokens": max_input_tokens,
        "max_tokens": max_tokens,
    }


# -- prompt caching --------------------------------------------------------------

LOOKBACK_BLOCKS = 20  # the API looks this many blocks back from a breakpoint for an earlier entry


def count_tokens(value: Any) -> int:
    """About 4 characters a token, as the API's tokenizer roughly counts English and JSON; a base64 PDF
    by its pages, not its bytes: `PDF_PAGE_TOKENS` a page (a PDF at a URL, which this server cannot
    fetch, by its JSON only)."""
    pages: list[int] = []
    plain = _without_pdf_data(value, pages)
    return max(1, -(-len(json.dumps(plain, sort_keys=True)) // 4)) + sum(pages) * PDF_PAGE_TOKENS


def _without_pdf_data(value: Any, pages: list[int]) -> Any:
    """`value` with each base64 PDF's data left out, its pages added to `pages`."""
    if isinstance(value, list):
        return [_without_pdf_data(v, pages) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("type") == "document" and _base64_data(value):
        pages.append(_pdf_page_objects(value))
        return {**value, "source": {k: v for k, v in value["source"].items() if k != "data"}}
    return {k: _without_pdf_data(v, pages) for k, v in value.items()}


class PromptCache:
    """The API's prompt cache, as far as usage shows it.

    A request is a sequence of blocks (tools, system, then each message's
    content blocks). A block with `cache_control` is a breakpoint. The cache
    holds the prefixes up to the breakpoints it has seen; a request reads the
    longest cached prefix that ends at a breakpoint or up to 20 blocks before
    one, and writes the rest up to its last breakpoint. Entries never expire
    here (tests run well inside 5 minutes).
    """

    def __init__(self) -> None:
        self._entries: set[str] = set()

    def usage(self, body: dict[str, Any]) -> dict[str, Any]:
        blocks, marks = _cacheable_blocks(body)
        tokens = list(itertools.accumulate(count_tokens(b) for b in blocks))
        keys = _prefix_keys(str(body.get("model")), blocks)
        read = self._read_upto(keys, [i for i, _ in marks])
        write_upto = marks[-1][0] + 1 if marks else 0
        read_tokens = tokens[read - 1] if read else 0
        write_tokens = tokens[write_upto - 1] - read_tokens if write_upto > read else 0
        for i, _ in marks:
            self._entries.add(keys[i])
        total = tokens[-1] if tokens else 0
        one_hour = write_tokens if marks and marks[-1][1] == "1h" else 0
        return {
            "input_tokens": total - read_tokens - write_tokens,
            "cache_read_input_tokens": read_tokens,
            "cache_creation_input_tokens": write_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": write_tokens - one_hour,
                "ephemeral_1h_input_tokens": one_hour,
            },
        }

    def _read_upto(self, keys: list[str], breakpoints: list[int]) -> int:
        """How many leading blocks are read from the cache (0: none)."""
        best = 0
        for b in breakpoints:
            for i in range(b, max(-1, b - LOOKBACK_BLOCKS), -1):
                if keys[i] in self._entries:
                    best = max(best, i + 1)
                    break
        return best


def _cacheable_blocks(body: dict[str, Any]) -> tuple[list[Any], list[tuple[int, str]]]:
    """The request's blocks in cache order, and the breakpoints (index, ttl)."""
    blocks: list[Any] = []
    marks: list[tuple[int, str]] = []

    def add(block: Any, role: str) -> None:
        if isinstance(block, dict) and "cache_control" in block:
            marks.append((len(blocks), block["cache_control"].get("ttl", "5m")))
            block = {k: v for k, v in block.items() if k != "cache_control"}
        blocks.append([role, block])

    for tool in body.get("tools") or []:
        add(tool, "tool")
    system = body.get("system")
    for block in [system] if isinstance(system, str) else system or []:
        add(block, "system")
    for message in body.get("messages") or []:
        content = message.get("content")  # a string is the same prompt as one text block
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            add(block, str(message.get("role")))
    if isinstance(body.get("cache_control"), dict) and blocks:
        marks.append((len(blocks) - 1, body["cache_control"].get("ttl", "5m")))
    return blocks, marks


def _prefix_keys(model: str, blocks: list[Any]) -> list[str]:
    digest = hashlib.sha256(model.encode())
    keys = []
    for block in blocks:
        digest.update(json.dumps(block, sort_keys=True).encode())
        keys.append(digest.copy().hexdigest())
    return keys
