"""svc42: a short store password is masked where it stands, not in every word that holds its letters.

Before, a PostgreSQL URL whose password is `p` made every error unreadable: each `p` of the message
was masked (`connection to server at "127.0.0.1", ***ort 1 failed ... acce***ting TCP/IP`, `Servname
not su******orted for ai_sockty***e`, `"***ostgresql://u:***@[::1/db"`). Now a short password is
masked only where it is not part of a longer word (`:p@`, `password=p`, `"p"`); a long one, as before,
wherever it is.
"""

from __future__ import annotations

import pytest

from agent.durable.store import StoreError, open_store
from agent.durable.store.urls import scrub


def test_a_one_letter_password_leaves_the_connection_error_readable() -> None:
    with pytest.raises(StoreError) as raised:
        open_store("postgresql://u:p@127.0.0.1:1/db?connect_timeout=5")
    message = str(raised.value)
    assert "postgresql://u:***@127.0.0.1:1/db" in message
    assert "port 1 failed: Connection refused" in message and "accepting TCP/IP connections" in message
    assert ":p@" not in message


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("password=p failed", "password=*** failed"),
        ('user "u" password "p"', 'user "u" password "***"'),
        ("u:p@h and p, p.", "u:***@h and ***, ***."),
        ("supported, postgresql, port", "supported, postgresql, port"),
    ],
)
def test_a_short_password_is_masked_where_it_stands_alone(text: str, shown: str) -> None:
    assert scrub(text, "postgresql://u:p@h/db") == shown


def test_a_long_password_is_masked_wherever_it_is() -> None:
    assert scrub("xhunter2xyzx", "postgresql://u:hunter2xyz@h/db") == "x***x"
