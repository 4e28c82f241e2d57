"""Eval cases: the YAML users write, loaded and checked field by field.

A case file holds `cases:`, a list of cases (or is that list itself). A case:

    name: invoice/portal-offline        # unique across the cases run together
    agent: invoice-downloader           # a seed agent
    fixture: portal_offline             # the outside world (agent.evals.fixtures)
    script: invoice/portal-offline      # scripted replies for offline runs
    task: Download the September ...    # default: the script's task
    task_type: invoice_download         # default: the agent's
    expect: gave_up                     # the stop reason the run must end in
    impossible: true                    # impossible on purpose: counts for correct give-up
    judge: [nothing_downloaded]         # independent checks (agent.evals.judges)

A promoted case (`endstate review promote`) plays `replay:`, a run's recorded
replies, instead of a script, and checks `results:`, what its calls got back
(their text, and their content blocks: an image's or PDF's bytes in `blobs/`
beside the case file; agent.evals.replay); its reviewer's label stands in for
a judge.

A team's own agent comes from its catalog, as `endstate serve --catalog` and
`endstate start --catalog` name it: the case says `catalog: mypkg.agents:catalog`
(or the cases are run with `endstate eval --catalog ...` / `$ENDSTATE_CATALOG`),
gives the run's `state:` in place of a fixture, and needs `task` and `task_type`.
The eval builds the agent as the catalog would for a new run (`prepare`, then
`build`) and swaps its model for the replay, or for `--model`; a case written without a
replay runs the model its entry builds. A judge the catalog's module registers is known once the
case names the catalog.

and optionally `expect_limit` (which budget, with `expect: limit`),
`expect_rejected` (a "done" was rejected by the verifiers on the way),
`then: {action, text, expect}` (what a person does after a suspension),
`budget: {turns, seconds, tokens, cost}`, `extend` (the same keys: budget a
person added after a limit stop, `endstate resume --more-*`, added to the
agent's ceilings as the resume did), `offline_only`, `break_verifiers`,
`timeout` (seconds the case may take: its deadline, over the eval's) and
`description`. Every error names the file, the case and the field.
"""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from agent._valid import is_count, is_finite_from_zero, is_text, is_whole
from agent.budget import check_most
from agent.content import Block, ContentError
from agent.durable.catalog import import_problem
from agent.errors import ConfigError
from agent.evals.deadline import MAX_TIMEOUT
from agent.evals.fixtures import FIXTURES
from agent.evals.judges import CHECKS, JUDGES, NOT_FOR_SUCCESS
from agent.evals.loading import CatalogHangs, catalog_timeout, load_within
from agent.evals.replay import CANCELLED, RecordedResult, Replay, block_of_case
from agent.evals.scripts import scripts
from agent.examples.scenarios import AGENTS
from agent.result import LimitKind, StopReason
from agent.stops import StopKind, kind_named
from agent.text import all_shown

ACTIONS = ("answer", "approve", "deny", "expire", "resume")
BUDGET_KEYS = ("turns", "seconds", "tokens", "cost")
FIELDS = (
    "name",
    "agent",
    "fixture",
    "script",
    "task",
    "task_type",
    "expect",
    "expect_limit",
    "expect_rejected",
    "impossible",
    "judge",
    "then",
    "budget",
    "extend",
    "offline_only",
    "break_verifiers",
    "description",
    "replay",
    "results",
    "catalog",
    "state",
    "timeout",
)


class CaseError(ConfigError):
    """A case file that cannot be used; the message names the file, the case and the field."""


@dataclass(frozen=True)
class FollowUpSpec:
    """What a person (or the host) does after the first segment, and how the run must end then."""

    action: str
    expect: StopReason
    text: str = ""


