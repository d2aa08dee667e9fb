"""One policy for the background threads of a plugin's consumer or settler: a thread never dies silently.

A background thread (a settler sending acks in batches, a receiver long-polling) that ends on an exception
its plugin did not expect would leave the worker up and consuming nothing, or leave every caller that waits
for it waiting for ever. :class:`Background` starts those threads and keeps the first such death as a
:class:`PluginFault`; the consumer's I/O loop, run inside :meth:`Background.io_loop`, raises it on its next
turn, so :meth:`~tqadmin.plugin.transport.Consumer.run` ends with it, the worker process exits 1 with the
masked traceback, and its supervisor starts a fresh process (which heals a transient fault; a repeated one
is restarted with backoff and counted, loudly). An exception of the I/O loop itself that is not one of
tqadmin's errors is the same fault. What had not been acked is redelivered by the broker and absorbed by
the completion store: nothing is acked that did not run.

Every wait on a background thread goes through :meth:`Background.wait`, which gives up when that thread
died or the wait's timeout passed, never waiting for ever.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

from tqadmin.errors import TqadminError
from tqadmin.show.masking import mask_text

log = logging.getLogger("tqadmin.worker")

WAIT_SLICE_S = 0.25  # how often a wait on a background thread looks whether that thread is still alive


class PluginFault(Exception):
    """An exception a plugin did not expect, in one of its consumer's threads: the worker process ends with
    exit 1 and its supervisor starts a new one. The original exception is the ``__cause__``."""

    def __init__(self, thread: str, cause: BaseException) -> None:
        super().__init__(f"{thread} died: {mask_text(f'{type(cause).__name__}: {cause}')}")
        self.thread = thread
        self.__cause__ = cause


class Background:
    """The background threads of one consumer or settler, and what a death of one of them does."""

    def __init__(self, on_death: Callable[[], None] = lambda: None) -> None:
        """``on_death`` wakes the owner (notifies the condition its loop waits on), called once."""
        self._on_death = on_death
        self._lock = threading.Lock()
        self._fault: PluginFault | None = None

    @property
    def fault(self) -> PluginFault | None:
        """The first death, if a thread died."""
        return self._fault

    def start(self, name: str, target: Callable[[], object]) -> threading.Thread:
        """Run ``target`` in a daemon thread called ``name``; an exception out of it is a fault."""
        thread = threading.Thread(target=self._guarded, args=(name, target), name=name, daemon=True)
        thread.start()
        return thread

    def _guarded(self, name: str, target: Callable[[], object]) -> None:
        try:
            target()
        except BaseException as exc:  # the whole point: nothing out of a thread goes unseen
            self.died(name, exc)

    def died(self, name: str, exc: BaseException) -> PluginFault:
        """Record that ``name`` ended on ``exc``; the first fault recorded (the one the owner raises)."""
        with self._lock:
            first = self._fault is None
            if first:
                self._fault = PluginFault(name, exc)
            fault = self._fault
        assert fault is not None
        if first:
            log.error("%s; the worker stops and a new process takes over", fault)
            self._on_death()
        return fault

    def check(self) -> None:
        """Raise the fault if a background thread died (the owner's loop calls this every turn)."""
        if self._fault is not None:
            raise self._fault

    @contextlib.contextmanager
    def io_loop(self, name: str) -> Iterator[None]:
        """Run the owner's I/O loop: tqadmin's errors end it as they are (exit 3, 4 ...); any other exception,
        or a background thread's death, ends it as a :class:`PluginFault`."""
        try:
            yield
        except (TqadminError, PluginFault):
            raise
        except Exception as exc:
            raise self.died(name, exc) from exc
        self.check()

    def wait(self, event: threading.Event, timeout_s: float) -> bool:
        """Wait for ``event``, which a background thread sets; ``False`` once ``timeout_s`` passed or a
        background thread died without setting it."""
        deadline = time.monotonic() + timeout_s
        while not event.wait(min(WAIT_SLICE_S, max(0.0, deadline - time.monotonic()))):
            if self._fault is not None or time.monotonic() >= deadline:
                return event.is_set()
        return True
