"""A secret the redaction window's end cuts off shows none of its characters (the telemetry48 review).

Of a long text the redactor reads only the part a span keeps plus `READ_PAST_CUT`: a secret whose
shape needs its end (a closing quote, a URL's '@', a key's length, an e-mail's domain) matched
nothing when that end lay past the window, and its start went into the span.
"""

from __future__ import annotations

import re

import pytest

from telemetry.redact import READ_PAST_CUT, REDACTED, Redactor

ENV_SECRET = "envsecret-0123456789abcdefXYZ"
REDACT = Redactor(secrets=(ENV_SECRET,))
WINDOW = REDACT.max_chars + READ_PAST_CUT
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
KEY_LINE = "sk-ant-api03-" + "k" * 87 + "\n"  # 101 characters a span shows as 11
BEGIN_PEM = "-----BEGIN RSA PRIVATE KEY-----\n"


def shown(text: str, redact: Redactor = REDACT) -> str:
    """What a span keeps of `text`, without the note of what was cut."""
    return redact(text).split("...[truncated ")[0]


@pytest.mark.parametrize(
    ("opening", "secret", "after"),
    [
        ('client_secret = "', "correct horse battery staple " * 1000, '"'),
        ("token = '", "two words " * 3000, "'"),
        ("db postgresql://app:", "p4ss" * 6000, "@db:5432/runs"),
        ("session eyJhbGciOiJIUzI1NiJ9.eyJ", "c3ViIjoi" * 3000, ".c2ln"),
    ],
)
def test_a_secret_begun_in_the_kept_part_and_ended_past_the_window_does_not_show(
    opening: str, secret: str, after: str
) -> None:
    """A quoted value, a URL's password or a JWT's payload longer than the window matched nothing."""
    text = "some notes " * 200 + opening + secret + after + " the end"
    kept = shown(text)
    assert secret[:8] not in kept, kept[-200:]
    assert kept.endswith(REDACTED)


def test_an_environment_secret_longer_than_the_window_does_not_show() -> None:
    secret = "S3cr" + "etValue-" * 3000
    kept = shown("notes " * 200 + secret + " the end", Redactor(secrets=(secret,)))
    assert kept == "notes " * 200 + REDACTED


def cut_in(secret: str, keep: int) -> str:
    """A text whose window ends `keep` characters into `secret`, after lines of keys: redacted, they
    shorten the text so much that a span shows the window's end."""
    lines = (WINDOW - keep) // len(KEY_LINE) - 1
    pad = WINDOW - keep - lines * len(KEY_LINE)
    text = KEY_LINE * lines + "sk-ant-api03-" + "k" * (pad - 14) + "\n" + secret + " then more" * 50
    assert text[WINDOW - keep : WINDOW] == secret[:keep]
    return text


# A secret of each shape the redactor knows, as what may show before it (`token: "`), the secret,
# and what may show after it. An e-mail's local part is a word like any other until its '@'. (The
# shapes that run to the end of a text, as a PEM key, a password's line or a cookie, showed nothing
# before either.)
CUT_SECRETS = [
    ("", "sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUV", ""),
    ("", "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX", ""),
    ("", "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123", ""),
    ("", "AKIAIOSFODNN7EXAMPLE", ""),
    ("", "xoxb-123456789012-1234567890", ""),
    ("", "AIzaSyA-1234567890abcdefghijklmnopqrstu", ""),
    ("", "sk_live_51H8abcdefghijklmnopqrstuv", ""),
    ("", "glpat-abcdefghij1234567890", ""),
    ("", "github_pat_11ABCDEFG0123456789_abcdefghijk", ""),
    ("", "npm_abcdefghijklmnopqrstuvwxyz0123456789", ""),
    ("", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", ""),
    ("", JWT, ""),
    ("https://hooks.slack.com/services/", "T0001/B0001/XXXXXXXXXXXXXXXX", ""),
    ("", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""),
    ("ana.lopez+orders@", "example.co.uk", ""),
    ("", "4111 1111 1111 1111", ""),
    ("", "4111111111111111", ""),
    ("https://deploy:", "gh-s3cret-pw", "@git.example.com"),
    ('token: "', "abc def ghi jkl mno pqr", '"'),
    ("token='", "abc def ghi jkl mno pqr", "'"),
    ("login?password=", "hunter2", "&next=/inbox"),
    ("password=", "hunter2-and-more", ""),
    ("Authorization: Basic ", "dXNlcjpwYXNzd29yZDEyMw==", ""),
    ("Cookie: ", "sessionid=abc123def456ghi789", ""),
    ("Bearer ", "9f8e7d6c5b4a39281706abcdef", ""),
    (BEGIN_PEM, "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n", ""),
    ("", ENV_SECRET, ""),
]


def shows_any_of(text: str, secret: str) -> bool:
    """Whether `text` (less its `[REDACTED]` marks) shows the secret, or any three characters of it."""
    text = text.replace(REDACTED, "")
    return any(secret[i : i + 3] in text for i in range(max(len(secret) - 2, 1)))


@pytest.mark.parametrize(("before", "secret", "after"), CUT_SECRETS, ids=[s[:12] for _, s, _ in CUT_SECRETS])
def test_no_character_of_a_secret_the_window_cuts_off_shows(before: str, secret: str, after: str) -> None:
    """Keys shorter than their shape, a card's first digits, an e-mail without its domain, a
    password before its '@' or its closing quote, an environment secret's first characters: each
    showed when the window's end cut it and the span showed that end."""
    piece = before + secret + after
    for keep in sorted({len(before) + 1, len(before) + len(secret) // 2, len(piece) - 1, len(piece)}):
        kept = shown(cut_in(piece, keep))
        tail = kept[kept.rindex("[REDACTED]\n") + len("[REDACTED]\n") :]  # after the lines of keys
        assert not shows_any_of(tail, secret[: keep - len(before)]), (keep, tail)
        assert REDACTED in tail, (keep, tail)


def test_what_a_span_does_not_show_of_a_long_text_is_counted_right() -> None:
    """A long text whose kept part redaction shortened below what a span keeps said it cut a
    negative number of characters (what it showed, less what a span keeps, plus what was unread)."""
    line = "A" * 63 + "\n"
    lines = (WINDOW - len(BEGIN_PEM)) // len(line)
    pad = "x" * (WINDOW - len(BEGIN_PEM) - lines * len(line))  # the window ends at a line's end
    text = pad + BEGIN_PEM + line * (lines + 2)
    cut = re.fullmatch(r"(.*)\.\.\.\[truncated (-?\d+) chars\]", REDACT(text), re.S)
    assert cut is not None
    assert cut.groups() == (pad + REDACTED, str(2 * len(line)))
