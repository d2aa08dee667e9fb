"""The run room: who may run beside whom, the runs under way, and running a task.

:class:`Running` keeps the runs under way by job thread and the :class:`~tqadmin.pipeline.gate.SoloGate`
(a suspect runs alone), under one lock, so a run the monitor abandons on timeout and the thread that ran it
never both let the next job in. :class:`Runner` takes a job that the intake decoded (and claimed), passes the
gate, records its start in the store, runs the task and hands what came of it to the settler. A run past
``--job-timeout`` cannot be stopped (Python cannot kill a thread), so it is abandoned: the monitor settles it
and a fresh thread takes the place of the one still stuck in it, which ends whenever the task returns.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from tqadmin.pipeline.claim_register import ClaimRegister
from tqadmin.pipeline.copies import Copies
from tqadmin.pipeline.gate import SoloGate
from tqadmin.pipeline.outcomes import ABANDONED, SETTLED, Decoded, Failed, Handled, Run
from tqadmin.pipeline.pausing import PauseWatch
from tqadmin.pipeline.retry import Failure
from tqadmin.pipeline.settler import Settler
from tqadmin.pipeline.starts import RunStarts
from tqadmin.pipeline.tasks import FatalError, TaskContext, job_logger
from tqadmin.pipeline.trips import StoreTrips
from tqadmin.pipeline.trouble import OUTSIDE, Trouble
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.transport import Consumer
from tqadmin.show.masking import shown
from tqadmin.store.completion.base import Claim
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.progress import MAX_ID_CHARS, BusyThread

log = logging.getLogger("tqadmin.worker")


class Running:
    """The runs under way, by job thread, and the gate; ``solo_over`` is told when a suspect's run is over."""

    def __init__(self, solo_over: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._runs: dict[int, Run] = {}
        self._gate = SoloGate()
        self._solo_over = solo_over
        self._stuck: set[int | None] = set()  # threads in a timed-out run: never joined
        self.last_end_at: float | None = None  # when a run last ended (epoch s), for the heartbeat

    def enter(self, *, solo: bool) -> None:
        self._gate.enter(solo=solo)

    def try_enter(self) -> bool:
        return self._gate.try_enter()

    def leave(self, *, solo: bool) -> None:
        """Out of the gate; a suspect leaving it lets the intake claim fresh deliveries again."""
        self._gate.leave(solo=solo)
        if solo:
            self._solo_over()

    def add(self, run: Run) -> None:
        """``run`` is the calling thread's, from now until :meth:`ended`."""
        with self._lock:
            self._runs[threading.get_ident()] = run

    def ended(self, run: Run) -> bool:
        """The calling thread's task has returned; ``False`` when the monitor abandoned the run meanwhile."""
        with self._lock:
            self.last_end_at = time.time()
            if run.abandoned:
                return False
            del self._runs[threading.get_ident()]
            return True

    def withdraw(self, run: Run) -> None:
        """The calling thread's run never started: it is over at once."""
        with self._lock:
            del self._runs[threading.get_ident()]
            self._leave_gate(run)

    def over(self, run: Run) -> None:
        """``run`` is settled: a suspect waiting to run alone may start once every run beside it is.

        Not earlier: a suspect that kills the process while a neighbour's retry or completion mark is still on
        its way would make the neighbour run again, and charge it a crash when it held a claim."""
        with self._lock:
            self._leave_gate(run)

    def dropped(self) -> bool:
        """The calling thread's step failed: forget its run, if any; ``True`` when the monitor had abandoned
        that run (it settles it, and this thread is to end)."""
        with self._lock:
            run = self._runs.pop(threading.get_ident(), None)
            if run is not None and not run.abandoned:
                self._leave_gate(run)
        return run is not None and run.abandoned

    def _leave_gate(self, run: Run) -> None:
        """Let the next job in once ``run`` is over (finished or abandoned); called with ``_lock`` held."""
        if run.solo is not None:
            self.leave(solo=run.solo)
            run.solo = None

    def late(self, now: float, limit_s: float) -> list[Run]:
        """Abandon the runs started over ``limit_s`` ago; their threads are stuck in them for good."""
        with self._lock:
            late = [(i, r) for i, r in self._runs.items() if not r.abandoned and now - r.started > limit_s]
            for ident, run in late:
                run.abandoned = True
                self._stuck.add(ident)
        return [run for _, run in late]

    def stuck(self, thread: threading.Thread) -> bool:
        return thread.ident in self._stuck

    def unrecorded(self, started_before: float) -> list[Run]:
        """The claimed runs under way since before ``started_before`` whose starts the store has not heard of
        (they are in the claim register only): for the monitor to record."""
        with self._lock:
            return [
                r
                for r in self._runs.values()
                if r.claim is not None and not r.recorded and not r.abandoned and r.started < started_before
            ]

    def claims(self) -> list[Claim]:
        """The claims of the runs under way, to renew."""
        with self._lock:
            return [r.claim for r in self._runs.values() if r.claim is not None and not r.abandoned]

    def busy(self) -> tuple[BusyThread, ...]:
        """The job threads in a run now, each with its job, task type and start (epoch seconds), for the
        heartbeat's progress (a timed-out run's thread no longer counts: a fresh one took its place)."""
        since = time.time() - time.monotonic()  # a monotonic start plus this is an epoch
        with self._lock:
            return tuple(
                BusyThread(r.job.id[:MAX_ID_CHARS], r.job.task_type, r.started + since)
                for r in self._runs.values()
                if not r.abandoned
            )

    def jobs(self) -> tuple[str, ...]:
        """The ids of the jobs running now, for the heartbeat."""
        with self._lock:
            return tuple(r.job.id for r in self._runs.values() if not r.abandoned)


class Runner:
    """Runs the jobs of one worker's ``consumer`` on the job threads, and settles them through ``settler``;
    a claimed run is open to ``copies`` of its job from its start until it is settled."""

    def __init__(
        self,
        queue: str,
        consumer: Consumer,
        *,
        trips: StoreTrips | None,
        settler: Settler,
        running: Running,
        telemetry: Telemetry,
        trouble: Trouble,
        copies: Copies,
        register: ClaimRegister | None = None,
        pauses: PauseWatch | None = None,
    ) -> None:
        self._queue = queue
        self._pauses = pauses
        self._consumer = consumer
        self._trips = trips
        self._settler = settler
        self._running = running
        self._telemetry = telemetry
        self._trouble = trouble
        self._copies = copies
        self._starts = RunStarts(trips.start_many, register) if trips is not None else None

    def guarded(self, delivery: Delivery | None, step: Callable[[], Handled]) -> Handled:
        """``step()``; when the store or the broker fails, give ``delivery`` back and pause.

        Anything else is a bug in the worker, not trouble outside it: the delivery goes back too (nothing is
        lost), and the worker stops with exit 1 rather than redeliver the same job forever.
        """
        try:
            return step()
        except OUTSIDE as exc:  # the store or the broker: wait for it to come back
            self._trouble.warn(exc)
            bug = None
        except Exception as exc:
            bug = exc
        if self._running.dropped():
            return ABANDONED
        if delivery is not None:
            self._consumer.release([delivery])
        if bug is not None:
            self._trouble.fail(bug)
        else:
            self._trouble.pause()
        return SETTLED

    def unclaimed(self, item: Decoded) -> Handled:
        """Run a job without the completion store (unless it is crash-looping)."""
        if self._settler.crash_looping(item.delivery, item.job):
            return SETTLED
        run = Run(item.delivery, item.job, item.spec, None, item.job.retry_count + 1)
        self._running.add(run)
        return self._execute(run)

    def ready(self, item: Decoded) -> Handled:
        """Run a job claimed in a trip, beside the others; one that would wait for a suspect's run waits
        holding no claim (as the gate's rule goes), so a crash of the suspect is not charged to it. One whose
        delivery went with a lost connection is not run: its claim is given back for the redelivered copy."""
        assert self._trips is not None and item.claim is not None
        if not self._consumer.alive(item.delivery):
            self._trips.release(item.claim)
            return SETTLED
        if not self._running.try_enter() and not self._wait_for_suspect(item):
            return SETTLED
        run = Run(item.delivery, item.job, item.spec, item.claim, item.job.retry_count + 1, solo=False)
        self._running.add(run)
        return self._execute(run)

    def _wait_for_suspect(self, item: Decoded) -> bool:
        """Give the claim back, wait for the suspect's run, then claim again; ``True`` when it may run now
        (inside the gate), ``False`` when it was settled instead or turned out a suspect itself (given
        back to the broker: it comes again through a trip, to run alone)."""
        assert self._trips is not None and item.claim is not None
        self._trips.release(item.claim)
        item.claim = None
        self._running.enter(solo=False)
        runs = False
        try:
            _, (claim,) = self._trips.mark_and_claim([], [item.job.id])
            if self._settler.unrun(item.delivery, item.job, claim):
                pass
            elif claim.crashes:
                self._trips.release(claim)
                self._consumer.release([item.delivery])
            else:
                item.claim, runs = claim, True
        finally:
            if not runs:
                self._running.leave(solo=False)
        return runs

    def solo(self, item: Decoded) -> Handled:
        """Run a suspect alone: once the running jobs are over, claim it again (it held no claim meanwhile)
        and run it with nothing beside it, so a further crash is charged to it only."""
        assert self._trips is not None
        self._running.enter(solo=True)
        started = False
        try:
            _, (claim,) = self._trips.mark_and_claim([], [item.job.id])
            if self._settler.unrun(item.delivery, item.job, claim):
                return SETTLED
            run = Run(item.delivery, item.job, item.spec, claim, item.job.retry_count + 1, solo=True)
            self._running.add(run)
            started = True
        finally:
            if not started:
                self._running.leave(solo=True)
        return self._execute(run)

    def _execute(self, run: Run) -> Handled:
        job = run.job
        aside = None if self._pauses is None else self._pauses.aside(job.task_type)
        if aside is not None:  # paused: every way to a run passes here, on every broker
            self._running.withdraw(run)
            self._settler.set_aside(run, aside)
            return SETTLED
        if run.claim is not None:
            assert self._starts is not None
            if not self._starts.begin(run):  # the store raising: guarded
                log.warning("job %s: claim superseded before its run started; not run here", shown(job.id))
                self._running.withdraw(run)
                self._consumer.release([run.delivery])
                return SETTLED
            self._copies.open(run)
        run.started = time.monotonic()
        ctx = TaskContext(
            job.id, run.attempt, job.task_type, job_logger(log, job.id, job.task_type), self._queue
        )
        enqueued_at = run.delivery.message.enqueued_at
        wait_s = time.time() - enqueued_at if enqueued_at else 0.0
        self._telemetry.started(self._queue, job.task_type, max(wait_s, 0.0))
        failure: Failed | None = None
        try:
            run.spec.fn(ctx, job.to_dict())
        except FatalError as exc:
            failure = Failed(Failure.FATAL, exc)
        except (Exception, SystemExit) as exc:  # sys.exit() in a task must not end its job thread silently
            failure = Failed(Failure.TRANSIENT, exc)
        run.run_s = time.monotonic() - run.started
        if self._starts is not None:
            self._starts.end(run)
        if not self._running.ended(run):  # timed out: the monitor already settled it and released the claim
            return ABANDONED
        return self._settler.finish(run, ctx, failure)
