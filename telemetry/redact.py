"""Secrets out, long text cut: what content capture may put in a span."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from telemetry.names import ENV_REDACT_ENV

REDACTED = "[REDACTED]"

# Variables whose values never leave the process, plus any named in ENDSTATE_REDACT_ENV.
SECRET_ENV_VARS: tuple[str, ...] = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "HF_TOKEN",
)

_BARE_KEYS = re.compile(
    "|".join(
        (
            r"sk-ant-[A-Za-z0-9_\-]{8,}",  # Anthropic keys
            r"sk-[A-Za-z0-9_\-]{16,}",  # OpenAI-style keys
            r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
            r"AKIA[0-9A-Z]{16}",  # AWS access key ids
        )
    )
)
# A secret after a telling prefix (`Bearer `, `api_key=`, `"password": "`): the prefix stays.
_PREFIXED = re.compile(
    r"((?i:bearer)\s+|(?i:x-api-key|api[_-]?key|password|secret|token)[\"']?\s*[:=]\s*[\"']?)"
    r"[A-Za-z0-9._~+/=\-]{6,}"
)
_MIN_SECRET_CHARS = 8  # shorter env values would redact ordinary words


@dataclass(frozen=True)
class Redactor:
    """Replaces secrets with `[REDACTED]`, then cuts text to `max_chars`."""

    secrets: tuple[str, ...] = ()
    max_chars: int = 4000

    @classmethod
    def from_env(cls, environ: Mapping[str, str], max_chars: int = 4000) -> Redactor:
        """Redact the values of `SECRET_ENV_VARS` and of the names in ENDSTATE_REDACT_ENV."""
        extra = [n.strip() for n in environ.get(ENV_REDACT_ENV, "").split(",") if n.strip()]
        return cls(_secret_values(environ, [*SECRET_ENV_VARS, *extra]), max_chars)

    def __call__(self, text: str) -> str:
        return self.truncate(self.redact(text))

    def redact(self, text: str) -> str:
        """Every known secret value and every key-shaped string replaced."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return _PREFIXED.sub(r"\1" + REDACTED, _BARE_KEYS.sub(REDACTED, text))

    def truncate(self, text: str) -> str:
        """At most `max_chars`, saying how much was cut."""
        if len(text) <= self.max_chars:
            return text
        return f"{text[: self.max_chars]}...[truncated {len(text) - self.max_chars} chars]"


def _secret_values(environ: Mapping[str, str], names: Iterable[str]) -> tuple[str, ...]:
    values = {environ.get(n, "") for n in names}
    return tuple(sorted((v for v in values if len(v) >= _MIN_SECRET_CHARS), key=len, reverse=True))