@dataclass(frozen=True)
class JudgeRef:
    """A judge named by a case, with its keyword arguments."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One eval case, validated."""

    name: str
    agent: str
    fixture: str  # '' for an agent from a catalog: its entry builds the world
    task: str
    task_type: str
    expect: StopReason
    source: str
    script: str | None = None
    expect_limit: LimitKind | None = None
    expect_rejected: bool | None = None
    impossible: bool = False
    judges: tuple[JudgeRef, ...] = ()
    then: FollowUpSpec | None = None
    budget: Mapping[str, float] = field(default_factory=dict)
    extend: Mapping[str, float] = field(default_factory=dict)  # added to the ceilings, as a resume's
    offline_only: bool = False
    break_verifiers: bool = False
    description: str = ""
    replay: Replay | None = None
    catalog: str | None = None  # module:attr of the catalog the agent comes from; None: a seed agent
    state: Mapping[str, Any] = field(default_factory=dict)  # the run's state, for the catalog entry
    timeout: float | None = None  # seconds the case may take (None: the eval's; agent.evals.deadline)

    @property
    def expected(self) -> list[StopReason]:
        """The stop of each segment: the first, then the one after the follow-up."""
        return [self.expect] + ([self.then.expect] if self.then else [])


# -- loading ------------------------------------------------------------------------


def shipped_cases_dir() -> Path:
    """The folder of the cases shipped for the seed agents."""
    return Path(str(resources.files("agent.evals.cases")))


def load_cases(paths: Iterable[str | Path] = (), catalog: str | None = None) -> list[Case]:
    """Load every case from files and folders (`*.yaml`, `*.yml`); the shipped cases when none given.

    `catalog` (module:attr) is where the agents of cases that name neither a seed agent nor a
    catalog of their own come from.
    """
    files = _once([f for p in (list(paths) or [shipped_cases_dir()]) for f in _case_files(Path(p))])
    cases = [case for f in files for case in load_file(f, catalog)]
    _check_unique(cases)
    return cases


def load_file(path: Path, catalog: str | None = None) -> list[Case]:
    """The cases of one file (`catalog`: as for `load_cases`)."""
    try:
        text = _read(path)
        _count_values(text)
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader
    except _TooBig as big:
        raise CaseError(f"{path}: {big}") from None
    except _Duplicate as dup:
        first, second = dup.lines
        raise CaseError(
            f"{path}: {_case_holding(text, dup.mapping_at)}field {dup.key!r}: given twice (lines {first} "
            f"and {second}); YAML would keep only the last one: keep one"
        ) from None
    except OSError as exc:
        raise CaseError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise CaseError(f"{path}: not UTF-8 text (byte {exc.start}): save the case file as UTF-8") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise CaseError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from exc
    raw = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(raw, list) or not raw:
        raise CaseError(f"{path}: expected a non-empty list of cases, or a mapping with 'cases:' holding one")
    return [_parse(_Fields(item, str(path), i), catalog) for i, item in enumerate(raw, 1)]


def _read(path: Path) -> str:
    """The file's text, read up to MAX_FILE bytes: /dev/zero was read until memory ran out."""
    with path.open("rb") as file:
        data = file.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise _TooBig(f"larger than {MAX_FILE} bytes: not a case file")
    return data.decode()


class _Duplicate(Exception):
    """A key given twice in one mapping of a case file."""

    def __init__(self, key: str, lines: tuple[int, int], mapping_at: tuple[int, int]) -> None:
        super().__init__(key)
        self.key, self.lines, self.mapping_at = key, lines, mapping_at


MAX_FILE = 64 * 2**20  # bytes of a case file (a promoted run's images and PDFs are kept beside it)
MAX_DEPTH = 100  # levels of nested values in a case file: deeper, PyYAML's composer overflows the stack
MAX_VALUES = 1_000_000  # values in a case file once aliases are expanded: 9 anchors make 387 million


class _TooBig(Exception):
    """A case file nested too deep, or whose aliases expand to too many values."""


