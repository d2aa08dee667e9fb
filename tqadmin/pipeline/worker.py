"""The reference worker: one consumer, ``concurrency`` job threads, and a monitor for leases and heartbeats.

Threads and who does what:

- the calling (main) thread runs the transport's I/O loop, so AMQP heartbeats are served however long a job
  runs; it only hands deliveries to the job threads (:meth:`Intake.on_message`);
- ``concurrency`` job threads decode, claim, run the task, and settle the delivery (ack, retry-later or
  dead-letter, each confirmed before the original is acked; see :mod:`tqadmin.plugin.transport`); with the
  completion store they claim the prefetch window and mark runs done in shared round trips
  (:mod:`tqadmin.pipeline.handoff`);
- one monitor thread renews the claims' leases (and, where the broker leases deliveries, the deliveries held,
  prefetched ones included), times runs out, and writes heartbeats with telemetry.

The work is a few rooms with one owner each; this module only builds them and starts and stops the threads:

- take and claim: :mod:`tqadmin.pipeline.intake` (two ways: with the store's shared round trips, or without);
- run: :mod:`tqadmin.pipeline.running` (the runs under way, the gate that lets a suspect run alone);
- settle: :mod:`tqadmin.pipeline.settler`, the one route to an ack, a retry, a dead letter and a completion
  mark (a copy of a job running here, redelivered after a reconnect, is settled with that run:
  :mod:`tqadmin.pipeline.copies`);
- monitor: :mod:`tqadmin.pipeline.monitor` (timeouts, leases, heartbeats).

A retry or a dead letter carries the body exactly as the producer published it; the retries made so far
travel in the ``x-tq-retry-count`` header, which the worker reads over the body's ``retry_count``.

A run past ``--job-timeout`` cannot be stopped (Python cannot kill a thread), so it is abandoned: its claim is
released, which bumps it out of the fencing check so the late run can never commit, the job is handled as a
failed run, and a fresh thread takes the abandoned thread's place.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable

from tqadmin.connect.backoff import START_WAIT_S
from tqadmin.pipeline.breaker import Breaker, rule_for
from tqadmin.pipeline.claim_register import ClaimRegister
from tqadmin.pipeline.copies import Copies
from tqadmin.pipeline.holding import HoldingConsumer
from tqadmin.pipeline.intake import Intake
from tqadmin.pipeline.monitor import Heartbeat, Monitor
from tqadmin.pipeline.outcomes import WindowHandoff
from tqadmin.pipeline.pausing import PauseWatch
from tqadmin.pipeline.pulse import Pulse
from tqadmin.pipeline.running import Runner, Running
from tqadmin.pipeline.settings import WorkerSettings
from tqadmin.pipeline.settler import Settler
from tqadmin.pipeline.tasks import TaskRegistry
from tqadmin.pipeline.trips import StoreTrips
from tqadmin.pipeline.trouble import Trouble
from tqadmin.plugin.kit.retrying import Retrying, once_reachable
from tqadmin.plugin.transport import BrokerTransport, Consumer
from tqadmin.store.completion.base import StateStore
from tqadmin.store.pauses.audit import PauseAudit
from tqadmin.store.pauses.base import PauseStore
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.progress import Progress
from tqadmin.telemetry.snapshot import WorkerSnapshot

__all__ = ["Worker", "WorkerSettings"]

log = logging.getLogger("tqadmin.worker")


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
        register: ClaimRegister | None = None,
        pulse: Pulse | None = None,
        watchdog_restarts: int = 0,
        pauses: PauseStore | None = None,
        auditor: PauseAudit | None = None,
    ) -> None:
        self.settings = settings
        # what must not start now, read each heartbeat (None: no pause is ever read)
        self._pauses = PauseWatch(settings.queue, pauses, settings.pause_recheck_s, auditor=auditor)
        self._pause_store, self._auditor = pauses, auditor
        self.restarts = restarts  # processes its supervisor started before this one (in the heartbeat)
        self.watchdog_restarts = watchdog_restarts  # of those, the ones its watchdog's kills made
        self._pulse = pulse  # the intake loop's turns, for its supervisor's watchdog (--watchdog)
        # its claims and runs, for its supervisor to read if it dies (None: the runs' starts go to the store)
        self._register = register
        if register is not None:
            register.clear()  # what a dead predecessor left there is its supervisor's business, already done
        self.transport = transport
        self.store = store
        self.registry = registry
        self.rng = rng or random.Random()
        self.telemetry = Telemetry()
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self.started_at = time.time()
        self._trips = (
            None
            if store is None
            else StoreTrips(store, owner=self.worker_id, lease_s=settings.lease_s, register=register)
        )
        n = settings.concurrency
        self._handoff = WindowHandoff(low=n, batch=max(n, settings.effective_prefetch // 4))
        self._running = Running(self._handoff.solo_over)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stop_requested = False  # set by a signal handler, acted on by the monitor thread
        self._stopping = threading.Event()
        self._finished = threading.Event()  # run() is over: the monitor stops (it renews until then)
        self._consumer: Consumer | None = None
        self._intake: Intake | None = None
        self._trouble = Trouble(self._stopping, self.request_stop)
        self._heartbeat = Heartbeat(self._trips, self.snapshot, settings.heartbeat_s)
        self._intake_turn_at: float | None = None  # the consumer's I/O loop's last turn (epoch s)

    @property
    def failure(self) -> Exception | None:
        """A bug of the worker's own that stopped it (raised by :meth:`run`)."""
        return self._trouble.failure

    # -- lifecycle ------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Declare, consume until :meth:`stop` has drained the in-flight jobs, then say goodbye."""
        s = self.settings
        waiting = Retrying(sleep=self._stopping.wait)  # a stop cuts the wait short
        once_reachable(lambda: self.transport.declare(s.queue), waiting, START_WAIT_S, "no broker yet")
        for warning in self.transport.consumer_warnings(s.queue, s.job_timeout_s):
            log.warning("%s", warning)
        self._pauses.refresh()  # a worker started while a pause stands takes nothing paused
        consumer = self.transport.consumer(s.queue, prefetch=s.effective_prefetch, lease_s=s.lease_s)
        leased = self.transport.capabilities.leased
        holding = HoldingConsumer(consumer) if leased else None
        consumer = holding or consumer
        copies = Copies()
        settler = Settler(
            s,
            consumer,
            self._trips,
            self.telemetry,
            rng=self.rng,
            leased=leased,
            over=self._running.over,
            copies=copies,
            breaker=self._breaker(),
        )
        runner = Runner(
            s.queue,
            consumer,
            trips=self._trips,
            settler=settler,
            running=self._running,
            telemetry=self.telemetry,
            trouble=self._trouble,
            copies=copies,
            register=self._register,
            pauses=self._pauses,
        )
        intake = Intake(
            s,
            consumer,
            self.registry,
            handoff=self._handoff,
            claiming=self._trips if s.dedup else None,
            runner=runner,
            settler=settler,
            trouble=self._trouble,
            stopping=self._stopping,
        )
        consumer.watch_lost(intake.deliveries_lost)
        consumer.watch_turns(self._turned)
        self._consumer, self._intake = consumer, intake
        for _ in range(s.concurrency):
            self._spawn(intake.serve)
        monitor = Monitor(
            s,
            self._running,
            handoff=self._handoff,
            trips=self._trips,
            holding=holding,
            heartbeat=self._heartbeat,
            settler=settler,
            release_lost=intake.release_lost,
            stop_if_asked=self._stop_if_asked,
            pauses=self._pauses,
        )
        watching = threading.Thread(
            target=monitor.watch,
            args=(self._finished, self._spawn, intake.serve),
            name="tq-monitor",
            daemon=True,
        )
        watching.start()
        try:
            if not self._stopping.is_set() and not self._stop_requested:  # a SIGTERM during start-up
                consumer.run(intake.on_message)
        finally:
            self._stopping.set()
            self._finished.set()
            watching.join(timeout=5)
            self._heartbeat.beat(final=True)
        if self.failure is not None:
            raise self.failure

    def _breaker(self) -> Breaker | None:
        """The breaker, when this worker or one of its tasks asks for one and there is a store to pause in."""
        rules = [rule_for(spec, self.settings.breaker) for spec in self.registry]
        if self._pause_store is None or not any(rules):
            return None
        return Breaker(
            self.settings.queue,
            self.settings.breaker,
            store=self._pause_store,
            auditor=self._auditor,
            watch=self._pauses,
            who=f"breaker@{self.worker_id}",
        )

    def request_stop(self) -> None:
        """Ask for :meth:`stop` from a signal handler: it only sets a flag, which the monitor thread acts on.

        A handler that took a lock itself (``Event.set`` does) deadlocks when a second signal lands while the
        main thread holds that lock, as a SIGTERM followed by the parent's death signal does.
        """
        self._stop_requested = True

    def _stop_if_asked(self) -> None:
        if self._stop_requested and not self._stopping.is_set():
            self.stop()

    def stop(self) -> None:
        """Stop fetching, let in-flight jobs finish, then end :meth:`run`."""
        first = not self._stopping.is_set()
        self._stopping.set()
        if first and self._consumer is not None:
            self._consumer.stop()
            threading.Thread(target=self._drain, name="tq-drain", daemon=True).start()

    def _drain(self) -> None:
        assert self._consumer is not None and self._intake is not None
        with self._lock:
            self._intake.stop(len(self._threads))
            threads = list(self._threads)
        for thread in threads:
            if not self._running.stuck(thread):
                thread.join()
        try:
            self._intake.release_unstarted()
        finally:
            self._consumer.drained()

    def _spawn(self, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name="tq-job", daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _turned(self) -> None:
        """The intake (I/O) loop turned: noted for the heartbeat and the supervisor's watchdog (a float
        stored in each, in the I/O thread)."""
        self._intake_turn_at = time.time()
        if self._pulse is not None:
            self._pulse.beat()

    def progress(self) -> Progress:
        """What the heartbeat says of this worker's progress (:mod:`tqadmin.telemetry.progress`)."""
        return Progress(
            threads=self.settings.concurrency,
            busy=self._running.busy(),
            intake_turn_at=self._intake_turn_at,
            last_completion_at=self._running.last_end_at,
        )

    def snapshot(self) -> WorkerSnapshot:
        """This worker now: what its heartbeat carries and its metrics endpoint serves."""
        return WorkerSnapshot(
            worker_id=self.worker_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            queues=(self.settings.queue,),
            started_at=self.started_at,
            heartbeat_at=time.time(),
            current_jobs=self._running.jobs(),
            stats=self.telemetry.read(),
            store_round_trips=0 if self._trips is None else self._trips.count,
            restarts=self.restarts,
            folded_task_types=self.telemetry.folded,
            progress=self.progress(),
            watchdog_restarts=self.watchdog_restarts,
        )
