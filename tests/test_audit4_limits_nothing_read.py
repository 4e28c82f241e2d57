"""`endstate limits suggest` with nothing to read said, whatever the source, "Run some tasks (or
`endstate eval`) first". Pointed at a Prometheus that scrapes no Endstate process (the wrong
Prometheus, or a scrape config without the agents), that sent people to run tasks that were there
all along; and `endstate eval` writes neither to a run store nor to Prometheus, so for those
sources it was advice that could not work. Each source now says what to check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prom_stack import prometheus, prometheus_config

from agent.cli.main import main
from agent.durable.store import open_store


@pytest.fixture(scope="module")
def empty_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus that scrapes nothing; its URL."""
    with prometheus(prometheus_config([]), tmp_path_factory.mktemp("prom")) as prom:
        yield prom.url


@pytest.mark.slow
def test_a_prometheus_that_scraped_no_endstate_process_says_to_check_its_scrape_config(
    empty_prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = empty_prometheus
    assert main(["limits", "suggest", "--prometheus", url, "--window", "1h"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"No ended runs in Prometheus at {url}, last 1h: ")
    assert "holds no agent_stops_total series in that window" in out, out
    assert f"{url}/targets" in out, out
    assert "endstate eval" not in out, out


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/api/v1", "/prometheus"])
def test_a_url_with_a_path_prometheus_does_not_serve_says_which_url_to_give(
    empty_prometheus: str, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    """It said only "refused ...: HTTP 404"."""
    assert main(["limits", "suggest", "--prometheus", empty_prometheus + path]) == 2
    err = capsys.readouterr().err
    assert "HTTP 404; is it Prometheus's HTTP API (the URL without /api/v1)?" in err, err


def test_an_empty_store_does_not_send_people_to_endstate_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs.db")
    open_store(url).close()
    assert main(["limits", "suggest", "--store", url]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"No ended runs in the run store at {url}: nothing to suggest.")
    assert "endstate eval --json | endstate limits suggest --jsonl -" in out, out  # where eval runs are read


def test_empty_json_lines_still_point_at_the_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("")
    assert main(["limits", "suggest", "--jsonl", str(path)]) == 1
    assert "Run some tasks (or `endstate eval --json`) first" in capsys.readouterr().out
