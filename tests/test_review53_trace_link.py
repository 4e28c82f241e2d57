"""The inbox's review pages show each run's trace id, and, with `serve --trace-url TEMPLATE` (or
`$ENDSTATE_TRACE_URL`), a link to the trace: TEMPLATE with the id percent-encoded where `{trace_id}`
stands, the whole address HTML-escaped in its attribute.

Before, the review queue and a run's review page showed neither (on call, the trace id was in
`endstate runs --json` and `endstate audit --list` only), and `serve` took no trace link.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from test_service_defences import LOCAL, TOKEN

from agent import Agent, Budget
from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import Lease, NewRun, Outcome, RunStore, open_store
from agent.errors import ConfigError
from agent.examples.scenarios import example_catalog
from agent.models.scripted import ScriptedModel, finish
from agent.service.app import Service, create_app
from agent.service.auth import Token

NOW = 1_800_000_000.0
HEX = "4bf92f3577b34da6a3ce929d0e0e4736"
ODD = 'a"b<c>&d e/f?g#h'  # a trace id as a damaged or hand-edited row may hold it
# a Grafana Explore address: its JSON's braces percent-encoded, `&` between parameters
TEMPLATE = (
    "https://grafana.example.com/explore?schemaVersion=1&orgId=1&panes="
    "%7B%22t%22%3A%7B%22queries%22%3A%5B%7B%22query%22%3A%22{trace_id}%22%7D%5D%7D%7D"
)


def ended(store: RunStore, run_id: str, trace_id: str | None, at: float) -> None:
    """A give-up of `ci-fixer` stored as ended at `at`, with `trace_id` as its trace."""
    agent = Agent(
        model=ScriptedModel([[finish("give_up", "cannot")]]), name="ci-fixer", budget=Budget(max_turns=3)
    )
    result = dataclasses.replace(agent.run("fix the build", run_id=run_id), trace_id=trace_id)
    store.create(NewRun(run_id, "ci-fixer", "fix the build", "fix_ci", {}), Lease("w1", 30), at)
    store.record(run_id, Outcome.of(result), Lease("w1", 30), at)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    s = open_store(str(tmp_path / "runs.db"))
    ended(s, "hex", HEX, NOW)
    ended(s, "odd", ODD, NOW + 1)
    ended(s, "none", None, NOW + 2)
    yield s
    s.close()


def client_of(store: RunStore, tmp_path: Path, template: str | None) -> TestClient:
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    return TestClient(
        create_app(Service(runner, Token(TOKEN), sweep_interval=3600, trace_url=template)), base_url=LOCAL
    )


def card(page: str, run_id: str) -> str:
    """The `<article>` of run `run_id` on a page."""
    found = re.search(rf'<article class="run review" id="run-{run_id}".*?</article>', page, re.S)
    assert found, f"no card of run {run_id}"
    return found.group(0)


HEX_LINK = TEMPLATE.replace("{trace_id}", HEX).replace("&", "&amp;")
ODD_LINK = TEMPLATE.replace("{trace_id}", "a%22b%3Cc%3E%26d%20e%2Ff%3Fg%23h").replace("&", "&amp;")


def test_the_queue_and_a_runs_page_show_its_trace_id_linked_encoded_and_escaped(
    store: RunStore, tmp_path: Path
) -> None:
    with client_of(store, tmp_path, TEMPLATE) as client:
        queue = client.get("/inbox/review")
        pages = {r: client.get(f"/inbox/review/runs/{r}") for r in ("hex", "odd", "none")}
    assert queue.status_code == 200 and all(p.status_code == 200 for p in pages.values())
    for page in (queue.text, pages["hex"].text):
        hex_card = card(page, "hex")
        assert f'<code class="trace-id">{HEX}</code>' in hex_card
        assert f'<a class="trace-link" href="{HEX_LINK}" rel="noreferrer">Open the trace</a>' in hex_card
    for page in (queue.text, pages["odd"].text):
        odd_card = card(page, "odd")
        assert '<code class="trace-id">a&quot;b&lt;c&gt;&amp;d e/f?g#h</code>' in odd_card
        assert f'href="{ODD_LINK}"' in odd_card  # the id percent-encoded, then the address escaped
        assert ODD not in odd_card and "<c>" not in odd_card
    for page in (queue.text, pages["none"].text):
        assert 'class="trace' not in card(page, "none")  # no trace id: neither an id nor a link


def test_without_a_template_the_pages_show_the_trace_id_and_no_link(store: RunStore, tmp_path: Path) -> None:
    with client_of(store, tmp_path, None) as client:
        queue, page = client.get("/inbox/review").text, client.get("/inbox/review/runs/hex").text
    for shown in (card(queue, "hex"), card(page, "hex")):
        assert f'<p class="trace">Trace: <code class="trace-id">{HEX}</code></p>' in shown
    assert "trace-link" not in queue + page


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("ftp://tempo.example.com/{trace_id}", "not an http:// or https:// address"),
        ("javascript:alert(1)//{trace_id}", "not an http:// or https:// address"),
        ("/explore?trace={trace_id}", "not an http:// or https:// address"),
        ("https://{trace_id}", "{trace_id} is in its host"),
        ("https://{trace_id}.example.com/", "{trace_id} is in its host"),
        ("https://tempo.example.com/trace/", "does not say where the trace id goes"),
        ("https://tempo.example.com/trace/{traceid}", "does not say where the trace id goes"),
        ('https://g.example.com/explore?panes={"q":"{trace_id}"}', "braces other than {trace_id}"),
        ("https://tempo.example.com/{trace_id}/{span_id}", "braces other than {trace_id}"),
        ("https://tempo.example.com/{{trace_id}}", "braces other than {trace_id}"),
        ("https://tempo.example.com/a b/{trace_id}", "spaces or control characters"),
        ("https://[::1/{trace_id}", "is not an address"),
    ],
)
def test_a_template_that_is_no_http_link_with_the_trace_id_is_refused_saying_why(
    template: str, problem: str
) -> None:
    from agent.service.config import trace_url

    with pytest.raises(ConfigError) as refused:
        trace_url(template)
    assert problem in str(refused.value) and "--trace-url (or $ENDSTATE_TRACE_URL)" in str(refused.value)


def test_a_good_template_is_taken_and_none_or_empty_is_no_link() -> None:
    from agent.service.config import trace_url

    assert trace_url(TEMPLATE) == TEMPLATE
    assert trace_url("http://127.0.0.1:16686/trace/{trace_id}") == "http://127.0.0.1:16686/trace/{trace_id}"
    assert trace_url(None) is None and trace_url("") is None


def test_serve_refuses_a_bad_trace_url_from_its_option_or_the_environment_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before anything is made: no store file, no port bound, no token written."""
    store = tmp_path / "runs.db"
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--store", str(store), "--port", "1", "--trace-url", "https://t.example.com/"]) == 2
    assert "does not say where the trace id goes" in capsys.readouterr().err
    monkeypatch.setenv("ENDSTATE_TRACE_URL", "ftp://t.example.com/{trace_id}")
    assert main(["serve", "--store", str(store), "--port", "1"]) == 2
    assert "--trace-url (or $ENDSTATE_TRACE_URL) 'ftp://" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_serves_help_names_the_option_and_its_environment_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    told = " ".join(capsys.readouterr().out.split())
    assert "--trace-url TEMPLATE" in told and "$ENDSTATE_TRACE_URL" in told
    assert "ENDSTATE_TRACE_URL (the trace link of the inbox's review pages)" in told


