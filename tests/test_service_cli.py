"""`endstate serve` and the store commands at their edges: slow clients, bad arguments, token files."""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_service_support import TOKEN, Server, endstate, wait_for

pytestmark = pytest.mark.slow


def _connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def _closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    got = b""
    while chunk := sock.recv(4096):
        got += chunk
    return got


# -- item 21: slow or vanishing clients -----------------------------------------------------------


def test_headers_that_do_not_arrive_in_time_close_the_connection(tmp_path: Path) -> None:
    with Server(str(tmp_path / "runs.db"), tmp_path, "--header-timeout", "0.5") as server:
        with _connect(server) as silent, _connect(server) as slow:
            slow.sendall(b"GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
            assert _closed(silent) == b""
            assert _closed(slow) == b""
        with server.client() as api:
            assert api.get("/healthz").text == "ok"  # a normal client still gets served


def test_a_body_that_does_not_arrive_in_time_is_a_408(tmp_path: Path) -> None:
    with Server(str(tmp_path / "runs.db"), tmp_path, "--body-timeout", "0.5") as server:
        with _connect(server) as sock:
            head = (
                f"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            )
            sock.sendall(head.encode() + b'{"agent": ')
            answer = b""
            while b"did not arrive" not in answer and (chunk := sock.recv(4096)):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"did not arrive within 0.5 s" in answer
        with server.client() as api:
            assert api.get("/runs").json()["runs"] == []


def test_a_client_leaving_mid_body_logs_one_line_and_no_traceback(tmp_path: Path) -> None:
    with Server(str(tmp_path / "runs.db"), tmp_path) as server:
        with _connect(server) as sock:
            head = (
                f"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            )
            sock.sendall(head.encode() + b'{"agent": "csv')
        wait_for(
            lambda: "disconnected before its body arrived" in server.log.read_text(), what="the log line"
        )
        with server.client() as api:
            assert api.get("/healthz").text == "ok"
    assert "Traceback" not in server.log.read_text()


# -- item 23: one line, not a traceback ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["demo", "nosuch"], "no scenario matches ['nosuch']"),
        (["start", "csv-cleaner", "clean it", "--scenario", "nosuch"], "no scenario 'nosuch'"),
        (["start", "csv-cleaner", "clean it", "--scenario", "ci/approved-push"], "is for agent 'ci-fixer'"),
        (["serve", "--port", "99999"], "'99999' is not a port number from 1 to 65535"),
        (["serve", "--port", "http"], "'http' is not a port number"),
    ],
)
def test_mistakes_get_one_line_not_a_traceback(tmp_path: Path, args: list[str], says: str) -> None:
    env = {**os.environ, "ENDSTATE_WORLDS": str(tmp_path / "worlds")}
    store = [] if args[0] == "demo" else ["--store", str(tmp_path / "runs.db")]
    argv = [sys.executable, "-m", "agent.cli", *args, *store]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert says in done.stderr


def test_serve_help_documents_reads_and_hosts() -> None:
    from test_runner_agents import env_with_tests

    done = endstate("serve", "--help", store="x", env=env_with_tests())
    text = " ".join(done.stdout.split())
    assert "--read-auth {auto,token,open}" in text and "unless --host is a loopback address" in text
    assert "--allowed-host NAME" in text and "ENDSTATE_ALLOWED_HOSTS" in text


# -- item 22: store paths, and read-only commands that create nothing ----------------------------


@pytest.mark.parametrize("command", ["runs", "pending"])
def test_read_only_commands_create_no_store(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "typo" / "runs.db"
    for url in (str(missing), f"sqlite:///{missing}"):
        done = endstate(command, store=url)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "no run store" in done.stderr and str(missing) in done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "typo").exists()


def test_an_absolute_sqlite_url_keeps_the_token_beside_the_store(tmp_path: Path) -> None:
    from agent.service.server import _state_dir

    assert _state_dir(f"sqlite:///{tmp_path}/runs.db") == tmp_path
    assert _state_dir("sqlite:///state/runs.db") == Path("state")
    assert _state_dir(str(tmp_path / "runs.db")) == tmp_path
    assert _state_dir("postgresql://db/runs") == Path(".endstate")


def test_a_new_store_and_its_folder_are_owner_only(tmp_path: Path) -> None:
    from agent.durable.store import open_store

    open_store(str(tmp_path / "state" / "runs.db")).close()
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "state" / "runs.db").stat().st_mode) == 0o600


