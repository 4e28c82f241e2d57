"""Content capture modes, read as the GenAI instrumentations read them.

`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` takes `NO_CONTENT`,
`SPAN_ONLY`, `EVENT_ONLY` or `SPAN_AND_EVENT` (any case) when
`OTEL_SEMCONV_STABILITY_OPT_IN` lists `gen_ai_latest_experimental`, as the
current conventions say. `true` keeps its older meaning, content on spans,
with or without the opt-in. Anything else records no content and says why
once: content is never recorded by mistake.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from telemetry import names as n

log = logging.getLogger("endstate.telemetry")

MODES = (n.CAPTURE_NO_CONTENT, n.CAPTURE_SPAN_ONLY, n.CAPTURE_EVENT_ONLY, n.CAPTURE_SPAN_AND_EVENT)


@dataclass(frozen=True)
class Capture:
    """Where message content goes: nowhere, on spans, in events, or both."""

    mode: str = n.CAPTURE_NO_CONTENT

    @property
    def spans(self) -> bool:
        return self.mode in (n.CAPTURE_SPAN_ONLY, n.CAPTURE_SPAN_AND_EVENT)

    @property
    def events(self) -> bool:
        return self.mode in (n.CAPTURE_EVENT_ONLY, n.CAPTURE_SPAN_AND_EVENT)


def capture_from_env(environ: Mapping[str, str]) -> Capture:
    """The capture mode the variables ask for; NO_CONTENT, said once, when they ask wrongly."""
    raw = environ.get(n.ENV_CAPTURE_CONTENT, "").strip()
    if raw.lower() in ("", "false"):
        return Capture()
    if raw.lower() == "true":
        return Capture(n.CAPTURE_SPAN_ONLY)
    mode = raw.upper()
    if mode not in MODES:
        log.warning(
            "%s=%r is not one of %s: no content recorded", n.ENV_CAPTURE_CONTENT, raw, ", ".join(MODES)
        )
        return Capture()
    if not opted_in(environ):
        log.warning(
            "%s=%s needs %s=%s (the GenAI conventions' opt-in): no content recorded",
            n.ENV_CAPTURE_CONTENT,
            mode,
            n.ENV_SEMCONV_STABILITY_OPT_IN,
            n.OPT_IN_GEN_AI_LATEST,
        )
        return Capture()
    return Capture(mode)


def opted_in(environ: Mapping[str, str]) -> bool:
    """Whether OTEL_SEMCONV_STABILITY_OPT_IN lists gen_ai_latest_experimental."""
    listed = environ.get(n.ENV_SEMCONV_STABILITY_OPT_IN, "")
    return n.OPT_IN_GEN_AI_LATEST in {item.strip().lower() for item in listed.split(",")}
