"""No-progress detection: the detector alone (a table), then in the loop."""

from __future__ import annotations

import pytest

from agent import Budget, ConfigError, LimitKind, ProgressDetector, StopReason, tool
from agent._codec import decode_entry
from agent.models.scripted import call, finish, say
from agent.progress import call_signature, replay

A = call_signature("read_rows", {"path": "a.csv"})
B = call_signature("read_rows", {"path": "b.csv"})
C = call_signature("list_files", {})


def page(i: int) -> str:
    return call_signature("read_page", {"url": "https://x.example", "page": i})


def stuck_at(detector: ProgressDetector, turns: list[list[tuple[str, str]]]) -> int | None:
    """Feed turns of (signature, state) observations; the turn at which the detector says stuck."""
    for index, observations in enumerate(turns, start=1):
        for signature, state in observations:
            detector.observe(signature, state)
        if detector.end_turn():
            return index
    return None


@pytest.mark.parametrize(
    ("detector", "turns", "expected"),
    [
        (ProgressDetector(), [[(A, "s")]] * 3, 3),
        (ProgressDetector(), [[(A, "s")]] * 2, None),
        (ProgressDetector(max_repeats=2), [[(A, "s")]] * 2, 2),
        (ProgressDetector(max_repeats=5), [[(A, "s")]] * 4, None),
        (ProgressDetector(), [[(A, "s1")], [(A, "s2")], [(A, "s3")], [(A, "s4")]], None),
        (ProgressDetector(), [[(A, "s1")], [(A, "s2")], [(A, "s2")], [(A, "s2")]], 4),
        (ProgressDetector(), [[(A, "s"), (A, "s")], [(A, "s")]], 2),
        (ProgressDetector(), [[(A, "s")], [(B, "t")], [(A, "s")], [(B, "t")], [(A, "s")]], 5),
        (ProgressDetector(), [[(A, "s")], [(B, "s")], [(C, "s")]], None),
        (ProgressDetector(), [[(page(i), f"page {i}")] for i in range(1, 30)], None),
        (ProgressDetector(max_idle_turns=2), [[(A, "s")], [], []], 3),
        (
            ProgressDetector(max_idle_turns=3),
            [[(A, "s")], [(B, "t")], [(C, "u")], [(A, "s")], [(B, "t")]],
            None,
        ),
        (ProgressDetector(max_idle_turns=2), [[(A, "s")], [(B, "t")], [(C, "u")], [(A, "s")], [(B, "t")]], 5),
        (ProgressDetector(max_idle_turns=2), [[(A, "s")], [], [(B, "t")], [], [(C, "u")]], None),
        (ProgressDetector(max_idle_turns=None), [[]] * 50, None),
        (ProgressDetector(max_idle_turns=10), [[]] * 10, 10),
    ],
    ids=[
        "3-identical",
        "2-identical",
        "max_repeats-2",
        "max_repeats-5",
        "state-changes-each-time",
        "state-settles",
        "repeats-within-a-turn",
        "interleaved-repeats",
        "different-calls-same-state",
        "paged-reads",
        "idle-turns",
        "rotation-within-idle-limit",
        "rotation-past-idle-limit",
        "news-resets-idle",
        "idle-rule-off",
        "idle-default-10",
    ],
)
def test_progress_detector(detector, turns, expected):
    assert stuck_at(detector, turns) == expected


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"max_repeats": 1}, "max_repeats must be a whole number >= 2"),
        ({"max_repeats": 0}, "max_repeats must be a whole number >= 2"),
        ({"max_repeats": 2.5}, "max_repeats must be a whole number >= 2"),
        ({"max_repeats": "3"}, "max_repeats must be a whole number >= 2"),
        ({"max_idle_turns": 0}, "max_idle_turns must be a whole number >= 1, or None"),
        ({"max_idle_turns": -2}, "max_idle_turns must be a whole number >= 1, or None"),
    ],
)
def test_thresholds_that_would_stop_every_run_are_refused(options, says):
    """max_repeats=1 stopped a run at its first call as no_progress ("called 1 times"), and
    max_idle_turns=0 after its first turn ("0 turns in a row brought nothing new"); a text
    threshold ended each run as error (a TypeError in the comparison)."""
    with pytest.raises(ConfigError, match=says):
        ProgressDetector(**options)