def test_starts_past_max_running_are_a_503_and_the_runs_in_flight_go_on(tmp_path: Path) -> None:
    """A flood of starts met no limit: every one became a run of this process at once. Past
    --max-running runs in flight a start is a 503 with Retry-After, stores nothing, and the
    runs in flight are not touched; once they end, starts are taken again."""
    from test_runner_agents import counter_state

    folder = tmp_path / "held"
    hang = counter_state(folder, "hang-first")
    (folder / "hang.flag").write_text("")  # the runs block in their first tool call until it goes
    store = str(tmp_path / "runs.db")
    server = Server(store, tmp_path, "--max-running", "2", catalog="test_runner_agents:catalog")
    with server, server.client() as api:
        start = {"agent": "counter", "task": "count", "state": hang}
        held = [api.post("/runs", json=start) for _ in range(2)]
        assert [r.status_code for r in held] == [202, 202]
        refused = api.post("/runs", json=start)
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert "2 runs in flight" in error and "--max-running" in error
        assert refused.headers["retry-after"].isdigit()
        assert len(api.get("/runs").json()["runs"]) == 2  # the refused start stored nothing
        assert api.get("/healthz").text == "ok"
        (folder / "hang.flag").unlink()
        for r in held:
            wait_for(lambda r=r: api.get(r.json()["url"]).json()["status"] == "finished", what="a run")
        assert api.post("/runs", json=start).status_code == 202


# -- item 17: token files ---------------------------------------------------------------------------


@pytest.fixture
def no_env_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENDSTATE_TOKEN", raising=False)
    monkeypatch.delenv("ENDSTATE_TOKEN_FILE", raising=False)


def _token_file(tmp_path: Path, mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(mode)
    return path


@pytest.mark.usefixtures("no_env_token")
@pytest.mark.parametrize(("mode", "says"), [(0o666, "writable by others"), (0o620, "writable by others")])
def test_a_token_file_others_may_write_is_refused(tmp_path: Path, mode: int, says: str) -> None:
    from agent.errors import ConfigError
    from agent.service.auth import load_token

    path = _token_file(tmp_path, mode)
    with pytest.raises(ConfigError, match=says) as raised:
        load_token(str(path), tmp_path / "state")
    assert "chmod 600" in str(raised.value)


@pytest.mark.usefixtures("no_env_token")
def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    from agent.errors import ConfigError
    from agent.service.auth import load_token

    with pytest.raises(ConfigError, match="readable by others"):
        load_token(str(_token_file(tmp_path, 0o644)), tmp_path / "state")


@pytest.mark.usefixtures("no_env_token")
def test_a_foreign_owned_token_file_is_refused(tmp_path: Path) -> None:
    from agent.errors import ConfigError
    from agent.service.auth import load_token

    path = _token_file(tmp_path)
    if os.geteuid() != 0:
        pytest.fail("this test changes a file's owner: run it as root (as CI does)", pytrace=False)
    os.chown(path, 65534, 65534)
    with pytest.raises(ConfigError, match="owned by uid 65534"):
        load_token(str(path), tmp_path / "state")


@pytest.mark.usefixtures("no_env_token")
@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlinked_token_file_is_refused(tmp_path: Path, dangling: bool) -> None:
    from agent.errors import ConfigError
    from agent.service.auth import load_token

    target = _token_file(tmp_path)
    if dangling:
        target.unlink()
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="is a symbolic link"):
        load_token(str(link), tmp_path / "state")
    made_dir = tmp_path / "state"
    made_dir.mkdir()
    (made_dir / "token").symlink_to(target)
    with pytest.raises(ConfigError, match="is a symbolic link"):
        load_token(None, made_dir)


@pytest.mark.usefixtures("no_env_token")
def test_a_token_that_cannot_be_made_says_why(tmp_path: Path) -> None:
    from agent.errors import ConfigError
    from agent.service.auth import load_token

    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "file").write_text("")
    with pytest.raises(ConfigError, match="cannot create the token file"):
        load_token(None, locked / "file" / "state")


@pytest.mark.usefixtures("no_env_token")
def test_a_made_token_and_its_folder_are_owner_only(tmp_path: Path) -> None:
    from agent.service.auth import load_token

    load_token(None, tmp_path / "state")
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "state" / "token").stat().st_mode) == 0o600


