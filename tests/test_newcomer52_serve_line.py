"""newcomer52: `endstate serve`'s start line says who may read the runs as it is."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agent.service.config import allowed_hosts, reads_need_token
from agent.service.server import say_serving

ANY = "reads are open to whoever reaches any of this machine's addresses (--read-auth open)"


@pytest.mark.parametrize(
    ("host", "read_auth", "said"),
    [
        ("127.0.0.1", "auto", "reads are open (loopback)"),
        ("0.0.0.0", "auto", "reads need the token"),
        ("0.0.0.0", "open", ANY),
        ("::", "open", ANY),
        ("192.0.2.7", "open", "reads are open to whoever reaches 192.0.2.7 (--read-auth open)"),
    ],
)
def test_the_start_line_says_open_reads_beyond_loopback_are_open_to_the_network(
    host: str, read_auth: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`endstate serve --host 0.0.0.0 --read-auth open` listened on every interface and said
    "reads are open (loopback)": the one line an operator reads said the runs were not exposed."""
    service = SimpleNamespace(
        reads_need_token=reads_need_token(host, read_auth), allowed_hosts=allowed_hosts(host), cases_dir=None
    )
    say_serving(service, SimpleNamespace(host=host, port=8000))  # type: ignore[arg-type]
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"endstate serve: {said}"), first
    assert ("loopback" in first) is (host == "127.0.0.1"), first
