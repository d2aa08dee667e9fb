"""A subscription read in a background thread for as long as its owner lives: the one listener loop.

Event streams a plugin only reads (Celery's task events on RabbitMQ or Redis) are read by a daemon thread
that must outlive any answer: a dropped connection, a subscriber the server cut off (Redis's
``client-output-buffer-limit`` for pub/sub), a body that decodes to nothing. :class:`Listener` runs the
plugin's ``read`` (connect, subscribe, hand each payload over until stopped), and when it ends on any
exception counts a gap (what was published meanwhile was missed), says so once per outage, waits the
shared reconnect backoff (:class:`~tqadmin.plugin.retrying.Retrying`) and reads again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from tqadmin.masking import mask_text
from tqadmin.plugin.retrying import Retrying

log = logging.getLogger(__name__)

FIRST_LISTEN_S = 2.5  # one worker-heartbeat interval (Celery's default 2 s) and a margin

Deliver = Callable[[bytes], None]
Read = Callable[[threading.Event, Deliver], None]
"""Connect, subscribe and pass each payload to ``deliver`` until the event is set, then return; raise on
anything that ends the subscription."""


class Listener:
    def __init__(self, name: str, read: Read, deliver: Deliver, retrying: Retrying | None = None) -> None:
        self.name = name
        self._read = read
        self._deliver = deliver
        self._stop = threading.Event()
        self._retrying = retrying or Retrying(sleep=self._stop.wait)
        self._thread: threading.Thread | None = None
        self.gaps = 0  # subscriptions that ended before their owner did
        self.undelivered = 0  # payloads whose handling raised (counted, skipped)
        self.last_error: str | None = None

    def listening(self) -> None:
        """Listen from now on: the first call starts the thread and waits :data:`FIRST_LISTEN_S`, so that a
        first reading (a one-shot command's only one) has heard every worker beat once."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
            self._stop.wait(FIRST_LISTEN_S)

    def close(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._read(self._stop, self._guarded)
            except Exception as exc:  # a listener outlives any answer: counted, said once, read again
                if self._stop.is_set():
                    return
                self.gaps += 1
                self.last_error = mask_text(f"{type(exc).__name__}: {exc}")
                if self._retrying.failures == 0:
                    log.warning(
                        "%s: %s; listening again (events meanwhile are missed)", self.name, self.last_error
                    )
                self._retrying.wait(self._retrying.failed())
            else:
                self._retrying.succeeded()

    def _guarded(self, payload: bytes) -> None:
        try:
            self._deliver(payload)
        except Exception:  # a hostile payload never ends the subscription
            self.undelivered += 1
        else:
            if self._retrying.failures:
                log.warning("%s: listening again", self.name)
                self._retrying.succeeded()
