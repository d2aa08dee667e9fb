"""How the worker's rooms tell trouble outside the worker from a bug inside it.

The store or the broker failing (``TqadminError``, ``OSError``) is weather: the job thread warns (once per
interval however many threads hit it, :mod:`tqadmin.pipeline.throttle`), gives the delivery back and pauses
until it may come back. Anything else is a bug of the worker's own: it is logged masked, with its traceback,
and the worker stops (exit 1) rather than take the same job again and again.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable

from tqadmin.errors import TqadminError
from tqadmin.pipeline.throttle import Throttle
from tqadmin.show.masking import mask_text

log = logging.getLogger("tqadmin.worker")

STORE_RETRY_S = 1.0
STORE_WARN_EVERY_S = 10.0
OUTSIDE = (TqadminError, OSError)
"""What the store and the broker raise when they are away: trouble outside the worker, not a bug in it."""


class Trouble:
    """Warnings, pauses and the first bug of one worker; ``stop`` is asked for once a bug is found."""

    def __init__(self, stopping: threading.Event, stop: Callable[[], None]) -> None:
        self._stopping = stopping
        self._stop = stop
        self._throttle = Throttle(STORE_WARN_EVERY_S)
        self._lock = threading.Lock()
        self.failure: Exception | None = None  # the bug that stopped the worker, raised by Worker.run

    def warn(self, exc: BaseException) -> None:
        if self._throttle.allow():
            more = self._throttle.suppressed
            log.warning(
                "could not handle a delivery: %s%s",
                mask_text(f"{type(exc).__name__}: {exc}"),
                f" ({more} more since the last such warning)" if more else "",
            )

    def pause(self) -> None:
        """Wait for the store or the broker to come back (cut short by a stop)."""
        self._stopping.wait(STORE_RETRY_S)

    def met(self, exc: Exception) -> None:
        """The store or the broker failed: warn and pause; anything else is a bug that stops the worker."""
        if isinstance(exc, OUTSIDE):
            self.warn(exc)
            self.pause()
        else:
            self.fail(exc)

    def fail(self, bug: Exception) -> None:
        """Stop the worker because of a bug of its own; :meth:`Worker.run` raises it once it has drained."""
        with self._lock:
            first = self.failure is None
            if first:
                self.failure = bug
        if first:
            log.error("worker bug, stopping: %s", mask_text(f"{type(bug).__name__}: {bug}"))
            log.info("%s", mask_text("".join(traceback.format_exception(bug))))
        self._stop()
