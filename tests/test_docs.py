"""The README and the runbooks, held to the code they describe.

- Every `endstate ...` command they show names a command that exists, with options it takes and
  values those options allow.
- Every metric, alert and environment variable they name exists; their PromQL parses.
- Every link into the repository leads to a file and heading there; every alert's `runbook_url` to its
  runbook, which starts with what to check first.
- "No password is ever printed": the commands a CLI line tells you to run next (`endstate pending`,
  `runs`, `review`) carried the store URL as it was given, password and all.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import pg
import pytest
import yaml

from agent.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# What a team reads and copies from: the README, the runbooks, and the READMEs the README sends to.
DOCS = [
    README,
    *sorted((ROOT / "docs" / "runbooks").glob("*.md")),
    *(ROOT / d / "README.md" for d in ("alerts", "dashboards", "agent/evals", "benchmarks")),
]
DOC_IDS = [str(p.relative_to(ROOT)) for p in DOCS]


def code_spans(text: str) -> list[str]:
    """The inline code of a Markdown text (line breaks inside a span joined) and the lines of its
    fenced blocks."""
    fenced = re.findall(r"^ *```[^\n]*\n(.*?)^ *```", text, flags=re.S | re.M)
    inline = re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M)
    spans = re.findall(r"`([^`]+)`", re.sub(r"\s*\n\s*", " ", inline))
    return spans + [line for block in fenced for line in block.splitlines()]


def commands_in(text: str) -> list[list[str]]:
    """Each `endstate ...` command a text shows, as words: from inline code and from the lines of
    code blocks (a comment, the variables before it and a pipe's other side left out). An output
    line (`endstate eval: 17 cases`) is not a command."""
    found = []
    for span in code_spans(text):
        for part in span.split(" # ")[0].split("|"):
            words = part.replace("'", "").replace('"', "").split()
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words.pop(0)
            if len(words) > 1 and words[0] == "endstate" and not words[1].endswith(":"):
                found.append(words)
    return found


@cache
def cli() -> argparse.ArgumentParser:
    return build_parser()


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {
        name: sub
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, sub in action.choices.items()
    }


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def unknown_words(words: list[str]) -> list[str]:
    """What in `endstate WORDS...` the CLI does not have: a command, or an option of that command.
    `start/answer/...` names several commands; `--more-*` any option so begun; `[--model M]` an
    optional one."""
    first, *rest = words[1:]
    names = [n for n in first.split("/") if n != "..."]
    bad = [n for n in names if n not in subcommands(cli())]
    if bad or len(names) != 1:
        return bad
    parser = subcommands(cli())[names[0]]
    while rest and rest[0] in subcommands(parser):
        parser = subcommands(parser)[rest.pop(0)]
    flags = [w.strip("[]").split("=")[0] for w in rest if w.strip("[]").startswith("--")]
    known = options(parser)
    unknown = [
        f for f in flags if f not in known and not any(k.startswith(f[:-1]) for k in known if f[-1] == "*")
    ]
    return unknown + wrong_choices(parser, [w.strip("[]") for w in rest])


def wrong_choices(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """`--option value` pairs whose value is not one of the option's choices (`--reason eror`); a
    placeholder in capitals (`--reason REASON`) stands for any."""
    choices = {f: a.choices for a in parser._actions if a.choices for f in a.option_strings}
    pairs = [w.split("=", 1) if "=" in w else [w, nxt] for w, nxt in pairwise([*words, ""])]
    return [
        f"{flag} {value}"
        for flag, value in pairs
        if flag in choices and not re.fullmatch(r"[A-Z_]+", value) and value not in choices[flag]
    ]


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_endstate_command_shown_exists_with_its_options(doc: Path) -> None:
    """A command that no longer exists, or an option renamed, is a line a team copies and sees fail
    (one README line named `endstate run`, which never existed)."""
    commands = commands_in(doc.read_text())
    wrong = {" ".join(words): unknown for words in commands if (unknown := unknown_words(words))}
    assert not wrong, f"{doc.name}: commands or options the CLI does not have: {wrong}"


def test_the_command_check_sees_a_wrong_command_and_option() -> None:
    text = "Run `endstate run TASK`, then:\n\n```sh\nendstate resume ID --more-turn 5  # more\n```\n"
    assert [unknown_words(words) for words in commands_in(text)] == [["run"], ["--more-turn"]]
    fine = "`endstate start/answer/...`, `endstate resume --more-*`, `endstate doctor [--model M]`"
    assert [unknown_words(words) for words in commands_in(fine)] == [[], [], []]
    values = "`endstate runs --status runing`, `endstate review --reason=limit --reason eror`"
    assert [unknown_words(words) for words in commands_in(values)] == [["--status runing"], ["--reason eror"]]
    fine = "`endstate runs --status cancelled`, `endstate review --reason REASON`"
    assert [unknown_words(words) for words in commands_in(fine)] == [[], []]


def test_every_scenario_a_doc_starts_exists() -> None:
    """`endstate start ... --scenario invoice/which-one`, the README's way to try a suspended run,
    names a scenario the seed agents play."""
    from agent.examples.scenarios import SCENARIOS

    named = {
        words[i + 1]
        for doc in DOCS
        for words in commands_in(doc.read_text())
        for i, word in enumerate(words[:-1])
        if word == "--scenario"
    }
    assert named, "no --scenario found: the check reads nothing"
    assert not (unknown := named - {s.name for s in SCENARIOS}), f"scenarios that do not exist: {unknown}"


# -- the README's Python ------------------------------------------------------------------------------

PYTHON_BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.splitlines()[0][:40] for b in PYTHON_BLOCKS])
def test_the_readmes_python_parses_and_imports_what_exists(block: str) -> None:
    """A sample is pasted and filled in: it parses, and every name it imports is there (each sample
    was run whole, filled in, on 2026-12-03: against tests/messages_api.py where it calls Claude)."""
    compile(block, "README.md", "exec")
    for line in re.findall(r"^from [\w.]+ import [\w, ]+$", block, flags=re.M):
        exec(line, {})


# -- names the docs cite ------------------------------------------------------------------------------


@cache
def source_text() -> str:
    """Every module of the distribution, as one text (names are looked up in it)."""
    return "\n".join(p.read_text() for d in ("agent", "telemetry") for p in sorted((ROOT / d).rglob("*.py")))


@cache
def alert_names() -> set[str]:
    rules = yaml.safe_load((ROOT / "alerts" / "rules" / "alerts.yml").read_text())
    return {r["alert"] for group in rules["groups"] for r in group["rules"] if "alert" in r}


def unknown_names(text: str) -> list[str]:
    """The metrics, alerts and `ENDSTATE_*` variables `text` names that no code, rule or metric has (a
    metric by its name in telemetry/names.py, a histogram's series and a counter's `_total` too; a
    recording rule's name, joined by colons, is the rules' own and checked by promtool)."""
    names = source_text()
    metrics = set(re.findall(r"(?<![\w:.])((?:agent|gen_ai)_[a-z0-9_]+)(?![\w:.(])", text))
    bases = {m: re.sub(r"_(total|bucket|count|sum)$", "", m) for m in metrics}
    unknown = [m for m in metrics if f'"{m}"' not in names and f'"{bases[m]}"' not in names]
    alerts = set(re.findall(r"\b(Endstate[A-Z]\w+)", text)) - alert_names()
    unknown += [a for a in alerts if f'"{a}"' not in names]  # or a search attribute, the workflow
    unknown += [v for v in set(re.findall(r"\b(ENDSTATE_[A-Z_]+)", text)) if f'"{v}"' not in names]
    return sorted(unknown)


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_metric_alert_and_variable_named_exists(doc: Path) -> None:
    """A runbook read at night names a metric to query, an alert to look at, a variable to set: each
    is one the code serves, the rules hold, or the code reads."""
    assert not (unknown := unknown_names(doc.read_text())), f"{doc.name} names what nothing has: {unknown}"


def unknown_span_attributes(text: str) -> list[str]:
    """The span attributes the TraceQL queries of `text` ask for (`{span.stop.reason="limit"}`) that
    no span carries: each must be a name of telemetry/names.py or the code."""
    queries = [span for span in code_spans(text) if span.lstrip().startswith("{")]  # TraceQL's braces
    asked = {m for query in queries for m in re.findall(r"\bspan\.([a-z_][\w.]*)", query)}
    return sorted(a for a in asked if f'"{a}"' not in source_text())


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_span_attribute_a_traceql_query_asks_for_exists(doc: Path) -> None:
    """A runbook's Tempo query on an attribute no span has finds nothing, and reads as "no such runs"."""
    assert not (unknown := unknown_span_attributes(doc.read_text())), f"{doc.name} queries {unknown}"


def test_the_span_attribute_check_sees_a_wrong_one() -> None:
    text = '`{span.stop.reason="limit" && span.agent.tasktype="x"}`'
    assert unknown_span_attributes(text) == ["agent.tasktype"]


REPO_DIRS = ("agent", "telemetry", "dashboards", "alerts", "docs", "deploy", "benchmarks", "tests", "scripts")


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_file_of_the_repository_named_exists(doc: Path) -> None:
    """`agent/models/models.toml`, `telemetry/collector.yaml`, `benchmarks/pending_pages.py`: a path
    into this repository that a doc names is there (a run's own files, `evals/promoted/...` or
    `.endstate/...`, are not the repository's)."""
    assert not (missing := missing_paths(doc.read_text())), (
        f"{doc.name} names files that are not here: {missing}"
    )


def missing_paths(text: str) -> list[str]:
    words = [w.rstrip(".,:;)") for span in code_spans(text) for w in span.split()]
    paths = {w for w in words if re.fullmatch(rf"(?:{'|'.join(REPO_DIRS)})/[\w./-]+", w)}
    return [p for p in sorted(paths) if not (ROOT / p).exists()]


def test_the_path_check_sees_a_file_that_is_not_here() -> None:
    text = "See `agent/models/models.toml`, `agent/models/prices.toml` and `evals/promoted/ID.yaml`."
    assert missing_paths(text) == ["agent/models/prices.toml"]


def test_the_name_check_sees_names_that_do_not_exist() -> None:
    text = (
        "Query `agent_stops_total` and `agent_run_turns_bucket`, not `agent_stop_total`; "
        "`EndstateHelpRequestStale` and `EndstateWaiting`, not `EndstateHelpStale`; "
        "set `ENDSTATE_STORE`, not `ENDSTATE_STORE_URL`."
    )
    assert unknown_names(text) == ["ENDSTATE_STORE_URL", "EndstateHelpStale", "agent_stop_total"]


# -- no password in a printed command -------------------------------------------------------------


def test_the_next_commands_printed_hold_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`endstate pending --store postgresql://app:PASSWORD@...` printed `-> endstate answer ID --store
    postgresql://app:PASSWORD@... "your answer"`, and `runs` and `review` their hints likewise: the
    password went to the terminal, its scrollback and any log of it. They now show `app:***@`, as
    every other line of the CLI shows the store."""
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    plain = pg.shared_server().new_database()  # trust auth: the password is taken and not checked
    store = plain.replace("postgresql://postgres@", "postgresql://postgres:s3cret-pw@")
    assert store != plain
    argv = ["--store", store]
    for run_id, scenario in (("asks", "invoice/which-one"), ("gone", "invoice/portal-offline")):
        started = ["start", "invoice-downloader", "Get it", "--scenario", scenario, "--run-id", run_id]
        assert main([*started, *argv]) == 0
    for command in (["pending"], ["runs"], ["review"], ["review", "label", "gone", "correct_give_up"]):
        assert main([*command, *argv]) == 0
    said = capsys.readouterr().out
    assert "--store 'postgresql://postgres:***@127.0.0.1" in said
    assert "s3cret-pw" not in said


def test_the_demo_counts_one_run_segment_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`endstate demo csv/clean` ended "1 run segments; ...", as `endstate review` once said "1 turns"."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert main(["demo", "csv/clean"]) == 0
    assert "\n1 run segment; stop reasons reached: success; all as expected." in capsys.readouterr().out


# -- links and runbooks -------------------------------------------------------------------------------


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown text's headings (`## Check first` is `#check-first`)."""
    titles = re.findall(r"^#+ +(.+?) *$", re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", t.lower()).replace(" ", "-") for t in titles}


def broken_links(doc: Path) -> list[str]:
    """The links of `doc` into this repository whose file is not there, or whose `#anchor` is no
    heading of it."""
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https://..., mailto:
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        if not linked.exists() or (anchor and anchor not in heading_anchors(linked.read_text())):
            broken.append(target)
    return broken


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_every_link_into_the_repository_leads_somewhere(doc: Path) -> None:
    """alerts/README.md sends to `../docs/runbooks/EndstateAgentDown.md`, a runbook to its sibling's
    `#check-first`: a renamed file or heading leaves the reader at a 404."""
    assert not (broken := broken_links(doc)), f"{doc.name} links to what is not here: {broken}"


def test_the_link_check_sees_a_missing_file_and_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Check first\n\n```sh\n# not a heading\n```\n")
    doc = tmp_path / "b.md"
    doc.write_text("[ok](a.md#check-first) [no](a.md#not-a-heading) [gone](c.md) [web](https://x.invalid/)\n")
    assert broken_links(doc) == ["a.md#not-a-heading", "c.md"]


def alert_rules() -> list[dict[str, object]]:
    """Every alerting rule of every file in alerts/rules/."""
    files = sorted((ROOT / "alerts" / "rules").glob("*.yml"))
    groups = [g for f in files for g in yaml.safe_load(f.read_text())["groups"]]
    return [r for g in groups for r in g["rules"] if "alert" in r]


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: str(r["alert"]))
def test_every_alerts_runbook_url_leads_to_its_runbooks_first_steps(rule: dict[str, Any]) -> None:
    """An alert's `runbook_url` (`<base>/<alert>.md`, the base set at deploy) opens the runbook in
    docs/runbooks/ that is titled with the alert's name and starts with what to check first."""
    name = rule["annotations"]["runbook_url"].rsplit("/", 1)[1]
    runbook = ROOT / "docs" / "runbooks" / name
    assert runbook.is_file(), f"{rule['alert']}: runbook_url names {name}, not in docs/runbooks/"
    text = runbook.read_text()
    assert text.startswith(f"# {rule['alert']}\n"), f"{name} is not titled '# {rule['alert']}'"
    assert "check-first" in heading_anchors(text), f"{name} has no '## Check first' section"


def test_the_runbooks_promql_queries_parse(tmp_path: Path) -> None:
    """A query a runbook gives to paste into Prometheus (its ```promql blocks) is PromQL that
    `promtool` reads, each checked as a recording rule's expression."""
    from prom_stack import require_binary

    queries = [q for doc in DOCS for q in re.findall(r"^```promql\n(.*?)^```", doc.read_text(), re.S | re.M)]
    assert queries, "no ```promql block found: the check reads nothing"
    rules = [{"record": f"docs:query_{i}", "expr": q} for i, q in enumerate(queries)]
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "docs", "rules": rules}]}))
    checked = [require_binary("promtool"), "check", "rules", str(path)]
    done = subprocess.run(checked, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
