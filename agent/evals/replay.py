"""Replays: a run's recorded model replies, played again through the scripted model.

`endstate review promote` turns a stored run into an eval case with a
`replay:` (each model reply: its blocks, tokens and the API's stop reason, with
its `stop` kind when that word does not give it) and
the `results:` its tools and checks gave (one per call, in order). Offline, the
case plays the replies and fails when the agent now behaves otherwise: a
different stop, or a call answered differently (a tool changed, a verifier
that now rejects). Against a real model (`--model`) only the task is used.

Values that differ from world to world are written as placeholders: `{workdir}`
for the run's folder and `{corpus}` for the research corpus's base URL.

A result of content blocks (agent.content) is recorded with its blocks, in the
Messages API's shape, and the replay checks the blocks the call gets now
against them, not only its text (whose image placeholder says little of the
image). An image's or a PDF's bytes are not written in the YAML: its source
names their SHA-256 (`sha256:`), and the bytes are a file beside the case,
`blobs/<sha256>.<ext>`, written once however many results or cases hold them.
Inline, base64 adds a third to the bytes, and PyYAML took 4 to 6 seconds to
write or read one 5 MB screenshot's (a case of a run of screenshots would take
minutes to load), and a case would no longer be a file to read.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.content import IMAGE_TYPES, Block, ContentError, api_block, parse_block
from agent.examples.scenarios import World
from agent.journal import Call, Entry, Opaque, Reply, Result, Stopped, Suspended, Text
from agent.models.base import ModelReply
from agent.models.scripted import Step, reply
from agent.result import StopReason
from agent.stops import kind_named, kind_to_keep

WORKDIR = "{workdir}"
CORPUS = "{corpus}"
DURATION = "{duration}"
LOOPBACK_URL = re.compile(r"http://127\.0\.0\.1:\d+")
DURATIONS = re.compile(r"\b\d+\.\d+s\b")  # "3 passed in 0.04s": differs from run to run
SHOWN = 120  # characters of a differing result shown in a problem
BLOBS = "blobs"  # the folder beside a case file that holds its results' images and PDFs
BLOB_TYPES = {t: t.partition("/")[2] for t in (*IMAGE_TYPES, "application/pdf")}  # media type: extension
DIGEST = re.compile(r"[0-9a-f]{64}")
CANCELLED = "cancelled"  # a reply's key: the host cancelled the run in its turn (a shutdown)


@dataclass(frozen=True)
class RecordedResult:
    """What one call got back: the tool (or `finish`), its text, whether it was an error, and its
    content blocks (None: a text result, or a case recorded before blocks were: its text is checked)."""

    call: str
    text: str
    is_error: bool = False
    blocks: tuple[Block, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The result as a case file holds it (an image's or PDF's bytes by digest: see `blobs_of`)."""
        data: dict[str, Any] = {"call": self.call, "text": self.text}
        data |= {"is_error": True} if self.is_error else {}
        return data | ({"blocks": [case_block(b) for b in self.blocks]} if self.blocks else {})

    def answers_like(self, now: RecordedResult) -> bool:
        """`now` is what this recorded result says: the same call, text and error, and the same blocks
        when they were recorded."""
        same = (self.call, self.text, self.is_error) == (now.call, now.text, now.is_error)
        return same and (self.blocks is None or self.blocks == (now.blocks or ()))


@dataclass(frozen=True)
class Replay:
    """Recorded replies to play, and the results the calls got when they were recorded."""

    replies: tuple[Mapping[str, Any], ...]
    results: tuple[RecordedResult, ...] = ()

    def steps(self, world: World) -> list[Step]:
        """The replies as scripted-model steps, with the placeholders filled in for `world`; a reply
        marked `cancelled` sets `world.cancel` as it is played, so the run ends `cancelled` after its
        turn, as the recorded one did when its host shut down."""
        steps: list[Step] = []
        for r in self.replies:
            step = reply(
                *[_fill(b, world) for b in r["content"]],
                input_tokens=r.get("input_tokens"),
                output_tokens=r.get("output_tokens"),
                stop_reason=r.get("stop_reason"),
                stop=kind_named(r.get("stop")),
            )
            steps.append(_cancelling(step, world) if r.get(CANCELLED) is True else step)
        return steps

    @property
    def cancels(self) -> bool:
        """Whether playing it cancels the run (a reply is marked `cancelled`): only the replay can."""
        return any(r.get(CANCELLED) is True for r in self.replies)

    def differences(self, journal: Sequence[Entry], world: World) -> list[str]:
        """How the calls' results in `journal` differ from the recorded ones (their blocks too), in
        words."""
        here = {base} if (base := _base(world)) else set()
        now = results_of(journal, lambda text: placeholders(text, str(world.workdir), here))
        pairs = enumerate(zip(self.results, now, strict=False), 1)
        problems = [_differs(i, was, got) for i, (was, got) in pairs]
        found = [p for p in problems if p]
        if len(now) != len(self.results):
            found.append(f"{len(now)} call results now, {len(self.results)} recorded")
        return found