def test_the_compose_files_trace_link_opens_the_trace_in_its_grafanas_tempo() -> None:
    """The agent's ENDSTATE_TRACE_URL is taken by `serve`, on Grafana's published port, and its
    Explore pane asks the provisioned Tempo data source (its uid) for the trace id, by TraceQL."""
    import json
    from urllib.parse import parse_qs, urlsplit

    import yaml

    from agent.service.config import trace_link, trace_url

    root = Path(__file__).resolve().parents[1]
    stack = yaml.safe_load((root / "docker-compose.yml").read_text())
    sources = yaml.safe_load((root / "dashboards/provisioning/datasources/datasources.yml").read_text())
    tempo = next(s["uid"] for s in sources["datasources"] if s["type"] == "tempo")
    template = trace_url(stack["services"]["agent"]["environment"]["ENDSTATE_TRACE_URL"])
    assert template is not None
    link = urlsplit(trace_link(template, HEX) or "")
    assert f"127.0.0.1:{link.port}:3000" in stack["services"]["grafana"]["ports"] and link.path == "/explore"
    query = parse_qs(link.query)
    assert query["schemaVersion"] == ["1"]
    (pane,) = json.loads(query["panes"][0]).values()
    assert pane["datasource"] == tempo
    assert pane["queries"] == [
        {"refId": "A", "datasource": {"type": "tempo", "uid": tempo}, "queryType": "traceql", "query": HEX}
    ]