class _StrictLoader(yaml.SafeLoader):
    """The safe loader, refusing a key given twice in one mapping: YAML would silently keep the last
    (a second `judge:` dropped the first judge). Keys merged from an anchor (`<<: *base`) may be
    overridden: they are not the mapping's own. Values nested over MAX_DEPTH deep or aliases
    expanding to over MAX_VALUES values are refused before they are built."""

    depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise _TooBig(f"values nested more than {MAX_DEPTH} deep (line {line}): use fewer levels")
            return super().compose_node(parent, index)  # type: ignore[no-any-return,return-value]
        finally:
            self.depth -= 1

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None and _expanded(node, {}) > MAX_VALUES:
            raise _TooBig(
                f"more than {MAX_VALUES} values once its aliases (*name) are expanded: "
                "an alias bomb, or a file to split; name each anchor's values fewer times"
            )
        return node  # type: ignore[no-any-return]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[str, int] = {}
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                continue
            line = key.start_mark.line + 1
            if key.value in seen:
                raise _Duplicate(key.value, (seen[key.value], line), _at(node))
            seen[key.value] = line
        return super().construct_mapping(node, deep)


def _count_values(text: str) -> None:
    """Refuse a file of more than MAX_VALUES values (aliases counted once) or nested over MAX_DEPTH
    deep while its events stream by, read by libyaml when PyYAML has it: a 27 MB file of 3 million
    plain values was composed whole (137 s) before it was refused. A file that is no valid YAML
    passes here, to be named by the loader."""
    values = depth = 0
    try:
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                continue
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else "?"
                    raise _TooBig(f"values nested more than {MAX_DEPTH} deep (line {line}): use fewer levels")
            values += isinstance(event, yaml.NodeEvent)
            if values > MAX_VALUES:
                raise _TooBig(f"more than {MAX_VALUES} values: split its cases into several files")
    except yaml.YAMLError:
        return


