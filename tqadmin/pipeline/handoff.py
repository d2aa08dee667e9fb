"""What a worker's job threads do next with the completion store, so one store round trip serves many jobs.

Deliveries arrive *fresh* from the I/O thread. Whichever job thread finds work for the store while no round
trip is on the wire takes a *trip*: every fresh delivery to claim and every pending completion *mark* (a run
that finished fine and waits to be marked done before its ack) go out in one ``complete_and_claim``. The
claimed jobs come back *ready* for any job thread to run; a job whose claim shows crashes on record comes
back a *suspect*: its claim is given back and it runs later *solo*, with a claim of its own and nothing
beside it (:mod:`tqadmin.pipeline.gate`), so a further crash is charged to it alone. While a suspect waits or
runs no fresh delivery is claimed, so the suspect is the only job of the process holding a claim.

Trips go out when the ready jobs run low (fewer than the job threads), when enough items have piled up, or
at stop: jobs get claimed ahead of need, and marks wait for a trip a little, never longer than it takes the
ready jobs to run low. Idle job threads are woken only when work appears for them (a thread waking costs
more than a no-op job), never once per delivery.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

D = TypeVar("D")  # a delivery
R = TypeVar("R")  # a decoded job, ready to run or a suspect
M = TypeVar("M")  # a finished run whose completion mark is to be sent


@dataclass(slots=True)
class Trip(Generic[D, M]):
    """A store round trip for the thread that took it: claim ``fresh``, mark ``marks`` done; then the thread
    reports the outcome with :meth:`Handoff.landed`."""

    fresh: list[D] = field(default_factory=list)
    marks: list[M] = field(default_factory=list)


@dataclass(slots=True)
class Take(Generic[R]):
    """A job to run: a ready one (its claim taken in a trip), or a suspect to claim and run alone."""

    item: R
    solo: bool


@dataclass(slots=True)
class Left(Generic[D, R, M]):
    """What a stopped handoff still held: fresh deliveries, ready jobs (holding claims), suspects, marks."""

    fresh: list[D]
    ready: list[R]
    suspects: list[R]
    marks: list[M]


class Handoff(Generic[D, R, M]):
    """Fresh deliveries, ready jobs, suspects and pending marks, shared by the I/O thread and the job threads.

    ``low``: a trip goes out whenever fewer jobs than this are ready (the job threads would soon idle);
    ``batch``: or when this many deliveries and marks wait, however many jobs are ready."""

    def __init__(self, *, low: int, batch: int) -> None:
        self._low = low
        self._batch = batch
        self._changed = threading.Condition(threading.Lock())
        self._fresh: list[D] = []
        self._ready: deque[R] = deque()
        self._suspects: deque[R] = deque()
        self._marks: list[M] = []
        self._on_wire = False
        self._solo = False  # a suspect was taken and its run is not over
        self._idle = 0
        self._stopping = False

    def offer(self, delivery: D) -> None:
        """A delivery from the broker (the I/O thread)."""
        with self._changed:
            self._fresh.append(delivery)
            if len(self._fresh) == 1 and self._idle and not self._on_wire:
                self._changed.notify()

    def finished(self, mark: M) -> None:
        """A run ended fine: its mark goes out with a coming trip (the caller asks for its next step)."""
        with self._changed:
            self._marks.append(mark)

    def next(self) -> Trip[D, M] | Take[R] | None:
        """The calling job thread's next step, waiting until there is one; None once stopped."""
        with self._changed:
            while True:
                step = self._step()
                if step is not None or self._stopping:
                    return step
                self._idle += 1
                self._changed.wait()
                self._idle -= 1

    def _step(self) -> Trip[D, M] | Take[R] | None:
        may_claim = not (self._stopping or self._suspects or self._solo)
        fresh = len(self._fresh) if may_claim else 0
        pending = fresh + len(self._marks)
        soon = self._stopping or len(self._ready) < self._low or pending >= self._batch
        if pending and not self._on_wire and soon:
            self._on_wire = True
            trip: Trip[D, M] = Trip(self._fresh if fresh else [], self._marks)
            if fresh:
                self._fresh = []
            self._marks = []
            return trip
        if self._stopping:
            return None
        if self._ready:
            item = self._ready.popleft()
            if self._ready and self._idle:
                self._changed.notify()  # pass the wake-up on: one thread each, as long as jobs are ready
            return Take(item, solo=False)
        if self._suspects and not (self._solo or self._on_wire or self._marks):  # neighbours settled
            self._solo = True
            return Take(self._suspects.popleft(), solo=True)
        return None

    def landed(self, ready: list[R], suspects: list[R]) -> None:
        """A trip is back: ``ready`` jobs hold their claims, ``suspects`` gave theirs back."""
        with self._changed:
            self._on_wire = False
            self._ready.extend(ready)
            self._suspects.extend(suspects)
            if self._idle and (ready or suspects or self._fresh or self._marks):
                self._changed.notify()

    def solo_over(self) -> None:
        """The suspect taken last has run (or was settled without running): claiming resumes."""
        with self._changed:
            self._solo = False
            if self._idle:
                self._changed.notify()

    def waiting(self) -> list[R]:
        """Ready jobs not started yet: their claims' leases must be renewed while they wait."""
        with self._changed:
            return list(self._ready)

    def drop_lost(self, fresh_gone: Callable[[D], bool], item_gone: Callable[[R], bool]) -> list[R]:
        """Forget the fresh deliveries, ready jobs and suspects the broker took back with a lost connection
        (they come again, redelivered); returns the ready jobs dropped, whose claims are to be given back."""
        with self._changed:
            self._fresh = [d for d in self._fresh if not fresh_gone(d)]
            self._suspects = deque(r for r in self._suspects if not item_gone(r))
            dropped = [r for r in self._ready if item_gone(r)]
            self._ready = deque(r for r in self._ready if not item_gone(r))
            return dropped

    def stop(self) -> None:
        """Hand out no more jobs; pending marks still go out, then every job thread's :meth:`next` is None."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()

    def take_all(self) -> Left[D, R, M]:
        """Everything left once the job threads are gone, for the worker to give back."""
        with self._changed:
            left = Left(self._fresh, list(self._ready), list(self._suspects), self._marks)
            self._fresh, self._marks = [], []
            self._ready.clear()
            self._suspects.clear()
            return left
