"""Redaction of captured content: every common secret shape, and ordinary text left alone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from telemetry._content import value_json
from telemetry.redact import REDACTED, Redactor

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
    "4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----"
)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
        ("the secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, keep it", "bPxRfiCYEXAMPLEKEY"),
        ("mail ana.lopez+orders@example.co.uk about it", "ana.lopez+orders@example.co.uk"),
        ("card 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111"),
        ("card 4111-1111-1111-1111", "4111-1111-1111-1111"),
        ("card 378282246310005 (amex)", "378282246310005"),
        (f"session {JWT} ok", "eyJzdWIi"),
        (f"key:\n{PEM}\nend", "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (cut off)", "b3BlbnNzaC1rZXkt"),
        ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),
        ("post to https://hooks.slack.com/services/T0001/B0001/XXXXXXXXXXXXXXXXXXXXXXXX", "XXXXXXXXXXXXXXXX"),
        ("google AIzaSyA-1234567890abcdefghijklmnopqrstu here", "AIzaSyA-1234567890abcdefghij"),
        ("clone https://deploy:gh-s3cret-pw@git.example.com/repo.git", "gh-s3cret-pw"),
        ("db postgresql://app:p@ss@w0rd@db:5432/runs", "ss@w0rd"),
        ("url ?user=app&password=hunter2&sslmode=require", "hunter2"),
        ("password=p@ss w0rd!", "p@ss"),
        ('{"password": "correct horse & battery"}', "horse & battery"),
        ("password: $ecr3t%^", "$ecr3t%^"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw"),
        ('{"authorization": "Token 9f8e7d6c5b4a39281706"}', "9f8e7d6c5b4a39281706"),
        ("Cookie: sessionid=abc123def456ghi789; theme=dark", "abc123def456ghi789"),
        ("stripe sk_live_51H8abcdefghijklmnopqrstuv", "51H8abcdefghijklmnop"),
        ("gitlab glpat-abcdefghij1234567890", "abcdefghij1234567890"),
        ("github github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "11ABCDEFG0123456789"),
        ("npm npm_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghijklmnopqrstuvwxyz0123456789"),
        ("hub hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    ],
)
def test_secret_shapes_are_redacted(text: str, leaked: str) -> None:
    out = Redactor().redact(text)
    assert leaked not in out, out
    assert REDACTED in out


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 4096, input_tokens=12",
        "order 4111 1111 1111 1112 shipped",  # sixteen digits that fail the Luhn check
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",  # a SHA-1: hex, not a key
        "see https://example.com/docs?page=2&sort=asc",
        "2026-03-10,kim at example dot com,15.00",
        "user=app&sslmode=require",
        "The authorization step failed; the cookie jar is empty",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor().redact(text) == text


def test_what_follows_a_password_survives() -> None:
    out = Redactor().redact("login?password=hunter2&next=/inbox then more")
    assert out == f"login?password={REDACTED}&next=/inbox then more"


def test_the_service_token_is_a_secret() -> None:
    token = "endstate-service-token-0123456789"
    redact = Redactor.from_env({"ENDSTATE_TOKEN": token})
    assert redact.redact(f"Bearer-less {token} in a log") == f"Bearer-less {REDACTED} in a log"


# A tool's output of a few hundred kB with no break in it: a hex dump, a token list, "a.a.a...".
LONG_RUN_SCRIPT = """
import sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from agent import Agent, tool
from agent.models import ScriptedModel, call, finish
from telemetry import Redactor, TracingHooks

RUN = sys.argv[1] * (1_000_000 // len(sys.argv[1]))

@tool
def dump(path: str) -> str:
    '''Dump a file.'''
    return "mail ana@example.com, " + RUN

spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
hooks = TracingHooks(provider, capture_content=True, redact=Redactor())
steps = [[call("dump", path="blob.bin")], [finish("done", "ok")]]
print(Agent("dumper", ScriptedModel(steps), tools=[dump], hooks=hooks).run("dump it").reason)
result = next(s for s in spans.get_finished_spans() if s.name == "execute_tool dump")
print(result.attributes["gen_ai.tool.call.result"][:30])
"""


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["a", "a.", "0f"])
def test_a_megabyte_without_a_break_is_redacted_in_linear_time(unit: str) -> None:
    """Before, an e-mail's local part and a URL's scheme were tried at every position of a run
    of their characters: a 1 MB run took hours (0.55 s at 32 kB, four times 0.14 s at 16 kB),
    with the run stalled in its hook. The bound below is some 50 times what it takes now."""
    done = subprocess.run(
        [sys.executable, "-c", LONG_RUN_SCRIPT, unit], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    reason, head = done.stdout.splitlines()
    assert reason == "success"
    assert head.startswith(f"mail {REDACTED}, ")


@pytest.mark.parametrize(
    ("arguments", "leaked"),
    [
        ({"token": ["tok-4f9a8b7c6d5e"]}, "tok-4f9a8b7c6d5e"),
        ({"auth": {"secret": {"value": "s-4f9a8b7c6d5e"}}}, "s-4f9a8b7c6d5e"),
        ({"password": 'half "quoted" pass phrase'}, "pass phrase"),
        ({"db_password": 73915824}, "73915824"),
        ({"private_key": "k-4f9a8b7c6d5e"}, "k-4f9a8b7c6d5e"),
        ({"headers": {"Authorization": "Basic dXNlcjpwYXNz", "Cookie": "sid=4f9a8b7c"}}, "sid=4f9a8b7c"),
    ],
)
def test_a_secret_field_of_tool_arguments_is_redacted_whatever_its_value(
    arguments: dict[str, object], leaked: str
) -> None:
    """A field named like a secret lost only the text up to a quote or bracket: a list, an object,
    a number or an escaped quote in its value let the rest through."""
    out = value_json(arguments, Redactor())
    assert leaked not in out and "dXNlcjpwYXNz" not in out, out
    assert REDACTED in out


def test_fields_that_only_sound_like_secrets_are_kept() -> None:
    arguments = {"max_tokens": 5, "input_tokens": 3, "query": "authorization flow", "tokenizer": "bpe"}
    assert value_json(arguments, Redactor()) == json.dumps(arguments, sort_keys=True)
