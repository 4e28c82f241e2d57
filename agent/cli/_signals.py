"""SIGTERM on the commands that play runs in this process with no store to keep them (`demo`, `eval`)."""

from __future__ import annotations

import signal
from types import FrameType

CTRL_C_EXIT, SIGTERM_EXIT = 130, 143  # 128 + the signal's number, as a shell reports a process it ended
_terminated: list[bool] = []  # set once SIGTERM came


def sigterm_as_ctrl_c() -> None:
    """From here on SIGTERM stops the command as Ctrl-C does (the run playing ends `cancelled`, the
    spans of the runs played are sent), then it exits `SIGTERM_EXIT`. Left alone when Ctrl-C is
    ignored (a job started in the background), as SIGTERM would then be too."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGTERM, _as_ctrl_c)


def _as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    _terminated.append(True)
    signal.raise_signal(signal.SIGINT)  # `asyncio.run` cancels its task on it; else KeyboardInterrupt


def interrupted_exit() -> int:
    """The exit code of a command a signal stopped (a KeyboardInterrupt got out of it)."""
    return SIGTERM_EXIT if _terminated else CTRL_C_EXIT
