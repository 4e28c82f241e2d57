"""Secrets out, long text cut: what content capture may put in a span."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

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
    "ENDSTATE_TOKEN",
)

_BARE_KEYS = re.compile(
    "|".join(
        (
            r"sk-ant-[A-Za-z0-9_\-]{8,}",  # Anthropic keys
            r"sk-[A-Za-z0-9_\-]{16,}",  # OpenAI-style keys
            r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
            r"AKIA[0-9A-Z]{16}",  # AWS access key ids
            r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack tokens
            r"https://hooks\.slack\.com/services/[A-Za-z0-9_/\-]+",  # Slack webhooks
            r"AIza[0-9A-Za-z_\-]{35}",  # Google API keys
            r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe keys
            r"glpat-[A-Za-z0-9_\-]{20,}",  # GitLab tokens
            r"github_pat_[A-Za-z0-9_]{22,}",  # GitHub fine-grained tokens
            r"npm_[A-Za-z0-9]{36}",  # npm tokens
            r"hf_[A-Za-z0-9]{30,}",  # Hugging Face tokens
            r"\beyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",  # JWTs
        )
    )
)
# A PEM private key, to its END line (or to the end of a text cut short).
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)")
# The password of `scheme://user:password@host`; it may hold '@' (the last one before the path ends it).
# A scheme and an e-mail's local part are tried only where a run of their characters begins, not
# inside one: tried at each position, a long run (a hex dump, a base64 blob cut by no '/', 'a.a.a...')
# took time quadratic in its length, minutes for the few hundred kB a tool may return.
_URL_CREDENTIALS = re.compile(r"((?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:)([^\s/]*)(@)")
_KEY_NAMES = (
    r"x-api-key|api[_-]?key|aws_secret_access_key|secret_access_key|access[_-]?token|auth[_-]?token|"
    r"client[_-]?secret|secret|token|ssl[_-]?password|password|passwd|pwd|passphrase"
)
_KEY = rf"((?i:{_KEY_NAMES})[\"']?\s*[:=]\s*)"
# A quoted value after a telling key: everything up to the closing quote.
_QUOTED = re.compile(_KEY + r"([\"'])(.*?)\2")
# A URL query parameter (`?password=...&next=`): the value ends at '&', '#' or a space.
_QUERY = re.compile(rf"([?&;](?i:{_KEY_NAMES})=)([^&#\s\"']+)")
# A password in free text (`password: two words`) may hold spaces: the rest of the line goes.
_PASSWORD_LINE = re.compile(
    r"((?i:password|passwd|pwd|passphrase)[\"']?\s*[:=]\s*)(?!\[REDACTED\])([^\"'\s][^\n]*)"
)
# Any other value after a telling prefix (`Bearer `, `api_key=`): up to a space, quote or separator.
_PREFIXED = re.compile(r"((?i:bearer)\s+|" + _KEY[1:-1] + r")(?!\[REDACTED\])([^\s&\"',;}\]]+)")
# An HTTP Authorization header's credentials, whatever the scheme (`Basic`, `Token`, `Bearer`...).
_AUTHORIZATION = re.compile(
    r"((?i:proxy-)?(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?:[A-Za-z][A-Za-z0-9\-]*\s+)?)"
    r"(?!\[REDACTED\])([^\s\"',;}\]]+)"
)
# A Cookie or Set-Cookie header: every cookie in it, to the end of the line or the closing quote.
_COOKIE = re.compile(r"((?i:set-)?(?i:cookie)[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED\])([^\s\"'][^\n\"']*)")
# A field of structured content (a tool's arguments) whose name says its value is secret, whatever
# the value's type: `{"token": ["..."]}`, `{"password": "with \\" in it"}`, `{"private_key": "..."}`.
_SECRET_FIELD = re.compile(rf"(?i:.*(?:{_KEY_NAMES}|private[_-]?key|authorization|cookie))")
_MAX_DEPTH = 64  # deeper structures are left to the text redaction
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"
)
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])")
_MIN_SECRET_CHARS = 8  # shorter env values would redact ordinary words
# How far past the cut a long text is read: a secret that begins before the cut is still matched
# whole (a PEM key, the longest, is some 6,500 characters, and is matched to the end of a text too).
READ_PAST_CUT = 16_384

# A secret the end of that window cuts off matches none of the shapes above, which need its end: a
# key shorter than its shape, a quoted value or a URL's password not closed, an e-mail without its
# domain, the first digits of a card. Its start would show (redacting the secrets before it shortens
# the text, so the window's end can show), so it is redacted from its opening to the cut. Each shape
# ends the window (`\Z`) and is tried where a run of its characters begins, read to its end once:
# linear in the window, however the text repeats an opening. The last word before the cut is
# redacted too (it could begin an AWS key): only a span that shows the window's end shows that.
_TOKEN_CHARS = r"A-Za-z0-9_.\-"
_LAST_TOKEN = re.compile(rf"(?<![{_TOKEN_CHARS}])[{_TOKEN_CHARS}]*+\Z")  # a key's last run of characters
_KEY_OPENING = re.compile(  # how each key of `_BARE_KEYS` begins
    r"sk-|[sr]k_(?:live|test)_|gh[pousr]_|github_pat_|glpat-|AKIA|AIza|xox[abposr]-|npm_|hf_|\beyJ"
)
_CUT_SHAPES = (  # the first group, when there is one, is kept: the secret begins after it
    re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{1,40}+\Z"),  # an AWS secret key's first characters
    re.compile(r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]++@[A-Za-z0-9.\-]*+\Z"),  # an e-mail address
    re.compile(r"(?<![\d-])\d(?:[ -]?\d){0,18}+[ -]?\Z"),  # a card's first digits
    re.compile(r"(://[^\s:/@]++:)[^\s/]*+\Z"),  # a URL's password, its '@' not reached
    # a quoted value after a telling key, its quote not closed
    re.compile(rf"((?i:{_KEY_NAMES})[\"']?\s*[:=]\s*[\"'])(?:(?<=\")[^\"\n]*+|(?<=')[^'\n]*+)\Z"),
)


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
        """`text` redacted and cut to `max_chars`. Of a long text only the head is read (`READ_PAST_CUT`
        past the cut): the rest is cut anyway, and redacting all of a 5 MB tool result held the run
        for seconds at each span that shows it. A head seen lately is not read again: each model
        call's span shows the history again (`_content.messages_json`)."""
        head = text[: self.max_chars + READ_PAST_CUT]
        return _redacted(self, head, len(text) - len(head))

    def redact_and_cut(self, head: str, unread: int = 0) -> str:
        """`head` redacted and cut to `max_chars`, with `unread` characters after it left unread (a
        secret that `head`'s end cuts off is redacted to that end: its end is unread)."""
        shown = self.redact(head)
        if not unread:
            return self.truncate(shown)
        if (opened := self._cut_secret_at(shown)) < len(shown):
            shown, unread = shown[:opened] + REDACTED, unread + len(shown) - opened
        return f"{shown[: self.max_chars]}...[truncated {max(len(shown) - self.max_chars, 0) + unread} chars]"

    def _cut_secret_at(self, text: str) -> int:
        """Where a secret that the end of `text` (redacted) cuts off begins, `len(text)` when none
        could: one of `secrets` whose first characters end it, a shape of `_CUT_SHAPES`, or a key's
        opening in its last run of a key's characters. The earliest wins."""
        found = [_secret_begun_at(text, secret) for secret in self.secrets]
        for shape in _CUT_SHAPES:
            if cut := shape.search(text):
                found.append(cut.end(1) if shape.groups else cut.start())
        token = _LAST_TOKEN.search(text)
        if token and (opening := _KEY_OPENING.search(text, token.start())):
            found.append(opening.start())
        return min(found, default=len(text))

    def redact(self, text: str) -> str:
        """Every known secret value and every key-shaped string replaced (personal data too:
        e-mail addresses and card numbers that pass the Luhn check)."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        text = _PEM.sub(REDACTED, text)
        text = _URL_CREDENTIALS.sub(r"\1" + REDACTED + r"\3", text)
        text = _BARE_KEYS.sub(REDACTED, text)
        text = _QUOTED.sub(r"\1\2" + REDACTED + r"\2", text)
        text = _QUERY.sub(r"\1" + REDACTED, text)
        text = _PASSWORD_LINE.sub(r"\1" + REDACTED, text)
        text = _AUTHORIZATION.sub(r"\1" + REDACTED, text)
        text = _COOKIE.sub(r"\1" + REDACTED, text)
        text = _PREFIXED.sub(r"\1" + REDACTED, text)
        text = _EMAIL.sub(REDACTED, text)
        text = _CARD.sub(lambda m: REDACTED if _luhn(m.group()) else m.group(), text)
        return _AWS_SECRET.sub(lambda m: REDACTED if _key_like(m.group()) else m.group(), text)

    def truncate(self, text: str) -> str:
        """At most `max_chars`, saying how much was cut."""
        if len(text) <= self.max_chars:
            return text
        return f"{text[: self.max_chars]}...[truncated {len(text) - self.max_chars} chars]"


# The heads of the texts of the last few spans, redacted: (redactor, head, unread) -> what they show
_redacted = lru_cache(maxsize=256)(Redactor.redact_and_cut)  # at most some 5 MB of heads


def redact_fields(value: Any, depth: int = 0, text: Callable[[str], str] | None = None) -> Any:
    """`value` (JSON-like) with the value of every field named like a secret (`password`,
    `api_key`, `db_password`, `Authorization`...) replaced by `[REDACTED]`, at any depth; with
    `text`, every string in it (dict keys too) redacted by `text` as well."""
    if text is not None and isinstance(value, str):
        return text(value)
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {
            (text(k) if text is not None and isinstance(k, str) else k): REDACTED
            if isinstance(k, str) and _SECRET_FIELD.fullmatch(k)
            else redact_fields(v, depth + 1, text)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_fields(v, depth + 1, text) for v in value]
    return value


def _luhn(candidate: str) -> bool:
    """True when the digits pass the Luhn check that card numbers carry."""
    digits = [int(c) for c in candidate if c.isdigit()]
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits)))
    return total % 10 == 0


def _key_like(word: str) -> bool:
    """40 base64 characters with upper and lower case and a digit or '/' or '+' (an AWS secret key),
    not a hex digest."""
    has = [any(c.isupper() for c in word), any(c.islower() for c in word)]
    return all(has) and any(c.isdigit() or c in "/+" for c in word)


def _secret_begun_at(head: str, secret: str) -> int:
    """Where `head` ends with the first characters of `secret` (not all of it), or `len(head)`."""
    at = head.find(secret[:1], max(len(head) - len(secret) + 1, 0)) if secret else -1
    while at != -1 and not secret.startswith(head[at:]):
        at = head.find(secret[0], at + 1)
    return len(head) if at == -1 else at


def _secret_values(environ: Mapping[str, str], names: Iterable[str]) -> tuple[str, ...]:
    values = {environ.get(n, "") for n in names}
    return tuple(sorted((v for v in values if len(v) >= _MIN_SECRET_CHARS), key=len, reverse=True))
