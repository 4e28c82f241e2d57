"""Bounds for tests that wait for work which takes milliseconds on an idle machine (helpers; no tests).

A test that needs the work done waits for it up to such a bound and fails saying so; the bound
is far above what a machine at load 8 to 24 takes, so only a hang reaches it. A test that checks
a bound itself (a close that gives up after 1 s) keeps its own number.
"""

from __future__ import annotations

# Seconds a flush or close of telemetry is given when a test reads what it exported: the
# default (telemetry.setup.CLOSE_TIMEOUT_S, 2 s) is a close's bound for a process, not one a
# loaded test machine always meets.
FLUSH_S = 60.0
