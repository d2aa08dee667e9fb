"""The scheduler loop: lead through the store's lease, fire due ticks exactly once, step down when stale.

One step does, in order: record the ticks it published but could not yet mark (the store was down), keep or
seek the lease, re-publish ticks a dead or failed leader left claimed but unconfirmed, then fire what is due.
A tick is fired as *claim (fenced, atomic with the dedup record) → publish with confirmation → mark fired*; a
crash between claim and confirmation leaves it pending, and whoever leads next publishes it again under the
same job id (a duplicate at worst, never a loss).

A store outage must not turn into that duplicate: the publisher remembers each tick it published and could
not mark, and marks it at its first step that reaches the store again, leading or not (a mark is allowed
with a stale token). A new leader gives it the time to: a tick an earlier token claimed is re-published only
once this leader has seen it pending for one lock TTL, and the schedule's later ticks wait with it, so a
schedule's ticks still reach the broker in order. A tick this leader's own token claimed is re-published
at once: its publish failed. A claim whose reply was lost with the connection is claimed again, and the
duplicate it meets is the leader's own claim, which it publishes.

The loop keeps a local deadline for its lease measured on the monotonic clock from *before* each acquire or
renew call. Past that deadline it stops firing at once, without asking the store: a leader that was paused
(SIGSTOP, GC, a VM migration) wakes up, sees its deadline gone and steps down, and the store's fencing check
catches whatever slips through that check. Every side effect goes through injected objects (clock, store,
publish), so the whole policy runs under a fake clock in unit tests.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tqadmin.connect.backoff import reconnect_backoff
from tqadmin.errors import TqadminError
from tqadmin.pipeline.cron.control import CronControl
from tqadmin.pipeline.cron.jobs import Publish, PublishFailed, cron_job, publish_job, trigger_job
from tqadmin.pipeline.cron.misfire import plan
from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.status import DEFAULT_FORGET_AFTER_S as FORGET_INSTANCES_AFTER_S
from tqadmin.pipeline.cron.status import iso
from tqadmin.pipeline.cron.timing import splay_offset
from tqadmin.store.cron.base import CronStore, Lease, TickOutcome, TickState, tick_id
from tqadmin.store.triggers.base import TriggerRequest

DEFAULT_LOCK_TTL_S = 15.0
MIN_WAIT_S = 0.01
LEASE_SAFETY = 0.9  # stop firing after 90% of the TTL without a successful renew: clocks drift
KEEP_TICKS_MIN_S = 600.0


class Clock(Protocol):
    """Wall time (for the calendar), monotonic time (for the lease deadline), and an interruptible sleep."""

    def time(self) -> float: ...

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float, interrupt: threading.Event) -> None: ...


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float, interrupt: threading.Event) -> None:
        interrupt.wait(seconds)


@dataclass(slots=True)
class _Track:
    schedule: Schedule
    offset: float
    cursor: float = 0.0  # the last tick handled (fired, found taken, or skipped as missed)
    next_fire_at: float = 0.0


class Scheduler:
    """Runs the schedules of one instance; any number of instances may run the same schedules."""

    def __init__(
        self,
        schedules: Sequence[Schedule],
        store: CronStore,
        publish: Publish,
        *,
        instance: str,
        lock_ttl_s: float = DEFAULT_LOCK_TTL_S,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        logger: logging.Logger | None = None,
        control: CronControl | None = None,
    ) -> None:
        self._control = control  # pauses and triggers (:mod:`tqadmin.pipeline.cron.control`)
        self.instance = instance
        self.lock_ttl_s = lock_ttl_s
        self._store = store
        self._publish = publish
        self._clock: Clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._backoff = reconnect_backoff(self._rng)
        self._log = logger or logging.getLogger("tqadmin.cron")
        self._tracks = {s.name: _Track(s, splay_offset(s.name, s.splay)) for s in schedules}
        self._keep_s = {
            s.name: max(KEEP_TICKS_MIN_S, 2 * (s.misfire_grace + s.splay + lock_ttl_s)) for s in schedules
        }
        self.lease: Lease | None = None
        self._valid_until = 0.0
        self._next_renew = 0.0
        self._next_attempt = 0.0
        self._failures = 0
        self._recover = False
        self._unmarked: dict[tuple[str, int], Lease] = {}  # published and confirmed, not yet marked fired
        self._claimed_seen: dict[tuple[str, int], float] = {}  # earlier tokens' pending ticks: first seen
        self._armed = False  # the schedules' cursors are read from the store since this lease began
        self._registered = False

    # the loop

    def run(self, stop: threading.Event) -> None:
        """Step until ``stop`` is set, then give the lease up so another instance takes over at once."""
        try:
            while not stop.is_set():
                self._clock.sleep(self.step(), stop)
        finally:
            self.shutdown()

    def step(self) -> float:
        """One pass; returns how long to sleep before the next."""
        try:
            self._mark_unmarked()
            if not self._registered:
                self._store.register(self.instance, [s.schedule.to_json() for s in self._tracks.values()])
                self._store.forget_instances(self._store.now() - FORGET_INSTANCES_AFTER_S)
                self._registered = True
            self._keep_or_seek_lease()
            if self.lease is not None and not self._armed:
                self._arm()
            if self.lease is not None and self._recover:
                self._recover_pending()
            if self.lease is not None and self._control is not None:
                self._control.refresh()
                if not self._control.fire_triggers(self._store, self.lease, self._fire_trigger):
                    self._step_down("fencing token no longer current")
            if self.lease is not None:
                self._fire_due()
        except (TqadminError, PublishFailed) as exc:
            self._failures += 1
            delay = self._backoff.delay(self._failures)
            if self._unmarked:  # mark them as soon as the store is back: well before a new leader's wait ends
                delay = min(delay, self.lock_ttl_s / 3)
            if self.lease is not None and not self._leading():
                self._step_down("lease deadline passed while the store or broker failed")
            if self.lease is not None:
                # A broker outage alone must not cost the lease: wake for the next renewal. If the renewal is
                # already due (it is what failed), retry it with the backoff, up to the lease deadline.
                now = self._clock.monotonic()
                renew_in = self._next_renew - now
                delay = min(delay, renew_in if renew_in > 0 else self._valid_until - now)
            delay = max(MIN_WAIT_S, delay)
            self._log.warning("%s; retrying in %.1fs", exc, delay)
            return delay
        self._failures = 0
        return self._wait()

    def shutdown(self) -> None:
        """Release the lease if held (best effort: if the store is down, it expires after its TTL)."""
        lease, self.lease = self.lease, None
        try:
            self._mark_unmarked()
        except TqadminError as exc:
            names = ", ".join(tick_id(*key) for key in self._unmarked)
            self._log.warning("%s published but not marked, a new leader publishes it again: %s", names, exc)
        if lease is None:
            return
        try:
            self._store.release(lease)
            self._log.info("released the lease (fencing token %d)", lease.token)
        except TqadminError as exc:
            self._log.warning("could not release the lease, it expires in %.0fs: %s", lease.ttl_s, exc)

    # leadership

    def _leading(self) -> bool:
        return self.lease is not None and self._clock.monotonic() < self._valid_until

    def _keep_or_seek_lease(self) -> None:
        if self.lease is not None and not self._leading():
            self._step_down("the lease deadline passed before a renewal (paused, or the store was slow)")
        now = self._clock.monotonic()
        if self.lease is None:
            if now < self._next_attempt:
                return
            self._next_attempt = now + self.lock_ttl_s / 3 * self._rng.uniform(0.5, 1.0)
            self._store.heartbeat(self.instance)
            lease = self._store.acquire(self.instance, self.lock_ttl_s)
            if lease is not None:
                self._hold(lease, now)
                self._log.info("leading with fencing token %d", lease.token)
                self._armed = False
                self._recover = True
        elif now >= self._next_renew:
            if self._store.renew(self.lease):
                self._hold(self.lease, now)
                self._store.heartbeat(self.instance)
            else:
                self._step_down("the lease was taken over")

    def _hold(self, lease: Lease, started: float) -> None:
        self.lease = lease
        self._valid_until = started + lease.ttl_s * LEASE_SAFETY
        self._next_renew = started + lease.ttl_s / 3

    def _step_down(self, why: str) -> None:
        if self.lease is not None:
            self._log.warning("stepping down (fencing token %d): %s", self.lease.token, why)
        self.lease = None
        self._claimed_seen.clear()
        self._next_attempt = self._clock.monotonic() + self.lock_ttl_s / 3 * self._rng.uniform(0.5, 1.0)

    def _arm(self) -> None:
        """Take each schedule's cursor from the store: the last tick anyone handled, whoever led then."""
        stored = self._store.cursors(self._tracks)
        now = self._clock.time()
        for name, track in self._tracks.items():
            cursor = stored.get(name)
            if cursor is None:  # never ran: start from now, firing no history
                cursor = self._store.arm(name, int(now - track.offset))
            track.cursor = cursor
            track.next_fire_at = 0.0
        self._armed = True

    # ticks

    def _mark_unmarked(self, *, retried: bool = True) -> None:
        """Mark fired each tick published and not yet marked, under the token that published it; a retried
        mark (the store was down when the publish was confirmed) is logged."""
        for (name, tick), lease in list(self._unmarked.items()):
            self._store.mark_fired(lease, name, tick, self._keep_s[name])
            del self._unmarked[(name, tick)]
            if retried:
                self._log.info(
                    "marked %s published (token %d): the store is back", tick_id(name, tick), lease.token
                )

    def _recover_pending(self) -> None:
        waiting: dict[tuple[str, int], float] = {}
        for record in self._store.pending():
            track = self._tracks.get(record.name)
            if (
                track is None
            ):  # a schedule this instance does not run: an instance that runs it will publish it
                if not record.instance:  # ...unless its record expired long ago: the schedule is gone
                    self._store.drop_pending(record.name, record.scheduled)
                continue
            lease = self.lease
            if lease is None or not self._leading():
                return
            key = (record.name, record.scheduled)
            if record.token < lease.token:  # its publisher may have published it and be marking it now
                first_seen = self._claimed_seen.setdefault(key, self._clock.monotonic())
                if self._clock.monotonic() < first_seen + self.lock_ttl_s:
                    waiting[key] = first_seen
                    continue
            outcome = self._store.reclaim_tick(
                lease, record.name, record.scheduled, self._keep_s[record.name]
            )
            if outcome is TickOutcome.STALE:
                self._step_down("fencing token no longer current")
                return
            if outcome is TickOutcome.CLAIMED:
                level = logging.DEBUG if record.instance == self.instance else logging.INFO
                self._log.log(
                    level, "re-publishing %s: %s claimed it, no confirm", record.id, record.instance
                )
                self._fire(track, record.scheduled, lease)
        self._claimed_seen = waiting
        self._recover = bool(waiting)

    def _held_back(self) -> set[str]:
        """Schedules with a tick waiting for its earlier publisher: their later ticks wait too, so that a
        schedule's ticks reach the broker in order."""
        return {name for name, _ in self._claimed_seen}

    def _fire_due(self) -> None:
        held_back = self._held_back()
        for track in self._tracks.values():
            now = self._clock.time()
            if track.next_fire_at > now or track.schedule.name in held_back:
                continue
            schedule = track.schedule
            decision = plan(schedule, track.cursor, now)
            lease = self.lease
            if lease is None:
                return
            if decision.missed and decision.missed_last is not None:
                more = "+" if decision.missed_at_least else ""
                self._log.warning(
                    "%s: skipped %d%s ticks from %s to %s, older than misfire_grace %gs",
                    schedule.name,
                    decision.missed,
                    more,
                    iso(decision.missed_first),
                    iso(decision.missed_last),
                    schedule.misfire_grace,
                )
                if not self._store.mark_missed(lease, schedule.name, decision.missed_last, decision.missed):
                    self._step_down("fencing token no longer current")
                    return
                track.cursor = decision.missed_last
            pause = self._control.paused(schedule.name) if self._control else None
            if self._control and pause and decision.due:  # skipped under this token: no leader fires them
                if not self._store.mark_missed(lease, schedule.name, decision.due[-1], 0):
                    self._step_down("fencing token no longer current")
                    return
                track.cursor = decision.due[-1]
                self._control.skipped(pause, schedule.name, list(decision.due))
                track.next_fire_at = decision.next_fire_at
                continue
            for tick in decision.due:
                if not self._leading():
                    return
                outcome = self._store.claim_tick(lease, schedule.name, tick, self._keep_s[schedule.name])
                if outcome is TickOutcome.STALE:
                    self._step_down("fencing token no longer current")
                    return
                track.cursor = tick
                if outcome is TickOutcome.CLAIMED or self._claimed_by(lease, schedule.name, tick):
                    self._fire(track, tick, lease)
            track.next_fire_at = decision.next_fire_at

    def _claimed_by(self, lease: Lease, name: str, tick: int) -> bool:
        """A duplicate that ``lease`` itself claimed: the first claim's reply was lost with the connection
        (the call failed, or the driver sent it again on reconnect), so nothing was published yet."""
        record = self._store.tick(name, tick)
        return (
            record is not None
            and record.state is TickState.CLAIMED
            and (record.token, record.instance) == (lease.token, lease.instance)
        )

    def _fire(self, track: _Track, tick: int, lease: Lease) -> None:
        schedule = track.schedule
        now = self._clock.time()
        job = cron_job(schedule, tick, lease.token, self.instance, now)
        try:
            publish_job(self._publish, schedule.queue, job)
        except PublishFailed:
            self._recover = True
            raise
        self._unmarked[(schedule.name, tick)] = lease
        self._mark_unmarked(retried=False)
        self._log.debug("fired %s (token %d, %.3fs late)", job.id, lease.token, now - tick - track.offset)

    def _fire_trigger(self, request: TriggerRequest, lease: Lease) -> bool:
        """Publish the tick ``request`` asks for; ``False`` when this cron runs no such schedule."""
        track = self._tracks.get(request.schedule)
        if track is not None:
            job = trigger_job(track.schedule, request, lease.token, self.instance, self._clock.time())
            publish_job(self._publish, track.schedule.queue, job)
        return track is not None

    def _wait(self) -> float:
        monotonic = self._clock.monotonic()
        if self.lease is None:
            return max(MIN_WAIT_S, self._next_attempt - monotonic)
        now = self._clock.time()
        held_back = self._held_back()
        soonest = min(
            (t.next_fire_at for name, t in self._tracks.items() if name not in held_back),
            default=now + self.lock_ttl_s,
        )
        wait = min(self._next_renew - monotonic, soonest - now)
        if self._claimed_seen:  # wake when the first of them has waited its lock TTL
            wait = min(wait, min(self._claimed_seen.values()) + self.lock_ttl_s - monotonic)
        return max(MIN_WAIT_S, wait)
