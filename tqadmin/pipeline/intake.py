"""The intake: take deliveries from the I/O thread, decode them, claim them, and feed the job threads.

Two ways, one per worker: without the completion store every job thread takes the next delivery from an
in-process queue and runs it; with the store the job threads share the prefetch window through the
:class:`~tqadmin.pipeline.handoff.Handoff`, so one store round trip (a *trip*) claims many fresh deliveries
and carries the completion marks of the runs that finished meanwhile (:class:`Finished`), which the
settler then acks. A job whose claim shows crashes on record is a suspect: it gives its claim back and runs
alone later. A delivery that cannot run (malformed, of an unknown task) goes to the settler to be
dead-lettered; what never ran is given back at stop.
"""

from __future__ import annotations

import functools
import queue
import threading

from tqadmin.pipeline.handoff import Trip
from tqadmin.pipeline.job import MalformedJob, decode_message, with_header_retries
from tqadmin.pipeline.outcomes import (
    ABANDONED,
    SETTLED,
    Decoded,
    Finished,
    Handled,
    Run,
    WindowHandoff,
    claims_of,
)
from tqadmin.pipeline.running import Runner
from tqadmin.pipeline.settings import WorkerSettings
from tqadmin.pipeline.settler import Settler
from tqadmin.pipeline.tasks import TaskRegistry
from tqadmin.pipeline.trips import StoreTrips
from tqadmin.pipeline.trouble import OUTSIDE, Trouble
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.transport import Consumer
from tqadmin.store.completion.base import Claim, ClaimState
from tqadmin.telemetry.task_names import MALFORMED_TASK, UNKNOWN_TASK


