"""The monitor: one thread per worker that times runs out, renews leases and writes heartbeats.

Every ``min(0.5 s, lease/4, heartbeat)`` it abandons the runs past ``--job-timeout`` (each settled as a
failed run by a fresh thread, which then serves as the job thread it replaces), gives back the claims of
deliveries lost with a connection when no trip came to do it, renews every lease a third of the way through
(the claims of the runs under way and of the ready jobs waiting, and where the broker leases deliveries the
deliveries held, prefetched ones included), records in the store the starts of runs under way since its last
tick that only the claim register holds (:mod:`tqadmin.pipeline.claim_register`: a process that hangs instead
of dying charges them a crash all the same), and writes the heartbeat with the worker's telemetry, reading the
pauses with each (:mod:`tqadmin.pipeline.pausing`). It also acts on a
stop asked for by a signal handler, which may only set a flag.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable

from tqadmin.errors import TqadminError
from tqadmin.pipeline.holding import HoldingConsumer
from tqadmin.pipeline.outcomes import Run, WindowHandoff
from tqadmin.pipeline.pausing import PauseWatch
from tqadmin.pipeline.running import Running
from tqadmin.pipeline.settings import WorkerSettings
from tqadmin.pipeline.settler import Settler
from tqadmin.pipeline.throttle import Throttle
from tqadmin.pipeline.trips import StoreTrips
from tqadmin.pipeline.trouble import STORE_WARN_EVERY_S
from tqadmin.show.masking import shown
from tqadmin.telemetry.snapshot import WorkerSnapshot

log = logging.getLogger("tqadmin.worker")


class Heartbeat:
    """Writes ``snapshot()`` to the store, a warning per interval at most while the store is away."""

    def __init__(
        self, trips: StoreTrips | None, snapshot: Callable[[], WorkerSnapshot], interval_s: float
    ) -> None:
        self._trips = trips
        self._snapshot = snapshot
        self._interval_s = interval_s
        self._trouble = Throttle(STORE_WARN_EVERY_S)

    def beat(self, *, final: bool = False) -> None:
        """One heartbeat, promising the next within three intervals; a ``final`` one says goodbye."""
        if self._trips is None:
            return
        try:
            self._trips.beat(self._snapshot, 0 if final else self._interval_s * 3)
        except TqadminError as exc:
            if self._trouble.allow():
                log.warning("could not write a heartbeat: %s", exc)


class Monitor:
    """Watches one worker's runs and leases; a run it abandons is settled by ``settler``."""

    def __init__(
        self,
        settings: WorkerSettings,
        running: Running,
        *,
        handoff: WindowHandoff,
        trips: StoreTrips | None,
        holding: HoldingConsumer | None,
        heartbeat: Heartbeat,
        settler: Settler,
        release_lost: Callable[[], None],
        stop_if_asked: Callable[[], None],
        pauses: PauseWatch | None = None,
    ) -> None:
        self._pauses = pauses
        self._settings = settings
        self._running = running
        self._handoff = handoff
        self._trips = trips
        self._holding = holding
        self._heartbeat = heartbeat
        self._settler = settler
        self._release_lost = release_lost
        self._stop_if_asked = stop_if_asked

    def watch(
        self,
        finished: threading.Event,
        spawn: Callable[[Callable[[], None]], None],
        serve: Callable[[], None],
    ) -> None:
        """The monitor thread's loop, until ``finished`` is set; ``spawn(target)`` starts a job thread,
        ``serve`` is what a job thread does."""
        s = self._settings
        tick = min(0.5, s.lease_s / 4, s.heartbeat_s)
        next_renew = next_beat = 0.0
        while not finished.wait(tick):
            self._stop_if_asked()
            now = time.monotonic()
            if s.job_timeout_s is not None:
                for run in self._running.late(now, s.job_timeout_s):
                    spawn(functools.partial(self._replace, run, s.job_timeout_s, serve))
            # Each step on its own: the store being away must not keep the broker's leases from renewal.
            if now >= next_renew:
                next_renew = now + s.lease_s / 3
                _warn_on_trouble(self._renew)
            if self._trips is not None:
                _warn_on_trouble(self._release_lost)
                _warn_on_trouble(functools.partial(self._record_starts, self._trips, now - tick))
            if now >= next_beat:
                next_beat = now + s.heartbeat_s
                self._heartbeat.beat()
                if self._pauses is not None:
                    self._pauses.refresh()

    def _record_starts(self, trips: StoreTrips, started_before: float) -> None:
        runs = self._running.unrecorded(started_before)
        if runs:
            trips.start_many([r.claim for r in runs if r.claim is not None])
            for run in runs:
                run.recorded = True

    def _renew(self) -> None:
        if self._holding is not None:
            for lost in self._holding.extend_held(self._settings.lease_s):
                job = shown(lost.message.id or "?")
                log.warning("job %s: the broker gave its delivery to another consumer", job)
        if self._trips is None:
            return
        claims = self._running.claims()
        claims += [r.claim for r in self._handoff.waiting() if r.claim is not None]
        if not claims:
            return
        for claim, renewed in zip(claims, self._trips.renew_many(claims), strict=True):
            if not renewed:
                log.warning("job %s: lease lost; this run will not be able to commit", shown(claim.job_id))

    def _replace(self, run: Run, limit_s: float, serve: Callable[[], None]) -> None:
        """A replacement job thread: settle the timed-out ``run`` as a failed one, then serve as the thread it
        replaces (which stays stuck in the run until the task returns)."""
        self._settler.timed_out(run, limit_s)
        serve()


def _warn_on_trouble(step: Callable[[], None]) -> None:
    """``step()``, a warning when the broker or the store fails it (the next tick tries again)."""
    try:
        step()
    except TqadminError as exc:
        log.warning("%s", exc)
