"""The token that guards every endpoint that changes a run."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from agent.errors import ConfigError

ENV_TOKEN = "ENDSTATE_TOKEN"
ENV_TOKEN_FILE = "ENDSTATE_TOKEN_FILE"
COOKIE = "endstate_inbox"
MIN_LENGTH = 16


@dataclass(frozen=True)
class Token:
    """A shared secret: sent as `Authorization: Bearer ...`, or once to the inbox for a cookie."""

    secret: str

    def __post_init__(self) -> None:
        if len(self.secret) < MIN_LENGTH:
            raise ConfigError(f"the service token must be at least {MIN_LENGTH} characters long")

    def accepts(self, offered: str | None) -> bool:
        return bool(offered) and hmac.compare_digest(str(offered).encode(), self.secret.encode())

    @property
    def cookie_value(self) -> str:
        """What the inbox cookie holds: derived from the token, not the token itself."""
        return hmac.new(self.secret.encode(), b"endstate-inbox-session", hashlib.sha256).hexdigest()

    def accepts_cookie(self, offered: str | None) -> bool:
        return bool(offered) and hmac.compare_digest(str(offered).encode(), self.cookie_value.encode())


def load_token(token_file: str | None, fallback_dir: Path) -> tuple[Token, str]:
    """The token from `$ENDSTATE_TOKEN`, a token file, or one made now; and where it came from.

    A made token is written to `fallback_dir/token` (mode 0600) and kept for
    later starts, so the CLI and the inbox can read it there.
    """
    if os.environ.get(ENV_TOKEN):
        return Token(os.environ[ENV_TOKEN].strip()), f"${ENV_TOKEN}"
    path = token_file or os.environ.get(ENV_TOKEN_FILE)
    if path:
        try:
            return Token(Path(path).read_text().strip()), path
        except OSError as exc:
            raise ConfigError(f"cannot read the token file {path}: {exc}") from exc
    made = fallback_dir / "token"
    if not made.exists():
        made.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
    return Token(made.read_text().strip()), str(made)
