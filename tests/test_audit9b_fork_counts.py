"""A process forked while spans were queued counts its own spans, not its parent's.

The SDK's batch processor empties its queue in a forked child (the parent still exports those spans);
the counts that `CountedBatchProcessor` keeps beside it were inherited: the child dropped its own spans
as `queue_full` when the parent's queue was full at the fork, and at its close counted the parent's
queued spans as lost (`shutdown`), though the parent sent them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

FORKED = """
import json, os, threading
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from telemetry.export import CountedBatchProcessor

parent = os.getpid()
entered, release = threading.Event(), threading.Event()
sent = []

class Exporter:
    def export(self, spans):
        if os.getpid() == parent:  # the parent's first export holds until the child is done
            entered.set()
            release.wait(120)
        sent.extend(span.name for span in spans)
        return SpanExportResult.SUCCESS
    def shutdown(self):
        pass
    def force_flush(self, timeout_millis=30000):
        return True

dropped = {}
def on_dropped(count, reason):
    dropped[reason] = dropped.get(reason, 0) + count

QUEUE = 4
spans = CountedBatchProcessor(Exporter(), on_dropped, QUEUE, 1)
provider = TracerProvider(shutdown_on_exit=False)
provider.add_span_processor(spans)
tracer = provider.get_tracer("fork")
tracer.start_span("parent-handed").end()
assert entered.wait(120), "the first export never began"
for i in range(QUEUE):  # the parent's queue full while its export is held
    tracer.start_span(f"parent-{i}").end()
read, write = os.pipe()
child = os.fork()
if child == 0:
    for i in range(3):
        tracer.start_span(f"child-{i}").end()
    provider.shutdown()
    said = {"sent": sent, "dropped": dropped, "sending": spans.count_sending()}
    os.write(write, json.dumps(said).encode())
    os._exit(0)
os.close(write)
os.waitpid(child, 0)
with os.fdopen(read) as pipe:
    in_child = json.loads(pipe.read())
release.set()
provider.shutdown()
print(json.dumps({"child": in_child, "parent": {"sent": sorted(sent), "dropped": dropped}}))
"""


@pytest.mark.skipif(not hasattr(sys.modules["os"], "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_exports_its_own_spans_and_counts_none_of_its_parents_as_lost() -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FORKED)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    # the child: its three spans sent, none dropped, no export of its parent's in flight
    assert said["child"] == {"sent": ["child-0", "child-1", "child-2"], "dropped": {}, "sending": 0}
    # the parent: all five of its own sent, none dropped
    expected = sorted(["parent-handed", *(f"parent-{i}" for i in range(4))])
    assert said["parent"] == {"sent": expected, "dropped": {}}
