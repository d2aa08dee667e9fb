"""The settler: the one room of the worker that acks, retries and dead-letters, and sends completion marks.

"Where is this job acked?" has one answer: here. Every way a delivery leaves the worker settled goes through
:class:`Settler`, and it is the only code of the pipeline that calls ``ack``, ``retry_later`` or
``dead_letter`` on a consumer (``tests/unit/test_one_ack_route.py`` holds it to that):

- a run that ended (:meth:`Settler.finish`): its effect committed with its completion mark, then the ack; or,
  with nothing to commit but the mark, the mark deferred to the next store round trip (:class:`Finished`)
  and the ack once the store has answered (:meth:`Settler.marked`); a failed run retried or dead-lettered
  as the retry policy decides, its claim given back first;
- a run that timed out (:meth:`Settler.timed_out`), as a failed one;
- a delivery that must not run (:meth:`Settler.unrun`, :meth:`Settler.crash_looping`): already done (acked),
  a copy of a job this process is running (settled with that run: :mod:`tqadmin.pipeline.copies`), held by
  another worker (looked at again when that lease ends or in a second, whichever comes first: the other run
  may end long before its lease), crash-looping (quarantined);
- a delivery that cannot run (:meth:`Settler.refuse`): malformed, or of a task this worker lacks.

Nothing is acked before its successor is durable: the plugin publishes a retry or a dead letter with
confirmation before it acks the original (:mod:`tqadmin.plugin.transport`), and a run is acked only after
the store has its completion mark. Once a run is settled the run room is told (``over``), so a suspect
waiting to run alone starts only when no neighbour's retry or mark is still on its way.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable

from tqadmin.errors import TqadminError
from tqadmin.pipeline.breaker import Breaker
from tqadmin.pipeline.copies import Copies
from tqadmin.pipeline.deadletter import clip_error, dead_letter_headers, describe_error, first_seen
from tqadmin.pipeline.job import Job
from tqadmin.pipeline.outcomes import SETTLED, Failed, Finished, Run, Settled
from tqadmin.pipeline.retry import DeadLetter, Failure, Retry
from tqadmin.pipeline.settings import WorkerSettings
from tqadmin.pipeline.tasks import TaskContext
from tqadmin.pipeline.trips import StoreTrips
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.models import HEADER_FIRST_SEEN, HEADER_RETRY_COUNT
from tqadmin.plugin.transport import Consumer
from tqadmin.show.masking import shown
from tqadmin.store.completion.base import Claim, ClaimState, Effect
from tqadmin.telemetry.counters import Telemetry

log = logging.getLogger("tqadmin.worker")

HELD_RELOOK_S = 1.0
"""A job held by another worker is looked at again after the rest of that lease or this, whichever is sooner:
the holder's run may end long before its lease does (leases are renewed while the run goes on)."""


