"""The history policy's view of a long run costs what the view holds, not the run's length times its shrinks.

A run past `clear_at` of its window clears old results about once a turn, each a `Shrunk` entry after
which the view was rebuilt (now changed in place; rebuilt at a compaction): each rebuild read the whole
journal once for every shrink in it (a run of 1,600 turns with a small window took 5.9 ms a turn,
0.75 ms with the view read once).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, overload

from agent import Agent, Budget, HistoryPolicy, NoHooks, tool
from agent.journal import Call, Entry, Reply, Result, Shrunk, Task, Text
from agent.models.scripted import ScriptedModel, call, finish


class CountingJournal(Sequence[Entry]):
    """A journal that counts the entries read from it."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self.reads = 0

    def __len__(self) -> int:
        return len(self.entries)

    @overload
    def __getitem__(self, i: int) -> Entry: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Entry]: ...
    def __getitem__(self, i: int | slice) -> Entry | Sequence[Entry]:
        if isinstance(i, slice):
            part = self.entries[i]
            self.reads += len(part)
            return part
        self.reads += 1
        return self.entries[i]


def turn(n: int) -> list[Entry]:
    c = Call(f"c{n}", "note", {"n": n})
    return [Reply((Text("t"), c), input_tokens=10, output_tokens=5), Result(c.id, f"noted {n}")]


def long_journal(turns: int, clear_every: int, summary_every: int) -> list[Entry]:
    """A run that clears every `clear_every` turns and compacts every `summary_every` turns."""
    journal: list[Entry] = [Task("note numbers")]
    for n in range(turns):
        journal += turn(n)
        if n % summary_every == summary_every - 1:
            replies = [i for i, e in enumerate(journal) if isinstance(e, Reply)]
            journal.append(Shrunk(upto=replies[-3], summary=f"summary at {n}"))
        elif n % clear_every == clear_every - 1:
            journal.append(Shrunk(upto=len(journal)))
    return journal


def reference_view(policy: HistoryPolicy, journal: Sequence[Entry]) -> list[Entry]:
    """The view as it was first written: each shrink clears all results before its `upto` but the last
    `keep_last` of them."""
    first = 1 if journal and isinstance(journal[0], Task) else 0
    start, summary, cleared = 0, None, set[int]()
    for s in (e for e in journal if isinstance(e, Shrunk)):
        found = [i for i in range(min(s.upto, len(journal))) if isinstance(journal[i], Result)]
        cleared |= set(found[: max(0, len(found) - policy.keep_last)])
        if s.summary is not None:
            start, summary = s.upto, s.summary
    out: list[Entry] = list(journal[:first])
    if summary is not None:
        from agent.history import SUMMARY
        from agent.journal import Note

        out.append(Note(SUMMARY.format(summary=summary)))
    for i in range(max(start, first), len(journal)):
        out.extend(policy.shown(journal[i], i in cleared))
    return out


def test_view_reads_each_entry_about_once_however_many_shrinks() -> None:
    journal = long_journal(2_000, clear_every=2, summary_every=10**6)  # 1,000 clears, no summary
    counted = CountingJournal(journal)
    view = HistoryPolicy().view(counted)
    assert len(view) == len(journal) - 1_000  # the shrinks are not sent
    assert counted.reads <= 4 * len(journal), counted.reads  # was about 1,000 times the journal


def test_view_after_a_summary_reads_only_what_follows_it() -> None:
    journal = long_journal(2_000, clear_every=2, summary_every=1_990)  # a summary near the end
    counted = CountingJournal(journal)
    view = HistoryPolicy().view(counted)
    assert len(view) < 40
    assert counted.reads < 200, counted.reads  # not the 5,000 entries before the summary


def test_newly_cleared_reads_only_the_end() -> None:
    from agent.history import _newly_cleared

    journal = long_journal(2_000, clear_every=2, summary_every=10**6)
    journal += turn(10_000) + turn(10_001)
    policy = HistoryPolicy()
    before = {id(e) for e in reference_view(policy, journal) if isinstance(e, Result)}
    after = {id(e) for e in reference_view(policy, [*journal, Shrunk(len(journal))]) if isinstance(e, Result)}
    newly = {i for i, e in enumerate(journal) if id(e) in before - after}
    counted = CountingJournal(journal)
    assert _newly_cleared(counted, 3) == newly and len(newly) == 2
    assert counted.reads < 100, counted.reads


def test_view_is_the_same_as_every_shrink_read_on_its_own() -> None:
    rng = random.Random(7)
    for _ in range(300):
        journal: list[Entry] = [Task("t")] if rng.random() < 0.9 else []
        for n in range(rng.randrange(0, 30)):
            journal += turn(n)[: rng.choice([1, 2, 2])]
            if rng.random() < 0.3:
                summary = f"s{n}" if rng.random() < 0.3 else None
                upto = rng.randrange(0, len(journal) + 1)  # at most its own index, as the loop records them
                journal.append(Shrunk(upto=upto, summary=summary))
        policy = HistoryPolicy(keep_last=rng.choice([0, 1, 3]))
        assert policy.view(journal) == reference_view(policy, journal)
        for cut in range(len(journal)):  # as a compaction's request reads the older part
            assert policy.view(journal[:cut]) == reference_view(policy, journal[:cut])


@tool
def note(n: int) -> str:
    """Write down a number."""
    return f"noted {n}"


def views_read(turns: int, monkeypatch: Any) -> tuple[int, int]:
    """Entries read by the view's rebuilds, and the shrinks, in a scripted run of `turns` turns whose
    small window fills (the scripted model counts 20 tokens a message)."""
    import agent.history as history

    reads, views = [0], [0]
    rebuild = history.HistoryPolicy.view

    def counting(self: HistoryPolicy, journal: Sequence[Entry]) -> list[Entry]:
        counted = CountingJournal(list(journal))
        out = rebuild(self, counted)
        reads[0] += counted.reads
        views[0] += 1
        return out

    with monkeypatch.context() as patched:
        patched.setattr(history.HistoryPolicy, "view", counting)
        scripted_run(turns)
    return reads[0], views[0]


def scripted_run(turns: int) -> Any:
    steps = [[call("note", n=i)] for i in range(turns - 1)] + [[finish("done", "noted")]]
    model = ScriptedModel(steps)
    model.context_window = 8_000  # type: ignore[attr-defined]
    agent = Agent(name="long", model=model, tools=[note], budget=Budget(max_turns=turns + 5), hooks=NoHooks())
    result = agent.run("note numbers")
    assert result.reason == "success" and result.turns == turns
    return result


def test_a_long_run_reads_the_same_a_turn_at_any_length(monkeypatch: Any) -> None:
    short_reads, short_views = views_read(600, monkeypatch)
    long_reads, long_views = views_read(1_800, monkeypatch)
    # rebuilt at each compaction (a plain clear, about once a turn, changes the view in place since
    # test_long_history_view: at every clear before)
    assert short_views >= 2 and long_views > 3 * short_views
    per_turn = (short_reads / 600, long_reads / 1_800)
    assert per_turn[1] < 1.4 * per_turn[0], per_turn  # was 3.6 times (a turn cost what the run had done)