def test_a_detector_in_place_of_its_factory_is_refused_when_the_agent_is_made(make_agent):
    """The agent makes a fresh detector per run: an instance given raised TypeError out of run."""
    with pytest.raises(ConfigError, match=r"progress must be a function that makes a fresh ProgressDetector"):
        make_agent(progress=ProgressDetector(max_repeats=5))


def test_the_stuck_reasons_name_the_rule():
    repeats = ProgressDetector()
    assert stuck_at(repeats, [[(A, "s")]] * 3) == 3
    assert repeats.end_turn() == "read_rows called 3 times with the same arguments and no change in state"
    idle = ProgressDetector(max_idle_turns=2)
    stuck_at(idle, [[(A, "s")], []])
    assert idle.end_turn() == "2 turns in a row brought nothing new"


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        (("read", {"a": 1, "b": 2}), ("read", {"b": 2, "a": 1}), True),
        (("read", {"q": "x y"}), ("read", {"q": "x y"}), True),
        (("read", {"n": {"y": 1, "x": [1, 2]}}), ("read", {"n": {"x": [1, 2], "y": 1}}), True),
        (("read", {"page": 1}), ("read", {"page": 2}), False),
        (("read", {"page": 1}), ("read", {"page": "1"}), False),
        (("read", {}), ("list", {}), False),
        # what the fast encoder refuses or cannot tell apart goes to the standard library's
        (("read", {"x": None}), ("read", {"x": float("nan")}), False),
        (("read", {"x": float("inf")}), ("read", {"x": float("-inf")}), False),
        (("read", {"x": None, "y": 1}), ("read", {"y": 1, "x": None}), True),
        (("read", {1: "a"}), ("read", {"1": "a"}), True),  # as json.dumps writes it
        (("read", {"n": 2**70}), ("read", {"n": 2**70 + 1}), False),
        (("read", {"s": "\udc80"}), ("read", {"s": "\udc81"}), False),
        (("read", {"s": "é"}), ("read", {"s": "e"}), False),
    ],
)
def test_call_signature_is_canonical(left, right, same):
    assert (call_signature(*left) == call_signature(*right)) is same


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


def _nested(depth: int, leaf: object) -> dict[str, object]:
    value: object = leaf
    for _ in range(depth):
        value = {"a": value}
    return {"x": value}


def _cycle() -> dict[str, object]:
    looped: dict[str, object] = {}
    looped["self"] = looped
    return {"x": looped}


@pytest.mark.parametrize(
    ("left", "right", "same"),
    [
        # neither the fast encoder nor the standard library's can write these: never an exception,
        # and what differs stays apart
        ({"k": {1: "a", "b": 2}}, {"k": {"b": 2, 1: "a"}}, True),
        ({"k": {1: "a", "b": 2}}, {"k": {1: "a", "b": 3}}, False),
        ({"k": {(1, 2): "a"}}, {"k": {(1, 2): "a"}}, True),
        ({"k": {(1, 2): "a"}}, {"k": {(1, 3): "a"}}, False),
        ({"k": {"p", "q", "r"}}, {"k": {"r", "q", "p"}}, True),
        ({"k": {1, 2}}, {"k": "{1, 2}"}, False),
        ({"k": b"x"}, {"k": "b'x'"}, False),
        ({"k": b"x"}, {"k": b"y"}, False),
        ({"k": Opaque()}, {"k": "Opaque()"}, False),
        (_nested(3000, 1), _nested(3000, 1), True),
        (_nested(300, 1), _nested(300, 2), False),
        (_cycle(), _cycle(), True),
        (_cycle(), {"x": {"self": {}}}, False),
    ],
    ids=[
        "mixed-keys-order",
        "mixed-keys-values",
        "tuple-keys",
        "tuple-keys-differ",
        "set-order",
        "set-not-its-text",
        "bytes-not-their-text",
        "bytes-differ",
        "object-not-its-text",
        "too-deep",
        "deep-differ",
        "cycle",
        "cycle-not-empty",
    ],
)
def test_call_signature_of_what_json_cannot_hold(left, right, same):
    assert (call_signature("t", left) == call_signature("t", right)) is same