# -- recording ----------------------------------------------------------------------------------


def record(journal: Sequence[Entry], workdir: str = "", corpus: bool = False) -> Replay:
    """The replay of a run's journal; `workdir` and loopback URLs (with `corpus`) become placeholders."""
    base = _recorded_bases(journal) if corpus else ()

    def clean(text: str) -> str:
        return placeholders(text, workdir, base)

    def as_said(text: str) -> str:  # a reply is played as the model said it: its timings too
        return placeholders(text, workdir, base, durations=False)

    cut = _cancelled_in(journal)
    played = (e for e in journal if isinstance(e, Reply))
    replies = tuple(
        _reply(e, as_said) | ({CANCELLED: True} if i in cut else {}) for i, e in enumerate(played)
    )
    return Replay(replies, tuple(results_of(journal, clean)))


def _cancelled_in(journal: Sequence[Entry]) -> set[int]:
    """The replies (their index among the replies) in whose turn the run was cancelled: the last one
    before each `cancelled` stop. The cancel came from the host, not the model: a replay that only
    played the replies ran on past it."""
    found: set[int] = set()
    replies = -1
    for entry in journal:
        if isinstance(entry, Reply):
            replies += 1
        elif isinstance(entry, Stopped) and entry.reason is StopReason.CANCELLED and replies >= 0:
            found.add(replies)
    return found


def _cancelling(step: ModelReply, world: World) -> Step:
    """`step`, played with the world's cancel signal set: the host shutting down during that turn."""

    def play(_request: object) -> ModelReply:
        world.cancel.set()
        return step

    return play


def results_of(journal: Sequence[Entry], clean: Any) -> list[RecordedResult]:
    """Each call's result in order, named by the call it answers."""
    names = {c.id: c.name for e in journal if isinstance(e, Reply) for c in e.calls}
    return [
        RecordedResult(names.get(e.call_id, "?"), clean(e.text), e.is_error, _cleaned(e.blocks, clean))
        for e in journal
        if isinstance(e, Result)
    ]


def _cleaned(blocks: tuple[Block, ...], clean: Any) -> tuple[Block, ...] | None:
    """The blocks with placeholders in their text (an image's or PDF's data kept as it is)."""
    return tuple(_clean_block(b, clean) for b in blocks) if blocks else None


def _clean_block(block: Block, clean: Any) -> Block:
    shape = api_block(block)
    if _data(shape):
        return block
    try:
        return parse_block(_map(shape, clean))
    except ContentError:  # a URL that a placeholder makes no URL: kept as it is
        return block


# -- an image's or PDF's bytes beside the case ----------------------------------------------------


def case_block(block: Block) -> dict[str, Any]:
    """A block as a case file holds it: the API's shape, an image's or PDF's data given by the SHA-256
    of its bytes (the bytes go in a file beside the case: `blobs_of`, `blob_path`)."""
    shape = api_block(block)
    if not (data := _data(shape)):
        return shape
    source = {k: v for k, v in shape["source"].items() if k != "data"}
    return shape | {"source": source | {"sha256": hashlib.sha256(base64.b64decode(data)).hexdigest()}}


def blobs_of(journal: Iterable[Entry]) -> dict[str, tuple[str, bytes]]:
    """The bytes of the images and PDFs in a journal's results, by SHA-256, with their media type."""
    found = {}
    for entry in journal:
        for block in entry.blocks if isinstance(entry, Result) else ():
            shape = api_block(block)
            if data := _data(shape):
                raw = base64.b64decode(data)
                found[hashlib.sha256(raw).hexdigest()] = (shape["source"]["media_type"], raw)
    return found


def blob_path(folder: Path, digest: object, media_type: object) -> Path:
    """Where the bytes of digest `digest` are, beside the case files in `folder`: always a file of
    `folder/blobs/` (a digest that is no SHA-256, or a media type no image or PDF has, is refused:
    a case file names both, and no name it gives may point elsewhere). Raises `ContentError`."""
    if not (isinstance(digest, str) and DIGEST.fullmatch(digest)):
        raise ContentError(f"source.sha256 must be 64 hexadecimal digits, not {digest!r:.80}")
    extension = BLOB_TYPES.get(media_type) if isinstance(media_type, str) else None
    if extension is None:
        raise ContentError(
            f"source.media_type {media_type!r:.80} is not one of an image or a PDF: {', '.join(BLOB_TYPES)}"
        )
    return folder / BLOBS / f"{digest}.{extension}"