# -- item 13: no password in the startup line or in what the service answers -----------------------


def test_serve_shows_no_store_password(tmp_path: Path) -> None:
    import pg

    url = (
        pg.url_for("postgres", tmp_path).replace("postgres@", "postgres:s3cr%40t@", 1)
        + "?password=hunter2xyz"
    )
    with Server(url, tmp_path) as server, server.client(token=None) as anonymous:
        assert anonymous.get("/readyz").text == "ready"
        assert anonymous.get("/pending").status_code == 200
        log = server.log.read_text()
    assert "endstate serve: store postgresql://postgres:***@127.0.0.1" in log and "password=***" in log
    for secret in ("s3cr", "hunter2xyz"):
        assert secret not in log


@pytest.mark.usefixtures("no_env_token")
@pytest.mark.parametrize(
    ("kind", "says"),
    [("fifo", "is not a regular file"), ("folder", "is not a regular file"), ("binary", "is not UTF-8 text")],
)
def test_a_token_path_that_is_no_text_file_is_refused_at_once(tmp_path: Path, kind: str, says: str) -> None:
    """A named pipe nobody writes to would block `open` for good: refused without waiting."""
    path = tmp_path / "token"
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "folder":
        path.mkdir(mode=0o700)
    else:
        path.write_bytes(b"\xff" * 32)
        path.chmod(0o600)
    check = (
        "from pathlib import Path; from agent.errors import ConfigError; "
        "from agent.service.auth import read_token_file\n"
        f"try:\n    read_token_file(Path({str(path)!r}))\nexcept ConfigError as e:\n    print(e)"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert f"the token file {path} {says}" in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("secret", "says"),
    [
        ("pässwort-0123456789abcdef", "'ä'"),  # a header carries it as Latin-1 bytes: 401 for ever
        ("first-line-0123456789\nsecond-line", "a line break"),  # a token file of two lines
        ("nul-\x00-0123456789abcdef", r"'\x00'"),
    ],
)
def test_a_token_no_authorization_header_can_carry_is_refused_at_start(secret: str, says: str) -> None:
    """The service started with it and answered every API call and `endstate` command 401, while
    the inbox's form (UTF-8) signed in: refused at start, saying which character and what to use."""
    from agent.errors import ConfigError
    from agent.service.auth import Token

    with pytest.raises(ConfigError, match=f"the service token holds {re.escape(says)}.*printable ASCII"):
        Token(secret)


def test_the_token_is_never_shown_in_a_repr() -> None:
    """A traceback with locals, a debugger or a log line printing the service shows no secret."""
    from agent.service.auth import Token
    from agent.service.config import Service

    token = Token(TOKEN)
    assert TOKEN not in repr(token) and TOKEN not in repr(Service(None, token))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["serve", "--sweep-interval", "0"],
            "argument --sweep-interval: '0' is not a number of seconds above 0",
        ),
        (["serve", "--sweep-interval", "-1"], "is not a number of seconds above 0"),
        (["serve", "--demo-interval", "nan"], "argument --demo-interval: 'nan' is not a number of seconds"),
        (["serve", "--body-timeout", "0"], "argument --body-timeout: '0' is not a number of seconds above 0"),
        (["serve", "--header-timeout", "inf"], "argument --header-timeout: 'inf' is not a number of seconds"),
        (["serve", "--header-timeout", "0"], "--header-timeout: '0' is not a number of seconds above 0"),
        (["serve", "--grace", "-1"], "argument --grace: '-1' is not a number of seconds from 0"),
        (["serve", "--lease", "0"], "argument --lease: '0' is not a number above 0"),
        (["answer", "r1", "yes", "--lease", "inf"], "argument --lease: 'inf' is not a number above 0"),
        (["serve", "--store-timeout", "0"], "argument --store-timeout: '0' is not a number above 0"),
        (["pending", "--store-timeout", "nan"], "argument --store-timeout: 'nan' is not a number above 0"),
        (
            ["serve", "--ready-timeout", "-2"],
            "argument --ready-timeout: '-2' is not a number of seconds above 0",
        ),
    ],
)
def test_a_period_or_lease_that_cannot_work_is_a_usage_error(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lease of 0 would let any other worker take a run over while it runs; a sweep every -1 s spins."""
    from agent.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2 and says in capsys.readouterr().err
