"""Exceptions for bugs and bad configuration. Expected stops are never raised."""

from __future__ import annotations

from agent._valid import is_finite_from_zero


class EndstateError(Exception):
    """Root of every exception Endstate raises on purpose."""


class ConfigError(EndstateError):
    """The agent, budget or tool definition is wrong; the message says what to fix."""


class MissingExtra(EndstateError, ModuleNotFoundError):
    """A module of Endstate needs an extra that is not installed; the message names the extra
    (`pip install 'endstate[temporal]'`). A `ModuleNotFoundError` still, for code that probes for it."""


class TakenOver(EndstateError):
    """Another worker holds the run now (this one's lease ran out: it stalled, or could not reach the
    store for longer than its lease), so this worker's segment ends where it learned so. It is no end
    of the run, which goes on in that worker: the segment ends `cancelled`, and its observer is told
    `run_taken_over`, not `run_ended`, so no stop is counted for it."""


class HandedOver(TakenOver):
    """The segment paused at a turn boundary so that the run goes on elsewhere from its checkpoint (a
    Temporal run continuing as new past its history bound, asked by its cancel signal's `hand_over()`).
    No end of the run: no stop is written to its journal, and its observer is told `run_taken_over`."""


class SnapshotError(EndstateError):
    """A snapshot cannot be read or cannot be resumed in the way asked."""


class ModelError(EndstateError):
    """The model call failed in a way that retrying will not fix.

    `error_type` is a short, bounded name for the failure (`rate_limit`,
    `overloaded`, `server_error`, `timeout`, `bad_request`...), used as the
    run's `error_type` when it ends in `error`. `request_id` is the provider's
    id of the HTTP request that failed, when it answered (what its support
    asks for; the chat span keeps it), else "".
    """

    def __init__(self, message: str, *, error_type: str | None = None, request_id: str = "") -> None:
        super().__init__(message)
        self.error_type = error_type or type(self).__name__
        self.request_id = request_id


class TransientModelError(ModelError):
    """The model call failed in a way that may pass: 429, 529, 5xx, timeouts.

    `retry_after` is the server's wait in seconds; a value that is no number of seconds (NaN,
    negative, infinite, not a number) is taken as not given, so the retry policy's backoff applies.
    """

    def __init__(
        self, message: str, *, error_type: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, error_type=error_type)
        given = retry_after
        seconds = is_finite_from_zero(given)
        self.retry_after = given if seconds else None


class ScriptExhausted(ModelError):
    """A scripted model was asked for more replies than its script holds."""
