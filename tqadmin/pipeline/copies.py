"""Copies of a job that arrive while its run is under way in this worker process wait for that run's outcome.

After a broker restart (RabbitMQ ``stop_app`` / ``start_app``, a dropped connection) the broker redelivers
every delivery the closed channel held, the ones being run too. Such a copy's claim is ``HELD`` by this very
process, whose run goes on (its claim renewed); sent to wait out that lease in a delay queue, it would keep
the job from being done for up to a lease after the run had ended. Instead the copy joins the run
(:meth:`Copies.join`) and the settler settles it with the run's outcome (:mod:`tqadmin.pipeline.settler`):

- the run done (its completion mark landed, or another run's did): the copy is acked as a duplicate;
- the run failed: the retry or dead letter the policy decides is made once, from the original delivery or,
  when the broker took that back (its channel closed), from the first copy still held, and the other copies
  are acked once it is durable. So the job neither runs a second time beside its retry nor is lost, and the
  retry carries the count of runs made, as it would have from the original.

A copy joins only between the run's start and the moment its outcome is settled (:meth:`Copies.close`); one
that comes later looks at the store again shortly (``HELD_RELOOK_S``) and finds the outcome there.
"""

from __future__ import annotations

import threading

from tqadmin.pipeline.outcomes import Run
from tqadmin.plugin.base import Delivery


class Copies:
    """The claimed runs under way in one worker process, by job id, with the copies that joined each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Run, list[Delivery]]] = {}

    def open(self, run: Run) -> None:
        """``run`` has started: copies of its job join it until :meth:`close`."""
        with self._lock:
            self._open[run.job.id] = (run, [])

    def join(self, job_id: str, delivery: Delivery) -> bool:
        """Hand ``delivery``, a copy of ``job_id``, to its run under way; ``False`` when none is."""
        with self._lock:
            entry = self._open.get(job_id)
            if entry is None:
                return False
            entry[1].append(delivery)
            return True

    def close(self, run: Run) -> list[Delivery]:
        """``run``'s outcome is being settled: the copies that joined it, for the settler to settle with it;
        from now on a copy of its job finds no run to join."""
        with self._lock:
            entry = self._open.get(run.job.id)
            if entry is None or entry[0] is not run:
                return []
            del self._open[run.job.id]
            return entry[1]
