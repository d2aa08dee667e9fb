"""A subscription read in a background thread for as long as its owner lives: the one listener loop.

Event streams a plugin only reads (Celery's task events on RabbitMQ or Redis) are read by a daemon thread
that must outlive any answer: a dropped connection, a subscriber the server cut off (Redis's
``client-output-buffer-limit`` for pub/sub), a body that decodes to nothing. :class:`Listener` runs the
plugin's ``read`` (connect, subscribe, hand each payload over until stopped), and when it ends on any
exception counts a gap (what was published meanwhile was missed), says so once per outage, waits the
shared reconnect backoff (:class:`~tqadmin.plugin.kit.retrying.Retrying`) and reads again. A source that does
not exist yet (:class:`NothingToHear`: Celery's event exchange where no worker with events ran) is no gap:
it is looked for again with the longer :func:`~tqadmin.connect.backoff.absent_backoff` (2.5 s doubling to 2
min).

A listener's state (what it heard so far) is worth more than the connection of the reader that started it:
a face drops its broker admin on any read error and opens a new one at the next poll. :data:`KEPT` keeps
each listener, by a key its plugin gives (the kind and the broker URL), while anyone holds it and
:data:`KEEP_S` after the last one let it go, so the admin opened after an error takes the same listener
back, with what it heard, and a listener nobody takes again is closed within minutes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from tqadmin.connect.backoff import absent_backoff
from tqadmin.errors import BrokerError
from tqadmin.plugin.kit.retrying import Retrying
from tqadmin.show.masking import mask_text

log = logging.getLogger(__name__)

FIRST_LISTEN_S = 2.5  # one worker-heartbeat interval (Celery's default 2 s) and a margin
KEEP_S = 300.0  # a listener its last holder let go is kept this long for the next one (a reconnected admin)

Deliver = Callable[[bytes], None]
Read = Callable[[threading.Event, Deliver], None]
"""Connect, subscribe and pass each payload to ``deliver`` until the event is set, then return; raise on
anything that ends the subscription."""


class NothingToHear(BrokerError):
    """What the listener would subscribe to does not exist yet; it is looked for again, not created."""


class Listener:
    def __init__(
        self,
        name: str,
        read: Read,
        deliver: Deliver,
        retrying: Retrying | None = None,
        absent: Retrying | None = None,
    ) -> None:
        self.name = name
        self._read = read
        self._deliver = deliver
        self._stop = threading.Event()
        self._retrying = retrying or Retrying(sleep=self._stop.wait)
        self._absent = absent or Retrying(absent_backoff(), sleep=self._stop.wait)
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
            except NothingToHear as exc:  # not there yet: looked for again, less and less often
                if self._stop.is_set():
                    return
                self.last_error = mask_text(str(exc))
                if self._absent.failures == 0:
                    log.warning("%s: %s; looking again with a backoff", self.name, self.last_error)
                self._absent.wait(self._absent.failed())
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
            if self._retrying.failures or self._absent.failures:
                log.warning("%s: listening again", self.name)
                self._retrying.succeeded()
                self._absent.succeeded()


class Closeable(Protocol):
    def close(self) -> None: ...


T = TypeVar("T", bound=Closeable)


@dataclass(slots=True)
class _Kept:
    value: Any
    holders: int = 0
    closing: threading.Timer | None = None


class KeptListeners:
    """Listeners (or what holds one) by key, kept while held and :attr:`keep_s` after the last release."""

    def __init__(self, keep_s: float = KEEP_S) -> None:
        self.keep_s = keep_s
        self._lock = threading.Lock()
        self._kept: dict[Hashable, _Kept] = {}

    def take(self, key: Hashable, make: Callable[[], T]) -> T:
        """The one kept under ``key`` (``make()`` the first time), held until :meth:`release`. A key names
        one kind of value (its plugin's and its broker's): what it holds is what ``make`` makes."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None:
                kept = self._kept[key] = _Kept(make())
            kept.holders += 1
            if kept.closing is not None:
                kept.closing.cancel()
                kept.closing = None
            return cast("T", kept.value)

    def release(self, key: Hashable) -> None:
        """One holder less; the last one's release closes it :attr:`keep_s` later unless taken again."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is None or kept.holders == 0:
                return
            kept.holders -= 1
            if kept.holders == 0:
                kept.closing = threading.Timer(self.keep_s, self._expire, (key, kept))
                kept.closing.daemon = True
                kept.closing.start()

    def close_all(self) -> None:
        """Close every listener kept, held or not (a test's end, a process's)."""
        with self._lock:
            kept, self._kept = list(self._kept.values()), {}
        for entry in kept:
            if entry.closing is not None:
                entry.closing.cancel()
            entry.value.close()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._kept

    def _expire(self, key: Hashable, kept: _Kept) -> None:
        with self._lock:
            if self._kept.get(key) is not kept or kept.holders:
                return
            del self._kept[key]
        kept.value.close()


KEPT = KeptListeners()
"""The process's kept listeners."""