def test_progress_survives_json():
    detector = ProgressDetector()
    stuck_at(detector, [[(A, "s")]] * 2)
    restored = ProgressDetector()
    restored.load_json(detector.to_json())
    assert stuck_at(restored, [[(A, "s")]]) == 1  # the third identical call, across a resume


def test_a_detector_restored_stuck_says_so_before_any_new_call():
    """A detector saved once a call was made `max_repeats` times reads back stuck on it at once: its
    next call of it is not run (`stuck`, `stuck_on`), and a turn that makes no call ends it."""
    detector = ProgressDetector(max_idle_turns=None)
    for _ in range(3):
        detector.observe(A, "s")
    restored = ProgressDetector(max_idle_turns=None)
    restored.load_json(detector.to_json())
    assert restored.stuck() and restored.stuck_on(A) == 3
    assert restored.end_turn() == "read_rows called 3 times with the same arguments and no change in state"


# -- in the loop --------------------------------------------------------------------


@tool
def read_rows(path: str) -> str:
    """Read the rows of a CSV file."""
    return "order_id,email\n1,NULL"


@tool
def read_page(url: str, page: int) -> str:
    """Read one page of a long document."""
    return f"{url} page {page}: ..."


def test_identical_calls_stop_as_no_progress_after_three(make_agent):
    agent = make_agent(then=lambda turn: [call("read_rows", path="orders.csv")], tools=[read_rows])
    result = agent.run("Clean orders.csv")
    assert result.reason is StopReason.NO_PROGRESS
    assert result.turns == 3
    assert len(agent.model.requests) == 3


def test_argument_order_does_not_hide_a_repeat(make_agent):
    steps = [
        [call("read_page", url="u", page=1)],
        [{"type": "tool_use", "name": "read_page", "input": {"page": 1, "url": "u"}}],
        [call("read_page", url="u", page=1)],
    ]
    result = make_agent(*steps, tools=[read_page]).run("task")
    assert result.reason is StopReason.NO_PROGRESS
    assert result.turns == 3


def test_paged_reads_are_progress(make_agent):
    pages = [[call("read_page", url="https://x.example/report", page=i)] for i in range(1, 13)]
    agent = make_agent(
        *pages, [finish("done", "read it all")], tools=[read_page], budget=Budget(max_turns=20)
    )
    result = agent.run("Read the whole report")
    assert result.reason is StopReason.SUCCESS
    assert result.turns == 13


def test_a_changing_state_fingerprint_prevents_no_progress(make_agent):
    @tool
    def clean_batch(ctx, path: str) -> str:
        """Clean the next batch of rows."""
        ctx.state["cleaned"] = ctx.state.get("cleaned", 0) + 100
        return "ok"

    steps = [[call("clean_batch", path="orders.csv")]] * 5 + [[finish("done", "clean")]]
    with_state = make_agent(*steps, tools=[clean_batch], fingerprint=lambda ctx: str(ctx.state["cleaned"]))
    result = with_state.run("Clean orders.csv")
    assert result.reason is StopReason.SUCCESS
    assert result.turns == 6

    without = make_agent(*steps, tools=[clean_batch])  # the result "ok" stands in for the state
    result = without.run("Clean orders.csv")
    assert result.reason is StopReason.NO_PROGRESS
    assert result.turns == 3


def test_the_fingerprint_not_the_result_decides_what_changed(make_agent):
    fetched: list[str] = []

    @tool
    def fetch_page(url: str) -> str:
        """Fetch a page (each response carries a new timestamp)."""
        fetched.append(url)
        return f"fetched at t={len(fetched)}"

    steps = [[call("fetch_page", url="u")]] * 5 + [[finish("give_up", "nothing changes")]]
    result = make_agent(*steps, tools=[fetch_page]).run("task")
    assert result.reason is StopReason.GAVE_UP  # the results differ, so without a fingerprint: progress

    agent = make_agent(*steps, tools=[fetch_page], fingerprint=lambda ctx: "rows: 10")
    result = agent.run("task")
    assert result.reason is StopReason.NO_PROGRESS
    assert result.turns == 3


