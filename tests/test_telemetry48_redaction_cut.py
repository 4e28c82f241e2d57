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


# Each secret, and how many of its first characters say only what follows (`sk-`, `token: "`): the
# secret's own characters begin after them. An e-mail's local part is a word like any other until
# its '@'.
CUT_SECRETS = [
    ("sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUV", 7),
    ("sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX", 3),
    ("ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123", 4),
    ("AKIAIOSFODNN7EXAMPLE", 4),
    ("xoxb-123456789012-1234567890", 5),
    ("AIzaSyA-1234567890abcdefghijklmnopqrstu", 4),
    ("sk_live_51H8abcdefghijklmnopqrstuv", 8),
    ("glpat-abcdefghij1234567890", 6),
    ("github_pat_11ABCDEFG0123456789_abcdefghijk", 11),
    ("npm_abcdefghijklmnopqrstuvwxyz0123456789", 4),
    ("hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", 3),
    (JWT, 3),
    ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 0),
    ("ana.lopez+orders@example.co.uk", 17),
    ("4111 1111 1111 1111", 0),
    ("4111111111111111", 0),
    ("https://deploy:gh-s3cret-pw@git.example.com", 15),
    ('token: "abc def ghi jkl mno pqr"', 8),
    ("token='abc def ghi jkl mno pqr'", 7),
    ("password=hunter2-and-more", 9),
    ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", 21),
    (BEGIN_PEM + "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n", len(BEGIN_PEM)),
    (ENV_SECRET, 0),
]


@pytest.mark.parametrize(("secret", "opening"), CUT_SECRETS, ids=[s[:12] for s, _ in CUT_SECRETS])
def test_no_character_of_a_secret_the_window_cuts_off_shows(secret: str, opening: str | int) -> None:
    """Keys shorter than their shape, a card's first digits, an e-mail without its domain, a
    password before its '@' or its closing quote, an environment secret's first characters: each
    showed when the window's end cut it and the span showed that end."""
    assert isinstance(opening, int)
    for keep in sorted({opening + 1, (opening + len(secret)) // 2, len(secret) - 1}):
        kept = shown(cut_in(secret, keep))
        tail = kept[kept.rindex("[REDACTED]\n") + len("[REDACTED]\n") :]  # after the lines of keys
        assert secret[opening:keep] not in tail.replace(REDACTED, ""), (keep, tail)
        assert tail.endswith(REDACTED), (keep, tail)


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