class Settler:
    """Settles the deliveries of one worker's ``consumer``; ``trips`` is its completion store (None without);
    ``leased``: the broker leases deliveries (their delivery count then stands in for crashes); ``copies``:
    the runs under way, which copies of their jobs join."""

    def __init__(
        self,
        settings: WorkerSettings,
        consumer: Consumer,
        trips: StoreTrips | None,
        telemetry: Telemetry,
        *,
        rng: random.Random,
        leased: bool,
        over: Callable[[Run], None],
        copies: Copies,
        breaker: Breaker | None = None,
    ) -> None:
        self._breaker = breaker  # told how each run ended (opt in: --break-after, @task(break_after=...))
        self._queue = settings.queue
        self._policy = settings.policy
        self._consumer = consumer
        self._trips = trips
        self._telemetry = telemetry
        self._rng = rng
        self._leased = leased
        self._over = over
        self._copies = copies

    # -- runs ----------------------------------------------------------------------------------------------

    def finish(self, run: Run, ctx: TaskContext, failure: Failed | None) -> Settled | Finished:
        """Settle a run that has ended, or defer it to the next round trip: a claimed run with nothing to
        commit goes out as a mark with the next trip (and holds the gate until :meth:`marked`)."""
        deferred = False
        if self._breaker is not None:
            self._breaker.ran(run.spec, run.started, None if failure is None else failure.error)
        try:
            if failure is None:
                effect = ctx.combined_effect()
                if effect is None and run.claim is not None:
                    deferred = True
                    return Finished(run)
                try:
                    failure = self._commit(run, effect)
                except Exception as exc:  # an effect that fails to queue, or the store gone: a failed run
                    failure = Failed(Failure.TRANSIENT, exc)
            self._settle(run, failure)
            return SETTLED
        finally:
            if not deferred:
                self._over(run)

    def marked(self, run: Run, done: bool | Exception) -> Settled:
        """Settle a run whose completion mark went out with a round trip: ``done`` is the store's answer, or
        what the round trip raised (a failed run, as when a commit fails)."""
        try:
            if isinstance(done, Exception):
                try:
                    self._settle(run, Failed(Failure.TRANSIENT, done))
                except Exception:  # the store is gone: give the delivery back (the caller reports why)
                    self._consumer.release([run.delivery])
                return SETTLED
            if not done:
                _superseded(run)
            self._settle(run, None)
            return SETTLED
        finally:
            self._over(run)

    def timed_out(self, run: Run, limit_s: float) -> None:
        """Settle a run the monitor abandoned past ``--job-timeout`` as a failed one."""
        run.run_s = time.monotonic() - run.started
        failure = Failed(Failure.TIMEOUT, TimeoutError(f"the run took over {limit_s:g} s"))
        if self._breaker is not None:
            self._breaker.ran(run.spec, run.started, failure.error)
        try:
            self._settle(run, failure)
        except TqadminError as exc:
            log.warning("could not settle timed-out job %s: %s", shown(run.job.id), exc)
        finally:  # only now: a suspect must not start while this job still holds its claim
            self._over(run)

    def _commit(self, run: Run, effect: Effect | None) -> Failed | None:
        if run.claim is None:
            if effect is None:
                return None
            error = RuntimeError("ctx.once needs the completion store: run without --no-dedup")
            return Failed(Failure.FATAL, error)
        assert self._trips is not None
        if not self._trips.complete(run.claim, effect):
            _superseded(run)
        return None

    def _settle(self, run: Run, failure: Failed | None) -> None:
        """Settle ``run``'s delivery, and the copies of its job that joined it, with what came of it."""
        self._telemetry.finished(self._queue, run.job.task_type, run.run_s, ok=failure is None)
        copies = self._copies.close(run)
        try:
            if failure is None:
                self._carry(run.delivery, copies, self._ack, run.job.task_type)
            else:
                self._failed(run, failure, copies)
        finally:
            if copies:  # left unsettled by a failure of the store or the broker: back to the broker
                self._consumer.release(copies)

    def _failed(self, run: Run, failure: Failed, copies: list[Delivery]) -> None:
        job = run.job
        decision = self._policy.after_failure(run.attempt, failure.kind, self._rng, run.spec.max_retries)
        if run.claim is not None and self._trips is not None:
            self._trips.release(run.claim, forget_crashes=isinstance(decision, DeadLetter))
        if isinstance(decision, Retry):
            retry = functools.partial(self._retry, delay_s=decision.delay_s, retries=run.attempt)
            if self._carry(run.delivery, copies, retry, job.task_type):
                self._telemetry.retried(self._queue, job.task_type)
            log.info(
                "job %s attempt %d failed (%s); retry in %.2f s",
                shown(job.id),
                run.attempt,
                shown(str(failure.error)),
                decision.delay_s,
            )
        else:
            error = describe_error(failure.error)
            self.refuse(run.delivery, decision.reason, error, run.attempt, job.task_type, copies=copies)

    def _carry(
        self, delivery: Delivery, copies: list[Delivery], settle: Callable[[Delivery], bool], task_type: str
    ) -> bool:
        """Settle a job's outcome once (``settle``: ack, retry or dead-letter): on ``delivery`` or, when the
        broker has taken that back (its channel closed), on the first of ``copies`` that takes it; the copies
        after it are acked as duplicates, its successor being durable. ``copies`` is emptied as they are
        settled; ``False`` when none carried the outcome (every one of them is back with the broker)."""
        carried = settle(delivery)
        while copies:
            if carried:
                self._telemetry.deduplicated(self._queue, task_type)
                self._ack(copies[0])
            else:
                carried = settle(copies[0])
            copies.pop(0)
        return carried

    # -- deliveries that do not run ------------------------------------------------------------------------

    def set_aside(self, run: Run, delay_s: float) -> bool:
        """Put a job that must not start now (paused: :mod:`tqadmin.pipeline.pausing`) back on the broker
        for ``delay_s``, unrun: its claim given back first (no crash, no attempt), its retry count as it
        was, nothing dead-lettered. ``False`` when the broker had already taken the delivery back."""
        if run.claim is not None and self._trips is not None:
            self._trips.release(run.claim)
        log.debug("job %s set aside for %.1f s: paused", shown(run.job.id), delay_s)
        return self._retry(run.delivery, delay_s)

    def unrun(self, delivery: Delivery, job: Job, claim: Claim) -> bool:
        """Settle a delivery that must not run (done, held elsewhere, crash-looping); ``False`` to run it."""
        assert self._trips is not None
        if claim.state is ClaimState.DONE:
            self._telemetry.deduplicated(self._queue, job.task_type)
            self._ack(delivery)
            return True
        if claim.state is ClaimState.HELD:
            if claim.owner == self._trips.owner and self._copies.join(job.id, delivery):
                return True  # a copy of a job this process runs: settled with that run
            self._retry(delivery, max(min(claim.retry_after_s, HELD_RELOOK_S), 0.1))
            return True
        quarantine = self._policy.before_run(claim.crashes)
        if quarantine is not None:
            error = f"CrashLoop: runs of this job killed their worker {claim.crashes} times"
            attempts = job.retry_count + claim.crashes
            self.refuse(delivery, quarantine.reason, error, attempts, job.task_type)
            self._trips.release(claim, forget_crashes=True)
            return True
        return False

    def crash_looping(self, delivery: Delivery, job: Job) -> bool:
        """Without the completion store, a leased broker's delivery count stands in for the crash count:
        each delivery past the first followed a lease that ran out on a worker holding it (dead or stalled).
        Quarantines the job as ``crash_loop`` once that reaches ``--crash-limit``."""
        count = delivery.message.delivery_count
        if not self._leased or not count:
            return False
        quarantine = self._policy.before_run(count - 1)
        if quarantine is None:
            return False
        error = (
            f"CrashLoop: this job was handed out {count} times, each time after its holder's lease ran out"
        )
        self.refuse(delivery, quarantine.reason, error, job.retry_count + count - 1, job.task_type)
        return True

    # -- the broker's verbs: the only calls of them in the pipeline --------------------------------------

    def _ack(self, delivery: Delivery) -> bool:
        return self._consumer.ack(delivery)

    def _retry(self, delivery: Delivery, delay_s: float, *, retries: int | None = None) -> bool:
        """Put ``delivery`` back after ``delay_s``, keeping when it was first seen and, for a failed run, the
        retries made so far; ``False`` when the broker had already taken it back."""
        headers: dict[str, object] = {HEADER_FIRST_SEEN: first_seen(delivery.message.headers, time.time())}
        if retries is not None:
            headers[HEADER_RETRY_COUNT] = retries
        return self._consumer.retry_later(delivery, delay_s, headers)

    def refuse(
        self,
        delivery: Delivery,
        reason: str,
        error: str,
        attempts: int,
        task_type: str,
        *,
        copies: list[Delivery] | None = None,
    ) -> None:
        """Dead-letter ``delivery`` (or, when the broker took it back, one of the ``copies`` of its job that
        joined its run) with why (``reason``, ``error``), the runs it had and its task type (a registered one,
        or a label: the one it is counted under)."""
        clipped = clip_error(error)

        def dead_letter(one: Delivery) -> bool:
            headers = dead_letter_headers(
                reason=reason,
                error=clipped,
                attempts=attempts,
                queue=self._queue,
                headers=one.message.headers,
                now_s=time.time(),
            )
            return self._consumer.dead_letter(one, headers)

        if self._carry(delivery, copies if copies is not None else [], dead_letter, task_type):
            self._telemetry.dead_lettered(self._queue, task_type, reason)
        log.warning("dead-lettered a %s job (%s): %s", task_type, reason, shown(error))


def _superseded(run: Run) -> None:
    # Our claim was superseded (the lease ran out and another delivery took the job): that run commits,
    # ours must not; ack this copy, the other one carries the job.
    log.warning("job %s: claim superseded, effect not committed by this run", shown(run.job.id))
