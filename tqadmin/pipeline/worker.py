"""The reference worker: one consumer, ``concurrency`` job threads, and a monitor for leases and heartbeats.

Threads and who does what:

- the calling (main) thread runs the transport's I/O loop, so AMQP heartbeats are served however long a job
  runs; it only hands deliveries to the job threads through an in-process queue;
- ``concurrency`` job threads decode, claim, run the task, and settle the delivery (ack, retry-later or
  dead-letter, each confirmed before the original is acked; see :mod:`tqadmin.plugin.transport`); with the
  completion store they claim the prefetch window and mark runs done in shared round trips
  (:mod:`tqadmin.pipeline.handoff`);
- one monitor thread renews the claims' leases (and, where the broker leases deliveries, the deliveries held,
  prefetched ones included), times runs out, and writes heartbeats with telemetry.

A retry or a dead letter carries the body exactly as the producer published it; the retries made so far
travel in the ``x-tq-retry-count`` header, which the worker reads over the body's ``retry_count``.

A run past ``--job-timeout`` cannot be stopped (Python cannot kill a thread), so it is abandoned: its claim is
released, which bumps it out of the fencing check so the late run can never commit, the job is handled as a
failed run, and a fresh thread takes the abandoned thread's place.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import random
import socket
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqadmin.errors import TqadminError
from tqadmin.masking import mask_text
from tqadmin.pipeline.deadletter import clip_error, dead_letter_headers, describe_error, first_seen
from tqadmin.pipeline.gate import SoloGate
from tqadmin.pipeline.handoff import Handoff, Left, Trip
from tqadmin.pipeline.holding import HoldingConsumer
from tqadmin.pipeline.job import DEFAULT_MAX_BYTES, Job, MalformedJob, decode_message, with_header_retries
from tqadmin.pipeline.retry import DeadLetter, Failure, Retry, RetryPolicy
from tqadmin.pipeline.starts import GroupStart
from tqadmin.pipeline.tasks import FatalError, TaskContext, TaskRegistry, TaskSpec, job_logger
from tqadmin.pipeline.throttle import Throttle
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.models import HEADER_FIRST_SEEN, HEADER_RETRY_COUNT
from tqadmin.plugin.transport import BrokerTransport, Consumer
from tqadmin.store.base import Claim, ClaimState, Effect, StateStore
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.snapshot import WorkerSnapshot

log = logging.getLogger("tqadmin.worker")

MALFORMED = "(malformed)"
_ABANDONED = object()
_Outcome = Any
"""What handling a delivery left: None (settled), ``_ABANDONED``, or a ``_Run`` whose mark is to be sent."""
STORE_RETRY_S = 1.0
STORE_WARN_EVERY_S = 10.0


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    queue: str
    concurrency: int = 4
    prefetch: int = 0  # 0: 8 x concurrency
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    job_timeout_s: float | None = 300.0
    lease_s: float = 30.0
    max_payload_bytes: int = DEFAULT_MAX_BYTES
    dedup: bool = True
    heartbeat_s: float = 2.0

    @property
    def effective_prefetch(self) -> int:
        return self.prefetch or 8 * self.concurrency


@dataclass(slots=True, eq=False)
class _Run:
    delivery: Delivery
    job: Job
    spec: TaskSpec
    claim: Claim | None
    attempt: int
    started: float = field(default_factory=time.monotonic)
    run_s: float = 0.0
    abandoned: bool = False
    solo: bool | None = None  # how it holds the SoloGate: alone (True), beside others (False), not (None)


@dataclass(slots=True, eq=False)
class _Decoded:
    """A delivery decoded into a job of a known task; ``claim`` is held while it waits to run (None for a
    suspect, which gave its claim back)."""

    delivery: Delivery
    job: Job
    spec: TaskSpec
    claim: Claim | None = None


def _claims(marks: Sequence[_Run]) -> list[Claim]:
    """The claims of runs to mark done (every run on the store's path holds one)."""
    claims = [run.claim for run in marks]
    assert None not in claims
    return claims  # type: ignore[return-value]


class Worker:
    def __init__(
        self,
        settings: WorkerSettings,
        transport: BrokerTransport,
        store: StateStore | None,
        registry: TaskRegistry,
        *,
        rng: random.Random | None = None,
        restarts: int = 0,
    ) -> None:
        self.settings = settings
        self.restarts = restarts  # processes its supervisor started before this one (in the heartbeat)
        self.transport = transport
        self.store = store
        self.registry = registry
        self.rng = rng or random.Random()
        self.telemetry = Telemetry()
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self.started_at = time.time()
        self._inbox: queue.SimpleQueue[Delivery | None] = queue.SimpleQueue()  # without the store
        self._claiming = settings.dedup and store is not None
        n = settings.concurrency
        self._handoff = Handoff[Delivery, _Decoded, _Run](
            low=n, batch=max(n, settings.effective_prefetch // 4)
        )
        self._lock = threading.Lock()
        self._running: dict[int, _Run] = {}  # thread ident -> its run
        self._threads: list[threading.Thread] = []
        self._zombies: set[int | None] = set()  # threads stuck in a timed-out run: never joined
        self._stop_requested = False  # set by a signal handler, acted on by the monitor thread
        self._stopping = threading.Event()
        self._finished = threading.Event()  # run() is over: the monitor stops (it renews until then)
        self._consumer: Consumer | None = None
        self._holding: HoldingConsumer | None = None  # set where the broker leases deliveries
        self.failure: Exception | None = None  # a bug of the worker's own that stopped it
        self._gate = SoloGate()
        self._store_trouble = Throttle(STORE_WARN_EVERY_S)
        self._beat_trouble = Throttle(STORE_WARN_EVERY_S)
        self._round_trips = 0  # store calls made, for the snapshot (round trips per job)
        self._lost_claims: list[Claim] = []  # claims of window jobs whose deliveries went with a connection
        self._starts = GroupStart[Claim](self._send_starts)

    # -- lifecycle ------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Declare, consume until :meth:`stop` has drained the in-flight jobs, then say goodbye."""
        s = self.settings
        self.transport.declare(s.queue)
        for warning in self.transport.consumer_warnings(s.queue, s.job_timeout_s):
            log.warning("%s", warning)
        consumer = self.transport.consumer(s.queue, prefetch=s.effective_prefetch, lease_s=s.lease_s)
        if self.transport.capabilities.leased:
            consumer = self._holding = HoldingConsumer(consumer)
        consumer.watch_lost(self._deliveries_lost)
        self._consumer = consumer
        for _ in range(s.concurrency):
            self._spawn(self._runner)
        monitor = threading.Thread(target=self._monitor, name="tq-monitor", daemon=True)
        monitor.start()
        try:
            if not self._stopping.is_set() and not self._stop_requested:  # a SIGTERM during start-up
                self._consumer.run(self._on_message)
        finally:
            self._stopping.set()
            self._finished.set()
            monitor.join(timeout=5)
            self._beat(final=True)
        if self.failure is not None:
            raise self.failure

    def request_stop(self) -> None:
        """Ask for :meth:`stop` from a signal handler: it only sets a flag, which the monitor thread acts on.

        A handler that took a lock itself (``Event.set`` does) deadlocks when a second signal lands while the
        main thread holds that lock, as a SIGTERM followed by the parent's death signal does.
        """
        self._stop_requested = True

    def stop(self) -> None:
        """Stop fetching, let in-flight jobs finish, then end :meth:`run`."""
        first = not self._stopping.is_set()
        self._stopping.set()
        if first and self._consumer is not None:
            self._consumer.stop()
            threading.Thread(target=self._drain, name="tq-drain", daemon=True).start()

    def _drain(self) -> None:
        self._handoff.stop()
        for _ in range(len(self._threads)):
            self._inbox.put(None)
        for thread in list(self._threads):
            if thread.ident not in self._zombies:
                thread.join()
        assert self._consumer is not None
        try:
            self._release_unstarted(self._consumer)
        finally:
            self._consumer.drained()

    def _release_unstarted(self, consumer: Consumer) -> None:
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
        held: Left[Delivery, _Decoded, _Run] = self._handoff.take_all()
        left += held.fresh
        left += [s.delivery for s in held.suspects]
        try:
            if held.marks:
                self._send_marks(consumer, held.marks)
            for ready in held.ready:
                left.append(ready.delivery)
                if ready.claim is not None and self.store is not None:
                    self._count_trip()
                    self.store.release(ready.claim)
        except (TqadminError, OSError) as exc:  # the store is gone: the leases run out instead
            self._warn_trouble(exc)
            left += [r.delivery for r in held.ready if r.delivery not in left]
        if left:
            consumer.release(left)

    def _spawn(self, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name="tq-job", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    # -- delivery ------------------------------------------------------------------------------------------

    def _on_message(self, delivery: Delivery) -> None:
        if self._stopping.is_set():
            assert self._consumer is not None
            self._consumer.release([delivery])
        elif self._claiming:
            self._handoff.offer(delivery)
        else:
            self._inbox.put(delivery)

    def _deliveries_lost(self) -> None:
        """The consumer lost deliveries with its connection (I/O thread): the window's jobs waiting for them
        are dropped, and their claims given back before the next claims go out (:meth:`_release_lost`), so
        the redelivered copies are claimable at once instead of waiting out these leases as ``HELD``."""
        consumer = self._consumer
        if not self._claiming or consumer is None:
            return
        dropped = self._handoff.drop_lost(
            lambda d: not consumer.alive(d), lambda item: not consumer.alive(item.delivery)
        )
        with self._lock:
            self._lost_claims += [item.claim for item in dropped if item.claim is not None]

    def _release_lost(self) -> None:
        """Give back the claims of deliveries lost with a connection (a trip does it before it claims, the
        monitor when no trip comes); if the store fails meanwhile, their leases run out instead."""
        with self._lock:
            claims, self._lost_claims = self._lost_claims, []
        assert self.store is not None
        for claim in claims:
            self._count_trip()
            self.store.release(claim)

    def _runner(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        if self._claiming:
            self._claiming_runner(consumer)
            return
        while True:
            delivery = self._inbox.get()
            if delivery is None:
                return
            if self._stopping.is_set():
                consumer.release([delivery])
                continue
            if not consumer.alive(delivery):
                continue  # its channel died: the broker has already put it back
            if self._guarded(consumer, delivery, self._handle, delivery) is _ABANDONED:
                return  # timed out: a replacement thread has taken this one's place

    def _claiming_runner(self, consumer: Consumer) -> None:
        """A job thread with the completion store: takes trips, ready jobs and suspects from the handoff."""
        while True:
            step = self._handoff.next()
            if step is None:
                return
            if isinstance(step, Trip):
                self._trip(consumer, step)
                continue
            item = step.item
            if step.solo:
                outcome = self._guarded(consumer, item.delivery, self._run_solo, item)
            else:
                outcome = self._guarded(consumer, item.delivery, self._run_ready, item)
            if outcome is _ABANDONED:
                return
            if isinstance(outcome, _Run):
                self._handoff.finished(outcome)

    def _trip(self, consumer: Consumer, trip: Trip[Delivery, _Run]) -> None:
        """One store round trip: mark ``trip.marks`` done (then settle them) and claim the fresh deliveries.

        On a store failure the marked runs count as failed runs and the fresh deliveries go back, as one
        delivery's would; the worker pauses before the next trip."""
        assert self.store is not None
        settled: set[int] = set()  # fresh deliveries already dead-lettered (or gone with their channel)
        decoded: list[_Decoded] = []
        ready: list[_Decoded] = []
        suspects: list[_Decoded] = []
        unrun: list[_Decoded] = []
        try:
            self._release_lost()
            for fresh in trip.fresh:
                item = self._decode(consumer, fresh) if consumer.alive(fresh) else None
                if item is None:
                    settled.add(id(fresh))
                else:
                    decoded.append(item)
            done, claims = self._store_trip(_claims(trip.marks), decoded)
            for item, claim in zip(decoded, claims, strict=True):
                item.claim = claim
                if claim.state is not ClaimState.CLAIMED or self._quarantined(claim):
                    unrun.append(item)
                elif claim.crashes:
                    self._count_trip()
                    self.store.release(claim)  # it waits holding no claim, then claims again alone
                    item.claim = None
                    suspects.append(item)
                else:
                    ready.append(item)
        except Exception as exc:
            self._handoff.landed(ready, suspects)
            for run in trip.marks:
                self._settle_commit(consumer, run, exc)
            settled.update(id(item.delivery) for item in ready + suspects)
            self._give_back(consumer, [f for f in trip.fresh if id(f) not in settled])
            self._trouble(exc)
            return
        self._handoff.landed(ready, suspects)
        for run, ok in zip(trip.marks, done, strict=True):
            self._guarded(consumer, run.delivery, self._settle_commit, run, ok)
        for item in unrun:
            self._guarded(consumer, item.delivery, self._settle_unrun, item)

    def _give_back(self, consumer: Consumer, deliveries: list[Delivery]) -> None:
        """Release deliveries after a failure; if the broker is gone too, it has them back already."""
        try:
            if deliveries:
                consumer.release(deliveries)
        except (TqadminError, OSError) as exc:
            self._warn_trouble(exc)

    def _trouble(self, exc: Exception) -> None:
        """The store or the broker failed: warn and pause; anything else is a bug that stops the worker."""
        if isinstance(exc, TqadminError | OSError):
            self._warn_trouble(exc)
            self._stopping.wait(STORE_RETRY_S)
        else:
            self._fail(exc)

    def _store_trip(self, marks: list[Claim], items: list[_Decoded]) -> tuple[list[bool], list[Claim]]:
        assert self.store is not None
        self._count_trip()
        job_ids = [item.job.id for item in items]
        return self.store.complete_and_claim(marks, job_ids, self.worker_id, self.settings.lease_s)

    def _send_starts(self, claims: Sequence[Claim]) -> list[bool]:
        assert self.store is not None
        self._count_trip()
        return self.store.start_many(claims)

    def _count_trip(self) -> None:
        with self._lock:
            self._round_trips += 1

    def _send_marks(self, consumer: Consumer, marks: list[_Run]) -> None:
        """Mark finished runs done in one round trip and settle them (at stop, when no trip carried them)."""
        try:
            done, _ = self._store_trip(_claims(marks), [])
        except Exception as exc:
            for run in marks:
                self._settle_commit(consumer, run, exc)
            raise
        for run, ok in zip(marks, done, strict=True):
            self._settle_commit(consumer, run, ok)

    def _quarantined(self, claim: Claim) -> bool:
        return self.settings.policy.before_run(claim.crashes) is not None

    def _settle_unrun(self, consumer: Consumer, item: _Decoded) -> None:
        assert item.claim is not None
        self._settled_unrun(consumer, item.delivery, item.job, item.claim)

    def _run_ready(self, consumer: Consumer, item: _Decoded) -> _Outcome:
        """Run a job claimed in a trip, beside the others; one that would wait for a suspect's run waits
        holding no claim (as the gate's rule goes), so a crash of the suspect is not charged to it. One whose
        delivery went with a lost connection is not run: its claim is given back for the redelivered copy."""
        if not consumer.alive(item.delivery):
            assert self.store is not None and item.claim is not None
            self._count_trip()
            self.store.release(item.claim)
            return None
        if not self._gate.try_enter() and not self._wait_for_suspect(consumer, item):
            return None
        run = _Run(item.delivery, item.job, item.spec, item.claim, item.job.retry_count + 1, solo=False)
        with self._lock:
            self._running[threading.get_ident()] = run
        return self._execute(consumer, run)

    def _wait_for_suspect(self, consumer: Consumer, item: _Decoded) -> bool:
        """Give the claim back, wait for the suspect's run, then claim again; ``True`` when it may run now
        (inside the gate), ``False`` when it was settled instead or turned out a suspect itself (given
        back to the broker: it comes again through a trip, to run alone)."""
        assert self.store is not None and item.claim is not None
        self._count_trip()
        self.store.release(item.claim)
        item.claim = None
        self._gate.enter(solo=False)
        runs = False
        try:
            _, (claim,) = self._store_trip([], [item])
            if self._settled_unrun(consumer, item.delivery, item.job, claim):
                pass
            elif claim.crashes:
                self._count_trip()
                self.store.release(claim)
                consumer.release([item.delivery])
            else:
                item.claim, runs = claim, True
        finally:
            if not runs:
                self._gate.leave(solo=False)
        return runs

    def _run_solo(self, consumer: Consumer, item: _Decoded) -> _Outcome:
        """Run a suspect alone: once the running jobs are over, claim it again (it held no claim meanwhile)
        and run it with nothing beside it, so a further crash is charged to it only."""
        self._gate.enter(solo=True)
        started = False
        try:
            _, (claim,) = self._store_trip([], [item])
            if self._settled_unrun(consumer, item.delivery, item.job, claim):
                return None
            run = _Run(item.delivery, item.job, item.spec, claim, item.job.retry_count + 1, solo=True)
            with self._lock:
                self._running[threading.get_ident()] = run
            started = True
        finally:
            if not started:
                self._gate.leave(solo=True)
                self._handoff.solo_over()
        return self._execute(consumer, run)

    def _guarded(
        self, consumer: Consumer, delivery: Delivery | None, step: Callable[..., _Outcome], *args: Any
    ) -> _Outcome:
        """``step(consumer, *args)``; when the store or the broker fails, give ``delivery`` back and pause.

        Anything else is a bug in the worker, not trouble outside it: the delivery goes back too (nothing is
        lost), and the worker stops with exit 1 rather than redeliver the same job forever.
        """
        try:
            return step(consumer, *args)
        except (TqadminError, OSError) as exc:  # the store or the broker: wait for it to come back
            self._warn_trouble(exc)
            bug = None
        except Exception as exc:
            bug = exc
        with self._lock:
            run = self._running.pop(threading.get_ident(), None)
            if run is not None and not run.abandoned:
                self._leave_gate(run)
        if run is not None and run.abandoned:
            return _ABANDONED
        if delivery is not None:
            consumer.release([delivery])
        if bug is not None:
            self._fail(bug)
            return None
        self._stopping.wait(STORE_RETRY_S)
        return None

    def _warn_trouble(self, exc: BaseException) -> None:
        if self._store_trouble.allow():
            more = self._store_trouble.suppressed
            log.warning(
                "could not handle a delivery: %s%s",
                mask_text(f"{type(exc).__name__}: {exc}"),
                f" ({more} more since the last such warning)" if more else "",
            )

    def _fail(self, bug: Exception) -> None:
        """Stop the worker because of a bug of its own; :meth:`run` raises it once the worker has drained."""
        with self._lock:
            first = self.failure is None
            if first:
                self.failure = bug
        if first:
            log.error("worker bug, stopping: %s", mask_text(f"{type(bug).__name__}: {bug}"))
            log.info("%s", mask_text("".join(traceback.format_exception(bug))))
        self.request_stop()

    def _decode(self, consumer: Consumer, delivery: Delivery) -> _Decoded | None:
        """The delivery's job and task, or None once it is dead-lettered (malformed, unknown task)."""
        try:
            job = decode_message(delivery.message, max_bytes=self.settings.max_payload_bytes)
            job = with_header_retries(job, delivery.message.headers)
        except MalformedJob as exc:
            self._dead_letter(consumer, delivery, exc.reason, f"MalformedJob: {exc}", 0, MALFORMED)
            return None
        spec = self.registry.get(job.task_type)
        if spec is None:
            known = ", ".join(self.registry.names())
            error = f"UnknownTask: no task {job.task_type!r} in this worker (it knows {known})"
            self._dead_letter(consumer, delivery, "unknown_task", error, job.retry_count, job.task_type)
            return None
        return _Decoded(delivery, job, spec)

    def _handle(self, consumer: Consumer, delivery: Delivery) -> _Outcome:
        """Settle one delivery without the completion store; ``_ABANDONED`` when the run timed out."""
        item = self._decode(consumer, delivery)
        if item is None or self._crash_looping(consumer, delivery, item.job):
            return None
        run = _Run(delivery, item.job, item.spec, None, item.job.retry_count + 1)
        with self._lock:
            self._running[threading.get_ident()] = run
        return self._execute(consumer, run)

    def _settled_unrun(self, consumer: Consumer, delivery: Delivery, job: Job, claim: Claim) -> bool:
        """Settle a delivery that must not run (done, held elsewhere, crash-looping); ``False`` to run it."""
        assert self.store is not None
        if claim.state is ClaimState.DONE:
            self.telemetry.deduplicated(self.settings.queue, job.task_type)
            consumer.ack(delivery)
            return True
        if claim.state is ClaimState.HELD:  # another worker runs it now: look again when its lease ends
            seen = {HEADER_FIRST_SEEN: first_seen(delivery.message.headers, time.time())}
            consumer.retry_later(delivery, max(claim.retry_after_s, 0.1), seen)
            return True
        quarantine = self.settings.policy.before_run(claim.crashes)
        if quarantine is not None:
            error = f"CrashLoop: runs of this job killed their worker {claim.crashes} times"
            attempts = job.retry_count + claim.crashes
            self._dead_letter(consumer, delivery, quarantine.reason, error, attempts, job.task_type)
            self._count_trip()
            self.store.release(claim, forget_crashes=True)
            return True
        return False

    def _crash_looping(self, consumer: Consumer, delivery: Delivery, job: Job) -> bool:
        """Without the completion store, a leased broker's delivery count stands in for the crash count:
        each delivery past the first followed a lease that ran out on a worker holding it (dead or stalled).
        Quarantines the job as ``crash_loop`` once that reaches ``--crash-limit``."""
        count = delivery.message.delivery_count
        if not self.transport.capabilities.leased or not count:
            return False
        quarantine = self.settings.policy.before_run(count - 1)
        if quarantine is None:
            return False
        error = (
            f"CrashLoop: this job was handed out {count} times, each time after its holder's lease ran out"
        )
        self._dead_letter(
            consumer, delivery, quarantine.reason, error, job.retry_count + count - 1, job.task_type
        )
        return True

    def _execute(self, consumer: Consumer, run: _Run) -> _Outcome:
        q, job = self.settings.queue, run.job
        if run.claim is not None and not self._starts.start(run.claim):  # the store raising: _guarded
            log.warning("job %s: claim superseded before its run started; not run here", job.id)
            with self._lock:
                del self._running[threading.get_ident()]
            self._over(run)
            consumer.release([run.delivery])
            return None
        run.started = time.monotonic()
        ctx = TaskContext(job.id, run.attempt, job.task_type, job_logger(log, job.id, job.task_type), q)
        enqueued_at = run.delivery.message.enqueued_at
        wait_s = time.time() - enqueued_at if enqueued_at else 0.0
        self.telemetry.started(q, job.task_type, max(wait_s, 0.0))
        failure: tuple[Failure, BaseException] | None = None
        try:
            run.spec.fn(ctx, job.to_dict())
        except FatalError as exc:
            failure = (Failure.FATAL, exc)
        except (Exception, SystemExit) as exc:  # sys.exit() in a task must not end its job thread silently
            failure = (Failure.TRANSIENT, exc)
        run.run_s = time.monotonic() - run.started
        with self._lock:
            if run.abandoned:  # timed out: the monitor already settled it and released the claim
                return _ABANDONED
            del self._running[threading.get_ident()]
        deferred = False
        try:
            if failure is None:
                effect = ctx.combined_effect()
                if effect is None and run.claim is not None:
                    deferred = True  # its mark goes out with a coming round trip; it holds the gate till then
                    return run
                try:
                    failure = self._commit(run, effect)
                except Exception as exc:  # an effect that fails to queue, or the store gone: a failed run
                    failure = (Failure.TRANSIENT, exc)
            self._settle(consumer, run, failure)
            return None
        finally:
            if not deferred:
                self._over(run)

    def _over(self, run: _Run) -> None:
        """``run`` is settled: a suspect waiting to run alone may start once every run beside it is.

        Not earlier: a suspect that kills the process while a neighbour's retry or completion mark is still on
        its way would make the neighbour run again, and charge it a crash when it held a claim."""
        with self._lock:
            self._leave_gate(run)

    def _settle_commit(self, consumer: Consumer, run: _Run, done: bool | Exception | None) -> None:
        """Settle a run whose completion mark went out with a claim: ``done`` is the store's answer, or what
        the round trip raised (a failed run, as when a commit fails)."""
        try:
            if isinstance(done, Exception):
                try:
                    self._settle(consumer, run, (Failure.TRANSIENT, done))
                except Exception:  # the store is gone: give the delivery back (the caller reports why)
                    consumer.release([run.delivery])
                return
            if not done:
                self._superseded(run)
            self._settle(consumer, run, None)
        finally:
            self._over(run)

    def _settle(self, consumer: Consumer, run: _Run, failure: tuple[Failure, BaseException] | None) -> None:
        self.telemetry.finished(self.settings.queue, run.job.task_type, run.run_s, ok=failure is None)
        if failure is None:
            consumer.ack(run.delivery)
        else:
            self._after_failure(consumer, run, *failure)

    def _leave_gate(self, run: _Run) -> None:
        """Let the next job in once ``run`` is over (finished or abandoned); called with ``_lock`` held."""
        if run.solo is not None:
            self._gate.leave(solo=run.solo)
            if run.solo:
                self._handoff.solo_over()
            run.solo = None

    def _commit(self, run: _Run, effect: Effect | None) -> tuple[Failure, BaseException] | None:
        if run.claim is None:
            if effect is None:
                return None
            return Failure.FATAL, RuntimeError("ctx.once needs the completion store: run without --no-dedup")
        assert self.store is not None
        self._count_trip()
        if not self.store.complete(run.claim, effect):
            self._superseded(run)
        return None

    @staticmethod
    def _superseded(run: _Run) -> None:
        # Our claim was superseded (the lease ran out and another delivery took the job): that run commits,
        # ours must not; ack this copy, the other one carries the job.
        log.warning("job %s: claim superseded, effect not committed by this run", run.job.id)

    def _after_failure(self, consumer: Consumer, run: _Run, kind: Failure, exc: BaseException) -> None:
        q, job = self.settings.queue, run.job
        decision = self.settings.policy.after_failure(run.attempt, kind, self.rng, run.spec.max_retries)
        if run.claim is not None and self.store is not None:
            self._count_trip()
            self.store.release(run.claim, forget_crashes=isinstance(decision, DeadLetter))
        if isinstance(decision, Retry):
            headers = {
                HEADER_FIRST_SEEN: first_seen(run.delivery.message.headers, time.time()),
                HEADER_RETRY_COUNT: run.attempt,
            }
            if consumer.retry_later(run.delivery, decision.delay_s, headers):
                self.telemetry.retried(q, job.task_type)
            log.info(
                "job %s attempt %d failed (%s); retry in %.2f s",
                job.id,
                run.attempt,
                mask_text(str(exc)),
                decision.delay_s,
            )
        else:
            self._dead_letter(
                consumer, run.delivery, decision.reason, describe_error(exc), run.attempt, job.task_type
            )

    def _dead_letter(  # noqa: PLR0917 - every argument is a different header
        self, consumer: Consumer, delivery: Delivery, reason: str, error: str, attempts: int, task_type: str
    ) -> None:
        headers = dead_letter_headers(
            reason=reason,
            error=clip_error(error),
            attempts=attempts,
            queue=self.settings.queue,
            headers=delivery.message.headers,
            now_s=time.time(),
        )
        if consumer.dead_letter(delivery, headers):
            self.telemetry.dead_lettered(self.settings.queue, task_type)
        log.warning("dead-lettered a %s job (%s): %s", task_type, reason, clip_error(error)[:200])

    # -- monitor: timeouts, leases, heartbeats ---------------------------------------------------------------

    def _monitor(self) -> None:
        s = self.settings
        tick = min(0.5, s.lease_s / 4, s.heartbeat_s)
        next_renew = next_beat = 0.0
        while not self._finished.wait(tick):
            if self._stop_requested and not self._stopping.is_set():
                self.stop()
            now = time.monotonic()
            self._time_out(now)
            try:
                if self.store is not None:
                    self._release_lost()
                if now >= next_renew:
                    next_renew = now + s.lease_s / 3
                    self._renew()
                if now >= next_beat:
                    next_beat = now + s.heartbeat_s
                    self._beat()
            except TqadminError as exc:
                log.warning("state store: %s", exc)

    def _time_out(self, now: float) -> None:
        limit = self.settings.job_timeout_s
        if limit is None:
            return
        with self._lock:
            late = [(i, r) for i, r in self._running.items() if not r.abandoned and now - r.started > limit]
            for ident, run in late:
                run.abandoned = True
                self._zombies.add(ident)
        for _, run in late:
            self._spawn(functools.partial(self._settle_timeout, run))

    def _settle_timeout(self, run: _Run) -> None:
        """Handle a timed-out run as a failed one, then serve as the job thread it replaces."""
        consumer = self._consumer
        assert consumer is not None
        limit = self.settings.job_timeout_s
        self.telemetry.finished(
            self.settings.queue, run.job.task_type, time.monotonic() - run.started, ok=False
        )
        try:
            self._after_failure(
                consumer, run, Failure.TIMEOUT, TimeoutError(f"the run took over {limit:g} s")
            )
        except TqadminError as exc:
            log.warning("could not settle timed-out job %s: %s", run.job.id, exc)
        finally:
            with self._lock:  # only now: a suspect must not start while this job still holds its claim
                self._leave_gate(run)
        self._runner()

    def _renew(self) -> None:
        if self._holding is not None:
            for lost in self._holding.extend_held(self.settings.lease_s):
                log.warning("job %s: the broker gave its delivery to another consumer", lost.message.id)
        if self.store is None:
            return
        with self._lock:
            claims = [r.claim for r in self._running.values() if r.claim is not None and not r.abandoned]
        claims += [r.claim for r in self._handoff.waiting() if r.claim is not None]
        if not claims:
            return
        self._count_trip()
        for claim, renewed in zip(claims, self.store.renew_many(claims, self.settings.lease_s), strict=True):
            if not renewed:
                log.warning("job %s: lease lost; this run will not be able to commit", claim.job_id)

    def snapshot(self) -> WorkerSnapshot:
        """This worker now: what its heartbeat carries and its metrics endpoint serves."""
        with self._lock:
            current = tuple(r.job.id for r in self._running.values() if not r.abandoned)
            round_trips = self._round_trips
        return WorkerSnapshot(
            worker_id=self.worker_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            queues=(self.settings.queue,),
            started_at=self.started_at,
            heartbeat_at=time.time(),
            current_jobs=current,
            stats=self.telemetry.read(),
            store_round_trips=round_trips,
            restarts=self.restarts,
        )

    def _beat(self, final: bool = False) -> None:
        if self.store is None:
            return
        try:
            self._count_trip()
            self.store.beat(self.snapshot(), 0 if final else self.settings.heartbeat_s * 3)
        except TqadminError as exc:
            if self._beat_trouble.allow():
                log.warning("could not write a heartbeat: %s", exc)
