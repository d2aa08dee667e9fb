"""What on-call tells the cron's leader: schedules paused, and ticks asked for now.

Read by the leader at each step (:meth:`CronControl.refresh`), from the profile's state store:

- a paused schedule's due ticks are skipped, not fired: its cursor moves past them under the leader's fencing
  token (so no later leader fires them either, and they are not counted as missed), with one log line and one
  audit record per skip (``action`` ``skip``, ``outcome`` ``paused``, the ticks' ids, who paused it and why);
  the first tick due after the resume fires as usual. A store that cannot be read keeps the last set read.
- expired pauses are reaped on the way, each expiry audited once (``via`` ``cron``), as workers do;
- a trigger request (``tqadmin trigger``, :mod:`tqadmin.store.triggers.base`) is fired as one extra tick of
  its schedule, claimed under the leader's token like any tick, with its own job id
  ``cron:<name>:trigger:<n>`` and a ``triggered_by`` field; a paused schedule's trigger fires too (it is asked
  for by name, now).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tqadmin.files import audit
from tqadmin.pipeline.pausing import read_pauses
from tqadmin.pipeline.throttle import Throttle
from tqadmin.store.cron.base import CronStore, Lease, TickOutcome, TickState, tick_id
from tqadmin.store.pauses.audit import PauseAudit
from tqadmin.store.pauses.base import Pause, PauseStore
from tqadmin.store.triggers.base import TriggerRequest, TriggerRequests

VIA = "cron"
WARN_EVERY_S = 10.0
TRIGGER_KEEP_S = 600.0  # how long a trigger's tick record is kept (as a tick's at the least)
FireTrigger = Callable[[TriggerRequest, Lease], bool]
"""Publish the job ``request`` asks for (durable, confirmed) under ``lease``; raises when it was not
confirmed, ``False`` when the cron runs no such schedule."""


class CronControl:
    """The pauses and trigger requests of one cron, read from ``pauses`` and ``triggers`` (either may be
    None: nothing is then ever paused, or triggered)."""

    def __init__(
        self,
        pauses: PauseStore | None,
        triggers: TriggerRequests | None,
        auditor: PauseAudit | None,
        log: logging.Logger,
    ) -> None:
        self._pauses = pauses
        self._triggers = triggers
        self._auditor = auditor
        self._log = log
        self._paused: dict[str, Pause] = {}
        self._trouble = Throttle(WARN_EVERY_S)

    def refresh(self) -> None:
        """Read the schedules' pauses again (reaping the expired ones); on a failure keep the last set."""
        if self._pauses is None:
            return
        read = read_pauses(self._pauses, self._auditor, VIA, self._log, self._trouble)
        if read is None:
            return
        _, standing = read
        paused = {p.target.schedule: p for p in standing if p.target.schedule is not None}
        for name in paused.keys() - self._paused.keys():
            self._log.warning("%s: paused by %s (%s)", name, paused[name].who, paused[name].reason)
        for name in self._paused.keys() - paused.keys():
            self._log.warning("%s: resumed", name)
        self._paused = paused

    def paused(self, name: str) -> Pause | None:
        return self._paused.get(name)

    def skipped(self, pause: Pause, name: str, ticks: list[int]) -> None:
        """Say that the due ``ticks`` of ``name`` were skipped for ``pause``: a log line, an audit record."""
        ids = [tick_id(name, t) for t in ticks]
        self._log.warning(
            "%s: skipped %d tick(s) (%s), paused by %s: %s",
            name,
            len(ids),
            ", ".join(ids),
            pause.who,
            pause.reason,
        )
        if self._auditor is None:
            return
        try:
            audit.append(
                self._auditor.path,
                profile=self._auditor.profile,
                action="skip",
                target=name,
                count=len(ids),
                outcome="paused",
                extra={
                    "schedule": name,
                    "ticks": ids,
                    "paused_by": pause.who,
                    "paused_for": pause.reason,
                    "via": VIA,
                },
            )
        except OSError as exc:
            self._log.warning("cannot append to the audit log %s: %s", self._auditor.path, exc.strerror)

    def fire_triggers(self, store: CronStore, lease: Lease, fire: FireTrigger) -> bool:
        """Fire every trigger request waiting; ``False`` when the lease turned out stale (fire no more)."""
        if self._triggers is None:
            return True
        for request in self._triggers.waiting():
            outcome = store.claim_tick(lease, request.tick_name, request.ident, TRIGGER_KEEP_S)
            if outcome is TickOutcome.STALE:
                return False
            if outcome is TickOutcome.DUPLICATE:
                record = store.tick(request.tick_name, request.ident)
                if record is None or record.state is TickState.FIRED:
                    self._triggers.done(request)  # fired already: only its request was left
                    continue
                # claimed by a leader that died before it was done: published again, under this token
            if not fire(request, lease):
                self._log.warning(
                    "trigger %s by %s names no schedule this cron runs: dropped", request.job_id, request.who
                )
                store.drop_pending(request.tick_name, request.ident)
                self._triggers.done(request)
                continue
            store.mark_fired(lease, request.tick_name, request.ident, TRIGGER_KEEP_S)
            self._triggers.done(request)
            self._log.info("fired %s, triggered by %s (token %d)", request.job_id, request.who, lease.token)
        return True