def test_a_fingerprint_that_is_not_text_ends_the_run_saying_so(make_agent):
    steps = [[call("read_rows", path="a.csv")], [finish("done", "read")]]
    result = make_agent(*steps, tools=[read_rows], fingerprint=lambda ctx: 10).run("task")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "ConfigError")
    assert "fingerprint must return a string, not int" in result.note


def test_k_idle_turns_rotating_calls(make_agent):
    rotation = ["a.csv", "b.csv", "c.csv"]
    agent = make_agent(
        then=lambda turn: [call("read_rows", path=rotation[(turn - 1) % 3])],
        tools=[read_rows],
        progress=lambda: ProgressDetector(max_idle_turns=3),
    )
    result = agent.run("task")
    assert result.reason is StopReason.NO_PROGRESS
    assert result.turns == 6  # turns 4, 5, 6 saw nothing new; no single call was repeated 3 times
    assert result.note == "3 turns in a row brought nothing new"


def test_k_idle_turns_of_talk_without_tools(make_agent):
    agent = make_agent(
        then=lambda turn: [say("Let me think about it some more.")],
        progress=lambda: ProgressDetector(max_idle_turns=4),
    )
    result = agent.run("task")
    assert result.reason is StopReason.NO_PROGRESS
    assert result.turns == 4


def test_without_the_idle_rule_talk_runs_into_the_turn_limit(make_agent):
    agent = make_agent(
        then=lambda turn: [say("Thinking.")],
        progress=lambda: ProgressDetector(max_idle_turns=None),
        budget=Budget(max_turns=7),
    )
    result = agent.run("task")
    assert result.reason is StopReason.LIMIT
    assert result.limit is LimitKind.TURNS


def test_states_that_differ_only_in_undecodable_bytes_are_different_states():
    """Text decoded with `surrogateescape` (a file name or output that is not UTF-8) keeps the bytes
    it could not decode as lone surrogates: two such states are not the same state."""
    from agent.progress import digest

    assert digest(b"caf\xe9".decode(errors="surrogateescape")) != digest(
        b"caf\xe8".decode(errors="surrogateescape")
    )
    assert digest("caf\udce9") != digest("caf?")


@pytest.mark.parametrize("size", [40, 47, 48, 49, 60])
def test_short_and_hashed_signatures_keep_argument_sets_apart(size):
    """Short arguments are their own signature and longer ones a digest: around the cut, a signature
    still tells argument sets apart, ignores key order, and starts with the tool's name."""
    text = "a" * size
    left = call_signature("read", {"s": text, "t": 1})
    assert left == call_signature("read", {"t": 1, "s": text})
    assert left != call_signature("read", {"s": text + "a", "t": 1})
    assert left != call_signature("read", {"s": text[:-1], "t": 1})
    assert left.split(":", 1)[0] == "read"


@pytest.mark.parametrize(
    ("paused", "idle"),
    [
        ({"stop_reason": "pause_turn"}, 1),  # a journal written before entries kept the kind
        ({"stop_reason": "compaction"}, 1),  # paused after a server-side compaction: no turn either
        ({"stop_reason": "paused_here", "stop": "paused"}, 1),  # a provider's own word, its kind kept
        ({"stop_reason": "end_turn"}, 2),  # a reply that ended its turn is one
    ],
)
def test_progress_rebuilt_from_a_journal_counts_no_paused_reply_as_a_turn(paused: dict, idle: int):
    """Resume rebuilds the detector from the journal, deciding on each reply's kind: a reply the
    loop sent back within its turn (paused) is not a turn there either."""
    talk = {"type": "reply", "parts": [{"type": "text", "text": "thinking"}]}
    entries = [{"type": "task", "text": "t"}, {**talk, **paused}, talk, talk]
    detector = ProgressDetector()
    replay(detector, [decode_entry(e, i) for i, e in enumerate(entries)])
    assert detector.to_json()["idle_turns"] == idle
