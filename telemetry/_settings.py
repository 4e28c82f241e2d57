"""The SDK's own `OTEL_*` settings, checked before the SDK reads them.

The SDK reads a limit it cannot parse with a bare `ValueError` (one of them,
OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, as `opentelemetry.sdk.trace` is imported),
and a batch processor setting it cannot parse with a logged traceback and
its default. Here each is a `ConfigError` naming the variable and its fix,
when `telemetry` is imported (before the SDK is) and again at setup. So are
endpoints and the service name with blanks or line ends around them (the SDK
keeps them), the resource variables holding bytes that are not UTF-8 (the OTLP encoder
left such an attribute, `service.name` too, out of every export) and OTLP
headers the exporters cannot read (they dropped them with a log line), a
compression the exporters do not know (over gRPC a traceback, over HTTP a log
line and none), a resource attribute that is no `key=value` (dropped with a log
line), a TLS file that cannot be read (every export failed, said as a timeout) and a resource
detector that is not installed (skipped with a traceback, its attributes on no span).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points

from opentelemetry.environment_variables import OTEL_LOGS_EXPORTER, OTEL_TRACES_EXPORTER
from opentelemetry.sdk import environment_variables as ev

from agent._valid import seconds_in
from agent.errors import ConfigError
from agent.text import LONE_SURROGATE
from telemetry import names as n

LIMITS = (  # whole numbers from 0; empty means no limit
    ev.OTEL_ATTRIBUTE_COUNT_LIMIT,
    ev.OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    ev.OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT,
    ev.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    ev.OTEL_SPAN_EVENT_COUNT_LIMIT,
    ev.OTEL_SPAN_LINK_COUNT_LIMIT,
    ev.OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT,
    ev.OTEL_LINK_ATTRIBUTE_COUNT_LIMIT,
    ev.OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT,
    ev.OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT,
)
BATCH_MILLIS = {  # positive whole numbers of milliseconds; the SDK's defaults for the examples
    ev.OTEL_BSP_SCHEDULE_DELAY: 5000,
    ev.OTEL_BSP_EXPORT_TIMEOUT: 30000,
    ev.OTEL_BLRP_SCHEDULE_DELAY: 1000,
    ev.OTEL_BLRP_EXPORT_TIMEOUT: 30000,
}
LOG_QUEUE = {ev.OTEL_BLRP_MAX_QUEUE_SIZE: 2048, ev.OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: 512}
# A day, the longest delay or timeout taken: past some 9e12 ms the SDK's export thread died at its
# first wait (every span lost after one logged traceback), past 9e9 s every OTLP export failed
MOST_MILLIS = 86_400_000
MOST_SECONDS = 86_400.0
EXPORT_TIMEOUTS = (  # seconds, as the OTLP exporters read them: the gRPC one with a bare float()
    ev.OTEL_EXPORTER_OTLP_TIMEOUT,
    ev.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
    ev.OTEL_EXPORTER_OTLP_LOGS_TIMEOUT,
)
# An export timeout of this many seconds or more was most likely written in milliseconds, as the
# OpenTelemetry specification and the other SDKs read it (default 10000); the Python exporters read seconds
LIKELY_MILLIS = 1000.0
RESOURCE_TEXT = (ev.OTEL_SERVICE_NAME, ev.OTEL_RESOURCE_ATTRIBUTES)
# Read by the SDK as they are, blanks and line ends included (as a `.env` file with Windows line
# ends leaves them): an endpoint with one failed every export or posted to `/v1/traces%0D`.
UNTRIMMED = (
    ev.OTEL_EXPORTER_OTLP_ENDPOINT,
    ev.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    ev.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT,
    ev.OTEL_SERVICE_NAME,
)
HEADERS = (
    ev.OTEL_EXPORTER_OTLP_HEADERS,
    ev.OTEL_EXPORTER_OTLP_TRACES_HEADERS,
    ev.OTEL_EXPORTER_OTLP_LOGS_HEADERS,
)
# A header as the OTLP exporters take it (`opentelemetry.util.re`, liberal: blanks allowed in the
# value): a name of token characters, `=`, a value of printable ASCII other than `",;\`.
_HEADER_NAME = re.compile(r"[\x21\x23-\x27\x2a\x2b\x2d\x2e\x30-\x39\x41-\x5a\x5e-\x7a\x7c\x7e]+")
_HEADER_VALUE = re.compile(r"[\x20\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*")
_HEADER_SEPARATOR = re.compile(r"[ \t]*,[ \t]*")

# Each signal's compression variables, and the protocol variables that choose its exporter
COMPRESSIONS = {
    "traces": (ev.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, ev.OTEL_EXPORTER_OTLP_TRACES_COMPRESSION),
    "logs": (ev.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL, ev.OTEL_EXPORTER_OTLP_LOGS_COMPRESSION),
}
LOGS_EXPORTERS = ("otlp", "console", "none")
PROTOCOLS = (
    ev.OTEL_EXPORTER_OTLP_PROTOCOL,
    ev.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    ev.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL,
)
COMPRESSION_KINDS = {
    "http/protobuf": ("gzip", "deflate", "none"),
    "grpc": ("gzip",),
}  # what each exporter takes
TLS_FILES = tuple(
    f"OTEL_EXPORTER_OTLP{signal}_{kind}"
    for signal in ("", "_TRACES", "_LOGS")
    for kind in ("CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY")
)

# true or false; the SDK reads any other value as false, and says nothing (OTEL_SDK_DISABLED=1 exported
# every span, OTEL_EXPORTER_OTLP_INSECURE=yes made the gRPC exporter speak TLS to a plain collector)
BOOLEANS = (
    ev.OTEL_SDK_DISABLED,
    ev.OTEL_EXPORTER_OTLP_INSECURE,
    ev.OTEL_EXPORTER_OTLP_TRACES_INSECURE,
    ev.OTEL_EXPORTER_OTLP_LOGS_INSECURE,
    ev.OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED,
)
GRPC_RETRYABLE = "OTEL_PYTHON_EXPORTER_OTLP_GRPC_RETRYABLE_ERROR_CODES"  # status code names, comma-separated
DETECTOR_GROUP = (
    "opentelemetry_resource_detector"  # the entry points OTEL_EXPERIMENTAL_RESOURCE_DETECTORS names
)
CREDENTIAL_GROUP = "opentelemetry_otlp_credential_provider"  # the entry points the variables below name
CREDENTIAL_PROVIDERS = tuple(
    f"OTEL_PYTHON_EXPORTER_OTLP_{protocol}{signal}_CREDENTIAL_PROVIDER"
    for protocol in ("HTTP", "GRPC")
    for signal in ("", "_TRACES", "_LOGS")
)

SAMPLERS = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)


READ_FROM_THE_MAPPING = frozenset(  # what Endstate reads from `Telemetry.from_env`'s mapping itself
    {
        OTEL_TRACES_EXPORTER,
        OTEL_LOGS_EXPORTER,
        ev.OTEL_SDK_DISABLED,
        ev.OTEL_BSP_MAX_QUEUE_SIZE,
        ev.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
        ev.OTEL_BLRP_MAX_QUEUE_SIZE,
        ev.OTEL_BLRP_MAX_EXPORT_BATCH_SIZE,
        n.ENV_CAPTURE_CONTENT,
        n.ENV_SEMCONV_STABILITY_OPT_IN,
    }
)


def check_given_to_the_sdk(environ: Mapping[str, str]) -> None:
    """A `ConfigError` when a mapping given in place of the process environment sets an OpenTelemetry
    SDK variable (the exporter's endpoint, the sampler, the resource...) to what the process
    environment does not: the SDK reads its variables there only, so the mapping's would be ignored."""
    if environ is os.environ:
        return
    ignored = sorted(
        name
        for name, value in environ.items()
        if name.startswith("OTEL_") and name not in READ_FROM_THE_MAPPING and os.environ.get(name) != value
    )
    if ignored:
        given = ", ".join(f"{name}={environ[name]!r}" for name in ignored)
        raise ConfigError(
            f"{given}: the process environment does not say so, and the OpenTelemetry SDK reads its own "
            "variables there only, so the SDK would ignore it; set it in os.environ (or leave it out of "
            "the mapping given to Telemetry.from_env)"
        )


def check_sdk_settings(environ: Mapping[str, str]) -> None:
    """A `ConfigError` for the first setting the SDK would refuse or ignore."""
    check_sampler(environ)
    check_logs_exporter(environ)
    check_protocols(environ)
    check_trimmed(environ)
    check_resource_text(environ)
    check_headers(environ)
    check_compression(environ)
    check_resource_pairs(environ)
    check_tls_files(environ)
    check_booleans(environ)
    check_grpc_retryable(environ)
    check_credential_providers(environ)
    check_resource_detectors(environ)
    for name in LIMITS:
        raw = environ.get(name, "").strip()
        if raw and not (raw.isdigit() and raw.isascii()):
            raise ConfigError(f"{name}={raw!r} must be a whole number from 0, such as 128 (empty: no limit)")
    for name, default in BATCH_MILLIS.items():
        int_env(environ, name, default, most=MOST_MILLIS)
    for name, default in LOG_QUEUE.items():
        int_env(environ, name, default)
    for name in EXPORT_TIMEOUTS:
        check_seconds(environ, name)


def check_seconds(environ: Mapping[str, str], name: str) -> None:
    """An export timeout in seconds above 0: the gRPC exporter raised a bare `ValueError` for one
    that is no number, and with 0, a negative one or NaN every export failed."""
    raw = environ.get(name, "").strip()
    if raw and seconds_in(raw, MOST_SECONDS) is None:
        raise ConfigError(
            f"{name}={raw!r} must be a number of seconds above 0 and at most {MOST_SECONDS:g}, such as 10"
        )


def timeouts_in_millis(environ: Mapping[str, str]) -> list[str]:
    """What to say of each OTLP export timeout that reads as milliseconds (`LIKELY_MILLIS` or more):
    the Python exporters take it as seconds, so `10000` (the specification's default, in milliseconds)
    let one export to a collector that stopped answering hold the export thread for 2.8 hours."""
    said = []
    for name in EXPORT_TIMEOUTS:
        raw = environ.get(name, "").strip()
        seconds = seconds_in(raw, MOST_SECONDS) if raw else None
        if seconds is not None and seconds >= LIKELY_MILLIS:
            said.append(
                f"{name}={raw!r} is read as seconds by the Python OpenTelemetry exporters "
                f"({seconds / 3600:.1f} hours for one export to a collector that stops answering, "
                "every span meanwhile dropped), "
                "where the OpenTelemetry specification and the other SDKs read milliseconds: if "
                f"{seconds / 1000:g} s was meant, set {name}={seconds / 1000:g}"
            )
    return said


def check_trimmed(environ: Mapping[str, str]) -> None:
    """Endpoints and the service name without blanks or line ends around them, which the SDK keeps:
    every export to such an endpoint failed (or went to a path with `%0D` added), and such a name is
    another service to a trace backend. (A blank service name is left alone: it means none.)"""
    for name in UNTRIMMED:
        raw = environ.get(name, "")
        if raw.strip() and raw != raw.strip():
            raise ConfigError(
                f"{name}={raw!r} has blanks or a line end around it, which the SDK would keep (a .env "
                f"file with Windows line ends leaves a \\r): set it to {raw.strip()!r}"
            )


def check_resource_text(environ: Mapping[str, str]) -> None:
    """OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES in UTF-8. A byte that is not (a value written
    in Latin-1, say, which Python reads as a lone surrogate) made the OTLP encoder leave that
    attribute out of every export, `service.name` included, with an error line at each batch."""
    for name in RESOURCE_TEXT:
        if LONE_SURROGATE.search(raw := environ.get(name, "")):
            raise ConfigError(
                f"{name}={raw!r} holds bytes that are not UTF-8 (text in another encoding, such as "
                "Latin-1): OTLP carries UTF-8 only, and every span would go out without that attribute. "
                "Set it in UTF-8 (in OTEL_RESOURCE_ATTRIBUTES a value may also be percent-encoded: caf%C3%A9)"
            )


def check_headers(environ: Mapping[str, str]) -> None:
    """Each OTLP header variable a list of name=value the exporters take: one they cannot read they
    drop, saying so in a log line, and send without it (an `Authorization` left out: every export
    refused). The error names the header, never its value, which is often a secret."""
    for name in HEADERS:
        for index, item in enumerate(_HEADER_SEPARATOR.split(environ.get(name, "").strip()), start=1):
            if item and (problem := _header_problem(item, index)):
                raise ConfigError(
                    f"{name}: {problem}. Write each header as name=value, headers separated by commas, "
                    "the value URL-encoded where it holds other characters (a comma as %2C, é as %C3%A9)"
                )


def _header_problem(item: str, index: int) -> str:
    """What keeps `item`, the `index`th entry, from being a header the exporters send; "" if nothing."""
    key, equals, value = item.partition("=")
    if not equals:
        return f"entry {index} has no '=' (a header is name=value; 'name: value' is not read)"
    if not _HEADER_NAME.fullmatch(key.strip()):
        return f"the name of entry {index} holds characters other than letters, digits and !#$%&'*+-.^_`|~"
    if not _HEADER_VALUE.fullmatch(value.strip()):
        return f"the value of header {key.strip()!r} holds characters a header cannot carry"
    return ""


def check_logs_exporter(environ: Mapping[str, str]) -> None:
    """OTEL_LOGS_EXPORTER as OTEL_TRACES_EXPORTER is read: `otlp`, `console`, `none` or a list of
    them; another name was taken as no exporter, and content events went nowhere unsaid."""
    raw = environ.get(OTEL_LOGS_EXPORTER, "")
    for kind in (k.strip().lower() for k in raw.split(",")):
        if kind and kind not in LOGS_EXPORTERS:
            raise ConfigError(
                f"{OTEL_LOGS_EXPORTER}={raw!r}: {kind!r} is not supported: use 'otlp', 'console' or 'none'"
            )


def check_protocols(environ: Mapping[str, str]) -> None:
    """Each OTLP protocol variable set names a protocol the exporters take, endpoint or not: one that
    names none was refused only once an endpoint was set, so a bad value waited in the environment."""
    for name in PROTOCOLS:
        raw = environ.get(name, "")
        if raw.strip() and raw.strip() not in COMPRESSION_KINDS:
            raise ConfigError(f"{name}={raw!r} is not supported: use 'http/protobuf' or 'grpc'")


def check_compression(environ: Mapping[str, str]) -> None:
    """Each OTLP compression one its signal's exporter takes: the gRPC exporter (gzip only) raised a
    bare exception at setup for another, the HTTP one logged a line and sent without compression."""
    for protocol_name, own in COMPRESSIONS.values():
        protocol = (
            environ.get(protocol_name, "").strip() or environ.get(ev.OTEL_EXPORTER_OTLP_PROTOCOL, "")
        ).strip()
        kinds = COMPRESSION_KINDS.get(protocol or "http/protobuf")
        for name in (ev.OTEL_EXPORTER_OTLP_COMPRESSION, own):
            raw = environ.get(name, "")
            if kinds and raw.strip() and raw.strip().lower() not in kinds:
                over = f"over {protocol}" if protocol == "grpc" else "over http/protobuf"
                raise ConfigError(
                    f"{name}={raw!r} is not a compression the exporter takes {over}: use "
                    f"{' or '.join(kinds)}, or leave it unset"
                )


def check_resource_pairs(environ: Mapping[str, str]) -> None:
    """OTEL_RESOURCE_ATTRIBUTES as key=value entries: the SDK dropped an entry without `=` (or with no
    key) with a log line, and every span went out without that attribute."""
    raw = environ.get(ev.OTEL_RESOURCE_ATTRIBUTES, "")
    for index, item in enumerate(raw.split(","), start=1):
        key, equals, _ = item.partition("=")
        if item.strip() and not (equals and key.strip()):
            raise ConfigError(
                f"{ev.OTEL_RESOURCE_ATTRIBUTES}: entry {index} ({item.strip()!r}) is not key=value; write "
                "the attributes as key=value separated by commas, such as deployment.environment=prod,team=ml"
            )


def check_tls_files(environ: Mapping[str, str]) -> None:
    """The OTLP exporters' certificate and key files readable: with one missing every export failed,
    and the only line said the batch timed out."""
    for name in TLS_FILES:
        path = environ.get(name, "").strip()
        if not path:
            continue
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise ConfigError(
                f"{name}={path!r} cannot be read ({exc.strerror or exc}): name a PEM file this process "
                "can read, or unset it"
            ) from None


def check_booleans(environ: Mapping[str, str]) -> None:
    """Each of `BOOLEANS` true or false (any case), or unset."""
    for name in BOOLEANS:
        raw = environ.get(name, "")
        if raw.strip().lower() not in ("", "true", "false"):
            raise ConfigError(
                f"{name}={raw!r} must be true or false: the SDK reads any other value as false, so it "
                "would do nothing"
            )


def check_grpc_retryable(environ: Mapping[str, str]) -> None:
    """The gRPC exporter's retryable codes as names of gRPC status codes: another was a `KeyError`
    traceback as the exporter was made."""
    raw = environ.get(GRPC_RETRYABLE, "")
    codes = [code.strip() for code in raw.split(",") if code.strip()]
    if not codes:
        return
    try:
        from grpc import StatusCode
    except ImportError:  # no gRPC exporter to read it
        return
    for code in codes:
        if code.upper() not in StatusCode.__members__:
            raise ConfigError(
                f"{GRPC_RETRYABLE}={raw!r}: {code!r} is not a gRPC status code; list names such as "
                "UNAVAILABLE,RESOURCE_EXHAUSTED, or unset it for the exporter's own list"
            )


def check_credential_providers(environ: Mapping[str, str]) -> None:
    """Each OTLP credential provider variable names an installed provider: one that names none was a
    `RuntimeError` traceback as the exporter was made."""
    for name in CREDENTIAL_PROVIDERS:
        raw = environ.get(name, "")
        if raw and not entry_points(group=CREDENTIAL_GROUP, name=raw):
            raise ConfigError(
                f"{name}={raw!r} names no installed credential provider (an entry point of the group "
                f"{CREDENTIAL_GROUP}): install the package that provides it, or unset it"
            )


def check_resource_detectors(environ: Mapping[str, str]) -> None:
    """Each resource detector OTEL_EXPERIMENTAL_RESOURCE_DETECTORS names installed (or `*`, all of
    them): the SDK skipped another with an error line and a traceback, and every span went out without
    the attributes asked for."""
    raw = environ.get(ev.OTEL_EXPERIMENTAL_RESOURCE_DETECTORS, "")
    names = [name.strip() for name in raw.split(",") if name.strip() and name.strip() != "*"]
    if not names:
        return
    installed = set(entry_points(group=DETECTOR_GROUP).names)
    if missing := [name for name in names if name not in installed]:
        raise ConfigError(
            f"{ev.OTEL_EXPERIMENTAL_RESOURCE_DETECTORS}={raw!r}: {', '.join(map(repr, missing))} is no "
            f"installed resource detector (an entry point of the group {DETECTOR_GROUP}); the installed "
            f"ones: {', '.join(sorted(installed))}, or * for all. Install the package that provides it, "
            "or leave it out"
        )


def check_sampler(environ: Mapping[str, str]) -> None:
    """OTEL_TRACES_SAMPLER one the SDK knows, and a ratio its sampler takes: the SDK samples every
    trace instead, saying so only in a log line."""
    given = environ.get(ev.OTEL_TRACES_SAMPLER, "")
    sampler = given.strip().lower()
    if sampler and given.strip() != given:  # the SDK does not strip it: it would sample every trace
        raise ConfigError(
            f"{ev.OTEL_TRACES_SAMPLER}={given!r} has spaces around the name, which the SDK does not "
            f"ignore (it would sample every trace): set it to {sampler!r}"
        )
    if sampler and sampler not in SAMPLERS:
        raise ConfigError(
            f"{ev.OTEL_TRACES_SAMPLER}={sampler!r} is not a sampler: use one of {', '.join(SAMPLERS)}"
        )
    raw = environ.get(ev.OTEL_TRACES_SAMPLER_ARG, "").strip()
    if not sampler.endswith("traceidratio") or not raw:
        return
    try:
        ratio = float(raw)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        raise ConfigError(f"{ev.OTEL_TRACES_SAMPLER_ARG}={raw!r} must be a ratio from 0 to 1, such as 0.25")


def int_env(environ: Mapping[str, str], name: str, default: int, most: int = sys.maxsize) -> int:
    """The positive whole number `name` holds, at most `most` (a queue size past `sys.maxsize` was an
    OverflowError traceback at setup), `default` when it is empty or not set."""
    raw = environ.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise ConfigError(f"{name}={raw!r} must be a whole number, such as {default}") from None
    if value <= 0:
        raise ConfigError(f"{name}={raw!r} must be a positive number, such as {default}")
    if value > most:
        raise ConfigError(f"{name}={raw!r} must be at most {most}, such as {default}")
    return value


check_sdk_settings(os.environ)