def _expanded(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values `node` holds with every alias expanded, each shared node counted once per use
    (`sizes` remembers each node's count, so a bomb is counted without being built)."""
    if id(node) not in sizes:
        sizes[id(node)] = 1  # a recursive alias (&a [*a]) counts once
        children = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        sizes[id(node)] = 1 + sum(_expanded(child, sizes) for child in children)
    return sizes[id(node)]


def _at(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line, node.start_mark.column


def _case_holding(text: str, at: tuple[int, int]) -> str:
    """ "case 'NAME': " (or "case #N: ") for the case of the mapping that starts `at` (line, column),
    '' for the file's own top level."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    items = root
    if isinstance(root, yaml.MappingNode):
        if _at(root) == at:
            return ""
        items = next((v for k, v in reversed(root.value) if getattr(k, "value", None) == "cases"), None)
    if not isinstance(items, yaml.SequenceNode):
        return ""
    found = [(i, item) for i, item in enumerate(items.value, 1) if _at(item) <= at]
    if not found:
        return ""
    i, item = found[-1]
    names = [v.value for k, v in getattr(item, "value", ()) if getattr(k, "value", None) == "name"]
    return f"case {names[0]!r}: " if names and isinstance(names[0], str) else f"case #{i}: "


def _case_files(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted([*path.rglob("*.yaml"), *path.rglob("*.yml")])
        if not found:
            raise CaseError(f"{path}: no *.yaml case files in this folder")
        return found
    if not path.exists():
        raise CaseError(f"{path}: no such case file or folder")
    return [path]


def _once(files: list[Path]) -> list[Path]:
    """Each file once, in the order first named: a folder and a file in it (`evals/ evals/mine.yaml`)
    made every case of that file 'already used' in itself."""
    first: dict[Path, Path] = {}
    for f in files:
        first.setdefault(f.resolve(), f)
    return list(first.values())


def _check_unique(cases: list[Case]) -> None:
    seen: dict[str, Case] = {}
    for case in cases:
        if case.name in seen:
            raise CaseError(
                f"{case.source}: case {case.name!r}: field 'name': already used in {seen[case.name].source}"
            )
        seen[case.name] = case


# -- one case -----------------------------------------------------------------------


MAX_PROBLEM = 400  # characters of a value shown in an error: a YAML alias can expand to megabytes


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else f"{text[: most - 25]}... ({len(text)} characters)"


class _Fields:
    """A raw case mapping, with readers that raise errors naming the file, the case and the field."""

    def __init__(self, raw: Any, source: str, index: int) -> None:
        self.source, self.label = source, f"case #{index}"
        if not isinstance(raw, dict):
            raise self.error(None, f"expected a mapping of fields, got {type(raw).__name__}")
        self.raw = raw
        if isinstance(raw.get("name"), str) and raw["name"].strip():
            self.label = f"case {_short(repr(raw['name']), 80)}"
        if unknown := sorted(set(map(str, raw)) - set(FIELDS)):
            raise self.error(unknown[0], f"unknown field; the fields are: {', '.join(FIELDS)}")

    def error(self, name: str | None, problem: str) -> CaseError:
        where = f" field {_short(repr(name), 80)}:" if name else ""
        return CaseError(f"{self.source}: {self.label}:{where} {_short(problem, MAX_PROBLEM)}")

    def text(self, name: str, default: str | None = None) -> str:
        value = self.raw.get(name, default)
        if value is None:
            raise self.error(name, "required")
        if not is_text(value):
            raise self.error(name, f"must be a non-empty string, got {value!r}")
        return value.strip()

    def optional_text(self, name: str) -> str | None:
        return self.text(name) if name in self.raw else None

    def flag(self, name: str, default: bool | None = False) -> Any:
        value = self.raw.get(name, default)
        if value is not None and not isinstance(value, bool):
            raise self.error(name, f"must be true or false, got {value!r}")
        return value

    def choice(self, name: str, options: Iterable[str]) -> str:
        return self.pick(name, self.raw.get(name), options)

    def pick(self, name: str, value: Any, options: Iterable[str]) -> str:
        """`value` if it is one of `options`; the error lists them."""
        options = [str(o) for o in options]
        if value is None:
            raise self.error(name, f"required; one of: {', '.join(options)}")
        if value not in options:
            raise self.error(name, f"{value!r} is not one of: {', '.join(options)}")
        return str(value)


MAX_NAME = 200  # characters of a case's name: a column of the eval table


def _parse(f: _Fields, default_catalog: str | None = None) -> Case:
    name = _name(f)
    catalog = _catalog(f, default_catalog)
    world = _seed_world(f) if catalog is None else _catalog_world(f, catalog)
    then = _then(f)
    expect = StopReason(f.choice("expect", StopReason))
    case = Case(
        name=name,
        **world,
        expect=expect,
        source=f.source,
        expect_limit=_expect_limit(f, expect, then),
        expect_rejected=f.flag("expect_rejected", None),
        impossible=f.flag("impossible"),
        judges=_judges(f, world.get("catalog")),
        then=then,
        budget=_budget(f),
        extend=_budget(f, "extend"),
        offline_only=f.flag("offline_only"),
        break_verifiers=f.flag("break_verifiers"),
        description=f.optional_text("description") or "",
        replay=_replay(f),
        timeout=_timeout(f),
    )
    _check_consistent(f, case)
    return case


def _name(f: _Fields, field: str = "name", default: str | None = None) -> str:
    """The case's name (or task type): it heads a row of the table, so one line that shows as itself
    (a newline broke the table, an escape sequence was written raw to the terminal) and at most
    MAX_NAME long."""
    name = f.text(field, default)
    if not all_shown(name):
        raise f.error(field, "must be one line of printable characters: no line breaks, tabs or escapes")
    if len(name) > MAX_NAME:
        raise f.error(field, f"at most {MAX_NAME} characters, got {len(name)}")
    return name


def _seed_world(f: _Fields) -> dict[str, Any]:
    """A seed agent's case: the agent, its fixture, its script, and defaults from them."""
    agent = f.choice("agent", AGENTS)
    if "state" in f.raw:
        raise f.error(
            "state", "only for an agent from a catalog (with 'catalog'); a seed agent's world is its fixture"
        )
    script = _script(f, agent)
    return {
        "agent": agent,
        "fixture": _fixture(f, agent),
        "task": f.text("task", script.task if script else None),
        "task_type": _name(f, "task_type", AGENTS[agent].TASK_TYPE),
        "script": script.name if script else None,
    }


def _catalog_world(f: _Fields, catalog: str) -> dict[str, Any]:
    """A catalog agent's case: no fixture or script; the run's state for its catalog entry."""
    for seed_only in ("fixture", "script"):
        if seed_only in f.raw:
            raise f.error(
                seed_only,
                f"a catalog agent's case has no {seed_only}: its catalog entry builds the world from "
                "'state', and the model plays 'replay' (or --model)",
            )
    state = f.raw.get("state", {})
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise f.error("state", "must be a mapping: the run's state as its catalog entry takes it")
    return {
        "agent": f.text("agent"),
        "fixture": "",
        "task": f.text("task"),
        "task_type": _name(f, "task_type"),
        "catalog": catalog,
        "state": dict(state),
    }


def _catalog(f: _Fields, default: str | None) -> str | None:
    """The catalog the case's agent comes from; None for a seed agent in a fixture's world."""
    if "catalog" in f.raw:
        return f.text("catalog")
    if "fixture" in f.raw or "agent" not in f.raw or f.raw["agent"] in AGENTS:
        return None
    if default is None:
        agent = f.raw.get("agent")
        raise f.error(
            "agent",
            f"{agent!r} is not a seed agent ({', '.join(AGENTS)}): name the catalog it comes from in the "
            "case (catalog: module:attr), or run `endstate eval --catalog module:attr` "
            "(or set $ENDSTATE_CATALOG)",
        )
    return default


def _replay(f: _Fields) -> Replay | None:
    """Recorded replies (`replay:`) and the results their calls got (`results:`)."""
    if "replay" not in f.raw:
        if "results" in f.raw:
            raise f.error("results", "only makes sense with 'replay' (the recorded replies)")
        return None
    if "script" in f.raw:
        raise f.error("replay", "a case plays either a 'script' or a 'replay', not both")
    replies = f.raw["replay"]
    if not isinstance(replies, list) or not replies or not all(_is_reply(r) for r in replies):
        raise f.error("replay", "must be a non-empty list of replies, each {content: [blocks], ...}")
    for i, r in enumerate(replies):
        _check_reply(f, i, r)
        if r.get("stop_reason") is not None and not isinstance(r["stop_reason"], str):
            raise f.error(f"replay[{i}].stop_reason", f"must be the Messages API's word, {STOP_WORDS}")
        if r.get("stop") is not None and kind_named(r["stop"]) is None:
            raise f.error(f"replay[{i}].stop", f"must be one of: {', '.join(StopKind)}")
        if not isinstance(r.get(CANCELLED, False), bool):
            raise f.error(
                f"replay[{i}].{CANCELLED}", "must be true or false (true: the host cancels the run there)"
            )
    results = f.raw.get("results", [])
    if not isinstance(results, list) or not all(_is_result(r) for r in results):
        raise f.error("results", "must be a list of {call, text, is_error?, blocks?}")
    recorded = tuple(
        RecordedResult(r["call"], r["text"], r.get("is_error", False), _blocks(f, i, r))
        for i, r in enumerate(results)
    )
    return Replay(tuple(replies), recorded)


def _blocks(f: _Fields, index: int, result: dict[str, Any]) -> tuple[Block, ...] | None:
    """A recorded result's content blocks, an image's or PDF's bytes read from beside the case file."""
    if "blocks" not in result:
        return None
    raw = result["blocks"]
    if not isinstance(raw, list) or not raw:
        raise f.error(f"results[{index}].blocks", "must be a non-empty list of content blocks")
    folder = Path(f.source).parent
    blocks = []
    for k, shape in enumerate(raw):
        try:
            blocks.append(block_of_case(shape, folder))
        except ContentError as exc:
            raise f.error(f"results[{index}].blocks[{k}]", str(exc)) from None
    return tuple(blocks)


STOP_WORDS = "such as end_turn, tool_use, max_tokens, pause_turn or refusal"


def _is_reply(raw: Any) -> bool:
    content = raw.get("content") if isinstance(raw, dict) else None
    return isinstance(content, list) and all(isinstance(b, dict) and "type" in b for b in content)


REPLY_KEYS = ("content", "input_tokens", "output_tokens", "stop_reason", "stop", CANCELLED)


def _check_reply(f: _Fields, index: int, reply: dict[str, Any]) -> None:
    """A recorded reply as promote writes it: its keys, token counts, and text and tool-use blocks
    (another block type is a provider's own, kept as it is). A hand edit gone wrong is refused here,
    naming it, instead of failing the replayed run as if the agent had."""
    where = f"replay[{index}]"
    if unknown := [k for k in reply if k not in REPLY_KEYS]:
        raise f.error(f"{where}.{unknown[0]}", f"unknown key; a reply has: {', '.join(REPLY_KEYS)}")
    for key in ("input_tokens", "output_tokens"):
        if reply.get(key) is not None and not is_count(reply[key]):
            raise f.error(
                f"{where}.{key}", f"must be a whole number from 0 to 2**63 - 1, got {reply[key]!r:.80}"
            )
    for k, block in enumerate(reply["content"]):
        if problem := _block_problem(block):
            raise f.error(f"{where}.content[{k}]", problem)


def _block_problem(block: dict[str, Any]) -> str:
    """What is wrong with a text or tool-use block of a recorded reply ("" when nothing is)."""
    if block["type"] == "text" and not isinstance(block.get("text"), str):
        return "a text block needs 'text', a string"
    if block["type"] != "tool_use":
        return ""
    if not (is_text(block.get("id")) and is_text(block.get("name"))):
        return "a tool_use block needs 'id' and 'name', non-empty strings"
    if not isinstance(block.get("input"), dict):
        return "a tool_use block needs 'input', a mapping of the call's arguments"
    return ""


def _is_result(raw: Any) -> bool:
    return (
        isinstance(raw, dict)
        and isinstance(raw.get("call"), str)
        and isinstance(raw.get("text"), str)
        and isinstance(raw.get("is_error", False), bool)
    )


def _script(f: _Fields, agent: str) -> Any:
    if "script" not in f.raw:
        return None
    known = scripts()
    scenario = known[f.choice("script", known)]
    if scenario.agent != agent:
        raise f.error("script", f"{scenario.name!r} is a script for {scenario.agent}, not {agent}")
    return scenario


def _fixture(f: _Fields, agent: str) -> str:
    name = f.choice("fixture", FIXTURES)
    if FIXTURES[name].agent != agent:
        fits = ", ".join(n for n, x in FIXTURES.items() if x.agent == agent)
        raise f.error("fixture", f"{name!r} is a world for {FIXTURES[name].agent}; for {agent} use: {fits}")
    return name


def _expect_limit(f: _Fields, expect: StopReason, then: FollowUpSpec | None) -> LimitKind | None:
    if "expect_limit" not in f.raw:
        return None
    if StopReason.LIMIT not in (expect, then.expect if then else None):
        raise f.error("expect_limit", "only makes sense when the case expects a limit stop")
    return LimitKind(f.choice("expect_limit", LimitKind))


def _then(f: _Fields) -> FollowUpSpec | None:
    raw = f.raw.get("then")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise f.error("then", "must be a mapping with action, expect and optionally text")
    if unknown := sorted(map(str, set(raw) - {"action", "text", "expect"})):
        raise f.error(f"then.{unknown[0]}", "unknown key; the keys are action, expect, text")
    action = f.pick("then.action", raw.get("action"), ACTIONS)
    expect = f.pick("then.expect", raw.get("expect"), StopReason)
    text = raw.get("text", "")
    if not isinstance(text, str):  # YAML reads `text: no` as false, `text: 42` as a number
        problem = f"must be a string, got {text!r:.60}: YAML reads an unquoted no, yes, on, off or number so"
        raise f.error("then.text", f'{problem}; put the text in quotes (text: "no")')
    if action == "answer" and not text.strip():
        raise f.error("then.text", "an 'answer' needs the person's answer as a non-empty string")
    return FollowUpSpec(action, StopReason(expect), text)


def _judges(f: _Fields, catalog: str | None = None) -> tuple[JudgeRef, ...]:
    raw = f.raw.get("judge", [])
    items = raw if isinstance(raw, list) else [raw]
    return tuple(_judge(f, item, catalog) for item in items)


def _judge(f: _Fields, item: Any, catalog: str | None = None) -> JudgeRef:
    if isinstance(item, dict) and len(item) == 1:
        name, params = next(iter(item.items()))
    else:
        name, params = item, {}
    if not isinstance(name, str) or not isinstance(params, dict):
        raise f.error("judge", f"each judge is a name or {{name: {{argument: value}}}}, got {item!r}")
    if name not in JUDGES and catalog is not None:
        _import_judges_of(f, catalog)
    f.pick("judge", name, JUDGES)
    try:
        inspect.signature(JUDGES[name]).bind(None, **params)
    except TypeError as exc:
        raise f.error("judge", f"{name}: {_unknown_arguments(JUDGES[name], params) or exc}") from exc
    if (problem := _argument_problem(JUDGES[name], params)) is not None:
        raise f.error("judge", f"{name}: {problem}")
    if name in CHECKS and (problem := CHECKS[name](**params)):
        raise f.error("judge", f"{name}: {problem}")
    return JudgeRef(name, params)


def _unknown_arguments(fn: Any, params: Mapping[str, Any]) -> str:
    """The arguments a judge does not take, with those it does ('' when it takes them all): a
    misspelt `ordr:` was said only as the right one missing."""
    taken = list(inspect.signature(fn).parameters)[1:]  # the first is the run
    unknown = [str(p) for p in params if p not in taken]
    if not unknown or any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()):
        return ""
    return f"unknown argument(s) {', '.join(map(repr, unknown))}; it takes: {', '.join(taken) or 'none'}"


def _import_judges_of(f: _Fields, catalog: str) -> None:
    """Import the module of a case's catalog, so the judges it registers with `@judge` beside its
    agents are known: a team's own judge was refused as unknown, its module not yet imported. An
    import that hangs is given up at its deadline (`load_within`)."""
    module, seconds = catalog.partition(":")[0], catalog_timeout()
    try:
        load_within(module, lambda: importlib.import_module(module), seconds)
    except CatalogHangs as exc:
        raise f.error("catalog", str(exc)) from None
    except Exception as exc:  # a module that fails to import is the case's error, named as such
        problem = f"cannot import {module!r} for its judges: {import_problem(module, exc)}"
        raise f.error("catalog", problem) from None


def _argument_problem(fn: Any, params: Mapping[str, Any]) -> str | None:
    """An argument of a type its judge's hints do not take, or None: `words: portal` for a list of
    words was read a letter at a time, a check far weaker than the one written, and it passed."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # hints it cannot read (a user's judge): its arguments go as they are
        return None
    for name, value in params.items():
        if name in hints and not _fits(hints[name], value):
            shown = getattr(hints[name], "__name__", None) or str(hints[name]).replace("typing.", "")
            return f"argument {name!r} must be {shown}, got {value!r:.60} ({type(value).__name__})"
    return None


def _fits(hint: Any, value: Any) -> bool:
    """Whether a YAML value is of the type `hint` names (str, int, float, bool, list[X], dict, unions);
    a hint of any other kind takes anything."""
    origin, args = typing.get_origin(hint) or hint, typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(a, value) for a in args)
    if hint is type(None):
        return value is None
    if origin is list:
        return isinstance(value, list) and (not args or all(_fits(args[0], v) for v in value))
    if origin in (int, float):  # YAML's true is no number; a whole number is a float's value too
        return isinstance(value, int | float if origin is float else int) and not isinstance(value, bool)
    if origin in (str, bool, dict):
        return isinstance(value, origin)
    return True


def _budget(f: _Fields, name: str = "budget") -> dict[str, float]:
    raw = f.raw.get(name, {})
    if not isinstance(raw, dict):
        raise f.error(name, f"must be a mapping of {', '.join(BUDGET_KEYS)}")
    for key, value in raw.items():
        if key not in BUDGET_KEYS:
            raise f.error(name, f"unknown ceiling {key!r}; use {', '.join(BUDGET_KEYS)}")
        if key in ("turns", "tokens") and not (is_whole(value) and value > 0):
            raise f.error(name, f"{key} must be a whole number above 0, got {value!r}")
        if not (is_finite_from_zero(value) and value > 0):
            raise f.error(name, f"{key} must be a finite number above 0, got {value!r}")
        try:
            check_most(key, key, value)
        except ConfigError as exc:
            raise f.error(name, str(exc)) from None
    return dict(raw)


def _timeout(f: _Fields) -> float | None:
    """The case's own deadline in seconds: a finite number above 0, at most a day."""
    value = f.raw.get("timeout")
    if value is None:
        return None
    if not (is_finite_from_zero(value) and value > 0 and value <= MAX_TIMEOUT):
        problem = f"must be a number of seconds above 0, at most {MAX_TIMEOUT:g}, got {value!r}"
        raise f.error("timeout", problem)
    return float(value)


def _action_problem(first: StopReason, action: str) -> str | None:
    """Why `action` cannot follow a first stop of `first` (None when it can): a cancelled run is only
    resumed; a run that needs help waits for an answer, an approval or its deadline, never a bare resume."""
    if first is StopReason.CANCELLED and action != "resume":
        return f"{action!r} cannot follow a cancelled run, which has no question open: use action: resume"
    if first is StopReason.NEED_HELP and action == "resume":
        return (
            "'resume' cannot follow need_help: the run waits for a person. Use action: answer (with text:) "
            "for a question, approve or deny for a tool call, or expire for nobody answering"
        )
    return None


def _check_consistent(f: _Fields, case: Case) -> None:
    if case.then and not case.expect.resumable:
        raise f.error(
            "then",
            f"a follow-up needs a first stop that suspends (need_help or cancelled), not {case.expect}",
        )
    if case.then and (problem := _action_problem(case.expect, case.then.action)):
        raise f.error("then.action", problem)
    if case.impossible and StopReason.SUCCESS in case.expected:
        raise f.error("impossible", "an impossible task cannot expect success")
    if case.impossible and case.expected[-1] is not StopReason.GAVE_UP:
        raise f.error(
            "impossible",
            f"an impossible task is one to give up (counted under correct give-up): its last expected "
            f"stop must be gave_up, not {case.expected[-1]}; for a task that ends otherwise on purpose, "
            "leave impossible out",
        )
    if (case.impossible or StopReason.SUCCESS in case.expected) and not case.judges and not case.replay:
        raise f.error("judge", "a case that expects success or is impossible needs an independent judge")
    names = {ref.name for ref in case.judges}
    if StopReason.SUCCESS in case.expected and not case.impossible and names and names <= NOT_FOR_SUCCESS:
        raise f.error(
            "judge",
            f"{', '.join(sorted(names))} passes every success without a look: a case that expects "
            "success needs a judge that checks what the run did (say csv_matches_hand_cleaned, "
            "report_is_sourced, invoice_saved, code_fixed_not_test, or your own)",
        )
