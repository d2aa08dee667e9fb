"""Group commit for store calls made by many job threads at once.

Each job thread still claims and completes its own job (so only a job that is really running holds a claim,
and a crash is counted against it alone), but calls that arrive while another batch is on the wire wait and
go out together as the next batch: one round trip for several jobs. One thread at a time leads: it sends the
batch holding its own call, hands the lead to the oldest waiting call, and returns; so no thread serves
others' batches for long while its own job waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


class _Call(Generic[In, Out]):
    """One waiting call. ``wake`` is a bare lock taken at birth and released once to wake the caller: a
    thread waking is the main cost of a batch, and a lock is far cheaper to wait on than an ``Event``."""

    __slots__ = ("error", "finished", "item", "result", "wake")

    def __init__(self, item: In) -> None:
        self.item = item
        self.result: Out | None = None
        self.error: BaseException | None = None
        self.finished = False
        self.wake = threading.Lock()
        self.wake.acquire()


class Coalescer(Generic[In, Out]):
    """``call(item)`` from any thread; ``send_batch(items)`` answers a list of them in order."""

    def __init__(self, send_batch: Callable[[Sequence[In]], Sequence[Out]], max_batch: int = 64) -> None:
        self._send_batch = send_batch
        self._max_batch = max_batch
        self._lock = threading.Lock()
        self._waiting: list[_Call[In, Out]] = []
        self._busy = False

    def call(self, item: In) -> Out:
        mine: _Call[In, Out] = _Call(item)
        with self._lock:
            self._waiting.append(mine)
            lead = not self._busy
            self._busy = True
        if not lead:
            mine.wake.acquire()
        if not mine.finished:  # we lead: our call is the oldest waiting one
            self._lead()
        if mine.error is not None:
            raise mine.error
        return mine.result  # type: ignore[return-value]

    def _lead(self) -> None:
        with self._lock:
            batch = self._waiting[: self._max_batch]
            del self._waiting[: self._max_batch]
        try:
            results = self._send_batch([c.item for c in batch])
            for c, result in zip(batch, results, strict=True):
                c.result = result
        except BaseException as exc:
            for c in batch:
                c.error = exc
        for c in batch:
            c.finished = True
            c.wake.release()
        with self._lock:
            if self._waiting:
                self._waiting[0].wake.release()  # not finished: it wakes up to lead
            else:
                self._busy = False
