"""The one reconnect and retry loop of every plugin (and of the worker supervisor): count the failures in a
row, wait what :mod:`tqadmin.connect.backoff` says after each, start again from the first wait after a
success.

A loop that computed ``base * 2**attempt`` itself overflowed after about a thousand failures in a row (an
outage of an hour or so) and killed the thread it ran in; through :class:`Retrying` the waits stay within
the backoff's cap however long the failures go on. The sleep and the clock are injectable, so a test drives
thousands of failures through a plugin's loop in no time and checks every wait it asked for.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from tqadmin.connect.backoff import Backoff, reconnect_backoff
from tqadmin.errors import ConnectError, NotAuthorized

log = logging.getLogger(__name__)
T = TypeVar("T")

Sleep = Callable[[float], object]
"""Wait this many seconds (``time.sleep``, or a stop event's ``wait`` so that a stop cuts the wait short)."""


class Retrying:
    """The failures in a row of one loop, and the wait after each. Not thread-safe: one loop owns one."""

    def __init__(
        self,
        backoff: Backoff | None = None,
        *,
        sleep: Sleep = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backoff = backoff or reconnect_backoff()
        self.sleep = sleep
        self.clock = clock
        self.failures = 0
        self._since: float | None = None

    def failed(self) -> float:
        """Count one more failure in a row; the wait before the next try (not waited yet)."""
        self.failures += 1
        if self._since is None:
            self._since = self.clock()
        return self.backoff.delay(self.failures)

    def wait(self, seconds: float) -> None:
        """Wait ``seconds`` with the loop's sleep."""
        self.sleep(seconds)

    def failed_and_wait(self) -> float:
        """:meth:`failed`, then wait what it said; returns the wait."""
        delay = self.failed()
        self.wait(delay)
        return delay

    def succeeded(self) -> None:
        """The try went through: the next failure waits the first wait again."""
        self.failures = 0
        self._since = None

    def failing_for(self) -> float:
        """Seconds since the first of the failures in a row (0 when the last try went through)."""
        return 0.0 if self._since is None else self.clock() - self._since


def once_reachable(attempt: Callable[[], T], retrying: Retrying, budget_s: float, what: str) -> T:
    """What ``attempt()`` returns once the broker lets it through, waiting out one that cannot be reached yet.

    A worker or cron started beside a broker that is still booting (a compose file, a node restarted with
    its clients), or one that drops connections mid-handshake under load, would otherwise exit at its first
    connection while the same outage a minute later is waited out. A refusal (the login, the vhost, a
    permission) is the user's to fix and ends it at once; so does anything that is not a connection
    failure, and the budget: after ``budget_s`` of failures in a row the last one is raised (exit 3).
    """
    while True:
        try:
            return attempt()
        except ConnectError as exc:
            if isinstance(exc, NotAuthorized) or retrying.failing_for() >= budget_s:
                raise
            delay = retrying.failed()
            log.warning("%s (%s); trying again in %.1f s", what, exc, delay)
            retrying.wait(delay)
