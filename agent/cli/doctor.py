"""`endstate doctor [--model M]`: is this machine ready to run agents on Claude?

It checks, one line per finding: the API key, that the model is in the model
table with a price and a context window, that the models API knows the model
(and its lifecycle), and that one tiny call round-trips. Exit 0 only when all
hold; a check that could not run (offline, no key) says so and fails the run.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agent.cli._help import model_id
from agent.errors import ConfigError, ModelError
from agent.models.base import ModelRequest
from agent.models.catalog import DEFAULT_MODEL, ModelInfo, ModelTable, default_model

if TYPE_CHECKING:  # the SDK is imported when the doctor runs, not when the CLI starts
    import anthropic

Status = Literal["ok", "warn", "fail", "unchecked"]
HOLDS: frozenset[str] = frozenset({"ok", "warn"})


@dataclass(frozen=True)
class Finding:
    """One check's outcome: `ok`, `warn` (holds, with a caution), `fail`, or `unchecked` (could not run)."""

    status: Status
    check: str
    detail: str

    def line(self) -> str:
        return f"{self.status:9} {self.check}: {self.detail}"


def register(sub: Any) -> None:
    doctor = sub.add_parser(
        "doctor",
        help="check the API key, the model, its price and one tiny call",
        description="Check, one line per finding, that this machine can run agents on Claude: the API "
        "key, the model's row in the model table (price, context window), the models API, and one tiny "
        "call. Exit status: 0 when every check holds (ok, warn), 1 when one fails or could not run "
        "(unchecked: offline, no key), 2 when the command is refused (a model table that cannot be read).",
    )
    doctor.add_argument(
        "--model",
        type=model_id,
        help=f"the Claude model id (default: $ENDSTATE_MODEL, else {DEFAULT_MODEL})",
    )
    doctor.set_defaults(handler=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    findings = asyncio.run(diagnose(chosen_model(args.model)))
    for finding in findings:
        print(finding.line(), flush=True)
    return 0 if all(f.status in HOLDS for f in findings) else 1


def chosen_model(given: str | None) -> str:
    """--model, else `$ENDSTATE_MODEL`, else the default; a variable of blanks is refused naming it (it
    was checked as the model id ' ', every finding failing without saying where the blank came from)."""
    if given is not None:
        return given
    model = default_model()
    if not model.strip():
        raise ConfigError(
            f"$ENDSTATE_MODEL is blank: name a model in it, such as {DEFAULT_MODEL}, or unset it"
        )
    return model


async def diagnose(model_id: str) -> list[Finding]:
    """Every finding for `model_id`, in order; never raises for what it finds."""
    from agent.models.anthropic import AnthropicModel

    findings = [table_finding(model_id)]
    try:
        model = AnthropicModel(model_id, cache=None)
    except ConfigError as exc:  # no credentials, or a setting that is wrong (a base URL, the model id)
        keyless = "no credentials" in str(exc)
        findings.insert(0, Finding("fail", "api key" if keyless else "settings", str(exc)))
        why = (
            "needs credentials (set ANTHROPIC_API_KEY)"
            if keyless
            else "needs a client, which the settings above do not give"
        )
        return [*findings, Finding("unchecked", "models API", why), Finding("unchecked", "round trip", why)]
    findings.insert(0, Finding("ok", "api key", _credentials(model.client)))
    try:
        findings.append(await _guarded("models API", lambda: _model_exists(model.client, model_id)))
        findings.append(await _guarded("round trip", lambda: _round_trip(model)))
    finally:
        await model.aclose()
    return findings


def table_finding(model_id: str) -> Finding:
    """What the model table says: price and context window known, and the model's lifecycle."""
    info = ModelTable.load().get(model_id)
    if info is None:
        return Finding(
            "fail", "model table", f"{model_id} is not in the model table: add it with ENDSTATE_MODELS"
        )
    missing = [
        what for what, value in (("context window", info.context_window), ("price", info.price)) if not value
    ]
    if missing:
        reason = f" ({info.unknown_price_reason})" if info.price is None else ""
        return Finding("fail", "model table", f"{model_id}: no known {' or '.join(missing)}{reason}")
    if info.status != "active":
        return Finding("warn" if info.status == "deprecated" else "fail", "model table", _status(info))
    return Finding("ok", "model table", _summary(info))


def _summary(info: ModelInfo) -> str:
    assert info.price is not None and info.context_window is not None
    price = f"${info.price.input_per_mtok:.2f} in / ${info.price.output_per_mtok:.2f} out per MTok"
    checked = f", checked {info.checked}" if info.checked else ""
    sizes = f"context window {info.context_window:,} tokens, max output {info.max_output or 0:,}"
    return f"{info.id}: {sizes}, {price}{checked}"


def _status(info: ModelInfo) -> str:
    when = f" on {info.retires}" if info.retires else ""
    verb = "retires" if info.status == "deprecated" else "retired"
    return f"{info.id} is {info.status}: {verb}{when}. {info.note}".strip()


def _credentials(client: anthropic.AsyncAnthropic) -> str:
    if client.api_key:
        return "an API key is set (ANTHROPIC_API_KEY or api_key=)"
    return "credentials are set (auth token or profile)"


async def _guarded(check: str, probe: Callable[[], Awaitable[Finding]]) -> Finding:
    """Run a probe; offline or refused becomes `unchecked` or `fail` with the reason."""
    import anthropic

    from agent.models.anthropic import api_words

    try:
        return await probe()
    except anthropic.APIConnectionError as exc:
        return Finding("unchecked", check, f"cannot reach the API ({exc.request.url.host}): offline? {exc}")
    except anthropic.AuthenticationError as exc:
        return Finding("fail", check, f"the API refused the key: {api_words(exc)}")
    except anthropic.APIStatusError as exc:
        return Finding("fail", check, f"HTTP {exc.status_code}: {api_words(exc)}")
    except ModelError as exc:
        status: Status = "unchecked" if exc.error_type in ("connection", "timeout") else "fail"
        return Finding(status, check, str(exc))


async def _model_exists(client: anthropic.AsyncAnthropic, model_id: str) -> Finding:
    import anthropic

    try:
        info = await client.models.retrieve(model_id)
    except anthropic.NotFoundError:
        return Finding(
            "fail", "models API", f"{model_id} does not exist for this key (GET /v1/models/{model_id}: 404)"
        )
    window = f", max input {info.max_input_tokens:,} tokens" if info.max_input_tokens else ""
    if info.lifecycle == "retired":
        return Finding("fail", "models API", f"{model_id} is retired: calls naming it fail")
    differs = _table_differs(model_id, info.max_input_tokens, info.max_tokens)
    status: Status = "warn" if info.lifecycle == "deprecated" or differs else "ok"
    return Finding(status, "models API", f"{model_id} is {info.lifecycle}{window}{differs}")


def _table_differs(model_id: str, max_input: int | None, max_output: int | None) -> str:
    """What the model table says otherwise than the models API: a wrong maximum output lets through
    calls the API refuses (or refuses ones it takes), a wrong window misleads the history policy."""
    row = ModelTable.load().get(model_id)
    if row is None:
        return ""
    said = (("context window", row.context_window, max_input), ("max output", row.max_output, max_output))
    wrong = [
        f"{what} {table:,} where the API says {api:,}"
        for what, table, api in said
        if table and api and table != api
    ]
    return f"; the model table has {' and '.join(wrong)}: correct the row (ENDSTATE_MODELS)" if wrong else ""


async def _round_trip(model: Any) -> Finding:
    started = time.monotonic()
    request = ModelRequest.of_messages("", [{"role": "user", "content": "Reply with OK."}], [], 16)
    reply = await model.complete(request)
    seconds = time.monotonic() - started
    first = f", first token after {reply.time_to_first_token:.2f} s" if reply.time_to_first_token else ""
    tokens = f"{reply.input_tokens} input + {reply.output_tokens} output tokens"
    return Finding("ok", "round trip", f"{tokens} in {seconds:.2f} s{first} (stop: {reply.stop_reason})")
