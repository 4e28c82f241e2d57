"""What packing a hand-over's snapshot (zlib, base64: `_wire.packed`) saves, and what it costs.

    python benchmarks/packed_snapshot.py                    # 300 turns of 5 kB tool results
    python benchmarks/packed_snapshot.py --turns 600 --size 5000
    python benchmarks/packed_snapshot.py --smoke                # 5 turns of 500, each time taken once

A run reads `--turns` pages of `--size` characters of real text (this Python's standard library sources in
a fixed order: code and docstrings, as a coding agent's file reads are) and stops at its turn limit with
its snapshot. Printed: the hand-over's start (its size as a payload) plain and packed, and the time to pack
and unpack it (median of 5), against the 1.5 MB a payload takes (`_wire.MAX_PAYLOAD_BYTES`).
"""

from __future__ import annotations

import argparse
import statistics
import sysconfig
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from agent import Agent, Budget, tool
from agent.models.scripted import ScriptedModel, call
from agent.snapshot import Snapshot
from agent.temporal import _wire as w


def library_text(size: int) -> Iterator[str]:
    """Pages of `size` characters of the standard library's sources, in a fixed order."""
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        text = path.read_text(errors="replace")
        for at in range(0, len(text) - size, size):
            yield text[at : at + size]


def snapshot(turns: int, size: int) -> Snapshot:
    pages = library_text(size)
    texts = [next(pages) for _ in range(turns)]

    @tool
    def read(n: int) -> str:
        """Read page n."""
        return texts[n]

    model = ScriptedModel([[call("read", n=i)] for i in range(turns)])
    agent = Agent(name="reader", model=model, tools=[read], budget=Budget(max_turns=turns))
    result = agent.run("Read the pages.")
    assert result.snapshot is not None, result.note
    return result.snapshot


def median_s(do: Callable[[], object], repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        do()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a quick check, not a measure: 5 turns of 500 characters, each time taken once",
    )
    args = parser.parse_args()
    repeats = 5
    if args.smoke:
        args.turns, args.size, repeats = 5, 500, 1
    text = snapshot(args.turns, args.size).to_json()
    start = {"agent": "reader", "task": "Read the pages.", "segments": 0, "snapshot": text}
    packed = {**start, "snapshot": w.PACKED_IN_PLACE, w.PACKED: w.packed(text)}
    plain_size, packed_size = w.payload_size(start), w.payload_size(packed)
    print(f"{args.turns} turns of {args.size:,} characters: snapshot {len(text):,} bytes of JSON")
    print(f"start plain  {plain_size:>11,} bytes ({'fits' if plain_size <= w.MAX_PAYLOAD_BYTES else 'over'})")
    print(f"start packed {packed_size:>11,} bytes ({plain_size / packed_size:.1f}x smaller)")
    print(f"pack   {median_s(lambda: w.packed(text), repeats) * 1000:7.1f} ms")
    print(f"unpack {median_s(lambda: w.unpacked(packed), repeats) * 1000:7.1f} ms")
    read = median_s(lambda: Snapshot.from_json(text), repeats)
    print(f"read   {read * 1000:7.1f} ms (Snapshot.from_json, for scale)")


if __name__ == "__main__":
    main()
