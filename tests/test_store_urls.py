"""Store URLs: the SQLite path they name, and no password ever printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.durable.store.urls import scrub, secrets_in, shown_url, sqlite_path

PASSWORD_URLS = [
    ("postgresql://app:hunter2xyz@db:5432/runs", ["hunter2xyz"]),
    ("postgresql://app:p@ss@w0rd@db:5432/runs", ["p@ss@w0rd", "ss@w0rd", "w0rd"]),
    ("postgresql://app:p%40ss%2Fw0rd@db/runs", ["p%40ss%2Fw0rd", "p@ss/w0rd"]),
    ("postgresql://app:a/b?c@db/runs", ["a/b?c"]),
    ("postgresql://app@db/runs?password=hunter2xyz&sslmode=require", ["hunter2xyz"]),
    ("postgresql:///runs?host=/run/pg&PASSWORD=hunter2xyz", ["hunter2xyz"]),
    ("postgres://db/runs?sslpassword=keypass99&user=app", ["keypass99"]),
]


@pytest.mark.parametrize(("url", "secrets"), PASSWORD_URLS)
def test_a_shown_url_holds_no_password(url: str, secrets: list[str]) -> None:
    shown = shown_url(url)
    for secret in secrets:
        assert secret not in shown, shown
    assert "***" in shown and shown.startswith(url.split("://")[0] + "://")


@pytest.mark.parametrize(("url", "secrets"), PASSWORD_URLS)
def test_scrub_removes_the_password_from_any_text(url: str, secrets: list[str]) -> None:
    text = f"cannot connect to {url}: missing '=' after '{url}' (password {secrets[0]})"
    clean = scrub(text, url)
    for secret in secrets:
        assert secret not in clean, clean
    assert secrets_in(url)


def test_urls_without_a_password_are_shown_as_they_are() -> None:
    for url in ("postgresql://app@db/runs", "postgresql://db/runs?sslmode=require", "sqlite:///runs.db"):
        assert shown_url(url) == url and scrub(f"x {url}", url) == f"x {url}"


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///runs.db", Path("runs.db")),
        ("sqlite:///state/runs.db", Path("state/runs.db")),
        ("sqlite:////srv/endstate/runs.db", Path("/srv/endstate/runs.db")),
        ("sqlite:runs.db", Path("runs.db")),
        ("/srv/runs.db", Path("/srv/runs.db")),
        ("runs.db", Path("runs.db")),
        ("postgresql://db/runs", None),
    ],
)
def test_sqlite_path(url: str, path: Path | None) -> None:
    assert sqlite_path(url) == path


def test_a_password_holding_at_signs_leaves_no_part_in_a_connection_error() -> None:
    from agent.durable.store import StoreError, open_store

    with pytest.raises(StoreError) as raised:
        open_store("postgresql://app:p@ss@127.0.0.1:1/runs")
    assert "ss@" not in str(raised.value) and "p@ss" not in str(raised.value)
    with pytest.raises(StoreError) as raised:
        open_store("postgresql://app:se cret@127.0.0.1:1/runs?password=zz9zz&bogus=1")
    assert "se cret" not in str(raised.value) and "zz9zz" not in str(raised.value)


def test_the_newer_schema_error_shows_no_password(tmp_path: Path) -> None:
    import pg
    import psycopg

    from agent.durable.store import StoreError, open_store

    plain = pg.url_for("postgres", tmp_path)  # trust authentication: any password is accepted
    with_password = plain.replace("postgres@", "postgres:p%40ss@w0rd@", 1).replace("@w0rd@", "%40w0rd@")
    open_store(with_password).close()
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute("INSERT INTO endstate_schema (version, applied_at) VALUES (999, 0)")
    with pytest.raises(StoreError, match="newer than this Endstate") as raised:
        open_store(with_password)
    for secret in ("p%40ss", "w0rd", "p@ss"):
        assert secret not in str(raised.value)


def test_a_pasted_hint_with_the_masked_password_says_to_put_the_real_one_there() -> None:
    """`-> endstate answer ID --store 'postgresql://app:***@db/runs' "your answer"` pasted as printed
    failed with "password authentication failed", no word of the `***` being Endstate's mask."""
    from agent.durable.store import StoreError, open_store

    with pytest.raises(StoreError) as raised:
        open_store("postgresql://app:***@127.0.0.1:1/runs")
    assert "The password in this URL is ***, which Endstate prints in place of" in str(raised.value)
    with pytest.raises(StoreError) as raised:
        open_store("postgresql://app:hunter2xyz@127.0.0.1:1/runs")
    assert "in place of a password" not in str(raised.value)
