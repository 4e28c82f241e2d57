"""The token that guards every endpoint that changes a run."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.errors import ConfigError

ENV_TOKEN = "ENDSTATE_TOKEN"
ENV_TOKEN_FILE = "ENDSTATE_TOKEN_FILE"
COOKIE = "endstate_inbox"
MIN_LENGTH = 16
SESSION_SECONDS = 12 * 3600  # an inbox sign-in lasts an on-call shift; then the token is asked again
CLOCK_SKEW = 60  # seconds a replica's clock may be behind the one that signed a person in
_DIGITS = re.compile(r"[0-9]{1,12}")
_UNSENDABLE = re.compile(r"[^\t\x20-\x7e]")  # what a header does not carry as the client wrote it


@dataclass(frozen=True)
class Token:
    """A shared secret: sent as `Authorization: Bearer ...`, or once to the inbox for a cookie."""

    secret: str = field(repr=False)  # never in a traceback or a log line that prints the service

    def __post_init__(self) -> None:
        if len(self.secret) < MIN_LENGTH:
            raise ConfigError(f"the service token must be at least {MIN_LENGTH} characters long")
        if bad := _UNSENDABLE.search(self.secret):
            what = "a line break" if bad.group() in "\r\n" else repr(bad.group())
            raise ConfigError(
                f"the service token holds {what}, which an Authorization header cannot carry as it is "
                "(every API call would be refused); use printable ASCII only, such as "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )

    def accepts(self, offered: str | None) -> bool:
        return bool(offered) and hmac.compare_digest(str(offered).encode(), self.secret.encode())

    def session_cookie(self, now: float) -> str:
        """A new inbox session's cookie, made at `now`: when it was made, a random id, and their
        signature (derived from the token, not the token itself)."""
        made = f"{int(now)}.{secrets.token_urlsafe(12)}"
        return f"{made}.{self._session_sig(made)}"

    def session_of(self, offered: str | None, now: float) -> str | None:
        """The id of the session `offered` (a cookie) holds, when this token signed it less than
        `SESSION_SECONDS` before `now`; else None (another token's, forged, expired, or not one)."""
        made, _, sig = str(offered or "").rpartition(".")
        issued, _, session = made.partition(".")
        if not (_DIGITS.fullmatch(issued) and session and sig):
            return None
        if not hmac.compare_digest(sig.encode(), self._session_sig(made).encode()):
            return None
        return session if -CLOCK_SKEW < now - int(issued) < SESSION_SECONDS else None

    @property
    def cookie_value(self) -> str:
        """A new inbox session's cookie, made now (what a sign-in sets)."""
        return self.session_cookie(time.time())

    def accepts_cookie(self, offered: str | None) -> bool:
        """`offered` is a session cookie of this token's, still in its `SESSION_SECONDS` (a sign-out
        is the service's to check: `inbox.signed_in`)."""
        return self.session_of(offered, time.time()) is not None

    def _session_sig(self, made: str) -> str:
        signed = b"endstate-inbox-session\x00" + made.encode()
        return hmac.new(self.secret.encode(), signed, hashlib.sha256).hexdigest()

    def notice_sig(self, text: str) -> str:
        """The signature of a one-time notice the service put in a redirect's address."""
        signed = b"endstate-notice\x00" + text.encode("utf-8", "surrogatepass")
        return hmac.new(self.secret.encode(), signed, hashlib.sha256).hexdigest()[:32]

    def signed_notice(self, text: str, sig: str | None) -> bool:
        if not text or not sig:
            return False
        return hmac.compare_digest(str(sig).encode(), self.notice_sig(text).encode())


def load_token(token_file: str | None, fallback_dir: Path) -> tuple[Token, str]:
    """The token from `$ENDSTATE_TOKEN`, a token file, or one made now; and where it came from.

    A made token is written to `fallback_dir/token` (the folder 0700, the file
    0600) and kept for later starts, so the CLI and the inbox can read it there.
    A token file must be safe to trust (see `read_token_file`).
    """
    if os.environ.get(ENV_TOKEN):
        return Token(os.environ[ENV_TOKEN].strip()), f"${ENV_TOKEN}"
    path = token_file or os.environ.get(ENV_TOKEN_FILE)
    if path:
        return Token(read_token_file(Path(path))), path
    made = fallback_dir / "token"
    if not made.exists() and not made.is_symlink():
        _make_token(made)
    return Token(read_token_file(made)), str(made)


def read_token_file(path: Path) -> str:
    """The token in `path`, refusing a file others could have written or can read.

    Refused: a symbolic link (dangling or not), anything but a regular file, a
    file owned by someone other than this user or root, and a file writable by
    its group or others or readable by others.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # a pipe: no wait
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if path.is_symlink():
            raise ConfigError(
                f"the token file {path} is a symbolic link; refusing it. Name the file itself "
                f"(its real path), or set ${ENV_TOKEN}"
            ) from exc
        raise ConfigError(f"cannot read the token file {path}: {exc.strerror or exc}") from exc
    try:
        _check_safe(path, os.fstat(fd))  # before reading: a folder or a pipe is refused here
    except ConfigError:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as f:
        raw = f.read(64 * 1024)
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the token file {path} is not UTF-8 text; write the token as text") from exc


def _check_safe(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"the token file {path} is not a regular file")
    if st.st_uid not in (os.geteuid(), 0):
        raise ConfigError(
            f"the token file {path} is owned by uid {st.st_uid}, not by this user ({os.geteuid()}) "
            "or root; anyone who owns it can change the token. chown it, or make a new one"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(f"the token file {path} is writable by others: chmod 600 {path}")
    if st.st_mode & stat.S_IROTH:
        raise ConfigError(f"the token file {path} is readable by others: chmod 600 {path}")


def _make_token(made: Path) -> None:
    """Write a new random token to `made`, owner-only, in an owner-only folder."""
    try:
        made.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the token file {made}: {exc.strerror or exc}. "
            f"Pass --token-file, set ${ENV_TOKEN}, or use a store in a folder this user can write"
        ) from exc
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(32) + "\n")
