"""`endstate serve` (and `serve --temporal`) log what they quote from outside on one line, escaped: a run
id from a row edited by hand, or an exception's words, with a line break forged a log line of its own,
and an escape sequence drove the terminal of whoever tailed the log (red53: the store's "cannot be read"
line put the run id in raw). A traceback still follows its line. Each case runs in a process of its
own, as `serve` sets the process's logging up."""

from __future__ import annotations

import subprocess
import sys

HOSTILE = "r1\\n2026-12-06 00:00:00,000 INFO endstate: all clear\\x1b]0;PWNED\\x07\\u202e"


def logged(code: str) -> str:
    """What a process that sets logging up as `serve` does, then runs `code`, writes to stderr."""
    setup = "import logging\nfrom agent.service.server import log_for_operators\nlog_for_operators()\n"
    done = subprocess.run([sys.executable, "-c", setup + code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_quoted_run_id_cannot_forge_a_log_line_or_reach_the_terminal() -> None:
    err = logged(f'logging.getLogger("endstate").error("run %s: its snapshot cannot be read", "{HOSTILE}")')
    assert err.count("\n") == 1, err
    assert not any(c in err for c in ("\x1b", "\x07", "\u202e")), err
    assert " ERROR endstate: run r1 2026-12-06 00:00:00,000 INFO endstate: all clear\\x1b]0;PWNED\\x07" in err


def test_a_traceback_still_follows_its_line_and_info_is_logged() -> None:
    err = logged(
        'logging.getLogger("endstate").info("recovered 3 runs")\n'
        "try:\n    raise RuntimeError('the store went away')\n"
        "except RuntimeError:\n    logging.getLogger('endstate').exception('sweep failed')\n"
    )
    lines = err.splitlines()
    assert lines[0].endswith("INFO endstate: recovered 3 runs"), err
    assert (
        lines[1].endswith("ERROR endstate: sweep failed") and lines[2] == "Traceback (most recent call last):"
    )
    assert lines[-1] == "RuntimeError: the store went away"
