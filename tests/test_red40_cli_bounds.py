"""red40: numbers the CLI takes that passed its checks and then failed deep inside (a traceback), or
failed with a message about something else, now a usage error naming the flag and its range."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.durable.store import MAX_STORE_TIMEOUT, open_store
from agent.errors import ConfigError


def _endstate(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agent.cli", *args]
    environ = {**os.environ, **(env or {})}
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=environ, cwd=tmp_path)


def _store(tmp_path: Path) -> str:
    path = tmp_path / "runs.db"
    open_store(path).close()
    return str(path)


@pytest.mark.parametrize("huge", ["1e10", "1e22"])
def test_a_store_timeout_past_a_day_is_a_usage_error_not_a_traceback(tmp_path: Path, huge: str) -> None:
    """Before: `endstate runs --store-timeout 1e10` (and `serve`) died in an OverflowError traceback
    (a lock wait past the platform's time_t); on PostgreSQL one past 24 days was no statement_timeout."""
    done = _endstate(tmp_path, "runs", "--store", _store(tmp_path), "--store-timeout", huge)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"argument --store-timeout: '{huge}' is not a number above 0 and at most 86400" in done.stderr


def test_a_store_timeout_from_the_environment_past_a_day_is_said(tmp_path: Path) -> None:
    done = _endstate(tmp_path, "runs", "--store", _store(tmp_path), env={"ENDSTATE_STORE_TIMEOUT": "1e22"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "$ENDSTATE_STORE_TIMEOUT must be a number of seconds above 0 and at most 86400" in done.stderr


def test_open_store_refuses_a_timeout_past_a_day_and_takes_a_day(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--store-timeout must be .* at most 86400 .*not '86401'"):
        open_store(tmp_path / "runs.db", timeout=86401)
    store = open_store(tmp_path / "runs.db", timeout=MAX_STORE_TIMEOUT)
    try:
        assert store.list_runs(None, 5) == []
    finally:
        store.close()


@pytest.mark.parametrize("command", ["runs", "review"])
def test_a_limit_past_what_the_store_counts_is_a_usage_error(tmp_path: Path, command: str) -> None:
    """Before: `endstate runs --limit 9223372036854775808` said "the run store refused a write:
    datatype mismatch" (a read, and no word of --limit)."""
    store = _store(tmp_path)
    done = _endstate(tmp_path, command, "--store", store, "--limit", str(2**63))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"argument --limit: '{2**63}' is not a whole number above 0 and at most {2**63 - 1}" in done.stderr
    done = _endstate(tmp_path, command, "--store", store, "--limit", str(2**63 - 1))
    assert done.returncode == 0, done.stderr


def test_an_age_to_prune_at_past_100_years_is_refused_before_anything_is_deleted(tmp_path: Path) -> None:
    """Before: `endstate prune --older-than 99999999999999999999d` pruned, then died printing the date
    before which it pruned (an OverflowError traceback, exit 1); 9999999999d printed year -27377044."""
    store = _store(tmp_path)
    for age in ("99999999999999999999d", "36501d"):
        done = _endstate(tmp_path, "prune", "--store", store, "--older-than", age)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"--older-than '{age}': at most 100 years (36500d)" in done.stderr
    done = _endstate(tmp_path, "prune", "--store", store, "--older-than", "36500d")
    assert done.returncode == 0 and "pruned 0 finished runs that ended before 19" in done.stdout, done.stderr


def test_serve_refuses_a_retention_past_100_years(tmp_path: Path) -> None:
    done = _endstate(tmp_path, "serve", "--store", _store(tmp_path), "--retention", "99999999999999999999d")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "--retention '99999999999999999999d': at most 100 years (36500d)" in done.stderr


@pytest.mark.parametrize("url", ["notaurl", "127.0.0.1:9090", "file:///etc/passwd"])
def test_limits_suggest_from_a_prometheus_url_without_http_says_so(tmp_path: Path, url: str) -> None:
    """Before: `endstate limits suggest --prometheus notaurl` died in a ValueError traceback (exit 1),
    and a file:// URL was opened as a local file."""
    done = _endstate(tmp_path, "limits", "suggest", "--prometheus", url)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot query Prometheus at {url} (give the URL with its scheme: http://HOST:9090)" in done.stderr


@pytest.mark.parametrize(
    "command", [["answer", "r1", "INV-0913"], ["approve", "r1"], ["deny", "r1", "no"], ["resume", "r1"]]
)
def test_a_reply_to_a_store_that_does_not_exist_creates_none(tmp_path: Path, command: list[str]) -> None:
    """Before: `endstate answer ID text --store mistyped/runs.db` made the folder and an empty store
    there, then said "no run with id 'ID'", as if the store were right."""
    store = tmp_path / "mistyped" / "runs.db"
    done = _endstate(tmp_path, *command, "--store", str(store))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"there is no run store at {store} (nothing was created)" in done.stderr
    assert not store.parent.exists()
