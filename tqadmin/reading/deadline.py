"""When a poll under way should have ended: a hung broker is said while the call still hangs.

A face's reading is replaced only when its poll ends, and a poll ends only when every call of it has: each
call is bounded by ``--timeout``, but a poll makes several, a driver may retry, and a broker that stops
answering mid-poll (a frozen server, a black-holed endpoint) used to leave the exporter serving
``tqadmin_up 1`` with the last values, and the dashboard painting them as live, until the whole poll gave up.

:class:`PollDeadline` is told when a poll starts and ends. A poll is expected to take about as long as the
last one did (a listing of 10,000 queues takes seconds every time); one still running ``--timeout`` past
that expected end is overdue: no call of it answered in the time one call is allowed. The faces ask
:meth:`PollDeadline.overdue` whenever they show something (a scrape, the dashboard's timer) and mark the
profile down while it is, without waiting for the call to end. Thread-safe: the poll's thread starts and
ends, the serving thread asks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class PollDeadline:
    def __init__(self, timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout_s = timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._started: float | None = None  # the poll under way, if any
        self._last_s = 0.0  # how long the last poll that ended took

    def started(self) -> None:
        with self._lock:
            self._started = self._clock()

    def ended(self) -> None:
        with self._lock:
            if self._started is not None:
                self._last_s = max(self._clock() - self._started, 0.0)
            self._started = None

    def overdue(self) -> float | None:
        """Seconds the poll under way has run, once it is past its deadline (its expected end plus
        ``--timeout``); ``None`` while no poll runs or the one that runs is within it."""
        with self._lock:
            if self._started is None:
                return None
            running = self._clock() - self._started
            return running if running > self._last_s + self.timeout_s else None

    def no_answer(self) -> str | None:
        """What a face says of an overdue poll (``no answer in 12 s``), ``None`` while it is not."""
        running = self.overdue()
        return None if running is None else f"no answer in {running:.0f} s (--timeout {self.timeout_s:g} s)"
