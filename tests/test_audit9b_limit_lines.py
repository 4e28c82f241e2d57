"""The OTEL_* attribute limits cut spans without a line a span on standard error.

The SDK logs a warning each time a limit cuts an attribute: a run that truncated its captured content
to `OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT` (as a deployment capturing content sets) wrote hundreds of
identical lines from one `endstate demo` (303), burying the one line that says telemetry was not
delivered, and a service one a span, without end. Each is now said once a process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter

from test_runner_agents import env_with_tests

LIMITED = """
import logging
from prometheus_client import CollectorRegistry
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from telemetry import Telemetry
from test_telemetry_delivery import looking

logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
spans = InMemorySpanExporter()
telemetry = Telemetry.from_env(registry=CollectorRegistry(), span_exporter=spans)
result = looking("a-looker-with-a-long-name", 40, telemetry).run("look at everything there is")
telemetry.shutdown(timeout_s=60)
finished = spans.get_finished_spans()
assert result.turns == 40 and len(finished) == 3 * 40 + 1, (result, len(finished))
assert max(len(span.attributes) for span in finished) == 3  # the limits did cut
print(max(len(v) for span in finished for v in span.attributes.values() if isinstance(v, str)))
"""


def test_each_limit_warning_of_the_sdk_is_said_once_however_many_spans_it_cuts() -> None:
    env = {k: v for k, v in env_with_tests().items() if not k.startswith(("OTEL_", "ENDSTATE_TRACES"))}
    limits = {"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "3", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "4"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(LIMITED)],
        env={**env, **limits},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4"  # values cut to the length limit
    sdk_lines = Counter(line for line in done.stderr.splitlines() if " opentelemetry." in line)
    assert any("Attributes dict is full" in line for line in sdk_lines), done.stderr
    assert any("exceeds max length of 4" in line for line in sdk_lines), done.stderr
    assert sorted(sdk_lines.values()) == [1, 1], done.stderr  # each said once, and nothing else
