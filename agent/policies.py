"""Small policies an agent is configured with: retries and waiting for people."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from agent._valid import is_finite_from_zero, is_whole
from agent.errors import ConfigError

# The longest wait for a person: a deadline past it cannot be waited for everywhere (a Temporal
# timer is a protobuf Duration of at most 10,000 years; a date stops at the year 9999).
MAX_WAIT_SECONDS = 100 * 365 * 86400.0

MAX_RETRY_AFTER = 600.0  # seconds: a longer retry-after (a broken proxy, a bad header) ends the run as error


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff for transient model failures (429, 529, 5xx, timeouts).

    Retries happen inside the run's time budget. A server's `retry-after` is
    honoured as given, never cut short by `max_delay` (retrying sooner only
    meets another 429); `max_delay` caps the policy's own backoff. The loop
    never sleeps into the budget: a `retry-after` longer than the time left
    stops the run at once (`limit`/`seconds`), and so does the policy's own
    backoff, but as `error` (the API still failing, no retry fits); a wait
    longer than `MAX_RETRY_AFTER` ends it as `error`, budget or not.
    """

    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: bool = True

    def __post_init__(self) -> None:
        attempts = self.max_attempts
        if not (is_whole(attempts) and attempts >= 1):
            shown = repr(attempts)
            raise ConfigError(f"RetryPolicy.max_attempts must be a whole number >= 1 (1: no retry); {shown}")
        for name in ("base_delay", "max_delay"):
            value = getattr(self, name)
            if not is_finite_from_zero(value):
                raise ConfigError(f"RetryPolicy.{name} must be a finite number of seconds >= 0, got {value}")

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait after failed attempt number `attempt`, or None to stop."""
        if attempt >= self.max_attempts:
            return None
        if retry_after is not None:
            return max(retry_after, 0.0)
        # past 2**1023 no float holds the factor (OverflowError): by then any backoff is at its cap
        backoff = min(self.max_delay, self.base_delay * 2 ** min(attempt - 1, 1023))
        return backoff * (0.5 + random.random() / 2) if self.jitter else backoff


@dataclass(frozen=True)
class HelpPolicy:
    """How long a person may take, and what happens when nobody answers.

    `on_timeout="end"` ends the run as `help_timeout` with a summary;
    `"resume"` goes on with `default_answer` (a pending tool call is denied).
    """

    wait_seconds: float = 24 * 3600.0
    on_timeout: Literal["end", "resume"] = "end"
    default_answer: str = "Nobody answered in time. Take this as a no and do not wait for an answer."

    def __post_init__(self) -> None:
        wait = self.wait_seconds
        if not is_finite_from_zero(wait) or wait > MAX_WAIT_SECONDS:
            raise ConfigError(
                f"HelpPolicy.wait_seconds must be a finite number from 0 to {MAX_WAIT_SECONDS:.0f} (100 "
                f"years), got {wait!r} (a deadline is saved with the run: for a very long wait, give a "
                "large number such as 10 * 365 * 86400)"
            )
        if self.on_timeout not in ("end", "resume"):
            raise ConfigError(f"HelpPolicy.on_timeout must be 'end' or 'resume', got {self.on_timeout!r}")
        answer = self.default_answer
        if not isinstance(answer, str) or (self.on_timeout == "resume" and not answer.strip()):
            raise ConfigError(
                "HelpPolicy.default_answer must be text (with on_timeout='resume', what the run is told "
                f"when nobody answers, as a person's answer must say something), got {answer!r}"
            )
