"""How long to wait before the next try of something that keeps failing: reconnects and restarts.

Every reconnect or restart loop (the worker's consumer, the publisher, the worker supervisor, the cron
scheduler) asks :class:`Backoff` rather than computing ``base * 2**attempt`` itself, for three reasons:

- the exponent is capped, so hours of straight failures never overflow a float;
- the wait never exceeds ``cap_s``, so a loop notices a broker that came back within ``cap_s`` (plus one
  connection attempt), however long the outage was;
- the wait never falls below half of its bound ("equal jitter"), so many processes that lost the broker at
  the same moment spread their attempts over time instead of retrying in lock step, and each process makes
  at most ``2 / cap_s`` attempts per second once the bound has reached the cap.

Pure and injectable: the random draw comes from the ``rng`` given, so tests pin it and check the bounds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

MAX_EXPONENT = 32  # 2**32 times any sensible base is far past any sensible cap


@dataclass(frozen=True, slots=True)
class Backoff:
    """Waits that double from ``base_s`` up to ``cap_s``, each drawn in ``[bound / 2, bound]``."""

    base_s: float
    cap_s: float
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.base_s <= self.cap_s:
            raise ValueError("backoff needs 0 < base <= cap")

    def bound(self, failures: int) -> float:
        """The longest wait after ``failures`` failures in a row (1 = the first failure)."""
        exponent = min(max(failures - 1, 0), MAX_EXPONENT)
        return min(self.cap_s, self.base_s * 2.0**exponent)

    def delay(self, failures: int) -> float:
        """A wait after ``failures`` failures in a row, jittered within ``[bound / 2, bound]``."""
        bound = self.bound(failures)
        return self.rng.uniform(bound / 2, bound)


# Broker reconnects: back within RECONNECT_CAP_S of the broker's return, and at most one attempt every
# RECONNECT_CAP_S / 2 per process while it stays away (a handful a second across a fleet of workers).
RECONNECT_BASE_S = 0.25
RECONNECT_CAP_S = 3.0
# A worker or cron that cannot reach its broker at start waits this long for it (a broker booting beside
# it), then exits 3; a refused login or vhost exits at once.
START_WAIT_S = 60.0


def reconnect_backoff(rng: random.Random | None = None) -> Backoff:
    """The backoff every broker reconnect loop uses."""
    return Backoff(RECONNECT_BASE_S, RECONNECT_CAP_S, rng or random.Random())


# A listener whose source does not exist yet (Celery's event exchange on a vhost where no worker with task
# events ran) looks again after 2.5 s, doubling to 2 minutes: a vhost without Celery costs the broker a
# connection every minute or so, not one every few seconds for ever, and a worker started later is heard
# within the cap.
ABSENT_BASE_S = 2.5
ABSENT_CAP_S = 120.0


def absent_backoff(rng: random.Random | None = None) -> Backoff:
    """The backoff of a listener waiting for what it listens to to exist."""
    return Backoff(ABSENT_BASE_S, ABSENT_CAP_S, rng or random.Random())


MIN_RETRY_S = 1.0  # a dashboard or an exporter never asks a failing API more than once a second
RETRY_CAP_REFRESHES = 1.5


def poll_retry_delay(failures: int, refresh_s: float) -> float:
    """Seconds to wait before the next poll after ``failures`` failed ones in a row (0 = healthy).

    A failing API is asked again after one refresh, then every 1.5 refreshes (never more often than once a
    second): the on-call engineer sees it come back within two refreshes, even after a long outage, while
    a handful of dashboards or exporters cost a broken API a request a second or so. No jitter: the bound
    is the wait.
    """
    if failures <= 0:
        return refresh_s
    base = max(MIN_RETRY_S, refresh_s)
    return Backoff(base, max(base, RETRY_CAP_REFRESHES * refresh_s)).bound(failures)
