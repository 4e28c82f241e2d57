"""Replays: a run's recorded model replies, played again through the scripted model.

`endstate review promote` turns a stored run into an eval case with a
`replay:` (each model reply: its blocks, tokens and the API's stop reason) and
the `results:` its tools and checks gave (one per call, in order). Offline, the
case plays the replies and fails when the agent now behaves otherwise: a
different stop, or a call answered differently (a tool changed, a verifier
that now rejects). Against a real model (`--model`) only the task is used.

Values that differ from world to world are written as placeholders: `{workdir}`
for the run's folder and `{corpus}` for the research corpus's base URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.examples.scenarios import World
from agent.journal import Call, Entry, Opaque, Reply, Result, Text
from agent.models.scripted import Step, reply

WORKDIR = "{workdir}"
CORPUS = "{corpus}"
DURATION = "{duration}"
LOOPBACK_URL = re.compile(r"http://127\.0\.0\.1:\d+")
DURATIONS = re.compile(r"\b\d+\.\d+s\b")  # "3 passed in 0.04s": differs from run to run
SHOWN = 120  # characters of a differing result shown in a problem


@dataclass(frozen=True)
class RecordedResult:
    """What one call got back: the tool (or `finish`), its text, and whether it was an error."""

    call: str
    text: str
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"call": self.call, "text": self.text}
        return data | ({"is_error": True} if self.is_error else {})


@dataclass(frozen=True)
class Replay:
    """Recorded replies to play, and the results the calls got when they were recorded."""

    replies: tuple[Mapping[str, Any], ...]
    results: tuple[RecordedResult, ...] = ()

    def steps(self, world: World) -> list[Step]:
        """The replies as scripted-model steps, with the placeholders filled in for `world`."""
        return [
            reply(
                *[_fill(b, world) for b in r["content"]],
                input_tokens=r.get("input_tokens"),
                output_tokens=r.get("output_tokens"),
                stop_reason=r.get("stop_reason"),
            )
            for r in self.replies
        ]

    def differences(self, journal: Sequence[Entry], world: World) -> list[str]:
        """How the calls' results in `journal` differ from the recorded ones, in words."""
        now = results_of(journal, lambda text: placeholders(text, str(world.workdir), _base(world)))
        pairs = enumerate(zip(self.results, now, strict=False), 1)
        problems = [_differs(i, was, got) for i, (was, got) in pairs]
        found = [p for p in problems if p]
        if len(now) != len(self.results):
            found.append(f"{len(now)} call results now, {len(self.results)} recorded")
        return found


# -- recording ----------------------------------------------------------------------------------


def record(journal: Sequence[Entry], workdir: str = "", corpus: bool = False) -> Replay:
    """The replay of a run's journal; `workdir` and loopback URLs (with `corpus`) become placeholders."""
    base = _recorded_base(journal) if corpus else None

    def clean(text: str) -> str:
        return placeholders(text, workdir, base)

    replies = tuple(_reply(e, clean) for e in journal if isinstance(e, Reply))
    return Replay(replies, tuple(results_of(journal, clean)))


def results_of(journal: Sequence[Entry], clean: Any) -> list[RecordedResult]:
    """Each call's result in order, named by the call it answers."""
    names = {c.id: c.name for e in journal if isinstance(e, Reply) for c in e.calls}
    return [
        RecordedResult(names.get(e.call_id, "?"), clean(e.text), e.is_error)
        for e in journal
        if isinstance(e, Result)
    ]


def placeholders(text: str, workdir: str, base: str | None) -> str:
    """`text` with what differs between worlds (and timings) written as placeholders."""
    text = DURATIONS.sub(DURATION, text)
    if workdir:
        text = text.replace(workdir, WORKDIR)
    return text.replace(base, CORPUS) if base else text


def _reply(entry: Reply, clean: Any) -> dict[str, Any]:
    return {
        "content": [_block(p, clean) for p in entry.parts],
        "input_tokens": entry.input_tokens,
        "output_tokens": entry.output_tokens,
        "stop_reason": entry.stop_reason,
    }


def _block(part: Text | Call | Opaque, clean: Any) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": clean(part.text)}
    if isinstance(part, Call):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": _map(part.arguments, clean)}
    return dict(part.data)


def _recorded_base(journal: Iterable[Entry]) -> str | None:
    """The corpus base URL the run used: the first loopback URL in its calls or results."""
    for entry in journal:
        texts = [str(c.arguments) for c in entry.calls] if isinstance(entry, Reply) else []
        texts += [entry.text] if isinstance(entry, Result) else []
        for text in texts:
            if found := LOOPBACK_URL.search(text):
                return found.group(0)
    return None


# -- playing ------------------------------------------------------------------------------------


def _base(world: World) -> str | None:
    return world.corpus.base_url if world.corpus is not None else None


def _fill(block: Mapping[str, Any], world: World) -> dict[str, Any]:
    def fill(text: str) -> str:
        text = text.replace(WORKDIR, str(world.workdir))
        base = _base(world)
        return text.replace(CORPUS, base) if base else text

    return _map(dict(block), fill)


def _map(value: Any, fn: Any) -> Any:
    """`fn` applied to every string inside `value` (dicts and lists walked)."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map(v, fn) for v in value]
    return value


def _differs(index: int, was: RecordedResult, got: RecordedResult) -> str:
    if was == got:
        return ""
    if was.call != got.call:
        return f"call {index}: {got.call} now, {was.call} when recorded"
    error = {True: " (an error)", False: ""}
    recorded = f"{_short(was.text)!r}{error[was.is_error]}"
    now = f"{_short(got.text)!r}{error[got.is_error]}"
    return f"call {index} ({was.call}) answered differently: recorded {recorded}, now {now}"


def _short(text: str) -> str:
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."