def holds(path: Path, digest: str) -> bool:
    """Whether the file at `path` holds the bytes of SHA-256 `digest` (False when it cannot be read)."""
    try:
        return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == digest
    except OSError:
        return False


def block_of_case(shape: Any, folder: Path) -> Block:
    """A block from a case file, its image's or PDF's bytes read from beside it (`folder`) and checked
    against their digest. Raises `ContentError` naming what is missing or wrong."""
    source = shape.get("source") if isinstance(shape, dict) else None
    digest = source.get("sha256") if isinstance(source, dict) else None
    if digest is None:
        return parse_block(shape)
    assert isinstance(shape, dict) and isinstance(source, dict)
    path = blob_path(folder, digest, source.get("media_type"))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ContentError(
            f"the bytes of its {source.get('media_type')} are not at {path} ({exc.strerror or exc}): "
            f"a promoted case keeps them in {BLOBS}/ beside it; copy that folder along with the case"
        ) from None
    if hashlib.sha256(raw).hexdigest() != digest:
        raise ContentError(f"{path} does not hold the bytes of sha256 {digest} (changed since written?)")
    data = {k: v for k, v in source.items() if k != "sha256"} | {"data": base64.b64encode(raw).decode()}
    return parse_block(shape | {"source": data})


def _data(shape: dict[str, Any]) -> str:
    """The base64 data of a block in the API's shape (an image's or PDF's); '' for any other."""
    source = shape.get("source")
    return str(source["data"]) if isinstance(source, dict) and source.get("type") == "base64" else ""


def placeholders(text: str, workdir: str, bases: Collection[str], durations: bool = True) -> str:
    """`text` with what differs between worlds (the corpus's base URL, each of `bases`) and, with
    `durations`, timings written as placeholders. A model's replies keep their timings: `{duration}`
    is never filled back in, so a call's "1.5s" would reach the tool as "{duration}" in the replay."""
    if durations:
        text = DURATIONS.sub(DURATION, text)
    if workdir:
        text = text.replace(workdir, WORKDIR)
    # whole addresses only: a base "...:4234" must not eat the start of "...:42345"
    return LOOPBACK_URL.sub(lambda m: CORPUS if m.group(0) in bases else m.group(0), text) if bases else text


def _reply(entry: Reply, clean: Any) -> dict[str, Any]:
    return {
        "content": [_block(p, clean) for p in entry.parts],
        "input_tokens": entry.input_tokens,
        "output_tokens": entry.output_tokens,
        "stop_reason": entry.stop_reason,
    } | ({"stop": str(kind)} if (kind := kind_to_keep(entry.stop_reason, entry.stop)) else {})


def _block(part: Text | Call | Opaque, clean: Any) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": clean(part.text)}
    if isinstance(part, Call):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": _map(part.arguments, clean)}
    return dict(part.data)


def _recorded_bases(journal: Iterable[Entry]) -> frozenset[str]:
    """The corpus base URLs the run used: each segment's first loopback URL in its calls or results.
    A run resumed in another process (a limit stop given more turns, a shutdown, an answer) met a
    corpus server of its own there, on another port. Only the first of a segment: an address the
    model made up later in it is no corpus's, and stays as it was."""
    found: set[str] = set()
    base: str | None = None
    for entry in journal:
        if isinstance(entry, Stopped | Suspended):  # what follows is another segment, maybe elsewhere
            base = None
            continue
        texts = [str(c.arguments) for c in entry.calls] if isinstance(entry, Reply) else []
        texts += [entry.text] if isinstance(entry, Result) else []
        for text in texts:
            if base is None and (first := LOOPBACK_URL.search(text)):
                base = first.group(0)
                found.add(base)
    return frozenset(found)


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
    if was.answers_like(got):
        return ""
    if was.call != got.call:
        return f"call {index}: {got.call} now, {was.call} when recorded"
    if (was.text, was.is_error) == (got.text, got.is_error):
        pairs = zip(was.blocks or (), got.blocks or (), strict=False)
        changed = [i for i, (a, b) in enumerate(pairs, 1) if a != b]
        which = f"block {changed[0]} differs" if changed else f"{len(got.blocks or ())} blocks now"
        return (
            f"call {index} ({was.call}) answered with other content blocks: {which} "
            f"({len(was.blocks or ())} recorded), though its text reads the same"
        )
    error = {True: " (an error)", False: ""}
    recorded = f"{_short(was.text)!r}{error[was.is_error]}"
    now = f"{_short(got.text)!r}{error[got.is_error]}"
    return f"call {index} ({was.call}) answered differently: recorded {recorded}, now {now}"


def _short(text: str) -> str:
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."
