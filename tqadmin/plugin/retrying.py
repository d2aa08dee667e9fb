"""The one reconnect and retry loop of every plugin (and of the worker supervisor): count the failures in a
row, wait what :mod:`tqadmin.backoff` says after each, start again from the first wait after a success.

A loop that computed ``base * 2**attempt`` itself overflowed after about a thousand failures in a row (an
outage of an hour or so) and killed the thread it ran in; through :class:`Retrying` the waits stay within
the backoff's cap however long the failures go on. The sleep and the clock are injectable, so a test drives
thousands of failures through a plugin's loop in no time and checks every wait it asked for.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tqadmin.backoff import Backoff, reconnect_backoff

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
