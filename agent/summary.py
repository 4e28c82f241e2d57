"""What a run hands back when it stops: a short account written by code."""

from __future__ import annotations

from agent.budget import Spent
from agent.context import RunContext
from agent.stops import LimitKind, StopReason
from agent.text import flat_clip

_TEXT_CHARS = 300


def summarize(ctx: RunContext, usage: Spent, reason: StopReason, limit: LimitKind | None = None) -> str:
    """A plain account of the run: why it stopped, what it did, what it last said."""
    cost = None if usage.unpriced else usage.cost_usd
    parts = [headline(reason, limit, usage.turns, usage.tokens, cost)]
    if ctx.calls:
        counts: dict[str, int] = {}
        errors = 0
        for call in ctx.calls:
            counts[call.name] = counts.get(call.name, 0) + 1
            errors += call.is_error
        most = sorted(counts.items(), key=_count, reverse=True)  # stable: ties in first-call order
        done = ", ".join(f"{name} x{n}" for name, n in most)
        parts.append(f"Tool calls: {done}" + (f"; {errors} returned errors." if errors else "."))
        last = ctx.calls[-1]
        parts.append(f"Last result ({last.name}): {_clip(last.result)}")
    else:
        parts.append("No tool was called.")
    return " ".join(parts)


def _count(item: tuple[str, int]) -> int:
    return item[1]


def headline(reason: StopReason, limit: LimitKind | None, turns: int, tokens: int, cost: float | None) -> str:
    """Why a run stopped and what it spent: "Stopped: limit (turns budget used up) after 3 turns, ..."."""
    why = f"Stopped: {reason}" + (f" ({limit} budget used up)" if limit else "")
    spent = "cost unknown" if cost is None else f"${cost:.4f}"
    return f"{why} after {plural(turns, 'turn')}, {plural(tokens, 'token')}, {spent}."


def foreign_summary(
    reason: StopReason, limit: LimitKind | None, turns: int, tokens: int, cost: float | None, last_text: str
) -> str:
    """The account of a run another framework made: what Endstate saw of it (no tool results)."""
    said = f" Last text: {_clip(last_text)}" if last_text.strip() else ""
    return headline(reason, limit, turns, tokens, cost) + said


def plural(n: int, word: str) -> str:
    """`n word`, with an s when `n` is not 1: "1 run", "2 runs", "0 turns"."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _clip(text: str) -> str:
    """The text's first `_TEXT_CHARS` characters, its blanks made single spaces (`flat_clip`)."""
    return flat_clip(text, _TEXT_CHARS)
