"""The researcher seed agent as an attacker drives it: its `read_page` reads web pages only, never
this machine's files (urllib opens file:// URLs too, so a model led astray by a page read them)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from agent.context import RunContext
from agent.examples import research
from agent.tools import Tool, execute


@pytest.fixture
def read_page() -> Iterator[tuple[Tool, research.Corpus]]:
    corpus = research.Corpus()
    try:
        yield next(t for t in research.tools_for(corpus) if t.name == "read_page"), corpus
    finally:
        corpus.close()


def read(tool: Tool, url: str) -> tuple[str, bool]:
    outcome = asyncio.run(execute(tool, {"url": url}, RunContext("r", "researcher", "t", "research")))
    return outcome.text, outcome.is_error


@pytest.mark.parametrize(
    "url", ["file:///etc/hostname", "file:/etc/hostname", "ftp://127.0.0.1/x", "http:///x"]
)
def test_read_page_refuses_what_is_no_web_page(read_page: tuple[Tool, research.Corpus], url: str) -> None:
    text, is_error = read(read_page[0], url)
    assert is_error and "only web pages (http or https) can be read" in text


def test_read_page_still_reads_the_corpus(read_page: tuple[Tool, research.Corpus]) -> None:
    tool, corpus = read_page
    path = next(iter(research.CORPUS))
    text, is_error = read(tool, corpus.url(path))
    assert not is_error and research.CORPUS[path][0] in text
