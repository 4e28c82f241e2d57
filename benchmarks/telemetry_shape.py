"""What a run's telemetry records, as text to compare across commits: a check that glue changes keep it.

Run: `python benchmarks/telemetry_shape.py > after.txt` on a branch, the same on its base
(`git archive main | tar -x -C /tmp/base`, then `PYTHONPATH=/tmp/base python
/tmp/base/benchmarks/telemetry_shape.py > before.txt`), and `diff before.txt after.txt`: empty
when every span (name, parent, kind, attributes, events, status, links) and every metric change
of the runs is the same. Runs of 1, 3 and 10 turns as `turn_overhead.record` makes them, and one of
2 turns with content captured on spans. Ids are given as each span's place in the run, run ids,
times and durations' values are left out: they differ from run to run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import turn_overhead  # beside this file

VARYING = ("gen_ai.conversation.id", "gen_ai.response.time_to_first_chunk")


def plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def shape(turns: int) -> list[str]:
    """One line per span, then one per metric change, of a run of `turns` turns."""
    spans, updates = turn_overhead.record(turns)
    place = {s.context.span_id: i for i, s in enumerate(spans) if s.context is not None}
    lines = []
    for i, span in enumerate(spans):
        attributes = {k: "<varies>" if k in VARYING else plain(v) for k, v in (span.attributes or {}).items()}
        lines.append(
            json.dumps(
                {
                    "i": i,
                    "name": span.name,
                    "kind": str(span.kind),
                    "parent": place.get(span.parent.span_id) if span.parent else None,
                    "attributes": attributes,
                    "events": [(e.name, {k: plain(v) for k, v in e.attributes.items()}) for e in span.events],
                    "status": [str(span.status.status_code), span.status.description],
                    "links": len(span.links),
                },
                sort_keys=True,
            )
        )
    for family, labels, how, value, times in sorted(
        updates, key=lambda u: (u[0], sorted(u[1].items()), u[2])
    ):
        timed = "seconds" in family or "duration" in family
        lines.append(json.dumps([family, sorted(labels.items()), how, None if timed else value, times]))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the same runs: they are already the quickest")
    parser.parse_args(argv)
    real = turn_overhead.TracingHooks
    for turns, capture in ((1, False), (3, False), (10, False), (2, True)):
        turn_overhead.TracingHooks = (lambda p: real(p, capture_content=True)) if capture else real  # type: ignore[misc]
        print(f"# {turns} turns, content {'captured' if capture else 'off'}")
        print("\n".join(shape(turns)))
    turn_overhead.TracingHooks = real  # type: ignore[misc]
    return 0


if __name__ == "__main__":
    sys.exit(main())
