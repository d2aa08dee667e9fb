"""What to do with a job after a failed run: a pure decision, tested without a broker or a clock.

The worker reports what happened (a transient failure, a fatal one, a timeout) and how many runs have been
made; the policy answers :class:`Retry` (after a delay drawn with full jitter) or :class:`DeadLetter` (with
the ``x-tq-reason`` of interface.md). Randomness is injected so tests can pin the draw and check its bounds.

Delays are applied by the broker, not by a sleeping worker: the transport's ``retry_later`` takes the drawn
delay and applies it its own way, within the precision its plugin declares.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

DEFAULT_BACKOFF_BASE_S = 1.0
DEFAULT_BACKOFF_CAP_S = 60.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_CRASH_LIMIT = 3

DeadLetterReason = Literal[
    "max_retries", "fatal", "malformed", "unknown_task", "too_large", "timeout", "crash_loop"
]


class Failure(StrEnum):
    """How a run failed, as far as the retry policy cares."""

    TRANSIENT = "transient"  # TransientError or any unexpected exception
    FATAL = "fatal"  # FatalError: retrying cannot help
    TIMEOUT = "timeout"  # the run went past --job-timeout


@dataclass(frozen=True, slots=True)
class Retry:
    """Run the job again after ``delay_s``; the next run is number ``next_attempt``."""

    delay_s: float
    next_attempt: int


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Send the job to the dead-letter queue with this ``x-tq-reason``."""

    reason: DeadLetterReason


Decision = Retry | DeadLetter


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Full-jitter exponential backoff with a retry budget and a crash limit.

    ``max_retries`` is the default for tasks whose decorator sets none; N retries mean N + 1 runs.
    """

    base_s: float = DEFAULT_BACKOFF_BASE_S
    cap_s: float = DEFAULT_BACKOFF_CAP_S
    max_retries: int = DEFAULT_MAX_RETRIES
    crash_limit: int = DEFAULT_CRASH_LIMIT

    def __post_init__(self) -> None:
        if self.base_s < 0 or self.cap_s < 0:
            raise ValueError("backoff base and cap must not be negative")
        if self.max_retries < 0:
            raise ValueError("max_retries must not be negative")
        if self.crash_limit < 1:
            raise ValueError("crash_limit must be at least 1")

    def delay_bound(self, attempt: int) -> float:
        """Upper bound of the delay after run ``attempt`` (1-based): ``min(cap, base * 2**(attempt-1))``."""
        exponent = max(attempt - 1, 0)
        if exponent > 1023:  # 2.0**1024 overflows; the cap has long since won
            return self.cap_s
        return min(self.cap_s, self.base_s * 2.0**exponent)

    def after_failure(
        self, attempt: int, failure: Failure, rng: random.Random, max_retries: int | None = None
    ) -> Decision:
        """Decide after run number ``attempt`` (1 on the first run) failed.

        ``max_retries`` is the task's own budget (the decorator's value); it wins over the policy's default.
        """
        if attempt < 1:
            raise ValueError("attempt is 1-based: the first run is attempt 1")
        if failure is Failure.FATAL:
            return DeadLetter("fatal")
        budget = self.max_retries if max_retries is None else max_retries
        if attempt > budget:
            return DeadLetter("timeout" if failure is Failure.TIMEOUT else "max_retries")
        return Retry(delay_s=rng.uniform(0.0, self.delay_bound(attempt)), next_attempt=attempt + 1)

    def before_run(self, crashes: int) -> DeadLetter | None:
        """A job whose runs killed their worker ``crash_limit`` times is quarantined instead of run again."""
        return DeadLetter("crash_loop") if crashes >= self.crash_limit else None
