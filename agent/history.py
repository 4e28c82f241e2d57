"""What the model sees of a long run: a history policy that keeps the context window from overflowing.

The journal keeps everything; the policy shapes the view sent to the model:
- a tool result longer than `max_result_chars` is cut, and the model is told
  what was cut and how to get the rest (a result of content blocks has its
  text cut, its images and PDFs sent whole);
- once the context in use (the last reply's input plus output tokens, and the
  images and PDFs of the results since, which may cost far more than their
  text: an image about 1,600 tokens, a PDF 3,100 a page) passes
  `clear_at` of the window, the tool results so far but the last `keep_last`
  are cleared (the model is told it can call the tool again; an image in a
  cleared result is no longer sent);
- past `compact_at`, or when the API refuses a prompt as too long, older turns
  are compacted into a summary: written by a model (`summarize=ModelSummary()`,
  the agent's own model unless you give one; its call is charged to the run
  and shown as a `chat` span, and when it fails the plain account is used, with
  a note), by a function you pass, or by default a plain account written by code.
Each shrink is a `Shrunk` entry in the journal, so the view is the same in
any process that resumes the run, and stable between shrinks (prompt caching
keeps working). When nothing more can be shrunk the run stops `limit`/`context`.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent._valid import is_number, is_whole
from agent.content import MEDIA_TOKENS, Image, cut_text, media_count, media_tokens, text_chars, text_of
from agent.errors import ConfigError
from agent.journal import CONTEXT_TOKENS, Call, Entry, Note, Reply, Result, Shrunk, Task
from agent.models.base import max_tokens_problem
from agent.stops import MESSAGES_API_STOPS, StopKind

if TYPE_CHECKING:
    from agent.models.base import Model, ModelReply, ModelRequest

log = logging.getLogger("endstate.history")

DEFAULT_WINDOW = 200_000
CHARS_PER_TOKEN = 4  # a rough count, enough to tell whether clearing frees room
CONTEXT_FULL = "context_window_exceeded"  # the `error_type` of a `ModelError` for a prompt that is too long
CLEARED = (
    "[Endstate: this older tool result ({held}) was cleared to save context. "
    "Call the tool again if you need it.]"
)
CUT = (
    "\n[Endstate: this result was cut from {chars} to {kept} characters to save context. "
    "Ask for less at a time (a range, a filter, a page) to see the rest.]"
)
SUMMARY = "[Endstate: the earlier part of this run was compacted to save context. What happened:]\n{summary}"
SUMMARIZE = (
    "[Endstate: your context is nearly full, so the turns above are about to be replaced by a summary "
    "that you write now. Do not call any tool. Write what you need to carry on with the task: the task "
    "itself, what you did and found (names, numbers, paths, identifiers, results), what worked and what "
    "did not, and what is left to do. Answer with the summary only, inside <summary></summary>.]"
)
UNSUMMARIZED = "[Endstate: the model could not write this summary ({why}); code wrote this account.]\n"
UNSUMMARIZED_BY_FUNCTION = (
    "[Endstate: the summarize function could not write this summary ({why}); code wrote this account.]\n"
)


@dataclass(frozen=True)
class ModelSummary:
    """Compaction by a model: it summarizes the older turns itself.

    `model` is the agent's own model when None (the request then shares its
    cached prefix with the turns before); `max_tokens` the agent's when None
    (it fits the agent's thinking budget, if any). The call is charged to the
    run's usage and budget, and seen by telemetry like any model call.
    """

    model: Model | None = None
    max_tokens: int | None = None
    prompt: str = SUMMARIZE

    def __post_init__(self) -> None:
        model = self.model
        if model is not None and not (
            callable(getattr(model, "complete", None)) and isinstance(getattr(model, "name", None), str)
        ):
            raise ConfigError(
                "ModelSummary takes the model to write summaries (AnthropicModel('claude-haiku-4-5')), or "
                f"None for the agent's own; not {model!r:.60} ({type(model).__name__})"
            )
        if self.max_tokens is not None and self.max_tokens < 256:
            raise ConfigError("ModelSummary.max_tokens must be >= 256: a summary needs room")
        if self.max_tokens is not None and (problem := max_tokens_problem(model, self.max_tokens)):
            raise ConfigError(f"ModelSummary: {problem}")


# The stops of a summary call that finished its answer: any other (a refusal, a reply cut off or paused)
# wrote no whole summary. A stop the adapter does not know (OTHER) is taken as finished, as the loop does.
_FINISHED = frozenset({StopKind.END, StopKind.TOOL_USE, StopKind.OTHER})


@dataclass(frozen=True)
class Compaction:
    """A compaction whose summary a model is still to write: what it replaces and how to ask."""

    upto: int
    older: tuple[Entry, ...]  # the older entries as the model was last sent them
    fallback: str  # the account written by code, should the model fail
    how: ModelSummary

    def request(self, system: str, tools: list[dict[str, Any]], max_tokens: int) -> ModelRequest:
        """The summary request: the older turns as the model saw them, then the instruction
        (`max_tokens` is the agent's, unless the policy gives its own)."""
        from agent.models.base import ModelRequest

        journal = (*self.older, Note(self.how.prompt))
        return ModelRequest(system, journal, tools, self.how.max_tokens or max_tokens)

    def done(self, reply: ModelReply) -> Shrunk:
        """The shrink with the model's summary; the account when it wrote none, or its reply did not
        finish (refused, cut off, paused): what it wrote then is no summary of the older turns."""
        if (reply.stop or MESSAGES_API_STOPS[reply.stop_reason]) not in _FINISHED:
            return self.failed(f"its reply ended at stop_reason {reply.stop_reason[:60]!r}")
        summary = summary_in(reply.text)
        return Shrunk(self.upto, summary) if summary else self.failed("it wrote no summary")

    def failed(self, why: str) -> Shrunk:
        """The shrink with the account written by code, saying why the model's is missing."""
        return Shrunk(self.upto, UNSUMMARIZED.format(why=why) + self.fallback)


def summary_in(text: str) -> str:
    """The summary in a model's reply: inside <summary> tags when it used them, else the whole text."""
    found = re.search(r"<summary>(.*?)(?:</summary>|$)", text, re.DOTALL)
    return (found.group(1) if found else text).strip()


@dataclass(frozen=True)
class HistoryPolicy:
    """How a run's history is kept within the model's context window."""

    max_result_chars: int | None = 40_000
    clear_at: float = 0.6
    keep_last: int = 3
    compact_at: float = 0.85
    summarize: Callable[[Sequence[Entry]], str] | ModelSummary | None = None
    enabled: bool = True
    # False judges as releases before 2026-12-02 did: the context in use is the last reply's tokens alone
    # (the images and PDFs of the results since are not added), and clearing a PDF frees one image's
    # tokens, whatever its pages. Only for runs started before then: Temporal's workflow sets it for them
    # (`MEDIA_IN_CONTEXT`), so they shrink at the turns they did when they replay.
    media_in_context: bool = True
    # False judges as releases before 2026-12-06 did: the text of the results since the last reply is not
    # added to the context in use (25 parallel reads of 40,000 characters went out as one request of some
    # 250,000 tokens, which the API refused as too long before the history was shrunk). Only for runs
    # started before then: Temporal's workflow sets it for them (`RESULTS_IN_CONTEXT`).
    results_in_context: bool = True

    def __post_init__(self) -> None:
        numbers = (self.clear_at, self.compact_at, self.keep_last, self.max_result_chars or 200)
        whole = (self.keep_last, self.max_result_chars or 200)
        if not all(is_number(n) for n in numbers) or not all(is_whole(n) for n in whole):
            raise ConfigError(
                "HistoryPolicy: clear_at and compact_at are shares of the window (numbers), keep_last and "
                f"max_result_chars whole numbers; got {self.clear_at!r}, {self.compact_at!r}, "
                f"{self.keep_last!r}, {self.max_result_chars!r}"
            )
        if not 0 < self.clear_at <= self.compact_at <= 1:
            raise ConfigError("HistoryPolicy needs 0 < clear_at <= compact_at <= 1")
        if self.keep_last < 0 or (self.max_result_chars is not None and self.max_result_chars < 200):
            raise ConfigError("HistoryPolicy: keep_last must be >= 0 and max_result_chars >= 200 (or None)")
        how = self.summarize
        if not (how is None or isinstance(how, ModelSummary) or callable(how)):
            raise ConfigError(
                "HistoryPolicy.summarize is ModelSummary() (a model writes it), a function of the older "
                f"entries that returns text, or None (an account written by code); not {how!r:.60}"
            )

    @classmethod
    def off(cls) -> HistoryPolicy:
        """Send the whole history as it is; a full window ends the run `limit`/`context`."""
        return cls(max_result_chars=None, enabled=False)

    def models(self) -> tuple[str, ...]:
        """The names of the models this policy calls besides the agent's own (a summary model)."""
        how = self.summarize
        return (how.model.name,) if isinstance(how, ModelSummary) and how.model is not None else ()

    # -- the view -----------------------------------------------------------------------------

    def view(self, journal: Sequence[Entry]) -> list[Entry]:
        """The entries the model is sent for `journal` (rebuilt whole: on resume, and after a shrink)."""
        if not self.enabled:
            return list(journal)
        first = 1 if journal and isinstance(journal[0], Task) else 0
        start, summary = _last_summary(journal)
        begin = max(start, first)
        cleared = _cleared_from(journal, begin, _furthest(journal), self.keep_last)
        out: list[Entry] = list(journal[:first])
        if summary is not None:
            out.append(Note(SUMMARY.format(summary=summary)))
        for i in range(begin, len(journal)):
            out.extend(self.shown(journal[i], i in cleared))
        return out

    def shown(self, entry: Entry, clear: bool = False) -> list[Entry]:
        """How one entry is sent: a result cleared or capped, a shrink not at all."""
        if isinstance(entry, Shrunk):
            return []
        if not isinstance(entry, Result) or not self.enabled:
            return [entry]
        if clear:  # content blocks too: an image cleared is no longer sent
            return [Result(entry.call_id, _cleared(entry), entry.is_error, entry.ran)]
        cap = self.max_result_chars
        if cap is None:
            return [entry]
        if entry.blocks:
            return [_capped_blocks(entry, cap)]
        if len(entry.text) > cap:
            text = entry.text[:cap] + CUT.format(chars=len(entry.text), kept=cap)
            return [Result(entry.call_id, text, entry.is_error, entry.ran)]
        return [entry]

    def cleared_by(self, journal: Sequence[Entry], entry: Entry) -> set[int] | None:
        """The results that `entry`, about to be appended to `journal`, newly clears when it is a plain
        clear at the journal's end (a `Shrunk` with no summary): a view kept in step then changes in
        those alone (`clear_in_view`). None for any other entry or shrink: rebuild the view."""
        plain = type(entry) is Shrunk and entry.summary is None and entry.upto == len(journal)
        if not (self.enabled and plain):
            return None
        return _newly_cleared(journal, self.keep_last)

    def clear_in_view(self, view: list[Entry], journal: Sequence[Entry], cleared: set[int]) -> None:
        """Clear in `view` (the view of `journal` as it was before its last entry, a plain clear, was
        appended) the results at `cleared` (`cleared_by`), in place. A long run past `clear_at` clears
        at every turn: rebuilding the whole view each time made a turn cost as much as the view is long
        (33 ms a turn at 7,000 entries, some 80 times a short run's turn). Read from the end, where
        the view and the journal match entry for entry but for the shrinks, which the view leaves out;
        down to the last summary's end at most (what is before it is not in the view)."""
        at, floor, i = len(view), min(cleared, default=len(journal)), len(journal) - 1
        while i >= floor:
            entry = journal[i]
            if isinstance(entry, Shrunk):
                if entry.summary is not None:  # the view starts where this summary ends
                    floor = max(floor, entry.upto)
            else:
                at -= 1
                if i in cleared:
                    view[at] = self.shown(entry, clear=True)[0]
            i -= 1

    # -- when to shrink ---------------------------------------------------------------------------

    def due(self, journal: Sequence[Entry], window: int | None) -> Shrunk | Compaction | None:
        """The shrink to make before the next call, judged from the last reply's usage, or None."""
        if not self.enabled:
            return None
        sent = (self.max_result_chars or sys.maxsize) if self.results_in_context else None
        used = _context_in_use(journal, self.media_in_context, sent)
        limit = window or DEFAULT_WINDOW
        if used >= self.compact_at * limit:  # clear when that gets under clear_at, else compact
            freed = _clearable_chars(journal, self) // CHARS_PER_TOKEN
            enough = used - freed < self.clear_at * limit
            return self.stronger(journal, clear_first=enough) or self.stronger(journal)  # a clear at least
        if used >= self.clear_at * limit and not _cleared_lately(journal):
            return Shrunk(upto=len(journal))
        return None

    def stronger(self, journal: Sequence[Entry], clear_first: bool = True) -> Shrunk | Compaction | None:
        """The next step when the window is full (the API refused the prompt): clear, then compact
        (a `Compaction` when a model is to write the summary: the loop asks it). `clear_first=False`
        compacts at once (clearing would not free enough)."""
        if not self.enabled:
            return None
        if clear_first and not _cleared_lately(journal) and _results_to_clear(journal, self.keep_last):
            return Shrunk(upto=len(journal))
        upto = _compact_point(journal, self.keep_last)
        if upto is None:
            return None
        older = [e for e in journal[:upto] if not isinstance(e, Shrunk)]
        if isinstance(self.summarize, ModelSummary):
            return Compaction(upto, tuple(self.view(journal[:upto])), account(older), self.summarize)
        return Shrunk(upto=upto, summary=written(self.summarize, older))


def written(summarize: Callable[[Sequence[Entry]], str] | None, older: Sequence[Entry]) -> str:
    """The summary of `older` by the policy's own function (the account by code when none); when it
    raises or writes no text, the account stands in, saying why, as when a model's summary fails:
    a compaction never ends the run (nor leaves the model an empty summary, or a number)."""
    if summarize is None:
        return account(older)
    try:
        summary = summarize(older)
    except (Exception, SystemExit) as exc:  # a KeyboardInterrupt goes up: the run ends `cancelled`
        why = f"it raised {type(exc).__name__}: {exc}"
    else:
        if isinstance(summary, str) and summary.strip():
            return summary
        why = f"it returned {summary!r:.40}, not text"
    log.warning("the history policy's summarize failed (%s); the account written by code stands in", why)
    return UNSUMMARIZED_BY_FUNCTION.format(why=why[:300]) + account(older)


def _cleared(entry: Result) -> str:
    """The note a cleared result is sent as: how much text it held, and its images and PDFs (the model
    saw them, not their placeholder text)."""
    chars = text_chars(entry.blocks) if entry.blocks else len(entry.text)
    images = sum(1 for b in entry.blocks if isinstance(b, Image))
    held = [
        f"{chars} characters",
        _counted(images, "image"),
        _counted(media_count(entry.blocks) - images, "PDF"),
    ]
    return CLEARED.format(held=", ".join(h for h in held if h))


def _counted(n: int, what: str) -> str:
    return "" if n == 0 else f"{n} {what}{'s' if n > 1 else ''}"


def _capped_blocks(entry: Result, cap: int) -> Result:
    """A result of content blocks with its text cut to `cap` characters; images and PDFs are kept whole
    (the cap counts characters of text, and a cut image is no image)."""
    chars = text_chars(entry.blocks)
    if chars <= cap:
        return entry
    blocks = (*cut_text(entry.blocks, cap), CUT.format(chars=chars, kept=cap).lstrip("\n"))
    return Result(entry.call_id, text_of(blocks), entry.is_error, entry.ran, blocks=blocks)


def account(entries: Sequence[Entry]) -> str:
    """A plain summary written by code: the calls made and the last thing the model said."""
    calls: list[Call] = [c for e in entries if isinstance(e, Reply) for c in e.calls]
    said = next((e.text for e in reversed(entries) if isinstance(e, Reply) and e.text), "")
    lines = [
        f"- {c.name}({', '.join(f'{k}={v!r}' for k, v in c.arguments.items())[:200]})" for c in calls[-40:]
    ]
    head = f"{len(calls)} tool calls were made" + (f"; the last {len(lines)}:" if lines else ".")
    tail = f"\nThe last thing you wrote: {said[:1000]}" if said else ""
    return head + ("\n" + "\n".join(lines) if lines else "") + tail


def _context_in_use(journal: Sequence[Entry], media: bool = True, text: int | None = None) -> int:
    """Input plus output tokens of the last reply, what the next call starts from, and about what the
    results since then add: their images and PDFs (a tool that read a 90-page PDF adds some 280,000
    tokens: judged from the last reply alone, the request went out and the API refused it as too
    long), and their text as sent (at most `text` characters each), at `CHARS_PER_TOKEN` (capped, one
    result adds little; many parallel ones can fill the window). `media=False`, `text` None or 0:
    without them, as before (`HistoryPolicy.media_in_context`, `results_in_context`)."""
    added = 0
    for entry in reversed(journal):
        if isinstance(entry, Reply):
            return _ended_with(entry) + added
        if isinstance(entry, Shrunk):
            return 0  # shrunk since the last reply: judge again after the next one
        if isinstance(entry, Result):
            added += _result_tokens(entry, media, text)
    return 0


def _result_tokens(result: Result, media: bool, text: int | None) -> int:
    """About the tokens `result` adds to the next request: its images and PDFs (`media`), and its text
    as sent, at most `text` characters (None: not counted)."""
    tokens = media_tokens(result.blocks) if media and result.blocks else 0
    return tokens + (min(len(result.text), text) // CHARS_PER_TOKEN if text else 0)


def _ended_with(reply: Reply) -> int:
    """The context `reply` ended with: its input plus output, or what its provider said when its
    usage counts more (`CONTEXT_TOKENS`: a server-side tool loop sums the input of every step)."""
    said = reply.provider_data.get(CONTEXT_TOKENS) if reply.provider_data else None
    return said if is_whole(said) and said >= 0 else reply.input_tokens + reply.output_tokens


def _cleared_lately(journal: Sequence[Entry]) -> bool:
    """True when the history was shrunk since the last reply (once per reply is enough)."""
    for entry in reversed(journal):
        if isinstance(entry, Reply):
            return False
        if isinstance(entry, Shrunk):
            return True
    return False


def _last_summary(journal: Sequence[Entry]) -> tuple[int, str | None]:
    """Where the view starts, the last summary's `upto` (0 when none), and that summary: read from the
    end."""
    for i in range(len(journal) - 1, -1, -1):
        entry = journal[i]
        if isinstance(entry, Shrunk) and entry.summary is not None:
            return entry.upto, entry.summary
    return 0, None


def _furthest(journal: Sequence[Entry]) -> int:
    """How far the shrinks cleared: the largest `upto` of any shrink.
    A shrink at `upto` clears the results before it but the last `keep` of them, a first part of the
    run's results that grows with `upto`: together the shrinks clear what the one reaching furthest
    clears. Read from the end, and only back to that `upto`: a shrink recorded at an entry reaches
    no further than the entry (the journal's length when it was recorded, or less for a summary), so
    that rebuilding the view of a long run costs what the view holds, not the run's length times its
    shrinks."""
    upto, i = 0, len(journal) - 1
    while i >= upto:
        entry = journal[i]
        if isinstance(entry, Shrunk):
            upto = max(upto, entry.upto)
        i -= 1
    return min(upto, len(journal))


def _cleared_from(journal: Sequence[Entry], begin: int, upto: int, keep: int) -> set[int]:
    """The results from `begin` on that the shrinks reaching `upto` cleared: those before `upto` but
    the last `keep` results before it."""
    found = [i for i in range(begin, upto) if isinstance(journal[i], Result)]
    kept = _last_results(journal, upto, keep)
    return set(found) - kept


def _last_results(journal: Sequence[Entry], upto: int, keep: int) -> set[int]:
    """The indices of the last `keep` results before `upto` (fewer when there are fewer)."""
    found: set[int] = set()
    i = upto - 1
    while i >= 0 and len(found) < keep:
        if isinstance(journal[i], Result):
            found.add(i)
        i -= 1
    return found


def _results_to_clear(journal: Sequence[Entry], keep: int) -> bool:
    return bool(_newly_cleared(journal, keep))


def _newly_cleared(journal: Sequence[Entry], keep: int) -> set[int]:
    """The results a clear now would clear that no earlier shrink cleared: before the end but the last
    `keep`, and not before the furthest earlier shrink but the last `keep` before it."""
    upto = _furthest(journal)
    begin = min(_last_results(journal, upto, keep), default=upto)  # cleared before it: cleared already
    now = _cleared_from(journal, begin, len(journal), keep)
    return now - _cleared_from(journal, begin, upto, keep)


def _clearable_chars(journal: Sequence[Entry], policy: HistoryPolicy) -> int:
    """About how many characters of the view a clear now would free (results as they are sent)."""
    results = [e for i in _newly_cleared(journal, policy.keep_last) if isinstance(e := journal[i], Result)]
    cap, by_pages = policy.max_result_chars, policy.media_in_context
    return sum(max(0, _sent_chars(r, cap, by_pages) - len(CLEARED)) for r in results)


def _sent_chars(result: Result, cap: int | None, by_pages: bool = True) -> int:
    """About the characters a result takes in the view: its text as capped, and the characters of as
    many tokens as its images and PDFs cost (`media_tokens`: a PDF by its pages; a cleared one frees
    them). `by_pages=False`: each image or PDF as one image, as before (`media_in_context`)."""
    chars = text_chars(result.blocks) if result.blocks else len(result.text)
    tokens = media_tokens if by_pages else lambda blocks: media_count(blocks) * MEDIA_TOKENS
    media = tokens(result.blocks) * CHARS_PER_TOKEN if result.blocks else 0
    return min(chars, cap or chars) + media


def _compact_point(journal: Sequence[Entry], keep: int) -> int | None:
    """Where a compaction ends: just before the reply of the `keep`-th last turn (whole turns kept)."""
    replies = [i for i, e in enumerate(journal) if isinstance(e, Reply)]
    if len(replies) <= max(1, keep):
        return None
    upto = replies[-max(1, keep)]
    done = max((e.upto for e in journal if isinstance(e, Shrunk) and e.summary is not None), default=0)
    return upto if upto > done else None
