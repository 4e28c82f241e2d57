"""What one streamed delta costs the Anthropic adapter, at 1,000 and at 20,000 deltas a reply.

Run: `python benchmarks/stream_deltas.py [--repeats N] [--sizes 1000 20000] [--no-helper] [--smoke]`.
Not a test: it prints the CPU microseconds a delta (median of the repeats) of one reply whose single
block (a text, a thinking, or a tool call's input JSON) streams in n deltas of 40 characters, and the ratio
of the cost a delta at the largest n to that at the smallest: about 1 when reading a reply takes time linear
in its length, about n_large / n_small when it takes time that grows with its square.

Each reply goes through the real `anthropic` SDK (its SSE decoding, its events, its accumulation) and
`AnthropicModel.complete`, its bytes served from memory by an `httpx2.MockTransport` in pieces of
16 KiB (no server, no network: the clock is this process's CPU time, all of it the client's). The
variants run interleaved, one reply of each per repeat. `--no-helper` leaves out the SDK's own stream
helper (`messages.stream()` read to its final message, what the adapter used before), which merges
each delta as it comes and is slow at 20,000 deltas.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import anthropic
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from messages_api import _sse, events_of, message, text, tool_use

from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelRequest

MODEL = "claude-haiku-4-5"
PIECE = 40  # characters a delta, as the test server streams them
CHUNK = 16 * 1024  # bytes a read, about a TLS record's worth


def block_of(kind: str, deltas: int) -> dict[str, Any]:
    """A reply block of `kind` that streams in `deltas` deltas."""
    body = "".join(f"{i:0{PIECE - 1}d}\n" for i in range(deltas))
    if kind == "text":
        return text(body)
    if kind == "thinking":
        return {"type": "thinking", "thinking": body, "signature": "sig=="}
    return tool_use("save", {"body": body[: len(body) - 16]}, id="toolu_bench")  # the JSON adds 16


def sse_body(block: dict[str, Any]) -> bytes:
    events = events_of(message(block, model=MODEL))
    return b"".join(_sse(name, data) for name, data in events)


def client_for(body: bytes) -> anthropic.AsyncAnthropic:
    """An SDK client whose every request gets `body` back as a stream, from memory."""

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(body), CHUNK):
            yield body[start : start + CHUNK]

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=pieces())

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    return anthropic.AsyncAnthropic(api_key="sk-ant-bench", max_retries=0, http_client=http)


REQUEST = ModelRequest.of_messages("", [{"role": "user", "content": "Write."}], [], 64_000)


async def adapter(client: anthropic.AsyncAnthropic) -> None:
    await AnthropicModel(MODEL, client=client).complete(REQUEST)


async def helper(client: anthropic.AsyncAnthropic) -> None:
    messages: Any = [{"role": "user", "content": "Write."}]
    async with client.messages.stream(model=MODEL, max_tokens=64_000, messages=messages) as stream:
        await stream.get_final_message()


VARIANTS: dict[str, Callable[[anthropic.AsyncAnthropic], Any]] = {"adapter": adapter, "SDK helper": helper}


def cpu_seconds(variant: Callable[[anthropic.AsyncAnthropic], Any], body: bytes) -> float:
    client = client_for(body)

    async def once() -> float:
        start = time.process_time()
        await variant(client)
        return time.process_time() - start

    return asyncio.run(once())


def report(
    times: dict[tuple[str, str, int], list[float]],
    variants: Collection[str],
    kinds: Sequence[str],
    sizes: Sequence[int],
    repeats: int,
) -> None:
    small, large = min(sizes), max(sizes)
    print(f"CPU µs a delta (median of {repeats}), {PIECE}-character deltas; ratio: @{large:,} / @{small:,}")
    print(f"{'variant':<12} {'block':<11}" + "".join(f"{f'@{n:,}':>10}" for n in sizes) + "   ratio")
    for name in variants:
        for kind in kinds:
            cost = {n: statistics.median(times[(name, kind, n)]) for n in sizes}
            cells = "".join(f"{cost[n] * 1e6:>10.1f}" for n in sizes)
            print(f"{name:<12} {kind:<11}{cells}   {cost[large] / cost[small]:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 20_000])
    parser.add_argument("--no-helper", action="store_true")
    parser.add_argument(
        "--smoke", action="store_true", help="a quick check, not a measure: 1 repeat of 10 and 20 deltas"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.sizes = 1, [10, 20]
    variants = {k: v for k, v in VARIANTS.items() if not (args.no_helper and k == "SDK helper")}
    kinds = ("text", "thinking", "tool input")
    bodies = {(kind, n): sse_body(block_of(kind, n)) for kind in kinds for n in args.sizes}
    for variant in variants.values():  # warm up: imports, first-use caches
        cpu_seconds(variant, bodies[(kinds[0], min(args.sizes))])
    times: dict[tuple[str, str, int], list[float]] = {}
    for _ in range(args.repeats):  # interleaved: one reply of each cell per repeat
        for (kind, n), body in bodies.items():
            for name, variant in variants.items():
                times.setdefault((name, kind, n), []).append(cpu_seconds(variant, body) / n)
    report(times, variants, kinds, args.sizes, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
