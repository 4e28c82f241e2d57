"""What a person reads when a store cannot be reached (probe19b)."""

from __future__ import annotations

import pytest
from ports import refused_port

from agent.cli.main import main
from agent.durable.store import StoreError, open_store


def test_a_postgresql_server_that_refuses_connections_is_said_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """libpq's message spans lines ("Connection refused", then a tab and "Is the server running on
    that host..."): the CLI says it in one line, exit 2, and the error holds no line break either."""
    url = f"postgresql://u:secret@127.0.0.1:{refused_port()}/db"
    with pytest.raises(StoreError) as caught:
        open_store(url)
    said = str(caught.value)
    assert "\n" not in said and "\t" not in said, said
    assert "Connection refused" in said and "Is the server running" in said and "secret" not in said
    assert main(["runs", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("endstate: cannot connect to the PostgreSQL run store "), err
