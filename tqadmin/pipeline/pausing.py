"""What a worker must not start now: the pauses of its queue, read from the state store each heartbeat.

The run room asks :meth:`PauseWatch.aside` just before a job would start, the one place every broker's
deliveries pass (:meth:`tqadmin.pipeline.running.Runner`): a job of a paused queue or task type is set aside
unrun instead (:meth:`tqadmin.pipeline.settler.Settler.set_aside`): its claim given back uncharged, its body
put back on the broker with a delay and its retry count as it was, so no attempt is charged, no retry counted
and nothing dead-lettered. Giving a delivery straight back would only bring it straight back to the same
consumer (every broker here hands a released delivery out again at once), so it comes back after
``min(time the pause has left, recheck)``; that is also the most a set-aside job waits after a resume.

Each read first reaps the pauses that ran out (:func:`tqadmin.store.pauses.audit.reap`), so an expiry is
written to the audit log once ("resumed by expiry") by whichever worker, cron leader or command sees it first,
without anyone having to come by.

A store that cannot be read keeps the last set read (a warning every 10 s at most): a worker never starts
paused work because the store blinked. A pause's end is kept on the local monotonic clock from the moment it
was read, so an expiry takes effect between two reads too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tqadmin.pipeline.throttle import Throttle
from tqadmin.pipeline.trouble import STORE_WARN_EVERY_S
from tqadmin.show.masking import shown
from tqadmin.store.pauses.audit import PauseAudit, reap
from tqadmin.store.pauses.base import Pause, PauseStore

log = logging.getLogger("tqadmin.worker")

DEFAULT_RECHECK_S = 10.0
VIA = "worker"  # the audit records' ``via`` for the expiries a worker reaps


@dataclass(frozen=True, slots=True)
class _Standing:
    pause: Pause
    ends: float | None  # time.monotonic() at which it runs out, None: until resumed


class PauseWatch:
    """The pauses of ``queue`` as last read from ``source`` (None: no store, nothing is ever paused)."""

    def __init__(
        self,
        queue: str,
        source: PauseStore | None,
        recheck_s: float = DEFAULT_RECHECK_S,
        clock: Callable[[], float] = time.monotonic,
        auditor: PauseAudit | None = None,
    ) -> None:
        self._queue = queue
        self._source = source
        self._auditor = auditor  # where the expiries this worker reaps are recorded (None: it reaps none)
        self._recheck_s = recheck_s
        self._clock = clock
        self._lock = threading.Lock()
        self._standing: dict[str, _Standing] = {}
        self._trouble = Throttle(STORE_WARN_EVERY_S)

    def refresh(self) -> None:
        """Read the pause set again; on a store failure keep the last one."""
        if self._source is None:
            return
        read = read_pauses(self._source, self._auditor, VIA, log, self._trouble)
        if read is None:
            return
        now, pauses = read
        local = self._clock()
        mine = {
            p.target.key: _Standing(p, None if p.until is None else local + max(p.until - now, 0.0))
            for p in pauses
            if p.target.queue == self._queue
        }
        with self._lock:
            before, self._standing = self._standing, mine
        for key in mine.keys() - before.keys():
            log.warning(
                "paused: %s (%s, by %s)",
                _what(mine[key].pause),
                shown(mine[key].pause.reason),
                mine[key].pause.who,
            )
        for key in before.keys() - mine.keys():
            log.warning("resumed: %s", _what(before[key].pause))

    def aside(self, task_type: str) -> float | None:
        """``None`` when a job of ``task_type`` may start now; else the delay to set it aside for."""
        now = self._clock()
        with self._lock:
            covering = [
                s
                for s in self._standing.values()
                if s.pause.covers(self._queue, task_type) and (s.ends is None or s.ends > now)
            ]
        if not covering:
            return None
        ends = [s.ends for s in covering]
        left = None if None in ends else max(e for e in ends if e is not None) - now
        return self._recheck_s if left is None else max(min(left, self._recheck_s), 0.1)


def read_pauses(
    source: PauseStore, auditor: PauseAudit | None, via: str, logger: logging.Logger, trouble: Throttle
) -> tuple[float, list[Pause]] | None:
    """Reap the expired pauses (each audited once, when there is an ``auditor``), then read those standing;
    ``None`` when the store could not be read (said every so often, as ``trouble`` allows): the caller keeps
    the last set it read."""
    try:
        if auditor is not None:
            for warning in reap(source, auditor, via)[1]:
                logger.warning("%s", warning)
        return source.standing()
    except Exception as exc:  # the store away, or an answer it should not give: the caller goes on
        if trouble.allow():
            logger.warning("could not read the pauses (the last ones read stand): %s", exc)
        return None


def _what(pause: Pause) -> str:
    t = pause.target
    return f"task type {shown(t.task_type)} of this queue" if t.task_type else "this queue"