class Intake:
    """Feeds the job threads of one worker from ``consumer``: with ``claiming`` (the completion store, unless
    ``--no-dedup``) through the ``handoff`` and shared claims, without it through an in-process queue."""

    def __init__(
        self,
        settings: WorkerSettings,
        consumer: Consumer,
        registry: TaskRegistry,
        *,
        handoff: WindowHandoff,
        claiming: StoreTrips | None,
        runner: Runner,
        settler: Settler,
        trouble: Trouble,
        stopping: threading.Event,
    ) -> None:
        self._policy = settings.policy
        self._max_bytes = settings.max_payload_bytes
        self._consumer = consumer
        self._registry = registry
        self._handoff = handoff
        self._trips = claiming
        self._runner = runner
        self._settler = settler
        self._trouble = trouble
        self._stopping = stopping
        self._inbox: queue.SimpleQueue[Delivery | None] = queue.SimpleQueue()  # without the store
        self._lock = threading.Lock()
        self._lost_claims: list[Claim] = []  # claims of window jobs whose deliveries went with a connection

    # -- the I/O thread -------------------------------------------------------------------------------------

    def on_message(self, delivery: Delivery) -> None:
        if self._stopping.is_set():
            self._consumer.release([delivery])
        elif self._trips is not None:
            self._handoff.offer(delivery)
        else:
            self._inbox.put(delivery)

    def deliveries_lost(self) -> None:
        """The consumer lost deliveries with its connection (I/O thread): the window's jobs waiting for them
        are dropped, and their claims given back before the next claims go out (:meth:`release_lost`), so
        the redelivered copies are claimable at once instead of waiting out these leases as ``HELD``."""
        if self._trips is None:
            return
        consumer = self._consumer
        dropped = self._handoff.drop_lost(
            lambda d: not consumer.alive(d), lambda item: not consumer.alive(item.delivery)
        )
        with self._lock:
            self._lost_claims += [item.claim for item in dropped if item.claim is not None]

    def release_lost(self) -> None:
        """Give back the claims of deliveries lost with a connection (a trip does it before it claims, the
        monitor when no trip comes); if the store fails meanwhile, their leases run out instead."""
        with self._lock:
            claims, self._lost_claims = self._lost_claims, []
        if claims:
            assert self._trips is not None
            for claim in claims:
                self._trips.release(claim)

    # -- the job threads ------------------------------------------------------------------------------------

    def serve(self) -> None:
        """A job thread: runs what the intake hands it until the worker stops (or its run is abandoned)."""
        if self._trips is not None:
            self._serve_window(self._trips)
            return
        while True:
            delivery = self._inbox.get()
            if delivery is None:
                return
            if self._stopping.is_set():
                self._consumer.release([delivery])
                continue
            if not self._consumer.alive(delivery):
                continue  # its channel died: the broker has already put it back
            if self._runner.guarded(delivery, functools.partial(self._unclaimed, delivery)) is ABANDONED:
                return  # timed out: a replacement thread has taken this one's place

    def _unclaimed(self, delivery: Delivery) -> Handled:
        item = self._decode(delivery)
        return SETTLED if item is None else self._runner.unclaimed(item)

    def _serve_window(self, trips: StoreTrips) -> None:
        """A job thread with the completion store: takes trips, ready jobs and suspects from the handoff."""
        while True:
            step = self._handoff.next()
            if step is None:
                return
            if isinstance(step, Trip):
                self._trip(trips, step)
                continue
            item = step.item
            run = self._runner.solo if step.solo else self._runner.ready
            outcome = self._runner.guarded(item.delivery, functools.partial(run, item))
            if outcome is ABANDONED:
                return
            if isinstance(outcome, Finished):
                self._handoff.finished(outcome.run)

    def _trip(self, trips: StoreTrips, trip: Trip[Delivery, Run]) -> None:
        """One store round trip: mark ``trip.marks`` done (then settle them) and claim the fresh deliveries.

        On a store failure the marked runs count as failed runs and the fresh deliveries go back, as one
        delivery's would; the worker pauses before the next trip."""
        settled: set[int] = set()  # fresh deliveries already dead-lettered (or gone with their channel)
        decoded: list[Decoded] = []
        ready: list[Decoded] = []
        suspects: list[Decoded] = []
        unrun: list[Decoded] = []
        try:
            self.release_lost()
            for fresh in trip.fresh:
                item = self._decode(fresh) if self._consumer.alive(fresh) else None
                if item is None:
                    settled.add(id(fresh))
                else:
                    decoded.append(item)
            done, claims = trips.mark_and_claim(claims_of(trip.marks), [item.job.id for item in decoded])
            for item, claim in zip(decoded, claims, strict=True):
                item.claim = claim
                if (
                    claim.state is not ClaimState.CLAIMED
                    or self._policy.before_run(claim.crashes) is not None
                ):
                    unrun.append(item)
                elif claim.crashes:
                    trips.release(claim)  # it waits holding no claim, then claims again alone
                    item.claim = None
                    suspects.append(item)
                else:
                    ready.append(item)
        except Exception as exc:
            self._handoff.landed(ready, suspects)
            for run in trip.marks:
                self._settler.marked(run, exc)
            settled.update(id(item.delivery) for item in ready + suspects)
            self._give_back([f for f in trip.fresh if id(f) not in settled])
            self._trouble.met(exc)
            return
        self._handoff.landed(ready, suspects)
        for run, ok in zip(trip.marks, done, strict=True):
            self._runner.guarded(run.delivery, functools.partial(self._settler.marked, run, ok))
        for item in unrun:
            self._runner.guarded(item.delivery, functools.partial(self._unrun, item))

    def _unrun(self, item: Decoded) -> Handled:
        assert item.claim is not None
        self._settler.unrun(item.delivery, item.job, item.claim)
        return SETTLED

    def _decode(self, delivery: Delivery) -> Decoded | None:
        """The delivery's job and task, or None once it is dead-lettered (malformed, unknown task). Such jobs
        count under a label, never under the name their body claims: any producer can make names up."""
        try:
            job = decode_message(delivery.message, max_bytes=self._max_bytes)
            job = with_header_retries(job, delivery.message.headers)
        except MalformedJob as exc:
            self._settler.refuse(delivery, exc.reason, f"MalformedJob: {exc}", 0, MALFORMED_TASK)
            return None
        spec = self._registry.get(job.task_type)
        if spec is None:
            known = ", ".join(self._registry.names())
            error = f"UnknownTask: no task {job.task_type!r} in this worker (it knows {known})"
            self._settler.refuse(delivery, "unknown_task", error, job.retry_count, UNKNOWN_TASK)
            return None
        return Decoded(delivery, job, spec)

    # -- stop -------------------------------------------------------------------------------------------

    def stop(self, threads: int) -> None:
        """Hand the ``threads`` job threads nothing more: each ends after its current step."""
        self._handoff.stop()
        for _ in range(threads):
            self._inbox.put(None)

    def release_unstarted(self) -> None:
        """Give back what never ran: fresh and prefetched deliveries, and the claims of ready jobs (so their
        leases do not run out and count a crash); marks a job thread could not send still go out."""
        left: list[Delivery] = []
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                left.append(item)
        held = self._handoff.take_all()
        left += held.fresh
        left += [s.delivery for s in held.suspects]
        try:
            if held.marks:
                self._send_marks(held.marks)
            for ready in held.ready:
                left.append(ready.delivery)
                if ready.claim is not None and self._trips is not None:
                    self._trips.release(ready.claim)
        except OUTSIDE as exc:  # the store is gone: the leases run out instead
            self._trouble.warn(exc)
            left += [r.delivery for r in held.ready if r.delivery not in left]
        if left:
            self._consumer.release(left)

    def _send_marks(self, marks: list[Run]) -> None:
        """Mark finished runs done in one round trip and settle them (at stop, when no trip carried them)."""
        assert self._trips is not None
        try:
            done, _ = self._trips.mark_and_claim(claims_of(marks), [])
        except Exception as exc:
            for run in marks:
                self._settler.marked(run, exc)
            raise
        for run, ok in zip(marks, done, strict=True):
            self._settler.marked(run, ok)

    def _give_back(self, deliveries: list[Delivery]) -> None:
        """Release deliveries after a failure; if the broker is gone too, it has them back already."""
        try:
            if deliveries:
                self._consumer.release(deliveries)
        except OUTSIDE as exc:
            self._trouble.warn(exc)
