"""One warning per interval for a failure every job thread hits at once (the state store down), not one per
delivery per thread: during an outage the log says what is wrong and how often, and stays readable."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Throttle:
    """``allow()`` is true at most once per ``interval_s``; ``suppressed`` says how many were held back."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None
        self._held = 0
        self.suppressed = 0  # held back before the latest allowed one

    def allow(self) -> bool:
        now = self._clock()
        with self._lock:
            if self._last is not None and now - self._last < self._interval_s:
                self._held += 1
                return False
            self._last, self.suppressed, self._held = now, self._held, 0
            return True
